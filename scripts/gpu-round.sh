#!/usr/bin/env bash
# One GPU benchmark round on the device machine (see ../shared/gpu/README.md for the setup calls).
# The setup and long runs in calls (the staged app split to fit, jobs that outlive a call): scripts/device/.
# Runs from /opt/kv/app with the CUDA build; writes JSON results and logs to $OUT (or ./out).
#   bash scripts/gpu-round.sh verify      # 1b preset: kvgraft verify --trials 10 --tokens 5977
#   bash scripts/gpu-round.sh graft f16   # 12b preset: kvgraft bench graft, f16 KV
#   bash scripts/gpu-round.sh graft q8_0  # 12b preset: kvgraft bench graft, q8_0 KV
#   bash scripts/gpu-round.sh library     # 1b-compact-kv: kvgraft bench library, 88 x 32,768 tokens, 7 depths
#   bash scripts/gpu-round.sh energy      # 12b preset: recompute vs hot vs warm energy at 11,994 tokens
#   bash scripts/gpu-round.sh load        # 12b preset: kvgraft bench edge --path graft at 8, 16, 32 req/s
#   bash scripts/gpu-round.sh http        # 1b preset: kvgraft bench http (in-process vs loopback HTTP)
#   bash scripts/gpu-round.sh batches     # 12b preset: kvgraft bench batches, 32 slots, 32 clients, hot-1 and
#                                         # distinct: the sequences each llama_decode carried, tokens/s
#   bash scripts/gpu-round.sh serve       # 12b preset: kvgraft bench serve against llama-server, hot-1 and warm-12
#                                         # at SERVE_RATES (default "50 100 200") req/s, 32 slots, 16 tokens,
#                                         # blocks of ~2,000 tokens; both servers' logs in $OUT/serve-logs-rRATE.
#                                         # LLAMA_CACHE_RAM=MIB: llama-server's --cache-ram (0: off), files -crMIB.
#                                         # SERVE_SLOTS=N SERVE_CONTEXT=CELLS: both servers' slots and cells a
#                                         # slot (default 32 x 4096), files -sN / -cN. KV_STEP_FILL=off: no fillers or
#                                         # joiners' pads in kvgraft's steps, files -nofill (=fillers: no pads,
#                                         # -fillers); KV_GREEDY_PICK=off: a sampler call a greedy slot, files
#                                         # -nopick; SERVE_ONLY=kvgraft: kvgraft's side alone;
#                                         # SERVE_WORKLOADS (default hot-1,warm-12).
#                                         # LLAMA_SERVER=path (absolute): a llama-server linked on the dev machine
#                                         # against the CUDA build, so the round compiles nothing (unset: built
#                                         # here by build-llama-server.sh cuda, minutes of device time). Stage it:
#                                         #   mkdir -p .data/cuda && cat ../shared/gpu/llama-cuda-sm90/rel.part.* |
#                                         #     xz -dc | tar -x -C .data/cuda
#                                         #   bash scripts/build-llama-server.sh linked .data/cuda/Release .device/llama-server
#                                         # carry .device/llama-server; there, before cd /opt/kv/app:
#                                         #   export LLAMA_SERVER=$PWD/.device/llama-server/llama-server
#   bash scripts/gpu-round.sh bucket      # 1b preset, a 10,000-token block (~328 MB of f16 state): kvgraft bench
#                                         # bucket (local cold restore vs a graft fetched from s3rver on
#                                         # loopback), 4 and 8 ranged GETs at once; needs S3RVER_DIR (the output
#                                         # of scripts/stage-s3rver.sh); BUCKET_PRESET, BUCKET_TOKENS, BUCKET_RUNS override
#   bash scripts/gpu-round.sh engine [KV] # 12b preset: bench graft, f16 and q8_0 KV (or KV alone), 5,977 and
#                                         # 11,994 tokens, memory path (our engine build) beside the file path
#   bash scripts/gpu-round.sh hot-loop    # 12b preset: bench/hot-step-loop.js, node-llama-cpp's path vs the native
#                                         # greedy step, 1,000 steps at 5,977 and 11,994 tokens, twice each
#   bash scripts/gpu-round.sh kernel-trace # 12b preset, 5,977 f16 tokens: Nsight Compute's GPU time of every
#                                         # kernel of a native hot-step loop; the last steps' kernels summed
#   bash scripts/gpu-round.sh batch-trace # 12b preset: kvgraft bench batches hot-1 at TRACE_SLOTS (default "48")
#                                         # slots of 2,304 cells, 1 round, 16 tokens, blocks of 2,000 tokens,
#                                         # once as it runs (the step's wall time) and once under Nsight Compute
#                                         # (every kernel's GPU time); the last steps' kernels summed and grouped;
#                                         # also without CUDA graphs, and LLAMA_BATCHED_BENCH=bin runs llama.cpp's
#                                         # batched-bench on the same shapes (distinct prompts; -kvu -pps)
#   bash scripts/gpu-round.sh kvu-sweep   # 12b preset: llama-batched-bench (LLAMA_BATCHED_BENCH) with one shared
#                                         # 2,000-token prompt in one stream (-kvu -pps) at KVU_NPL sequences, and
#                                         # with 16-token prompts a stream each at 1-96 (the step without KV reads)
#   bash scripts/gpu-round.sh gemm-bound  # no Node: the 12b step's weight products in cuBLAS (PyTorch) at 1-256
#                                         # sequences against the weights' read (scripts/device/gemm-bound.py)
#   bash scripts/gpu-round.sh fa-alias    # no model: one step's flash attention (12b shapes, 2,048 cells) over S
#                                         # streams' copies of one block against one copy all of them read
#                                         # (stride 0) and against the copies' ranges mapped onto one copy's
#                                         # pages (FA_STREAMS, default 16,48,96,192); outputs compared bit for bit
#   bash scripts/gpu-round.sh swa         # gemma3-12b preset: verify (10 trials) and bench graft at 5,977 and
#                                         # 11,994 tokens, SWA full cache off (bench graft with f16 and q8_0 KV)
#   bash scripts/gpu-round.sh swa-graft   # the bench graft part of swa alone
#   bash scripts/gpu-round.sh scale-out   # 2 GPUs, 12b preset: kvgraft bench scale-out, one serve gpu node per
#                                         # GPU behind one serve edge: 1 node vs 2 at rates from a probe, then
#                                         # one node SIGKILLed under load at 80% of the 2-node capacity
#                                         # (MODEL_PRESET=tiny-llama MODELS_DIR=... KV_LLAMA=cpu NODE=node:
#                                         # the same round on a CPU machine, to check the script)
#   bash scripts/gpu-round.sh train-model # the embedded model (docs/model.md), from the repository root with
#                                         # PyTorch, no Node: TRAIN_DATA=dir (default .train/data, written
#                                         # here by tools/model/dataset.ts and carried) -> weights (as
#                                         # weights.bin.part.*: cat them into weights.bin), reference
#                                         # outputs and the training log in $OUT
# KV_ENGINE_DIR=dir (the output of scripts/build-engine.sh cuda-addon: llama-addon.node and, with
# llama-patches, libllama) replaces the CUDA build's files before the round.
# BWRAP_DIR=dir (the output of scripts/stage-bwrap.sh) installs bubblewrap first where the machine has
# none: deposits run their programs in it, and a node without it runs none (fail closed).
set -euo pipefail
out=${OUT:-$PWD/out}
models=${MODELS_DIR:-/root/models}
mkdir -p "$out" "$models"
export KV_LLAMA=${KV_LLAMA:-lastBuild}
# libuv's pool runs our engine's chunk reads and hashes (and node-llama-cpp's state work): 4
# threads by default leave the disk idle while chunks are hashed.
export UV_THREADPOOL_SIZE=${UV_THREADPOOL_SIZE:-16}
node=${NODE:-/opt/kv/bin/node}
cli="$node dist/cli/main.js"
model() { # preset -> path (generated once per machine)
  local path=$models/$1.gguf
  [[ -f $path ]] || $cli synth-model --preset "$1" --seed 0 --out "$path" >&2
  echo "$path"
}
if [[ -n ${BWRAP_DIR:-} ]] && ! command -v bwrap >/dev/null; then
  install -m 0755 "$BWRAP_DIR/bwrap" /usr/local/bin/bwrap.real
  if ldd /usr/local/bin/bwrap.real | grep -q "not found"; then # its libraries only where missing
    mkdir -p /opt/bwlib && cp "$BWRAP_DIR"/bwlib/* /opt/bwlib/
    printf '#!/bin/sh\nLD_LIBRARY_PATH=/opt/bwlib exec /usr/local/bin/bwrap.real "$@"\n' > /usr/local/bin/bwrap
  else
    printf '#!/bin/sh\nexec /usr/local/bin/bwrap.real "$@"\n' > /usr/local/bin/bwrap
  fi
  chmod 0755 /usr/local/bin/bwrap
  bwrap --ro-bind / / true || { echo "gpu-round: the staged bwrap does not run here" >&2; exit 1; }
  echo "gpu-round: bubblewrap installed from $BWRAP_DIR" >&2
fi
if [[ -n ${KV_ENGINE_DIR:-} ]]; then
  # The build as it came, kept once beside it: llama-server (serve) runs on it, without our patches.
  for rel in node_modules/node-llama-cpp/llama/localBuilds/*/Release; do
    [[ -d $rel.stock ]] || cp -a "$rel" "$rel.stock"
  done
  cp "$KV_ENGINE_DIR"/llama-addon.node "$KV_ENGINE_DIR"/*.so node_modules/node-llama-cpp/llama/localBuilds/*/Release/ 2>/dev/null ||
    cp "$KV_ENGINE_DIR"/llama-addon.node node_modules/node-llama-cpp/llama/localBuilds/*/Release/
  echo "gpu-round: kvgraft engine build installed from $KV_ENGINE_DIR" >&2
fi
stock_release() { # the CUDA build installed here (lastBuild) as it came, without our patches
  local folder rel
  folder=$(sed -n 's/.*"folderName": *"\([^"]*\)".*/\1/p' node_modules/node-llama-cpp/llama/lastBuild.json)
  rel=$PWD/node_modules/node-llama-cpp/llama/localBuilds/$folder/Release
  # with KV_ENGINE_DIR that folder holds our patched libllama: the stock copy is kept beside it
  [[ ! -d $rel.stock ]] || rel=$rel.stock
  echo "$rel"
}
swa_graft() { # gemma3-12b, SWA full cache off: bench graft with f16 and q8_0 KV
  local m kv
  m=$(model gemma3-12b)
  for kv in f16 q8_0; do
    $cli bench graft --model "$m" --lengths 5977,11994 --kv "$kv" --runs 3 --swa-full-cache false --json \
      2>"$out/graft-gemma3-12b-$kv.log" | tail -n 1 > "$out/graft-gemma3-12b-$kv-h200.json"
  done
}
case "${1:-}" in
  train-model)
    PYTHONUNBUFFERED=1 python3 tools/model/train.py --data "${TRAIN_DATA:-.train/data}" --out "$out" --compile 2>&1 |
      tee "$out/train.log"
    # weights.bin (~20 MB) is over what a device call returns per file: parts, joined with cat here.
    sha256sum "$out/weights.bin" | tee "$out/weights.bin.sha256"
    split -b 15728640 -d "$out/weights.bin" "$out/weights.bin.part." && rm "$out/weights.bin" ;;
  engine) # optional second argument: one KV type (f16 or q8_0) instead of both
    for kv in ${2:-f16 q8_0}; do
      $cli bench graft --model "$(model 12b)" --lengths 5977,11994 --kv "$kv" --runs 3 --json \
        2>"$out/graft-12b-$kv-h200.log" | tee "$out/graft-12b-$kv-h200.txt"
      tail -n 1 "$out/graft-12b-$kv-h200.txt" > "$out/graft-12b-$kv-h200.json"
    done ;;
  hot-loop)
    m=$(model 12b)
    for t in 5977 11994; do
      for p in library native library native; do
        $node dist/bench/hot-step-loop.js --model "$m" --tokens "$t" --steps 1000 --binary "$KV_LLAMA" --path "$p" 2>&1 |
          tail -n 1 | sed "s/^/$t tokens: /"
      done
    done | tee "$out/hot-step-loop-12b-h200.txt" ;;
  kernel-trace) # ncu runs the kernels one at a time; clocks and caches as they are
    m=$(model 12b)
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    "$ncu" --clock-control none --cache-control none --target-processes all --metrics gpu__time_duration.sum \
      --csv --print-units base $node dist/bench/hot-step-loop.js --model "$m" --tokens 5977 --steps 2 \
      --binary "$KV_LLAMA" --path native > "$out/ncu-12b-5977.csv" 2> "$out/ncu-12b-5977.log"
    python3 scripts/kernel-steps.py "$out/ncu-12b-5977.csv" | tee "$out/kernels-12b-f16-5977-h200.txt" ;;
  batch-trace) # where a batched step's time goes: its kernels' GPU time against its wall time
    m=$(model 12b)
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    for s in ${TRACE_SLOTS:-48}; do
      args=(bench batches --model "$m" --slots "$s" --clients "$s" --rounds 1 --max-tokens 16 --context 2304
        --block-tokens 2000 --workload hot-1 --json)
      $cli "${args[@]}" 2>"$out/batch-trace-wall-$s.log" | tee "$out/batch-trace-wall-$s.json"
      # the same without CUDA graphs: whether the batched steps replay graphs at all
      GGML_CUDA_DISABLE_GRAPHS=1 $cli "${args[@]}" 2>"$out/batch-trace-nographs-$s.log" |
        tee "$out/batch-trace-nographs-$s.json"
      if [[ -n ${LLAMA_BATCHED_BENCH:-} ]]; then # llama.cpp's own batched steps, same model and shapes
        for kvu in "" "-kvu -pps"; do
          LLAMA_RELEASE_DIR=$(stock_release) "$LLAMA_BATCHED_BENCH" -m "$m" -c $((s * 2304)) -b 2048 -ub 512 -npp 2000 -ntg 16 -npl "$s" -fa on \
            -ngl 999 $kvu > "$out/batched-bench-$s${kvu:+-kvu}.txt" 2>&1 || echo "gpu-round: batched-bench $kvu failed" >&2
        done
      fi
      # bounded: a trace cut inside a step still repeats (its last steps are a rotation of one), which
      # is all kernel-steps.py needs
      timeout "${TRACE_NCU_S:-300}" "$ncu" --clock-control none --cache-control none --target-processes all \
        --metrics gpu__time_duration.sum --csv --print-units base $cli "${args[@]}" > "$out/ncu-batch-$s.csv" \
        2> "$out/ncu-batch-$s.log" || echo "gpu-round: ncu exit $?" >&2
      python3 scripts/kernel-steps.py "$out/ncu-batch-$s.csv" | tee "$out/kernels-batch-$s.txt" || true
      gzip -f "$out/ncu-batch-$s.csv"
    done ;;
  kvu-sweep) # llama.cpp's batched-bench with one shared prompt in one unified stream (-kvu -pps) at
    # KVU_NPL sequences (default 48,96,192,256): how a step scales when a hot block's cells are read
    # once; and with 16-token prompts in a stream each at 1-96 sequences: the step's cost without
    # attention's KV reads (the weights' matrix products), to set against its cost at 2,000 tokens
    m=$(model 12b)
    npl=${KVU_NPL:-48,96,192,256}
    LLAMA_RELEASE_DIR=$(stock_release) "${LLAMA_BATCHED_BENCH:?carry llama-batched-bench}" -m "$m" -c $((2000 + ${npl##*,} * 16 + 512)) \
      -b 2048 -ub 512 -npp 2000 -ntg 16 -npl "$npl" -fa on -ngl 999 -kvu -pps > "$out/batched-bench-kvu-sweep.txt" 2>&1 ||
      echo "gpu-round: batched-bench -kvu -pps failed" >&2
    LLAMA_RELEASE_DIR=$(stock_release) "$LLAMA_BATCHED_BENCH" -m "$m" -c $((96 * 64)) -b 2048 -ub 512 -npp 16 -ntg 16 \
      -npl 1,16,48,96 -fa on -ngl 999 > "$out/batched-bench-short.txt" 2>&1 || echo "gpu-round: batched-bench short failed" >&2 ;;
  gemm-bound) # the 12b step's weight products in cuBLAS (PyTorch) at 1-256 sequences, against the weights' read
    python3 scripts/device/gemm-bound.py | tee "$out/gemm-bound-12b.txt" ;;
  fa-alias) # a step's attention over a hot block's copies in S streams against one copy all streams read
    # (scripts/device/fa-alias-bench.cpp, built by build-fa-alias.sh and carried beside llama-server)
    LD_LIBRARY_PATH=$(stock_release) "${FA_ALIAS_BENCH:-/root/llama-server/fa-alias-bench}" --streams "${FA_STREAMS:-16,48,96,192}" \
      --budget-gib "${FA_BUDGET_GIB:-30}" | tee "$out/fa-alias-12b.txt" ;;
  swa)
    rm -f "$models"/12b.gguf # the disk holds one 12B model at a time
    m=$(model gemma3-12b)
    for n in 5977 11994; do
      $cli verify --model "$m" --trials 10 --tokens "$n" --swa-full-cache false --json 2>"$out/verify-gemma3-12b-$n.log" |
        tail -n 1 > "$out/verify-gemma3-12b-$n-h200.json"
    done
    swa_graft ;;
  swa-graft)
    rm -f "$models"/12b.gguf
    swa_graft ;;
  verify)
    $cli verify --model "$(model 1b)" --trials 10 --tokens 5977 --shift 16 --json 2>"$out/verify-1b.log" | tee "$out/verify-1b.txt"
    tail -n 1 "$out/verify-1b.txt" > "$out/verify-1b.json" ;;
  graft)
    kv=${2:-f16}
    $cli bench graft --model "$(model 12b)" --lengths 748,5977,11994 --kv "$kv" --runs 5 --json 2>"$out/graft-12b-$kv.log" | tee "$out/graft-12b-$kv.txt"
    tail -n 1 "$out/graft-12b-$kv.txt" > "$out/graft-12b-$kv.json" ;;
  library)
    # 1b-compact-kv: one KV head of 64, q8_0 KV: ~2.2 KB of state per token.
    $cli bench library --model "$(model 1b-compact-kv)" --blocks 88 --block-tokens 32768 \
      --depths 0,470000,940000,1410000,1880000,2350000,2883583 --accesses 3 --kv q8_0 \
      --data-dir /root/library --json 2>"$out/library.log" | tee "$out/library.txt"
    tail -n 1 "$out/library.txt" > "$out/library.json" ;;
  energy)
    $cli bench graft --model "$(model 12b)" --lengths 11994 --kv f16 --runs 3 --energy-seconds 20 --json \
      2>"$out/energy-12b.log" | tee "$out/energy-12b.txt"
    tail -n 1 "$out/energy-12b.txt" > "$out/energy-12b.json" ;;
  batches)
    for w in hot-1 distinct; do
      $cli bench batches --model "$(model 12b)" --slots 32 --clients 32 --rounds 4 --max-tokens 16 \
        --context 4096 --block-tokens 2000 --workload $w --json 2>"$out/batches-12b-$w.log" | tee "$out/batches-12b-$w.json"
    done ;;
  serve)
    # The same model file, slots and arrivals for both servers; one document per rate.
    # A linked llama-server runs on the libraries of the CUDA build installed here (lastBuild), not the
    # dev machine's copy it was linked against.
    LLAMA_RELEASE_DIR=$(stock_release)
    export LLAMA_RELEASE_DIR
    server=${LLAMA_SERVER:-$(bash scripts/build-llama-server.sh cuda "${LLAMA_SERVER_DIR:-/root/llama-server-cuda}" 2>"$out/llama-server-build.log" | tail -n 1)}
    # 5,000 characters of block text are ~2,000 tokens on the 12b preset's vocabulary (8,000 made 3,212).
    # bench serve exits 1 when a side answered nothing at a rate: note it and go on to the next rate
    # (under pipefail the first such rate ended the round on 2026-12-02); exit 1 at the end.
    status=0
    # LLAMA_CACHE_RAM=MIB: llama-server's --cache-ram (0: off; its default saved a 771 MiB slot state
    # before each new prompt on 2026-12-02, and answered nothing in the window); files get -crMIB.
    tag=${LLAMA_CACHE_RAM:+-cr$LLAMA_CACHE_RAM}
    # KV_STEP_FILL=off: kvgraft's steps without fillers or joiners' pads (a pass per run of busy slots),
    # files -nofill; KV_STEP_FILL=fillers: fillers without pads, files -fillers;
    # SERVE_ONLY=kvgraft: kvgraft's side alone.
    case ${KV_STEP_FILL:-auto} in off) tag+=-nofill ;; fillers) tag+=-fillers ;; esac
    # KV_GREEDY_PICK=off: a sampler call for each greedy slot of a step, files -nopick.
    [[ ${KV_GREEDY_PICK:-auto} != off ]] || tag+=-nopick
    # SERVE_SLOTS / SERVE_CONTEXT: both servers' slots and cells a slot (default 32 x 4,096); files
    # get -sN / -cN when they differ from the default. SERVE_WORKLOADS (default hot-1,warm-12).
    slots=${SERVE_SLOTS:-32}
    [[ $slots == 32 ]] || tag+=-s$slots
    [[ ${SERVE_CONTEXT:-4096} == 4096 ]] || tag+=-c$SERVE_CONTEXT
    only=()
    if [[ -n ${SERVE_ONLY:-} ]]; then only=(--only "$SERVE_ONLY"); tag+=-only-$SERVE_ONLY; fi
    # SERVE_TIMEOUT_MS: both clients' timeout (default 30,000; kvgraft's side sends it as the
    # deadline), so the answered requests' p99 is within it on both sides: files get -tMS.
    timeout_ms=${SERVE_TIMEOUT_MS:-30000}
    [[ $timeout_ms == 30000 ]] || tag+=-t$timeout_ms
    for rate in ${SERVE_RATES:-50 100 200}; do
      $cli bench serve --model "$(model 12b)" --llama-server "$server" "${only[@]}" --workloads "${SERVE_WORKLOADS:-hot-1,warm-12}" \
        --rate "$rate" --duration 30 --slots "$slots" --context "${SERVE_CONTEXT:-4096}" --block-chars 5000 --max-tokens 16 \
        --timeout-ms "$timeout_ms" ${LLAMA_CACHE_RAM:+--llama-cache-ram "$LLAMA_CACHE_RAM"} --log-dir "$out/serve-logs-r$rate$tag" \
        --out "$out/serve-12b-h200-r$rate$tag.json" 2>"$out/serve-12b-r$rate$tag.log" | tee "$out/serve-12b-r$rate$tag.txt" ||
        { echo "gpu-round: serve at $rate req/s: a side answered nothing (see serve-12b-r$rate$tag.log)" >&2; status=1; }
    done
    [[ $status -eq 0 ]] || exit 1 ;;
  load)
    # The graft path through serve gpu (12b, CUDA) + serve edge, at three constant arrival rates.
    MODEL_PATH="$(model 12b)" $cli bench edge --stack serve --rate 8,16,32 --duration 15 --path graft \
      --json 2>"$out/load-12b.log" | tee "$out/load-12b.txt"
    tail -n 1 "$out/load-12b.txt" > "$out/load-12b.json" ;;
  scale-out)
    # Both nodes load one model file. 4 hot slots a node and 12 blocks of ~2,000 tokens (~0.8 GB of
    # f16 state each on 12b): the library does not fit one node's hot tier. The blocks live in
    # $data, not in $out. Rates come from a closed-loop probe of one node; the failover run is at 80%
    # of the measured two-node capacity: the second node is killed at 10 s and restarted 5 s later.
    # Each phase restarts the nodes and begins once their warm start has read the library back
    # into the warm tier (pinned RAM on our engine build): a 12 GiB warm budget a node holds all 12
    # blocks (~9.7 GB), where the 2 GiB default would hold two.
    preset=${MODEL_PRESET:-12b}
    data=${SCALE_OUT_DIR:-/root/scale-out}
    rm -rf "$data"
    status=0
    KVGRAFT_WARM_BUDGET_BYTES=${SCALE_OUT_WARM_BUDGET_BYTES:-$((12 * 1024 * 1024 * 1024))} \
    $cli bench scale-out --model "$(model "$preset")" --nodes 2 --devices 0,1 --slots 4 --context 4096 \
      --blocks 12 --block-tokens 2000 --max-tokens 4 --duration 10 --warmup 5 --pause 2 \
      --failover-duration 45 --kill-at 10 --down 5 --data-dir "$data" --json \
      2>"$out/scale-out-$preset.log" | tee "$out/scale-out-$preset.txt" || status=$?
    for f in "$data"/*.log; do [[ -f $f ]] && cp "$f" "$out/scale-out-$preset-$(basename "$f")"; done
    tail -n 1 "$out/scale-out-$preset.txt" > "$out/scale-out-$preset-h200.json"
    rm -rf "$data"
    [[ $status -eq 0 ]] || { echo "gpu-round: bench scale-out exited $status" >&2; exit "$status"; } ;;
  bucket)
    [[ -n ${S3RVER_DIR:-} ]] || { echo "gpu-round: bucket needs S3RVER_DIR (scripts/stage-s3rver.sh DIR)" >&2; exit 2; }
    preset=${BUCKET_PRESET:-1b}
    tokens=${BUCKET_TOKENS:-10000}
    for p in ${BUCKET_PARALLEL:-4 8}; do
      $cli bench bucket --model "$(model "$preset")" --tokens "$tokens" --kv f16 --runs "${BUCKET_RUNS:-5}" --parallel "$p" \
        --s3rver-dir "$S3RVER_DIR" --data-dir /root/bucket-bench --json \
        2>"$out/bucket-$preset-p$p.log" | tee "$out/bucket-$preset-p$p.txt"
      tail -n 1 "$out/bucket-$preset-p$p.txt" > "$out/bucket-$preset-p$p-h200.json"
    done ;;
  http)
    $cli bench http --model "$(model 1b)" --runs 20 --json 2>"$out/http-1b.log" | tee "$out/http-1b.txt"
    tail -n 1 "$out/http-1b.txt" > "$out/http-1b.json" ;;
  *) echo "usage: gpu-round.sh verify | graft f16|q8_0 | engine | library | energy | load | http | bucket | swa | swa-graft | scale-out" >&2; exit 2 ;;
esac
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader >> "$out/gpu.txt" || true

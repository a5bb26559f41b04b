#!/usr/bin/env bash
# On the device, after setup-{node,app,cuda}.sh and a finished train-start.sh run: the candidate
# model judged there, so several runs can be compared within one lease.
#   bash scripts/device/model-eval.sh start RUN
#       exports /root/results/train/RUN's weights with the app's exporter (tools/model/export.ts)
#       to /root/results/models/RUN.gguf, then starts `kvgraft eval solve --model it --per-family
#       ${PER_FAMILY:-1} --samples 4 --json` on the CUDA build in the background
#   bash scripts/device/model-eval.sh poll SECONDS RUN
#       waits up to SECONDS for it; then $OUT gets eval-RUN.json (the result line), its log and the
#       GGUF (~14 MB; the exporter writes the same bytes here: check with sha256sum)
set -euo pipefail
usage() { echo "model-eval: start RUN, or poll SECONDS RUN" >&2; exit 2; }
case "${1:-}:$#" in
  start:2) run=$2 ;;
  poll:3) limit=$2 run=$3 ;;
  *) usage ;;
esac
[[ $run =~ ^[A-Za-z0-9_-]+$ ]] || { echo "model-eval: run name '$run': letters, digits, _ and - only" >&2; exit 2; }
[[ ${limit:-0} =~ ^[0-9]+$ ]] || usage
results=/root/results
case "$1" in
  start)
    [[ -f $results/train/$run/done ]] || { echo "model-eval: training run $run has not finished" >&2; exit 2; }
    mkdir -p "$results/models" "$results/eval"
    rm -f "$results/eval/$run".*
    cd /opt/kv/app
    /opt/kv/bin/node dist/tools/model/export.js --weights "$results/train/$run" --data /root/train/data \
      --out "$results/models/$run.gguf"
    # setsid: when a call returns, the device tool kills its whole session, background jobs included.
    setsid nohup bash -c "KV_LLAMA=lastBuild /opt/kv/bin/node dist/cli/main.js eval solve \
      --model $results/models/$run.gguf --per-family ${PER_FAMILY:-1} --samples 4 --json \
      > $results/eval/$run.out 2> $results/eval/$run.log; echo \"exit \$?\" > $results/eval/$run.done" \
      > /dev/null 2>&1 < /dev/null &
    sleep 10
    tail -n 2 "$results/eval/$run.log"
    ;;
  poll)
    for ((i = 0; i < limit; i += 5)); do
      [[ -f $results/eval/$run.done ]] && break
      sleep 5
    done
    tail -n 3 "$results/eval/$run.log"
    [[ -f $results/eval/$run.done ]] || exit 0
    cat "$results/eval/$run.done"
    tail -n 1 "$results/eval/$run.out" > "$OUT/eval-$run.json"
    cp "$results/eval/$run.log" "$OUT/eval-$run.log"
    cp "$results/models/$run.gguf" "$OUT/"
    sha256sum "$results/models/$run.gguf"
    ;;
esac

#!/usr/bin/env bash
# On the device after setup-{node,app,cuda}.sh: issue 38's round in the background, results in
# /root/results/r38; then poll with serve-round-poll.sh as for serve-round-start.sh. hot-1 only,
# llama-server without its host-memory prompt cache (--cache-ram 0, as in the third round), 16
# tokens, blocks of ~2,000 tokens:
#   0. SCALE_FA=1 (default 0: skipped): gpu-round.sh fa-alias (fa-alias-bench carried in .device/llama-server)
#      SCALE_GEMM=1 (default 0: skipped): gpu-round.sh gemm-bound (PyTorch's cuBLAS on the step's weight products)
#      SCALE_KVU (default empty: skipped; "48,96,192"): gpu-round.sh kvu-sweep at those sequence counts
#   1. SCALE_B (default 96; empty: skipped) slots of 2,304 cells, both servers, at 200 req/s
#   2. gpu-round.sh batch-trace at SCALE_TRACE (default "48"; empty: skipped) slots: a batched
#      step's kernels' GPU time against its wall time, without CUDA graphs, and llama.cpp's
#      batched-bench on the same shapes where carried
#   3. SCALE_A (default 64) slots of 2,304 cells, both servers, at SCALE_RATES (default "30 120") req/s,
#      once for each client timeout in SCALE_TIMEOUTS (default "30000" ms; empty: skipped; "1000 2000": the answered
#      requests' p99 within 1 s and 2 s on both sides, so their rates compare at the same p99)
#   4. SCALE_A slots, kvgraft alone with KV_STEP_FILL=fillers (no joiners' pads: the fourth round's
#      steps) at the last of SCALE_RATES, beside step 3's kvgraft side at that rate (SCALE_FILLERS=0:
#      skipped)
# The order puts the target (200 req/s) first, so a round cut short by the device budget
# still has it.
# 64 and 96 slots of the 12b preset need the H200 (~84 and ~113 GB with the weights); on an H100
# (80 GB) it picks SCALE_A=SCALE_B=48 (~69 GB) by itself.
set -euo pipefail
while [[ ! -f /root/results/synth.done ]]; do sleep 2; done
cat /root/results/synth.done
rm -rf /root/results/r38 /root/results/r38.done
mkdir -p /root/results/r38
cp scripts/gpu-round.sh /opt/kv/app/scripts/ && mkdir -p /opt/kv/app/scripts/device && cp scripts/device/gemm-bound.py /opt/kv/app/scripts/device/
cd /opt/kv/app
export KV_ENGINE_DIR=/root/engine-cuda LLAMA_SERVER=/root/llama-server/llama-server OUT=/root/results/r38
# llama.cpp's batched-bench beside the trace, where it was linked into .device/llama-server too
# (LLAMA_TOOL=llama-batched-bench bash scripts/build-llama-server.sh linked .data/cuda/Release <dir>)
[[ ! -x /root/llama-server/llama-batched-bench ]] || export LLAMA_BATCHED_BENCH=/root/llama-server/llama-batched-bench
export LLAMA_CACHE_RAM=0 SERVE_WORKLOADS=hot-1 SCALE_RATES=${SCALE_RATES:-30 120}
# An 80 GB card (H100) takes 48 slots (steps 1-3), not 64 and 96, unless SCALE_A/SCALE_B are given.
gpu_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
if ((gpu_mib < 100000)); then export SCALE_A=${SCALE_A:-48} SCALE_B=${SCALE_B-48}; fi
export SCALE_A=${SCALE_A:-64} SCALE_B=${SCALE_B-96} SCALE_FILLERS=${SCALE_FILLERS:-1} SCALE_KVU=${SCALE_KVU:-} SCALE_FA=${SCALE_FA:-0} SCALE_GEMM=${SCALE_GEMM:-0} SCALE_TRACE=${SCALE_TRACE-48}
export SCALE_TIMEOUTS=${SCALE_TIMEOUTS-30000}
echo "scale-round: ${gpu_mib} MiB on the card: SCALE_A=$SCALE_A SCALE_B=${SCALE_B:-none}"
# setsid: when a call returns, the device tool kills its whole session, background jobs included.
setsid nohup bash -c 'r=/root/results/r38
  [[ $SCALE_FA == 0 ]] || bash scripts/gpu-round.sh fa-alias > $r/fa.out 2>&1
  [[ $SCALE_GEMM == 0 ]] || bash scripts/gpu-round.sh gemm-bound > $r/gemm.out 2>&1
  [[ -z $SCALE_KVU ]] || KVU_NPL=$SCALE_KVU bash scripts/gpu-round.sh kvu-sweep > $r/kvu.out 2>&1
  [[ -z $SCALE_B ]] || SERVE_SLOTS=$SCALE_B SERVE_CONTEXT=2304 SERVE_RATES=200 bash scripts/gpu-round.sh serve > $r/sB.out 2>&1
  [[ -z $SCALE_TRACE ]] || TRACE_SLOTS=$SCALE_TRACE bash scripts/gpu-round.sh batch-trace > $r/trace.out 2>&1
  for t in $SCALE_TIMEOUTS; do
    SERVE_TIMEOUT_MS=$t SERVE_SLOTS=$SCALE_A SERVE_CONTEXT=2304 SERVE_RATES="$SCALE_RATES" bash scripts/gpu-round.sh serve >> $r/sA.out 2>&1
  done
  [[ $SCALE_FILLERS == 0 ]] || KV_STEP_FILL=fillers SERVE_ONLY=kvgraft SERVE_SLOTS=$SCALE_A SERVE_CONTEXT=2304 \
    SERVE_RATES="${SCALE_RATES##* }" bash scripts/gpu-round.sh serve > $r/fillers.out 2>&1
  echo "exit $?" > /root/results/r38.done' > /dev/null 2>&1 < /dev/null &
sleep 5
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader

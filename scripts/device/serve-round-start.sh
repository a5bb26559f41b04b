#!/usr/bin/env bash
# On the device after setup-{node,app,cuda}.sh: issue 38's rounds in the background so they outlive
# the call: scripts/gpu-round.sh batches, then serve against /root/llama-server at SERVE_RATES
# (default "60 200"), results in /root/results/r38. SKIP_BATCHES=1 runs serve alone; LLAMA_CACHE_RAM=MIB
# passes llama-server's --cache-ram (gpu-round.sh serve). Then, in calls within 30 s of one another:
# bash scripts/device/serve-round-poll.sh SECONDS.
set -euo pipefail
while [[ ! -f /root/results/synth.done ]]; do sleep 2; done
cat /root/results/synth.done
rm -rf /root/results/r38 /root/results/r38.done
mkdir -p /root/results/r38
cd /opt/kv/app
export SERVE_RATES=${SERVE_RATES:-60 200}
# our engine build when setup-cuda.sh installed one (device copies, the greedy pick without a candidate array)
if [[ -d /root/engine-cuda ]]; then export KV_ENGINE_DIR=/root/engine-cuda; fi
# setsid: when a call returns, the device tool kills its whole session, background jobs included.
setsid nohup bash -c '[[ ${SKIP_BATCHES:-0} == 1 ]] ||
    OUT=/root/results/r38 bash scripts/gpu-round.sh batches > /root/results/r38/batches.out 2>&1
  LLAMA_SERVER=/root/llama-server/llama-server OUT=/root/results/r38 bash scripts/gpu-round.sh serve \
    > /root/results/r38/serve.out 2>&1
  echo "exit $?" > /root/results/r38.done' > /dev/null 2>&1 < /dev/null &
sleep 5
nvidia-smi --query-gpu=memory.used,power.draw --format=csv,noheader

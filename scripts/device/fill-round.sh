#!/usr/bin/env bash
# On the device after setup-{node,app,cuda}.sh: kvgraft's side of bench serve at 60 req/s with the
# batched steps' fillers (KV_STEP_FILL auto: on, on a GPU) and without (off), one after the other,
# results in /root/results/r38; then poll with serve-round-poll.sh as for serve-round-start.sh.
set -euo pipefail
while [[ ! -f /root/results/synth.done ]]; do sleep 2; done
rm -rf /root/results/r38 /root/results/r38.done
mkdir -p /root/results/r38
cp scripts/gpu-round.sh /opt/kv/app/scripts/
cd /opt/kv/app
export KV_ENGINE_DIR=/root/engine-cuda LLAMA_SERVER=/root/llama-server/llama-server OUT=/root/results/r38
export SERVE_ONLY=kvgraft SERVE_RATES=${SERVE_RATES:-60}
# setsid: when a call returns, the device tool kills its whole session, background jobs included.
setsid nohup bash -c 'bash scripts/gpu-round.sh serve > /root/results/r38/serve-fill.out 2>&1
  KV_STEP_FILL=off bash scripts/gpu-round.sh serve > /root/results/r38/serve-nofill.out 2>&1
  echo "exit $?" > /root/results/r38.done' > /dev/null 2>&1 < /dev/null &
sleep 5
ls /root/results/r38

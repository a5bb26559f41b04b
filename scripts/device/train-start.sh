#!/usr/bin/env bash
# On the device, carrying .train/data (tools/model/dataset.ts's output): the embedded model's
# training run (tools/model/train.py, scripts/gpu-round.sh train-model's step) in the background so
# it outlives the call, into /root/results/train (not $OUT, which the device tool empties at every
# call). STEPS=N overrides the dataset's step count. Then, in calls within 30 s of one another:
# bash scripts/device/train-poll.sh SECONDS.
set -euo pipefail
rm -rf /root/train /root/results/train /root/results/train.done
mkdir -p /root/train /root/results/train
cp tools/model/train.py /root/train/ && cp -r .train/data /root/train/data
steps=${STEPS:+--set steps=$STEPS}
cd /root/train
# setsid: when a call returns, the device tool kills its whole session, background jobs included.
setsid nohup bash -c "PYTHONUNBUFFERED=1 python3 train.py --data data --out /root/results/train $steps \
  > /root/results/train/stdout.log 2>&1; echo \"exit \$?\" > /root/results/train.done" > /dev/null 2>&1 < /dev/null &
sleep 20
tail -n 2 /root/results/train/stdout.log

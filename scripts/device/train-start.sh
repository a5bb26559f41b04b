#!/usr/bin/env bash
# On the device, carrying .train/data (tools/model/dataset.ts's output): the embedded model's
# training (tools/model/train.py, scripts/gpu-round.sh train-model's step) in the background so it
# outlives the call, into /root/results/train/RUN (not $OUT, which the device tool empties at every
# call). Then, in calls within 30 s of one another: bash scripts/device/train-poll.sh SECONDS [RUN].
#
#   RUNS="NAME[:KEY=VALUE,...] ..."  one run per word, each with its own train.py --set overrides
#                                   (default "main": the dataset's settings); e.g.
#                                   RUNS="main s1:seed=1 long:steps=12000"
#   PARALLEL=1                      start the runs at once on the one GPU (the small model leaves it
#                                   mostly idle; each run's log says how many steps its budget ran)
#                                   instead of one after another
#   MAX_SECONDS=N                   each run's --max-seconds (train.py's default: 520)
#   STEPS=N                         every run's step count (as a KEY=VALUE steps=N would)
set -euo pipefail
runs=${RUNS:-main}
rm -rf /root/train /root/results/train
mkdir -p /root/train /root/results/train
cp tools/model/train.py /root/train/ && cp -r .train/data /root/train/data
cd /root/train
# One run's command line: its --set flags from NAME:KEY=VALUE,... and STEPS.
command_for() {
  local name=${1%%:*} sets="" kv kvs
  if [[ $1 == *:* ]]; then
    IFS=, read -ra kvs <<<"${1#*:}"
    for kv in "${kvs[@]}"; do sets+=" --set $kv"; done
  fi
  [[ -n ${STEPS:-} ]] && sets+=" --set steps=$STEPS"
  local out=/root/results/train/$name
  mkdir -p "$out"
  echo "PYTHONUNBUFFERED=1 python3 train.py --data data --out $out$sets ${MAX_SECONDS:+--max-seconds $MAX_SECONDS} \
> $out/stdout.log 2>&1; echo \"exit \$?\" > $out/done"
}
jobs=()
for run in $runs; do
  name=${run%%:*}
  [[ $name =~ ^[A-Za-z0-9_-]+$ ]] || { echo "train-start: run name '$name': letters, digits, _ and - only" >&2; exit 2; }
  ! grep -qx "$name" /root/results/train/runs.txt 2>/dev/null || { echo "train-start: run '$name' named twice" >&2; exit 2; }
  jobs+=("$(command_for "$run")")
  echo "$name" >> /root/results/train/runs.txt # the poll's default: the first
done
if [[ ${PARALLEL:-0} == 1 ]]; then
  # Each job is "train ...; echo exit > done": grouped, or only its last command would go to the background.
  script=$(printf '(%s) &\n' "${jobs[@]}")$'\nwait'
else
  script=$(printf '%s\n' "${jobs[@]}")
fi
# setsid: when a call returns, the device tool kills its whole session, background jobs included.
setsid nohup bash -c "$script
touch /root/results/train/all.done" > /dev/null 2>&1 < /dev/null &
sleep 20
for run in $runs; do
  name=${run%%:*}
  echo "$name: $(tail -n 1 "/root/results/train/$name/stdout.log" 2>/dev/null || echo "(waiting)")"
done

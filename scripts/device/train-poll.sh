#!/usr/bin/env bash
# On the device: waits up to $1 s (default 500) for train-start.sh's run; once it is done, copies the
# weights (split below the 16 MiB a returned file may have), the reference outputs and the logs to
# $OUT. Here: cat weights.bin.part.* > weights.bin; sha256sum -c weights.sha256; then
# node --import tsx tools/model/export.ts --weights DIR --data .train/data --out models/kvgraft-math.gguf
limit=${1:-500}
for ((i = 0; i < limit; i += 5)); do
  [[ -f /root/results/train.done ]] && break
  sleep 5
done
tail -n 3 /root/results/train/stdout.log
[[ -f /root/results/train.done ]] || exit 0
cat /root/results/train.done
cd /root/results/train
cp weights.json reference.json train-log.json stdout.log "$OUT"/
split -b 15M -d weights.bin "$OUT"/weights.bin.part.
sha256sum weights.bin > "$OUT"/weights.sha256

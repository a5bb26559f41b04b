#!/usr/bin/env bash
# On the device: waits up to $1 s (default 500) for train-start.sh's run $2 (default: the first
# started); once it is done, copies its weights (split below the 16 MiB a returned file may have),
# reference outputs and logs to $OUT, and prints every run's last line. Here:
# cat weights.bin.part.* > weights.bin; sha256sum -c weights.sha256; then
# node --import tsx tools/model/export.ts --weights DIR --data .train/data --out models/kvgraft-math.gguf
limit=${1:-500}
results=/root/results/train
run=${2:-$(head -n 1 "$results/runs.txt" 2>/dev/null)}
dir=$results/$run
[[ -n $run && -d $dir ]] || { echo "train-poll: no run '$run' under $results: $(ls "$results")" >&2; exit 2; }
for ((i = 0; i < limit; i += 5)); do
  [[ -f $dir/done ]] && break
  sleep 5
done
while read -r name; do
  echo "$name: $(tail -n 1 "$results/$name/stdout.log" 2>/dev/null) $(cat "$results/$name/done" 2>/dev/null)"
done < "$results/runs.txt"
[[ -f $dir/done ]] || exit 0
cd "$dir"
cp weights.json reference.json train-log.json stdout.log "$OUT"/
split -b 15M -d weights.bin "$OUT"/weights.bin.part.
sha256sum weights.bin > "$OUT"/weights.sha256

#!/bin/bash
# Side by side on the GPU machine: the training loop's speed plain and under torch.compile, a
# short budget each (docs/model.md). Usage: OUT=dir bash scripts/device/train-speed.sh [SECONDS]
set -uo pipefail
s=${1:-60}
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
for mode in ${MODES:-plain compile}; do
  flag=(); [[ $mode == compile ]] && flag=(--compile)
  PYTHONUNBUFFERED=1 python3 tools/model/train.py --data .train/data --out "$OUT/speed-$mode" --max-seconds "$s" "${flag[@]}" \
    > "$OUT/speed-$mode.log" 2>&1
  echo "$mode rc=$? $(grep -E '^step [0-9]+ loss' "$OUT/speed-$mode.log" | tail -2 | tr '\n' ' ')"
  rm -f "$OUT/speed-$mode/weights.bin"
done

#!/usr/bin/env bash
# On the device, carrying .device/fa (stage-fa.sh), in one call with no setup: one step's flash
# attention over a hot block's copies, a shared stride-0 view and the copies' ranges mapped onto
# one copy's pages (fa-alias-bench, FA_STREAMS), then the 12b step's weight products in cuBLAS
# (gemm-bound.py, PyTorch). Each is bounded so that the call ends inside its limit; $OUT gets
# gpu.txt, fa-alias-12b.txt and gemm-bound-12b.txt.
set -uo pipefail
out=${OUT:?run on the device, where OUT is set}
rel=/tmp/fa-release
mkdir -p "$rel" && xz -dc .device/fa/ggml-cuda.tar.xz | tar -x -C "$rel" || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"
LD_LIBRARY_PATH=$rel timeout "${FA_TIMEOUT_S:-180}" .device/fa/fa-alias-bench --streams "${FA_STREAMS:-16,48,96,192}" \
  --budget-gib "${FA_BUDGET_GIB:-30}" > "$out/fa-alias-12b.txt" 2>&1
echo "fa-alias-bench: exit $?" | tee -a "$out/fa-alias-12b.txt"
cat "$out/fa-alias-12b.txt"
timeout "${GEMM_TIMEOUT_S:-120}" python3 scripts/device/gemm-bound.py > "$out/gemm-bound-12b.txt" 2>&1
echo "gemm-bound: exit $?" | tee -a "$out/gemm-bound-12b.txt"
cat "$out/gemm-bound-12b.txt"

#!/usr/bin/env bash
# Stages the model-free device measurements (fa-alias-bench, gemm-bound.py) for one device call
# with no setup: no Node, no app, no model. Here, from the project root, with .data/cuda (the CUDA
# sm_90 build, ../shared/gpu/llama-cuda-sm90 unpacked) and CUDA's cuda.h (build-fa-alias.sh):
#   bash scripts/device/stage-fa.sh      # ~1 min: .device/fa (~40 MB: ggml's CUDA libraries, xz)
# then one device call, carrying .device/fa:
#   bash scripts/device/fa-round.sh      # results in $OUT: fa-alias-12b.txt, gemm-bound-12b.txt
# The CUDA build's release parts of stage.sh do not serve here: one of them travels with node.xz
# (split-stage.sh), and all of them beside the tree are over what a call carries.
set -euo pipefail
rel=${CUDA_RELEASE:-.data/cuda/Release}
[[ -f $rel/libggml-cuda.so ]] || { echo "stage-fa: no CUDA build in $rel" >&2; exit 2; }
rm -rf .device/fa && mkdir -p .device/fa
bash scripts/device/build-fa-alias.sh "$rel" .device/fa > /dev/null
libs=(libggml-base.so libggml-cpu.so libggml-cuda.so)
for l in "$rel"/libggml.*.so; do libs+=("$(basename "$l")"); done
tar -C "$rel" -cf - "${libs[@]}" | xz -9e -T2 > .device/fa/ggml-cuda.tar.xz
tree=$(git ls-files -co --exclude-standard -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
bytes=$(du -cb .device/fa | tail -1 | cut -f1)
echo "stage-fa: .device/fa: $((bytes / 1000000)) MB, with the tree $(((bytes + tree) / 1000000)) MB"
((bytes + tree < 64 * 1024 * 1024)) || { echo "stage-fa: over the 64 MiB a call carries" >&2; exit 1; }

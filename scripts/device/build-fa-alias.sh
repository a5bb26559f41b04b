#!/usr/bin/env bash
# Builds scripts/device/fa-alias-bench.cpp (a device measurement: a step's attention over a hot
# block's copies against one shared copy) against a Release dir of node-llama-cpp's bundled
# llama.cpp, with that release's ggml headers. On the GPU machine it runs on the CUDA build there
# (gpu-round.sh fa-alias puts that build's libraries on LD_LIBRARY_PATH). Its mapped layout
# (fa-alias-pages.h) needs CUDA's cuda.h for the driver's types (CUDA_INCLUDE, default
# /usr/local/cuda-13.0/include, as on this machine) and loads libcuda.so.1 only when it runs on a GPU.
#   bash scripts/device/build-fa-alias.sh .data/cuda/Release .device/llama-server   # for the GPU round (carried)
#   bash scripts/device/build-fa-alias.sh cpu /tmp/fa-alias                        # a check here, on the CPU prebuilt
#     (ggml finds its CPU backend beside the executable or in the working directory):
#     (cd node_modules/@node-llama-cpp/linux-x64/bins/linux-x64 && /tmp/fa-alias/fa-alias-bench --cpu --streams 2,4 --cells 512 --layers 4 --runs 3)
set -euo pipefail
rel=${1:?usage: build-fa-alias.sh <Release dir>|cpu <out dir>}
out=${2:?usage: build-fa-alias.sh <Release dir>|cpu <out dir>}
[[ $rel != cpu ]] || rel=node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
libs=()
for l in "$rel"/libggml.*.so "$rel"/libggml-base.so; do libs+=("-l:$(basename "$l")"); done
mkdir -p "$out"
# libstdc++ NEEDED first, as build-llama-server.sh links (the CUDA build's libraries carry a static
# one and export it); they need CUDA's own libraries, which only the GPU machine has
g++ -O2 -std=c++17 -I node_modules/node-llama-cpp/llama/llama.cpp/ggml/include -I node_modules/node-llama-cpp/llama/llama.cpp/ggml/src -I "${CUDA_INCLUDE:-/usr/local/cuda-13.0/include}" scripts/device/fa-alias-bench.cpp \
  -o "$out/fa-alias-bench" -L"$rel" -Wl,--no-as-needed -lstdc++ "${libs[@]}" -Wl,--as-needed \
  -Wl,-rpath,"$(realpath "$rel")" -Wl,--allow-shlib-undefined
echo "$out/fa-alias-bench"

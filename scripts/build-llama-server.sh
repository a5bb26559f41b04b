#!/usr/bin/env bash
# Builds llama.cpp's own server, llama-server, from node-llama-cpp 3.21.1's bundled llama.cpp (the
# release kvgraft's engine is built from, without kvgraft's patches): the peer of
# `kvgraft bench serve --llama-server BIN`. Offline: no web UI download, no HTTPS client.
#
#   bash scripts/build-llama-server.sh cpu  [build dir]   default .data/llama-server-cpu
#   bash scripts/build-llama-server.sh cuda [build dir]   default .data/llama-server-cuda (needs the CUDA toolkit)
#
# Prints the binary's path last. Run from the project root after `npm ci` and
# `bash scripts/build-engine.sh cpu` (which unpacks the bundled llama.cpp). JOBS sets the parallelism.
set -euo pipefail
src=node_modules/node-llama-cpp/llama/llama.cpp
mode=${1:-}
[[ $mode == cpu || $mode == cuda ]] || { echo "usage: bash scripts/build-llama-server.sh cpu|cuda [build dir]" >&2; exit 2; }
[[ -f $src/tools/server/server.cpp ]] || {
  echo "build-llama-server: no llama.cpp sources in $src: run bash scripts/build-engine.sh cpu first" >&2
  exit 2
}
out=${2:-.data/llama-server-$mode}
gpu=()
[[ $mode == cuda ]] && gpu=(-DGGML_CUDA=ON)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$src" -B "$out" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
  "${gpu[@]}" >&2
cmake --build "$out" --target llama-server -j "${JOBS:-$(nproc)}" >&2
echo "$out/bin/llama-server"

#!/usr/bin/env bash
# Builds llama.cpp's own server, llama-server, from node-llama-cpp 3.21.1's bundled llama.cpp (the
# release kvgraft's engine is built from, without kvgraft's patches): the peer of
# `kvgraft bench serve --llama-server BIN`. Offline: no web UI download, no HTTPS client.
#
#   bash scripts/build-llama-server.sh cpu  [out dir]   default .data/llama-server-cpu (static, ggml compiled)
#   bash scripts/build-llama-server.sh cuda [out dir]   default .data/llama-server-cuda (needs the CUDA toolkit)
#   bash scripts/build-llama-server.sh linked <Release dir> [out dir]   default .data/llama-server-linked
#       Compiles only llama-server's own C++ (tools/server, tools/mtmd, the UI stub, vendor/cpp-httplib,
#       vendor/hash: ~7 min of one core, once, kept in .data/llama-server-objects) and links it against
#       the shared libraries of a prebuilt Release dir of the same release (libllama-common.so,
#       libllama*.so, libggml*.so; the objects bake in its headers' struct layouts): node-llama-cpp's CPU
#       prebuilt, or the CUDA build the GPU machine runs (../shared/gpu/llama-cuda-sm90), so a CUDA
#       llama-server needs no CUDA toolkit and no .cu compile. Writes <out>/llama-server.bin and
#       <out>/llama-server, a wrapper that puts the Release dir (LLAMA_RELEASE_DIR, else the one given
#       here) on LD_LIBRARY_PATH and execs the binary (same pid: usable as --llama-server as is).
#
# LLAMA_TOOL=llama-batched-bench builds that tool of the same release instead (same modes; its
# -kvu / -pps flags measure a unified KV cache and a shared prompt on the GPU machine).
# Prints the path to run last. Run from the project root after `npm ci`. JOBS sets the parallelism.
set -euo pipefail
mode=${1:-}
tool=${LLAMA_TOOL:-llama-server}
usage="usage: bash scripts/build-llama-server.sh cpu|cuda [out dir] | linked <Release dir> [out dir]"
case $mode in
  cpu | cuda) out=${2:-.data/$tool-$mode} ;;
  linked)
    [[ -f ${2:-}/libllama-common.so ]] || { echo "build-llama-server: ${2:-(none)} is no Release dir (no libllama-common.so); $usage" >&2; exit 2; }
    rel=$(cd "$2" && pwd)
    out=${3:-.data/$tool-linked} ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
# The bundled sources: unpacked by scripts/build-engine.sh cpu, else cloned from node-llama-cpp's bundle.
src=node_modules/node-llama-cpp/llama/llama.cpp
if [[ ! -f $src/tools/server/server.cpp ]]; then
  src=.data/llama.cpp
  [[ -f $src/tools/server/server.cpp ]] || git clone -q node_modules/node-llama-cpp/llama/gitRelease.bundle "$src" >&2
fi
flags=(-DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF)
jobs=${JOBS:-$(nproc)}
if [[ $mode != linked ]]; then
  gpu=()
  [[ $mode == cuda ]] && gpu=(-DGGML_CUDA=ON)
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$src" -B "$out" "${generator[@]}" -DBUILD_SHARED_LIBS=OFF "${flags[@]}" "${gpu[@]}" >&2
  cmake --build "$out" --target "$tool" -j "$jobs" >&2
  echo "$out/bin/$tool"
  exit 0
fi
command -v ninja >/dev/null || { echo "build-llama-server: linked needs ninja (its object list comes from ninja)" >&2; exit 2; }
# One object tree for every Release dir (the objects do not depend on the backend), configured once
# (shared libs, so the objects expect libllama-common.so's symbols) and kept.
build=.data/llama-server-objects
mkdir -p "$out"
[[ -f $build/build.ninja ]] ||
  cmake -S "$src" -B "$build" -G Ninja -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF -DGGML_CUDA=OFF "${flags[@]}" >&2
# llama-server's objects minus ggml, libllama and libllama-common (the Release dir has those), the
# embedded UI (off) and build-info (libllama-common.so exports llama_build_info and the like).
mapfile -t objs < <(ninja -C "$build" -t commands "bin/$tool" | grep -oE " -o [^ ]+\.o" | awk '{print $2}' |
  sort -u | grep -vE "ggml/src|src/CMakeFiles/llama.dir|common/CMakeFiles/llama-common.dir|llama-ui-embed|build-info")
ninja -C "$build" -j "$jobs" "${objs[@]}" >&2
libs=(-l:libllama-common.so)
for l in "$rel"/libllama.*.so "$rel"/libggml.*.so "$rel"/libggml-base.so; do libs+=("-l:$(basename "$l")"); done
[[ -f $rel/libggml-cpu.so ]] && libs+=(-l:libggml-cpu.so)
# libstdc++ is NEEDED first: the CUDA build's libraries carry a static libstdc++ and export it; the
# system one first in the lookup scope binds every std:: reference to one copy (as in node, where the
# addon loads these libraries). --allow-shlib-undefined: those libraries' own references resolve at run time.
g++ -O3 -o "$out/$tool.bin" "${objs[@]/#/$build/}" -L"$rel" \
  -Wl,--no-as-needed -lstdc++ "${libs[@]}" -Wl,--as-needed -lpthread -ldl -Wl,--allow-shlib-undefined
# Every undefined symbol of the binary must come from the Release dir or the system's C/C++ runtime.
defs=$(for l in "$rel"/*.so /lib/x86_64-linux-gnu/lib{stdc++.so.6,c.so.6,m.so.6,gcc_s.so.1} /lib64/ld-linux-x86-64.so.2; do
  nm -D --defined-only "$l" | awk '{print $3}' | sed 's/@.*//'; done | sort -u)
missing=$(comm -23 <(nm -D --undefined-only "$out/$tool.bin" | awk '$1=="U"{print $2}' | sed 's/@.*//' | sort -u) <(echo "$defs"))
[[ -z $missing ]] || { echo "build-llama-server: undefined in $rel: $(echo "$missing" | c++filt | head -5)" >&2; exit 1; }
# A ggml that loads its backends at run time (node-llama-cpp's CPU prebuilt: libggml-cpu-<cpu>.so, no
# libggml-cpu.so) looks for them beside the executable only: link them there.
[[ -f $rel/libggml-cpu.so ]] || for l in "$rel"/libggml-*.so; do ln -sf "$l" "$out/"; done
cat > "$out/$tool" <<EOF
#!/usr/bin/env bash
# $tool.bin beside this file, on the shared libraries of a Release dir of node-llama-cpp 3.21.1's
# llama.cpp (written by scripts/build-llama-server.sh linked): LLAMA_RELEASE_DIR, else the one it was linked against.
set -euo pipefail
here=\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)
rel=\${LLAMA_RELEASE_DIR:-$rel}
# the names it needs carry the build's variant (libllama.cuda.v0.4.0.<hash>.so): a mismatch is named here
for need in $(readelf -d "$out/$tool.bin" | sed -n 's/.*(NEEDED).*\[\(lib\(llama\|ggml\)[^]]*\)\]/\1/p' | tr '\n' ' '); do
  [[ -f \$rel/\$need ]] || { echo "$tool: \$rel has no \$need (another build?): set LLAMA_RELEASE_DIR" >&2; exit 2; }
done
export LD_LIBRARY_PATH=\$rel\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
exec "\$here/$tool.bin" "\$@"
EOF
chmod +x "$out/$tool"
echo "$out/$tool"

#!/usr/bin/env bash
# Builds kvgraft's engine: node-llama-cpp 3.21.1's bundled llama.cpp and addon with our patches
# (gpu-node/engine/native/): the in-memory sequence-state API, pinned host buffers, device-side
# sequence copies, and any llama.cpp fixes in llama-patches/.
#
#   bash scripts/build-engine.sh cpu
#       Full CPU build from the offline bundle; becomes node-llama-cpp's "lastBuild"
#       (load it with KV_LLAMA=lastBuild). ~5 min on 2 quiet cores. Used by CI.
#   bash scripts/build-engine.sh cuda-addon <Release dir of a CUDA build> <out dir>
#       Rebuilds only what our patches touch (the addon, and libllama when llama-patches/ has
#       patches) against a CUDA build of the same release (built on the GPU machine), on a
#       machine without a GPU; <out dir> then holds the files that replace that build's own.
#
# Idempotent: patches already applied are skipped. Run from the project root after `npm ci`.
set -euo pipefail
root=$(pwd)
[[ -f package.json && -d node_modules/node-llama-cpp ]] || { echo "build-engine: run from the project root after npm ci" >&2; exit 2; }
native="$root/gpu-node/engine/native"
nlc="$root/node_modules/node-llama-cpp/llama"
mode=${1:-}
log() { echo "build-engine: $*" >&2; }

# Copies our addon sources in and applies addon/*.diff to node-llama-cpp's (skipping those applied).
patch_addon() {
  local p
  cp "$native/addon/KvgraftState.cpp" "$native/addon/KvgraftState.h" "$nlc/addon/"
  for p in "$native"/addon/*.diff; do
    if patch --quiet --dry-run --reverse --force -p1 -d "$nlc/addon" < "$p" >/dev/null 2>&1; then continue; fi
    patch --quiet -p1 -d "$nlc/addon" < "$p"
    log "addon: applied $(basename "$p")"
  done
}

# Applies llama-patches/*.diff to a llama.cpp checkout (skipping those already applied).
patch_llama() {
  local src=$1 p
  shopt -s nullglob
  for p in "$native"/llama-patches/*.diff; do
    if git -C "$src" apply --check --reverse "$p" 2>/dev/null; then continue; fi
    git -C "$src" apply --whitespace=nowarn "$p"
    log "llama.cpp: applied $(basename "$p")"
  done
  shopt -u nullglob
}

case "$mode" in
  cpu)
    patch_addon
    started=$SECONDS
    if [[ ! -d $nlc/llama.cpp ]]; then
      log "cloning llama.cpp from the bundle"
      npx --no node-llama-cpp source download --gpu false --skipBuild --noUsageExample >&2
    fi
    patch_llama "$nlc/llama.cpp"
    log "building (progress follows)"
    npx --no node-llama-cpp source build --gpu false --noUsageExample >&2
    log "built in $((SECONDS - started)) s"
    ;;
  cuda-addon)
    rel=${2:?Release dir of the CUDA build}
    out=${3:?output dir}
    rel=$(cd "$rel" && pwd)
    mkdir -p "$out" && out=$(cd "$out" && pwd)
    patch_addon
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    git clone -q "$nlc/gitRelease.bundle" "$work/llama.cpp" 2>/dev/null
    patch_llama "$work/llama.cpp"
    src="$work/llama.cpp"
    node_inc=$(node -p "require('path').join(process.execPath, '../../include/node')")
    [[ -f $node_inc/node_api.h ]] || node_inc=/usr/include/node
    napi_inc=$(cd "$root/node_modules/node-llama-cpp" && node -p "require('node-addon-api').include.slice(1,-1)")
    variant=$(basename "$rel"/libllama.*.so .so); variant=${variant#libllama.}
    flags=(-O3 -std=c++17 -fPIC -fexceptions -DNAPI_VERSION=7 -DLLAMA_SHARED -DGGML_SHARED
      -I"$node_inc" -I"$napi_inc" -I"$src/include" -I"$src/ggml/include" -I"$src/common" -I"$src" -I"$src/src" -I"$src/vendor")
    if compgen -G "$native/llama-patches/*.diff" >/dev/null; then
      # llama.cpp's src/ has no backend conditionals: a CPU configuration of libllama is the same
      # code, renamed to the CUDA build's soname and pointed at its ggml (patchelf).
      log "building libllama.$variant.so (llama-patches/ changes src/)"
      command -v patchelf >/dev/null || { echo "build-engine: cuda-addon needs patchelf (apt-get install patchelf)" >&2; exit 2; }
      cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF \
        -DLLAMA_CURL=OFF -DGGML_CUDA=OFF >/dev/null
      cmake --build "$work/build" --target llama -j "$(nproc)" >&2
      cp "$work/build/bin/libllama.so" "$out/libllama.$variant.so"
      # two calls: patchelf 0.14 (Debian 12) given both options at once wrote the needed name as the soname
      patchelf --set-soname "libllama.$variant.so" "$out/libllama.$variant.so"
      # its ggml libraries by the CUDA build's names (this build's may carry a version: libggml.so.0)
      for need in $(readelf -d "$out/libllama.$variant.so" | sed -n 's/.*(NEEDED).*\[\(libggml[^]]*\)\]/\1/p'); do
        base=${need%%.so*}
        if [[ $base == libggml ]]; then target=libggml.$variant.so; else target=$base.so; fi
        [[ -f $rel/$target ]] || { echo "build-engine: libllama needs $need; the CUDA build has no $target" >&2; exit 1; }
        [[ $need == "$target" ]] || patchelf --replace-needed "$need" "$target" "$out/libllama.$variant.so"
      done
      readelf -d "$out/libllama.$variant.so" | grep -q "soname: \[libllama.$variant.so\]" ||
        { echo "build-engine: patchelf did not set libllama's soname" >&2; exit 1; }
    fi
    log "compiling the addon against $rel"
    objs=()
    for f in "$nlc"/addon/*.cpp "$nlc"/addon/globals/*.cpp; do
      o="$work/$(basename "$f").o"
      g++ "${flags[@]}" -c "$f" -o "$o" &
      objs+=("$o")
      while (( $(jobs -rp | wc -l) >= $(nproc) )); do wait -n; done
    done
    wait
    libs=()
    for l in "$rel"/lib*.so; do libs+=("-l:$(basename "$l")"); done
    g++ -shared -o "$out/llama-addon.node" "${objs[@]}" -L"$rel" "${libs[@]}" -Wl,-rpath,'$ORIGIN' -Wl,--allow-shlib-undefined
    log "wrote $out/llama-addon.node"
    ;;
  *)
    echo "usage: bash scripts/build-engine.sh cpu | cuda-addon <CUDA Release dir> <out dir>" >&2
    exit 2
    ;;
esac

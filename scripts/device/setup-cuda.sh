#!/usr/bin/env bash
# On the device, carrying .device/s3 (split-stage.sh) and, if made, .device/llama-server and .device/engine-cuda
# (made here after stage.sh, which empties .device/, by `bash scripts/build-llama-server.sh linked
# .data/cuda/Release .device/llama-server`; .data/cuda is ../shared/gpu/llama-cuda-sm90 unpacked):
# the CUDA sm_90 build as node-llama-cpp's lastBuild (as ../shared/gpu/setup-on-device.sh installs
# it), llama-server to /root/llama-server, and the 12b preset generated in the background to
# /root/models/12b.gguf (CPU and disk only, so it may overlap a training run; ~65 s).
set -euo pipefail
cp .device/s3/* /root/stage/
(cd /root/stage && sha256sum -c --quiet SHA256SUMS)
llama=/opt/kv/app/node_modules/node-llama-cpp/llama
folder=linux-x64-cuda-3w3fe5x4f6314532j1a4a5l234u5i5n4e6w4z4n
mkdir -p "$llama/localBuilds/$folder"
cat /root/stage/rel.part.* | xz -dc | tar -x -C "$llama/localBuilds/$folder"
touch "$llama/localBuilds/$folder/buildDone.status"
printf '{"folderName": "%s"}\n' "$folder" > "$llama/lastBuild.json"
echo "setup: CUDA build installed"
if [[ -d .device/llama-server ]]; then
  rm -rf /root/llama-server && cp -r .device/llama-server /root/llama-server
fi
# Our engine build's files for this CUDA build (`bash scripts/build-engine.sh cuda-addon
# .data/cuda/Release .device/engine-cuda` here: ~4 min on 2 cores, 6 MB), if carried; the rounds
# install them through KV_ENGINE_DIR (serve-round-start.sh).
if [[ -d .device/engine-cuda ]]; then
  rm -rf /root/engine-cuda && cp -r .device/engine-cuda /root/engine-cuda
fi
mkdir -p /root/models /root/results
# setsid: when a call returns, the device tool kills its whole session, background jobs included.
cd /opt/kv/app
setsid nohup bash -c 'KV_LLAMA=lastBuild /opt/kv/bin/node dist/cli/main.js synth-model --preset 12b --seed 0 \
  --out /root/models/12b.gguf > /root/results/synth.log 2>&1; echo "exit $?" > /root/results/synth.done' \
  > /dev/null 2>&1 < /dev/null &

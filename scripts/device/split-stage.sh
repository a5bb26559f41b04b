#!/usr/bin/env bash
# After `bash ../shared/gpu/stage.sh` (from the project root): its .device/a (~59 MiB) no longer fits
# a device call beside the working tree (~19 MB with the embedded model; a call carries 64 MiB in
# all), so this splits the two sets into three, one call each, within 30 s of one another:
#   .device/s1  node.xz + rel.part.00          bash scripts/device/setup-node.sh
#   .device/s2  app.tar.xz                     bash scripts/device/setup-app.sh
#   .device/s3  the other rel.part.* + sums    bash scripts/device/setup-cuda.sh
set -euo pipefail
[[ -f .device/a/app.tar.xz && -f .device/b/rel.part.00 ]] ||
  { echo "split-stage: run ../shared/gpu/stage.sh first" >&2; exit 2; }
rm -rf .device/s1 .device/s2 .device/s3
mkdir -p .device/s1 .device/s2 .device/s3
mv .device/a/node.xz .device/b/rel.part.00 .device/s1/
mv .device/a/app.tar.xz .device/s2/
mv .device/b/rel.part.* .device/b/SHA256SUMS .device/s3/
du -sm .device/s1 .device/s2 .device/s3

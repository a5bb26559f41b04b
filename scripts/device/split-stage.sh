#!/usr/bin/env bash
# After `bash ../shared/gpu/stage.sh` (from the project root): its .device/a (~59 MiB) no longer fits
# a device call beside the working tree (~26 MB with the embedded model; a call carries 64 MiB in
# all), so this splits the two sets into four, one call each, within 30 s of one another:
#   .device/s1   node.xz + rel.part.00          bash scripts/device/setup-node.sh
#   .device/s2a  app.tar.xz's first 30 MB       bash scripts/device/setup-app.sh 1
#   .device/s2b  the rest of it                 bash scripts/device/setup-app.sh 2
#   .device/s3   the other rel.part.* + sums    bash scripts/device/setup-cuda.sh
# It says which set, beside the working tree, is over what a call carries.
set -euo pipefail
[[ -f .device/a/app.tar.xz && -f .device/b/rel.part.00 ]] ||
  { echo "split-stage: run ../shared/gpu/stage.sh first" >&2; exit 2; }
rm -rf .device/s1 .device/s2 .device/s2a .device/s2b .device/s3
mkdir -p .device/s1 .device/s2a .device/s2b .device/s3
mv .device/a/node.xz .device/b/rel.part.00 .device/s1/
split -b 30000000 -d .device/a/app.tar.xz .device/s2a/app.part.
# The first part stays in s2a, the rest (one, while app.tar.xz is under 60 MB) go to s2b.
find .device/s2a -name 'app.part.*' ! -name app.part.00 -exec mv {} .device/s2b/ \;
rm .device/a/app.tar.xz
mv .device/b/rel.part.* .device/b/SHA256SUMS .device/s3/
# The working tree travels with each call: tracked files and untracked ones git does not ignore.
tree=$(git ls-files -co --exclude-standard -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
limit=$((64 * 1024 * 1024))
for set in s1 s2a s2b "s3 .device/llama-server .device/engine-cuda"; do
  read -r first rest <<<"$set"
  bytes=$(du -cb ".device/$first" $rest 2>/dev/null | tail -1 | cut -f1)
  echo "split-stage: .device/$first${rest:+ + $rest}: $((bytes / 1000000)) MB, with the tree $(((bytes + tree) / 1000000)) MB"
  ((bytes + tree < limit)) || echo "split-stage: .device/$first is over the 64 MiB a call carries" >&2
done

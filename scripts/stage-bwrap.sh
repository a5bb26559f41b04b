#!/usr/bin/env bash
# Stages Debian's bubblewrap for a machine that lacks it and has no network (the GPU device machine):
# writes bwrap and the libraries it links (libcap, libselinux, libpcre2) into <out dir>, which
# scripts/gpu-round.sh installs when BWRAP_DIR=<that dir> is set and the machine has no bwrap.
#   bash scripts/stage-bwrap.sh .device/c
set -euo pipefail
out=${1:?output dir}
mkdir -p "$out/bwlib"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download bubblewrap libcap2 libselinux1 libpcre2-8-0 >/dev/null)
for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$work/root"; done
install -m 0755 "$work/root/usr/bin/bwrap" "$out/bwrap"
for lib in libcap.so.2 libselinux.so.1 libpcre2-8.so.0; do
  cp -L "$(find "$work/root" -name "$lib" | head -n 1)" "$out/bwlib/$lib"
done
echo "stage-bwrap: bwrap and $(ls "$out/bwlib" | wc -l) libraries in $out" >&2

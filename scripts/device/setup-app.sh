#!/usr/bin/env bash
# On the device, carrying .device/s2 (split-stage.sh): the staged app to /opt/kv/app.
set -euo pipefail
mkdir -p /opt/kv/app
xz -dc .device/s2/app.tar.xz | tar -x -C /opt/kv/app
echo "setup: app in /opt/kv/app"

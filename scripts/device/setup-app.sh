#!/usr/bin/env bash
# On the device: the staged app (split-stage.sh) to /opt/kv/app, in two calls, since app.tar.xz
# (~43 MB) beside the working tree (~26 MB) is over the 64 MiB a call carries:
#   carrying .device/s2a: bash scripts/device/setup-app.sh 1   (keeps its part in /root/stage)
#   carrying .device/s2b: bash scripts/device/setup-app.sh 2   (joins the parts and unpacks)
# By argument, not by which folder is there: the device keeps ignored folders between calls.
set -euo pipefail
case ${1:-} in
  1)
    # Only the app's parts: setup-node.sh keeps rel.part.00 here for setup-cuda.sh.
    mkdir -p /root/stage && rm -f /root/stage/app.part.*
    cp .device/s2a/app.part.* /root/stage/
    echo "setup: first part of the app kept; next, carrying .device/s2b: setup-app.sh 2" ;;
  2)
    mkdir -p /opt/kv/app
    cat /root/stage/app.part.* .device/s2b/app.part.* | xz -dc | tar -x -C /opt/kv/app
    echo "setup: app in /opt/kv/app" ;;
  *) echo "usage: setup-app.sh 1 (carrying .device/s2a) | 2 (carrying .device/s2b)" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# On the device: waits up to $1 s (default 500) for serve-round-start.sh's rounds, then returns what
# they wrote so far as r38.tgz in $OUT (finished or not: call it again to wait longer).
limit=${1:-500}
for ((i = 0; i < limit; i += 5)); do
  [[ -f /root/results/r38.done ]] && break
  sleep 5
done
cat /root/results/r38.done 2>/dev/null
tar -C /root/results/r38 -czf "$OUT"/r38.tgz .
ls -la /root/results/r38

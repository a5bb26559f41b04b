#!/usr/bin/env python3
"""Prints the functions with the most self time in a V8 .cpuprofile (node --cpu-prof).

usage: python3 scripts/profile-top.py FILE.cpuprofile [N]
Self time per function (name, file, line), in ms and as a share of the profile; idle, GC and
"(program)" are V8's own entries.
"""
import collections
import json
import sys

profile = json.load(open(sys.argv[1]))
top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
nodes = {n["id"]: n for n in profile["nodes"]}
self_us = collections.Counter()
for sample, delta in zip(profile["samples"], profile["timeDeltas"]):
    frame = nodes[sample]["callFrame"]
    name = frame["functionName"] or "(anonymous)"
    self_us[f"{name} {frame['url'].split('/')[-1]}:{frame['lineNumber'] + 1}"] += delta
total = sum(self_us.values()) or 1
print(f"profile: {total / 1000:.1f} ms")
for key, us in self_us.most_common(top):
    print(f"{us / 1000:9.1f} ms {100 * us / total:5.1f}%  {key}")

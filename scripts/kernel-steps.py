"""Sums the GPU time of a hot step's kernels from an Nsight Compute CSV (`ncu --csv --print-units
base --metrics gpu__time_duration.sum`) of a hot-step loop: every step runs the same kernels, so the
last steps are the kernel sequence's repeating suffix. Prints the kernel count a step, the kernel
time of the last three steps, and the last step's kernels grouped by name. Used by
scripts/gpu-round.sh kernel-trace."""
import collections
import csv
import sys

rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head, rows = rows[0], rows[1:]
ix = {k: i for i, k in enumerate(head)}
kernels = collections.OrderedDict()
for r in rows:
    if r[ix["Metric Name"]] == "gpu__time_duration.sum":
        kernels[int(r[ix["ID"]])] = (r[ix["Kernel Name"]][:90], float(r[ix["Metric Value"]].replace(",", "")))
seq = list(kernels.values())
names = [n for n, _ in seq]
print("kernels profiled:", len(seq))
period = next(
    (p for p in range(20, len(names) // 3) if names[-p:] == names[-2 * p : -p] == names[-3 * p : -2 * p]), None
)
print("kernels per hot step:", period)
if period is None:
    sys.exit("no repeating step found")
for k in range(1, 4):
    part = seq[len(seq) - k * period : len(seq) - (k - 1) * period]
    print(f"step -{k}: kernel time {sum(d for _, d in part) / 1e6:.3f} ms")
by_name = collections.defaultdict(lambda: [0, 0.0])
for n, d in seq[-period:]:
    by_name[n][0] += 1
    by_name[n][1] += d
for n, (count, d) in sorted(by_name.items(), key=lambda x: -x[1][1])[:15]:
    print(f"{d / 1e6:8.3f} ms  {count:4d}x  {n}")

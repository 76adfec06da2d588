"""Summarise `ncu --csv --metrics gpu__time_duration.sum` output (benchmarks/gpu_kernel_times.py):
per kernel name, count and total microseconds, largest first, and the sum.
Usage: python3 benchmarks/kernel_times_table.py kernels.csv"""
import collections
import csv
import sys

rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
head, body = rows[0], rows[1:]
ik, im, iv = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
iu = head.index("Metric Unit")
tot = collections.defaultdict(float)
cnt = collections.Counter()
for r in body:
    if r[im] != "gpu__time_duration.sum":
        continue
    v = float(r[iv].replace(",", ""))
    v *= {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}[r[iu]]
    name = r[ik].split("(")[0][:60]
    tot[name] += v
    cnt[name] += 1
print("| kernel | launches | total µs |")
print("|---|---|---|")
for name, v in sorted(tot.items(), key=lambda t: -t[1]):
    print(f"| {name} | {cnt[name]} | {v:.1f} |")
print(f"| **sum** | {sum(cnt.values())} | {sum(tot.values()):.1f} |")

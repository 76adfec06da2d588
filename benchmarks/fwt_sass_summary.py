"""Opcode histogram of the fwt kernels from an Nsight Compute source-page CSV (SASS).

    ncu --clock-control none --section SourceCounters -k regex:fwht_rows -o rep \\
        python3 benchmarks/fwt_ncu_shipped.py 64 "float16:12,float32:15"
    ncu -i rep.ncu-rep --page source --print-source sass --csv > sass.csv
    python3 benchmarks/fwt_sass_summary.py sass.csv

Per kernel: executed thread instructions per opcode (share of the total) and the share of the
warp-stall samples on that opcode (session 6: the register moves at the joins of run-time-L
branches and of the mma fragments, and the 64-bit address/bounds arithmetic).
"""
import collections
import csv
import re
import sys


def summary(path, top=24):
    kern, hdr, data = None, None, {}
    for r in csv.reader(open(path)):
        if r and r[0] == "Kernel Name":
            kern, hdr = r[1], None
            data.setdefault(kern, [])
        elif r and r[0] == "Address":
            hdr = r
        elif hdr and kern and len(r) > 5:
            data[kern].append(dict(zip(hdr, r)))
    for k, ins in data.items():
        ops, stalls = collections.Counter(), collections.Counter()
        for d in ins:
            m = re.match(r"(@!?U?P\w+\s+)?([A-Z0-9_]+)", d["Source"].strip())
            op = m.group(2) if m else d["Source"].strip()
            ops[op] += int(d["Thread Instructions Executed"].replace(",", "") or 0)
            stalls[op] += int(d["Warp Stall Sampling (All Samples)"].replace(",", "") or 0)
        tot, stot = sum(ops.values()), max(1, sum(stalls.values()))
        print(f"== {k}\n   thread instructions {tot}")
        for op, n in ops.most_common(top):
            print(f"   {100 * n / tot:5.1f} %  {op:10s} stall samples {100 * stalls[op] / stot:5.1f} %")


if __name__ == "__main__":
    summary(sys.argv[1])

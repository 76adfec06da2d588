"""Print the markdown tables of benchmarks/results_fwt.md from a fwt_bench.json (and the
sweep log of benchmarks/fwt_device.py for the plain-vs-mma comparison)."""
import json
import re
import sys
from collections import defaultdict


def main(bench_json, log=None):
    d = json.load(open(bench_json))
    c = d["copy"]
    print(f"Copy baseline: cudaMemcpyAsync D2D {c['memcpy'] / 1e9:.0f} GB/s, CuPy copy kernel "
          f"{c['copy_kernel'] / 1e9:.0f} GB/s ({d['mbytes']} MiB, read+write bytes / time).\n")
    print("| dtype | n | rows | passes | time (µs) | GB/s | % of copy | max rel err | err / bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in d["results"]:
        err = f"{r['max_rel_err']:.1e}"
        eb = "—" if r["dtype"] == "float64" else f"{r['err_over_bound']:.3f}"
        print(f"| {r['dtype']} | 2^{r['L']} | {r['rows']} | {r['passes']} | {r['time_s'] * 1e6:.1f} | "
              f"{r['bw'] / 1e9:.0f} | {r['pct_memcpy']:.1f} | {err} | {eb} |")
    if log:
        # (WM=, MINB=, XS= appear in the logs of runs 4 and later)
        pat = re.compile(r"tune float16 L=\s*(\d+) TB=(\d+) CB=(\d+) CSB=(\d+)(?: WM=\d+ MINB=\d+)?(?: XS=\d+)? "
                         r"(plain|mma)\s+exact=(\w+)\s+([\d.]+) us\s+(\d+) GB/s")
        best = defaultdict(dict)
        for line in open(log):
            m = pat.search(line)
            if m and m.group(6) == "True":
                L, var, gbs = int(m.group(1)), m.group(5), int(m.group(8))
                best[L][var] = max(best[L].get(var, 0), gbs)
        print("\n| float16 n | best plain (GB/s) | best mma (GB/s) | mma / plain |")
        print("|---|---|---|---|")
        for L in sorted(best):
            p, q = best[L].get("plain"), best[L].get("mma")
            if p and q:
                print(f"| 2^{L} | {p} | {q} | {q / p:.3f} |")


if __name__ == "__main__":
    main(*sys.argv[1:])

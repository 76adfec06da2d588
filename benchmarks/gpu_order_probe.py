"""Probe: does a whole fp64 call at small n depend on what ran before it? (issue #8, NOTES GPU v4)

For n = 4096 (default), times the fp64 ``ozgemm.matmul`` call (CUDA events around the call,
synchronised after each, as ``ozgemm bench``) when each call is preceded by: nothing, a
DGEMM, an SGEMM, an fp32 ozgemm call, or a 2 GiB device copy; reports medians, the host
time of the call (perf_counter around the call, which includes the planner's one host read)
and the memory pool's total bytes (growth = new cudaMalloc).
Usage (device): python3 benchmarks/gpu_order_probe.py [--n 4096] [--reps 20]
"""
import argparse
import os
import statistics
import sys
import time

import cupy as cp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ozgemm  # noqa: E402
from ozgemm.kernels.cuda_bench import _inputs  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    n = args.n
    a, b = _inputs(n, 0.5, 0, cp.float64)
    a32, b32 = a.astype(cp.float32), b.astype(cp.float32)
    big = cp.empty(1 << 28, dtype=cp.float64)
    pre = {"none": None, "dgemm": lambda: cp.matmul(a, b), "sgemm": lambda: cp.matmul(a32, b32),
           "fp32 call": lambda: ozgemm.matmul(a32, b32, contract="fp32"), "2 GiB copy": lambda: big.copy()}
    fp64 = lambda: ozgemm.matmul(a, b, contract="fp64")  # noqa: E731
    for f in [fp64] + [f for f in pre.values() if f]:
        f()
    cp.cuda.Device().synchronize()
    pool = cp.get_default_memory_pool()
    res = {k: ([], []) for k in pre}
    grow = {k: 0 for k in pre}
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(args.reps):
        for k, f in pre.items():
            if f:
                f()
                cp.cuda.Device().synchronize()
            tb = pool.total_bytes()
            e0.record()
            t0 = time.perf_counter()
            fp64()
            t1 = time.perf_counter()
            e1.record()
            e1.synchronize()
            grow[k] += pool.total_bytes() - tb
            res[k][0].append(cp.cuda.get_elapsed_time(e0, e1))
            res[k][1].append((t1 - t0) * 1e3)
    print(f"| fp64 call at n = {n} preceded by | GPU ms (median) | host ms in the call (median) | pool growth MiB |")
    print("|---|---|---|---|")
    for k, (g, h) in res.items():
        print(f"| {k} | {statistics.median(g):.3f} | {statistics.median(h):.3f} | {grow[k] / 2**20:.0f} |")


if __name__ == "__main__":
    main()

"""Host-side cost of one whole fp64 ``ozgemm.matmul`` call on the GPU (issue #8, NOTES GPU v4).

Prints the host time per call (perf_counter around the call, which includes the planner's one
host read; median of 30, no profiler), then cProfile of 30 calls (each followed by a device
synchronize) sorted by internal and by cumulative time.
Usage (device): python3 benchmarks/gpu_host_profile.py   (n = 4096, phi = 0.5, seed 0)
"""
import cProfile
import io
import os
import pstats
import statistics
import sys
import time

import cupy as cp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ozgemm  # noqa: E402
from ozgemm.kernels.cuda_bench import _inputs  # noqa: E402

a, b = _inputs(4096, 0.5, 0, cp.float64)


def call():
    return ozgemm.matmul(a, b, contract="fp64")


for _ in range(5):
    call()
cp.cuda.Device().synchronize()
ts = []
for _ in range(30):
    t0 = time.perf_counter()
    call()
    ts.append((time.perf_counter() - t0) * 1e3)
    cp.cuda.Device().synchronize()
print("host ms per call (median of 30):", statistics.median(ts))
pr = cProfile.Profile()
pr.enable()
for _ in range(30):
    call()
    cp.cuda.Device().synchronize()
pr.disable()
for key, count, chars in (("tottime", 45, 9000), ("cumulative", 40, 7000)):
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats(key).print_stats(count)
    print(s.getvalue()[:chars])

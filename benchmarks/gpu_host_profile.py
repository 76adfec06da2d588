"""Host-side cost of one whole fp64 ``ozgemm.matmul`` call on the GPU (issue #8, NOTES GPU v4).

Prints the host time per call (perf_counter around the call, which includes the planner's one
host read; median of 30, no profiler), then cProfile of 30 calls (each followed by a device
synchronize) sorted by internal and by cumulative time.
Usage (device): python3 benchmarks/gpu_host_profile.py   (n = 4096, phi = 0.5, seed 0)
"""
import cProfile, pstats, io, time, sys
import cupy as cp
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), ".."))
import ozgemm
n = 4096
rs = cp.random.RandomState(0)
a = (rs.random_sample((n, n)) - 0.5) * cp.exp(0.5 * rs.standard_normal((n, n)))
b = (rs.random_sample((n, n)) - 0.5) * cp.exp(0.5 * rs.standard_normal((n, n)))
f = lambda: ozgemm.matmul(a, b, contract="fp64")
for _ in range(5): f()
cp.cuda.Device().synchronize()
# host time without profiler
ts = []
for _ in range(30):
    t0 = time.perf_counter(); f(); t1 = time.perf_counter(); cp.cuda.Device().synchronize(); ts.append((t1 - t0) * 1e3)
ts.sort(); print("host ms per call (median of 30):", ts[15])
pr = cProfile.Profile()
pr.enable()
for _ in range(30):
    f(); cp.cuda.Device().synchronize()
pr.disable()
s = io.StringIO()
ps = pstats.Stats(pr, stream=s).sort_stats("tottime"); ps.print_stats(45)
print(s.getvalue()[:9000])
s = io.StringIO()
ps = pstats.Stats(pr, stream=s).sort_stats("cumulative"); ps.print_stats(40)
print(s.getvalue()[:7000])

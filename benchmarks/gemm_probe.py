"""Probe: INT8 TN GEMM throughput on the device, several ways (reported in NOTES.md)."""
import time

import cupy as cp
import numpy as np

from ozgemm.kernels.cuda import CudaEngine

eng = CudaEngine()
n = 16384
N = 4


def t(fn, reps=5):
    fn()
    cp.cuda.Device().synchronize()
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    e0.record()
    for _ in range(reps):
        fn()
    e1.record()
    e1.synchronize()
    return cp.cuda.get_elapsed_time(e0, e1) / 1e3 / reps


a = cp.random.randint(-128, 128, size=(N, n, n), dtype=cp.int8)
b = cp.random.randint(-128, 128, size=(N, n, n), dtype=cp.int8)
c = cp.empty((N, n, n), dtype=cp.int32)
s = t(lambda: eng._gemm_batched_i32(a, b, c))
print(f"strided-batched N={N}: {2 * N * n**3 / s / 1e12:.0f} TOPS")
c1 = cp.empty((1, n, n), dtype=cp.int32)
s = t(lambda: [eng._gemm_batched_i32(a[q:q + 1], b[q:q + 1], c1) for q in range(N)])
print(f"one call per modulus: {2 * N * n**3 / s / 1e12:.0f} TOPS")
try:
    import torch

    ta = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda")
    tb = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda")
    torch.cuda.synchronize()
    f = lambda: torch._int_mm(ta, tb.t())
    f(); torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(5):
        f()
    torch.cuda.synchronize()
    s = (time.perf_counter() - t0) / 5
    print(f"torch._int_mm TN: {2 * n**3 / s / 1e12:.0f} TOPS")
except Exception as exc:
    print("torch probe failed:", exc)
x = cp.random.standard_normal((n, n))
y = cp.random.standard_normal((n, n))
s = t(lambda: cp.matmul(x, y))
print(f"DGEMM: {2 * n**3 / s / 1e12:.1f} TFLOPS")
m8 = 8192
s = t(lambda: eng._gemm_batched_i32(a[:, :m8, :m8].copy(), b[:, :m8, :m8].copy(), c[:, :m8, :m8].copy()), 3)

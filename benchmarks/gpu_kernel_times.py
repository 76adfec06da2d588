"""Per-kernel GPU times of one warm ozgemm.matmul call, for Nsight Compute (NOTES.md GPU v8):
the product is run once to compile and plan (and fill the speculation cache), then once more
between cudaProfilerStart/Stop, so that

  ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum --csv \\
      python3 benchmarks/gpu_kernel_times.py 8192 fp64 > kernels.csv

lists exactly the kernels (and cuBLAS GEMMs) of the second call. ncu serialises kernels, so the
times are per kernel without overlap (a breakdown, not the whole-call time).
Input: the bench's (rand - 0.5) exp(0.5 randn), cupy RandomState(0)."""
import os
import sys

import cupy as cp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ozgemm  # noqa: E402
from ozgemm.kernels.cuda_bench import _inputs  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
contract = sys.argv[2] if len(sys.argv) > 2 else "fp64"
a, b = _inputs(n, 0.5, 0, cp.float32 if contract.startswith("fp32") else cp.float64)
ozgemm.matmul(a, b, contract=contract)
cp.cuda.Device().synchronize()
cp.cuda.profiler.start()
ozgemm.matmul(a, b, contract=contract)
cp.cuda.Device().synchronize()
cp.cuda.profiler.stop()

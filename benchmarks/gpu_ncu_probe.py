"""One fp64 and one fp32 product per size, for `ncu` (hardware counters of the planner, residue and
reconstruction kernels): run under ncu with a kernel-name filter, e.g.
ncu --clock-control none --section SpeedOfLight --section Occupancy -k regex:"row_stats|plan_scalars" \
    python3 benchmarks/gpu_ncu_probe.py 8192 16384
Input: (rand - 0.5) exp(0.5 randn), cupy RandomState(0)."""
import os
import sys

import cupy as cp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ozgemm  # noqa: E402

for n in [int(v) for v in sys.argv[1:]] or [8192]:
    rs = cp.random.RandomState(0)
    a = (rs.random_sample((n, n)) - 0.5) * cp.exp(0.5 * rs.standard_normal((n, n)))
    b = (rs.random_sample((n, n)) - 0.5) * cp.exp(0.5 * rs.standard_normal((n, n)))
    ozgemm.matmul(a, b, contract="fp64")
    ozgemm.matmul(a.astype(cp.float32), b.astype(cp.float32), contract="fp32")
    cp.cuda.Device().synchronize()

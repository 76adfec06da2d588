"""Launch each listed row-kernel configuration of ozgemm.fwt once, for Nsight Compute
(session 4: where the time of the float16 2**12-2**14 rows goes). Run under ncu, e.g.

    ncu --clock-control none --section SpeedOfLight --section Occupancy \\
        --section MemoryWorkloadAnalysis --section WarpStateStats --section ComputeWorkloadAnalysis \\
        --section LaunchStats -k regex:fwht_rows python3 benchmarks/fwt_ncu.py [MiB]

Input: integer-valued data in [-7, 7] (rows x n = MiB per array, default 128 MiB, > L2),
out of place, one launch per configuration (the kernel names carry the configuration:
fwht_rows<T, A, LOGV, TB, CB, MMA, WM, MINB, XS, LC>); each result is checked exactly.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import cupy as cp  # noqa: E402

from ozgemm.fwt import _cuda, fwht  # noqa: E402

# (dtype, L, (TB, CB, CSB, WM, MINB, XS), mma): the committed entries (XS = 1) and the
# lane-exchange candidates (XS = K >= 2) of session 4
CASES = [
    ("float16", 12, (7, 2, 0, False, 0, 1), True),
    ("float16", 12, (7, 2, 0, False, 0, 5), True),
    ("float16", 12, (7, 2, 0, False, 0, 4), True),
    ("float16", 13, (7, 3, 0, False, 0, 1), True),
    ("float16", 13, (7, 3, 0, False, 0, 5), True),
    ("float16", 13, (8, 3, 0, False, 0, 6), True),
    ("float16", 14, (8, 3, 0, False, 2, 1), True),
    ("float16", 14, (8, 3, 0, False, 2, 6), True),
    ("float16", 14, (8, 3, 0, False, 2, 5), True),
    ("float32", 13, (7, 4, 0, False, 2, 1), False),
]

mib = int(sys.argv[1]) if len(sys.argv) > 1 else 128
for name in sorted({c[0] for c in CASES}):  # one NVRTC module per dtype
    _cuda.compile_kernels(np.dtype(name), [_cuda._row_name(np.dtype(d), L, mma=m, cfg=c)
                                           for d, L, c, m in CASES if d == name])
for name, L, cfg, mma in CASES:
    dt = np.dtype(name)
    n = 1 << L
    rows = (mib << 20) // (n * dt.itemsize)
    k = cp.random.default_rng(L).integers(-7, 8, size=(rows, n), dtype=cp.int64)
    x = k.astype(dt)
    y = cp.empty_like(x)
    _cuda.transform_contiguous(cp, x, L, 1.0, out=y, variant="mma" if mma else "plain", cfg=cfg)
    cp.cuda.Device().synchronize()
    r = min(rows, 16)
    ok = np.array_equal(cp.asnumpy(y[:r]), fwht(cp.asnumpy(k[:r])).astype(dt))
    print(f"{name} 2^{L} cfg={cfg} mma={mma}: {_cuda._row_name(dt, L, mma=mma, cfg=cfg)} exact={ok}", flush=True)
    del k, x, y

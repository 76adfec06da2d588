"""Launch the shipped fwt kernels once per (dtype, row length) for Nsight Compute's
instruction-level sections (issue #6: the float16 rows are issue/ALU-bound, session 4).

    ncu --clock-control none --section SpeedOfLight --section InstructionStats \\
        --section WarpStateStats --section SourceCounters --print-details all \\
        -k regex:fwht python3 benchmarks/fwt_ncu_shipped.py [MiB [dtype:L,...]]

Input: integer-valued data in [-7, 7], rows x 2**L = MiB per array (default 64 MiB), the
public ``fwht(x, norm="ortho")`` (whatever kernel the shipped plan picks), one call per case;
each result is checked against a float64 transform of the same data.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import cupy as cp  # noqa: E402

from ozgemm.fwt import fwht  # noqa: E402

CASES = [("float16", 12), ("float16", 13), ("float16", 14), ("float16", 15), ("float32", 15), ("float64", 14)]
mib = int(sys.argv[1]) if len(sys.argv) > 1 else 64
if len(sys.argv) > 2:  # e.g. "float32:15,float64:14": only these cases
    CASES = [(c.split(":")[0], int(c.split(":")[1])) for c in sys.argv[2].split(",")]
for name, L in CASES:
    dt = cp.dtype(name)
    rows = (mib << 20) // (dt.itemsize << L)
    x = cp.random.RandomState(L).randint(-7, 8, size=(rows, 1 << L)).astype(dt)
    y = fwht(x, norm="ortho")
    want = fwht(x.astype(cp.float64), norm="ortho")
    err = float(cp.max(cp.abs(y.astype(cp.float64) - want)))
    print(f"{name} 2^{L}: {rows} rows, max abs err vs float64 {err:.3g}", flush=True)

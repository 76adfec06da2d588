"""Same-process A/B of one dedicated row kernel built from different sources or options
(session 14: fwht_rows_h15 as shipped in session 13 against this session's versions).

    PYTHONPATH=. python3 benchmarks/fwt_src_ab.py float16 "path.cu" "ozgemm/fwt/fwht.cu -DOPT=1" ...

Each build: "source path [nvcc options...]"; the kernel is the ROW_DEDICATED entry of (dtype,
2**15), launched as the public path launches it (row_launch's grid and shared memory; the ticket
counter as a sixth argument where that source's kernel takes one). Outputs compared bit for bit
with the first build's; then 5 interleaved rounds of 20 CUDA-event-timed calls per build and
the copy (256 MiB per array, uniform data in [-0.5, 0.5), "ortho" scale).
"""
import re
import sys
from pathlib import Path

import cupy as cp
import numpy as np

from fwt_h15_probe import interleaved_table  # noqa: E402  (benchmarks/ on sys.path)
from ozgemm.fwt import _cuda


def main(dname, *builds):
    dt = np.dtype(dname)
    L = 15
    name, smem, _ = _cuda.ROW_DEDICATED[(dt.name, L)][:3]
    rows = (256 << 20) // ((1 << L) * dt.itemsize)
    x = (cp.random.default_rng(0).random((rows, 1 << L), dtype=cp.float32) - 0.5).astype(dt)
    name_l, _, grid, threads = _cuda.row_launch(x, L, dt == np.float16)
    assert name_l == name
    fns, outs = {}, []
    for b in builds:
        path, *opts = b.split()
        src = Path(path).read_text()
        mod = cp.RawModule(code=src, options=("-std=c++17",) + tuple(opts), name_expressions=[name])
        mod.compile()
        k = _cuda.configure_kernel(mod.get_function(name), name, smem)
        base = name.split("<")[0]
        takes = re.search(base + r"\([^)]*tickets", src) is not None  # this source's kernel takes the counter
        args = _cuda.row_args(name, x, None, L, (1 << L) ** -0.5)[:5] + ((_cuda.row_tickets(),) if takes else ())
        y = cp.empty_like(x)
        full = (x, y) + args[2:]
        k((grid,), (threads,), full, shared_mem=smem)
        outs.append(y)
        fns[b] = (lambda k=k, full=full: k((grid,), (threads,), full, shared_mem=smem))
    same = [bool(cp.array_equal(outs[0].view(cp.uint8), o.view(cp.uint8))) for o in outs]
    print(f"{dname} 2^15 {name} grid {grid}; outputs identical to the first build: {same}")
    interleaved_table(fns, x.nbytes, 5, f"{dname} 2^15 builds")


if __name__ == "__main__":
    main(*sys.argv[1:])

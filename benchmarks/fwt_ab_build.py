"""Same-process A/B of builds of ozgemm/fwt/fwht.cu that differ only in compile options, on
the committed table's configurations (session 7: the L2 prefetch qualifier of the pipelined
kernels' cp.async copies, -DOZ_FWT_CP_L2=128/256).

    PYTHONPATH=. python3 benchmarks/fwt_ab_build.py "float32:15,float64:14" "" "-DOZ_FWT_CP_L2=256"

Per (dtype, L): the kernel and launch of the public plan (its one row pass), each build's
output compared bit for bit with the first build's, then ROUNDS interleaved rounds of REPS
CUDA-event-timed calls per build (median per round, median of rounds), 256 MiB per array,
GB/s = 2 x bytes / time and the same run's cudaMemcpyAsync copy.
"""
import statistics
import sys

import cupy as cp
import numpy as np

from ozgemm.fwt import _cuda
from ozgemm.fwt.bench import _time

ROUNDS, REPS = 5, 20


def _build(name, opts):
    mod = cp.RawModule(code=_cuda._SRC.read_text(), options=("-std=c++17",) + tuple(opts), name_expressions=[name])
    mod.compile()
    return mod.get_function(name)


def main(spec, *builds):
    builds = builds or ("",)
    n_bytes = 256 << 20
    a = cp.empty(n_bytes, dtype=cp.uint8)
    b = cp.empty_like(a)
    t_copy = _time(lambda: b.data.copy_from_device_async(a.data, a.nbytes), REPS)
    copy_gbs = 2 * n_bytes / t_copy / 1e9
    print(f"copy {copy_gbs:.0f} GB/s; builds: {[bld or '(default)' for bld in builds]}")
    for item in spec.split(","):
        dname, L = item.split(":")
        L = int(L)
        dt = np.dtype(dname)
        assert _cuda.plan(L, dt) == [("rows", L)], "one row pass only"
        rows = n_bytes // ((1 << L) * dt.itemsize)
        x = (cp.random.default_rng(0).random((rows, 1 << L), dtype=cp.float32) - 0.5).astype(dt)
        # the public plan's kernel, shared memory and grid (the table's configuration)
        name, smem, grid, threads = _cuda.row_launch(x, L, _cuda.auto_mma(dt, L))
        ks = [_cuda.configure_kernel(_build(name, bld.split()), name, smem) for bld in builds]
        ys = [cp.empty_like(x) for _ in ks]
        args = lambda y: _cuda.row_args(name, x, y, L, (1 << L) ** -0.5)  # noqa: E731
        for k, y in zip(ks, ys):
            k((grid,), (threads,), args(y), shared_mem=smem)
        same = [bool(cp.array_equal(ys[0].view(cp.uint8), y.view(cp.uint8))) for y in ys]
        meds = [[] for _ in ks]
        for _ in range(ROUNDS):
            for i, (k, y) in enumerate(zip(ks, ys)):
                meds[i].append(_time(lambda: k((grid,), (threads,), args(y), shared_mem=smem), REPS))
        row = []
        for i, bld in enumerate(builds):
            t = statistics.median(meds[i])
            gbs = 2 * x.nbytes / t / 1e9
            row.append(f"{bld or 'default'}: {t * 1e6:.1f} us {gbs:.0f} GB/s {100 * gbs / copy_gbs:.1f} % "
                       f"(rounds {min(meds[i]) * 1e6:.1f}-{max(meds[i]) * 1e6:.1f} us) same={same[i]}")
        print(f"{dname} 2^{L} {name} grid {grid}:\n  " + "\n  ".join(row), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])

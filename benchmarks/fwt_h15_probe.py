"""Probe (session 13): the dedicated binary16 kernel ``fwht_rows_h15`` (fwht.cu) against the
configurable kernel of ROW_TUNED's float16 2**15 entry ("shipped": the public path before the
dedicated kernel), in one process on the device. (Session 13's device calls 3-5 also ran
variants since removed: the next row loaded into registers instead of staged, 67.7 % of copy;
row-parity layouts without the first barrier, 80.5 %, and not deterministic across grids.)

    PYTHONPATH=. python3 benchmarks/fwt_h15_probe.py [MiB] [rounds]

Checks first (each prints ok/FAIL): integer-valued data bit-identical to the shipped kernel
(both exact there), random data: max relative error (max |y - ref| / max |ref| per row, ref the
float64 transform of the same float16 inputs) of both kernels and of the new one with an
"ortho" scale; in place; a grid of 7 CTAs (every CTA loops). Then ROUNDS interleaved rounds of
20 CUDA-event-timed calls each of: cudaMemcpyAsync copy of the same bytes, the shipped
``transform_contiguous`` and the new kernel; median per round, median of rounds; GB/s = read
+ written bytes / time.
"""
import statistics
import sys

import cupy as cp
import numpy as np

from ozgemm.fwt import _cuda
from ozgemm.fwt.bench import _time

VARIANTS = {"h15": ("fwht_rows_h15<1>", _cuda.ROW_DEDICATED[("float16", 15)][1])}
GRIDS = (128, 124)


def kernels():
    mod = cp.RawModule(code=_cuda._SRC.read_text(), options=("-std=c++17",),
                       name_expressions=[n for n, _ in VARIANTS.values()])
    mod.compile()
    out = {}
    for key, (name, smem) in VARIANTS.items():
        k = mod.get_function(name)
        k.max_dynamic_shared_size_bytes = smem
        k.preferred_shared_memory_carveout = 100
        out[key] = (k, smem)
    return out


def launch(ks, x, y, scale=1.0, grid=None):
    k, smem = ks
    nsm = cp.cuda.Device().attributes["MultiProcessorCount"]
    rows = x.size >> 15
    g = min(rows, nsm if grid is None else grid)
    k((g,), (512,), _cuda.row_args("fwht_rows_h15<1>", x, y, 15, scale), shared_mem=smem)


def shipped(x, y, scale=1.0):
    """the configurable kernel of ROW_TUNED's float16 2**15 entry (the public path before
    ROW_DEDICATED), mma front end"""
    cfg = _cuda.tuned_cfg(_cuda.ROW_TUNED[("float16", 15)])
    return _cuda.transform_contiguous(cp, x, 15, scale, out=y, variant="mma", cfg=cfg)


def relerr(y, ref):
    d = cp.abs(y.astype(cp.float64) - ref).max(axis=-1)
    return float((d / cp.abs(ref).max(axis=-1)).max())


def ref64(x):
    r = x.astype(cp.float64).reshape(-1, 1 << 15)
    h = 1 << 14
    while h >= 1:
        r = r.reshape(-1, (1 << 15) // (2 * h), 2, h)
        a, b = r[:, :, 0, :], r[:, :, 1, :]
        r = cp.stack([a + b, a - b], axis=2)
        h //= 2
    return r.reshape(-1, 1 << 15)


def main(mib=256, rounds=5):
    ok = True
    for key, ks in kernels().items():
        print(f"== {key} ({VARIANTS[key][0]}, regs {ks[0].attributes['num_regs']})")
        ok &= check(ks, mib)
    timing(mib, rounds)
    print("CHECKS", "ok" if ok else "FAIL")


def check(k, mib):
    n = (mib << 20) // 2
    rows = n >> 15
    rs = cp.random.RandomState(1)
    ok = True
    # exact: integer data with |row sum| <= 2048 (every partial sum exact in binary16 output)
    xi = (rs.randint(-1, 2, size=(rows, 1 << 15)) * (rs.rand(rows, 1 << 15) < 0.05)).astype(cp.float16)
    y_new, y_old = cp.empty_like(xi), cp.empty_like(xi)
    launch(k, xi, y_new)
    shipped(xi, y_old)
    same = bool((y_new.view(cp.uint16) == y_old.view(cp.uint16)).all())
    exact = bool((y_new.astype(cp.float64) == ref64(xi)).all())
    print(f"integer data: bit-identical to shipped {same}, exact {exact}")
    ok &= same and exact
    # random data: errors
    xr = rs.standard_normal((rows, 1 << 15)).astype(cp.float16)
    xr0 = xr.copy()
    ref = ref64(xr)
    launch(k, xr, y_new)
    shipped(xr, y_old)
    e_new, e_old = relerr(y_new, ref), relerr(y_old, ref)
    ndiff = int((y_new.view(cp.uint16) != y_old.view(cp.uint16)).sum())
    print(f"random data: max rel err new {e_new:.3e}, shipped {e_old:.3e}; entries differing {ndiff} of {xr.size}")
    s = 2.0 ** -7.5
    launch(k, xr, y_new, scale=s)
    e_s = relerr(y_new, ref * s)
    print(f"ortho scale: max rel err new {e_s:.3e}")
    ok &= e_new < 2 * max(e_old, 1e-3) and e_s < 2 * max(e_old, 1e-3)
    # in place and a small grid
    launch(k, xr, y_new)
    z = xr.copy()
    launch(k, z, z)
    inplace = bool((z.view(cp.uint16) == y_new.view(cp.uint16)).all())
    w = cp.empty_like(xr)
    launch(k, xr, w, grid=7)
    small = bool((w.view(cp.uint16) == y_new.view(cp.uint16)).all())
    untouched = bool((xr.view(cp.uint16) == xr0.view(cp.uint16)).all())
    print(f"in place identical {inplace}; grid 7 identical {small}; input untouched {untouched}")
    ok &= inplace and small and untouched
    return ok


def interleaved_table(fns, nbytes, rounds, title):
    """Time a cudaMemcpyAsync copy of ``nbytes`` and each of ``fns`` (name -> call moving
    nbytes in and nbytes out) in ``rounds`` interleaved rounds of 20 CUDA-event-timed calls;
    print the median of the rounds' medians, GB/s (read + written) and % of the copy."""
    a = cp.empty(nbytes, dtype=cp.uint8)
    b = cp.empty_like(a)
    res = {"copy": []} | {key: [] for key in fns}
    for _ in range(rounds):
        res["copy"].append(_time(lambda: b.data.copy_from_device_async(a.data, a.nbytes), 20))
        for key, fn in fns.items():
            res[key].append(_time(fn, 20))
    t = {key: statistics.median(v) for key, v in res.items()}
    gbs = {key: 2 * nbytes / v / 1e9 for key, v in t.items()}
    print(f"{title}, {nbytes >> 20} MiB per array, {rounds} rounds x 20 calls")
    for key in res:
        print(f"  {key:16s} {t[key] * 1e6:8.1f} us  {gbs[key]:6.0f} GB/s  {100 * gbs[key] / gbs['copy']:5.1f} % of copy"
              f"  rounds(us): {' '.join(f'{v * 1e6:.1f}' for v in res[key])}")


def timing(mib, rounds):
    ks = kernels()
    x = cp.random.RandomState(2).standard_normal(((mib << 20) // 2,)).astype(cp.float16).reshape(-1, 1 << 15)
    y = cp.empty_like(x)
    fns = {"shipped": lambda: shipped(x, y)} | {key: (lambda k=k: launch(k, x, y)) for key, k in ks.items()}
    rows = x.shape[0]
    for g in GRIDS:  # session 14: grids other than one CTA per SM (e.g. 128: 32 rows per CTA at 256 MiB)
        fns |= {f"{key} grid {g}": (lambda k=k, g=g: launch(k, x, y, grid=g)) for key, k in ks.items() if g < rows}
    interleaved_table(fns, x.nbytes, rounds, "float16 2^15")


def profile_launches(mib=256):
    """(for ncu) each variant twice on random data, nothing else"""
    ks = kernels()
    x = cp.random.RandomState(2).standard_normal(((mib << 20) // 2,)).astype(cp.float16).reshape(-1, 1 << 15)
    y = cp.empty_like(x)
    for key in ks:
        for _ in range(2):
            launch(ks[key], x, y)
    cp.cuda.Device().synchronize()


if __name__ == "__main__":
    if sys.argv[1:2] == ["ncu"]:
        profile_launches()
    else:
        main(*(int(a) for a in sys.argv[1:]))

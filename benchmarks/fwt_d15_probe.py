"""Probe (sessions 13-14): one-CTA float64 2**15 kernels against the 2-CTA split kernel of
ROW_TUNED (the public path before session 14), in one process on the device:
``fwht_rows_d15`` (benchmarks/fwt_d15_kernel.cu, appended to ozgemm/fwt/fwht.cu; top butterfly
first; not shipped: 56.8 % of copy in session 13, 75.6 % with session 14's staging) and the
shipped ``fwht_rows_d15s`` (fwht.cu; top butterfly last).

    PYTHONPATH=. python3 benchmarks/fwt_d15_probe.py [MiB] [rounds] [build options ...]

Per build (compile options, e.g. "-DOZ_FWT_D15S_PF=1") and kernel, checks (printed ok/FAIL):
integer-valued rows exact and equal to the split kernel's; random rows within 2 (L + 2) u
||x||_1 of the split kernel's result (both within (L + 2) u ||x||_1 of the exact transform);
"ortho" scale; in place; a grid of 7 CTAs (every CTA loops); input untouched. Then interleaved
rounds of 20 CUDA-event-timed calls: copy, split kernel, each build's kernels (normal data,
scale 1).
"""
import sys
from pathlib import Path

import cupy as cp
import numpy as np

from fwt_h15_probe import interleaved_table  # noqa: E402  (benchmarks/, on sys.path as the script's folder)
from ozgemm.fwt import _cuda

NAMES, SMEM = ("fwht_rows_d15<1>", "fwht_rows_d15s<1>"), _cuda.ROW_DEDICATED[("float64", 15)][1]  # 192 KiB + 16


def kernels(opts=""):
    src = _cuda._SRC.read_text() + (Path(__file__).with_name("fwt_d15_kernel.cu")).read_text()
    mod = cp.RawModule(code=src, options=("-std=c++17",) + tuple(opts.split()), name_expressions=list(NAMES))
    mod.compile()
    out = {}
    for name in NAMES:
        k = mod.get_function(name)
        k.max_dynamic_shared_size_bytes = SMEM
        k.preferred_shared_memory_carveout = 100
        out[name] = (k, name)  # (row_args: the dedicated d15s takes the ticket counter)
    return out


def launch(kn, x, y, scale=1.0, grid=None):
    k, name = kn
    g = min(x.size >> 15, cp.cuda.Device().attributes["MultiProcessorCount"] if grid is None else grid)
    k((g,), (512,), _cuda.row_args(name, x, y, 15, scale), shared_mem=SMEM)


def shipped(x, y, scale=1.0):
    """the 2-CTA split kernel of ROW_TUNED's float64 2**15 entry (the public path before
    session 14's fwht_rows_d15s)"""
    cfg = _cuda.tuned_cfg(_cuda.ROW_TUNED[("float64", 15)])
    return _cuda.transform_contiguous(cp, x, 15, scale, out=y, cfg=cfg)


def main(mib=256, rounds=5, *builds):
    builds = builds or ("",)
    ks = {f"{name[10:-3]} {bld}".strip(): k for bld in builds for name, k in kernels(bld).items()}
    ok = True
    for key, k in ks.items():
        print(f"== {key}: regs {k[0].attributes['num_regs']}, local bytes {k[0].attributes['local_size_bytes']}")
        ok &= check(k, mib)
    xr = cp.random.RandomState(3).standard_normal((((mib << 20) // 8) >> 15, 1 << 15))
    y = cp.empty_like(xr)
    fns = {"split (ROW_TUNED)": lambda: shipped(xr, y)}
    fns |= {key: (lambda k=k: launch(k, xr, y)) for key, k in ks.items()}
    interleaved_table(fns, xr.nbytes, rounds, "float64 2^15")
    print("CHECKS", "ok" if ok else "FAIL")


def check(k, mib):
    rows = (mib << 20) // 8 >> 15
    rs = cp.random.RandomState(3)
    ok = True
    xi = (rs.randint(-7, 8, size=(rows, 1 << 15))).astype(cp.float64)
    a, b = cp.empty_like(xi), cp.empty_like(xi)
    launch(k, xi, a)
    shipped(xi, b)
    same = bool(cp.array_equal(a, b))
    print(f"integer rows: equal to the split kernel {same}")
    ok &= same
    xr = rs.standard_normal((rows, 1 << 15))
    x0 = xr.copy()
    l1 = cp.abs(xr).sum(axis=1, keepdims=True)
    for s in (1.0, 2.0 ** -7.5):
        launch(k, xr, a, s)
        shipped(xr, b, s)
        ratio = float((cp.abs(a - b) / (2 * 17 * 2.0 ** -53 * l1 * s)).max())
        nd = int((a != b).sum())
        print(f"random rows, scale {s:.4g}: max |d15 - split| / (2 (L+2) u ||x||_1) = {ratio:.3f}; {nd} of {a.size} differ")
        ok &= ratio <= 1.0
    launch(k, xr, a)
    z = xr.copy()
    launch(k, z, z)
    w = cp.empty_like(xr)
    launch(k, xr, w, grid=7)
    inplace, small, untouched = bool(cp.array_equal(z, a)), bool(cp.array_equal(w, a)), bool(cp.array_equal(xr, x0))
    print(f"in place identical {inplace}; grid 7 identical {small}; input untouched {untouched}")
    ok &= inplace and small and untouched
    return ok


if __name__ == "__main__":  # [MiB] [rounds] [build options ...]
    main(*(int(a) for a in sys.argv[1:3]), *sys.argv[3:])

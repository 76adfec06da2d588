"""GPU benchmark of ozgemm.fwt: effective bandwidth against a device copy, with accuracy.

Effective bandwidth = (bytes read + bytes written) / time = 2 · N · itemsize / t for one
transform of N elements (out-of-place), compared with a device-to-device copy of the same
N · itemsize bytes (cudaMemcpyAsync, and CuPy's elementwise copy kernel), measured in the
same run. Timing: CUDA events around each call, warm-up first (compilation excluded),
median of ``reps`` calls; arrays are ≥ 64 MiB (default 256 MiB), several times the 50 MB
L2 of an H200, so no rotation is needed. Inputs: uniform (rand − 0.5), seed 0, norm="ortho".

Accuracy (same run, same inputs): float16/float32 against a float64 CPU (numpy) transform
of the same (exactly widened) inputs on the first ≤ 2**20 elements (at least one row):
``max|y − ref| / max|ref|`` and the ratio to the a-priori bound ``L'·u·c·||x||_1`` (L' = L, or
L + 2 for odd L: the rounded factor c and its product) (float16: plus ``2**-11 · |ref|`` for
the output rounding and ``2**-11 · c · ||x||_1`` for each earlier pass's float16
intermediate, c = n**-0.5). Figures on the H200: docs/performance.md.
"""
from __future__ import annotations

import json
import platform
import statistics
import sys

import numpy as np

__all__ = ["main", "context"]


def context() -> dict:
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    return {
        "gpu": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
        "sm_count": props["multiProcessorCount"],
        "l2_bytes": props["l2CacheSize"],
        "driver": cp.cuda.runtime.driverGetVersion(),
        "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
        "cupy": cp.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }


def _time(fn, reps, warm=2):
    import cupy as cp

    for _ in range(warm):
        fn()
    cp.cuda.Device().synchronize()
    evs = [cp.cuda.Event() for _ in range(reps + 1)]
    evs[0].record()
    for i in range(reps):
        fn()
        evs[i + 1].record()
    evs[-1].synchronize()
    ts = [cp.cuda.get_elapsed_time(evs[i], evs[i + 1]) * 1e-3 for i in range(reps)]
    return statistics.median(ts)


def copy_bandwidth(nbytes: int, reps: int = 20) -> dict:
    """Bandwidth (read + write bytes / s) of a D2D copy of ``nbytes``: memcpy and kernel."""
    import cupy as cp

    a = cp.zeros(nbytes // 4, dtype=cp.float32)
    b = cp.empty_like(a)
    t_mc = _time(lambda: b.data.copy_from_device_async(a.data, a.nbytes), reps)
    t_k = _time(lambda: cp.copyto(b, a), reps)
    return {"memcpy": 2 * a.nbytes / t_mc, "copy_kernel": 2 * a.nbytes / t_k}


def run_case(dtype, L: int, nbytes: int, reps: int, variant: str = "auto") -> dict:
    import cupy as cp

    from . import _cuda
    from ._core import fwht

    dt = np.dtype(dtype)
    n = 1 << L
    rows = max(1, nbytes // (n * dt.itemsize))
    rng = cp.random.default_rng(0)
    x = (rng.random((rows, n), dtype=cp.float32) - 0.5).astype(dt)
    if variant == "auto":
        fn = lambda: fwht(x, norm="ortho")  # noqa: E731  (the public API)
    else:
        y = cp.empty_like(x)
        fn = lambda: _cuda.transform_contiguous(cp, x, L, n**-0.5, out=y, variant=variant)  # noqa: E731
    t = _time(fn, reps)
    res = {"dtype": dt.name, "L": L, "rows": rows, "bytes": 2 * x.nbytes, "time_s": t,
           "bw": 2 * x.nbytes / t, "passes": len(_cuda.plan(L, dt)), "variant": variant}
    # accuracy on the first <= 2**20 elements (>= one row), CPU float64 reference
    r = max(1, min(rows, (1 << 20) // n))
    y = fn()[:r] if variant == "auto" else (fn(), y)[1][:r]
    xs = cp.asnumpy(x[:r]).astype(np.float64)
    ref = fwht(xs, norm="ortho")
    yy = cp.asnumpy(y).astype(np.float64)
    err = np.abs(yy - ref)
    u = {"float16": 2.0**-24, "float32": 2.0**-24, "float64": 2.0**-53}[dt.name]
    # gamma-free first-order form of the documented bound: L levels, plus 2 for the rounded
    # factor 2**(-L/2) of odd L and its multiplication ("ortho")
    bound = max(L + 2 * (L % 2), 1) * u * n**-0.5 * np.abs(xs).sum(axis=1, keepdims=True)
    if dt.name == "float16":  # plus the float16 roundings: the output's, and each earlier pass's
        # intermediate z (|z_j| summed over the terms of one output is <= s_1 ||x||_1, and the
        # later passes scale by the rest of n**-0.5): 2**-11 n**-0.5 ||x||_1 per earlier pass
        npass = len(_cuda.plan(L, dt))
        bound = (bound + 2.0**-11 * np.abs(ref)
                 + (npass - 1) * 2.0**-11 * n**-0.5 * np.abs(xs).sum(axis=1, keepdims=True))
    res["max_rel_err"] = float(err.max() / np.abs(ref).max())
    res["err_over_bound"] = float((err / bound).max())
    res["finite"] = bool(np.isfinite(yy).all())
    return res


def main(dtypes=("float16", "float32", "float64"), lmin=8, lmax=22, mbytes=256, reps=20,
         json_path=None, extra_L=(23, 24), variants=("auto",)) -> int:
    import cupy as cp  # noqa: F401

    ctx = context()
    nbytes = mbytes << 20
    cb = copy_bandwidth(nbytes, reps)
    print("context:", json.dumps(ctx))
    print(f"copy baseline ({mbytes} MiB): memcpy {cb['memcpy'] / 1e9:.0f} GB/s, "
          f"copy kernel {cb['copy_kernel'] / 1e9:.0f} GB/s (read+write bytes / time)", flush=True)
    rows = []
    failed = 0
    for name in dtypes:
        for L in list(range(lmin, lmax + 1)) + [l for l in extra_L if l > lmax]:
            for v in variants:
                try:
                    r = run_case(name, L, nbytes, reps, v)
                except Exception as exc:  # report and go on: one failing case must not hide the rest
                    print(f"FAILED {name} L={L} {v}: {type(exc).__name__}: {exc}", flush=True)
                    failed += 1
                    continue
                r["pct_memcpy"] = 100 * r["bw"] / cb["memcpy"]
                r["pct_copy_kernel"] = 100 * r["bw"] / cb["copy_kernel"]
                rows.append(r)
                print(f"  {name:8s} L={L:2d} {v:6s} {r['time_s'] * 1e6:8.1f} us {r['bw'] / 1e9:6.0f} GB/s "
                      f"{r['pct_memcpy']:5.1f}% err {r['max_rel_err']:.2e}", flush=True)
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"context": ctx, "copy": cb, "mbytes": mbytes, "reps": reps, "results": rows}, f, indent=1)
    print()
    print(f"| dtype | log2 n | rows | passes | variant | time (us) | GB/s | % memcpy | % copy kernel | max rel err | err / bound |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['dtype']} | {r['L']} | {r['rows']} | {r['passes']} | {r['variant']} | {r['time_s'] * 1e6:.1f} | "
              f"{r['bw'] / 1e9:.0f} | {r['pct_memcpy']:.1f} | {r['pct_copy_kernel']:.1f} | {r['max_rel_err']:.2e} | "
              f"{r['err_over_bound']:.3f} |")
    if failed:
        print(f"{failed} case(s) FAILED (see above)", file=sys.stderr)
        return 1
    return 0


def tune(dtypes=("float16", "float32", "float64"), lmin=8, mbytes=256, reps=10, Ls=None,
         log=None, select=None) -> dict:
    """Sweep every valid row-kernel configuration (and, for float16, plain vs mma) for
    single-pass row lengths 2**lmin .. 2**LMAX1 (and the cluster lengths up to 2**(LMAX1+2));
    ``Ls``: only these row lengths (log2), e.g. (12, 13, 14, 15). Check each configuration
    exactly on integer-valued data (|x| <= 7: every float sum is exact, float16 rounds once)
    against the numpy int64 transform, time it, and return {(dtype, L): (TB, CB, CSB, mma,
    GB/s, WM, MINB, XS, PIPE)} of the fastest correct one. For rows longer than the non-cluster
    single-pass limit (only cluster candidates), a configuration is adopted only if it beats
    the multi-pass plan measured alongside (the committed ``ROW_TUNED`` stands in for the
    lengths not swept; the plan is given its table through ``DeviceInfo.row_tuned``, so
    ``ROW_TUNED`` itself is never changed). Prints one line per configuration; ``log`` (a list) receives
    (dtype, L, cfg, mma, seconds, exact) for each. ``select(dtype name, L, cfg, mma)``: time
    only the candidates for which it is true (and compile only those)."""
    import dataclasses

    import cupy as cp

    from . import _cuda
    from ._core import fwht

    nbytes = mbytes << 20
    best = {}
    committed = dict(_cuda.ROW_TUNED)
    dev = _cuda.DeviceInfo.current()
    for name in dtypes:
        dt = np.dtype(name)
        _, _, sc, logv, lmax1 = _cuda._TYPES[dt]
        acc = np.dtype(sc).itemsize
        lengths = [L for L in range(lmin, lmax1 + 3) if Ls is None or L in Ls]
        swept = {(name, L) for L in lengths}
        if select is None:
            _cuda.precompile(dt, lengths)  # one module with every candidate of the sweep
        else:
            _cuda.compile_kernels(dt, [
                _cuda._row_name(dt, L, mma=mma, cfg=cfg) for L in lengths
                for cfg in _cuda.row_candidates(L, logv, acc, clusters=_cuda._cc() >= 90)
                for mma in ((False, True) if dt == np.float16 else (False,)) if select(name, L, cfg, mma)])
        for L in lengths:
            n = 1 << L
            rows = max(1, nbytes // (n * dt.itemsize))
            k = cp.random.default_rng(L).integers(-7, 8, size=(rows, n), dtype=cp.int64)
            x = k.astype(dt)
            y = cp.empty_like(x)
            r = max(1, min(rows, (1 << 16) // n))
            want = fwht(cp.asnumpy(k[:r]))  # CPU int64 transform
            want = want.astype(dt) if dt.kind == "f" else want
            cands = _cuda.row_candidates(L, logv, acc, clusters=_cuda._cc() >= 90)
            if not cands:
                continue
            res = []
            t_multi = None
            if L > lmax1:  # reference: the multi-pass plan (without tuned entries beyond lmax1)
                known = {kk: vv for kk, vv in committed.items() if kk[0] != name or kk not in swept}
                known.update(best)
                ref_dev = dataclasses.replace(dev, row_tuned={
                    kk: vv for kk, vv in known.items() if kk[1] <= lmax1 or kk[0] != name})
                t_multi = _time(lambda: _cuda.transform_contiguous(cp, x, L, 1.0, out=y, dev=ref_dev), reps)
                print(f"  tune {name} L={L:2d} multi-pass {t_multi * 1e6:7.1f} us "
                      f"{2 * x.nbytes / t_multi / 1e9:5.0f} GB/s", flush=True)
            for cfg in cands:
                for mma in ((False, True) if dt == np.float16 else (False,)):
                    if select is not None and not select(name, L, cfg, mma):
                        continue
                    var = "mma" if mma else "plain"
                    try:
                        _cuda.transform_contiguous(cp, x, L, 1.0, out=y, variant=var, cfg=cfg)
                        ok = bool(np.array_equal(cp.asnumpy(y[:r]), want))
                        t = _time(lambda: _cuda.transform_contiguous(cp, x, L, 1.0, out=y, variant=var, cfg=cfg), reps)
                    except Exception as exc:
                        print(f"  tune {name} L={L} cfg={cfg} {var}: FAILED {type(exc).__name__}: {exc}", flush=True)
                        continue
                    bw = 2 * x.nbytes / t
                    print(f"  tune {name} L={L:2d} TB={cfg[0]} CB={cfg[1]} CSB={cfg[2]} WM={int(cfg[3])} "
                          f"MINB={cfg[4]} XS={int(cfg[5])} PIPE={int(cfg[6])} {var:5s} exact={ok} "
                          f"{t * 1e6:7.1f} us {bw / 1e9:5.0f} GB/s", flush=True)
                    if log is not None:
                        log.append((name, L, tuple(cfg), mma, t, ok))
                    if ok:
                        res.append((t, cfg, mma))
            if res:
                t, cfg, mma = min(res, key=lambda z: z[0])
                if t_multi is None or t < t_multi:
                    prev_ok = (name, L - 1) in best or ((name, L - 1) in committed and (name, L - 1) not in swept)
                    if L <= lmax1 or prev_ok or L - 1 == lmax1:
                        best[(name, L)] = (cfg[0], cfg[1], cfg[2], mma, round(2 * x.nbytes / t / 1e9),
                                           bool(cfg[3]), int(cfg[4]),
                                           int(cfg[5]) if int(cfg[5]) >= 2 else bool(cfg[5]), int(cfg[6]))
            del x, y, k
    return best

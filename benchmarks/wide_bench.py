"""dd and fp128 contracts: whole-call time, TFLOPS-equivalent (2mnk / time) and accuracy,
side by side with the platform's own peers, in one run.

    python benchmarks/wide_bench.py --device cpu --sizes 512 [--reps 3]
    python benchmarks/wide_bench.py --device gpu --sizes 4096 8192 16384

Inputs: phi = 0.5 matrices ((rand-0.5) exp(phi randn)), seed 0, square n, float64 values
("f64": the exact-ish product of doubles) or widened to dd / binary128 values that use the
extra bits ("dd", "q128"). Peers: CPU — numpy-quaddtype's own matmul on the same quad
inputs (fp128), mpmath at 106 bits on an n = 64 sub-problem (dd); GPU — native cupy DGEMM.
Timing: wall clock (CPU) / CUDA-synchronised wall clock (GPU) of the whole call, median of
--reps after one warm-up. Accuracy: a 16 x 16 block of the result against the exact
product (python-flint / gmpy2), in units of u*(|A||B|)_ij, and the exact breach count.
"""
import argparse
import json
import platform
import statistics
import sys
import time

import numpy as np

import ozgemm
from ozgemm.contracts.formats import quad_dtype
from ozgemm.verify.inputs import phi_operands
from ozgemm.verify.reference import exact_product, measure


def phi_pair(n, phi=0.5, seed=0):
    return phi_operands(np.random.default_rng(seed), n, n, n, phi)


def widen(x, kind, seed):
    r = np.random.default_rng(seed).random(x.shape) - 0.5
    if kind == "dd":
        return ozgemm.DD(x, x * r * 2.0 ** -53)
    if kind == "q128":
        q = quad_dtype()
        return x.astype(q) + (x * r * 2.0 ** -60).astype(q)
    return x


def to_dev(x, xp):
    if xp is np:
        return x
    if isinstance(x, ozgemm.DD):
        return ozgemm.DD(xp.asarray(x.hi), xp.asarray(x.lo))
    if "Quad" in str(getattr(x, "dtype", "")):
        return ozgemm.Binary128.from_numpy(x, device=True)
    return xp.asarray(x)


def block(x, nb):
    if isinstance(x, ozgemm.DD):
        return ozgemm.DD(x.hi[:nb, :nb], x.lo[:nb, :nb])
    return x[:nb, :nb]


def timeit(f, reps, sync):
    f()
    sync()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        r = f()
        sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--sizes", type=int, nargs="+", default=[512])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cases", nargs="+", default=["fp128:q128", "fp128:f64", "dd:dd", "dd:f64"])
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.device == "gpu":
        import cupy as xp

        sync = xp.cuda.Device().synchronize
        dev = xp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    else:
        xp, sync, dev = np, (lambda: None), platform.processor() or platform.machine()
    print(f"device {dev}; numpy {np.__version__}; python {platform.python_version()}; phi 0.5, seed 0; "
          f"median of {args.reps} after warm-up; accuracy on a 16x16 block vs the exact product", flush=True)
    rows = []
    nb = 16
    for n in args.sizes:
        a0, b0 = phi_pair(n)
        flops = 2.0 * n ** 3
        if args.device == "gpu":
            ad, bd = xp.asarray(a0), xp.asarray(b0)
            t_nat, _ = timeit(lambda: ad @ bd, args.reps, sync)
            print(f"n={n} native DGEMM {t_nat * 1e3:.1f} ms ({flops / t_nat / 1e12:.1f} TFLOPS)", flush=True)
            del ad, bd
        else:
            t_nat = None
        for case in args.cases:
            con, kind = case.split(":")
            a, b = widen(a0, kind, 1), widen(b0, kind, 2)
            ad, bd = to_dev(a, xp), to_dev(b, xp)
            t, (c, plans) = timeit(lambda: ozgemm.matmul(ad, bd, contract=con, return_plan=True), args.reps, sync)
            cb = block(c, nb)
            if isinstance(cb, ozgemm.Binary128):
                cb = cb.to_numpy()
            elif isinstance(cb, ozgemm.DD) and xp is not np:
                cb = ozgemm.DD(xp.asnumpy(cb.hi), xp.asnumpy(cb.lo))
            ex = exact_product(a[:nb], b[:, :nb])  # the block of AB: rows of A, columns of B
            rep = measure(cb, ex, ozgemm.load_contract(con)).summary()
            row = {"n": n, "contract": con, "inputs": kind, "moduli": plans[0].n_moduli, "beta": plans[0].beta,
                   "ms": t * 1e3, "tflops_equiv": flops / t / 1e12,
                   "x_native": (t_nat / t) if t_nat else None, "max_err_u": rep["max_err_u"],
                   "median_err_u": rep["median_err_u"], "cr_share": rep["correctly_rounded"],
                   "breaches": rep["breaches"]}
            # phase breakdown of one more call (synchronised laps): planning, then the engine's phases
            from ozgemm.api import _plan_2d
            from ozgemm.kernels import get_backend
            from ozgemm.methods import execute

            eng = get_backend(None, xp)
            sync()
            t0 = time.perf_counter()
            from ozgemm.precision.operands import as_wide

            _, _, a0_, b0_, _, _, p_ = _plan_2d(as_wide(ad), as_wide(bd), ozgemm.load_contract(con), eng)
            sync()
            ph = {"plan": time.perf_counter() - t0}
            execute(p_, eng, a0_, b0_, timings=ph)
            row["phases_ms"] = {k_: round(v * 1e3, 2) for k_, v in ph.items()}
            del a0_, b0_, p_
            if args.device == "cpu" and con == "dd" and kind == "dd":
                row.update(xprec_peer(a, b, nb))
            if args.device == "cpu" and kind == "q128":
                tq, _ = timeit(lambda: np.matmul(a, b), 1, sync)
                row["numpy_quaddtype_ms"] = tq * 1e3
            rows.append(row)
            print(json.dumps(row), flush=True)
            del c, ad, bd
            if xp is not np:
                xp.get_default_memory_pool().free_all_blocks()
    if args.device == "cpu" and "dd:dd" in args.cases:
        rows.append(mpmath_dd_peer())
        print(json.dumps(rows[-1]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": dev, "rows": rows}, f, indent=1)


def xprec_peer(a, b, nb):
    """xprec's ddouble matmul on the same dd values (if xprec installs), timed and measured."""
    try:
        import xprec
    except ImportError:
        return {"xprec": "not installed"}
    dd = xprec.ddouble
    xa = a.hi.astype(dd) + a.lo.astype(dd)  # exact: hi + lo is a double-double
    xb = b.hi.astype(dd) + b.lo.astype(dd)
    t, c = timeit(lambda: xa @ xb, 3, lambda: None)
    v = c[:nb, :nb].view(np.float64).reshape(nb, nb, 2)
    rep = measure(ozgemm.DD(v[..., 0].copy(), v[..., 1].copy()), exact_product(a[:nb], b[:, :nb]),
                  ozgemm.load_contract("dd")).summary()
    return {"xprec_ms": t * 1e3, "xprec_max_err_u": rep["max_err_u"], "xprec_breaches": rep["breaches"],
            "xprec_cr_share": rep["correctly_rounded"]}


def mpmath_dd_peer(n=64):
    """The dd peer when no double-double library installs: mpmath.matrix products at 106 bits."""
    import mpmath

    a0, b0 = phi_pair(n)
    a, b = widen(a0, "dd", 1), widen(b0, "dd", 2)
    with mpmath.workprec(106):
        A = mpmath.matrix([[mpmath.mpf(h) + mpmath.mpf(l) for h, l in zip(rh, rl)] for rh, rl in zip(a.hi.tolist(), a.lo.tolist())])
        B = mpmath.matrix([[mpmath.mpf(h) + mpmath.mpf(l) for h, l in zip(rh, rl)] for rh, rl in zip(b.hi.tolist(), b.lo.tolist())])
        t0 = time.perf_counter()
        A * B
        t_mp = time.perf_counter() - t0
    t0 = time.perf_counter()
    ozgemm.matmul(a, b, contract="dd")
    t_oz = time.perf_counter() - t0
    return {"n": n, "peer": "mpmath.matrix product at 106 bits", "peer_ms": t_mp * 1e3, "ozgemm_dd_ms": t_oz * 1e3}


if __name__ == "__main__":
    sys.exit(main())

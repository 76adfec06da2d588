"""Reused operands: a dd matrix-vector product b - A x (the residual of iterative refinement)
with A prepared once (``ozgemm.prepare``) against the same product unprepared, new x each
call, on the CPU (or the GPU with --device gpu). Prints its context and a table; results of
both are checked bit-identical.

Run: python benchmarks/prepare_bench.py [--n 2000] [--cols 1] [--contract dd] [--reps 5] [--device cpu|gpu]
(--cols: the columns of x; --cols 4096 --n 4096 --contract fp64 is a square product; the
residual is timed for --cols 1)
"""
import argparse
import platform
import statistics
import time

import numpy as np

import ozgemm
from ozgemm.verify.inputs import phi_matrix


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--cols", type=int, default=1)
    ap.add_argument("--contract", default="dd")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--phi", type=float, default=0.5)
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    args = ap.parse_args(argv)
    xp = np
    sync = lambda: None  # noqa: E731
    if args.device == "gpu":
        import cupy as xp

        sync = xp.cuda.Device().synchronize
    rng = np.random.default_rng(0)
    A = xp.asarray(phi_matrix(rng, (args.n, args.n), args.phi))
    xs = [xp.asarray(phi_matrix(rng, (args.n, args.cols), args.phi)) for _ in range(args.reps + 1)]
    t0 = time.perf_counter()
    P = ozgemm.prepare(A, args.contract)
    sync()
    t_prep = time.perf_counter() - t0

    def timed(f):
        f(xs[0])
        sync()
        ts = []
        for x in xs[1:]:
            t = time.perf_counter()
            f(x)
            sync()
            ts.append(time.perf_counter() - t)
        return statistics.median(ts)

    plain = timed(lambda x: ozgemm.matmul(A, x, contract=args.contract))
    prep = timed(lambda x: ozgemm.matmul(P, x))
    same = all(_same(ozgemm.matmul(A, x, contract=args.contract), ozgemm.matmul(P, x)) for x in xs[:2])
    if args.cols == 1:  # the residual b - A x of iterative refinement: gemm, and [A | b] prepared @ [-x; 1]
        bvec = xp.asarray(phi_matrix(rng, (args.n, 1), args.phi))
        Pab = ozgemm.prepare(xp.concatenate([A, bvec], axis=1), args.contract)
        one = xp.ones((1, 1))
        res_gemm = timed(lambda x: ozgemm.gemm(A, x, bvec, alpha=-1.0, beta=1.0, contract=args.contract))
        res_prep = timed(lambda x: ozgemm.matmul(Pab, xp.concatenate([-x, one])))
        same_r = _same(ozgemm.gemm(A, xs[0], bvec, alpha=-1.0, beta=1.0, contract=args.contract),
                       ozgemm.matmul(Pab, xp.concatenate([-xs[0], one])))
        dot2 = timed(lambda x: _dot2_residual(np.asarray(A), np.asarray(x)[:, 0], np.asarray(bvec)[:, 0])) \
            if args.device == "cpu" else float("nan")
    print(f"ozgemm prepare bench — {args.device}: {platform.processor() or platform.machine()}, numpy {np.__version__}, "
          f"python {platform.python_version()}")
    print(f"input: A = (rand-0.5)*exp(phi*randn), phi={args.phi}, seed 0, {args.n} x {args.n}; a new x "
          f"({args.n} x {args.cols}) per call; contract {args.contract}; timing: whole matmul call, median of {args.reps}")
    print(f"{'n':>6} {'contract':>8} {'unprepared s':>13} {'prepared s':>11} {'speed-up':>9} {'prepare s':>10} bit-identical")
    print(f"{args.n:6d} {args.contract:>8} {plain:13.4f} {prep:11.4f} {plain / prep:9.1f} {t_prep:10.4f} {same}")
    if args.cols == 1:
        print(f"residual b - A x: gemm {res_gemm:.4f} s; [A | b] prepared @ [-x; 1] {res_prep:.4f} s (bit-identical "
              f"{same_r}); numpy Dot2 (TwoProduct + cascaded TwoSum) {dot2:.4f} s")


def _dot2_residual(A, x, b):
    """b - A x in twice the working precision with numpy (Ogita, Rump, Oishi 2005, Dot2):
    Dekker's TwoProduct of every term, a TwoSum cascade over the columns, errors added."""
    def split(v):
        c = v * 134217729.0
        h = c - (c - v)
        return h, v - h

    p = A * x[None, :]
    ah, al = split(A)
    xh, xl = split(x[None, :])
    e = ((ah * xh - p) + ah * xl + al * xh) + al * xl
    s, c = b.copy(), np.zeros_like(b)
    for j in range(A.shape[1]):
        pj = -p[:, j]
        t = s + pj
        z = t - s
        c += (s - (t - z)) + (pj - z)
        s = t
    return s + (c - e.sum(axis=1))


def _same(x, y):
    if isinstance(x, ozgemm.DD):
        return bool((x.hi == y.hi).all() and (x.lo == y.lo).all())
    return bool((x == y).all())


if __name__ == "__main__":
    main()

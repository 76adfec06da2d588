"""Reused operands: a dd matrix-vector product b - A x (the residual of iterative refinement)
with A prepared once (``ozgemm.prepare``) against the same product unprepared, new x each
call, on the CPU (or the GPU with --device gpu). Prints its context and a table; results of
both are checked bit-identical.

Run: python benchmarks/prepare_bench.py [--n 2000] [--contract dd] [--reps 5] [--device cpu|gpu]
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
    xs = [xp.asarray(phi_matrix(rng, (args.n, 1), args.phi)) for _ in range(args.reps + 1)]
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
    print(f"ozgemm prepare bench — {args.device}: {platform.processor() or platform.machine()}, numpy {np.__version__}, "
          f"python {platform.python_version()}")
    print(f"input: A = (rand-0.5)*exp(phi*randn), phi={args.phi}, seed 0, {args.n} x {args.n}; a new x "
          f"({args.n} x 1) per call; contract {args.contract}; timing: whole matmul call, median of {args.reps}")
    print(f"{'n':>6} {'contract':>8} {'unprepared s':>13} {'prepared s':>11} {'speed-up':>9} {'prepare s':>10} bit-identical")
    print(f"{args.n:6d} {args.contract:>8} {plain:13.4f} {prep:11.4f} {plain / prep:9.1f} {t_prep:10.4f} {same}")


def _same(x, y):
    if isinstance(x, ozgemm.DD):
        return bool((x.hi == y.hi).all() and (x.lo == y.lo).all())
    return bool((x == y).all())


if __name__ == "__main__":
    main()

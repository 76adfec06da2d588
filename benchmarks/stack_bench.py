"""Stacks of small products on the CPU: ozgemm.matmul of a whole stack against numpy.matmul,
and bit-identity with product-by-product calls on the first products. Prints its context and
a table.

Run: python benchmarks/stack_bench.py [--reps 3]
"""
import argparse
import platform

import numpy as np

import ozgemm
from ozgemm._timing import median_time
from ozgemm.verify.inputs import phi_matrix

CASES = [((10_000, 10, 10), (1, 10, 10)), ((2000, 1, 4, 4), (1, 30, 4, 4)), ((64, 64, 64), (64, 64, 64))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--contract", default="fp64")
    args = ap.parse_args(argv)
    print(f"ozgemm stack bench — cpu: {platform.processor() or platform.machine()}, numpy {np.__version__}, "
          f"python {platform.python_version()}")
    print(f"input: (rand-0.5)*exp(phi*randn), phi=0.5, seed 0, float64; contract {args.contract}; timing: whole "
          f"call, median of {args.reps} after one warm-up")
    print(f"{'a':>18} {'b':>16} {'ozgemm s':>9} {'numpy s':>9} {'x numpy':>8} bit-identical(first 20)")
    rng = np.random.default_rng(0)
    for sa, sb in CASES:
        a, b = phi_matrix(rng, sa, 0.5), phi_matrix(rng, sb, 0.5)
        t_oz = median_time(lambda: ozgemm.matmul(a, b, contract=args.contract), args.reps)
        t_np = median_time(lambda: np.matmul(a, b), args.reps)
        c = ozgemm.matmul(a, b, contract=args.contract)
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        A = np.broadcast_to(a, shape + a.shape[-2:])
        B = np.broadcast_to(b, shape + b.shape[-2:])
        same = all(np.array_equal(c[i], ozgemm.matmul(A[i], B[i], contract=args.contract))
                   for i in list(np.ndindex(shape))[:20])
        print(f"{str(sa):>18} {str(sb):>16} {t_oz:9.3f} {t_np:9.4f} {t_oz / t_np:8.0f} {same}")


if __name__ == "__main__":
    main()

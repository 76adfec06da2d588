"""Stacks of small products: ozgemm.matmul of a whole stack against the native batched
matmul (numpy.matmul on the CPU; cupy.matmul, i.e. cuBLAS strided-batched DGEMM/SGEMM, on the
GPU), and bit-identity with product-by-product calls on the first products. Prints its
context and a table.

Run: python benchmarks/stack_bench.py [--reps 3] [--device cpu|gpu] [--contract fp64]
"""
import argparse
import platform

import numpy as np

import ozgemm
from ozgemm._timing import median_time
from ozgemm.verify.inputs import phi_matrix

CASES = {"cpu": [((10_000, 10, 10), (1, 10, 10)), ((2000, 1, 4, 4), (1, 30, 4, 4)), ((64, 64, 64), (64, 64, 64))],
         "gpu": [((64, 512, 512), (64, 512, 512)), ((1024, 128, 128), (1024, 128, 128)),
                 ((10_000, 10, 10), (1, 10, 10)), ((2000, 1, 4, 4), (1, 30, 4, 4))]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--contract", default="fp64")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    args = ap.parse_args(argv)
    xp, sync, where = np, (lambda: None), f"cpu: {platform.processor() or platform.machine()}"
    if args.device == "gpu":
        import cupy as xp

        sync = xp.cuda.Device().synchronize
        where = f"gpu: {xp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, cupy {xp.__version__}"
    dt = ozgemm.load_contract(args.contract).fmt.dtype
    print(f"ozgemm stack bench — {where}, numpy {np.__version__}, python {platform.python_version()}")
    print(f"input: (rand-0.5)*exp(phi*randn), phi=0.5, seed 0, {np.dtype(dt)}; contract {args.contract}; timing: "
          f"whole call (synchronised), median of {args.reps} after one warm-up; native: {xp.__name__}.matmul")
    print(f"{'a':>18} {'b':>16} {'ozgemm s':>9} {'native s':>9} {'x native':>9} bit-identical(first 20)")
    rng = np.random.default_rng(0)
    for sa, sb in CASES[args.device]:
        a, b = (xp.asarray(phi_matrix(rng, s_, 0.5, dt)) for s_ in (sa, sb))
        t_oz = median_time(lambda: ozgemm.matmul(a, b, contract=args.contract), args.reps, sync)
        t_np = median_time(lambda: xp.matmul(a, b), args.reps, sync)
        c = ozgemm.matmul(a, b, contract=args.contract)
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        A = xp.broadcast_to(a, shape + a.shape[-2:])
        B = xp.broadcast_to(b, shape + b.shape[-2:])
        same = all(bool((c[i] == ozgemm.matmul(A[i], B[i], contract=args.contract)).all())
                   for i in list(np.ndindex(shape))[:20])
        print(f"{str(sa):>18} {str(sb):>16} {t_oz:9.5f} {t_np:9.5f} {t_oz / t_np:9.1f} {same}")


if __name__ == "__main__":
    main()

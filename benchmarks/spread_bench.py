"""Cost against exponent spread: the plan (one plan or exponent bands), its INT8 GEMMs and the
time of ozgemm.matmul next to the native float64 GEMM, for phi-distributed operands and for
entries spread over 10**(+-300). Prints its context and a table.

Run: python benchmarks/spread_bench.py [--device cpu|gpu] [--sizes 256 1024] [--reps 3]
"""
import argparse
import platform

import numpy as np

import ozgemm
from ozgemm._timing import median_time
from ozgemm.verify.inputs import phi_matrix

SPREADS = ["0.5", "2", "4", "8", "1e+-300"]


def _operands(rng, n, spread):
    if spread == "1e+-300":
        def mat():
            return rng.standard_normal((n, n)) * 10.0 ** rng.uniform(-300, 300, (n, n))
        return mat(), mat()
    return phi_matrix(rng, (n, n), float(spread)), phi_matrix(rng, (n, n), float(spread))


def _summary(plan):
    info = plan.info()
    if info["method"] == "bands":
        return f"bands {info['bands'][0]}x{info['bands'][1]}, {len(info['pairs'])} pairs", info["int8_gemms"]
    return f"{info['method']}, {info['n_moduli']} moduli, width {info['beta']}", info["int8_gemms"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--contracts", nargs="+", default=["fp64", "dd"])
    args = ap.parse_args(argv)
    if args.device == "gpu":
        import cupy as cp
        xp, sync = cp, cp.cuda.Device().synchronize
        dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    else:
        xp, sync = np, (lambda: None)
        dev = platform.processor() or platform.machine()
    print(f"ozgemm spread bench — {args.device}: {dev}, numpy {np.__version__}, python {platform.python_version()}")
    print(f"input: phi: (rand-0.5)*exp(phi*randn); 1e+-300: randn*10**uniform(-300, 300); n x n float64, seed 0; "
          f"timing: whole call, median of {args.reps} after one warm-up; native: {xp.__name__}.matmul float64")
    print(f"{'spread':>8} {'n':>6} {'contract':>8} {'plan':>34} {'INT8 GEMMs':>10} {'ozgemm s':>9} {'native s':>9} "
          f"{'x native':>8}")
    for n in args.sizes:
        for spread in SPREADS:
            rng = np.random.default_rng(0)
            a, b = _operands(rng, n, spread)
            a, b = xp.asarray(a), xp.asarray(b)
            with np.errstate(all="ignore"):  # products of 1e+-300 entries overflow natively too
                t_nat = median_time(lambda: a @ b, args.reps, sync)
            for name in args.contracts:
                _, plans = ozgemm.matmul(a, b, contract=name, return_plan=True)
                what, gemms = _summary(plans[0])
                t = median_time(lambda: ozgemm.matmul(a, b, contract=name), args.reps, sync)
                print(f"{spread:>8} {n:>6} {name:>8} {what:>34} {gemms:>10} {t:9.4f} {t_nat:9.5f} {t / t_nat:8.1f}",
                      flush=True)


if __name__ == "__main__":
    main()

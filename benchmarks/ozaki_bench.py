"""Ozaki scheme I against CRT (Ozaki scheme II) and the native matmul, side by side in one run.

    python benchmarks/ozaki_bench.py --device gpu --sizes 4096 8192 16384 --json out.json
    python benchmarks/ozaki_bench.py --device cpu --sizes 512 1024

Per size, on the same inputs A, B = (rand - 0.5) exp(phi randn) (GPU: CuPy RandomState(seed)
on the device; CPU: numpy default_rng(seed)), one row per (contract, method): fp64, fp32 and
a low-bit binary64 contract (bits = 16), each with method crt, ozaki and auto. Timing: the
whole ``ozgemm.matmul`` call (planning with its bound GEMM(s), slicing/residues, INT8 GEMMs,
accumulation/reconstruction, rounding), median of --reps after a warm-up (the warm-up also
compiles the GPU kernels), CUDA events on the GPU; no host<->device transfers. Baseline in the
same run: native matmul (cuBLAS DGEMM/SGEMM through CuPy, or numpy/OpenBLAS). TFLOPS =
2 n^3 / time. INT8 GEMMs = moduli or slice products, plus the bound GEMM(s) (Ozaki-I plans
run the CRT planner's bound GEMM and one more of their own). Phases from one extra run
synchronised between phases. Accuracy in the same run on the top-left --block x --block
corner against the exact product (python-flint / gmpy2), in u (|A||B|)_ij of the output.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

import ozgemm
from ozgemm.cli.bench import cpu_context
from ozgemm.verify.audit import block_reference, sampled_accuracy
from ozgemm.verify.inputs import phi_operands


def variants():
    fp64, fp32 = ozgemm.load_contract("fp64"), ozgemm.load_contract("fp32")
    b16 = fp64.with_(bits=16, exponent_range=64, name="fp64-bits16")
    out = []
    for base in (fp64, fp32, b16):
        for method in ("crt", "ozaki", "auto"):
            out.append((base.name, method, base.with_(method=method)))
    return out


def _timer(device):
    if device == "gpu":
        from ozgemm.cli.bench_gpu import _time  # CUDA events, median, seconds

        return _time

    def run(fn, reps):
        fn()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts)
    return run


def inputs(device, n, phi, seed):
    if device == "gpu":
        import cupy as cp

        return phi_operands(cp.random.RandomState(seed), n, n, n, phi)
    from ozgemm.verify.audit import phi_matrices

    return phi_matrices(n, n, n, phi, seed)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--sizes", type=int, nargs="+", default=[512, 1024])
    ap.add_argument("--phi", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--block", type=int, default=16)
    ap.add_argument("--only", nargs="*", default=None, help="contract names to run (fp64 fp32 fp64-bits16)")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    from ozgemm.kernels import get_backend
    from ozgemm.methods import execute, plan_product
    from ozgemm.precision.select import modelled_cost

    dev = args.device
    eng = get_backend("cuda" if dev == "gpu" else "cpu")
    timer = _timer(dev)
    if dev == "gpu":
        import cupy as cp
        from ozgemm.cli.bench_gpu import gpu_context

        ctx = gpu_context()
        native = cp.matmul
        free = cp.get_default_memory_pool().free_all_blocks
    else:
        ctx = cpu_context()
        native = np.matmul
        free = lambda: None  # noqa: E731
    rows = []
    for n in args.sizes:
        a64, b64 = inputs(dev, n, args.phi, args.seed)
        a32, b32 = a64.astype(np.float32), b64.astype(np.float32)
        t_nat = {"binary64": timer(lambda: native(a64, b64), args.reps),
                 "binary32": timer(lambda: native(a32, b32), args.reps)}
        refs = {}
        for base, method, contract in variants():
            if args.only and base not in args.only:
                continue
            fmt = contract.fmt.name
            a, b = (a64, b64) if fmt == "binary64" else (a32, b32)
            try:
                c, plans = ozgemm.matmul(a, b, contract=contract, return_plan=True)
            except ozgemm.ContractError as exc:
                print(f"  {base} {method} n={n}: refused: {exc}", file=sys.stderr)
                continue
            t = timer(lambda: ozgemm.matmul(a, b, contract=contract), args.reps)
            info = plans[0].info()
            ph = {}
            eng_sync = eng.synchronize
            eng_sync()
            t0 = time.perf_counter()
            p = plan_product(contract, a if dev == "gpu" or fmt == "binary32" else a.astype(np.float64),
                          b if dev == "gpu" or fmt == "binary32" else b.astype(np.float64), eng)
            eng_sync()
            ph["plan"] = time.perf_counter() - t0
            execute(p, eng, a, b, ph)
            key = (fmt, contract.bits)
            if key not in refs:
                refs[key] = block_reference(a, b, contract, args.block)
            acc = sampled_accuracy(a, b, c, contract, args.block, refs[key])
            nat = sampled_accuracy(a, b, native(a, b), contract, args.block, refs[key])
            row = {"n": n, "phi": args.phi, "seed": args.seed, "contract": base, "bits": contract.bits,
                   "method": method, "ran": info["method"], "moduli": info.get("n_moduli"),
                   "slices": info.get("slices"), "schedule": info.get("schedule"), "beta": info["beta"],
                   "int8_gemms": info["int8_gemms"] + (1 if info["method"] == "ozaki" else 0),
                   "modelled_cost": modelled_cost(plans[0]), "widened": info["widened"],
                   "s": t, "tflops": 2 * n**3 / t / 1e12, "native_s": t_nat[fmt],
                   "native_tflops": 2 * n**3 / t_nat[fmt] / 1e12, "x_native": t_nat[fmt] / t, "phases": ph,
                   "max_err_u": acc["max_err_u"], "med_err_u": acc["median_err_u"], "cr": acc["correctly_rounded"],
                   "breaches": acc["breaches"], "max_bound_ratio": acc.get("max_bound_ratio"), "native_max_err_u": nat["max_err_u"]}
            rows.append(row)
            print(f"  {base:11} {method:5} n={n}: {t * 1e3:9.2f} ms ({row['tflops']:.2f} TF) {info['method']} "
                  f"G={row['int8_gemms']} err {acc['max_err_u']:.3f}", file=sys.stderr)
            del c
            free()
        del a64, b64, a32, b32
        free()
    print(f"\nozaki_bench ({dev}) — {json.dumps(ctx)}")
    print(f"input: (rand-0.5)*exp(phi*randn), phi={args.phi}, seed={args.seed}, square n; whole call, median of "
          f"{args.reps} after warm-up; accuracy on the top-left {args.block}x{args.block} block vs the exact product, "
          "err in u*(|A||B|)_ij")
    print(f"{'contract':11} {'method':6} {'ran':5} {'n':>6} {'mod':>3} {'sl':>3} {'sched':5} {'G':>3} {'model':>6} "
          f"{'ms':>9} {'TFLOPS':>7} {'natTF':>6} {'x nat':>6} {'max err':>8} {'/bound':>7} {'CR%':>6} {'nat err':>7}  phases ms")
    for r in rows:
        ph = " ".join(f"{k}={v * 1e3:.1f}" for k, v in r["phases"].items())
        print(f"{r['contract']:11} {r['method']:6} {r['ran']:5} {r['n']:>6} {r['moduli'] or '-':>3} "
              f"{r['slices'] or '-':>3} {(r['schedule'] or '-')[:5]:5} {r['int8_gemms']:>3} {r['modelled_cost']:>6.1f} "
              f"{r['s'] * 1e3:>9.2f} {r['tflops']:>7.2f} {r['native_tflops']:>6.2f} {r['x_native']:>6.3f} "
              f"{r['max_err_u']:>8.3g} {r['max_bound_ratio'] or 0:>7.3f} {100 * r['cr']:>6.2f} {r['native_max_err_u']:>7.3f}  {ph}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"context": ctx, "args": vars(args), "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

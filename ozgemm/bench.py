"""``ozgemm bench``: speed and accuracy side by side with the native matmul (BENCHMARKING.md).

Every row carries: the device and software, the input (shape, phi, seed), the native
baseline measured in the same run, the timing scope (whole ``matmul`` call: planning, the
bound GEMM, residues, INT8 GEMMs, reconstruction and rounding; on the GPU, first-call
compilation and host<->device transfers excluded), the median of ``--reps`` repetitions
after a warm-up, and the accuracy reached in the same run on a sampled block (max / median
error in units of u (|A||B|)_ij and share correctly rounded, against the exact product).
"""
from __future__ import annotations

import json
import platform
import statistics
import sys
import time

import numpy as np

__all__ = ["register", "run_bench", "cpu_context", "sampled_accuracy", "block_reference"]


def register(sub):
    p = sub.add_parser("bench", help="time ozgemm against the native matmul (with accuracy)",
                       description=__doc__)
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    p.add_argument("--contracts", nargs="+", default=["fp64"])
    p.add_argument("--phi", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--ref-sizes", type=int, nargs="*", default=[512, 1024],
                   help="sizes at which to time the exact reference (CPU) [512 1024]")
    p.add_argument("--block", type=int, default=64, help="sampled block for the accuracy check [64]")
    p.add_argument("--json", metavar="PATH")
    p.set_defaults(func=run_bench)


def cpu_context() -> dict:
    import scipy

    model = platform.processor()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        from threadpoolctl import threadpool_info

        blas = [f"{d.get('internal_api')} {d.get('version')} ({d.get('num_threads')} threads)" for d in threadpool_info()]
    except Exception:
        blas = []
    if not blas:
        try:
            cfg = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
            blas = [f"{cfg.get('name')} {cfg.get('version')}"]
        except Exception:
            blas = []
    import os

    return {"cpu": model, "cores": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "scipy": scipy.__version__, "blas": blas}


def sampled_accuracy(a, b, c, contract, block=64, ref=None):
    """Exact error metrics of c on its top-left block x block corner.

    ``ref``: a :func:`~ozgemm.verify.audit.reference` of that corner, computed once and shared
    by the results compared in one row of the table."""
    from ._xp import to_numpy
    from .precision.contract import as_contract
    from .verify.audit import measure_any

    contract = as_contract(contract)
    c = to_numpy(c)[:block, :block]
    if ref is None:
        ref = block_reference(a, b, contract, block)
    return measure_any(c, None, None, contract, contract.fmt.name, ref)


def block_reference(a, b, contract, block=64):
    """Exact reference of the top-left block x block corner of ``a @ b``."""
    from ._xp import to_numpy
    from .precision.contract import as_contract
    from .verify.audit import reference

    return reference(to_numpy(a)[:block], to_numpy(b)[:, :block], as_contract(contract).fmt.name)


def _median_time(fn, reps, sync=lambda: None):
    fn()
    sync()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def run_bench(args) -> int:
    if args.device == "gpu":
        from .kernels.cuda_bench import run_gpu_bench  # noqa: PLC0415

        return run_gpu_bench(args)
    from .api import matmul
    from .precision.contract import as_contract
    from .verify.audit import phi_matrices
    from .verify.reference import exact_product, have_flint

    ctx = cpu_context()
    rows = []
    for name in args.contracts:
        contract = as_contract(name)
        dt = contract.fmt.dtype
        for n in args.sizes:
            a, b = phi_matrices(n, n, n, args.phi, args.seed, dt)
            c, plans = matmul(a, b, contract=contract, return_plan=True)
            t_oz = _median_time(lambda: matmul(a, b, contract=contract), args.reps)
            t_np = _median_time(lambda: np.matmul(a, b), args.reps)
            ref = block_reference(a, b, contract, args.block)
            acc_oz = sampled_accuracy(a, b, c, contract, args.block, ref)
            acc_np = sampled_accuracy(a, b, np.matmul(a, b), contract, args.block, ref)
            row = {"contract": contract.name, "n": n, "phi": args.phi, "seed": args.seed,
                   "moduli": plans[0].n_moduli, "ozgemm_s": t_oz, "numpy_s": t_np, "ratio": t_oz / t_np,
                   "ozgemm_max_err_u": acc_oz["max_err_u"], "ozgemm_median_err_u": acc_oz["median_err_u"],
                   "ozgemm_cr": acc_oz["correctly_rounded"], "ozgemm_breaches": acc_oz["breaches"],
                   "numpy_max_err_u": acc_np["max_err_u"], "numpy_median_err_u": acc_np["median_err_u"],
                   "numpy_cr": acc_np["correctly_rounded"]}
            rows.append(row)
            print(f"  {contract.name} n={n}: ozgemm {t_oz:.4f}s numpy {t_np:.4f}s", file=sys.stderr)
    refs = []
    for n in args.ref_sizes:
        a, b = phi_matrices(n, n, n, args.phi, args.seed)
        t0 = time.perf_counter()
        exact_product(a, b)
        refs.append({"n": n, "exact_reference_s": time.perf_counter() - t0,
                     "engine": "python-flint fmpz_mat" if have_flint() else "gmpy2"})
        print(f"  exact reference n={n}: {refs[-1]['exact_reference_s']:.2f}s", file=sys.stderr)
    print(f"\nozgemm bench (CPU) — {ctx['cpu']}, {ctx['cores']} cores; Python {ctx['python']}, NumPy {ctx['numpy']}, "
          f"BLAS {', '.join(ctx['blas']) or 'unknown'}")
    print(f"input: A, B = (rand-0.5)*exp(phi*randn), phi={args.phi}, seed={args.seed}, square n; timing: whole call, "
          f"median of {args.reps} after a warm-up; accuracy on the top-left {args.block}x{args.block} block vs the exact "
          "product (err in u*(|A||B|)_ij)")
    hdr = f"{'contract':10} {'n':>5} {'moduli':>6} {'ozgemm s':>9} {'numpy s':>9} {'ratio':>7} {'oz max':>7} {'oz med':>7} {'oz CR%':>7} {'np max':>7} {'np med':>7} {'np CR%':>7}"
    print(hdr)
    for r in rows:
        print(f"{r['contract']:10} {r['n']:>5} {r['moduli']:>6} {r['ozgemm_s']:>9.4f} {r['numpy_s']:>9.4f} {r['ratio']:>7.1f} "
              f"{r['ozgemm_max_err_u']:>7.3f} {r['ozgemm_median_err_u']:>7.3f} {100 * r['ozgemm_cr']:>7.2f} "
              f"{r['numpy_max_err_u']:>7.3f} {r['numpy_median_err_u']:>7.3f} {100 * r['numpy_cr']:>7.2f}")
    for r in refs:
        print(f"exact reference ({r['engine']}), n={r['n']}: {r['exact_reference_s']:.2f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"context": ctx, "rows": rows, "reference": refs}, f, indent=2)
    return 0

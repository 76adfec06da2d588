"""``ozgemm bench``: speed and accuracy side by side with the native matmul.

Every row carries: the device and software, the input (shape, phi, seed), the native
baseline measured in the same run, the timing scope (whole ``matmul`` call: planning, the
bound GEMM, residues, INT8 GEMMs, reconstruction and rounding; on the GPU, first-call
compilation and host<->device transfers excluded), the median of ``--reps`` repetitions
after a warm-up, and the accuracy reached in the same run on a sampled block (max / median
error in units of u (|A||B|)_ij and share correctly rounded, against the exact product).
A contract refused for some inputs (ContractError: the proof needs more than the contract
allows there, e.g. a fixed moduli count too small for that k) gives a "refused" row naming
the reason, a product that does not fit in memory (MemoryError) a "not measured" row; the
other rows are still measured and reported.
Exit status: 0 done, 1 no GPU for --device gpu, 2 bad arguments, 3 done, but a contract was
refused for some inputs, 4 done, but some product did not fit in memory, or the benchmark
could not run to the end.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

from .._cliargs import unmeasured, unmeasured_line, unmeasured_reason, unmeasured_row
from .._timing import median_time

__all__ = ["register", "run_bench", "cpu_context"]


def register(sub):
    p = sub.add_parser("bench", help="time ozgemm against the native matmul (with accuracy)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    p.add_argument("--contracts", nargs="+", default=["fp64"],
                   help="contract names or TOML files, each optionally with :key=value overrides "
                        "(fp64-fast:moduli=16) [fp64]")
    p.add_argument("--phi", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--ref-sizes", type=int, nargs="*", default=[512, 1024],
                   help="sizes at which to time the exact reference (CPU) [512 1024]")
    p.add_argument("--block", type=int, default=64, help="sampled block for the accuracy check [64]")
    p.add_argument("--complex", action="store_true",
                   help="complex operands (complex128, complex64 for fp32 contracts; real and imaginary parts "
                        "drawn alike); native = ZGEMM/CGEMM; errors per real and imaginary part")
    p.add_argument("--full", action="store_true",
                   help="GPU: also the max error over the whole output (ozgemm and native), against ozgemm's "
                        "dd result of the same product")
    p.add_argument("--gemmul8", metavar="SO", default=os.environ.get("OZGEMM_GEMMUL8") or None,
                   help="GPU: also time GEMMul8 (a shim library built by the user, see ozgemm.cli.peers) on the "
                        "same inputs, with the same error measures [$OZGEMM_GEMMUL8]")
    p.add_argument("--gemmul8-configs", nargs="+", metavar="CFG",
                   help="GEMMul8 configurations fN (fast, N moduli) / aN (accurate) [per dtype: "
                        "float64 f14-f16 a14-a16, float32 f6-f8 a7 a8, complex128 f15-f17 a16 a17]")
    p.add_argument("--json", metavar="PATH")
    p.set_defaults(func=run_bench)


def cpu_context() -> dict:
    try:  # optional, reported only
        import scipy
    except ImportError:
        scipy = None

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
            "numpy": np.__version__,
            "scipy": scipy.__version__ if scipy is not None else None, "blas": blas}


class _BadArgument(Exception):
    """A bad command-line argument (exit status 2)."""


def _check_args(args):
    """Every check that needs no work: sizes, counts, seed, phi, contracts, the --json path."""
    from .._cliargs import phi_seed_problem, unwritable_folder
    from ..contracts.contract import ContractError, as_contract

    for opt, vals in (("--sizes", args.sizes), ("--ref-sizes", args.ref_sizes)):
        bad = [v for v in vals if not 1 <= v <= 2**31 - 1]
        if bad:
            raise _BadArgument(f"{opt} must be integers in [1, 2**31 - 1], got {bad}")
    if args.reps < 1:
        raise _BadArgument(f"--reps must be >= 1, got {args.reps}")
    if args.block < 1:
        raise _BadArgument(f"--block must be >= 1, got {args.block}")
    problem = phi_seed_problem([args.phi], args.seed)
    if problem:
        raise _BadArgument(problem)
    for name in args.contracts:
        try:
            contract = as_contract(name)
        except ContractError as exc:
            raise _BadArgument(str(exc)) from None
        if contract.fmt.name == "binary128" and args.device == "cpu":
            from ..contracts.formats import quad_dtype

            quad_dtype()  # binary128 results on the CPU: ImportError naming the extra, before any work
    if getattr(args, "gemmul8", None) and args.device != "gpu":
        raise _BadArgument("--gemmul8 times GEMMul8 on the GPU: it needs --device gpu")
    from .peers import parse_config

    for cfg in getattr(args, "gemmul8_configs", None) or []:
        try:
            parse_config(cfg)
        except ValueError as exc:
            raise _BadArgument(str(exc)) from None
    if args.json is not None and (not args.json or os.path.isdir(args.json) or unwritable_folder(args.json)):
        raise _BadArgument(f"cannot write --json {args.json!r}: not a file path in an existing, writable folder")


def run_bench(args) -> int:
    """Run the benchmark; the exit status as the module docstring says."""
    from ..contracts.contract import ContractError

    try:
        _check_args(args)
        from ..verify.reference import _gmpy2

        _gmpy2()  # the exact reference: ImportError naming the [audit] extra, before any work
        if args.device == "gpu":
            from .._xp import gpu_available

            if not gpu_available():
                print("ozgemm bench: --device gpu needs CuPy and a CUDA GPU (none found)", file=sys.stderr)
                return 1
            from .bench_gpu import run_gpu_bench  # noqa: PLC0415

            return run_gpu_bench(args)
        return _run_cpu_bench(args)
    except (_BadArgument, ImportError, TypeError) as exc:  # ImportError: an optional package (named)
        # missing; TypeError: operands the contract does not take (e.g. --complex with fp128)
        print(f"ozgemm bench: {exc}", file=sys.stderr)
        return 2
    except ContractError as exc:  # a contract refused outside the rows (e.g. while setting up)
        print(f"ozgemm bench: refused: {exc}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # MemoryError included
        print(f"ozgemm bench: could not run to the end ({type(exc).__name__}: {exc})", file=sys.stderr)
        return 4


def _count(plan) -> str:
    """The moduli count (CRT) or the slice count (Ozaki scheme I, "<s>sl") of a plan."""
    return f"{plan.slices}sl" if plan.method == "ozaki" else str(plan.n_moduli)


def _e(x) -> str:
    """An error figure in the table's 7 columns (large ones in scientific notation)."""
    return f"{x:>7.3f}" if abs(x) < 1e4 else f"{x:>7.1e}"


def _cpu_row(contract, n, args, dt) -> dict:
    """One product's row of the CPU bench (ContractError: refused; MemoryError: did not fit)."""
    from ..api import matmul
    from ..verify.audit import block_reference, phi_matrices, sampled_accuracy
    from ..verify.inputs import complex_operands

    a, b = phi_matrices(n, n, n, args.phi, args.seed, dt)
    if args.complex:
        a, b = complex_operands(a, b, *phi_matrices(n, n, n, args.phi, args.seed + 1, dt))
    c, plans = matmul(a, b, contract=contract, return_plan=True)
    t_oz = median_time(lambda: matmul(a, b, contract=contract), args.reps)
    t_np = median_time(lambda: np.matmul(a, b), args.reps)
    ref = block_reference(a, b, contract, args.block)
    acc_oz = sampled_accuracy(a, b, c, contract, args.block, ref)
    acc_np = sampled_accuracy(a, b, np.matmul(a, b), contract, args.block, ref)
    return {"contract": contract.name, "n": n, "phi": args.phi, "seed": args.seed,
            "moduli": plans[0].n_moduli, "count": _count(plans[0]), "block": min(args.block, n), "ozgemm_s": t_oz,
            "numpy_s": t_np, "ratio": t_oz / t_np,
            "ozgemm_max_err_u": acc_oz["max_err_u"], "ozgemm_median_err_u": acc_oz["median_err_u"],
            "ozgemm_cr": acc_oz["correctly_rounded"], "ozgemm_breaches": acc_oz["breaches"],
            "numpy_max_err_u": acc_np["max_err_u"], "numpy_median_err_u": acc_np["median_err_u"],
            "numpy_cr": acc_np["correctly_rounded"]}


def _run_cpu_bench(args) -> int:
    from ..contracts.contract import ContractError, as_contract
    from ..verify.audit import phi_matrices
    from .audit import COMPLEX_PROMISE
    from ..verify.reference import exact_product, have_flint

    ctx = cpu_context()
    rows = []
    for name in args.contracts:
        contract = as_contract(name)
        dt = contract.fmt.dtype
        for n in args.sizes:
            try:
                row = _cpu_row(contract, n, args, dt)
            except (ContractError, MemoryError) as exc:  # this row refused or not measured; the others go on
                rows.append(unmeasured_row(contract, n, args.phi, args.seed, exc))
                print(f"  {contract.name} n={n}: {unmeasured_reason(rows[-1])}", file=sys.stderr)
                continue
            rows.append(row)
            print(f"  {contract.name} n={n}: ozgemm {row['ozgemm_s']:.4f}s numpy {row['numpy_s']:.4f}s", file=sys.stderr)
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
    kind = (" + i (rand-0.5)*exp(phi*randn) (seed + 1): complex, numpy = ZGEMM/CGEMM, errors per real/imaginary "
            "part: " + COMPLEX_PROMISE) if args.complex else ""
    print(f"input: A, B = (rand-0.5)*exp(phi*randn){kind}, phi={args.phi}, seed={args.seed}, square n; timing: whole call, "
          f"median of {args.reps} after a warm-up; accuracy on the top-left min({args.block}, n) square block vs the exact "
          "product (err in u*(|A||B|)_ij); count: moduli (CRT) or slices (sl, Ozaki scheme I)")
    hdr = f"{'contract':10} {'n':>5} {'count':>6} {'ozgemm s':>9} {'numpy s':>9} {'ratio':>7} {'oz max':>7} {'oz med':>7} {'oz CR%':>7} {'np max':>7} {'np med':>7} {'np CR%':>7}"
    print(hdr)
    for r in rows:
        if unmeasured(r):
            print(unmeasured_line(r))
            continue
        print(f"{r['contract']:10} {r['n']:>5} {r['count']:>6} {r['ozgemm_s']:>9.4g} {r['numpy_s']:>9.4g} {r['ratio']:>7.1f} "
              f"{_e(r['ozgemm_max_err_u'])} {_e(r['ozgemm_median_err_u'])} {100 * r['ozgemm_cr']:>7.2f} "
              f"{_e(r['numpy_max_err_u'])} {_e(r['numpy_median_err_u'])} {100 * r['numpy_cr']:>7.2f}")
    for r in refs:
        print(f"exact reference ({r['engine']}), n={r['n']}: {r['exact_reference_s']:.2f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"context": ctx, "rows": rows, "reference": refs}, f, indent=2)
    return 4 if any("failed" in r for r in rows) else 3 if any("refused" in r for r in rows) else 0

"""``ozgemm audit``: audit a contract (or any matmul's result) against the exact product."""
from __future__ import annotations

import sys

import numpy as np

from .._cliargs import fmt_num

__all__ = ["register", "run_audit"]


def register(sub):
    p = sub.add_parser(
        "audit",
        help="audit a precision contract against the exact product",
        description=(
            "Audit ozgemm's contract on standard inputs (phi-distributed matrices and Hilbert x "
            "inverse Hilbert) side by side with numpy.matmul, or audit a user's data: "
            "'ozgemm audit A.npy B.npy [--result C.npy]'. Exit status: 0 contract kept, 1 contract "
            "broken (an entry beyond the promised bound), 2 bad arguments, 3 refused (ContractError: "
            "the contract cannot be proven for these inputs), 4 the audit could not run to the end "
            "(e.g. out of memory; no verdict)."),
    )
    p.add_argument("arrays", nargs="*", metavar="A.npy B.npy", help="operands to audit (2-D .npy files)")
    p.add_argument("--result", metavar="C.npy", help="audit this result of A @ B (from any matmul) instead of ozgemm's")
    p.add_argument("--contract", default="fp64", help="contract name (fp64, fp64-fast, fp32, fp32-fast, dd, fp128, ...) or TOML file, optionally with :key=value overrides (fp64-fast:moduli=16) [fp64]")
    p.add_argument("--size", type=int, default=256, help="square size n of the standard inputs [256]")
    p.add_argument("--shape", type=int, nargs=3, metavar=("M", "K", "N"), help="shape of the standard inputs")
    p.add_argument("--phi", type=float, nargs="+", default=[0.5, 1, 2, 3], help="phi values in [0, 64]: entries (rand - 0.5) exp(phi randn) [0.5 1 2 3]")
    p.add_argument("--seed", type=int, default=0, help="random seed [0]")
    p.add_argument("--no-hilbert", action="store_true", help="skip the Hilbert x inverse Hilbert case")
    p.add_argument("--json", metavar="PATH", help="write the full report as JSON")
    p.add_argument("--plot", metavar="PATH", help="write the error-vs-moduli-count figure (PNG/PDF)")
    p.add_argument("--engine", default=None, help="engine: cpu (default), cpu-int64, cuda")
    p.add_argument("--method", choices=["crt", "ozaki", "auto", "both"], default=None,
                   help="override the contract's method: crt (Ozaki II), ozaki (Ozaki I), auto, or both "
                        "(crt and ozaki side by side; --plot then also draws error vs slice count)")
    p.add_argument("--inputs", choices=("float", "dd", "binary128", "complex"), default="float",
                   help="standard inputs as float (the contract's dtype; float64 for dd/fp128), widened "
                        "to dd / binary128 values that use the extra bits, or complex (an imaginary part "
                        "of the same distribution; errors per real and imaginary part) [float]")
    p.set_defaults(func=run_audit)


def _count(plan):
    if not plan:
        return ""
    if plan.get("method") == "ozaki":
        return f"ozaki {plan['slices']} sl {plan['schedule'][:3]}"
    return f"crt {plan['n_moduli']} mod"


#: how the promise and the error units read for complex products (README, "Complex products")
COMPLEX_PROMISE = ("complex operands: the promise holds per real and imaginary part, |A||B| read as "
                   "|Ar||Br| + |Ai||Bi| (real parts) and |Ar||Bi| + |Ai||Br| (imaginary parts); a normwise "
                   "bound's k reads 2k")


def _print_table(rows, contract, complex_=False):
    hdr = ["case", "who", "method/count", "beta", "max err", "med err", "max ulps", "CR %", "max/bound", "breaches"]
    lines = []
    for r in rows:
        s = r.summary
        if r.error:
            lines.append([r.case, r.who, "-", "-", "REFUSED (ContractError)", "", "", "", "", ""])
            continue
        lines.append([r.case, r.who,
                      _count(r.plan),
                      fmt_num(r.plan["beta"]) if r.plan else "",
                      fmt_num(s["max_err_u"]), fmt_num(s["median_err_u"]), fmt_num(s["max_ulps"]),
                      f"{100 * s['correctly_rounded']:.2f}", fmt_num(s.get("max_bound_ratio")),
                      fmt_num(s.get("breaches"))])
    w = [max(len(str(x)) for x in col) for col in zip(hdr, *lines)]
    if complex_:
        print(COMPLEX_PROMISE)
    print(f"contract {contract.name}: {contract.promise()}   (errors in units of u*(|A||B|)_ij, u = 2^-{contract.fmt.p}; "
          "max/bound = observed / promised bound; breaches counted exactly)")
    print("  ".join(h.ljust(x) for h, x in zip(hdr, w)))
    for ln in lines:
        print("  ".join(str(v).ljust(x) for v, x in zip(ln, w)))
    for r in rows:
        if r.error:
            print(f"\n{r.case}: {r.error}")


class _BadArgument(Exception):
    """A bad command-line argument (exit status 2)."""


def _load(path, name):
    try:
        x = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise _BadArgument(f"ozgemm audit: cannot read {name} from {path}: {exc}") from None
    if x.ndim != 2:
        raise _BadArgument(f"ozgemm audit: {name} ({path}) must be a 2-D array, got shape {x.shape}")
    if x.dtype.kind not in "fc":
        raise _BadArgument(f"ozgemm audit: {name} ({path}) has dtype {x.dtype}; float32/float64 or "
                           "complex64/complex128 needed")
    return x


def run_audit(args) -> int:
    """The command's exit status (see the parser's description). A failure of the audit itself
    is never reported as 1 (contract broken): it gives 4 with the error on stderr, or 2 for a
    TypeError (operands the contract does not take) and for bad options."""
    try:
        return _run_audit(args)
    except _BadArgument as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except ImportError as exc:  # an optional package missing: the message names the extra
        msg = str(exc)
        print(msg if msg.startswith("ozgemm audit") else f"ozgemm audit: {msg}", file=sys.stderr)
        return 2
    except TypeError as exc:  # operands the contract does not take (e.g. --inputs dd with fp32)
        print(f"ozgemm audit: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # MemoryError included: no verdict was reached
        print(f"ozgemm audit: the audit could not run to the end ({type(exc).__name__}: {exc}); no verdict",
              file=sys.stderr)
        return 4


def _check_args(args):
    """Raise _BadArgument for options no audit can run with (before any work)."""
    from .._cliargs import phi_seed_problem
    from ..kernels import get_backend

    if args.size < 1 or (args.shape and min(args.shape) < 1):
        raise _BadArgument("ozgemm audit: --size and --shape need positive integers")
    problem = phi_seed_problem(args.phi, args.seed)
    if problem:
        raise _BadArgument(f"ozgemm audit: {problem}")
    try:
        get_backend(args.engine)
    except ValueError as exc:
        raise _BadArgument(f"ozgemm audit: --engine {args.engine}: {exc}") from None


def _need_extra(plot=False):
    """Import what ``ozgemm audit`` needs beyond numpy; ImportError naming the [audit] extra."""
    import importlib

    for mod in ("gmpy2", "tqdm") + (("matplotlib",) if plot else ()):
        try:
            importlib.import_module(mod)
        except ImportError:
            raise ImportError(f"ozgemm audit needs {mod}: pip install 'ozgemm[audit]'") from None


def _run_audit(args) -> int:
    _need_extra(bool(args.plot))
    from tqdm import tqdm

    from ..contracts.contract import ContractError, as_contract
    from ..verify.audit import audit_case as _audit_case
    from ..verify.audit import audit_result, moduli_sweep, slices_sweep, standard_cases, to_json, widen_operand

    try:
        contract = as_contract(args.contract)
    except ContractError as exc:
        print(f"ozgemm audit: {exc}", file=sys.stderr)
        return 2
    _check_args(args)
    from .._cliargs import unwritable_folder

    for opt in ("json", "plot"):
        path = getattr(args, opt)
        d = unwritable_folder(path) if path else None
        if d:
            print(f"ozgemm audit: cannot write --{opt} {path}: folder {d} missing or not writable", file=sys.stderr)
            return 2
    dtype = contract.fmt.dtype
    method = getattr(args, "method", None)
    if method and method != "both":
        contract = contract.with_(method=method)
    contracts = [contract.with_(method="crt"), contract.with_(method="ozaki")] if method == "both" else [contract]

    def audit_case(name, a, b, contract, engine=None):  # every method of --method, numpy once
        out = []
        for i, c in enumerate(contracts):
            out += _audit_case(name, a, b, c, include_numpy=(i == len(contracts) - 1), engine=engine)
        return out

    rows = []
    if args.arrays and args.inputs != "float":
        print("ozgemm audit: --inputs widens the standard inputs only; give float .npy operands without it",
              file=sys.stderr)
        return 2
    if args.arrays:
        if len(args.arrays) != 2:
            print("ozgemm audit: give two operand files, A.npy B.npy", file=sys.stderr)
            return 2
        a = _load(args.arrays[0], "A")
        b = _load(args.arrays[1], "B")
        if a.shape[1] != b.shape[0]:
            print(f"ozgemm audit: inner dimensions differ: A {a.shape}, B {b.shape}", file=sys.stderr)
            return 2
        if args.result:
            c = _load(args.result, "C")
            if (c.dtype.kind == "c") != (a.dtype.kind == "c" or b.dtype.kind == "c"):
                raise _BadArgument(f"ozgemm audit: the result ({args.result}, {c.dtype}) and the operands "
                                   f"({a.dtype}, {b.dtype}) must be both complex or both real")
            if c.shape != (a.shape[0], b.shape[1]):
                print(f"ozgemm audit: result shape {c.shape} is not {(a.shape[0], b.shape[1])}", file=sys.stderr)
                return 2
            if c.dtype != (dtype if dtype is not None else np.float64):
                print(f"note: result dtype {c.dtype} measured against contract {contract.name}'s format "
                      f"{contract.fmt.name} (errors in its units)", file=sys.stderr)
            rows.append(audit_result(a, b, c, contract, name=args.result))
        else:
            wdt = dtype if dtype is not None else np.float64  # dd / fp128 results from float64 operands
            if a.dtype.kind == "c" or b.dtype.kind == "c":
                wdt = np.result_type(wdt, np.complex64)
            if a.dtype != wdt or b.dtype != wdt:
                print(f"note: operands cast to {np.dtype(wdt)} for contract {contract.name}", file=sys.stderr)
            a, b = a.astype(wdt), b.astype(wdt)
            rows += audit_case("user", a, b, contract, engine=args.engine)
        cases = [("user", a, b)]
    else:
        shape = tuple(args.shape) if args.shape else (args.size,) * 3
        cases = standard_cases(shape, tuple(args.phi), args.seed, dtype, 0 if args.no_hilbert else 10)
        if args.inputs != "float":
            cases = [(f"{name} [{args.inputs}]", widen_operand(a, args.inputs, args.seed),
                      widen_operand(b, args.inputs, args.seed + 1)) for name, a, b in cases]
        for name, a, b in tqdm(cases, desc="audit", unit="case", file=sys.stderr):
            rows += audit_case(name, a, b, contract, engine=args.engine)
    extra = {}
    if args.plot:
        sweeps = {}
        for name, a, b in tqdm(cases, desc="moduli sweep", unit="case", file=sys.stderr):
            if name.startswith("hilbert"):
                continue
            sweeps[name] = moduli_sweep(a, b, contract.with_(method="crt"), range(6, 27))
        ssweeps = {}
        if any(c.method == "ozaki" for c in contracts):
            for name, a, b in tqdm(cases, desc="slices sweep", unit="case", file=sys.stderr):
                if not name.startswith("hilbert"):
                    ssweeps[name] = slices_sweep(a, b, contract, range(2, 15))
        _plot(sweeps, rows, contract, args.plot, ssweeps)
        extra["moduli_sweep"] = sweeps
        if ssweeps:
            extra["slices_sweep"] = ssweeps
        print(f"figure written to {args.plot}", file=sys.stderr)
    _print_table(rows, contract, any(getattr(x, "dtype", np.dtype(float)).kind == "c" for _, a, b in cases for x in (a, b)))
    if args.json:
        to_json(rows, args.json, extra | {"contract": contract.name})
    broken = [r for r in rows if r.broken]
    refused = [r for r in rows if r.refused]
    if broken:
        print(f"\nCONTRACT BROKEN on {len(broken)} case(s): " + ", ".join(r.case for r in broken))
        return 1
    if refused:
        print(f"\ncontract {contract.name} REFUSED (ContractError, no result delivered) on {len(refused)} case(s): "
              + ", ".join(r.case for r in refused) + "; kept on the others")
        return 3
    print(f"\ncontract {contract.name} kept on all {len({r.case for r in rows})} case(s)")
    return 0


def _plot(sweeps, rows, contract, path, ssweeps=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if ssweeps:
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
        _plot_slices(ax2, ssweeps, rows, contract)
    else:
        fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (name, pts) in enumerate(sweeps.items()):
        if not pts:
            continue
        xs, mx, _ = zip(*pts)
        line, = ax.semilogy(xs, np.maximum(mx, 1e-3), "o-", ms=3, label=f"ozgemm {name}")
        np_row = next((r for r in rows if r.case == name and r.who.startswith("numpy")), None)
        if np_row:
            ax.axhline(max(np_row.summary["max_err_u"], 1e-3), color=line.get_color(), ls="--", lw=0.8)
        oz = next((r for r in rows if r.case == name and r.who == "ozgemm" and r.plan
                   and r.plan.get("method") == "crt"), None)
        if oz:
            ax.axvline(oz.plan["n_moduli"], color=line.get_color(), ls=":", lw=0.8)
    _bound_line(ax, contract, rows)
    ax.set_xlabel("number of moduli N (Ozaki scheme II)")
    ax.set_ylabel("max |C-AB| / (u |A||B|)")
    ax.set_title(f"contract {contract.name}: error vs moduli count\n(dashed: numpy.matmul; dotted: planner choice)", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _bound_line(ax, contract, rows):
    """The contract's |A||B| constant in units of u (sqrt(k) 2**-bits for growth "sqrt_k", k of
    the audited products)."""
    c = 2.0 ** (contract.fmt.p - contract.bits + 1)
    label = f"contract: 2^-{contract.bits - 1}|A||B| (+u|AB|)"
    if getattr(contract, "growth", "constant") == "sqrt_k":
        k = next((r.plan["shape"][1] for r in rows if r.who == "ozgemm" and r.plan and "shape" in r.plan), 1)
        c = float(np.sqrt(k)) * 2.0 ** (contract.fmt.p - contract.bits)
        label = f"contract: sqrt(k) 2^-{contract.bits}|A||B| (k = {k}; +u|AB|)"
    ax.axhline(c, color="k", lw=1, label=label)


def _plot_slices(ax, ssweeps, rows, contract):
    for name, pts in ssweeps.items():
        if not pts:
            continue
        xs, mx, _ = zip(*pts)
        line, = ax.semilogy(xs, np.maximum(mx, 1e-3), "s-", ms=3, label=f"Ozaki-I triangular {name}")
        oz = next((r for r in rows if r.case == name and r.who == "ozgemm" and r.plan
                   and r.plan.get("method") == "ozaki"), None)
        if oz:
            ax.axvline(oz.plan["slices"], color=line.get_color(), ls=":", lw=0.8)
    _bound_line(ax, contract, rows)
    ax.set_xlabel("number of INT8 slices s (Ozaki scheme I, s(s+1)/2 products)")
    ax.set_ylabel("max |C-AB| / (u |A||B|)")
    ax.set_title(f"contract {contract.name}: error vs slice count\n(dotted: planner choice)", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)

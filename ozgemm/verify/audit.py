"""The precision audit: a matmul result against the exact product, under a contract.

Standard inputs (Ozaki-scheme literature, e.g. Ozaki-Uchino-Imamura 2025, Sec. 5):
``A = (rand - 0.5) * exp(phi * randn)`` for phi in {0.5, 1, 2, 3}, and the classic
ill-conditioned pair Hilbert x inverse Hilbert (scipy.linalg.hilbert / invhilbert).
"""
from __future__ import annotations

import json
import platform
import time
from dataclasses import dataclass, field

import numpy as np

from ..precision.contract import Contract, ContractError, as_contract
from .reference import correctly_rounded, exact_product, have_flint, measure

__all__ = ["phi_matrices", "standard_cases", "audit_case", "audit_result", "AuditRow", "moduli_sweep"]


def phi_matrices(m, k, n, phi, seed, dtype=np.float64):
    """``(rand - 0.5) * exp(phi * randn)`` operands of shapes (m, k), (k, n)."""
    rng = np.random.default_rng(seed)
    a = (rng.random((m, k)) - 0.5) * np.exp(phi * rng.standard_normal((m, k)))
    b = (rng.random((k, n)) - 0.5) * np.exp(phi * rng.standard_normal((k, n)))
    return a.astype(dtype), b.astype(dtype)


def standard_cases(shape=(256, 256, 256), phis=(0.5, 1, 2, 3), seed=0, dtype=np.float64, hilbert_n=10):
    """List of (name, A, B): the phi matrices and Hilbert x inverse Hilbert."""
    import scipy.linalg as sl

    m, k, n = shape
    cases = [(f"phi={phi:g}", *phi_matrices(m, k, n, phi, seed + i, dtype)) for i, phi in enumerate(phis)]
    if hilbert_n:
        cases.append((f"hilbert({hilbert_n})@invhilbert", sl.hilbert(hilbert_n).astype(dtype),
                      sl.invhilbert(hilbert_n).astype(dtype)))
    return cases


@dataclass
class AuditRow:
    case: str
    shape: tuple
    who: str
    summary: dict = field(default_factory=dict)
    plan: dict | None = None
    error: str | None = None
    seconds: float = 0.0

    @property
    def broken(self) -> bool:
        return self.who == "ozgemm" and (self.error is not None or (self.summary.get("breaches") or 0) > 0)


def audit_case(name, a, b, contract: Contract, include_numpy=True, engine=None):
    """Audit ozgemm (and numpy's matmul, side by side) on one pair; returns AuditRows."""
    from ..api import matmul

    contract = as_contract(contract)
    fmt = contract.fmt.name
    t0 = time.perf_counter()
    ex = exact_product(a, b)
    cr = correctly_rounded(ex, fmt)
    ref_s = time.perf_counter() - t0
    rows = []
    shape = (a.shape[0], a.shape[1], b.shape[1])
    t0 = time.perf_counter()
    try:
        c, plans = matmul(a, b, contract=contract, return_plan=True, engine=engine)
        secs = time.perf_counter() - t0
        rep = measure(c, ex, contract, cr=cr, fmt_name=fmt)
        rows.append(AuditRow(name, shape, "ozgemm", rep.summary(), plans[0].info(), seconds=secs))
    except ContractError as exc:
        rows.append(AuditRow(name, shape, "ozgemm", {}, None, error=str(exc)))
    if include_numpy:
        t0 = time.perf_counter()
        c = np.matmul(a, b)
        secs = time.perf_counter() - t0
        rep = measure(c, ex, contract, cr=cr, fmt_name=fmt)
        rows.append(AuditRow(name, shape, f"numpy.matmul({a.dtype})", rep.summary(), seconds=secs))
    for r in rows:
        r.summary["reference_s"] = ref_s
    return rows


def audit_result(a, b, c, contract: Contract, name="user"):
    """Audit a given result ``c`` of ``a @ b`` (any matmul) against the exact product."""
    contract = as_contract(contract)
    ex = exact_product(a, b)
    fmt = "binary32" if np.asarray(c).dtype == np.float32 else "binary64"
    rep = measure(c, ex, contract, fmt_name=fmt)
    return AuditRow(name, (a.shape[0], a.shape[1], b.shape[1]), "given result", rep.summary())


def moduli_sweep(a, b, contract: Contract, counts):
    """Max and median error (units of u_f |A||B|) for each forced moduli count."""
    from ..kernels import get_engine
    from ..crt.scheme import execute
    from ..precision.planner import make_plan

    contract = as_contract(contract)
    eng = get_engine("cpu")
    dt = contract.fmt.dtype
    a = np.asarray(a, dtype=dt)
    b = np.asarray(b, dtype=dt)
    ex = exact_product(a, b)
    cr = correctly_rounded(ex, contract.fmt.name)
    out = []
    for nmod in counts:
        try:
            p = make_plan(contract, a.astype(np.float64) if dt == np.float64 else a,
                          b.astype(np.float64) if dt == np.float64 else b, eng, force_moduli=nmod)
        except ContractError:
            continue
        c = execute(p, eng)  # generic path from the plan's decompositions
        s = measure(c, ex, None, cr=cr, fmt_name=contract.fmt.name).summary()
        out.append((nmod, s["max_err_u"], s["median_err_u"]))
    return out


def environment() -> dict:
    import scipy

    return {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
            "cpu": platform.processor() or platform.machine(), "exact_reference": "python-flint fmpz_mat" if have_flint() else "gmpy2 mpz",
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def to_json(rows, path, extra=None):
    data = {"environment": environment(), "rows": [r.__dict__ | {"broken": r.broken} for r in rows]}
    if extra:
        data.update(extra)
    with open(path, "w") as f:
        json.dump(data, f, indent=2, default=lambda o: o if not isinstance(o, tuple) else list(o))

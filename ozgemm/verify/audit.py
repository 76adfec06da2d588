"""The precision audit: a matmul result against the exact product, under a contract.

Standard inputs (Ozaki-scheme literature, e.g. Ozaki-Uchino-Imamura 2025, Sec. 5):
``A = (rand - 0.5) * exp(phi * randn)`` for phi in {0.5, 1, 2, 3}, and the classic
ill-conditioned pair Hilbert x inverse Hilbert (built with numpy; the inverse from its exact
integer formula, rounded once).
"""
from __future__ import annotations

import json
import math
import platform
import time
from dataclasses import dataclass, field

import numpy as np

from ..contracts.contract import Contract, ContractError, as_contract
from .inputs import phi_operands
from .reference import correctly_rounded, exact_product, have_flint, measure

__all__ = ["phi_matrices", "standard_cases", "audit_case", "audit_result", "AuditRow", "moduli_sweep", "slices_sweep",
           "Reference", "reference", "measure_any"]


def phi_matrices(m, k, n, phi, seed, dtype=np.float64):
    """``(rand - 0.5) * exp(phi * randn)`` operands of shapes (m, k), (k, n) from ``default_rng(seed)``
    (:func:`ozgemm.verify.inputs.phi_operands`)."""
    return phi_operands(np.random.default_rng(seed), m, k, n, phi, dtype)


def standard_cases(shape=(256, 256, 256), phis=(0.5, 1, 2, 3), seed=0, dtype=np.float64, hilbert_n=10):
    """List of (name, A, B): the phi matrices and Hilbert x inverse Hilbert."""
    m, k, n = shape
    cases = [(f"phi={phi:g}", *phi_matrices(m, k, n, phi, seed + i, dtype)) for i, phi in enumerate(phis)]
    if hilbert_n:  # as scipy.linalg.hilbert / invhilbert (equal bits for n <= 15), without scipy
        h = np.arange(hilbert_n)
        inv = [[(-1) ** (i + j) * (i + j + 1) * math.comb(hilbert_n + i, hilbert_n - j - 1)
                * math.comb(hilbert_n + j, hilbert_n - i - 1) * math.comb(i + j, i) ** 2
                for j in range(hilbert_n)] for i in range(hilbert_n)]
        cases.append((f"hilbert({hilbert_n})@invhilbert", (1.0 / (h[:, None] + h[None, :] + 1)).astype(dtype),
                      np.array([[float(v) for v in r] for r in inv]).astype(dtype)))
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
        """A breach of the promise (a refusal by ContractError is not one)."""
        return self.who in ("ozgemm", "given result") and (self.summary.get("breaches") or 0) > 0

    @property
    def refused(self) -> bool:
        return self.error is not None


def _ieee_class(row, col):
    """Class of sum_l row[l] * col[l] when some term is non-finite, term by term in Python:
    NaN terms (NaN factor, Inf * 0), infinite terms (Inf * non-zero), finite terms ignored
    (an exact sum of finite terms is finite)."""
    pos = neg = False
    for x, y in zip(row, col):
        if math.isnan(x) or math.isnan(y):
            return math.nan
        if math.isinf(x) or math.isinf(y):
            if x == 0 or y == 0:
                return math.nan
            if (x > 0) == (y > 0):
                pos = True
            else:
                neg = True
    if pos and neg:
        return math.nan
    return math.inf if pos else -math.inf


@dataclass
class Reference:
    """Exact reference of ``a @ b`` for :func:`measure_any`, computed once per operand pair.

    rows_ok / cols_ok: rows of A / columns of B without NaN/Inf; ex, cr: exact product and its
    correct rounding on that finite block (None when the block is empty)."""

    a: np.ndarray
    b: np.ndarray
    fmt: str
    rows_ok: np.ndarray
    cols_ok: np.ndarray
    ex: object
    cr: object


def reference(a, b, fmt="binary64") -> Reference:
    """The exact :class:`Reference` of ``a @ b`` (numpy or cupy operands) in format ``fmt``."""
    from .._xp import to_numpy
    from ..contracts.formats import DD, Binary128
    from ..precision.operands import as_wide, ieee_classes, is_wide, transpose

    a, b = _real_if_complex(as_wide(a), as_wide(b))
    if is_wide(a) or is_wide(b):  # host copies; classes from the operands' proxies
        def host(x):
            if isinstance(x, DD):
                return DD(to_numpy(x.hi), to_numpy(x.lo))
            if isinstance(x, Binary128):
                return Binary128(to_numpy(x.bits))
            return to_numpy(x)

        a, b = host(a), host(b)
        pa, pb = ieee_classes(a, np), ieee_classes(b, np)
        ra = np.isfinite(pa).all(axis=1)
        cb = np.isfinite(pb).all(axis=0)
        ex = cr = None
        if ra.any() and cb.any():
            ex = exact_product(a if ra.all() else a[ra], b if cb.all() else transpose(transpose(b)[cb]))
            cr = correctly_rounded(ex, fmt)
        return Reference(pa, pb, fmt, ra, cb, ex, cr)
    a, b = to_numpy(a), to_numpy(b)
    ra = np.isfinite(a).all(axis=1)
    cb = np.isfinite(b).all(axis=0)
    ex = cr = None
    if ra.any() and cb.any():
        ex = exact_product(a[ra], b[:, cb])
        cr = correctly_rounded(ex, fmt)
    return Reference(a, b, fmt, ra, cb, ex, cr)


def widen_operand(x, kind, seed=0):
    """A float64 matrix made into a ``kind`` operand that uses the extra bits: dd
    ``DD(x, x 2**-53 r)`` and binary128 ``x + x 2**-60 r`` (r uniform in [-1/2, 1/2)), so
    products need more than binary64's precision; ``"complex"``: ``x + i y`` with y the
    entries of each row of x permuted (complex64 for float32 x). ``kind = "float"`` returns ``x``."""
    if kind == "float":
        return x
    if kind == "complex":  # imaginary part: another draw of the same distribution
        y = np.random.default_rng(seed + 7919).permuted(x, axis=1) if x.ndim == 2 else x
        return x + 1j * y
    from ..contracts.formats import DD, quad_dtype

    r = np.random.default_rng(seed).random(x.shape) - 0.5
    if kind == "dd":
        return DD(x, x * r * 2.0 ** -53)
    if kind == "binary128":
        q = quad_dtype()
        return x.astype(q) + (x * r * 2.0 ** -60).astype(q)
    raise ValueError(f"unknown input kind {kind!r}: float, dd, binary128 or complex")


def measure_any(c, a, b, contract, fmt=None, ref: Reference | None = None) -> dict:
    """Summary metrics of a result ``c`` of ``a @ b``, non-finite operands included.

    Entries fed by rows of A / columns of B holding NaN or Inf are checked by class against
    an independent term-by-term evaluation (:func:`_ieee_class`: NaN factor or Inf * 0 gives
    NaN, Inf * non-zero gives a signed infinity, +Inf meeting -Inf gives NaN; each mismatch
    counts as a breach); the finite block is measured exactly against the exact product.
    ``ref`` passes a :func:`reference` computed once for several results of the same product.
    """
    from .._xp import to_numpy

    from ..contracts.formats import DD, Binary128, is_quad_array

    if getattr(c, "dtype", np.dtype(float)).kind == "c":  # per part (see _real_operands)
        c = to_numpy(c)
        c = np.concatenate([c.real, c.imag], axis=-1).astype(np.float32 if c.dtype == np.complex64 else np.float64)
    elif isinstance(c, DD) and c.hi.dtype.kind == "c":  # a complex dd result, per part
        hi, lo = to_numpy(c.hi), to_numpy(c.lo)
        c = DD(np.concatenate([hi.real, hi.imag], axis=-1), np.concatenate([lo.real, lo.imag], axis=-1))
    if isinstance(c, Binary128):
        c = c.to_numpy()
    if isinstance(c, DD):
        c = DD(to_numpy(c.hi), to_numpy(c.lo))
        cc = c.hi  # the IEEE class of hi + lo
        fmt = fmt or "dd"
    elif is_quad_array(c):
        with np.errstate(all="ignore"):
            cc = c.astype(np.float64)  # classes of non-finite entries are kept
        fmt = fmt or "binary128"
    else:
        c = to_numpy(c)
        fmt = fmt or ("binary32" if c.dtype == np.float32 else "binary64")
        cc = c.astype(np.float64)
    if ref is None or ref.fmt != fmt:
        ref = reference(a, b, fmt)
    a, b, ra, cb = ref.a, ref.b, ref.rows_ok, ref.cols_ok
    mask = ~(ra[:, None] & cb[None, :])
    bad = np.zeros(mask.shape, dtype=bool)
    for i, j in zip(*np.nonzero(mask)):
        want = _ieee_class(a[i, :].tolist(), b[:, j].tolist())
        got = cc[i, j]
        bad[i, j] = not ((np.isnan(want) and np.isnan(got)) or want == got)
    if ref.ex is not None:
        blk = c if (ra.all() and cb.all()) else c[ra][:, cb]
        summ = measure(blk, ref.ex, contract, cr=ref.cr, fmt_name=fmt).summary()
    else:
        summ = {"max_err_u": 0.0, "median_err_u": 0.0, "max_ulps": 0.0, "median_ulps": 0.0,
                "correctly_rounded": 1.0, "max_bound_ratio": 0.0, "breaches": 0}
    if mask.any():
        summ["breaches"] = (summ.get("breaches") or 0) + int(bad.sum())
        summ["nonfinite_entries"] = int(mask.sum())
        summ["nonfinite_class_mismatches"] = int(bad.sum())
    return summ


def _real_if_complex(a, b):
    """(a, b), or for complex operands (numpy or cupy) the host real operands of
    :func:`_real_operands` (whose product is [Re | Im])."""
    from .._xp import to_numpy
    from ..precision.operands import is_wide

    if is_wide(a) or is_wide(b):
        return a, b
    if "c" in (a.dtype.kind, b.dtype.kind):
        return _real_operands(to_numpy(a), to_numpy(b))
    return a, b


def _real_operands(a, b):
    """A complex product ``a @ b`` as the real product whose result is [Re | Im]:
    [Ar, Ai] @ [[Br, Bi], [-Bi, Br]] (a real operand has zero imaginary part; float32 parts
    for complex64/float32 operands). A complex result, as [Re(c) | Im(c)], is then measured per
    real and imaginary part against the exact sums of the real products that form it and
    against |Ar||Br| + |Ai||Bi| (real parts) or |Ar||Bi| + |Ai||Br| (imaginary parts), the
    complex promise of the README's contract table; non-finite entries by the classes of those
    terms (numpy's own complex loop)."""
    ar, ai = np.real(a), np.imag(a)
    br, bi = np.real(b), np.imag(b)
    dt = np.float32 if all(x.dtype in (np.complex64, np.float32) for x in (a, b)) else np.float64
    ae = np.concatenate([ar, ai], axis=1).astype(dt)
    be = np.concatenate([np.concatenate([br, bi], axis=1), np.concatenate([-bi, br], axis=1)], axis=0).astype(dt)
    return ae, be


def _on_engine(x, engine):
    """Operand ``x`` (numpy float, DD of numpy arrays or numpy binary128) moved to the array
    library of ``engine`` (cupy arrays / DD of cupy arrays / device Binary128 for "cuda")."""
    from ..kernels import get_backend
    from ..contracts.formats import DD, Binary128, is_quad_array

    xp = np if engine is None else get_backend(engine).xp
    if xp is np:
        return x
    if isinstance(x, DD):
        return DD(xp.asarray(x.hi), xp.asarray(x.lo))
    if is_quad_array(x):
        return Binary128.from_numpy(x, device=True)
    return xp.asarray(x)


def audit_case(name, a, b, contract: Contract, include_numpy=True, engine=None):
    """Audit ozgemm (and numpy's matmul, side by side) on one pair; returns AuditRows."""
    from ..api import matmul

    contract = as_contract(contract)
    fmt = contract.fmt.name
    ref = reference(a, b, fmt)  # one exact product for both rows
    rows = []
    shape = (a.shape[0], a.shape[1], b.shape[1])
    from ..contracts.formats import DD

    da, db = _on_engine(a, engine), _on_engine(b, engine)
    t0 = time.perf_counter()
    try:
        c, plans = matmul(da, db, contract=contract, return_plan=True, engine=engine)
        secs = time.perf_counter() - t0
        rows.append(AuditRow(name, shape, "ozgemm", measure_any(c, a, b, contract, fmt, ref), plans[0].info(),
                             seconds=secs))
    except ContractError as exc:
        rows.append(AuditRow(name, shape, "ozgemm", {}, None, error=str(exc)))
    if include_numpy:  # the peer: numpy's matmul on the same values (hi parts for dd inputs)
        pa = a.hi if isinstance(a, DD) else a
        pb = b.hi if isinstance(b, DD) else b
        t0 = time.perf_counter()
        with np.errstate(invalid="ignore", over="ignore"):
            c = np.matmul(pa, pb)
        secs = time.perf_counter() - t0
        label = f"numpy.matmul({'quad' if 'Quad' in str(pa.dtype) else pa.dtype}{', hi' if pa is not a else ''})"
        rows.append(AuditRow(name, shape, label, measure_any(c, a, b, contract, fmt, ref), seconds=secs))
    return rows


def audit_result(a, b, c, contract: Contract, name="user"):
    """Audit a given result ``c`` of ``a @ b`` (any matmul) against the exact product, in the
    units (u, ulp, correct rounding, under/overflow allowances) of the contract's format,
    whatever ``c``'s dtype."""
    contract = as_contract(contract)
    return AuditRow(name, (a.shape[0], a.shape[1], b.shape[1]), "given result",
                    measure_any(c, a, b, contract, contract.fmt.name))


def moduli_sweep(a, b, contract: Contract, counts):
    """Max and median error (units of u_f |A||B|) for each forced moduli count (the widest
    beta each count holds; nothing proven). Operands as :func:`ozgemm.matmul` takes them
    (float, DD or binary128), finite."""
    from ..api import _plan_2d
    from ..contracts.formats import DD, quad_from_bits
    from ..kernels import get_backend
    from ..methods import execute
    from ..precision.operands import as_wide

    contract = as_contract(contract)
    eng = get_backend("cpu")
    fmt = contract.fmt.name
    a, b = _real_if_complex(as_wide(a), as_wide(b))  # complex: the embedding's product, per part
    ref = reference(a, b, fmt)
    out = []
    for nmod in counts:
        try:
            _, _, a0, b0, _, _, p = _plan_2d(a, b, contract.with_(method="crt"), eng, force=nmod)
        except ContractError:
            continue
        c = execute(p, eng, a0, b0)
        if fmt == "dd":
            c = DD(c[0], c[1])
        elif fmt == "binary128":
            c = quad_from_bits(c)
        s = measure(c, ref.ex, None, cr=ref.cr, fmt_name=fmt).summary()
        out.append((nmod, s["max_err_u"], s["median_err_u"]))
    return out


def slices_sweep(a, b, contract: Contract, counts, schedule="triangular"):
    """Max and median error (units of u_f |A||B|) of Ozaki scheme I for each forced slice count
    (``schedule`` "triangular" or "full"; the widest beta the slices hold; nothing proven)."""
    from ..kernels import get_backend
    from ..methods import execute, plan_product

    contract = as_contract(contract).with_(method="ozaki", schedule=schedule)
    eng = get_backend("cpu")
    dt = contract.fmt.dtype
    a, b = _real_if_complex(a, b)
    a = np.asarray(a, dtype=dt)
    b = np.asarray(b, dtype=dt)
    ref = reference(a, b, contract.fmt.name)
    out = []
    for s in counts:
        a1 = a.astype(np.float64) if dt == np.float64 else a
        b1 = b.astype(np.float64) if dt == np.float64 else b
        c = execute(plan_product(contract, a1, b1, eng, force=s), eng, a1, b1)
        m = measure(c, ref.ex, None, cr=ref.cr, fmt_name=contract.fmt.name).summary()
        out.append((s, m["max_err_u"], m["median_err_u"]))
    return out


def environment() -> dict:
    try:  # optional, reported only (the audit does not use it)
        import scipy
    except ImportError:
        scipy = None

    return {"python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__ if scipy is not None else None,
            "cpu": platform.processor() or platform.machine(), "exact_reference": "python-flint fmpz_mat" if have_flint() else "gmpy2 mpz",
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def to_json(rows, path, extra=None):
    data = {"environment": environment(),
            "rows": [r.__dict__ | {"broken": r.broken, "refused": r.refused} for r in rows]}
    if extra:
        data.update(extra)
    def plain(o):  # strict JSON: non-finite floats as the strings "inf", "-inf", "nan"
        if isinstance(o, float) and not math.isfinite(o):
            return str(o)
        if isinstance(o, dict):
            return {k: plain(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [plain(v) for v in o]
        return o

    with open(path, "w") as f:
        json.dump(plain(data), f, indent=2, allow_nan=False)


def sampled_accuracy(a, b, c, contract, block=64, ref=None):
    """Exact error metrics of c on its top-left block x block corner.

    ``ref``: a :func:`~ozgemm.verify.audit.reference` of that corner, computed once and shared
    by the results compared in one row of the table."""
    from .._xp import to_numpy
    from ..contracts.formats import DD, Binary128

    contract = as_contract(contract)
    # dd / binary128 results slice as themselves (measure_any brings them to the host)
    c = c[:block, :block] if isinstance(c, (DD, Binary128)) else to_numpy(c)[:block, :block]
    if ref is None:
        ref = block_reference(a, b, contract, block)
    return measure_any(c, None, None, contract, contract.fmt.name, ref)


def block_reference(a, b, contract, block=64):
    """Exact reference of the top-left block x block corner of ``a @ b``."""
    from .._xp import to_numpy

    return reference(to_numpy(a)[:block], to_numpy(b)[:, :block], as_contract(contract).fmt.name)

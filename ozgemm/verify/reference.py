"""Exact reference products and error metrics — never borrowing the fast path's precision.

The inputs are turned into integers independently of the fast path (``float.as_integer_ratio``
per entry, a common power-of-two denominator per row of A / column of B) and multiplied
exactly: python-flint ``fmpz_mat`` when installed (multimodular, fast), else gmpy2 ``mpz``
object arrays (slow; for small sizes). Correct rounding uses gmpy2's IEEE contexts
(``gmpy2.ieee(64)`` / ``ieee(32)``, subnormals included) on exact rationals; errors are exact
rationals, reported as float64.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
import math

import gmpy2
import numpy as np

__all__ = ["ExactProduct", "exact_product", "correctly_rounded", "have_flint", "ErrorReport", "measure"]

try:  # optional fast exact integer matrices
    import flint  # type: ignore

    _HAVE_FLINT = True
except Exception:  # pragma: no cover
    flint = None
    _HAVE_FLINT = False


def have_flint() -> bool:
    """Whether python-flint is importable (the fast exact reference)."""
    return _HAVE_FLINT


def _to_int_rows(x: np.ndarray):
    """Rows of a finite float matrix as (list of int rows, list of row exponents e_i):
    x_il = X_il * 2**e_i exactly."""
    rows, exps = [], []
    for r in np.asarray(x, dtype=np.float64).tolist():
        ratios = [v.as_integer_ratio() for v in r]
        if not ratios:
            rows.append([]), exps.append(0)
            continue
        den = max(d for _, d in ratios)  # dens are powers of two
        e = -(den.bit_length() - 1)
        rows.append([nu * (den // d) for nu, d in ratios])
        exps.append(e)
    return rows, exps


def _int_matmul(A, B, m, k, n):
    if m == 0 or n == 0:
        return [[0] * n for _ in range(m)]
    if k == 0:
        return [[0] * n for _ in range(m)]
    if _HAVE_FLINT:
        C = flint.fmpz_mat(A) * flint.fmpz_mat(B)
        vals = [int(v) for v in C.entries()]
        return [vals[i * n:(i + 1) * n] for i in range(m)]
    a = np.empty((m, k), dtype=object)
    b = np.empty((k, n), dtype=object)
    for i in range(m):
        for l in range(k):
            a[i, l] = gmpy2.mpz(A[i][l])
    for l in range(k):
        for j in range(n):
            b[l, j] = gmpy2.mpz(B[l][j])
    c = a.dot(b)
    return [[int(v) for v in row] for row in c]


@dataclass
class ExactProduct:
    """Exact AB and |A||B|: entry (i, j) equals ``X[i][j] * 2**(ea[i] + eb[j])``."""

    X: list
    ABS: list
    ea: list
    eb: list
    shape: tuple
    amax: list  # max_l |a_il| per row (floats, exact)
    bmax: list  # max_l |b_lj| per column

    def value(self, i, j) -> Fraction:
        return Fraction(self.X[i][j]) * Fraction(2) ** (self.ea[i] + self.eb[j])

    def abs_value(self, i, j) -> Fraction:
        return Fraction(self.ABS[i][j]) * Fraction(2) ** (self.ea[i] + self.eb[j])


def exact_product(a, b) -> ExactProduct:
    """Exact ``a @ b`` and ``|a| @ |b|`` of finite 2-D float arrays (numpy; cupy is copied).

    Raises ValueError for non-finite entries or mismatched shapes.
    """
    from .._xp import to_numpy

    a = to_numpy(a)
    b = to_numpy(b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"exact_product needs (m,k) and (k,n) matrices, got {a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("exact_product needs finite inputs")
    m, k = a.shape
    n = b.shape[1]
    A, ea = _to_int_rows(a)
    Bt, eb = _to_int_rows(b.T)
    B = [list(col) for col in zip(*Bt)] if k and n else [[0] * n for _ in range(k)]
    X = _int_matmul(A, B, m, k, n)
    ABS = _int_matmul([[abs(v) for v in r] for r in A], [[abs(v) for v in r] for r in B], m, k, n)
    amax = np.abs(a).max(axis=1).tolist() if k else [0.0] * m
    bmax = np.abs(b).max(axis=0).tolist() if k else [0.0] * n
    return ExactProduct(X=X, ABS=ABS, ea=ea, eb=eb, shape=(m, k, n), amax=amax, bmax=bmax)


_CTX = {"binary64": 64, "binary32": 32}


def correctly_rounded(ex: ExactProduct, fmt_name: str = "binary64") -> np.ndarray:
    """The correctly rounded (nearest-even, gradual underflow, overflow to inf) exact product."""
    m, _, n = ex.shape
    dtype = np.float64 if fmt_name == "binary64" else np.float32
    out = np.empty((m, n), dtype=dtype)
    with gmpy2.ieee(_CTX[fmt_name]):
        for i in range(m):
            for j in range(n):
                e = ex.ea[i] + ex.eb[j]
                x = ex.X[i][j]
                q = gmpy2.mpq(x * 2**e, 1) if e >= 0 else gmpy2.mpq(x, 2 ** (-e))
                out[i, j] = float(gmpy2.mpfr(q))
    return out


@dataclass
class ErrorReport:
    """Entrywise error metrics of a computed C against the exact product.

    err_u      : |C - AB| / (u_f (|A||B|)), float64 (m, n) (0 where |A||B| = 0 and C exact)
    ulps       : |C - RN(AB)| in units in the last place (distance in representable numbers)
    correctly_rounded : share of entries equal to RN(AB)
    bound_ratio: |C - AB| / promised bound (contract), float64 (m, n)
    breaches   : number of entries with |C - AB| > promised bound (exact rational compare)
    """

    err_u: np.ndarray
    ulps: np.ndarray
    correctly_rounded: float
    bound_ratio: np.ndarray | None
    breaches: int | None

    def summary(self) -> dict:
        def st(x):
            x = x[np.isfinite(x)] if x is not None else None
            return (float(x.max()) if x is not None and x.size else 0.0,
                    float(np.median(x)) if x is not None and x.size else 0.0)

        emax, emed = st(self.err_u)
        umax, umed = st(self.ulps.astype(np.float64))
        out = {"max_err_u": emax, "median_err_u": emed, "max_ulps": umax, "median_ulps": umed,
               "correctly_rounded": self.correctly_rounded}
        if self.bound_ratio is not None:
            out["max_bound_ratio"] = st(self.bound_ratio)[0]
            out["breaches"] = self.breaches
        return out


def _ordinal(x: np.ndarray) -> np.ndarray:
    """Map floats to integers so that adjacent floats differ by 1 (for ulp distances)."""
    if x.dtype == np.float64:
        i = x.view(np.int64).astype(object)
        return np.where(i < 0, -(i & 0x7FFFFFFFFFFFFFFF), i)
    i = x.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def _ratio(n_int: int, n_exp: int, d_int: int, d_exp: int) -> float:
    """float((n_int 2**n_exp) / (d_int 2**d_exp)) for n_int >= 0, d_int > 0 (inf on overflow)."""
    if n_int == 0:
        return 0.0
    sh = n_exp - d_exp
    try:
        if sh >= 0:
            return (n_int << sh) / d_int if sh < 4096 else math.inf
        return n_int / (d_int << -sh) if -sh < 4096 else 0.0
    except OverflowError:
        return math.inf


def measure(c, ex: ExactProduct, contract=None, cr=None, fmt_name=None) -> ErrorReport:
    """Error metrics of ``c`` (m, n) against the exact product ``ex``.

    All comparisons are exact integer arithmetic; ratios are rounded to float64 only for
    reporting. ``contract`` (optional) adds the promised-bound ratio and the exact breach
    count (``|C - AB| > bound``, with half the smallest subnormal allowed where |AB| is below
    the normal range, and +-inf allowed where |AB| + bound reaches the overflow threshold);
    ``cr`` may pass a precomputed correctly rounded reference.
    """
    from .._xp import to_numpy

    c = to_numpy(c)
    m, k, n = ex.shape
    if fmt_name is None:
        fmt_name = "binary32" if c.dtype == np.float32 else "binary64"
    p = 24 if fmt_name == "binary32" else 53
    emin_sub = -149 if fmt_name == "binary32" else -1074
    emin = -126 if fmt_name == "binary32" else -1022
    emax = 127 if fmt_name == "binary32" else 1023
    if cr is None:
        cr = correctly_rounded(ex, fmt_name)
    err_u = np.zeros((m, n))
    ratio = np.zeros((m, n)) if contract is not None else None
    breaches = 0
    normwise = contract is not None and contract.bound_kind == "normwise"
    if normwise:
        ra = [Fraction(v) for v in ex.amax]
        cb = [Fraction(v) for v in ex.bmax]
    cl = c.astype(np.float64).tolist()
    for i in range(m):
        for j in range(n):
            cij = cl[i][j]
            e = ex.ea[i] + ex.eb[j]
            X = ex.X[i][j]
            A = ex.ABS[i][j]
            if not math.isfinite(cij):
                err_int, err_exp = None, 0
            else:
                cn, cd = cij.as_integer_ratio()
                ce = -(cd.bit_length() - 1)
                lo = min(ce, e)
                err_int = abs((cn << (ce - lo)) - (X << (e - lo)))
                err_exp = lo
            if err_int is None:
                err_u[i, j] = math.inf
            elif A == 0:
                err_u[i, j] = 0.0 if err_int == 0 else math.inf
            else:
                err_u[i, j] = _ratio(err_int, err_exp, A, e - p)
            if contract is None:
                continue
            # bound = bn * 2**be exactly (integers)
            if normwise:
                bf = Fraction(k) * ra[i] * cb[j] / 2 ** (contract.bits - 1)
                bn, bd = bf.numerator, bf.denominator
            else:
                # u|V| + 2^-(bits-1) |A||B|  in units of 2**(e - p)
                bn = abs(X) + A * 2 ** (p - contract.bits + 1)
                bd = 2 ** (p - e) if e - p < 0 else 1
                if e - p > 0:
                    bn <<= (e - p)
            # underflow allowance: half the smallest subnormal
            if abs(Fraction(X) * Fraction(2) ** e) < Fraction(2) ** emin:
                bf = Fraction(bn, bd) + Fraction(2) ** (emin_sub - 1)
                bn, bd = bf.numerator, bf.denominator
            if err_int is None:
                # +-inf is allowed where AB is within the bound of the overflow threshold
                # Omega = 2**(emax+1) - 2**(emax-p) (values >= Omega round to inf)
                omega = 2 ** (emax + 1) - 2 ** (emax - p)
                same_sign = (cij > 0 and X > 0) or (cij < 0 and X < 0)
                if same_sign and math.isinf(cij) and (abs(Fraction(X) * Fraction(2) ** e) + Fraction(bn, bd)) >= omega:
                    ratio[i, j] = 1.0
                    continue
                breaches += 1
                ratio[i, j] = math.inf
                continue
            # compare err_int * 2**err_exp > bn / bd exactly
            lhs = err_int * bd
            if err_exp >= 0:
                lhs <<= err_exp
                rhs = bn
            else:
                rhs = bn << (-err_exp)
            if lhs > rhs:
                breaches += 1
            ratio[i, j] = _ratio(lhs, 0, rhs, 0) if rhs else (0.0 if lhs == 0 else math.inf)
    ulps = np.abs(_ordinal(c.astype(cr.dtype)) - _ordinal(cr))
    ulps = np.array(ulps, dtype=np.float64)
    share = float(np.mean(c.astype(cr.dtype) == cr)) if c.size else 1.0
    return ErrorReport(err_u=err_u, ulps=ulps, correctly_rounded=share, bound_ratio=ratio,
                       breaches=breaches if contract is not None else None)

"""Exact reference products and error metrics — never borrowing the fast path's precision.

The inputs are turned into integers independently of the fast path (``float.as_integer_ratio``
per entry, a common power-of-two denominator per row of A / column of B) and multiplied
exactly: python-flint ``fmpz_mat`` when installed (multimodular, fast), else gmpy2 ``mpz``
object arrays (slow; for small sizes; Python ints without gmpy2). Correct rounding uses gmpy2's
IEEE contexts (``gmpy2.ieee(64)`` / ``ieee(32)``, subnormals included) on exact rationals; errors
are exact rationals, reported as float64.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
import math

import numpy as np

__all__ = ["ExactProduct", "exact_product", "correctly_rounded", "have_flint", "ErrorReport", "measure"]

def _flint():
    """python-flint (optional fast exact integer matrices, the [audit] extra), or None."""
    try:
        import flint  # type: ignore
    except Exception:  # pragma: no cover
        return None
    return flint


def _gmpy2(required=True):
    """gmpy2 (the [audit] extra); without it None, or ImportError naming the extra if ``required``."""
    try:
        import gmpy2
    except ImportError:
        if not required:
            return None
        raise ImportError("the exact reference (ozgemm audit / bench, ozgemm.verify) needs gmpy2: "
                          "pip install 'ozgemm[audit]'") from None
    return gmpy2


def have_flint() -> bool:
    """Whether python-flint is importable (the fast exact reference)."""
    return _flint() is not None


def _ratios(x):
    """Exact entries of a 2-D operand as nested lists of (numerator, power-of-two denominator).

    float arrays: ``float.as_integer_ratio``; :class:`~ozgemm.DD` and binary128 (numpy quad
    array or :class:`~ozgemm.Binary128`): the exact values decoded by :func:`_values`.
    Raises ValueError for non-finite entries."""
    from ..contracts.formats import DD, Binary128, is_quad_array

    if not (isinstance(x, (DD, Binary128)) or is_quad_array(x)):
        return [[v.as_integer_ratio() for v in r] for r in np.asarray(x, dtype=np.float64).tolist()]
    out = []
    for r in _values(x):
        row = []
        for cn, ce in r:
            if cn is None:
                raise ValueError("exact_product needs finite inputs")
            row.append((cn << ce, 1) if ce >= 0 else (cn, 1 << -ce))
        out.append(row)
    return out


def _to_int_rows(x):
    """Rows of a finite matrix (float, DD or binary128) as (list of int rows, list of row
    exponents e_i): x_il = X_il * 2**e_i exactly."""
    rows, exps = [], []
    for ratios in _ratios(x):
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
    flint = _flint()
    if flint is not None:
        C = flint.fmpz_mat(A) * flint.fmpz_mat(B)
        vals = [int(v) for v in C.entries()]
        return [vals[i * n:(i + 1) * n] for i in range(m)]
    gmpy2 = _gmpy2(required=False)
    mpz = gmpy2.mpz if gmpy2 is not None else int  # gmpy2 is only a speed-up here
    a = np.empty((m, k), dtype=object)
    b = np.empty((k, n), dtype=object)
    for i in range(m):
        for l in range(k):
            a[i, l] = mpz(A[i][l])
    for l in range(k):
        for j in range(n):
            b[l, j] = mpz(B[l][j])
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


def _is_quad(x):
    from ..contracts.formats import is_quad_array

    return is_quad_array(x)


def exact_product(a, b) -> ExactProduct:
    """Exact ``a @ b`` and ``|a| @ |b|`` of finite 2-D float arrays (numpy; cupy is copied).

    Raises ValueError for non-finite entries or mismatched shapes.
    """
    from .._xp import to_numpy

    from ..precision.operands import is_wide, transpose

    wide = is_wide(a) or is_wide(b) or _is_quad(a) or _is_quad(b)
    if not wide:
        a = to_numpy(a)
        b = to_numpy(b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"exact_product needs (m,k) and (k,n) matrices, got {a.shape} and {b.shape}")
    if not wide and not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("exact_product needs finite inputs")
    m, k = a.shape
    n = b.shape[1]
    A, ea = _to_int_rows(a)
    Bt, eb = _to_int_rows(transpose(b) if is_wide(b) else b.T)
    if wide:
        amax = [max((abs(Fraction(v)) * Fraction(2) ** ea[i] for v in A[i]), default=Fraction(0)) for i in range(m)]
        bmax = [max((abs(Fraction(v)) * Fraction(2) ** eb[j] for v in Bt[j]), default=Fraction(0)) for j in range(n)]
        B = [list(col) for col in zip(*Bt)] if k and n else [[0] * n for _ in range(k)]
        X = _int_matmul(A, B, m, k, n)
        ABS = _int_matmul([[abs(v) for v in r] for r in A], [[abs(v) for v in r] for r in B], m, k, n)
        return ExactProduct(X=X, ABS=ABS, ea=ea, eb=eb, shape=(m, k, n), amax=amax, bmax=bmax)
    B = [list(col) for col in zip(*Bt)] if k and n else [[0] * n for _ in range(k)]
    X = _int_matmul(A, B, m, k, n)
    ABS = _int_matmul([[abs(v) for v in r] for r in A], [[abs(v) for v in r] for r in B], m, k, n)
    amax = np.abs(a).max(axis=1).tolist() if k else [0.0] * m
    bmax = np.abs(b).max(axis=0).tolist() if k else [0.0] * n
    return ExactProduct(X=X, ABS=ABS, ea=ea, eb=eb, shape=(m, k, n), amax=amax, bmax=bmax)


_CTX = {"binary64": 64, "binary32": 32}


def _mpq(x, e):
    gmpy2 = _gmpy2()
    return gmpy2.mpq(x * 2**e, 1) if e >= 0 else gmpy2.mpq(x, 2 ** (-e))


def _quad_encode(v) -> tuple:
    """IEEE binary128 words (low, high) of a gmpy2 mpfr already rounded in ieee(128)."""
    gmpy2 = _gmpy2()
    if gmpy2.is_nan(v):
        return 0, 0x7FFF8 << 44
    neg = v < 0 or (v == 0 and gmpy2.is_signed(v))
    if gmpy2.is_infinite(v):
        return 0, (0x7FFF << 48) | (neg << 63)
    if v == 0:
        return 0, 0  # zero results are +0
    m, ex = v.as_mantissa_exp()
    m, ex = abs(int(m)), int(ex)
    sh = 113 - m.bit_length()
    m, ex = m << sh if sh >= 0 else m >> -sh, ex - sh
    if ex < -16494:  # subnormal: exact (the context already rounded)
        m, ex = m >> (-16494 - ex), -16494
    if m >> 112:
        be, frac = ex + 112 + 16383, m & ((1 << 112) - 1)
    else:
        be, frac = 0, m
    return frac & ((1 << 64) - 1), (be << 48) | (frac >> 64) | (neg << 63)


def correctly_rounded(ex: ExactProduct, fmt_name: str = "binary64"):
    """The correctly rounded (nearest-even, gradual underflow, overflow to inf) exact product.

    binary32/64: a float array; dd: :class:`~ozgemm.DD` with hi = RN(x), lo = RN(x - hi);
    binary128: a numpy quad array (gmpy2 ``ieee(128)`` context). Zero results are +0.
    Raises ImportError naming the [audit] extra without gmpy2."""
    gmpy2 = _gmpy2()
    m, _, n = ex.shape
    if fmt_name == "dd":
        from ..contracts.formats import DD

        hi = np.zeros((m, n))
        lo = np.zeros((m, n))
        with gmpy2.ieee(64):
            for i in range(m):
                for j in range(n):
                    q = _mpq(ex.X[i][j], ex.ea[i] + ex.eb[j])
                    h = float(gmpy2.mpfr(q))
                    if math.isfinite(h) and h != 0:
                        lo[i, j] = float(gmpy2.mpfr(q - gmpy2.mpq(*h.as_integer_ratio()))) + 0.0
                    hi[i, j] = h + 0.0
        return DD(hi, lo)
    if fmt_name == "binary128":
        from ..contracts.formats import quad_from_bits

        bits = np.zeros((m, n, 2), dtype=np.uint64)
        with gmpy2.context(gmpy2.ieee(128)):
            for i in range(m):
                for j in range(n):
                    bits[i, j] = _quad_encode(gmpy2.mpfr(_mpq(ex.X[i][j], ex.ea[i] + ex.eb[j])))
        return quad_from_bits(bits)
    dtype = np.float64 if fmt_name == "binary64" else np.float32
    out = np.empty((m, n), dtype=dtype)
    with gmpy2.ieee(_CTX[fmt_name]):
        for i in range(m):
            for j in range(n):
                out[i, j] = float(gmpy2.mpfr(_mpq(ex.X[i][j], ex.ea[i] + ex.eb[j])))
    return out


def _values(c):
    """Entries of a result as nested lists of ``(cn, ce)`` (value cn * 2**ce) or ``(None, s)``
    for a non-finite entry (s: +1/-1 for +-inf, 0 for NaN)."""
    from ..contracts.formats import DD, Binary128, is_quad_array, quad_to_bits
    from .._xp import to_numpy

    def fl(v):
        if not math.isfinite(v):
            return (None, 0 if math.isnan(v) else (1 if v > 0 else -1))
        cn, cd = v.as_integer_ratio()
        return (cn, -(cd.bit_length() - 1))

    if isinstance(c, DD):
        out = []
        for rh, rl in zip(to_numpy(c.hi).tolist(), to_numpy(c.lo).tolist()):
            row = []
            for h, l_ in zip(rh, rl):
                a, b = fl(h), fl(l_)
                if a[0] is None or b[0] is None:
                    row.append(a if a[0] is None else b)
                    continue
                e = min(a[1], b[1])
                row.append(((a[0] << (a[1] - e)) + (b[0] << (b[1] - e)), e))
            out.append(row)
        return out
    if is_quad_array(c) or isinstance(c, Binary128):
        bits = quad_to_bits(c) if is_quad_array(c) else to_numpy(c.bits)
        out = []
        for r in bits.tolist():
            row = []
            for lo, hi in r:
                be = (hi >> 48) & 0x7FFF
                neg = hi >> 63
                frac = ((hi & ((1 << 48) - 1)) << 64) | lo
                if be == 0x7FFF:
                    row.append((None, 0 if frac else (-1 if neg else 1)))
                    continue
                sig = frac | ((1 << 112) if be else 0)
                row.append((-sig if neg else sig, max(be, 1) - 16383 - 112))
            out.append(row)
        return out
    return [[fl(v) for v in r] for r in np.asarray(to_numpy(c), dtype=np.float64).tolist()]


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
        def st(x):  # max over every entry (inf: a non-finite result entry), median over finite ones
            if x is None or not x.size:
                return 0.0, 0.0
            fin = x[np.isfinite(x)]
            return float(np.nanmax(x)), float(np.median(fin)) if fin.size else math.inf

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

    from ..contracts.formats import FORMATS, DD, Binary128, is_quad_array

    m, k, n = ex.shape
    if fmt_name is None:
        if isinstance(c, DD):
            fmt_name = "dd"
        elif isinstance(c, Binary128) or is_quad_array(c):
            fmt_name = "binary128"
        else:
            c = to_numpy(c)
            fmt_name = "binary32" if c.dtype == np.float32 else "binary64"
    wide = fmt_name in ("dd", "binary128")
    if not wide:
        c = to_numpy(c)
    F = FORMATS[fmt_name]
    p, emin_sub, emin, emax = F.p, F.emin_sub, F.emin, F.emax
    if cr is None:
        cr = correctly_rounded(ex, fmt_name)
    err_u = np.zeros((m, n))
    ratio = np.zeros((m, n)) if contract is not None else None
    breaches = 0
    normwise = contract is not None and contract.bound_kind == "normwise"
    # growth "sqrt_k": the |A||B| term is sqrt(k) 2**-bits (|A||B|): compared exactly by squares
    sqrt_k = contract is not None and getattr(contract, "growth", "constant") == "sqrt_k"
    if normwise:
        ra = [Fraction(v) for v in ex.amax]
        cb = [Fraction(v) for v in ex.bmax]
    cl = _values(c)
    for i in range(m):
        for j in range(n):
            cn, ce = cl[i][j]
            e = ex.ea[i] + ex.eb[j]
            X = ex.X[i][j]
            A = ex.ABS[i][j]
            if cn is None:
                err_int, err_exp = None, 0
            else:
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
                # u_f|V| + 2^-(bits-1) |A||B| in units of 2**(e - P), u_f = 2^-pc of the contract's
                # format, P = max(pc, bits - 1) (integers only)
                pc = contract.fmt.p
                P = max(pc, contract.bits - 1)
                bn = abs(X) * 2 ** (P - pc) + (0 if sqrt_k else A * 2 ** (P - contract.bits + 1))
                bd = 2 ** (P - e) if e - P < 0 else 1
                if e - P > 0:
                    bn <<= (e - P)
            # underflow allowance: half the smallest subnormal
            if abs(Fraction(X) * Fraction(2) ** e) < Fraction(2) ** emin:
                bf = Fraction(bn, bd) + Fraction(2) ** (emin_sub - 1)
                bn, bd = bf.numerator, bf.denominator
            if sqrt_k:  # the bound is bn/bd + sqrt(k) s, s = 2**-bits |A||B| (exact rationals)
                s_ = Fraction(A) * Fraction(2) ** (e - contract.bits)
                fixed = Fraction(bn, bd)
                if err_int is None:
                    omega = 2 ** (emax + 1) - 2 ** (emax - min(p, 53 if fmt_name == "dd" else p))
                    gap = omega - ce * Fraction(X) * Fraction(2) ** e - fixed if ce != 0 else None
                    ok = gap is not None and (gap <= 0 or gap * gap <= k * s_ * s_)
                    breaches += not ok
                    ratio[i, j] = 1.0 if ok else math.inf
                    continue
                err_v = Fraction(err_int) * Fraction(2) ** err_exp
                d = err_v - fixed
                breaches += d > 0 and d * d > k * s_ * s_
                # reported ratio: against sqrt(k) rounded down to 2**-20 (never understated)
                tot = fixed + s_ * Fraction(math.isqrt(k << 40), 1 << 20)
                ratio[i, j] = float(err_v / tot) if tot else (0.0 if err_int == 0 else math.inf)
                continue
            if err_int is None:
                # +inf is allowed where AB + bound reaches the overflow threshold, -inf where
                # AB - bound reaches -Omega (Omega = 2**(emax+1) - 2**(emax-p): values >= Omega
                # round to inf): some value within the bound of AB rounds to that infinity
                omega = 2 ** (emax + 1) - 2 ** (emax - min(p, 53 if fmt_name == "dd" else p))
                if ce != 0 and ce * Fraction(X) * Fraction(2) ** e + Fraction(bn, bd) >= omega:  # (NaN: never)
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
    if wide:  # distance to RN(AB) in units of its ulp, exactly
        crv = _values(cr)
        ulps = np.zeros((m, n))
        same = 0
        for i in range(m):
            for j in range(n):
                (a1, e1), (a2, e2) = cl[i][j], crv[i][j]
                if a1 is None or a2 is None:
                    eq = (a1, e1) == (a2, e2)
                    ulps[i, j] = 0.0 if eq else math.inf
                    same += eq
                    continue
                lo = min(e1, e2)
                d = abs((a1 << (e1 - lo)) - (a2 << (e2 - lo)))
                same += d == 0
                top = (abs(a2).bit_length() + e2 - 1) if a2 else emin_sub + p - 1
                ue = max(top - p + 1, emin_sub)
                ulps[i, j] = _ratio(d, lo, 1, ue)
        share = same / (m * n) if m * n else 1.0
    else:
        ulps = np.abs(_ordinal(c.astype(cr.dtype)) - _ordinal(cr))
        ulps = np.array(ulps, dtype=np.float64)
        ulps[np.isnan(c)] = math.inf  # a NaN's bit pattern is no distance (cr is finite or +-inf)
        share = float(np.mean(c.astype(cr.dtype) == cr)) if c.size else 1.0
    return ErrorReport(err_u=err_u, ulps=ulps, correctly_rounded=share, bound_ratio=ratio,
                       breaches=breaches if contract is not None else None)

"""Exact input statistics the planner needs, written once against an array namespace.

Every quantity here is exact or a proven upper/lower bound; nothing is estimated.
"""
from __future__ import annotations

from dataclasses import dataclass

from .._xp import as_float64

__all__ = ["split_float", "RowStats", "row_stats", "take_rows", "twice"]

NORM_BITS = 30  # |x| 2**-E quantised up to multiples of 2**-30 for the 1-norm bound
LB_BITS = 7  # |x| quantised to 7 bits (0..127) for the lower-bound INT8 GEMM of |A||B|


def split_float(x, xp):
    """Exact decomposition ``x = mant * 2**exp`` with integer ``|mant| < 2**53``.

    Parameters
    ----------
    x : float32 or float64 array (finite)

    Returns
    -------
    mant : int64 array, ``|mant| < 2**53`` (zero for x == 0)
    exp : int64 array, the exponent of mant's last bit
    top : int64 array, frexp exponent: ``|x| < 2**top`` and ``|x| >= 2**(top-1)`` (0 for x == 0)
    """
    frac, top = xp.frexp(as_float64(x))  # exact widening (a cupy cast would flush float32 subnormals)
    mant = xp.ldexp(frac, 53).astype(xp.int64)
    top = top.astype(xp.int64)
    return mant, top - 53, top


@dataclass
class RowStats:
    """Per-row statistics of a matrix X (r x k) for the scaling x_il * 2**s_i.

    Attributes
    ----------
    mant, exp : (r, k) int64   exact decomposition (see :func:`split_float`), (C, r, k) for
                               C-component operands; None where an
                               engine with fused residue kernels computed the stats
    E : (r,) int64             |x_il| < 2**E_i for all l (0 for an all-zero row)
    width : (r,) int64         bits to hold row i exactly as integers: at integer width
                               beta (shift s_i = beta - E_i) the row is exact iff beta >= width_i
    norm1 : (r,) float64       upper bound on sum_l |x_il| * 2**-E_i (>= 0.5 for nonzero rows),
                               computed as an exact integer sum of 2**-30-ulp round-up
                               quantisations, so it is the same on every backend
    q : (r, k) int8            floor(|x_il| * 2**(7 - E_i)) in [0, 127]: a lower bound of
                               |x_il| * 2**-E_i in units of 2**-7
    zero_row : (r,) bool
    """

    mant: object
    exp: object
    E: object
    width: object
    norm1: object
    q: object
    zero_row: object
    n1_int: object = None  # (r,) int64: sum_l ceil(|x_il| 2**(30-E_i))        (norm1 = n1_int 2**-30)
    n2_int: object = None  # (r,) int64: sum_l ceil(|x_il| 2**(15-E_i))**2  (>= 2**30 sum_l x~_il**2)
    qsum: object = None  # (r,) int64: sum_l q_il (the bound GEMM's upper bound, planner._lb_upper_max)
    src: object = None  # the contiguous float64 rows the stats came from (fused engines reuse it)
    ncomp: int = 1  # components per entry (1: float32/64; 2: dd; 3: binary128 pieces)


def row_stats(x, xp) -> RowStats:
    """Compute :class:`RowStats` of a finite float array along its rows.

    ``x`` is (r, k) float32/float64, or (C, r, k) float64 holding an exact unevaluated sum
    of C components per entry (dd: hi + lo; binary128: three truncation pieces, see
    :mod:`ozgemm.precision.operands`). Components are scaled and rounded separately, so
    ``mant``/``exp`` are (C, r, k) and ``ncomp`` = C enters the planner's bounds.

    For C > 1: E and width cover every component; the 1-norm and sum-of-squares bounds add
    the components' round-up quantisations (|x| <= sum |x_c|). q is floor(|x| 2**(7-E))
    exactly, from every component: it sums floor(|x_c| 2**(7-E)) over the components and
    subtracts one where x_0 2**(7-E) is an integer and the rest has the opposite sign.
    binary128 pieces have disjoint bits and one sign, so the floors add up exactly (a
    subnormal's leading bits may lie in x_1 or x_2 with x_0 = 0); a dd ``lo`` is below
    ulp(hi)/2 <= 2**(E-53), so its floor is 0 and only the sign rule applies. q must be
    exact, not merely a lower bound: ``|x| 2**(7-E) < q + 1`` gives the bound GEMM's upper
    bound on |A~||B~| (see :func:`ozgemm.precision.planner._lb_upper_max`).
    """
    multi = x.ndim == 3
    xs = x if multi else x[None]
    C, r, k = xs.shape
    mant, exp, top = split_float(xs, xp)
    nz = mant != 0
    zero_row = ~nz.any(axis=(0, 2)) if k else xp.ones((r,), dtype=bool)
    if k:
        E = xp.where(nz, top, xp.iinfo(xp.int64).min).max(axis=(0, 2))
        E = xp.where(zero_row, 0, E)
        low = mant & (-mant)  # lowest set bit of the significand
        ctz = xp.frexp(low.astype(xp.float64))[1].astype(xp.int64) - 1
        lsb = xp.where(nz, exp + ctz, xp.iinfo(xp.int64).max).min(axis=(0, 2))
        width = xp.where(zero_row, 0, E - lsb)
    else:
        E = xp.zeros((r,), dtype=xp.int64)
        width = xp.zeros((r,), dtype=xp.int64)
    ax = xp.abs(as_float64(xs))
    # ceil(|x| 2**(30-E)) <= 2**30 is exact (ldexp by a power of two; a subnormal result rounds:
    # ceil then gives 1 >= the true value, or 0 below half the smallest subnormal, for an entry
    # under 2**-1075 of these units, which scales to the integer 0 at every width the planner
    # allows (beta <= 1000) and lies far inside the 2**-40 factor of its bound checks); the
    # int64 sum is exact and order-independent.
    if k:
        sh = (NORM_BITS - E)[None, :, None].astype(xp.int32)
        qs = xp.ceil(xp.ldexp(ax, sh)).astype(xp.int64).sum(axis=(0, 2))
        norm1 = xp.ldexp(qs.astype(xp.float64), -NORM_BITS)  # exact: qs < C k 2**30 < 2**53
        h = xp.ceil(xp.ldexp(ax, (NORM_BITS // 2 - E)[None, :, None].astype(xp.int32))).astype(xp.int64).sum(axis=0)
        n2 = (h * h).sum(axis=1)
    else:
        qs = xp.zeros((r,), dtype=xp.int64)
        n2 = xp.zeros((r,), dtype=xp.int64)
        norm1 = xp.zeros((r,), dtype=xp.float64)
    if k:
        sh7 = (LB_BITS - E)[:, None].astype(xp.int32)
        y = xp.ldexp(ax[0], sh7)
        fq = xp.floor(y)
        if C > 1:
            rest = xs[1]
            for c in range(2, C):
                rest = xp.where(rest != 0, rest, xs[c])
            opposite = ((rest < 0) & (xs[0] > 0)) | ((rest > 0) & (xs[0] < 0))  # (a product could underflow)
            fq = fq - ((fq == y) & opposite)
            for c in range(1, C):  # binary128 pieces: disjoint bits, one sign (a dd lo adds 0)
                fq = fq + xp.floor(xp.ldexp(ax[c], sh7))
        q = fq.astype(xp.int8)
    else:
        q = xp.zeros((r, 0), dtype=xp.int8)
    if not multi:
        mant, exp = mant[0], exp[0]
    return RowStats(mant=mant, exp=exp, E=E, width=width, norm1=norm1, q=q, zero_row=zero_row,
                    n1_int=qs, n2_int=n2, qsum=q.sum(axis=1, dtype=xp.int64), ncomp=C)


def _per_row(s: RowStats, f, q=None) -> RowStats:
    """``s`` with ``f`` applied to every per-row field (``q`` given: kept as that instead;
    ``mant``/``exp``/``src`` dropped)."""
    def g(x):
        return None if x is None else f(x)

    return RowStats(mant=None, exp=None, E=g(s.E), width=g(s.width), norm1=g(s.norm1),
                    q=g(s.q) if q is None else q, zero_row=g(s.zero_row), n1_int=g(s.n1_int),
                    n2_int=g(s.n2_int), qsum=g(s.qsum), src=None, ncomp=s.ncomp)


def take_rows(s: RowStats, idx) -> RowStats:
    """The statistics of the rows ``idx`` of ``s`` (a slice, e.g. the first n columns of a
    complex product's embedding, whose columns j and n + j hold the same magnitudes: views; or
    an index array of the statistics' library), ``mant``/``exp``/``src`` dropped."""
    return _per_row(s, lambda x: x[idx])


def twice(s: RowStats) -> RowStats:
    """The statistics of the rows of [X; X] from those ``s`` of X (a complex product's real
    embedding, whose columns j and n + j hold the same magnitudes): every per-row field taken
    twice, ``q`` kept for the first copy only (the complex bounds read no other),
    ``mant``/``exp``/``src`` dropped."""
    from .._xp import array_namespace

    xp = array_namespace(s.E)
    return _per_row(s, lambda x: xp.concatenate([x, x]), q=s.q)

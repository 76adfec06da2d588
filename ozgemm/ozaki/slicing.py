"""Error-free slicing of the scaled rows into signed INT8 slices (Ozaki scheme I, "splitting").

Ozaki, Ogita, Oishi, Rump, "Error-free transformations of matrix multiplication by using fast
routines of matrix multiplication and its applications", Numer. Algorithms 59 (2012): split
each row of A (column of B) into slices whose pairwise products are exact in the fast
arithmetic. Ootomo, Ozaki, Yokota (ozIMMU, 2024) and Uchino et al. do the split into INT8
slices of 7 value bits plus sign (|slice| <= 127), width capped by
``(31 - ceil(log2 k)) / 2`` so that one INT8 GEMM over the whole k stays exact in int32.

Here the slices are taken of the *integers* of the CRT planner's scaling (row i of A scaled by
``2**s_i`` and rounded to the nearest integer ``X``, ``|X| <= 2**beta``: the same
integers as Ozaki scheme II, so both methods share one proven scaling-error bound). ``X`` is
written in balanced base ``2**w`` with digits in ``[-2**(w-1), 2**(w-1) - 1]``::

    X = sum_{j=0}^{s-1} d_j 2**(w j),     w = 8:  d_j in [-128, 127]  (int8)

which is possible (and unique) exactly when ``-H <= X < 2**(w s) - H``,
``H = 2**(w-1) (2**(w s) - 1) / (2**w - 1)``; ``|X| <= 2**beta`` with ``beta <= w s - 2``
suffices. The digits are computed with integer shifts and masks only (no rounding anywhere,
hence "error-free"): the two's-complement digits ``u_j = floor(X / 2**(w j)) mod 2**w`` of
``X = V 2**D`` (V = the 53-bit significand or the rounded value, D >= 0), then the
balanced recoding bottom-up, ``t = u_j + c; d_j = t - 2**w [t >= 2**(w-1)]; c = [t >= 2**(w-1)]``.

Slice width. Every slice has ``|d| <= 128``, so every product of two slices is at most
``2**14`` in magnitude: the engines' k-blocks (<= 131071 on the GPU, <= 1024 through float32
BLAS on the CPU) keep each int32/float32 partial sum exact for any k, and the k-blocks are
added exactly in int64 by the engine. So unlike ozIMMU (one int32 accumulation over the whole
k) the slice width does not have to shrink with k here: :func:`slice_width` is 8 for every
k up to 2**40 (the int64 limit of the diagonal sums, see :mod:`ozgemm.ozaki.accumulate`);
the tests check exactness across the k = 2**17 block boundary.
"""
from __future__ import annotations

__all__ = ["slice_width", "slices_for_width", "max_width_for", "scaled_slices", "KMAX"]

#: k up to which diagonal sums of slice products stay exact in int64 (see accumulate.py):
#: a diagonal holds <= 64 products of |.| <= k 2**14, 64 k 2**14 < 2**63 for k < 2**43
KMAX = 2**40


def slice_width(k: int) -> int:
    """Value bits per INT8 slice for inner dimension ``k``: 8 (balanced digits in [-128, 127]).

    Raises ValueError for k > KMAX (2**40), where the int64 diagonal sums could overflow.
    """
    if k > KMAX:
        raise ValueError(f"ozaki: k = {k} exceeds {KMAX}; split the product along k")
    return 8


def max_width_for(n_slices: int, w: int) -> int:
    """Largest integer width beta whose integers ``|X| <= 2**beta`` fit ``n_slices`` balanced
    base-``2**w`` digits: ``w n_slices - 2``."""
    return w * n_slices - 2


def slices_for_width(beta: int, w: int) -> int:
    """Fewest slices holding every ``|X| <= 2**beta``: ``ceil((beta + 2) / w)`` (>= 1)."""
    return max(1, -(-(beta + 2) // w))


_SHIFT_CAP = 60  # |mant| < 2**53: a right shift >= 55 rounds to 0


def _scaled_integers(mant, exp, shift, xp):
    """X = round(x 2**shift) as (V, D): X = V * 2**D, D >= 0, |V| < 2**53 (round half up, the
    rounding of :func:`ozgemm.crt.residues.scaled_residues`, so both methods use the same X)."""
    d = exp + shift[:, None]
    rsh = xp.clip(-d, 1, _SHIFT_CAP)
    small = (mant + (xp.int64(1) << (rsh - 1))) >> rsh
    pos = d >= 0
    V = xp.where(pos, mant, small)
    D = xp.where(pos, d, 0)
    return V, D


def scaled_slices(mant, exp, shift, n_slices: int, w: int, xp, msb_first: bool = True):
    """INT8 slices of the scaled, rounded rows.

    Parameters
    ----------
    mant, exp : (r, k) int64     exact decomposition ``x = mant 2**exp`` of the rows
                                 (:func:`ozgemm.precision.stats.split_float`)
    shift : (r,) int64           ``s_i``: row i is scaled by ``2**s_i`` and rounded to integers
                                 ``X`` with ``|X| <= 2**(w n_slices - 2)`` (the planner's width)
    n_slices : int               s
    w : int                      value bits per slice (8)
    msb_first : bool             slice order along axis 1: most significant first (A side) or
                                 least significant first (B side, so that the slices meeting on
                                 one diagonal p + q = t are contiguous on both sides)

    Returns
    -------
    (r, s, k) int8 array ``S`` with ``X_il = sum_p S[i, p, l] 2**(w (s-1-p))`` (msb_first) or
    ``sum_j S[i, j, l] 2**(w j)``, every slice in [-2**(w-1), 2**(w-1) - 1]. Exact.
    """
    r, k = mant.shape
    V, D = _scaled_integers(mant, exp, shift, xp)
    out = xp.empty((r, n_slices, k), dtype=xp.int8)
    mask = xp.int64((1 << w) - 1)
    half = 1 << (w - 1)
    carry = xp.zeros((r, k), dtype=xp.int16)
    for j in range(n_slices):
        sh = D - w * j  # X / 2**(w j) = V 2**sh
        left = (V << xp.clip(sh, 0, w)) & mask  # sh >= w: the digit is 0 (low bits of V 2**sh)
        right = (V >> xp.clip(-sh, 0, 63)) & mask  # arithmetic shift: floor
        u = xp.where(sh >= 0, left, right).astype(xp.int16)
        t = u + carry
        carry = (t >= half).astype(xp.int16)
        dj = (t - (carry << w)).astype(xp.int8)
        out[:, j if not msb_first else n_slices - 1 - j, :] = dj
    return out

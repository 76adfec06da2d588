"""Chinese-remainder reconstruction in exact multiword integers.

:func:`crt_reconstruct` (the generic pipeline) uses the direct CRT formula through an exact
float64 GEMM; :func:`garner_digits` / :func:`mixed_radix_to_limbs` (Garner's mixed-radix
conversion, also the method of the CUDA engine's fused kernel) are kept as the independent
second algorithm the tests compare against.


Given residues c_q = C' mod m_q (0 <= c_q < m_q) of an integer C' with |C'| < M/2,
Garner's algorithm (Knuth, TAOCP vol. 2, 4.3.2; Garner 1959) gives mixed-radix digits
v_q in [0, m_q) with X = v_0 + m_0 (v_1 + m_1 (v_2 + ...)) = C' mod M, using only
small-integer arithmetic; Horner evaluation of that expression in base-2**32 limbs builds
X exactly; C' = X if 2X < M, else X - M. Vectorised over all entries (no Python loop over
matrix entries); written once against ``xp``.
"""
from __future__ import annotations

import numpy as np

from .moduli import crt_constants, garner_constants

__all__ = ["garner_digits", "mixed_radix_to_limbs", "crt_reconstruct", "reconstruct_round", "ExactSum"]

_MASK = 0xFFFFFFFF


def garner_digits(c, gc, xp):
    """Mixed-radix digits (N, ...) int64 from residues ``c`` (N, ...) int64 in [0, m_q)."""
    n = gc.n
    v = xp.empty_like(c)
    v[0] = c[0]
    for q in range(1, n):
        mq = gc.moduli[q]
        acc = v[0] * int(gc.w[0, q])
        for p in range(1, q):  # acc < q * 256 * 256 < 2**22
            acc += v[p] * int(gc.w[p, q])
        v[q] = (((c[q] - acc) % mq) * int(gc.inv[q])) % mq
    return v


def mixed_radix_to_limbs(v, gc, xp):
    """X = v_0 + m_0 (v_1 + m_1 (...)) as little-endian base-2**32 limbs, (L, ...) uint64."""
    n, L = gc.n, gc.limbs
    shape = v.shape[1:]
    acc = xp.zeros((L,) + shape, dtype=xp.uint64)
    acc[0] = v[n - 1].astype(xp.uint64)
    bits = gc.moduli[n - 1].bit_length()
    for q in range(n - 2, -1, -1):
        mq = gc.moduli[q]
        bits += mq.bit_length()
        used = min(L, (bits + 31) // 32)
        carry = v[q].astype(xp.uint64)
        for j in range(used):  # acc_j * 256 + carry < 2**41
            t = acc[j] * xp.uint64(mq) + carry
            acc[j] = t & xp.uint64(_MASK)
            carry = t >> xp.uint64(32)
    return acc


def constants_of(moduli):
    """:class:`~ozgemm.crt.moduli.GarnerConstants` of ``moduli``: a count N (the first N
    table moduli) or a tuple of moduli."""
    return garner_constants(moduli) if isinstance(moduli, (int, np.integer)) else crt_constants(tuple(moduli))


def crt_reconstruct(c, n_moduli, xp, bound=None):
    """Exact signed integers from residues (direct CRT through one exact float64 GEMM).

    Parameters
    ----------
    c : (N, ...) int64 (or float64 holding integers), residues in [0, m_q)
    n_moduli : int N (the first N table moduli) or a tuple of moduli (any pairwise-coprime
               set below 2**22, e.g. the CPU engine's :func:`~ozgemm.crt.moduli.wide_moduli`)

    bound : int, optional, |C'| < bound known (the plan's M/2 + 1): where 4 bound <= P (the
            CPU engine's :func:`~ozgemm.crt.moduli.wide_moduli`), the quotient is rounded
            instead (below)

    Returns
    -------
    mag : (L, ...) uint64 limbs (base 2**32, little-endian) of |C'| (with ``bound``: the
          limbs of 2 bound)
    neg : (...) bool, C' < 0

    Method: with e_q = (M/m_q)((M/m_q)^-1 mod m_q), Y = sum_q c_q e_q is congruent to C'
    mod M. Its digits in base 2**h (h = ``e_bits``: 32 for the 8-bit table, 16 for the CPU
    engine's moduli) are one float64 matrix product of the residues (N, R) with the base-2**h digits of
    e_q: every partial sum is below N max(m) 2**h < 2**53 (8-bit: 49 2**8 2**32 < 2**46;
    CPU engine's moduli below 2**21.5: 17 2**21.5 2**16 < 2**42), so the product is exact on any BLAS; the digits are
    recombined into base-2**32 limbs in int64 (each below N max(m) 2**33 < 2**61). The
    quotient floor(Y/M) = floor(sum_q c_q inv_q / m_q) (a sum of N positive terms below
    max(m)) is estimated in float64 (error < N**2 max(m) 2**-52 < 2**-20 for N <= 49 8-bit or 17 of the CPU engine's moduli), t0 = estimate - 1 <= floor(Y/M), so
    X = Y - t0 M lies in [0, 3M): at most two exact conditional subtractions of M give
    C' mod M, and C' = X if 2X < M, else X - M. O(N L) work per entry on the BLAS and O(L)
    integer passes, instead of Garner's O(N^2) sequential digit recurrences (same result:
    both are exact). Written once against ``xp``.

    With ``bound`` and 4 bound <= P (a product with room to spare: the 8-bit table's has none,
    P = M, so it takes the steps above): Y/P = t + C'/P with |C'/P| < 1/4, and the estimate
    errs by less than 2**-20, so t = rint(estimate) exactly; then C' = Y - t P is computed
    only modulo 2**(32 Lb), Lb the limbs of 2 bound (two's complement with arithmetic
    carries), its sign is the top bit and |C'| one negation — no comparisons with P.
    """
    import numpy as np

    gc = constants_of(n_moduli)
    N, L = gc.n, gc.limbs
    shape = c.shape[1:]
    cf = c.reshape(N, -1).astype(xp.float64, copy=False)
    Y = (xp.asarray(gc.e_parts.T) @ cf).astype(xp.int64)  # (L 32/h, R), exact: < 2**53
    sub = 32 // gc.e_bits
    if sub > 1:  # base-2**h digits -> base-2**32 limbs (unnormalised, < N max(m) 2**33)
        Yh = Y.reshape((L, sub) + Y.shape[1:])
        Y = Yh[:, 0].copy()
        for i in range(1, sub):
            Y += Yh[:, i] << (gc.e_bits * i)
    est = xp.asarray(gc.e_over_M) @ cf
    if bound is not None and 4 * int(bound) <= gc.M:
        Lb = ((2 * int(bound)).bit_length() + 31) // 32  # |C'| < bound <= 2**(32 Lb - 1); Lb <= L
        t = xp.rint(est).astype(xp.int64)  # t < N max(m): t P_j < 2**60
        Mi = [int(v) for v in gc.M_limbs]
        x = xp.empty((Lb,) + Y.shape[1:], dtype=xp.int64)
        carry = 0
        for j in range(Lb):  # (Y - t P) mod 2**(32 Lb); |terms| < 2**62, arithmetic carries
            v = Y[j] - t * Mi[j] + carry
            x[j] = v & _MASK
            carry = v >> 32
        neg = x[Lb - 1] >= (1 << 31)
        return _magnitude(x, neg, xp).reshape((Lb,) + shape), neg.reshape(shape)
    t0 = xp.maximum(xp.floor(est) - 1, 0).astype(xp.int64)
    Mi = xp.asarray(gc.M_limbs.astype(np.int64))
    x = xp.empty((L + 1,) + Y.shape[1:], dtype=xp.int64)
    carry = xp.zeros(Y.shape[1:], dtype=xp.int64)
    for j in range(L):  # Y - t0 M, limb by limb; |terms| < N max(m) 2**34 < 2**62, arithmetic carries
        v = Y[j] - t0 * Mi[j] + carry
        x[j] = v & _MASK
        carry = v >> 32
    x[L] = carry  # >= 0: X < 3M < 2**(32 L + 2)
    Mext = np.append(gc.M_limbs.astype(np.int64), 0)
    for _ in range(2):  # X >= M ? X - M : X
        ge = xp.ones(Y.shape[1:], dtype=bool)
        decided = xp.zeros(Y.shape[1:], dtype=bool)
        for j in range(L, -1, -1):
            mj = int(Mext[j])
            ge = xp.where(~decided & (x[j] != mj), x[j] > mj, ge)
            decided |= x[j] != mj
        borrow = xp.zeros(Y.shape[1:], dtype=xp.int64)
        for j in range(L + 1):
            v = x[j] - int(Mext[j]) - borrow
            borrow = (v < 0).astype(xp.int64)
            x[j] = xp.where(ge, v + (borrow << 32), x[j])
    x = x[:L].astype(xp.uint64).reshape((L,) + shape)
    # D = M - X with borrow propagation
    d = xp.empty_like(x)
    borrow = xp.zeros(shape, dtype=xp.int64)
    for j in range(L):
        t = int(gc.M_limbs[j]) - x[j].astype(xp.int64) - borrow
        borrow = (t < 0).astype(xp.int64)
        d[j] = (t + (borrow << 32)).astype(xp.uint64)
    # neg <=> X > M - X (equality impossible: |C'| < M/2)
    gt = xp.zeros(shape, dtype=bool)
    decided = xp.zeros(shape, dtype=bool)
    for j in range(L - 1, -1, -1):
        gt |= ~decided & (x[j] > d[j])
        decided |= x[j] != d[j]
    mag = xp.where(gt[None], d, x)
    return mag, gt


def _magnitude(x, neg, xp):
    """|X| as uint64 limbs from base-2**32 limbs ``x`` (L, ...) int64 of X mod 2**(32 L):
    ``x`` where X >= 0, 2**(32 L) - x = (~x) + 1 where ``neg``."""
    d = xp.empty_like(x)
    carry = 1
    for j in range(x.shape[0]):
        v = (_MASK - x[j]) + carry
        d[j] = v & _MASK
        carry = v >> 32
    return xp.where(neg[None], d, x).astype(xp.uint64)


def _storage(flat, shape, fmt):
    """The rounded values of :func:`~ozgemm.precision.rounding.round_result` (entries flat)
    in ``fmt``'s result storage for ``shape`` (dd: (2, ...); binary128: (..., 2))."""
    if fmt.name == "dd":
        return flat.reshape((2,) + tuple(shape))
    if fmt.name == "binary128":
        return flat.reshape(tuple(shape) + (2,))
    return flat.reshape(shape)


def reconstruct_round(c, n_moduli, e, fmt, xp, block: int = 1 << 15, bound=None):
    """:func:`crt_reconstruct` (``n_moduli``: a count or a tuple of moduli; ``bound``: see
    there) then the one rounding to ``fmt``
    (:func:`ozgemm.precision.rounding.round_result`) of ``c`` (N, ...) residues scaled by
    ``2**e`` (e broadcast to ``c.shape[1:]``), in blocks of ``block`` entries so that the limb
    passes stay in cache; the same bits as one pass over all entries (elementwise work).
    Returns the result storage of ``fmt`` for ``c.shape[1:]`` (dd: (2, ...); binary128:
    (..., 2))."""
    from ..precision.rounding import round_result

    shape = c.shape[1:]
    R = int(np.prod(shape, dtype=np.int64))
    cf = c.reshape(c.shape[0], R)
    ef = xp.broadcast_to(e, shape).reshape(R)
    parts = []
    for j0 in range(0, max(R, 1), block):
        j1 = min(R, j0 + block)
        mag, neg = crt_reconstruct(cf[:, j0:j1], n_moduli, xp, bound)
        parts.append(round_result(mag, neg, ef[j0:j1], fmt, xp))
    return _storage(xp.concatenate(parts, axis=1 if fmt.name == "dd" else 0), shape, fmt)


class ExactSum:
    """The exact sum, per entry of an (m, n) result, of signed multiword integers each at its
    own power-of-two scale, rounded once (the band pipeline, :mod:`ozgemm.precision.bands`).

    ``e0`` (m, n) int64 is the scale of the accumulator's unit (at most every added term's
    scale) and ``limbs`` the accumulator's length in base-2**32 limbs (room for every term and
    the carries). Terms are added with :meth:`add`; :meth:`round` normalises the carries
    (two's complement, arithmetic shifts) and rounds through
    :func:`~ozgemm.precision.rounding.round_result`. Written once against ``xp``.
    """

    def __init__(self, e0, limbs: int, xp):
        self.xp = xp
        self.shape = e0.shape
        self.e0 = e0.reshape(-1)
        self.acc = xp.zeros((limbs, self.e0.shape[0]), dtype=xp.int64)  # unnormalised 32-bit limbs

    def add(self, mag, neg, e, rows, cols):
        """Add ``(-1)**neg mag 2**e`` — ``mag`` (L, r, c) uint64 limbs, ``neg`` and ``e``
        (r, c) — at rows ``rows`` and columns ``cols`` (index arrays) of the result. Each
        limb adds less than 2**32 in magnitude to an int64 limb: exact for up to 2**30 terms."""
        xp = self.xp
        n = self.shape[1]
        L = mag.shape[0]
        idx = (rows[:, None] * n + cols[None, :]).reshape(-1)
        d = e.reshape(-1) - self.e0[idx]  # >= 0
        q = d // 32
        b = (d % 32).astype(xp.uint64)
        sign = xp.where(neg.reshape(-1), -1, 1).astype(xp.int64)
        m = mag.reshape(L, -1)
        mask = xp.uint64(_MASK)
        for j in range(L):
            low = ((m[j] << b) & mask).astype(xp.int64)
            high = (m[j] >> (xp.uint64(32) - b)).astype(xp.int64)  # b = 0: 0 (a 32-bit limb shifted by 32)
            self.acc[q + j, idx] += sign * low
            self.acc[q + j + 1, idx] += sign * high

    def round(self, fmt):
        """The correctly rounded sum in ``fmt``'s result storage (as :func:`reconstruct_round`)."""
        from ..precision.rounding import round_result

        xp = self.xp
        acc = self.acc
        L = acc.shape[0]
        carry = xp.zeros(acc.shape[1:], dtype=xp.int64)
        x = xp.empty_like(acc)
        for j in range(L):
            v = acc[j] + carry
            x[j] = v & _MASK
            carry = v >> 32
        neg = carry < 0  # the sum is x + carry 2**(32 L), carry in {-1, 0}
        return _storage(round_result(_magnitude(x, neg, xp), neg, self.e0, fmt, xp), self.shape, fmt)

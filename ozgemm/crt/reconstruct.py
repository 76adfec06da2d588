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

from .moduli import garner_constants

__all__ = ["garner_digits", "mixed_radix_to_limbs", "crt_reconstruct", "reconstruct_round"]

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


def crt_reconstruct(c, n_moduli: int, xp):
    """Exact signed integers from residues (direct CRT through one exact float64 GEMM).

    Parameters
    ----------
    c : (N, ...) int64, residues in [0, m_q) of the first N table moduli
    n_moduli : N

    Returns
    -------
    mag : (L, ...) uint64 limbs (base 2**32, little-endian) of |C'|
    neg : (...) bool, C' < 0

    Method: with e_q = (M/m_q)((M/m_q)^-1 mod m_q), Y = sum_q c_q e_q is congruent to C'
    mod M. Its base-2**32 limbs are one float64 matrix product of the residues (N, R) with
    the limbs of e_q (N, L): every partial sum is below N 2**8 2**32 <= 2**46, so the product
    is exact on any BLAS. The quotient floor(Y/M) = floor(sum_q c_q inv_q / m_q) is
    estimated in float64 (error < 2**-32 for N <= 49), t0 = estimate - 1 <= floor(Y/M), so
    X = Y - t0 M lies in [0, 3M): at most two exact conditional subtractions of M give
    C' mod M, and C' = X if 2X < M, else X - M. O(N L) work per entry on the BLAS and O(L)
    integer passes, instead of Garner's O(N^2) sequential digit recurrences (same result:
    both are exact). Written once against ``xp``.
    """
    import numpy as np

    gc = garner_constants(n_moduli)
    N, L = gc.n, gc.limbs
    shape = c.shape[1:]
    cf = c.reshape(N, -1).astype(xp.float64, copy=False)
    Y = (xp.asarray(gc.e_limbs.T) @ cf).astype(xp.int64)  # (L, R), exact: < 2**46
    est = xp.asarray(gc.e_over_M) @ cf
    t0 = xp.maximum(xp.floor(est) - 1, 0).astype(xp.int64)
    Mi = xp.asarray(gc.M_limbs.astype(np.int64))
    x = xp.empty((L + 1,) + Y.shape[1:], dtype=xp.int64)
    carry = xp.zeros(Y.shape[1:], dtype=xp.int64)
    for j in range(L):  # Y - t0 M, limb by limb; |terms| < 2**47, arithmetic carries
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


def reconstruct_round(c, n_moduli: int, e, fmt, xp, block: int = 1 << 15):
    """:func:`crt_reconstruct` then the one rounding to ``fmt``
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
        mag, neg = crt_reconstruct(cf[:, j0:j1], n_moduli, xp)
        parts.append(round_result(mag, neg, ef[j0:j1], fmt, xp))
    if fmt.name == "dd":
        return xp.concatenate(parts, axis=1).reshape((2,) + tuple(shape))
    if fmt.name == "binary128":
        return xp.concatenate(parts, axis=0).reshape(tuple(shape) + (2,))
    return xp.concatenate(parts).reshape(shape)

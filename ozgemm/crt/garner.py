"""Chinese-remainder reconstruction (Garner's algorithm) in exact multiword integers.

Given residues c_q = C' mod m_q (0 <= c_q < m_q) of an integer C' with |C'| < M/2,
Garner's algorithm (Knuth, TAOCP vol. 2, 4.3.2; Garner 1959) gives mixed-radix digits
v_q in [0, m_q) with X = v_0 + m_0 (v_1 + m_1 (v_2 + ...)) = C' mod M, using only
small-integer arithmetic; Horner evaluation of that expression in base-2**32 limbs builds
X exactly; C' = X if 2X < M, else X - M. Vectorised over all entries (no Python loop over
matrix entries); written once against ``xp``.
"""
from __future__ import annotations

from .moduli import garner_constants

__all__ = ["garner_digits", "mixed_radix_to_limbs", "crt_reconstruct"]

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
    """Exact signed integers from residues.

    Parameters
    ----------
    c : (N, ...) int64, residues in [0, m_q) of the first N table moduli
    n_moduli : N

    Returns
    -------
    mag : (L, ...) uint64 limbs (base 2**32, little-endian) of |C'|
    neg : (...) bool, C' < 0
    """
    gc = garner_constants(n_moduli)
    v = garner_digits(c, gc, xp)
    x = mixed_radix_to_limbs(v, gc, xp)
    L = gc.limbs
    # D = M - X with borrow propagation
    d = xp.empty_like(x)
    borrow = xp.zeros(x.shape[1:], dtype=xp.int64)
    for j in range(L):
        t = int(gc.M_limbs[j]) - x[j].astype(xp.int64) - borrow
        borrow = (t < 0).astype(xp.int64)
        d[j] = (t + (borrow << 32)).astype(xp.uint64)
    # neg <=> X > M - X (equality impossible: |C'| < M/2)
    gt = xp.zeros(x.shape[1:], dtype=bool)
    decided = xp.zeros(x.shape[1:], dtype=bool)
    for j in range(L - 1, -1, -1):
        gt |= ~decided & (x[j] > d[j])
        decided |= x[j] != d[j]
    mag = xp.where(gt[None], d, x)
    return mag, gt

"""The single rounding of the pipeline: exact (sign, multiword integer, 2**e) -> format.

Round to nearest, ties to even, with a sticky bit over every discarded limb; gradual
underflow (the target precision shrinks below 2**emin); overflow to +-inf when the rounded
value reaches 2**(emax+1) (IEEE 754-2019, 4.3.1 and 7.4). Vectorised against ``xp``.
"""
from __future__ import annotations

from .._xp import ignore_fp_errors

__all__ = ["round_limbs", "round_result", "empty_result", "round_limbs_dd", "round_limbs_binary128",
           "round_to_precision"]


def round_limbs(mag, neg, e, fmt, xp):
    """Correctly round ``(-1)**neg * mag * 2**e`` to ``fmt``.

    Parameters
    ----------
    mag : (L, ...) uint64     little-endian base-2**32 limbs of a non-negative integer
    neg : (...) bool
    e : (...) int64           power-of-two scale of each entry
    fmt : Format              binary64 or binary32

    Returns
    -------
    array of ``fmt.dtype``, shape ``mag.shape[1:]``. A result that rounds to zero is +0.0
    whatever its sign (numpy.matmul's accumulation from +0 gives +0 for every zero sum).

    The fast path for p <= 53 (one 64-bit window; crt.cu mirrors it): the same bits as
    :func:`round_to_precision`, which the wide formats use, in about 60 % of its time.
    """
    L = mag.shape[0]
    shape = mag.shape[1:]
    u64 = xp.uint64
    t = xp.full(shape, -1, dtype=xp.int64)
    anyb = xp.zeros((L + 1,) + shape, dtype=bool)  # anyb[j]: some limb below j is nonzero
    for j in range(L):
        nzj = mag[j] != 0
        t = xp.where(nzj, j, t)
        anyb[j + 1] = anyb[j] | nzj
    nz = t >= 0
    tt = xp.where(nz, t, 0)
    z = xp.concatenate([xp.zeros((2,) + shape, dtype=u64), mag], axis=0)
    hi = _gather(z, tt + 2, xp)
    mid = _gather(z, tt + 1, xp)
    lo = _gather(z, tt, xp)
    sticky = _gather(anyb, xp.maximum(tt - 2, 0), xp)
    b = xp.frexp(xp.maximum(hi, u64(1)).astype(xp.float64))[1].astype(xp.int64)  # bit length 1..32
    sh = (32 - b).astype(u64)
    w = (hi << (u64(32) + sh)) | (mid << sh) | (lo >> (u64(32) - sh))
    sticky = sticky | ((lo & ((u64(1) << (u64(32) - sh)) - u64(1))) != 0)
    g = 32 * (tt - 1) - (32 - b) + e  # exponent of w's last bit; value in [2**(63+g), 2**(64+g))
    qexp = xp.maximum(g + 63 - (fmt.p - 1), fmt.emin_sub)  # exponent of the result's last bit
    d = qexp - g  # bits to drop from w, >= 64 - p
    drop_all = d > 64
    dd = xp.clip(d, 1, 64).astype(u64)
    top = w >> (dd - u64(1))
    kept = top >> u64(1)
    rb = top & u64(1)
    rest = w & ((u64(1) << (dd - u64(1))) - u64(1))
    st = sticky | (rest != 0)
    up = (rb == 1) & (st | ((kept & u64(1)) == 1))
    mant = kept + up.astype(u64)
    mant = xp.where(drop_all | ~nz, u64(0), mant)
    qe = xp.clip(qexp, -3000, 3000)
    with ignore_fp_errors(xp):
        res = xp.ldexp(mant.astype(xp.float64), qe.astype(xp.int32))
        res = xp.where(neg & (mant != 0), -res, res)  # zero results are +0, as numpy.matmul gives
        if fmt.dtype != xp.float64:
            res = res.astype(fmt.dtype)
    return res


# --- wide formats (dd, binary128): the same single rounding, p up to 113 ---------------------
_M32 = 0xFFFFFFFF


def _gather(x, idx, xp):
    """``x[idx[e], e]`` for every entry e of ``x`` (L, ...) and ``idx`` (...): one take from the
    flattened limbs (measured 6x faster than ``take_along_axis`` in numpy)."""
    L = x.shape[0]
    R = idx.size
    flat = xp.ascontiguousarray(x).reshape(L * R)
    return xp.take(flat, idx.reshape(R) * R + xp.arange(R)).reshape(idx.shape)


def _shift_limbs(x, sh, width, xp):
    """``floor(X * 2**-sh)`` for base-2**32 limbs ``x`` (L, ...) uint64 and per-entry int64
    shifts ``sh`` (negative: left shift), as ``width`` limbs (bits beyond them dropped)."""
    L = x.shape[0]
    ls = sh >> 5  # floor division by 32 (arithmetic shift)
    bs = (sh & 31).astype(xp.uint64)
    out = xp.empty((width,) + x.shape[1:], dtype=xp.uint64)

    def limb(idx):  # x[idx] per entry, 0 outside 0..L-1
        v = _gather(x, xp.clip(idx, 0, L - 1), xp)
        return xp.where((idx >= 0) & (idx < L), v, xp.uint64(0))

    nxt = limb(ls)
    for j in range(width):
        lo = nxt
        nxt = limb(j + 1 + ls)
        out[j] = ((lo >> bs) | (nxt << (xp.uint64(32) - bs))) & xp.uint64(_M32)
    return out


def _bitlen_limbs(x, xp):
    """Bit length of each integer held in base-2**32 limbs ``x`` (L, ...) (0 for zero)."""
    L = x.shape[0]
    t = xp.full(x.shape[1:], -1, dtype=xp.int64)
    for j in range(L):
        t = xp.where(x[j] != 0, j, t)
    top = _gather(x, xp.maximum(t, 0), xp)
    b = xp.frexp(xp.maximum(top, xp.uint64(1)).astype(xp.float64))[1].astype(xp.int64)
    return xp.where(t >= 0, 32 * t + b, 0)


def _low_bits_nonzero(x, nb, xp):
    """Whether ``X mod 2**nb`` != 0, per entry (nb int64 >= 0)."""
    L = x.shape[0]
    anyb = xp.zeros((L + 1,) + x.shape[1:], dtype=bool)  # anyb[j]: a limb below j is nonzero
    for j in range(L):
        anyb[j + 1] = anyb[j] | (x[j] != 0)
    j0 = xp.clip(nb >> 5, 0, L)
    full = _gather(anyb, j0, xp)
    part = _gather(xp.concatenate([x, xp.zeros((1,) + x.shape[1:], dtype=xp.uint64)]), j0, xp)
    mask = (xp.uint64(1) << (nb & 31).astype(xp.uint64)) - xp.uint64(1)
    return full | ((part & mask) != 0)


def round_to_precision(mag, e, p, emin_sub, xp):
    """Round ``mag * 2**e`` (base-2**32 limbs, non-negative) to ``p`` bits, nearest-even,
    with gradual underflow at ``2**emin_sub``.

    Returns ``(mant, qexp)``: ``mant`` as ``ceil((p+1)/32) + 1`` limbs (W, ...) uint64 with
    ``mant * 2**qexp`` the rounded value, ``2**(p-1) <= mant < 2**p`` for normal results
    (``mant < 2**(p-1)`` only at ``qexp == emin_sub``), ``mant == 0`` for zero. No overflow
    handling (the encoder decides). Exact integer arithmetic only (IEEE 754-2019, 4.3.1).
    """
    W = (p + 1 + 31) // 32 + 1
    nbits = _bitlen_limbs(mag, xp)
    drop = nbits - p
    qexp = e + drop
    under = qexp < emin_sub
    drop = xp.where(under, drop + (emin_sub - qexp), drop)
    t = _shift_limbs(mag, drop - 1, W, xp)  # X >> (drop - 1): p + 1 bits (left shift if drop < 1)
    rb = t[0] & xp.uint64(1)
    sticky = _low_bits_nonzero(mag, xp.maximum(drop - 1, 0), xp)
    mant = _shift_limbs(t, xp.ones_like(drop), W, xp)
    up = (rb == 1) & (sticky | ((mant[0] & xp.uint64(1)) == 1))
    carry = up.astype(xp.uint64)
    for j in range(W):
        v = mant[j] + carry
        mant[j] = v & xp.uint64(_M32)
        carry = v >> xp.uint64(32)
    # rounding up to 2**p: renormalise to 2**(p-1), exponent + 1
    pj, pb = p // 32, p % 32
    ovf = ((mant[pj] >> xp.uint64(pb)) & xp.uint64(1)) == 1
    mant = xp.where(ovf[None], _shift_limbs(mant, xp.ones_like(drop), W, xp), mant)
    qexp = e + drop + ovf.astype(xp.int64)
    zero = nbits == 0
    mant = xp.where(zero[None], xp.uint64(0), mant)
    qexp = xp.where(zero, 0, qexp)
    return mant, qexp


def _limbs_to_float64(mant, qexp, neg, xp):
    """(-1)**neg * mant * 2**qexp as float64 for mant < 2**54 (2 limbs); exact or +-inf."""
    v = mant[0] | (mant[1] << xp.uint64(32))
    with ignore_fp_errors(xp):
        res = xp.ldexp(v.astype(xp.float64), xp.clip(qexp, -3000, 3000).astype(xp.int32))
    return xp.where(neg & (v != 0), -res, res)


def round_limbs_dd(mag, neg, e, xp):
    """Correctly rounded double-double of ``(-1)**neg * mag * 2**e``: hi = RN(x),
    lo = RN(x - hi) (binary64 rounding, gradual underflow), so ``|x - hi - lo| <= 2**-106 |x|``
    for |x| >= 2**-969 and <= 2**-1075 below; hi = +-inf (lo = 0) beyond binary64's range.

    Returns float64 (2, ...) = [hi, lo]; zero results are +0.
    """
    mant, qexp = round_to_precision(mag, e, 53, -1074, xp)
    hi = _limbs_to_float64(mant, qexp, neg, xp)
    # remainder R = X - mant 2**(qexp - e) (signed); qexp - e >= 0 wherever bits were dropped
    L = mag.shape[0]
    d = qexp - e
    m2 = _shift_limbs(mant, -xp.maximum(d, 0), L + 1, xp)
    xext = xp.concatenate([mag, xp.zeros((1,) + mag.shape[1:], dtype=xp.uint64)])
    r = xp.empty_like(xext)
    borrow = xp.zeros(mag.shape[1:], dtype=xp.uint64)
    for j in range(L + 1):
        v = xext[j] + xp.uint64(1 << 32) - m2[j] - borrow
        r[j] = v & xp.uint64(_M32)
        borrow = xp.uint64(1) - (v >> xp.uint64(32))
    rneg = borrow == 1  # X < mant 2**d: two's complement -> magnitude
    carry = rneg.astype(xp.uint64)
    for j in range(L + 1):
        v = xp.where(rneg, (r[j] ^ xp.uint64(_M32)), r[j]) + carry
        r[j] = v & xp.uint64(_M32)
        carry = xp.where(rneg, v >> xp.uint64(32), xp.uint64(0))
    r = xp.where((d < 0)[None], xp.uint64(0), r)  # no bit dropped: hi is exact
    mant2, qexp2 = round_to_precision(r, e, 53, -1074, xp)
    lo = _limbs_to_float64(mant2, qexp2, neg ^ rneg, xp)
    lo = xp.where(xp.isfinite(hi), lo, 0.0)
    return xp.stack([hi, lo])


def round_limbs_binary128(mag, neg, e, xp):
    """Correctly rounded IEEE binary128 encodings of ``(-1)**neg * mag * 2**e``
    (nearest-even, gradual underflow, overflow to +-inf), as uint64 ``(..., 2)`` words
    ``[low, high]``; zero results are +0."""
    mant, qexp = round_to_precision(mag, e, 113, -16494, xp)
    u = xp.uint64
    normal = ((mant[3] >> u(16)) & u(1)) == 1  # bit 112
    be = xp.where(normal, qexp + 112 + 16383, 0)
    inf = be >= 32767
    frac_hi = mant[2] | ((mant[3] & u(0xFFFF)) << u(32))
    lo = mant[0] | (mant[1] << u(32))
    hi = frac_hi | (xp.clip(be, 0, 32767).astype(u) << u(48))
    hi = xp.where(inf, u(0x7FFF) << u(48), hi)
    lo = xp.where(inf, u(0), lo)
    nz = (lo != 0) | (hi != 0)
    hi = hi | ((neg & nz).astype(u) << u(63))
    return xp.stack([lo, hi], axis=-1)


def empty_result(m, n, fmt, xp):
    """Uninitialised (m, n) result storage of ``fmt``: float32/float64 (m, n); dd float64
    (2, m, n) = [hi, lo]; binary128 uint64 (m, n, 2) encodings."""
    if fmt.name == "dd":
        return xp.empty((2, m, n), dtype=xp.float64)
    if fmt.name == "binary128":
        return xp.empty((m, n, 2), dtype=xp.uint64)
    return xp.empty((m, n), dtype=fmt.dtype)


def round_result(mag, neg, e, fmt, xp):
    """The single rounding to ``fmt`` (storage as in :func:`empty_result`)."""
    if fmt.name == "dd":
        return round_limbs_dd(mag, neg, e, xp)
    if fmt.name == "binary128":
        return round_limbs_binary128(mag, neg, e, xp)
    return round_limbs(mag, neg, e, fmt, xp)

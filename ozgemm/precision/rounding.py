"""The single rounding of the pipeline: exact (sign, multiword integer, 2**e) -> format.

Round to nearest, ties to even, with a sticky bit over every discarded limb; gradual
underflow (the target precision shrinks below 2**emin); overflow to +-inf when the rounded
value reaches 2**(emax+1) (IEEE 754-2019, 4.3.1 and 7.4). Vectorised against ``xp``.
"""
from __future__ import annotations

__all__ = ["round_limbs"]


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
    hi = xp.take_along_axis(z, (tt + 2)[None], axis=0)[0]
    mid = xp.take_along_axis(z, (tt + 1)[None], axis=0)[0]
    lo = xp.take_along_axis(z, tt[None], axis=0)[0]
    sticky = xp.take_along_axis(anyb, xp.maximum(tt - 2, 0)[None], axis=0)[0]
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
    with _errstate(xp):
        res = xp.ldexp(mant.astype(xp.float64), qe.astype(xp.int32))
        res = xp.where(neg & (mant != 0), -res, res)  # zero results are +0, as numpy.matmul gives
        if fmt.dtype != xp.float64:
            res = res.astype(fmt.dtype)
    return res


class _errstate:
    def __init__(self, xp):
        self.ctx = xp.errstate(over="ignore", invalid="ignore") if hasattr(xp, "errstate") else None

    def __enter__(self):
        if self.ctx is not None:
            self.ctx.__enter__()

    def __exit__(self, *a):
        if self.ctx is not None:
            self.ctx.__exit__(*a)

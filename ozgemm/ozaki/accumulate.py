"""Exact accumulation of the diagonal sums into a multiword integer, then the one rounding.

Each diagonal t of the schedule gives an exact int64 matrix ``D_t`` (the engine's GEMM of
the concatenated slices; ``|D_t| <= (#pairs) k 2**14 < 2**63`` for k <= 2**40 and at most
64 pairs). The product is ``sum_t D_t 2**o_t`` with bit offsets ``o_t = w (T_last - t)``.
Unlike ozIMMU, which adds the slice products in FP64 (and so rounds several times), the sum
is formed **exactly** in base-2**32 limbs: each ``D_t`` is split into its low 32 bits
(unsigned) and the rest (signed, ``|.| < 2**31``), both shifted by ``o_t mod 32`` (< 2**56)
and added into signed int64 limb accumulators (at most 3 T terms of < 2**56 each: no
overflow for T < 42 diagonals); one carry pass gives the two's-complement limbs, whose top
carry is the sign. The magnitude and sign then go through
:func:`ozgemm.precision.rounding.round_limbs` — the single correct rounding of the pipeline.
Written once against ``xp``.
"""
from __future__ import annotations

__all__ = ["LimbAccumulator", "round_to_format", "narrow_to_float32"]

_M32 = 0xFFFFFFFF


class LimbAccumulator:
    """Signed multiword accumulator ``sum_t D_t 2**o_t`` over an (r, n) block.

    Parameters
    ----------
    shape : (r, n)
    max_offset : int     the largest bit offset o_t that will be added
    n_terms : int        how many D_t will be added (<= 41)
    """

    def __init__(self, shape, max_offset: int, n_terms: int, xp):
        if n_terms > 41:
            raise ValueError("ozaki: more than 41 diagonals would overflow the int64 limb accumulators")
        self.xp = xp
        self.L = (max_offset + 64) // 32 + 2
        self.acc = xp.zeros((self.L,) + tuple(shape), dtype=xp.int64)

    def add(self, d, offset: int):
        """acc += d * 2**offset, exactly (``d`` int32/int64 (r, n), ``offset`` >= 0)."""
        xp = self.xp
        d = d.astype(xp.int64)  # engines may return int32 (one exact int32 k-block)
        q, sh = divmod(int(offset), 32)
        sh64 = xp.int64(sh)
        lo = (d & xp.int64(_M32)) << sh64  # < 2**56
        hi = (d >> xp.int64(32)) << sh64  # |.| < 2**55
        self.acc[q] += lo & xp.int64(_M32)
        self.acc[q + 1] += (lo >> xp.int64(32)) + hi

    def finish(self):
        """Return ``(mag, neg)``: little-endian base-2**32 limbs (L, r, n) uint64 of |sum| and
        the sign (bool (r, n))."""
        xp = self.xp
        L = self.L
        limbs = xp.empty_like(self.acc)
        carry = xp.zeros(self.acc.shape[1:], dtype=xp.int64)
        m32 = xp.int64(_M32)
        for j in range(L):
            v = self.acc[j] + carry
            limbs[j] = v & m32
            carry = v >> xp.int64(32)  # arithmetic: floor
        neg = carry < 0  # carry is 0 or -1: the value is limbs - 2**(32 L) when -1
        # two's-complement negation where negative: ~limbs + 1, carried
        c = xp.ones(carry.shape, dtype=xp.int64)
        for j in range(L):
            v = ((~limbs[j]) & m32) + c
            c = v >> xp.int64(32)
            limbs[j] = xp.where(neg, v & m32, limbs[j])
        return limbs.astype(xp.uint64), neg


class _Float64Carrier:
    """A format's rounding parameters, with float64 as the carrier dtype (for binary32 on
    CuPy: its kernels flush float32 subnormals, so the float32 store is built from bits)."""

    def __init__(self, fmt, xp):
        self._fmt = fmt
        self.dtype = xp.float64

    def __getattr__(self, name):
        return getattr(self._fmt, name)


def narrow_to_float32(x, xp):
    """Exact float64 -> float32 for values that are binary32 numbers (|x| >= 2**128 -> +-inf),
    built from the bit pattern with integer operations (no float32 arithmetic: CuPy compiles
    with -ftz=true, which would flush float32 subnormals)."""
    b = x.view(xp.uint64)
    u = xp.uint64
    sign = ((b >> u(63)) << u(31)).astype(xp.uint32)
    e = ((b >> u(52)) & u(0x7FF)).astype(xp.int64)
    f = b & u((1 << 52) - 1)
    ex = e - 1023
    normal = ((ex + 127).astype(xp.uint64) << u(23)) | (f >> u(29))
    sub_sh = xp.clip(926 - e, 0, 63).astype(xp.uint64)  # (2**52 + f) >> (926 - e) for ex in [-149, -127]
    sub = (f | u(1 << 52)) >> sub_sh
    bits = xp.where(ex >= -126, normal, sub)
    bits = xp.where(e == 0, u(0), bits)  # zero (round_limbs gives no float64 subnormals here)
    bits = xp.where(ex >= 128, u(0x7F800000), bits)  # >= 2**128 or inf
    bits = bits.astype(xp.uint32) | sign
    return bits.view(xp.float32)


def round_to_format(mag, neg, e, fmt, xp):
    """Correctly rounded ``(-1)**neg mag 2**e`` in ``fmt`` (binary64 or binary32): one call
    of :func:`ozgemm.precision.rounding.round_limbs` (binary32 carried in float64, then
    narrowed exactly)."""
    from ..precision.rounding import round_limbs

    if fmt.name == "binary64":
        return round_limbs(mag, neg, e, fmt, xp)
    wide = round_limbs(mag, neg, e, _Float64Carrier(fmt, xp), xp)
    return narrow_to_float32(xp.ascontiguousarray(wide), xp)

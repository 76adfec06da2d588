"""Compiled per-entry kernels of the CPU engine (numba: the optional ``[cpu]`` extra).

The numpy engine's reconstruction and rounding (:func:`ozgemm.crt.reconstruct.reconstruct_round`
for the blas kind's wide moduli, then :func:`ozgemm.precision.rounding.round_limbs`) runs as
about a hundred whole-array passes; here it is one pass per cache-sized chunk of entries,
the same integers and the same rounding rule, so the same bits (tested entry by entry against
the numpy code and against exact rational rounding). Imported only where numba is installed
(:func:`ozgemm.kernels.numpy.compiled_kernels`); without it, or with the environment variable
``OZGEMM_CPU_COMPILED=0``, the numpy code runs.

Method: the direct CRT of :func:`~ozgemm.crt.reconstruct.crt_reconstruct` (Y = sum_q c_q e_q
with the quotient t = rint(sum_q c_q e_q / M), exact because |C'| < P/4), here with the
digits Y_l = sum_q c_q W[q, l] summed in int64 (c_q < 2**21.5, W < 2**32, N <= 17: below
2**58), then the 64-bit-window rounding of
:func:`~ozgemm.precision.rounding.round_limbs` written as IEEE bits.
"""
from __future__ import annotations

import numpy as np
from numba import int64, njit, uint64
from numba.cpython.unsafe.numbers import leading_zeros

__all__ = ["crt_round_bits", "LMAX"]

_MASK = 0xFFFFFFFF
_CH = 1024  # entries per chunk: the chunk's limbs (LMAX x 1024 int64) stay in cache
LMAX = 16  # the most limbs a compiled variant takes


@njit(inline='always')
def _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out, LMAX):
    """Per entry r of ``c`` (N, R) float64 residues in [0, p_q): C' from the direct CRT with
    the rounded quotient (crt.reconstruct.crt_reconstruct with ``bound``, 4 bound <= P),
    then (-1)**neg |C'| 2**e[r] rounded once to p = P bits with gradual underflow at 2**EMIN
    (rounding.round_limbs: the same 64-bit window, nearest-even, zero results +0, overflow
    to inf), written as the format's IEEE bits to ``out`` (R,) uint64. W (N, Lb) int64: the
    32-bit limbs of the CRT weights e_q; eoM (N,): e_q / M; Mi (Lb,): the limbs of M. LMAX
    (a constant of each compiled wrapper, >= Lb): the limb loops of the sign and rounding
    passes run LMAX times, branch-free, so that they vectorise."""
    N, R = c.shape
    U1 = uint64(1)
    U32 = uint64(32)
    x = np.zeros((LMAX, _CH), dtype=np.int64)
    tq = np.empty(_CH, dtype=np.int64)
    y = np.empty(_CH, dtype=np.int64)
    carry = np.empty(_CH, dtype=np.int64)
    est = np.empty(_CH, dtype=np.float64)
    MBITS = P - 1
    EXPMAX = 2 * BIAS + 1
    SIGN = U1 << uint64(63 if P == 53 else 31)
    INF = uint64(EXPMAX) << uint64(MBITS)
    FIELD = (U1 << uint64(MBITS)) - U1
    for r0 in range(0, R, _CH):
        n = min(_CH, R - r0)
        for j in range(n):
            est[j] = 0.0
            carry[j] = 0
        for q in range(N):
            f = eoM[q]
            for j in range(n):
                est[j] += c[q, r0 + j] * f
        for j in range(n):
            tq[j] = int64(np.floor(est[j] + 0.5))
        for l in range(Lb):
            for j in range(n):
                y[j] = 0
            for q in range(N):
                wq = W[q, l]
                for j in range(n):
                    y[j] += int64(c[q, r0 + j]) * wq
            ml = Mi[l]
            for j in range(n):
                v = y[j] - tq[j] * ml + carry[j]
                x[l, j] = v & _MASK
                carry[j] = v >> 32
        for j in range(n):
            carry[j] = x[Lb - 1, j] >> 31
        for j in range(n):
            ng = carry[j] == 1
            cr = int64(1)
            for l in range(LMAX):
                xv = x[l, j]
                v = (_MASK - xv) + cr
                x[l, j] = (v & _MASK) if (ng and l < Lb) else xv
                cr = v >> 32
        for j in range(n):
            tt = int64(-1)
            for l in range(LMAX):
                tt = int64(l) if x[l, j] != 0 else tt
            hi = uint64(0)
            mid = uint64(0)
            lo = uint64(0)
            sticky = uint64(0)
            for l in range(LMAX):
                xv = uint64(x[l, j])
                hi = xv if int64(l) == tt else hi
                mid = xv if int64(l) == tt - 1 else mid
                lo = xv if int64(l) == tt - 2 else lo
                sticky = sticky | (xv if int64(l) < tt - 2 else uint64(0))
            nz = tt >= 0
            hi1 = hi | (uint64(0) if nz else U1)
            b = int64(64) - int64(leading_zeros(hi1))
            sh = uint64(32 - b)
            w = (hi << (U32 + sh)) | (mid << sh) | (lo >> (U32 - sh))
            sticky = sticky | (lo & ((U1 << (U32 - sh)) - U1))
            g = int64(32) * (tt - 1) - (int64(32) - b) + e[r0 + j]
            qexp = max(g + 63 - MBITS, int64(EMIN))
            d = qexp - g
            dd = uint64(min(max(d, int64(1)), int64(64)))
            top = w >> (dd - U1)
            kept = top >> U1
            rb = top & U1
            rest = w & ((U1 << (dd - U1)) - U1)
            st = (sticky | rest) != uint64(0)
            up = (rb == U1) and (st or (kept & U1) == U1)
            mant = kept + (U1 if up else uint64(0))
            mant = uint64(0) if (d > 64 or not nz) else mant
            big = mant >> uint64(P)
            mant2 = mant >> big
            be = qexp + int64(big) + MBITS + BIAS
            normal = mant2 >= (U1 << uint64(MBITS))
            bits = (uint64(max(be, int64(0))) << uint64(MBITS)) | (mant2 & FIELD)
            bits = bits if normal else mant2
            bits = INF if (normal and be >= EXPMAX) else bits
            out[r0 + j] = bits | (SIGN if (carry[j] == 1 and mant != uint64(0)) else uint64(0))



@njit(nogil=True, cache=True)
def _crt_round_1(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out, 1)


@njit(nogil=True, cache=True)
def _crt_round_2(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out, 2)


@njit(nogil=True, cache=True)
def _crt_round_3(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out, 3)


@njit(nogil=True, cache=True)
def _crt_round_4(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out, 4)


@njit(nogil=True, cache=True)
def _crt_round_5(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out, 5)


@njit(nogil=True, cache=True)
def _crt_round_6(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out, 6)


@njit(nogil=True, cache=True)
def _crt_round_7(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out, 7)


@njit(nogil=True, cache=True)
def _crt_round_8(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out, 8)


@njit(nogil=True, cache=True)
def _crt_round_16(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, out, 16)


_BY_LIMBS = {1: _crt_round_1, 2: _crt_round_2, 3: _crt_round_3, 4: _crt_round_4, 5: _crt_round_5,
             6: _crt_round_6, 7: _crt_round_7, 8: _crt_round_8}


def crt_round_bits(c, e, W, eoM, Mi, p, emin_sub, bias, out):
    """:func:`_crt_round` through the variant compiled for its limb count (Lb = W.shape[1]
    <= LMAX): ``c`` (N, R) float64, ``e`` (R,) int64, ``out`` (R,) uint64, all C-contiguous."""
    lb = W.shape[1]
    if lb > LMAX:
        raise ValueError(f"crt_round_bits: {lb} limbs, at most {LMAX}")
    _BY_LIMBS.get(lb, _crt_round_16)(c, e, W, eoM, Mi, lb, p, emin_sub, bias, out)
    return out

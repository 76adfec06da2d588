"""Compiled per-entry kernels of the CPU engine (numba: the optional ``[cpu]`` extra).

The numpy engine's per-entry phases run as many whole-array passes; here each is one pass:
the row statistics (:func:`row_stats`, as :func:`ozgemm.precision.stats.row_stats`), the
scaled residues (:func:`scaled_residues`, as :func:`ozgemm.crt.residues.scaled_residues`),
the reduction of the float64 GEMMs' sums (:func:`reduce_residues`) and the reconstruction
and rounding of binary64/binary32 results (:func:`crt_round_bits`, as
:func:`ozgemm.crt.reconstruct.reconstruct_round` with the blas kind's wide moduli, then
:func:`ozgemm.precision.rounding.round_limbs`) and of double-double results
(:func:`crt_round_dd_bits`, the same reconstruction, then
:func:`ozgemm.precision.rounding.round_limbs_dd`), one pass per cache-sized chunk of entries:
the same integers and the same rounding rule, so the same bits (tested against the numpy
code and the roundings against an exact integer rounding). Imported only where numba is installed
(:func:`ozgemm.kernels.numpy.compiled_kernels`); without it, or with the environment variable
``OZGEMM_CPU_COMPILED=0``, the numpy code runs.

Reconstruction: the direct CRT of :func:`~ozgemm.crt.reconstruct.crt_reconstruct` (Y = sum_q c_q e_q
with the quotient t = rint(sum_q c_q e_q / M), exact because |C'| < P/4), here with the
digits Y_l = sum_q c_q W[q, l] summed in int64 (c_q < 2**21.5, W < 2**32, N <= 31: below
2**58.5, and t M_l as well), then the 64-bit-window rounding of
:func:`~ozgemm.precision.rounding.round_limbs` written as IEEE bits; for dd the same
rounding once more, of the exact remainder x - hi formed from the limbs.
"""
from __future__ import annotations

import math

import numpy as np
from numba import int64, njit, uint64
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros

__all__ = ["crt_round_bits", "crt_round_dd_bits", "scaled_residues", "row_stats", "reduce_residues", "plan_widths",
           "stack_plan_widths", "LMAX"]

_MASK = 0xFFFFFFFF
_CH = 1024  # entries per chunk: the chunk's limbs (LMAX x 1024 int64) stay in cache
LMAX = 16  # the most limbs a compiled variant takes


@njit(inline='always')
def _crt_limbs(c, r0, n, W, eoM, Mi, Lb, x, ci, tq, y, carry, est, LMAX):
    """Entries r0 .. r0+n-1 of ``c`` (N, R) float64 residues in [0, p_q): C' from the direct
    CRT with the rounded quotient (crt.reconstruct.crt_reconstruct with ``bound``,
    4 bound <= P), written as |C'| in 32-bit limbs x[:, :n] (LMAX, _CH) int64 (limbs from Lb
    on stay 0) and carry[:n] = 1 where C' < 0, else 0. W (N, Lb) int64: the 32-bit limbs of
    the CRT weights e_q; eoM (N,): e_q / M; Mi (Lb,): the limbs of M; ci, tq, y, est:
    scratch of the chunk. The sign pass runs LMAX times, branch-free, so that it vectorises."""
    N = c.shape[0]
    for j in range(n):
        est[j] = 0.0
        carry[j] = 0
    for q in range(N):
        f = eoM[q]
        for j in range(n):
            v = c[q, r0 + j]
            est[j] += v * f
            ci[q, j] = int64(v)
    for j in range(n):
        tq[j] = int64(np.floor(est[j] + 0.5))
    for l in range(Lb):
        for j in range(n):
            y[j] = 0
        for q in range(N):
            wq = W[q, l]
            for j in range(n):
                y[j] += ci[q, j] * wq
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


@njit(inline='always')
def _round_window(x, j, e, P, EMIN, BIAS, LMAX):
    """X 2**e, X >= 0 the integer of the limbs x[:, j], rounded once to p = P bits with
    gradual underflow at 2**EMIN (rounding.round_limbs: the same 64-bit window of X's top
    bits with a sticky bit below it, nearest-even, overflow to inf). Returns (bits, up, D):
    the format's IEEE bits of the rounded magnitude (0 for a zero result, no sign bit), whether
    the rounding went up (X 2**e below the result), and D = the rounded value's last bit
    position in X's units (the rounded value is (floor(X / 2**D) + up) 2**(D + e); D <= 0:
    no bit of X dropped, up False). The limb loops run LMAX times, branch-free."""
    U1 = uint64(1)
    U32 = uint64(32)
    MBITS = P - 1
    EXPMAX = 2 * BIAS + 1
    INF = uint64(EXPMAX) << uint64(MBITS)
    FIELD = (U1 << uint64(MBITS)) - U1
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
    gx = int64(32) * (tt - 1) - (int64(32) - b)  # X's bit at w's last bit
    g = gx + e
    qexp = max(g + 63 - MBITS, int64(EMIN))
    d = qexp - g
    dd = uint64(min(max(d, int64(1)), int64(64)))
    top = w >> (dd - U1)
    kept = top >> U1
    rb = top & U1
    rest = w & ((U1 << (dd - U1)) - U1)
    st = (sticky | rest) != uint64(0)
    up = (rb == U1) and (st or (kept & U1) == U1) and d <= 64 and nz
    mant = kept + (U1 if up else uint64(0))
    mant = uint64(0) if (d > 64 or not nz) else mant
    big = mant >> uint64(P)
    mant2 = mant >> big
    be = qexp + int64(big) + MBITS + BIAS
    normal = mant2 >= (U1 << uint64(MBITS))
    bits = (uint64(max(be, int64(0))) << uint64(MBITS)) | (mant2 & FIELD)
    bits = bits if normal else mant2
    bits = INF if (normal and be >= EXPMAX) else bits
    return bits, up, d + gx


@njit(inline='always')
def _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out, LMAX):
    """Per entry r of ``c`` (N, R) float64 residues: C' (:func:`_crt_limbs`) and
    (-1)**neg |C'| 2**e[r] rounded once (:func:`_round_window`; zero results +0), written as
    IEEE bits to ``out`` (uint64). DD False: ``out`` (1, R), the format of P, EMIN, BIAS
    (binary64 or binary32; rounding.round_limbs). DD True (P, EMIN, BIAS those of binary64):
    ``out`` (2, R) = [hi, lo] of rounding.round_limbs_dd: hi = RN(x), and lo = RN(x - hi) from
    the exact remainder X - (floor(X / 2**D) + up) 2**D = (X mod 2**D) - up 2**D, whose
    magnitude is X mod 2**D or, where hi rounded up, 2**D - (X mod 2**D) (the two's complement
    of X over the limbs, masked to D bits), with the sign of x flipped where hi rounded up
    (lo = +0 where the remainder is 0, and where hi is +-inf). LMAX (a constant of each
    compiled wrapper, >= Lb): the length of the limb loops. Every pass is a loop over the
    chunk's entries (the remainders' limbs one limb at a time for all entries, not per entry
    inside the rounding loop), so that it vectorises."""
    N, R = c.shape
    x = np.zeros((LMAX, _CH), dtype=np.int64)
    ci = np.empty((N, _CH), dtype=np.int64)
    tq = np.empty(_CH, dtype=np.int64)
    y = np.empty(_CH, dtype=np.int64)
    carry = np.empty(_CH, dtype=np.int64)
    est = np.empty(_CH, dtype=np.float64)
    ups = np.empty(_CH, dtype=np.int64)  # dd: hi rounded up (1) or not (0)
    Ds = np.empty(_CH, dtype=np.int64)  # dd: the bits of X below hi's last bit
    lsign = np.empty(_CH, dtype=np.uint64)  # dd: lo's sign bit
    lkeep = np.empty(_CH, dtype=np.uint64)  # dd: 0 where hi is infinite (lo = +0)
    Z = uint64(0)
    SIGN = uint64(1) << uint64(63 if P == 53 else 31)
    INF = uint64(2 * BIAS + 1) << uint64(P - 1)
    for r0 in range(0, R, _CH):
        n = min(_CH, R - r0)
        _crt_limbs(c, r0, n, W, eoM, Mi, Lb, x, ci, tq, y, carry, est, LMAX)
        if not DD:
            for j in range(n):
                bits, _, _ = _round_window(x, j, e[r0 + j], P, EMIN, BIAS, LMAX)
                out[0, r0 + j] = bits | (SIGN if (carry[j] == 1 and bits != Z) else Z)
            continue
        for j in range(n):  # hi (apart from the loop above: a test of DD inside it slowed both)
            bits, up, D = _round_window(x, j, e[r0 + j], P, EMIN, BIAS, LMAX)
            ng = carry[j] == 1
            out[0, r0 + j] = bits | (SIGN if (ng and bits != Z) else Z)
            ups[j] = int64(1) if up else int64(0)
            Ds[j] = D
            lsign[j] = SIGN if ng != up else Z
            lkeep[j] = Z if bits == INF else ~Z
        for j in range(n):
            y[j] = 1  # the carry of the two's complement
        for l in range(Lb):  # x[:, :n] <- the remainders' magnitudes (limbs from Lb on stay 0)
            for j in range(n):
                xv = x[l, j]
                v = (_MASK - xv) + y[j]
                y[j] = v >> 32
                keep = min(max(Ds[j] - int64(32) * l, int64(0)), int64(32))
                x[l, j] = ((v & _MASK) if ups[j] == 1 else xv) & ((int64(1) << keep) - 1)
        for j in range(n):
            bits, _, _ = _round_window(x, j, e[r0 + j], P, EMIN, BIAS, LMAX)
            out[1, r0 + j] = (bits | (lsign[j] if bits != Z else Z)) & lkeep[j]


@njit(nogil=True, cache=True)
def _crt_round_1(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out, 1)


@njit(nogil=True, cache=True)
def _crt_round_2(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out, 2)


@njit(nogil=True, cache=True)
def _crt_round_3(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out, 3)


@njit(nogil=True, cache=True)
def _crt_round_4(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out, 4)


@njit(nogil=True, cache=True)
def _crt_round_5(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out, 5)


@njit(nogil=True, cache=True)
def _crt_round_6(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out, 6)


@njit(nogil=True, cache=True)
def _crt_round_7(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out, 7)


@njit(nogil=True, cache=True)
def _crt_round_8(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out, 8)


@njit(nogil=True, cache=True)
def _crt_round_16(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out):
    _crt_round(c, e, W, eoM, Mi, Lb, P, EMIN, BIAS, DD, out, 16)


_BY_LIMBS = {1: _crt_round_1, 2: _crt_round_2, 3: _crt_round_3, 4: _crt_round_4, 5: _crt_round_5,
             6: _crt_round_6, 7: _crt_round_7, 8: _crt_round_8}


def _run(c, e, W, eoM, Mi, p, emin_sub, bias, dd, out):
    """:func:`_crt_round` through the variant compiled for its limb count (Lb = W.shape[1]
    <= LMAX)."""
    lb = W.shape[1]
    if lb > LMAX:
        raise ValueError(f"crt_round: {lb} limbs, at most {LMAX}")
    _BY_LIMBS.get(lb, _crt_round_16)(c, e, W, eoM, Mi, lb, p, emin_sub, bias, dd, out)
    return out


def crt_round_bits(c, e, W, eoM, Mi, p, emin_sub, bias, out):
    """The binary64/binary32 results (p, emin_sub, bias: the format's) of the residues ``c``
    (N, R) float64 scaled by 2**``e`` (R,) int64, as IEEE bits into ``out`` (R,) uint64, all
    C-contiguous (:func:`_crt_round`): the numpy code's bits (reconstruct_round with the
    bound, rounding.round_limbs)."""
    _run(c, e, W, eoM, Mi, p, emin_sub, bias, False, out.reshape(1, -1))
    return out


def crt_round_dd_bits(c, e, W, eoM, Mi, out):
    """The double-double results [hi, lo] of the residues ``c`` (N, R) float64 scaled by
    2**``e`` (R,) int64, as binary64 bits into ``out`` (2, R) uint64, all C-contiguous
    (:func:`_crt_round`): the numpy code's bits (reconstruct_round with the bound,
    rounding.round_limbs_dd)."""
    return _run(c, e, W, eoM, Mi, 53, -1074, 1023, True, out)


@njit(nogil=True, cache=True)
def _residues(mant, exp, shift, mods, rinv, W22, W44, T, out):
    """Symmetric residues out[q, i, l] of X' = round(mant 2**(exp + shift_i)) modulo mods[q]
    (odd, below 2**21.5): the integers of :func:`ozgemm.crt.residues.scaled_residues`
    (one component). v = mant << min(d, 9) or the rounded right shift (|v| < 2**62) and
    d2 = max(d - 9, 0), as there; |v| in 22-bit chunks c0 + c1 2**22 + c2 2**44, so that
    S = c0 + c1 W22 + c2 W44 < 3 2**43.5 < 2**46 (W = 2**22 / 2**44 mod m), and the symmetric
    residue S - m floor(S / m + 1/2) is exact in float64 (the bound of scaled_residues); a
    d2 > 0 multiplies by T[q, d2] = 2**d2 mod m (|r T| < 2**42) and reduces again; the sign
    last (odd moduli: the symmetric range is symmetric)."""
    r, k = mant.shape
    N = mods.shape[0]
    c0 = np.empty(k, dtype=np.float64)
    c1 = np.empty(k, dtype=np.float64)
    c2 = np.empty(k, dtype=np.float64)
    sg = np.empty(k, dtype=np.float64)
    d2 = np.empty(k, dtype=np.int64)
    M22 = (1 << 22) - 1
    for i in range(r):
        any_d2 = False
        for l in range(k):
            d = exp[i, l] + shift[i]
            m = mant[i, l]
            if d >= 0:
                v = m << min(d, 9)
                e2 = max(d - 9, 0)
            else:
                rsh = min(-d, 60)
                v = (m + (int64(1) << (rsh - 1))) >> rsh
                e2 = 0
            a = -v if v < 0 else v
            sg[l] = -1.0 if v < 0 else 1.0
            c0[l] = float(a & M22)
            c1[l] = float((a >> 22) & M22)
            c2[l] = float(a >> 44)
            d2[l] = e2
            any_d2 = any_d2 or e2 > 0
        for q in range(N):
            p = mods[q]
            ri = rinv[q]
            w1 = W22[q]
            w2 = W44[q]
            o = out[q, i]
            for l in range(k):
                s = c0[l] + c1[l] * w1 + c2[l] * w2
                o[l] = s - p * np.floor(s * ri + 0.5)
            if any_d2:
                for l in range(k):
                    if d2[l] > 0:
                        s = o[l] * T[q, d2[l]]
                        o[l] = s - p * np.floor(s * ri + 0.5)
            for l in range(k):
                o[l] = (0.0 - o[l]) if sg[l] < 0 else o[l]  # (+0, as the numpy code gives)


def scaled_residues(mant, exp, shift, moduli, out):
    """:func:`_residues` into ``out`` (N, r, k) float64 for one-component rows ``mant``,
    ``exp`` (r, k) int64 and ``shift`` (r,) int64, ``moduli`` odd and below 2**21.5."""
    mods = np.array(moduli, dtype=np.float64)
    d2max = max(0, int((exp.max(axis=1) + shift).max(initial=0)) - 9) if exp.size else 0  # the largest d - 9
    T = np.array([[pow(2, d, m) for d in range(d2max + 1)] for m in moduli], dtype=np.float64)
    _residues(np.ascontiguousarray(mant), np.ascontiguousarray(exp), np.ascontiguousarray(shift), mods, 1.0 / mods,
              np.array([pow(2, 22, m) for m in moduli], dtype=np.float64),
              np.array([pow(2, 44, m) for m in moduli], dtype=np.float64), T, out)
    return out


@njit(inline="always")
def _ceil_scaled(M, bl, d):
    """ceil(ldexp(M 2**d)) as numpy computes it for an integer M >= 0 of bit length bl: the
    exact ceiling, except 0 where M 2**d <= 2**-1075 (ldexp rounds it to 0 below half the
    smallest subnormal, a tie to even); results below 2**62."""
    if M == 0:
        return int64(0)
    if d >= 0:
        return M << d
    t = bl - 1 + d  # M 2**d in [2**t, 2**(t+1))
    if t < -1075 or (t == -1075 and M == (int64(1) << (bl - 1))):
        return int64(0)
    if -d >= 63:
        return int64(1)
    return (M + (int64(1) << (-d)) - 1) >> (-d)


@njit(nogil=True, cache=True)
def _row_stats(xb, NB, LB, mant, exp, q, E_out, width, n1, n2, qsum, zero_row):
    """Per row of ``xb`` (r, k): the int64 bit patterns of float64 entries. The integers of
    :func:`ozgemm.precision.stats.row_stats` (one component) from the bits: mant/exp (numpy's
    frexp: mant = frac 2**53), E (the largest frexp exponent of a non-zero entry, 0 for a
    zero row), width (E - the lowest set bit's exponent), n1 = sum ceil(|x| 2**(NB-E)),
    n2 = sum ceil(|x| 2**(NB/2-E))**2, q = floor(|x| 2**(LB-E)) and its sum — each ceil and
    floor of numpy's ldexp in integers (:func:`_ceil_scaled`), integer sums (order-free) —
    and zero_row (no non-zero entry)."""
    r, k = xb.shape
    M52 = (int64(1) << 52) - 1
    special = False
    for i in range(r):
        tmax = np.iinfo(np.int64).min
        lmin = np.iinfo(np.int64).max
        for l in range(k):
            u = xb[i, l]
            ef = (u >> 52) & 0x7FF
            f = u & M52
            special = special or ef == 0x7FF
            if ef == 0:  # zero or subnormal f 2**-1074
                b = int64(64) - int64(leading_zeros(uint64(f))) if f != 0 else int64(0)
                a = f << (53 - b) if f != 0 else int64(0)
                tp = b - 1074
            else:
                a = f | (int64(1) << 52)
                tp = ef - 1022
            mant[i, l] = -a if u < 0 else a  # |mant| of bit length 53 (subnormals normalised)
            exp[i, l] = tp - 53 if a != 0 else int64(-53)
            if a != 0:
                tmax = max(tmax, tp)
                lmin = min(lmin, tp - 53 + int64(trailing_zeros(uint64(a))))
        zero = tmax == np.iinfo(np.int64).min
        zero_row[i] = zero
        E = int64(0) if zero else tmax
        E_out[i] = E
        width[i] = 0 if zero else E - lmin
        s1 = int64(0)
        s2 = int64(0)
        sq = int64(0)
        for l in range(k):
            m = mant[i, l]
            a = -m if m < 0 else m
            d = exp[i, l] - E
            s1 += _ceil_scaled(a, int64(53), d + NB)
            h = _ceil_scaled(a, int64(53), d + NB // 2)
            s2 += h * h
            d7 = d + LB
            f = (a << d7) if d7 >= 0 else ((a >> (-d7)) if -d7 < 63 else int64(0))
            q[i, l] = f
            sq += f
        n1[i] = s1
        n2[i] = s2
        qsum[i] = sq
    return special


def row_stats(x, nb, lb):
    """:func:`_row_stats` of ``x`` (r, k) float32/float64: (mant, exp, q, E, width, n1, n2,
    qsum, zero_row) as :func:`ozgemm.precision.stats.row_stats` gives them, or None where
    ``x`` holds NaN/Inf (whose statistics the numpy code defines)."""
    r, k = x.shape
    xb = np.ascontiguousarray(x, dtype=np.float64).view(np.int64)  # float32 widens exactly
    mant = np.empty((r, k), dtype=np.int64)
    exp = np.empty((r, k), dtype=np.int64)
    q = np.empty((r, k), dtype=np.int8)
    E, width, n1, n2, qsum = (np.empty(r, dtype=np.int64) for _ in range(5))
    zero_row = np.empty(r, dtype=np.bool_)  # (set by the kernel, which sees every entry)
    if _row_stats(xb, nb, lb, mant, exp, q, E, width, n1, n2, qsum, zero_row):
        return None
    return mant, exp, q, E, width, n1, n2, qsum, zero_row


@njit(nogil=True, cache=True)
def _reduce(c, mods, rinv):
    """c[q] <- c[q] - p_q floor((c[q] + 1/2) (1/p_q)) in place: the exact reduction of
    :meth:`ozgemm.kernels.numpy.NumpyBackend.residue_products` (the same float64 operations
    on exact integers), in one pass."""
    N, R = c.shape
    for q in range(N):
        p = mods[q]
        ri = rinv[q]
        for j in range(R):
            x = c[q, j]
            c[q, j] = x - p * np.floor((x + 0.5) * ri)


def reduce_residues(c, moduli):
    """:func:`_reduce` of ``c`` (N, ...) C-contiguous float64, in place."""
    mods = np.array(moduli, dtype=np.float64)
    _reduce(c.reshape(c.shape[0], -1), mods, 1.0 / mods)
    return c


@njit(inline="always")
def _ceil_log2_ratio(z, r):
    """ceil(log2(z / r)) for positive doubles, exactly: frexp exponents and one comparison of
    the fractions (:func:`ozgemm.precision.planner._ceil_log2_ratio`)."""
    bz = np.float64(z).view(np.int64)
    br = np.float64(r).view(np.int64)
    xz = (bz >> 52) & 0x7FF
    xr = (br >> 52) & 0x7FF
    if xz == 0 or xr == 0:  # a subnormal (not reached by the planner's values): frexp itself
        fz, ez = math.frexp(z)
        fr, er = math.frexp(r)
        return int64(ez) - int64(er) + (int64(1) if fz > fr else int64(0))
    M = (int64(1) << 52) - 1  # normal: frexp exponent = field - 1022, fraction order = field order
    return xz - xr + (int64(1) if (bz & M) > (br & M) else int64(0))


@njit(inline="always")
def _need(z, Rs, pos, fac, BIG):
    """The smallest beta with 2**(-beta-1) z fac <= R (planner.required_beta_entries' need)."""
    zz = z * fac
    n = _ceil_log2_ratio(zz if zz > 0 else 1.0, Rs) - 1
    n = n if zz > 0 else -BIG
    return n if (pos or zz == 0) else BIG


@njit(inline="always")
def _entry_width(L, wi, vj, nai, nbj, pw, fac, K, BIG):
    """The smallest width of one entry (planner.required_beta_entries): R = L pw (pw = 2**scale,
    exact as ldexp: a power of two, no underflow); t_d, or the regimes w <= beta < v and
    v <= beta < w where t_d reaches min(w_i, v_j)."""
    R = np.float64(L) * pw
    pos = R > 0
    Rs = R if pos else 1.0
    t = _need((nbj + nai) + K, Rs, pos, fac, BIG)
    if t >= min(wi, vj):
        if wi < vj:
            t = min(max(wi, _need(nai, Rs, pos, fac, BIG)), vj)
        elif vj < wi:
            t = min(max(vj, _need(nbj, Rs, pos, fac, BIG)), wi)
        else:
            t = wi
    return t


@njit(nogil=True, cache=True)
def _plan_widths(lb, w, v, na, nb, ra, cb, pw, fac, K):
    """(max_ij beta_ij, max_ij (lb_ij + ra_i + cb_j)) of a bound GEMM ``lb`` (m, n): the
    per-entry smallest widths of :func:`ozgemm.precision.planner.required_beta_entries`
    (:func:`_entry_width`) and :func:`ozgemm.precision.planner._lb_upper_max`, in one pass."""
    m, n = lb.shape
    BIG = int64(1) << 40
    best = -(int64(1) << 62)
    ub = -(int64(1) << 62)
    for i in range(m):
        wi = w[i]
        nai = na[i]
        rowub = -(int64(1) << 62)
        for j in range(n):
            L = lb[i, j]
            rowub = max(rowub, int64(L) + cb[j])
            best = max(best, _entry_width(L, wi, v[j], nai, nb[j], pw, fac, K, BIG))
        ub = max(ub, rowub + ra[i])
    return best, ub


@njit(nogil=True, cache=True)
def _stack_plan_widths(lb, w, v, na, nb, ra, cb, pw, fac, K, out):
    """:func:`_plan_widths` of every product p of a stack: ``lb`` (P, m, n) its bound GEMMs,
    ``w``, ``na``, ``ra`` (Pa, m) and ``v``, ``nb``, ``cb`` (Pb, n) the statistics of A's rows
    and B's columns per product (Pa or Pb = 1: an operand every product shares); ``out``
    (P, 2) int64 receives (max beta, max (lb + ra + cb)) of each product."""
    P, m, n = lb.shape
    BIG = int64(1) << 40
    for p in range(P):
        pa = p if w.shape[0] > 1 else 0
        pb = p if v.shape[0] > 1 else 0
        best = -(int64(1) << 62)
        ub = -(int64(1) << 62)
        for i in range(m):
            wi = w[pa, i]
            nai = na[pa, i]
            rowub = -(int64(1) << 62)
            for j in range(n):
                L = lb[p, i, j]
                rowub = max(rowub, int64(L) + cb[pb, j])
                best = max(best, _entry_width(L, wi, v[pb, j], nai, nb[pb, j], pw, fac, K, BIG))
            ub = max(ub, rowub + ra[pa, i])
        out[p, 0] = best
        out[p, 1] = ub


def plan_widths(lb, w, v, na, nb, ra, cb, scale, fac, K):
    """:func:`_plan_widths` for a 2-D ``lb`` of any integer dtype (m, n >= 1)."""
    return _plan_widths(np.ascontiguousarray(lb), np.ascontiguousarray(w, dtype=np.int64),
                        np.ascontiguousarray(v, dtype=np.int64), np.ascontiguousarray(na, dtype=np.float64),
                        np.ascontiguousarray(nb, dtype=np.float64), np.ascontiguousarray(ra, dtype=np.int64),
                        np.ascontiguousarray(cb, dtype=np.int64), math.ldexp(1.0, int(scale)), float(fac), float(K))


def stack_plan_widths(lb, w, v, na, nb, ra, cb, scale, fac, K):
    """:func:`_stack_plan_widths`: ``lb`` (P, m, n) of any integer or exact float dtype (a view
    is fine), the statistics as 2-D (Pa, m) and (Pb, n) arrays; returns int64 (P, 2)."""
    out = np.empty((lb.shape[0], 2), dtype=np.int64)
    _stack_plan_widths(lb, np.ascontiguousarray(w, dtype=np.int64), np.ascontiguousarray(v, dtype=np.int64),
                       np.ascontiguousarray(na, dtype=np.float64), np.ascontiguousarray(nb, dtype=np.float64),
                       np.ascontiguousarray(ra, dtype=np.int64), np.ascontiguousarray(cb, dtype=np.int64),
                       math.ldexp(1.0, int(scale)), float(fac), float(K), out)
    return out

"""Scaling and symmetric residues (Ozaki scheme II, "scaling" and "residues" phases).

The scaled integer ``X'_il = round(x_il * 2**s_i)`` may be far wider than 64 bits; it is
never formed. With ``x = mant * 2**exp`` (|mant| < 2**53) and ``d = exp + s_i``:

* ``d >= 0``: X' = mant * 2**d exactly, so X' mod m = (mant mod m)(2**d mod m) mod m;
* ``d < 0``:  X' = floor(mant * 2**d + 1/2) = (mant + 2**(-d-1)) >> -d, which fits int64.

Residues are then mapped to the symmetric range [-(m-1)//2 - (m even), (m-1)//2], which lies
in [-128, 127] for m <= 256 (int8). Written once against ``xp`` (numpy or cupy).
"""
from __future__ import annotations

__all__ = ["scaled_residues", "pow2_mod_table"]

_SHIFT_CAP = 60  # |mant| < 2**53: any right shift >= 55 rounds to 0; 60 keeps int64 safe


def pow2_mod_table(moduli, dmax: int, xp):
    """int64 table T[q, d] = 2**d mod moduli[q] for 0 <= d <= dmax."""
    import numpy as np

    T = np.empty((len(moduli), dmax + 1), dtype=np.int64)
    for q, m in enumerate(moduli):
        v = 1 % m
        for d in range(dmax + 1):
            T[q, d] = v
            v = (v * 2) % m
    return xp.asarray(T)


_LEFT_CAP = 9  # |mant| < 2**53, so mant << 9 < 2**62 still fits int64


def scaled_residues(mant, exp, shift, moduli, xp, dtype=None):
    """Symmetric residues of the scaled, rounded rows.

    Parameters
    ----------
    mant, exp : (r, k) int64    exact decomposition of the input rows; (C, r, k) for operands
                                held as C components (each rounded separately, residues added)
    shift : (r,) int64          s_i, the power of two applied to row i
    moduli : sequence of int    the moduli (<= 256, or any below 2**22: the CPU engine's)

    dtype : the result dtype, int8 (default; int32 for moduli above 256) or a float type
            holding the same integers (a backend whose GEMM reads floats takes them without
            a conversion pass)

    Returns
    -------
    (N, r, k) array: residue of round(x_il 2**s_i) modulo moduli[q], symmetric range.

    Method: X' = v * 2**d2 with v = mant << min(d, 9) or the rounded right shift (|v| < 2**62,
    exact int64) and d2 = max(d - 9, 0). |X'| is cut into b-bit chunks L_j (bits
    bj .. bj+b-1, j < J), so X' = sign * sum_j L_j 2**(b j) (where every d2 is 0, the two's
    complement chunks of v itself instead, the top one signed: the same bounds, no sign pass)
    and, for every modulus at once,
    S_q = sum_c sign_c sum_j L_cj W_qj with W_qj = 2**(b j) mod m_q. b <= 31 is the largest
    width with C J 2**b max(m) <= 2**46 (8-bit moduli: b = 31, every term below 2**39 and at
    most C J <= 3 * 34 of them; the CPU engine's moduli up to 2**21.5: b = 22 for the usual J = 3), so |S_q| < 2**46: the whole sum is
    one float64 matrix product W (N x J) @ L (J x rk) with L_j = sum_c sign_c L_cj, exact
    (integers below 2**53), and the symmetric residue S_q - m_q floor(S_q (1/m_q) + 1/2) is
    exact too: the computed quotient is off by less than 2**46 / m * 2**-51 < 2**-5 / m,
    (for any m: the bound is relative to 1/m), while S/m + 1/2 is a multiple of 1/m that is never closer than 1/(2m) to an integer for
    odd m (and exact for m = 256), so the floor is right; the result lies in
    [-(m-1)//2 - (m even), (m-1)//2]. One BLAS call and a few passes replace per-modulus
    integer division; the result is identical on every backend (exact integers).
    """
    import numpy as np

    multi = mant.ndim == 3  # (C, r, k): X' = sum_c round(x_c 2**s_i), residues added mod m
    if not multi:
        mant, exp = mant[None], exp[None]
    C, r, k = mant.shape
    N = len(moduli)
    if dtype is None:
        dtype = xp.int8 if max(moduli, default=2) <= 256 else xp.int32
    out = xp.empty((N, r, k), dtype=dtype)
    if r == 0 or k == 0 or N == 0:
        return out
    d = exp + shift[None, :, None]
    dmax = int(xp.max(d)) if d.size else 0
    bits = 62 + max(dmax - _LEFT_CAP, 0)  # |X'| < 2**bits
    for b in range(31, 0, -1):  # the widest chunks keeping |S_q| < 2**46
        J = max(1, (bits + b - 1) // b)
        if C * J * (1 << b) * max(moduli) <= 2**46:
            break
    W = np.array([[pow(2, b * j, m) for j in range(J)] for m in moduli], dtype=np.float64)
    Wx = xp.asarray(W)  # (N, J)
    mods = xp.asarray(np.array(moduli, dtype=np.float64))[:, None]
    rinv = xp.asarray(1.0 / np.array(moduli, dtype=np.float64))[:, None]
    # rows per block: the chunk matrix (C J) and the sums (N) in float64, about 2 MiB, so that
    # the passes over them stay in cache (measured 3x faster than whole-matrix blocks at 1024^2)
    blk = max(1, min(r, (1 << 18) // max(1, (C * 4 + J + N) * k)))
    mask = (1 << b) - 1
    plain = dmax <= _LEFT_CAP  # every X' = v itself (d2 = 0): signed chunks, below
    for i0 in range(0, r, blk):
        i1 = min(r, i0 + blk)
        dd = d[:, i0:i1]
        m_ = mant[:, i0:i1]
        rsh = xp.minimum(-dd, _SHIFT_CAP)
        xp.maximum(rsh, 1, out=rsh)
        small = (m_ + (xp.int64(1) << (rsh - 1))) >> rsh  # round half up, exact int64
        v = xp.where(dd >= 0, m_ << xp.minimum(xp.maximum(dd, 0), _LEFT_CAP), small)
        L = xp.empty((J, (i1 - i0) * k), dtype=xp.float64)
        if plain:
            # two's complement chunks of v itself: v = sum_{j < J-1} ((v >> b j) & mask) 2**(b j)
            # + (v >> b (J-1)) 2**(b (J-1)) exactly (arithmetic shift), every chunk of magnitude
            # <= 2**b since |v| < 2**62 <= 2**(b J): the same bound on S_q, no sign pass
            for j in range(J):
                ch = v >> (b * j) if j else v
                if j < J - 1:
                    ch = ch & mask
                L[j] = (ch.sum(axis=0) if C > 1 else ch[0]).reshape(-1)
        else:
            d2 = xp.maximum(dd - _LEFT_CAP, 0)
            sgn = xp.where(v < 0, -1, 1).astype(xp.int64)
            av = xp.abs(v)
            for j in range(J):
                # chunk j of |v| 2**d2 = bits sh .. sh+b-1 of |v|; shifts >= 62 give 0 (|v| < 2**62),
                # left shifts >= b leave no bit below 2**b
                sh = b * j - d2
                ch = xp.where(sh >= 0, av >> xp.minimum(xp.maximum(sh, 0), 63),
                              av << xp.minimum(xp.maximum(-sh, 0), 63)) & mask
                ch *= sgn
                L[j] = ch.sum(axis=0).reshape(-1)  # components add: |sum| < 3 * 2**b, exact
        S = Wx @ L  # (N, rows k), exact integers
        qt = S * rinv  # symmetric residue S - m floor(S/m + 1/2), see above
        qt += 0.5
        xp.floor(qt, out=qt)
        qt *= mods
        S -= qt
        out[:, i0:i1, :] = S.astype(out.dtype, copy=False).reshape(N, i1 - i0, k)
    return out


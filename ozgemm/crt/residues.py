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


def scaled_residues(mant, exp, shift, moduli, xp):
    """Symmetric residues of the scaled, rounded rows.

    Parameters
    ----------
    mant, exp : (r, k) int64    exact decomposition of the input rows; (C, r, k) for operands
                                held as C components (each rounded separately, residues added)
    shift : (r,) int64          s_i, the power of two applied to row i
    moduli : sequence of int    the moduli (<= 256)

    Returns
    -------
    (N, r, k) int8 array: residue of round(x_il 2**s_i) modulo moduli[q], symmetric range.

    Method: X' = v * 2**d2 with v = mant << min(d, 9) or the rounded right shift (|v| < 2**62,
    exact int64) and d2 = max(d - 9, 0); then X' mod m = (v mod m)(2**d2 mod m) mod m.
    """
    multi = mant.ndim == 3  # (C, r, k): X' = sum_c round(x_c 2**s_i), residues added mod m
    sh = shift[None, :, None] if multi else shift[:, None]
    d = exp + sh
    pos = d >= 0
    rsh = xp.clip(-d, 1, _SHIFT_CAP)
    small = (mant + (xp.int64(1) << (rsh - 1))) >> rsh  # round half up, exact int64
    v = xp.where(pos, mant << xp.clip(d, 0, _LEFT_CAP), small)
    d2 = xp.clip(d - _LEFT_CAP, 0, None)
    d2max = int(d2.max()) if d2.size else 0
    T = pow2_mod_table(moduli, d2max, xp) if d2max else None
    out = xp.empty((len(moduli),) + mant.shape[-2:], dtype=xp.int8)
    for q, m in enumerate(moduli):
        r = v % m
        if T is not None:
            r = (r * T[q][d2]) % m
        if multi:
            r = r.sum(axis=0) % m
        r -= m * (r > (m - 1) // 2)
        out[q] = r
    return out

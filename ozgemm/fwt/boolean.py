"""Walsh spectrum of Boolean functions (the cryptographic use of the WHT)."""
from __future__ import annotations

import numpy as np

from .._xp import array_namespace, is_cupy_array
from ._core import fwht, is_pow2

__all__ = ["walsh_spectrum"]


def walsh_spectrum(truth_table, axis=-1):
    """Exact Walsh spectrum ``W_f(a) = Σ_x (−1)^(f(x) ⊕ a·x)`` of Boolean functions.

    Parameters
    ----------
    truth_table : array of 0/1 (bool or any integer dtype), numpy or cupy
        ``truth_table[..., x] = f(x)`` for ``x = 0 .. 2**n − 1``, where bit ``i`` of the
        integer ``x`` is variable ``x_i``; ``a·x`` is ``popcount(a & x) mod 2``.
        Batches of functions along the other axes. Length along ``axis`` must be a power
        of two (ValueError otherwise).
    axis : int
        Axis holding the truth table.

    Returns
    -------
    int64 array (same library and shape): ``W_f(a)`` indexed by ``a`` — the natural-order,
    unnormalised WHT of ``(−1)^f = 1 − 2f``. Exact (|W| ≤ 2**n; n ≤ 62).
    Parseval: ``Σ_a W_f(a)² = 4**n``. ``f`` is bent iff every ``|W_f(a)| = 2**(n/2)``
    (n even); the nonlinearity is ``2**(n−1) − max|W_f|/2``.

    Raises
    ------
    ValueError  entries other than 0/1, or bad length.
    TypeError   float or complex dtype (a truth table is 0/1 integers or bool).

    Source: Rothaus, "On 'bent' functions", J. Comb. Theory A 20 (1976); Carlet,
    "Boolean Functions for Cryptography and Coding Theory" (2021), ch. 2.
    """
    if not (isinstance(truth_table, np.ndarray) or is_cupy_array(truth_table)):
        truth_table = np.asarray(truth_table)
    xp = array_namespace(truth_table)
    t = truth_table
    if t.dtype.kind not in "biu":
        raise TypeError(f"walsh_spectrum: truth table must be bool or integer 0/1, got dtype {t.dtype}")
    if t.ndim == 0:
        raise ValueError("walsh_spectrum: truth table must have at least one dimension")
    if t.dtype.kind != "b" and t.size and bool(((t != 0) & (t != 1)).any()):
        raise ValueError("walsh_spectrum: truth table entries must be 0 or 1")
    ax = axis if -t.ndim <= axis < t.ndim else None
    if ax is not None and not is_pow2(t.shape[ax]):
        raise ValueError(f"walsh_spectrum: truth table length {t.shape[ax]} along axis {axis} is not a power "
                         "of two 2**n (one entry per input of n variables); padding would change the function")
    s = 1 - 2 * t.astype(xp.int8)  # (−1)^f as int8, a new array
    return fwht(s, axis=axis)

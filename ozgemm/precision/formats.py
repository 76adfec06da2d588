"""Floating-point formats known to the planner and the final rounding.

A format is described by its precision ``p`` (significand bits, hidden bit included), its
exponent range and the numpy dtype that carries it. The unit roundoff is ``u = 2**-p``.
binary32 / binary64 follow IEEE 754-2019, Table 3.5. ``dd`` and ``binary128`` are declared
so that contracts can name them, but this release has no engine path for them yet
(:class:`~ozgemm.precision.contract.ContractError` is raised if they are requested).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Format", "FORMATS", "get_format", "format_of_dtype"]


@dataclass(frozen=True)
class Format:
    """An IEEE-style binary floating-point format.

    Attributes
    ----------
    name : str
        ``"binary32"``, ``"binary64"``, ``"dd"`` or ``"binary128"``.
    p : int
        Precision in bits (significand including the hidden bit).
    emax : int
        Largest exponent: the largest finite value is ``(2 - 2**(1-p)) * 2**emax``.
    emin : int
        Smallest normal exponent: the smallest normal value is ``2**emin``.
    dtype : numpy dtype or None
        The numpy dtype holding values of this format (None where there is none).
    supported : bool
        Whether this release can compute in this format.
    """

    name: str
    p: int
    emax: int
    emin: int
    dtype: object
    supported: bool = True

    @property
    def u(self) -> float:
        """Unit roundoff ``2**-p`` (round to nearest)."""
        return 2.0 ** (-self.p)

    @property
    def emin_sub(self) -> int:
        """Exponent of the smallest subnormal: ``emin - p + 1``."""
        return self.emin - self.p + 1


FORMATS = {
    "binary32": Format("binary32", 24, 127, -126, np.dtype(np.float32)),
    "binary64": Format("binary64", 53, 1023, -1022, np.dtype(np.float64)),
    # Declared for contracts; not computed in this release.
    "dd": Format("dd", 106, 1023, -1022 + 53, None, supported=False),
    "binary128": Format("binary128", 113, 16383, -16382, None, supported=False),
}
_ALIASES = {"fp32": "binary32", "float32": "binary32", "single": "binary32",
            "fp64": "binary64", "float64": "binary64", "double": "binary64",
            "fp128": "binary128", "quad": "binary128", "double-double": "dd"}


def get_format(name: str) -> Format:
    """Return the :class:`Format` called ``name`` (aliases: fp32, fp64, float32, ...).

    Raises
    ------
    ValueError
        For an unknown name.
    """
    key = _ALIASES.get(str(name).lower(), str(name).lower())
    try:
        return FORMATS[key]
    except KeyError:
        raise ValueError(f"unknown floating-point format {name!r}; known: {sorted(FORMATS)}") from None


def format_of_dtype(dtype) -> Format:
    """The format carried by a numpy dtype (float32 -> binary32, float64 -> binary64)."""
    dt = np.dtype(dtype)
    for f in FORMATS.values():
        if f.dtype is not None and f.dtype == dt:
            return f
    raise TypeError(f"no floating-point format for dtype {dt}")

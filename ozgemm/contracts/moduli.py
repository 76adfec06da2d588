"""The moduli table of Ozaki scheme II (a contract's ``moduli`` count counts its entries).

``MODULI`` is the greedy sequence of pairwise-coprime integers <= 256 taken in decreasing
order (256, 255, 253, 251, 247, ...). Its first 20 entries are the table of GEMMul8
(Ozaki, Uchino, Imamura, "Ozaki Scheme II: A GEMM-oriented emulation of floating-point
matrix multiplication using an integer modular technique", 2025, Sec. 3); the rest extend
it to 49 moduli (product ~ 2**341.9) for wide contracts. Symmetric residues modulo
m <= 256 lie in [-128, 127], so each fits int8.

``GAUSSIAN_MODULI`` is the table of complex products: the same greedy sequence restricted to
odd m in which -1 is a square (every prime factor p = 1 mod 4: 241, 233, 229, 221 = 13 17,
205 = 5 41, ...), with ``SQRT_MINUS_ONE[q]`` the smallest t in [0, m_q) with t**2 = -1 mod m_q.
Modulo such an m, the Gaussian integers split: Z[i]/(m) -> Z/m x Z/m, x + iy -> (x + ty,
x - ty) is a ring isomorphism (it maps i to t and -t, both roots of z**2 + 1, and is
invertible because 2 and t are units mod m), so one complex product modulo m is two real
products modulo m (:func:`ozgemm.crt.pipeline.execute_complex`; primes p = 1 mod 4 split in
Z[i]: Hardy and Wright, "An Introduction to the Theory of Numbers", ch. XII).

Everything here is exact integer data computed once at import.
"""
from __future__ import annotations

from math import gcd

__all__ = ["MODULI", "GAUSSIAN_MODULI", "SQRT_MINUS_ONE"]

MODULI: tuple[int, ...] = (
    256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197, 193, 191,
    181, 179, 173, 167, 163, 157, 151, 149, 139, 137, 131, 127, 113, 109, 107, 103, 101,
    97, 89, 83, 79, 73, 71, 67, 61, 59, 53, 47, 43, 41, 37, 29,
)


def _sqrt_minus_one(m: int) -> int | None:
    """The smallest t in [0, m) with t**2 = -1 mod m, or None."""
    return next((t for t in range(m) if (t * t + 1) % m == 0), None)


def _gaussian_table() -> tuple:
    out = []
    for m in range(255, 2, -2):  # odd: 2 is not a unit, (1 + i)**2 = 2i ramifies
        if _sqrt_minus_one(m) is not None and all(gcd(m, g) == 1 for g in out):
            out.append(m)
    return tuple(out)


GAUSSIAN_MODULI: tuple[int, ...] = _gaussian_table()
SQRT_MINUS_ONE: tuple[int, ...] = tuple(_sqrt_minus_one(m) for m in GAUSSIAN_MODULI)

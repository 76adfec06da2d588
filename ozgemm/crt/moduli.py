"""The moduli table of Ozaki scheme II and the constants Garner's algorithm needs.

``MODULI`` is the greedy sequence of pairwise-coprime integers <= 256 taken in decreasing
order (256, 255, 253, 251, 247, ...). Its first 20 entries are the table of GEMMul8
(Ozaki, Uchino, Imamura, "Ozaki Scheme II: A GEMM-oriented emulation of floating-point
matrix multiplication using an integer modular technique", 2025, Sec. 3); the rest extend
it to 49 moduli (product ~ 2**341.9) for wide contracts. Symmetric residues modulo
m <= 256 lie in [-128, 127], so each fits int8.

Everything here is exact integer data computed once at import.
"""
from __future__ import annotations

from functools import lru_cache
from math import gcd, prod

import numpy as np

__all__ = ["MODULI", "moduli_product", "moduli_exceeding", "moduli_for_bits", "GarnerConstants", "garner_constants"]

MODULI: tuple[int, ...] = (
    256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197, 193, 191,
    181, 179, 173, 167, 163, 157, 151, 149, 139, 137, 131, 127, 113, 109, 107, 103, 101,
    97, 89, 83, 79, 73, 71, 67, 61, 59, 53, 47, 43, 41, 37, 29,
)


def moduli_product(n: int) -> int:
    """Exact product M of the first ``n`` moduli (a Python int)."""
    if not 1 <= n <= len(MODULI):
        raise ValueError(f"moduli count must be in [1, {len(MODULI)}], got {n}")
    return prod(MODULI[:n])


def moduli_exceeding(bound) -> int | None:
    """Fewest moduli whose product M exceeds ``bound`` (int, Fraction or float), exactly;
    None if the whole table is too short."""
    acc = 1
    for i, m in enumerate(MODULI):
        acc *= m
        if acc > bound:
            return i + 1
    return None


def moduli_for_bits(bits_needed: float) -> int | None:
    """Fewest moduli whose product exceeds ``2**bits_needed``; None if the table is too short."""
    return moduli_exceeding(2 ** bits_needed)


class GarnerConstants:
    """Per-count constants for Garner's mixed-radix conversion.

    For moduli m_1..m_N (0-based ``q``):
    ``inv[q]``       = (m_0 * ... * m_{q-1})^{-1} mod m_q,
    ``w[p, q]``      = (m_0 * ... * m_{p-1}) mod m_q for p < q (weights of digit p mod m_q),
    ``limbs``        = 32-bit limbs needed to hold any value in [0, M),
    ``M_limbs``      = M in 32-bit limbs (little-endian), as uint64.
    """

    def __init__(self, n: int):
        ms = MODULI[:n]
        if any(gcd(a, b) != 1 for i, a in enumerate(ms) for b in ms[i + 1:]):
            raise AssertionError("moduli table is not pairwise coprime")
        self.n = n
        self.moduli = ms
        self.M = prod(ms)
        self.inv = np.array([pow(prod(ms[:q]) % ms[q], -1, ms[q]) if q else 1 for q in range(n)], dtype=np.int64)
        w = np.zeros((n, n), dtype=np.int64)
        for q in range(n):
            for p in range(q):
                w[p, q] = prod(ms[:p]) % ms[q]
        self.w = w
        self.limbs = (self.M.bit_length() + 31) // 32
        self.M_limbs = np.array([(self.M >> (32 * j)) & 0xFFFFFFFF for j in range(self.limbs)], dtype=np.uint64)
        # direct CRT: e_q = (M/m_q) ((M/m_q)^-1 mod m_q), so C' = sum_q c_q e_q mod M
        e = [(self.M // m) * pow(self.M // m % m, -1, m) % self.M if n > 1 else 1 % m for m in ms]
        self.e_limbs = np.array([[(v >> (32 * j)) & 0xFFFFFFFF for j in range(self.limbs)] for v in e],
                                dtype=np.float64)  # (N, L), exact (< 2**32)
        self.e_over_M = np.array([pow(self.M // m % m, -1, m) / m if n > 1 else 0.0 for m in ms])  # e_q / M


@lru_cache(maxsize=None)
def garner_constants(n: int) -> GarnerConstants:
    """Cached :class:`GarnerConstants` for the first ``n`` moduli."""
    moduli_product(n)  # validates n
    return GarnerConstants(n)

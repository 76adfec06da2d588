"""Constants of the CRT reconstruction for the first N moduli of the table.

Garner's mixed-radix conversion (Knuth, TAOCP vol. 2, 4.3.2; Garner 1959) and the direct
CRT formula both need per-count constants derived from :data:`ozgemm.contracts.moduli.MODULI`;
they are exact integer data, computed once per count.
"""
from __future__ import annotations

from functools import lru_cache
from math import gcd, prod

import numpy as np

from ..contracts.moduli import MODULI

__all__ = ["GarnerConstants", "garner_constants"]


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
    if not 1 <= n <= len(MODULI):
        raise ValueError(f"moduli count must be in [1, {len(MODULI)}], got {n}")
    return GarnerConstants(n)

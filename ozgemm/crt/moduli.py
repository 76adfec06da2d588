"""Constants of the CRT reconstruction for the first N moduli of the table.

Garner's mixed-radix conversion (Knuth, TAOCP vol. 2, 4.3.2; Garner 1959) and the direct
CRT formula both need per-count constants derived from :data:`ozgemm.contracts.moduli.MODULI`;
they are exact integer data, computed once per count.
"""
from __future__ import annotations

from functools import lru_cache
from math import gcd, prod

import numpy as np

from ..contracts.moduli import GAUSSIAN_MODULI, MODULI, SQRT_MINUS_ONE

__all__ = ["GarnerConstants", "garner_constants", "crt_constants", "WIDE_MODULI", "WIDE_GAUSSIAN_MODULI",
           "WIDE_BOUND", "WIDE_K_BLOCK", "wide_moduli", "plan_moduli", "splits", "sqrt_minus_one", "split_factors"]


def _largest_primes_below(bound: int, count: int, residue: int | None = None) -> tuple:
    """The ``count`` largest odd primes below ``bound`` (``residue``: only those = residue mod 4)."""
    out, v = [], bound - 1
    while len(out) < count:
        if (v % 2 and (residue is None or v % 4 == residue)
                and all(v % d for d in range(3, int(v ** 0.5) + 1, 2))):
            out.append(v)
        v -= 1
    return tuple(out)


def plan_moduli(spec) -> tuple:
    """The moduli a plan names: the first ``spec`` of :data:`MODULI` (an int, the moduli
    count of a real product's plan) or ``spec`` itself (a tuple: e.g. a complex product's
    :data:`~ozgemm.contracts.moduli.GAUSSIAN_MODULI` prefix)."""
    if isinstance(spec, (int, np.integer)):
        return MODULI[:int(spec)]
    return tuple(int(m) for m in spec)


def splits(moduli) -> bool:
    """Whether every modulus of the tuple ``moduli`` has a square root of -1 that
    :func:`sqrt_minus_one` gives (the moduli of :data:`GAUSSIAN_MODULI` and primes = 1 mod 4:
    odd), so that a complex product modulo it is two real products."""
    return not isinstance(moduli, (int, np.integer)) and len(moduli) > 0 and all(
        sqrt_minus_one(m) is not None for m in moduli)


@lru_cache(maxsize=None)
def sqrt_minus_one(m: int) -> int | None:
    """A t in [0, m) with t**2 = -1 mod m for odd m of :data:`GAUSSIAN_MODULI` or a prime
    m = 1 mod 4 (Euler's criterion: t = c**((m-1)/4) for a quadratic non-residue c); None
    for other m."""
    m = int(m)
    if m in GAUSSIAN_MODULI:
        return SQRT_MINUS_ONE[GAUSSIAN_MODULI.index(m)]
    if m % 4 != 1 or any(m % d == 0 for d in range(3, int(m ** 0.5) + 1, 2)):
        return None
    c = next(c for c in range(2, m) if pow(c, (m - 1) // 2, m) == m - 1)
    t = pow(c, (m - 1) // 4, m)
    assert (t * t + 1) % m == 0
    return t


@lru_cache(maxsize=None)
def split_factors(moduli: tuple) -> tuple:
    """(t, f_re, f_im) of moduli that :func:`splits`: per modulus m the square root t of -1
    (:func:`sqrt_minus_one`) and the factors of the split form's parts, f_re = 1/2 and
    f_im = 1/(2t) mod m (Re = (P+ + P-) f_re, Im = (P+ - P-) f_im), each a tuple of ints."""
    t = tuple(sqrt_minus_one(m) for m in moduli)
    return (t, tuple(pow(2, -1, m) for m in moduli),
            tuple(pow(2 * r, -1, m) for r, m in zip(t, moduli)))


#: the k-block of the CPU engine's float64 GEMMs of residues
WIDE_K_BLOCK = 1024


def _wide_bound(kb: int) -> int:
    """The largest odd p such that kb sums of products of symmetric residues mod p, |c| <=
    kb ((p-1)/2)**2, satisfy |c + 1/2| < 2**51 / (1 + 2**-54): the exactness condition of the
    CPU engine's reduction c - p floor((c + 1/2) fl(1/p)) (kernels/numpy.py)."""
    from fractions import Fraction
    from math import isqrt

    lim = Fraction(2**51) / (1 + Fraction(1, 2**54))
    h = isqrt((lim.numerator // lim.denominator) // kb)
    while kb * h * h + Fraction(1, 2) >= lim:
        h -= 1
    return 2 * h + 1


#: the largest modulus :data:`WIDE_MODULI` may hold: 2965821 (about 2**21.5) for k-blocks of 1024
WIDE_BOUND = _wide_bound(WIDE_K_BLOCK)

#: the CPU engine's own moduli: the largest primes up to :data:`WIDE_BOUND`, enough for a
#: product at least 4 times the product of all of :data:`MODULI` (pairwise coprime: distinct primes)
WIDE_MODULI = _largest_primes_below(WIDE_BOUND + 1, (prod(MODULI).bit_length() + 2 + 20) // 21)

#: the CPU engine's moduli for complex plans of :data:`GAUSSIAN_MODULI`: the largest primes
#: p = 1 mod 4 up to :data:`WIDE_BOUND` (-1 is a square modulo each), enough for a product at
#: least 4 times the product of the whole table
WIDE_GAUSSIAN_MODULI = _largest_primes_below(WIDE_BOUND + 1, (prod(GAUSSIAN_MODULI).bit_length() + 2 + 20) // 21,
                                             residue=1)


class GarnerConstants:
    """Constants of the CRT reconstruction for a set of pairwise-coprime moduli: the first
    ``n`` of the table (``GarnerConstants(n)``) or any tuple of moduli below 2**22
    (``GarnerConstants(moduli)``, the CPU engine's :data:`WIDE_MODULI`).

    For moduli m_1..m_N (0-based ``q``):
    ``inv[q]``       = (m_0 * ... * m_{q-1})^{-1} mod m_q,
    ``w[p, q]``      = (m_0 * ... * m_{p-1}) mod m_q for p < q (weights of digit p mod m_q),
    ``limbs``        = 32-bit limbs needed to hold any value in [0, M),
    ``M_limbs``      = M in 32-bit limbs (little-endian), as uint64.
    """

    def __init__(self, n):
        ms = MODULI[:n] if isinstance(n, int) else tuple(int(m) for m in n)
        n = len(ms)
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
        # the direct formula's GEMM reads e_q in base 2**e_bits (e_bits divides 32), so that
        # every partial sum sum_q c_q e_part stays below 2**53 (c_q < m_q): exact on any BLAS
        mmax = max(ms)
        self.e_bits = next(h for h in (32, 16, 8) if n * (mmax - 1) * ((1 << h) - 1) < 2**53)
        h = self.e_bits
        self.e_parts = np.array([[(v >> (h * j)) & ((1 << h) - 1) for j in range(self.limbs * 32 // h)] for v in e],
                                dtype=np.float64)  # (N, L 32 / h)
        # the limb recombination and Y - t0 M run in int64: |terms| < N mmax 2**33 (see crt_reconstruct)
        assert n * mmax < 2**28, "too many or too large moduli for the int64 reconstruction"
        self.e_over_M = np.array([pow(self.M // m % m, -1, m) / m for m in ms])  # e_q / M (n = 1: 1/m)


@lru_cache(maxsize=None)
def crt_constants(moduli: tuple) -> GarnerConstants:
    """Cached :class:`GarnerConstants` for any tuple of pairwise-coprime moduli."""
    return GarnerConstants(tuple(moduli))


@lru_cache(maxsize=None)
def wide_moduli(spec) -> tuple:
    """The fewest leading :data:`WIDE_MODULI` whose product P is at least 4 M, M the product
    of the plan's moduli (:func:`plan_moduli` of ``spec``): an integer with |C'| < M/2 + 1 <= P/4
    is then determined by its residues modulo them, with the margin that lets the
    reconstruction round its quotient (:func:`~ozgemm.crt.reconstruct.crt_reconstruct` with
    ``bound``). Plan moduli that :func:`splits` take :data:`WIDE_GAUSSIAN_MODULI`, which split
    too."""
    M = prod(plan_moduli(spec))
    table = WIDE_GAUSSIAN_MODULI if splits(spec) else WIDE_MODULI
    P, j = 1, 0
    while P < 4 * M:
        P *= table[j]
        j += 1
    return table[:j]


@lru_cache(maxsize=None)
def garner_constants(n) -> GarnerConstants:
    """Cached :class:`GarnerConstants` for the first ``n`` moduli (or a plan's tuple of moduli,
    :func:`plan_moduli`)."""
    if not isinstance(n, (int, np.integer)):
        return crt_constants(plan_moduli(n))
    if not 1 <= n <= len(MODULI):
        raise ValueError(f"moduli count must be in [1, {len(MODULI)}], got {n}")
    return GarnerConstants(n)

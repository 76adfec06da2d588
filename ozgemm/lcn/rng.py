"""Counter-based random numbers shared bit for bit by the CPU and the CUDA annealer.

Every random number is a pure function of ``(seed, iteration, candidate, draw)``:
``splitmix64(seed*K1 ^ it*K2 ^ cand*K3 ^ draw*K4)`` (all arithmetic mod 2**64), the
SplitMix64 finaliser of Steele, Lea & Flood (OOPSLA 2014). No RNG state is stored, so a
GPU thread block and the CPU loop draw exactly the same numbers for the same candidate.
The same formulas are in ``lcn_kernels.cu`` (``lcn_hash``, ``lcn_below``, ``lcn_unit``).
"""
from __future__ import annotations

MASK = (1 << 64) - 1
K1 = 0x9E3779B97F4A7C15
K2 = 0xD1B54A32D192ED03
K3 = 0xABC98388FB8FAC03
K4 = 0x8CB92BA72F3D8DD7

__all__ = ["splitmix64", "draw", "below", "unit"]


def splitmix64(z: int) -> int:
    """SplitMix64 finaliser of a 64-bit integer (returns an int in [0, 2**64))."""
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def draw(seed: int, it: int, cand: int, d: int) -> int:
    """The 64-bit random word number ``d`` of candidate ``cand`` in iteration ``it``."""
    key = ((seed * K1) & MASK) ^ ((it * K2) & MASK) ^ ((cand * K3) & MASK) ^ ((d * K4) & MASK)
    return splitmix64(key)


def below(h: int, n: int) -> int:
    """Map a random word to an integer in ``[0, n)`` (multiply-high; ``0 < n < 2**32``)."""
    return ((h >> 32) * n) >> 32


def unit(h: int) -> float:
    """Map a random word to a float in ``[0, 1)`` with 53 random bits (exact)."""
    return (h >> 11) * (1.0 / 9007199254740992.0)

"""CPU engine (numpy).

``kind="blas"`` runs the int8 x int8 products through float32 BLAS (sgemm) on k-blocks of at
most 1024: every product of int8 values has |.| <= 2**14, so every partial sum of a block
has |.| <= 1024 * 2**14 = 2**24 and is an integer exactly representable in float32 —
whatever order BLAS adds in, the block result is exact. Blocks are then added in float64
(|sum| <= k 2**14 < 2**53 for k < 2**39: exact) and converted to int64.
``kind="int64"`` is the plain exact reference: numpy int64 matmul (slow, no BLAS).
Tests check both engines bit-identical, including at the k = 1024 block boundary.
"""
from __future__ import annotations

import numpy as np

from .base import Engine

__all__ = ["CpuEngine", "SGEMM_EXACT_K", "available_memory"]


def available_memory() -> int:
    """Bytes of memory the OS reports available (MemAvailable), or 4 GiB if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 4 << 30

#: largest k-block for which float32 accumulation of int8 products is provably exact
SGEMM_EXACT_K = 2**24 // 2**14


class CpuEngine(Engine):
    """Exact integer GEMMs on the CPU (see module docstring for the exactness proof)."""

    xp = np

    #: bytes of workspace one call may use; None: half of the memory the OS reports available
    memory_budget_bytes = None

    def __init__(self, kind: str = "blas"):
        if kind not in ("blas", "int64"):
            raise ValueError(f"unknown CPU engine kind {kind!r}")
        self.kind = kind
        self.name = "cpu" if kind == "blas" else "cpu-int64"

    def memory_budget(self) -> int:
        """Workspace budget in bytes (``memory_budget_bytes`` or half of MemAvailable)."""
        if self.memory_budget_bytes is not None:
            return int(self.memory_budget_bytes)
        return available_memory() // 2

    def _mm(self, a, bt, as_float=False):
        """Exact (..., m, k) int8 @ (..., n, k)^T int8 -> (..., m, n) int64 (float64 holding
        the same exact integers with ``as_float``, blas kind only)."""
        k = a.shape[-1]
        out_shape = a.shape[:-1] + (bt.shape[-2],)
        if k == 0:
            return np.zeros(out_shape, dtype=np.int64)
        if self.kind == "int64":
            return np.matmul(a.astype(np.int64), np.swapaxes(bt, -1, -2).astype(np.int64))
        acc = None
        for k0 in range(0, k, SGEMM_EXACT_K):
            k1 = min(k, k0 + SGEMM_EXACT_K)
            blk = np.matmul(a[..., k0:k1].astype(np.float32),
                            np.swapaxes(bt[..., k0:k1], -1, -2).astype(np.float32))
            acc = blk.astype(np.float64) if acc is None else acc + blk
        return acc if as_float else acc.astype(np.int64)

    def gemm_exact(self, a, bt):
        return self._mm(a, bt)

    def gemm_residues(self, a, bt, moduli):
        """Residues (N, m, n) in [0, m_q): int32 when k <= 131071 (|products| < 2**31, and
        32-bit division is twice as fast as 64-bit), else int64."""
        k = a.shape[-1]
        small = self.kind == "blas" and k <= (2**31 - 1) // 2**14
        c = self._mm(a, bt, as_float=small)
        if small:
            c = c.astype(np.int32)
        m = np.asarray(moduli, dtype=c.dtype).reshape((-1,) + (1,) * (c.ndim - 1))
        return c % m

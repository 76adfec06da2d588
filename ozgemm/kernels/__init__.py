"""Engines: exact integer GEMMs (+ hot elementwise steps) for one array library each.

``get_engine(name_or_None, xp)`` returns the engine for an array namespace:
``"cpu"`` (numpy, BLAS-backed exact int8 GEMM), ``"cpu-int64"`` (numpy int64 matmul, the
plain exact reference engine), ``"cuda"`` (cupy + cuBLAS INT8, when available).
"""
from __future__ import annotations

from .base import Engine
from .numpy import CpuEngine

__all__ = ["Engine", "CpuEngine", "get_engine"]

_CACHE: dict = {}


def get_engine(name=None, xp=None) -> Engine:
    """Engine by name, or the default engine for the array namespace ``xp``.

    Raises
    ------
    ValueError
        Unknown engine name, or an engine that does not match the operands' library.
    """
    import numpy as np

    if isinstance(name, Engine):
        return name
    if name is None:
        name = "cpu" if (xp is None or xp is np) else "cuda"
    if name not in _CACHE:
        if name == "cpu":
            _CACHE[name] = CpuEngine("blas")
        elif name == "cpu-int64":
            _CACHE[name] = CpuEngine("int64")
        elif name == "cuda":
            try:
                from .cuda.backend import CudaEngine
            except ImportError as exc:  # pragma: no cover - needs a GPU build
                raise ValueError(f"the cuda engine is not available: {exc}") from None
            _CACHE[name] = CudaEngine()
        else:
            raise ValueError(f"unknown engine {name!r}; known: 'cpu', 'cpu-int64', 'cuda'")
    eng = _CACHE[name]
    if xp is not None and eng.xp is not xp:
        raise ValueError(f"engine {name!r} works on {eng.xp.__name__} arrays, the operands are {xp.__name__} arrays")
    return eng

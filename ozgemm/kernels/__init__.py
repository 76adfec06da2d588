"""Backends: the phases of the pipelines and the exact integer GEMMs, one per array library.

``get_backend(name_or_None, xp)`` returns the backend for an array namespace: ``"cpu"``
(numpy, BLAS-backed exact int8 GEMM), ``"cpu-int64"`` (numpy int64 matmul, the plain exact
reference), ``"cuda"`` (cupy + cuBLAS INT8, when available). Every backend implements
:class:`~ozgemm.kernels.base.Backend`.
"""
from __future__ import annotations

from .base import Backend
from .numpy import NumpyBackend

__all__ = ["Backend", "NumpyBackend", "get_backend", "get_engine"]

_CACHE: dict = {}


def get_backend(name=None, xp=None) -> Backend:
    """Backend by name (or a backend object itself), or the default for the array namespace ``xp``.

    Raises
    ------
    ValueError
        Unknown name, or a backend that does not match the operands' library.
    """
    import numpy as np

    if name is not None and not isinstance(name, str):
        if not isinstance(name, Backend):
            raise TypeError(f"engine must be a name or a Backend, got {type(name).__name__}")
        eng = name
    else:
        if name is None:
            name = "cpu" if (xp is None or xp is np) else "cuda"
        if name not in _CACHE:
            if name == "cpu":
                _CACHE[name] = NumpyBackend("blas")
            elif name == "cpu-int64":
                _CACHE[name] = NumpyBackend("int64")
            elif name == "cuda":
                try:
                    from .cuda.backend import CudaBackend
                except ImportError as exc:  # pragma: no cover - needs CuPy
                    raise ValueError(f"the cuda backend is not available ({exc}); install CuPy: "
                                     "pip install 'ozgemm[cuda13]' or 'ozgemm[cuda12]'") from None
                _CACHE[name] = CudaBackend()
            else:
                raise ValueError(f"unknown engine {name!r}; known: 'cpu', 'cpu-int64', 'cuda'")
        eng = _CACHE[name]
    if xp is not None and eng.xp is not xp:
        raise ValueError(f"engine {eng.name!r} works on {eng.xp.__name__} arrays, the operands are {xp.__name__} arrays")
    return eng


#: the name the ``engine=`` arguments of the public API use
get_engine = get_backend

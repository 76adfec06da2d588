"""Array-namespace dispatch shared by every module: numpy on the CPU, cupy on the GPU.

One place decides which array library an input belongs to, so that algorithms are
written once against ``xp`` (see DESIGN.md, "Pipeline").
"""
from __future__ import annotations

import functools

import numpy as np

__all__ = ["cupy_or_none", "gpu_available", "is_cupy_array", "array_namespace", "to_numpy"]


@functools.lru_cache(maxsize=1)
def cupy_or_none():
    """Return the ``cupy`` module if it imports and sees at least one GPU, else None."""
    try:
        import cupy  # noqa: F401

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        return cupy
    except Exception:  # ImportError, CUDA driver errors: no usable GPU
        return None


def gpu_available() -> bool:
    """True when CuPy is importable and a CUDA device is visible."""
    return cupy_or_none() is not None


def is_cupy_array(x) -> bool:
    """True for a cupy.ndarray (checked without importing cupy when it is absent)."""
    t = type(x)
    return t.__module__.split(".")[0] == "cupy" and t.__name__ == "ndarray"


def array_namespace(*arrays):
    """Return ``numpy`` or ``cupy`` for the given arrays.

    Raises
    ------
    TypeError
        If numpy and cupy arrays are mixed, or cupy arrays live on different devices.
    """
    kinds = {is_cupy_array(a) for a in arrays if a is not None}
    if kinds == {True, False}:
        raise TypeError(
            "mixed numpy and cupy operands: move both to the same library "
            "(cupy.asarray(x) or x.get()) before calling"
        )
    if kinds == {True}:
        import cupy

        devs = {a.device.id for a in arrays if a is not None}
        if len(devs) > 1:
            raise TypeError(f"cupy operands live on different GPUs {sorted(devs)}; copy them to one device")
        return cupy
    return np


def to_numpy(x):
    """Return a numpy array for a numpy or cupy array (copying from the device if needed)."""
    if is_cupy_array(x):
        return x.get()
    return np.asarray(x)

"""Array-namespace dispatch shared by every module: numpy on the CPU, cupy on the GPU.

One place decides which array library an input belongs to, so that algorithms are
written once against ``xp`` (see docs/design.md, "Pipeline").
"""
from __future__ import annotations

import functools

import numpy as np

__all__ = ["cupy_or_none", "gpu_available", "is_cupy_array", "array_namespace", "to_numpy", "as_float64", "ignore_fp_errors"]


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


@functools.lru_cache(maxsize=1)
def _widen_kernel():
    import cupy

    from importlib import resources

    # widen_f32_bits of kernels/cuda/common.cuh: one implementation for every kernel
    common = (resources.files("ozgemm.kernels") / "cuda" / "common.cuh").read_text()
    return cupy.ElementwiseKernel("uint32 u", "float64 y", "y = widen_f32_bits(u);", "ozgemm_widen_f32",
                                  preamble=common.replace("#pragma once", ""))


def as_float64(x, contiguous=False):
    """``x`` (float32 or float64, numpy or cupy) as float64, exactly.

    CuPy compiles every kernel, its own casts included, with ``-ftz=true``, so
    ``cupy_array.astype(float64)`` flushes float32 subnormals to zero. The GPU path widens
    float32 with integer operations on the bit pattern instead (exact for every value,
    NaN payloads and signed zeros kept). Returns ``x`` itself when nothing needs to change.
    """
    if not is_cupy_array(x):
        x = x.astype(np.float64, copy=False)
        return np.ascontiguousarray(x) if contiguous else x
    import cupy

    if x.dtype == cupy.float32:
        out = cupy.empty(x.shape, dtype=cupy.float64)
        _widen_kernel()(x.view(cupy.uint32), out)  # out is C-contiguous
        return out
    x = x.astype(cupy.float64, copy=False)
    return cupy.ascontiguousarray(x) if contiguous else x


def ignore_fp_errors(xp):
    """A context silencing numpy's floating-point warnings (overflow to inf, underflow in
    ``ldexp``) where they are expected; CuPy raises none, so it gets a null context."""
    if xp is np:
        return np.errstate(all="ignore")
    import contextlib

    return contextlib.nullcontext()

"""The engine's one cuBLAS routine: the strided-batched INT8 GEMM with exact int32
accumulation (``cublasGemmStridedBatchedEx``, ``CUBLAS_COMPUTE_32I``).

It is called through ctypes on the library cupy itself loaded, with cupy's handle: cupy's
own wrapper rebinds the handle's stream on every call and refuses that while a stream
captures a CUDA graph, so it cannot be recorded (:mod:`.graphs`); cuBLAS itself allows
capture (cuBLAS documentation, "CUDA Graphs Support"). The handle is rebound only when it is
on another stream than the current one (a capture binds it before it begins)."""
from __future__ import annotations

import ctypes
import functools

import cupy as cp

_CUDA_R_8I, _CUDA_R_32I = 3, 10
_COMPUTE_32I = 72
_OP_N, _OP_T = 0, 1
_GEMM_DEFAULT = -1
_ONE = ctypes.c_int32(1)
_ZERO = ctypes.c_int32(0)


@functools.lru_cache(maxsize=None)
def _lib():
    """libcublas as cupy loaded it: among the process's mappings, the one of cupy's CUDA major
    version (another library may have loaded another one), else the first, else by soname."""
    from cupy_backends.cuda.libs import cublas  # noqa: F401  (loads the library)

    major = cp.cuda.runtime.runtimeGetVersion() // 1000
    paths = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.rstrip("\n").split(None, 5)
                path = fields[5].removesuffix(" (deleted)") if len(fields) == 6 else ""
                if "/libcublas.so" in path and path not in paths:
                    paths.append(path)
    except OSError:
        pass
    paths.sort(key=lambda p: f"libcublas.so.{major}" not in p)  # cupy's major first (stable)
    try:
        lib = ctypes.CDLL(paths[0] if paths else f"libcublas.so.{major}")
    except OSError as exc:
        raise ImportError(f"ozgemm: cannot load the cuBLAS library cupy uses ({exc})") from None
    v, i, ll = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
    lib.cublasGemmStridedBatchedEx.argtypes = [v, i, i, i, i, i, v, v, i, i, ll, v, i, i, ll, v, v, i, i, ll, i, i, i]
    lib.cublasGemmStridedBatchedEx.restype = i
    lib.cublasGetStream_v2.argtypes = [v, ctypes.POINTER(v)]
    lib.cublasGetStream_v2.restype = i
    lib.cublasSetStream_v2.argtypes = [v, v]
    lib.cublasSetStream_v2.restype = i
    return lib


def _check(status: int, what: str) -> None:
    if status:
        raise RuntimeError(f"ozgemm: {what} failed with cuBLAS status {status}")


def handle() -> int:
    """cupy's cuBLAS handle of the current device, bound to the current stream."""
    lib = _lib()
    h = cp.cuda.device.get_cublas_handle()
    stream = cp.cuda.get_current_stream().ptr
    cur = ctypes.c_void_p()
    _check(lib.cublasGetStream_v2(h, ctypes.byref(cur)), "cublasGetStream")
    if (cur.value or 0) != stream:
        _check(lib.cublasSetStream_v2(h, stream), "cublasSetStream")
    return h


def gemm_i8(h, a, bt, c, q0: int, count: int, r0: int, r1: int) -> None:
    """``c[q, r0:r1] = a[q, r0:r1] @ bt[q].T`` exactly for q = q0 .. q0 + count - 1, in one
    strided-batched call. ``a`` (Q, mp, kb) and ``bt`` (Q, np, kb) int8, ``c`` (Q, mp, np)
    int32, all C-contiguous; kb <= 2**17 - 16 keeps every sum exact in int32 (|a|, |b| <= 128);
    mp, np, kb multiples of 4 (cuBLAS's INT8 alignment). Seen column-major, the call computes
    C^T (np x rows, ld np) = Bt (kb x np, ld kb)^T A (kb x rows, ld kb)."""
    np_, kb = bt.shape[1], bt.shape[2]
    _check(_lib().cublasGemmStridedBatchedEx(
        h, _OP_T, _OP_N, np_, r1 - r0, kb,
        ctypes.byref(_ONE), bt.data.ptr + q0 * bt.strides[0], _CUDA_R_8I, bt.strides[1], bt.strides[0],
        a.data.ptr + q0 * a.strides[0] + r0 * a.strides[1], _CUDA_R_8I, a.strides[1], a.strides[0],
        ctypes.byref(_ZERO), c.data.ptr + q0 * c.strides[0] + r0 * c.strides[1], _CUDA_R_32I, c.strides[1] // 4,
        c.strides[0] // 4, count, _COMPUTE_32I, _GEMM_DEFAULT), "cublasGemmStridedBatchedEx (INT8)")

"""GEMMul8 timed next to ozgemm in one process (``ozgemm bench --device gpu --gemmul8 SO``).

GEMMul8 (RIKEN-RCCS; Ozaki, Uchino, Imamura, "Ozaki Scheme II: A GEMM-oriented emulation of
floating-point matrix multiplication using an integer modular technique", arXiv:2504.08009,
2025) is the reference C++/CUDA library of Ozaki scheme II. ozgemm does not ship or build it:
``SO`` is a shared library built by the user (for example from the shim of the project's
workspace, ``peers/gemmul8``) that exports, with C linkage and row-major operands on the
device::

    size_t gm_worksize(size_t m, size_t n, size_t k, unsigned moduli, int complex);
    int gm_dgemm(size_t m, size_t n, size_t k, const double *A, const double *B, double *C,
                 unsigned moduli, int fast, void *work);      /* likewise gm_sgemm, gm_zgemm */

A configuration is ``fN`` (GEMMul8's fast mode with N moduli) or ``aN`` (accurate mode).
"""
from __future__ import annotations

import ctypes
import re

__all__ = ["GEMMul8", "parse_config", "DEFAULT_CONFIGS"]

#: the configurations timed by default, per operand dtype: GEMMul8's DGEMM/SGEMM/ZGEMM around
#: the accuracy of ozgemm's contracts
DEFAULT_CONFIGS = {"float64": ["f14", "f15", "f16", "a14", "a15", "a16"],
                   "float32": ["f6", "f7", "f8", "a7", "a8"],
                   "complex128": ["f15", "f16", "f17", "a16", "a17"]}

_ENTRY = {"float64": "gm_dgemm", "float32": "gm_sgemm", "complex128": "gm_zgemm"}


def parse_config(text: str):
    """``"f15"`` -> (15, True), ``"a16"`` -> (16, False); ValueError for anything else."""
    m = re.fullmatch(r"([fa])(\d{1,2})", text)
    if not m or not 2 <= int(m.group(2)) <= 20:
        raise ValueError(f"GEMMul8 configuration {text!r}: expected fN (fast) or aN (accurate), N moduli in 2..20")
    return int(m.group(2)), m.group(1) == "f"


class GEMMul8:
    """A loaded GEMMul8 shim (module docstring). Raises ValueError naming the path when it
    cannot be loaded or lacks an entry point."""

    def __init__(self, path: str):
        try:
            lib = ctypes.CDLL(path)
            lib.gm_worksize.restype = ctypes.c_size_t
            lib.gm_worksize.argtypes = [ctypes.c_size_t] * 3 + [ctypes.c_uint, ctypes.c_int]
            self._fns = {}
            for dt, name in _ENTRY.items():
                f = getattr(lib, name, None)
                if f is not None:
                    f.argtypes = [ctypes.c_size_t] * 3 + [ctypes.c_void_p] * 3 + [ctypes.c_uint, ctypes.c_int,
                                                                                  ctypes.c_void_p]
                    self._fns[dt] = f
        except (OSError, AttributeError) as exc:
            raise ValueError(f"cannot load the GEMMul8 shim {path!r}: {exc}") from None
        self.path, self._lib = path, lib

    def supports(self, dtype) -> bool:
        """Whether the shim has a product for operands of ``dtype``."""
        return str(dtype) in self._fns

    def runner(self, a, b, config: str):
        """A function computing ``a @ b`` (cupy (m, k) and (k, n), C-contiguous, one dtype the
        shim supports) with ``config``, returning its result; workspace and result allocated
        once here."""
        import cupy as cp

        moduli, fast = parse_config(config)
        f = self._fns[str(a.dtype)]
        (m, k), n = a.shape, b.shape[1]
        a, b = cp.ascontiguousarray(a), cp.ascontiguousarray(b)
        work = cp.empty(self._lib.gm_worksize(m, n, k, moduli, int(a.dtype.kind == "c")), dtype=cp.uint8)
        c = cp.empty((m, n), dtype=a.dtype)

        def run():
            f(m, n, k, a.data.ptr, b.data.ptr, c.data.ptr, moduli, int(fast), work.data.ptr)
            return c

        return run

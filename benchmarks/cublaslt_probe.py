"""Probe: does any cuBLASLt algorithm compute ozgemm's INT8 GEMMs faster than the call it uses now?

What it measures
  The product ozgemm runs once per modulus (``CudaEngine._gemm_batched_i32``): C (m x n, int32,
  row-major) = A (m x k, int8, row-major) times B given as bt (n x k, int8, K-contiguous),
  32-bit integer compute, alpha = 1 and beta = 0 as int32 host scalars. In cuBLAS's column-major
  terms that is C^T (n x m, ld n) = op_T(bt stored k x n, ld k) * op_N(A stored k x m, ld k), the
  "TN" layout. The project issues it as ``cublasGemmStridedBatchedEx`` (batch 1) through CuPy.
  Here the same product is built with cuBLASLt (``cublasLtMatmul``, the library loaded with
  ctypes); ``cublasLtMatmulAlgoGetHeuristic`` is asked for up to ``--algos`` algorithms with a
  ``--workspace-mib`` workspace, every algorithm it returns with state SUCCESS is run once, its
  int32 output compared for exact equality with the project's (pairs 0 and N-1), and then timed
  next to the project's path. The project's own output is checked against a float64 cuBLAS DGEMM
  of the same integers (exact: every partial sum is an integer of magnitude <= k 2**14 < 2**53;
  run without cuBLAS's FP64-emulation environment variables).
  ``--batched`` adds one strided-batched cuBLASLt call over all N GEMMs (batch attributes on the
  layouts, its own heuristic query) and one ``cublasGemmStridedBatchedEx`` call with batch N,
  against N separate calls (hot regime only: one call is N GEMMs).

Timing scope and regimes (CUDA events on the current CuPy stream; GEMM calls only)
  Inside the timed region: the GEMM call(s) as issued, including anything cuBLAS launches with
  them (the legacy path's ~1 us memset). Outside: heuristic queries, descriptor creation, input
  generation, the first call of every algorithm (run untimed in the exactness check, which also
  loads its kernel), host<->device transfers (there are none). Each timed region starts behind a
  one-thread spin kernel (``--lead-us``, default 1000 us) so that the host's call overhead is
  hidden and the events time the GPU work only; samples where the host fell behind anyway are
  counted and printed as "late".
  cool: one GEMM after a ``--sleep-ms`` (20 ms) host sleep with the GPU idle; median of
        ``--cool-reps`` samples, candidates interleaved within every repetition.
  hot:  N (``--gemms``, 16 = the moduli of an fp64 product) GEMMs back to back on the N input pairs,
        time / N; the whole chain of all candidates x ``--hot-rounds`` rounds is queued without host
        synchronisation after ``--warm-bursts`` untimed bursts of the project's path, so every
        candidate runs in the power-limited state; median over the rounds.
  BENCHMARKING.md asks for >= 10 repetitions: the defaults are 10 cool samples and 10 hot rounds.
  Run time: about 10-20 s a size; when the estimated timing of one size exceeds ``--budget-s``
  (20 s) the algorithms with the highest heuristic indices are left untimed, and the output says so.

Baseline, measured in the same run: the project's current path (``CudaEngine._gemm_batched_i32``,
one call per product) in the same regimes. The ratio printed is cuBLASLt / project (< 1: faster).
This is a phase (one-kernel) comparison, not an end-to-end one; the outcome next to the speed is
exactness (identical int32 outputs), the only accuracy an INT8 GEMM here can have.

Input: int8 uniform in [-128, 127] from ``cupy.random`` (``--seed``, default 0); N distinct pairs
(A_q, bt_q) per size, so the hot chain rotates its inputs (8192^3: 128 MiB a pair, > L2).
Hardware/software context (GPU, driver, CUDA runtime, cuBLAS, cuBLASLt, CuPy, NumPy) is printed
first and written to ``--json``.

Run on the device (from the repository root):
  source benchmarks/device_env.sh; python3 benchmarks/cublaslt_probe.py 4096 8192
  options: --batched, --json $OUT/cublaslt_probe.json, --lib /path/libcublasLt.so.13,
           --header /path/cublasLt.h (decodes tile/stages/cluster ids and cross-checks the enum
           values below; looked up next to the loaded library and in the CUDA include dirs)
Sizes: "N" (N^3) or "MxNxK"; each a multiple of 16, k within one exact int32 block.
Exit status: 1 when any algorithm that ran gave an output different from the project's (or the
project's differs from the DGEMM reference), else 0. An algorithm whose cublasLtMatmul call returns
an error status is listed as ERROR with that status and left out of the timing.
"""
from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import glob
import json
import os
import re
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # the repository

# -- constants -------------------------------------------------------------------------------
# Values from the cuBLAS 13.1.0.3 headers (nvidia-cublas wheel: include/cublas_api.h,
# include/cublasLt.h) and CUDA 13.0 include/library_types.h; checked with a C program compiled
# against those headers. Re-checked at run time against a cublasLt.h when one is found.
CUBLAS_STATUS_SUCCESS = 0             # cublas_api.h:90
CUBLAS_STATUS_INVALID_VALUE = 7       # cublas_api.h:93
CUBLAS_OP_N = 0                       # cublas_api.h:109
CUBLAS_OP_T = 1                       # cublas_api.h:110
CUBLAS_COMPUTE_32I = 72               # cublas_api.h:217
CUDA_R_8I = 3                         # library_types.h:71
CUDA_R_32I = 10                       # library_types.h:79
CUBLASLT_POINTER_MODE_HOST = 0        # cublasLt.h:946 (= CUBLAS_POINTER_MODE_HOST, cublas_api.h:116)
CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5            # cublasLt.h:1155, int32_t
CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6   # cublasLt.h:1171, int64_t (elements)
CUBLASLT_MATMUL_DESC_POINTER_MODE = 2  # cublasLt.h:1289, int32_t
CUBLASLT_MATMUL_DESC_TRANSA = 3        # cublasLt.h:1295, int32_t (cublasOperation_t)
CUBLASLT_MATMUL_DESC_TRANSB = 4        # cublasLt.h:1301, int32_t
CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1      # cublasLt.h:2088, uint64_t
# cublasLtMatmulAlgoConfigAttributes_t (cublasLt.h:2518-2570): (name, value, C type of the value)
ALGO_CONFIG_ATTRS = (
    ("CUBLASLT_ALGO_CONFIG_ID", 0, ctypes.c_int32),
    ("CUBLASLT_ALGO_CONFIG_TILE_ID", 1, ctypes.c_uint32),
    ("CUBLASLT_ALGO_CONFIG_SPLITK_NUM", 2, ctypes.c_int32),
    ("CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME", 3, ctypes.c_uint32),
    ("CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING", 4, ctypes.c_uint32),
    ("CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION", 5, ctypes.c_uint32),
    ("CUBLASLT_ALGO_CONFIG_STAGES_ID", 6, ctypes.c_uint32),
    ("CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID", 7, ctypes.c_uint16),
    ("CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID", 8, ctypes.c_uint16),
)
_SHORT = {"ID": "id", "TILE_ID": "tile", "SPLITK_NUM": "splitK", "REDUCTION_SCHEME": "red",
          "CTA_SWIZZLING": "swz", "CUSTOM_OPTION": "cust", "STAGES_ID": "stages",
          "INNER_SHAPE_ID": "inner", "CLUSTER_SHAPE_ID": "cluster"}
# id -> name prefixes in cublasLt.h, used only when a header is found
_DECODE = {"tile": "CUBLASLT_MATMUL_TILE_", "stages": "CUBLASLT_MATMUL_STAGES_",
           "cluster": "CUBLASLT_CLUSTER_SHAPE_", "inner": "CUBLASLT_MATMUL_INNER_SHAPE_"}
_CHECKED = {k: v for k, v in globals().items() if re.fullmatch(r"CUBLAS(LT)?_[A-Z0-9_]+|CUDA_R_\w+", k)}
_CHECKED.update({name: val for name, val, _ in ALGO_CONFIG_ATTRS})
_STATUS_NAMES = {0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
                 7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
                 13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR",
                 15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR"}  # cublas_api.h:90-99


class cublasLtMatmulAlgo_t(ctypes.Structure):
    """cublasLt.h:113: ``typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;`` (64 bytes)."""
    _fields_ = [("data", ctypes.c_uint64 * 8)]


class cublasLtMatmulHeuristicResult_t(ctypes.Structure):
    """cublasLt.h:2221-2245 (96 bytes; offsets algo 0, workspaceSize 64, state 72, wavesCount 76,
    reserved 80, checked with offsetof against the header)."""
    _fields_ = [("algo", cublasLtMatmulAlgo_t), ("workspaceSize", ctypes.c_size_t),
                ("state", ctypes.c_int), ("wavesCount", ctypes.c_float), ("reserved", ctypes.c_int * 4)]


assert ctypes.sizeof(cublasLtMatmulAlgo_t) == 64
assert ctypes.sizeof(cublasLtMatmulHeuristicResult_t) == 96
assert cublasLtMatmulHeuristicResult_t.state.offset == 72 and cublasLtMatmulHeuristicResult_t.wavesCount.offset == 76

_vp, _int, _sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
_P = ctypes.POINTER
# name: (restype, argtypes), as declared in cublasLt.h (13.1.0.3). Handles and descriptors are
# pointers (cublasLtHandle_t = struct cublasLtContext*, cublasLt.h:67; *Desc_t/Layout_t/Preference_t
# are pointers to opaque structs); enums are int; cudaStream_t is a pointer.
_PROTOS = {
    "cublasLtCreate": (_int, [_P(_vp)]),                                                   # :69
    "cublasLtDestroy": (_int, [_vp]),                                                      # :71
    "cublasLtGetStatusName": (ctypes.c_char_p, [_int]),                                    # :73
    "cublasLtGetVersion": (_sz, []),                                                       # :77
    "cublasLtGetCudartVersion": (_sz, []),                                                 # :79
    "cublasLtMatmul": (_int, [_vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp,
                              _P(cublasLtMatmulAlgo_t), _vp, _sz, _vp]),                   # :1011
    "cublasLtMatrixLayoutCreate": (_int, [_P(_vp), _int, ctypes.c_uint64, ctypes.c_uint64,
                                          ctypes.c_int64]),                                # :1212
    "cublasLtMatrixLayoutDestroy": (_int, [_vp]),                                          # :1223
    "cublasLtMatrixLayoutSetAttribute": (_int, [_vp, _int, _vp, _sz]),                     # :1236
    "cublasLtMatmulDescCreate": (_int, [_P(_vp), _int, _int]),                             # :1623
    "cublasLtMatmulDescDestroy": (_int, [_vp]),                                            # :1631
    "cublasLtMatmulDescSetAttribute": (_int, [_vp, _int, _vp, _sz]),                       # :1644
    "cublasLtMatmulPreferenceCreate": (_int, [_P(_vp)]),                                   # :2171
    "cublasLtMatmulPreferenceDestroy": (_int, [_vp]),                                      # :2177
    "cublasLtMatmulPreferenceSetAttribute": (_int, [_vp, _int, _vp, _sz]),                 # :2190
    "cublasLtMatmulAlgoGetHeuristic": (_int, [_vp, _vp, _vp, _vp, _vp, _vp, _vp, _int,
                                              _P(cublasLtMatmulHeuristicResult_t), _P(_int)]),  # :2269
    "cublasLtMatmulAlgoConfigGetAttribute": (_int, [_P(cublasLtMatmulAlgo_t), _int, _vp, _sz,
                                                    _P(_sz)]),                             # :2602
}


class CublasLtError(RuntimeError):
    pass


# -- library ---------------------------------------------------------------------------------
def _mapped(substr: str) -> list[str]:
    """Paths of files mapped into this process whose name contains ``substr``."""
    out = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and substr in os.path.basename(parts[5].strip()):
                    p = parts[5].strip()
                    if p not in out:
                        out.append(p)
    except OSError:
        pass
    return out


def find_cublaslt(explicit: str | None = None) -> tuple[str, str]:
    """(path or name to dlopen, how it was found). Prefers the libcublasLt that the libcublas
    CuPy loaded already maps (libcublas links it), then one next to that libcublas."""
    if explicit:
        return explicit, "--lib"
    lt = [p for p in _mapped("libcublasLt.so") if os.path.exists(p)]
    if lt:
        return lt[0], "already mapped in this process (loaded with CuPy's libcublas)"
    for p in _mapped("libcublas.so"):  # e.g. .../libcublas.so.13: try .../libcublasLt.so.13 first
        same = os.path.join(os.path.dirname(p), "libcublasLt" + os.path.basename(p)[len("libcublas"):])
        cands = ([same] if os.path.exists(same)
                 else sorted(glob.glob(os.path.join(os.path.dirname(p), "libcublasLt.so*"))))
        if cands:
            return cands[0], f"next to {p}"
    name = ctypes.util.find_library("cublasLt")
    if name:
        return name, "ctypes.util.find_library"
    for name in ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"):
        try:
            ctypes.CDLL(name)
            return name, "dlopen by name"
        except OSError:
            continue
    raise OSError("libcublasLt not found: pass --lib PATH")


class Lt:
    """ctypes bindings of the cuBLASLt functions used here; every status is checked."""

    def __init__(self, path: str):
        self.lib = ctypes.CDLL(path)
        self.fns = {}
        for name, (res, args) in _PROTOS.items():
            fn = getattr(self.lib, name)  # AttributeError names a missing symbol
            fn.restype, fn.argtypes = res, args
            self.fns[name] = fn
        mapped = _mapped("libcublasLt.so")
        self.path = os.path.realpath(path) if os.path.sep in path else (os.path.realpath(mapped[0]) if mapped else path)
        self.version = self.fns["cublasLtGetVersion"]()
        self.cudart_version = self.fns["cublasLtGetCudartVersion"]()

    def status_name(self, st: int) -> str:
        try:
            s = self.fns["cublasLtGetStatusName"](st)
            return s.decode() if s else _STATUS_NAMES.get(st, "?")
        except Exception:
            return _STATUS_NAMES.get(st, "?")

    def __call__(self, name: str, *args):
        st = self.fns[name](*args)
        if st != CUBLAS_STATUS_SUCCESS:
            raise CublasLtError(f"{name} returned {st} ({self.status_name(st)})")

    def create(self, name: str, *args) -> ctypes.c_void_p:
        h = ctypes.c_void_p()
        self(name, ctypes.byref(h), *args)
        return h

    def set_attr(self, fname: str, obj, attr: int, value) -> None:
        self(fname, obj, attr, ctypes.byref(value), ctypes.sizeof(value))

    def algo_config(self, algo: cublasLtMatmulAlgo_t) -> dict:
        """Decoded CUBLASLT_ALGO_CONFIG_* values; an attribute that fails is '?(STATUS)'
        (descriptive only: never raises)."""
        fn = self.fns["cublasLtMatmulAlgoConfigGetAttribute"]
        out = {}
        for name, attr, ct in ALGO_CONFIG_ATTRS:
            key = _SHORT[name[len("CUBLASLT_ALGO_CONFIG_"):]]
            v, written = ct(), ctypes.c_size_t(0)
            st = fn(ctypes.byref(algo), attr, ctypes.byref(v), ctypes.sizeof(v), ctypes.byref(written))
            if st == CUBLAS_STATUS_INVALID_VALUE:  # size differs from the header's: ask for it
                st2 = fn(ctypes.byref(algo), attr, None, 0, ctypes.byref(written))
                if st2 == CUBLAS_STATUS_SUCCESS and written.value in (1, 2, 4, 8):
                    ct = {1: ctypes.c_uint8, 2: ctypes.c_uint16, 4: ctypes.c_uint32, 8: ctypes.c_uint64}[written.value]
                    v = ct()
                    st = fn(ctypes.byref(algo), attr, ctypes.byref(v), ctypes.sizeof(v), ctypes.byref(written))
            out[key] = int(v.value) if st == CUBLAS_STATUS_SUCCESS else f"?({self.status_name(st)})"
        return out


# -- header (optional: decoding and cross-check) -----------------------------------------------
def find_header(lib_path: str, explicit: str | None) -> str | None:
    if explicit:
        return explicit
    d = os.path.dirname(os.path.realpath(lib_path)) if os.path.sep in lib_path else ""
    cands = []
    if d:
        cands += [os.path.join(d, "..", "include", "cublasLt.h"), os.path.join(d, "..", "..", "include", "cublasLt.h")]
    for root in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root:
            cands += [os.path.join(root, "include", "cublasLt.h"),
                      os.path.join(root, "targets", "x86_64-linux", "include", "cublasLt.h")]
    cands += sorted(glob.glob("/usr/local/cuda-*/include/cublasLt.h"), reverse=True) + ["/usr/include/cublasLt.h"]
    for c in cands:
        if os.path.isfile(c):
            return os.path.realpath(c)
    return None


def parse_enums(header: str) -> dict:
    """NAME -> integer of every ``NAME = <int>`` in cublasLt.h and the cublas_api.h /
    library_types.h beside it (when present)."""
    vals, alias = {}, {}
    d = os.path.dirname(header)
    lib_types = [os.path.join(r, "include", "library_types.h") for r in (
        os.path.dirname(d), os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda") if r]
    lib_types = [f for f in [os.path.join(d, "library_types.h")] + lib_types
                 + sorted(glob.glob("/usr/local/cuda-*/include/library_types.h"), reverse=True) if os.path.isfile(f)]
    for f in [header, os.path.join(d, "cublas_api.h")] + lib_types[:1]:
        if not os.path.isfile(f):
            continue
        with open(f, errors="replace") as fh:
            for name, v in re.findall(r"\b((?:CUBLAS|CUBLASLT|CUDA)_\w+)\s*=\s*(-?(?:0x[0-9a-fA-F]+\b|\d+\b)|[A-Z]\w*)",
                                      fh.read()):
                if v[0].isdigit() or v[0] == "-":
                    vals.setdefault(name, int(v, 0))
                else:  # NAME = OTHER_NAME (e.g. CUBLASLT_POINTER_MODE_HOST = CUBLAS_POINTER_MODE_HOST)
                    alias.setdefault(name, v)
    for name, other in alias.items():
        if name not in vals and other in vals:
            vals[name] = vals[other]
    return vals


def decode(cfg: dict, enums: dict | None) -> str:
    parts = []
    for key in ("id", "tile", "stages", "splitK", "red", "swz", "cust", "inner", "cluster"):
        v = cfg.get(key)
        if enums and key in _DECODE and isinstance(v, int):
            names = [n[len(_DECODE[key]):] for n, x in enums.items() if n.startswith(_DECODE[key]) and x == v]
            if names:
                v = names[0]
        parts.append(f"{key}={v}")
    return " ".join(parts)


# -- problems and candidates -----------------------------------------------------------------
class LtProblem:
    """Descriptors of C^T (n x m, ld n) = op_T(bt: k x n, ld k) op_N(A: k x m, ld k), int8 in,
    int32 out, CUBLAS_COMPUTE_32I, int32 host scalars; ``batch`` > 1: strided batch over
    consecutive (m, k) / (n, k) / (m, n) blocks."""

    def __init__(self, lt: Lt, m: int, n: int, k: int, batch: int = 1):
        self.lt = lt
        self.objs = []
        self.desc = lt.create("cublasLtMatmulDescCreate", CUBLAS_COMPUTE_32I, CUDA_R_32I)
        self.objs.append(("cublasLtMatmulDescDestroy", self.desc))
        for attr, val in ((CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T), (CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N),
                          (CUBLASLT_MATMUL_DESC_POINTER_MODE, CUBLASLT_POINTER_MODE_HOST)):
            lt.set_attr("cublasLtMatmulDescSetAttribute", self.desc, attr, ctypes.c_int32(val))
        # the layouts describe the matrices as stored (before op): bt is k x n, A is k x m
        self.lay_a = self._layout(CUDA_R_8I, k, n, k, batch, n * k)   # cuBLAS "A" = bt
        self.lay_b = self._layout(CUDA_R_8I, k, m, k, batch, m * k)   # cuBLAS "B" = A
        self.lay_c = self._layout(CUDA_R_32I, n, m, n, batch, m * n)  # C and D

    def _layout(self, dt, rows, cols, ld, batch, stride):
        lay = self.lt.create("cublasLtMatrixLayoutCreate", dt, rows, cols, ld)
        self.objs.append(("cublasLtMatrixLayoutDestroy", lay))
        if batch > 1:
            self.lt.set_attr("cublasLtMatrixLayoutSetAttribute", lay, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                             ctypes.c_int32(batch))
            self.lt.set_attr("cublasLtMatrixLayoutSetAttribute", lay, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                             ctypes.c_int64(stride))
        return lay

    def heuristics(self, handle, pref, count: int):
        res = (cublasLtMatmulHeuristicResult_t * count)()
        got = ctypes.c_int(0)
        self.lt("cublasLtMatmulAlgoGetHeuristic", handle, self.desc, self.lay_a, self.lay_b, self.lay_c,
                self.lay_c, pref, count, res, ctypes.byref(got))
        ok = [(i, res[i]) for i in range(got.value) if res[i].state == CUBLAS_STATUS_SUCCESS]
        bad = [(i, res[i].state) for i in range(got.value) if res[i].state != CUBLAS_STATUS_SUCCESS]
        return ok, bad, got.value

    def close(self):
        for fname, obj in reversed(self.objs):
            self.lt(fname, obj)
        self.objs = []


class Cand:
    """A way to compute the GEMMs: ``one(i)`` issues the product of pair i into C[i] (None for
    batched candidates), ``burst()`` the products of all N pairs into C."""

    def __init__(self, label, kind, one, burst, info=None):
        self.label, self.kind, self.one, self.burst = label, kind, one, burst
        self.info = info or {}
        self.error = None
        self.identical = None
        self.cool, self.hot = [], []
        self.late_cool = self.late_hot = 0
        self.est_ms = None


def lt_candidate(lt, handle, prob, res, idx, A, B, C, ws, ws_bytes, alpha, beta, batch, enums):
    import cupy as cp

    algo = cublasLtMatmulAlgo_t()
    ctypes.memmove(ctypes.byref(algo), ctypes.byref(res.algo), ctypes.sizeof(algo))
    fn = lt.fns["cublasLtMatmul"]
    al, be = ctypes.c_void_p(alpha.ctypes.data), ctypes.c_void_p(beta.ctypes.data)
    wsp, wss = ctypes.c_void_p(ws.data.ptr), ctypes.c_size_t(ws_bytes)
    N = A.shape[0]

    def args(i):
        b_ptr = ctypes.c_void_p(B.data.ptr + i * B.strides[0])
        a_ptr = ctypes.c_void_p(A.data.ptr + i * A.strides[0])
        c_ptr = ctypes.c_void_p(C.data.ptr + i * C.strides[0])
        return [handle, prob.desc, al, b_ptr, prob.lay_a, a_ptr, prob.lay_b, be, c_ptr, prob.lay_c,
                c_ptr, prob.lay_c, ctypes.byref(algo), wsp, wss]

    per_pair = [args(i) for i in range(N)]

    def call(a):
        st = fn(*a, ctypes.c_void_p(cp.cuda.get_current_stream().ptr or None))
        if st != CUBLAS_STATUS_SUCCESS:
            raise CublasLtError(f"cublasLtMatmul returned {st} ({lt.status_name(st)})")

    cfg = lt.algo_config(algo)
    info = {"heuristic_index": idx, "config": cfg, "config_str": decode(cfg, enums),
            "workspace_bytes": int(res.workspaceSize), "waves": float(res.wavesCount)}
    if batch > 1:
        return Cand(f"Lt-batched #{idx}", "lt-batched", None, lambda: call(per_pair[0]), info), algo
    return Cand(f"Lt #{idx}", "lt", lambda i: call(per_pair[i]),
                lambda: [call(a) for a in per_pair], info), algo


# -- timing ----------------------------------------------------------------------------------
_SPIN_SRC = r"""
extern "C" __global__ void lead_spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {  // one thread polling the global nanosecond timer: next to no power
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}
"""


def median(xs):
    return float(np.median(xs)) if len(xs) else float("nan")


def run_size(args, shape, eng, lt, handle, enums, ctx_out):
    import cupy as cp

    from ozgemm.kernels.cuda import (_CUBLAS_COMPUTE_32I, _CUDA_R_32I, _CUDA_R_8I, _GEMM_DEFAULT, _OP_N, _OP_T)

    m, n, k = shape
    N = args.gemms
    t_size = time.perf_counter()
    spin = cp.RawKernel(_SPIN_SRC, "lead_spin")
    lead_ns = np.uint64(int(args.lead_us * 1000))
    stream = cp.cuda.get_current_stream()

    cp.random.seed(args.seed)
    A = cp.empty((N, m, k), dtype=cp.int8)
    B = cp.empty((N, n, k), dtype=cp.int8)  # bt: rows of B^T, K-contiguous
    for q in range(N):  # pair by pair: the generator's temporaries stay small
        A[q] = cp.random.randint(-128, 128, size=(m, k), dtype=cp.int8)
        B[q] = cp.random.randint(-128, 128, size=(n, k), dtype=cp.int8)
    C = cp.empty((N, m, n), dtype=cp.int32)
    Cref = cp.empty((N, m, n), dtype=cp.int32)
    ws_bytes = args.workspace_mib << 20
    ws = cp.empty((max(ws_bytes, 1),), dtype=cp.uint8)
    alpha, beta = np.array(1, dtype=np.int32), np.array(0, dtype=np.int32)

    # reference: the project's path, checked against float64 DGEMM (exact, see docstring)
    eng._gemm_batched_i32(A, B, Cref)
    ref_ok = True
    for q in sorted({0, N - 1}):
        d = cp.matmul(A[q].astype(cp.float64), B[q].astype(cp.float64).T)
        ref_ok &= bool((d == Cref[q].astype(cp.float64)).all())
        del d
    cp.get_default_memory_pool().free_all_blocks()
    print(f"\n== {m}x{n}x{k}: project output vs float64 DGEMM (pairs 0, {N - 1}): "
          f"{'identical' if ref_ok else 'DIFFERENT'}")

    views = [(A[i:i + 1], B[i:i + 1], C[i:i + 1]) for i in range(N)]
    cands = [Cand("project (cublasGemmStridedBatchedEx, batch 1)", "project",
                  lambda i: eng._gemm_batched_i32(*views[i]), lambda: eng._gemm_batched_i32(A, B, C))]

    pref = lt.create("cublasLtMatmulPreferenceCreate")
    lt.set_attr("cublasLtMatmulPreferenceSetAttribute", pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                ctypes.c_uint64(ws_bytes))
    probs, keep = [], []  # keep the algo structs alive with their candidates
    prob = LtProblem(lt, m, n, k)
    probs.append(prob)
    ok, bad, got = prob.heuristics(handle, pref, args.algos)
    print(f"heuristic: {got} results for {args.algos} requested, {len(ok)} with state SUCCESS"
          + (f", others: {[(i, lt.status_name(s)) for i, s in bad]}" if bad else "")
          + f" (workspace limit {args.workspace_mib} MiB)")
    for idx, res in ok:  # idx: the position in the heuristic's answer (0 = its first choice)
        c, algo = lt_candidate(lt, handle, prob, res, idx, A, B, C, ws, ws_bytes, alpha, beta, 1, enums)
        cands.append(c)
        keep.append(algo)
    if args.batched:
        eh = cp.cuda.device.get_cublas_handle()
        one_p, zero_p = alpha.ctypes.data, beta.ctypes.data

        def legacy_batched():
            eng._cublas.setStream(eh, cp.cuda.get_current_stream().ptr)
            eng._cublas.gemmStridedBatchedEx(
                eh, _OP_T, _OP_N, n, m, k, one_p, B.data.ptr, _CUDA_R_8I, k, n * k, A.data.ptr, _CUDA_R_8I,
                k, m * k, zero_p, C.data.ptr, _CUDA_R_32I, n, m * n, N, _CUBLAS_COMPUTE_32I, _GEMM_DEFAULT)

        cands.append(Cand(f"cublasGemmStridedBatchedEx, batch {N}", "legacy-batched", None, legacy_batched))
        bprob = LtProblem(lt, m, n, k, batch=N)
        probs.append(bprob)
        bok, bbad, bgot = bprob.heuristics(handle, pref, args.algos)
        print(f"heuristic (batch {N}): {bgot} results, {len(bok)} with state SUCCESS")
        for idx, res in bok:
            c, algo = lt_candidate(lt, handle, bprob, res, idx, A, B, C, ws, ws_bytes, alpha, beta, N, enums)
            cands.append(c)
            keep.append(algo)

    # exactness (and first, untimed call of every candidate), with a rough time for the budget
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    bad_out = not ref_ok
    for c in cands:
        try:
            C.fill(-0x5A5A5A5A)  # a sentinel: an algorithm that writes nothing cannot pass
            pairs = sorted({0, N - 1})
            if c.one is not None:
                for q in pairs:
                    c.one(q)
                same = all(bool((C[q] == Cref[q]).all()) for q in pairs)
                stream.synchronize()
                spin((1,), (1,), (lead_ns,))
                e0.record()
                c.one(0)
                e1.record()
                e1.synchronize()
                c.est_ms = cp.cuda.get_elapsed_time(e0, e1)
            else:
                c.burst()
                same = bool((C == Cref).all())
                stream.synchronize()
                spin((1,), (1,), (lead_ns,))
                e0.record()
                c.burst()
                e1.record()
                e1.synchronize()
                c.est_ms = cp.cuda.get_elapsed_time(e0, e1) / N
            c.identical = same
            bad_out |= not same
        except CublasLtError as ex:
            c.error = str(ex)
            stream.synchronize()
    runnable = [c for c in cands if c.error is None and c.identical]

    # keep the timing phases within the budget: drop Lt algorithms from the end of the list
    def cost(c):
        s = args.hot_rounds * N * c.est_ms / 1e3
        if c.one is not None:
            s += args.cool_reps * (args.sleep_ms + args.lead_us / 1e3 + c.est_ms) / 1e3
        return s

    dropped = []  # the highest heuristic indices go first (single-call and batched alike)
    while sum(cost(c) for c in runnable) > args.budget_s:
        lts = [c for c in runnable if c.kind.startswith("lt") and c.info.get("heuristic_index", 0) > 0]
        if not lts:
            break
        drop = max(lts, key=lambda c: (c.info["heuristic_index"], c.kind == "lt-batched"))
        runnable.remove(drop)
        dropped.append(drop.label)
    if dropped:
        print(f"NOTE: estimated timing exceeds the budget of {args.budget_s:.0f} s for this size (--budget-s): "
              f"not timed: {', '.join(dropped)}")

    # cool: one GEMM after an idle host sleep, candidates interleaved within each repetition
    for rep in range(args.cool_reps):
        for c in runnable:
            if c.one is None:
                continue
            stream.synchronize()
            time.sleep(args.sleep_ms / 1e3)
            spin((1,), (1,), (lead_ns,))
            e0.record()
            c.one(rep % N)
            late = e0.done  # the GPU reached e0 before the GEMM was queued: host-bound sample
            e1.record()
            e1.synchronize()
            c.cool.append(cp.cuda.get_elapsed_time(e0, e1))
            c.late_cool += int(late)

    # hot: warm bursts, then every candidate's N-GEMM burst back to back, rounds x candidates,
    # queued without host synchronisation
    stream.synchronize()
    spin((1,), (1,), (lead_ns,))
    for _ in range(args.warm_bursts):
        cands[0].burst()
    marks = []
    prev = cp.cuda.Event()
    prev.record()
    for _ in range(args.hot_rounds):
        for c in runnable:
            late = prev.done
            c.burst()
            ev = cp.cuda.Event()
            ev.record()
            marks.append((c, prev, ev, late))
            prev = ev
    prev.synchronize()
    for c, ea, eb, late in marks:
        c.hot.append(cp.cuda.get_elapsed_time(ea, eb) / N)
        c.late_hot += int(late)

    for p in probs:
        p.close()
    lt("cublasLtMatmulPreferenceDestroy", pref)
    del keep

    # per-candidate table
    flops = 2.0 * m * n * k
    print(f"\n{m}x{n}x{k}, {N} pairs; ms per GEMM (medians: cool of {args.cool_reps}, "
          f"hot of {args.hot_rounds} rounds); TOPS = 2mnk / time")
    print("| candidate | identical | cool ms | hot ms | hot TOPS | late c/h | ws MiB | waves | config |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    for c in cands:
        cool, hot = median(c.cool), median(c.hot)
        inf = c.info
        ident = "ERROR" if c.error else ("yes" if c.identical else "NO")
        print(f"| {c.label} | {ident} | {cool:.4f} | {hot:.4f} | {flops / (hot * 1e-3) / 1e12:.0f} | "
              f"{c.late_cool}/{c.late_hot} | {inf.get('workspace_bytes', 0) / 2**20:.1f} | "
              f"{inf.get('waves', float('nan')):.2f} | {inf.get('config_str', '')}"
              f"{' ' + c.error if c.error else ''}{' (not timed)' if c.label in dropped else ''} |")
        rows.append({"label": c.label, "kind": c.kind, "identical": c.identical, "error": c.error,
                     "cool_ms": c.cool, "hot_ms_per_gemm": c.hot, "cool_median_ms": cool, "hot_median_ms": hot,
                     "late_cool": c.late_cool, "late_hot": c.late_hot, "timed": c in runnable, **inf})
    ctx_out.append({"m": m, "n": n, "k": k, "pairs": N, "project_vs_dgemm_identical": ref_ok,
                    "dropped_for_budget": dropped, "candidates": rows,
                    "seconds": time.perf_counter() - t_size})
    for c in cands:  # drop the closures' references to this size's arrays
        c.one = c.burst = None
    return cands, runnable, bad_out


def summary_rows(shape, cands, runnable):
    proj = cands[0]
    out = []
    single = ("project", "lt")
    ident = all(c.identical for c in cands if c.kind in single and c.error is None)
    for regime in ("cool", "hot"):
        lts = [c for c in runnable if c.kind == "lt" and getattr(c, regime)]
        p = median(getattr(proj, regime))
        top = next((c for c in lts if c.info.get("heuristic_index") == 0), None)
        best = min(lts, key=lambda c: median(getattr(c, regime)), default=None)
        out.append((shape, regime, p, top and median(getattr(top, regime)), best,
                    best and median(getattr(best, regime)), ident))
    batched = [c for c in cands if c.kind not in single]
    if batched:
        bl = [c for c in runnable if c in batched and c.hot]
        best = min(bl, key=lambda c: median(c.hot), default=None)
        out.append((shape, "hot, one batched call", median(proj.hot), None, best, best and median(best.hot),
                    all(c.identical for c in batched if c.error is None)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sizes", nargs="*", default=["4096", "8192"], help='"N" (N^3) or "MxNxK"')
    ap.add_argument("--algos", type=int, default=32, help="algorithms requested from the heuristic")
    ap.add_argument("--workspace-mib", type=int, default=64)
    ap.add_argument("--gemms", type=int, default=16, help="GEMMs per hot burst (distinct input pairs)")
    ap.add_argument("--cool-reps", type=int, default=10)
    ap.add_argument("--hot-rounds", type=int, default=10)
    ap.add_argument("--warm-bursts", type=int, default=4)
    ap.add_argument("--sleep-ms", type=float, default=20.0)
    ap.add_argument("--lead-us", type=float, default=1000.0)
    ap.add_argument("--budget-s", type=float, default=20.0, help="timing budget per size (estimated)")
    ap.add_argument("--batched", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lib", help="path of libcublasLt to load")
    ap.add_argument("--header", help="path of cublasLt.h (optional)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_intermixed_args()

    shapes = []
    for s in args.sizes:
        dims = [int(x) for x in s.lower().split("x")]
        dims = dims * 3 if len(dims) == 1 else dims
        if len(dims) != 3 or any(d <= 0 or d % 16 for d in dims):
            ap.error(f"size {s!r}: want N or MxNxK, multiples of 16")
        shapes.append(tuple(dims))

    import cupy as cp
    from ozgemm.kernels.cuda import CudaEngine
    from ozgemm.kernels.cuda_bench import gpu_context
    from ozgemm.precision.planner import KBLOCK_INT32

    for m, n, k in shapes:
        if k > KBLOCK_INT32:
            ap.error(f"k={k} > {KBLOCK_INT32}: not one exact int32 block")
    t_start = time.perf_counter()
    eng = CudaEngine()
    ctx = gpu_context()  # also loads CuPy's libcublas (get_cublas_handle)
    path, how = find_cublaslt(args.lib)
    lt = Lt(path)
    header = find_header(lt.path, args.header)
    enums = parse_enums(header) if header else None
    print(f"cuBLASLt: {lt.path} ({how}); cublasLtGetVersion {lt.version}, built for cudart {lt.cudart_version}")
    if enums:
        wrong = {k: (v, enums[k]) for k, v in _CHECKED.items() if k in enums and enums[k] != v}
        missing = sorted(k for k in _CHECKED if k not in enums)
        print(f"header: {header}: {len(_CHECKED) - len(missing) - len(wrong)} constants match"
              + (f", not found there: {missing}" if missing else ""))
        if wrong:
            raise SystemExit(f"constants differ from {header} (ours, header's): {wrong}")
    else:
        print("header: no cublasLt.h found (tile/stages/cluster printed as numeric ids; constants not re-checked)")
    ctx.update({"cublaslt_path": lt.path, "cublaslt_version": lt.version, "cublaslt_cudart": lt.cudart_version,
                "header": header})
    print("context: " + ", ".join(f"{k}={v}" for k, v in ctx.items()))
    print(f"input: int8 uniform in [-128, 127], cupy.random seed {args.seed}, {args.gemms} pairs per size; "
          f"workspace {args.workspace_mib} MiB; up to {args.algos} algorithms")

    handle = lt.create("cublasLtCreate")
    results, summary, any_bad = [], [], False
    try:
        with cp.cuda.Device(0):
            for shape in shapes:
                cands, runnable, bad = run_size(args, shape, eng, lt, handle, enums, results)
                any_bad |= bad
                summary += summary_rows(shape, cands, runnable)
                cp.get_default_memory_pool().free_all_blocks()
    finally:
        lt("cublasLtDestroy", handle)

    print(f"\nSummary (ms per GEMM, medians; ratio = cuBLASLt / project, < 1 is faster; "
          f"{ctx.get('gpu')}, cuBLASLt {lt.version}; total {time.perf_counter() - t_start:.0f} s)")
    print("| size | regime | project ms | Lt heuristic #0 ms | best Lt ms | best | ratio | outputs identical |")
    print("|---|---|---|---|---|---|---|---|")
    for (m, n, k), regime, p, top, best, bms, ident in summary:
        bl = f"{best.label} {best.info.get('config_str', '')}".strip() if best else "-"
        print(f"| {m}x{n}x{k} | {regime} | {p:.4f} | {'-' if top is None else f'{top:.4f}'} | "
              f"{'-' if bms is None else f'{bms:.4f}'} | {bl} | {'-' if bms is None else f'{bms / p:.3f}'} | "
              f"{'yes' if ident else 'NO'} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"context": ctx, "args": vars(args), "sizes": results}, f, indent=1, default=str)
        print(f"wrote {args.json}")
    if any_bad:
        print("FAIL: an output differed (see 'identical' above)")
        sys.exit(1)


if __name__ == "__main__":
    main()

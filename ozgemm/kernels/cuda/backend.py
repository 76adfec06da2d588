"""The CUDA backend (CuPy): INT8 Tensor-Core GEMMs through cuBLAS, fused RawModule kernels.

* INT8 GEMMs: ``cublasGemmStridedBatchedEx`` (:mod:`.cublas`; one call over all moduli up to
  2048^2 outputs, else one per modulus) with CUDA_R_8I
  inputs, CUDA_R_32I output and CUBLAS_COMPUTE_32I, both operands K-contiguous (the "TN"
  layout, the fast one on Hopper: see docs/design.md). Every k-block is <= 131071, so each
  int32 result is exact (|sum| <= k 2**14 < 2**31); longer k is split and the blocks are
  summed exactly in int64.
* ``crt.cu``: scaled residues for all moduli in one pass, and the fused Garner + Horner +
  sign + correctly rounded conversion (one thread per output entry, limbs in registers),
  compiled once per moduli count and cached. The integer steps mirror the numpy code in
  ``ozgemm/crt`` and ``ozgemm/precision/rounding.py``, so results are bit-identical.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools

import cupy as cp
import numpy as np

from ..._xp import as_float64
from ...precision.rounding import empty_result
from ...crt.moduli import garner_constants, plan_moduli, split_factors
from ...crt.reconstruct import crt_reconstruct
from ...precision.stats import LB_BITS, RowStats
from . import cublas
from .graphs import Recorder, recording
from .source import kernel_source
from ...precision.planner import KBLOCK_INT32

__all__ = ["CudaBackend"]

# INT8 GEMMs with more than _GEMM_SPLIT_OUT outputs run in chunks of _GEMM_ROWS rows of A; up to
# _GEMM_BATCH_OUT outputs, one strided-batched call covers every modulus (H200, whole fp64 call
# replayed from a graph: 2048 1.02 -> 0.86 ms, 1024 0.36 -> 0.30 ms; docs/design.md)
_GEMM_SPLIT_OUT, _GEMM_ROWS = 8192 * 8192, 4096
_GEMM_BATCH_OUT = 2048 * 2048
# products with at least _OVERLAP_MIN_ROWS rows of A and at most _GEMM_SPLIT_OUT outputs run as
# _OVERLAP_TILES row tiles on two side streams, so that one tile's residues and reconstruction
# (memory-bound) overlap another tile's INT8 GEMMs (power-bound); 1 = one tile on the current
# stream. Measured on the H200: fp64 8192 1.10-1.12x -> 1.13-1.17x DGEMM in paired bench
# processes; slower at 4096 and for fp32 at 16384 (row-chunked GEMMs), hence the bounds
# (docs/design.md)
_OVERLAP_TILES, _OVERLAP_MIN_ROWS = 2, 8192
_PAD = 16
# speculative products of at most this many multiply-adds replay a CUDA graph: at n <= 2048 the
# host's launches decide an eager call's time (docs/design.md, "Small products: CUDA graphs")
_GRAPH_MAX_WORK = 2048 ** 3
_ROW_PAD = 4  # rows of a stack's products: the INT8 GEMM's multiple
_THREADS = 256


_RES_PER_THREAD = 8  # crt.cu RES_PER_THREAD
_STATS_CACHE = 16  # stats.cu: row entries per thread kept in registers by the float64 row_stats
_RS_THREADS, _RS_CHUNK = 256, 256 * 8  # stats.cu RS_THREADS, RS_CHUNK (row_extent / row_sums; float32: twice the chunk)
# one-component rows go through three streaming kernels (row_extent, row_sums, row_finish);
# dd/binary128 components and very long rows through one block per row. A float64
# column-major operand (B^T, as the planner passes it: the columns of a row-major B) is read
# through its columns by the statistics and residue kernels (stats.cu col_extent / col_sums,
# crt.cu scaled_residues_cols) instead of being copied by a transpose kernel first (fp64 8192:
# B's statistics + residues 1.06 -> 0.92 ms on the H200).
_CS_CHUNK = 8 * 16  # stats.cu CS_CHUNK (col_extent / col_sums)


def _columns_ld(x):
    """Row stride (in elements) of the row-major matrix whose columns are the rows of ``x``,
    when ``x`` is a 2-D float64 column-major view (e.g. ``b.T`` of a row-major ``b``) that the
    column kernels read directly; else None. (float32 operands are transposed first: their
    column kernels measured slower on the H200 than the copy they save.)"""
    if x.ndim != 2 or x.dtype != cp.float64 or x.flags.c_contiguous:
        return None
    it = x.itemsize
    if x.strides[0] == it and x.strides[1] > 0 and x.strides[1] % it == 0 and x.size:
        return x.strides[1] // it
    return None


#: inner dimension up to which the three-product differences of int32 products stay in int32
_K3M_INT32 = 2**15


@functools.cache
def _combine_split_kernel():
    """Residues of the split form's parts from int64 products: re <- (pp + pm) f_re mod m,
    im <- (pp - pm) f_im mod m (f = 1/2 and 1/(2t) mod m; |pp|, |pm| < 2**52 / 255)."""
    return cp.ElementwiseKernel("int64 pm, int64 m, int64 f_re, int64 f_im", "int64 pp, int64 im",
                                "long long a = pp; long long r = (a + pm) % m; long long d = (a - pm) % m;"
                                "r += r < 0 ? m : 0; d += d < 0 ? m : 0; pp = r * f_re % m; im = d * f_im % m;",
                                "ozgemm_combine_split")


@functools.cache
def _combine_3m_kernel():
    """In place: p1 <- p1 - p2, p3 <- p3 - p1 - p2 (old p1)."""
    return cp.ElementwiseKernel("T p2", "T p1, T p3", "T a = p1; p1 = a - p2; p3 = p3 - a - p2;",
                                "ozgemm_combine_3m")


@functools.cache
def _second_window_kernel():
    """q = floor(|x| 2**(14 - e)) where below 2**7, else 0 (planner.second_window): ldexp of a
    double is exact unless the result is subnormal, where the floor is 0 either way."""
    return cp.ElementwiseKernel("float64 x, int64 e", "int8 q",
                                "double y = floor(ldexp(fabs(x), (int)(14 - e))); q = y < 128.0 ? (signed char)y : 0;",
                                "ozgemm_second_window")


@functools.cache
def _embed_kernels():
    """The complex embedding's blocks moved as bit patterns (integer moves, the sign flipped by
    an XOR: no float instruction, so CuPy's flush-to-zero compilation cannot touch float32
    subnormals). ``pairs``: the (re, im) words of a C-contiguous complex array."""
    a = cp.ElementwiseKernel(
        "raw U pairs, int64 k", "raw U A",
        "const long long r = i / k, l = i - r * k;"
        "A[r * 2 * k + l] = pairs[2 * i]; A[r * 2 * k + k + l] = pairs[2 * i + 1];",
        "ozgemm_embed_a")
    b = cp.ElementwiseKernel(
        "raw U pairs, int64 k, int64 n, bool top", "raw U B",
        "const long long l = i / n, j = i - l * n, w = 2 * n;"
        "const U sign = ((U)1) << (sizeof(U) * 8 - 1);"
        "const U re = pairs[2 * i], im = pairs[2 * i + 1];"
        "B[l * w + j] = re; B[l * w + n + j] = im;"
        "if (!top) { B[(k + l) * w + j] = im ^ sign; B[(k + l) * w + n + j] = re; }",
        "ozgemm_embed_b")
    return a, b


def _ceil(x, a):
    return (x + a - 1) // a * a


def _grid2d(nx: int, ny: int, threads: int = _THREADS):
    """(grid, block) for a 2-D launch: x over ``nx`` (columns), y over ``ny`` rows with a
    grid-stride loop in the kernel (grid y capped at 65535)."""
    bx = min(threads, 1 << max(nx - 1, 0).bit_length())
    by = threads // bx
    return ((nx + bx - 1) // bx, min((ny + by - 1) // by, 65535)), (bx, by)


def _residues_cols(name, n_moduli, xs, ldc, shift, r, k, rp, kp, tab, outs):
    """Launch a crt.cu column residue kernel (``scaled_residues_cols``, ``..._cols_pair``) over
    the rows ``xs`` (columns of row-major matrices of row stride ``ldc``, read in place): tiles
    of 16 rows x 128 entries, grid-stride in the kernel beyond the grid."""
    grid = (min(-(-rp // 16), 2**31 - 1), min(-(-kp // 128), 65535))
    _fn(name, n_moduli)(grid, (16, 16), xs + (np.int64(ldc), shift, np.int32(r), np.int32(k), np.int32(rp),
                                             np.int32(kp), tab, np.int32(tab.shape[1])) + outs)


def _residues_rows(name, n_moduli, xs, shift, r, k, rp, kp, tab, outs):
    """Launch a crt.cu row residue kernel (``scaled_residues``, ``..._pair``, float64 or
    ``_f32``) over the rows ``xs`` (one row stride): ``_RES_PER_THREAD`` entries per thread
    (kp a multiple of 16), 16-byte vector loads where every row start is 16-byte aligned."""
    x = xs[0]
    vec = int(x.strides[0] % 16 == 0 and all(v.data.ptr % 16 == 0 for v in xs))
    grid, block = _grid2d(kp // _RES_PER_THREAD, rp)
    _fn(name, n_moduli)(grid, block, xs + (np.int64(max(x.strides[0] // x.itemsize, 1)), shift, np.int32(r),
                                          np.int32(k), np.int32(rp), np.int32(kp), tab, np.int32(tab.shape[1]),
                                          np.int32(vec)) + outs)


def _crt_round(fmt, n_moduli, c, ldc, sc, s, t, m, n, out, ldo, batch=(1, 0, 0, 0, 0), grid=None):
    """Launch crt.cu ``crt_round_f64`` / ``crt_round_f32`` (Garner, Horner, sign and the one
    rounding) over products ``c`` (row stride ``ldc``, modulus stride ``sc``) into ``out`` (row
    stride ``ldo``); ``batch`` = (products, product stride of c, of s, of t, of out) for a
    stack, one grid z per product."""
    name = "crt_round_f64" if fmt.name == "binary64" else "crt_round_f32"  # (a name the sources test lists)
    f = _fn(name, n_moduli)
    g, block = _grid2d(n, m)
    f(grid or g, block, (c, np.int64(ldc), np.int64(sc), cp.ascontiguousarray(s, dtype=cp.int64),
                         cp.ascontiguousarray(t, dtype=cp.int64), np.int32(m), np.int32(n), out, np.int64(ldo),
                         np.int32(batch[0])) + tuple(np.int64(v) for v in batch[1:]))


@functools.lru_cache(maxsize=None)
def _module(n: int):
    # constexpr tables in __constant__ memory would need indexing by a runtime value; with
    # full unrolling NVRTC folds them into immediates.
    src = kernel_source(n).replace("__device__ __constant__ const", "__device__ const")
    return cp.RawModule(code=src, options=("-std=c++17",), name_expressions=None)


@functools.lru_cache(maxsize=None)
def _fn_on(name: str, n, device: int):
    return (_stats_module() if n is None else _module(n)).get_function(name)


def _fn(name: str, n: int | None = None):
    """Kernel ``name`` of stats.cu (``n`` None) or of the CRT module for ``n`` moduli, looked up
    once per device (``RawModule.get_function`` costs a few microseconds of host time per
    call, ~11 calls per product)."""
    return _fn_on(name, n, cp.cuda.runtime.getDevice())


_POW2_WIDTH = 1024  # d2 = d - 31 <= beta - 32 <= 968 (beta <= 1000; |x| < 2^E, so d <= beta - 1); shift 0: d2 <= 941


@functools.lru_cache(maxsize=None)
def _side_streams(device: int):
    """Two non-blocking streams per device for the overlapped row tiles of execute()."""
    return cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)


@functools.lru_cache(maxsize=None)
def _pow2_table(n: int, device: int):
    from ...crt.residues import pow2_mod_table

    return pow2_mod_table(garner_constants(n).moduli, _POW2_WIDTH - 1, cp).astype(cp.int16)


@functools.lru_cache(maxsize=None)
def _event_record_external():
    """The driver's ``cuEventRecordWithFlags`` (CUDA 11.1+), or None where it cannot be loaded:
    with CU_EVENT_RECORD_EXTERNAL during stream capture the record becomes an event-record
    node of the graph, which every launch of the graph records when the work captured before
    it is done."""
    try:
        f = ctypes.CDLL("libcuda.so.1").cuEventRecordWithFlags
    except (OSError, AttributeError):
        return None
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint]
    f.restype = ctypes.c_int
    return f


class _PendingRead:
    """A few int64 device values copied to pinned host memory on the current stream behind an
    event: ``read()`` waits for that copy only, not for the work queued after it. While ozgemm
    records a CUDA graph (:mod:`.graphs`) the event is recorded as a node of the graph
    (``node`` True), so a replay waits for the copy the same way (:meth:`wait`, then
    :meth:`host_buffer`); where the driver offers no such node, and in a capture of the
    caller's, there is no event (a replay then waits for its whole graph; ``read()`` refuses).
    ``keep``: device arrays the queued work reads (kept alive with it)."""

    def __init__(self, dev, keep=()):
        self._dev, self._keep = dev, keep  # kept alive until the copy is done
        self._mem = cp.cuda.alloc_pinned_memory(dev.nbytes)
        self._host = np.frombuffer(self._mem, dtype=np.int64, count=dev.size)
        stream = cp.cuda.get_current_stream()
        cp.cuda.runtime.memcpyAsync(self._mem.ptr, dev.data.ptr, dev.nbytes, cp.cuda.runtime.memcpyDeviceToHost,
                                    stream.ptr)
        self.node = False
        self._done = None
        if not stream.is_capturing():
            self._done = stream.record(cp.cuda.Event(disable_timing=True))
        elif recording() and (record := _event_record_external()) is not None:
            ev = cp.cuda.Event(disable_timing=True)
            status = record(ev.ptr, stream.ptr, 1)  # CU_EVENT_RECORD_EXTERNAL
            if status:
                raise RuntimeError(f"ozgemm: recording the planner's read into a CUDA graph failed (CUDA status {status})")
            self._done, self.node = ev, True

    def read(self):
        if self._done is None or self.node:
            raise RuntimeError("ozgemm: a product cannot be recorded into the caller's CUDA graph (stream capture): "
                               "its plan is confirmed on the host after the product is queued")
        self._done.synchronize()
        self._dev = None
        return self._host.copy()

    def wait(self):
        """Wait until the copy of the latest launch of the recorded graph is done (``node``)."""
        self._done.synchronize()

    def host_buffer(self):
        """The pinned host array the copy writes."""
        return self._host

    def __del__(self):  # never hand the pinned buffer back while the copy may still write it
        try:
            if self._done is not None:
                self._done.synchronize()
        except Exception:  # interpreter shutdown
            pass


@functools.lru_cache(maxsize=1024)
def _device_table_cached(key, device: int):
    t = cp.asarray(np.frombuffer(key[1], dtype=np.int64).reshape(key[0]))
    cp.cuda.get_current_stream().synchronize()  # complete before any stream reads it (once per table)
    return t


def _device_table(table, device: int):
    """A read-only host table on the device, uploaded once per content and device."""
    return _device_table_cached((table.shape, table.tobytes()), device)


@functools.lru_cache(maxsize=None)
def _stats_module():
    """stats.cu (with common.cuh), compiled once."""
    from importlib import resources

    from .source import common_source

    src = common_source() + (resources.files("ozgemm.kernels") / "cuda" / "stats.cu").read_text()
    return cp.RawModule(code=src, options=("-std=c++17",))


def _rows_contiguous(x):
    """``x`` as C-contiguous rows of float64, or of float32 for float32 input (the kernels
    widen float32 exactly as they read it); a column-major view (such as ``b.T`` of a
    row-major ``b``) is copied with a tiled transpose kernel."""
    it = x.itemsize
    if x.dtype in (cp.float64, cp.float32) and x.ndim == 2 and x.flags.c_contiguous:
        return x
    if (x.dtype in (cp.float64, cp.float32) and x.ndim == 2 and x.strides[0] == it
            and x.strides[1] > 0 and x.strides[1] % it == 0 and x.shape[1] <= 32 * 65535 and x.size):
        r, k = x.shape
        out = cp.empty((r, k), dtype=x.dtype)
        ut = cp.uint64 if it == 8 else cp.uint32
        f = _fn("transpose_f64" if it == 8 else "transpose_f32")
        f(((r + 31) // 32, (k + 31) // 32), (32, 8), (x.view(ut), np.int64(x.strides[1] // it), np.int32(k),
                                                      np.int32(r), out.view(ut)))
        return out
    if x.dtype == cp.float32:
        return cp.ascontiguousarray(x)
    return as_float64(x, contiguous=True)


def nonfinite_rows_cols(a, b):
    """Rows of ``a`` (m, k) and columns of ``b`` (k, n) holding NaN/Inf (cupy float32/float64,
    either memory order) with one pass over each and one 4-byte device->host read.

    Returns (bad_rows, bad_cols, any) as cupy bool arrays and a Python bool, or None where a
    layout or dtype is not handled here (the caller then uses its generic code)."""
    if a.dtype != b.dtype or a.dtype not in (cp.float32, cp.float64) or a.ndim != 2 or b.ndim != 2:
        return None
    it = a.itemsize
    anyf = cp.zeros((1,), dtype=cp.int32)
    bad_rows = cp.zeros((a.shape[0],), dtype=cp.bool_)
    bad_cols = cp.zeros((b.shape[1],), dtype=cp.bool_)
    jobs = []
    for x, flag, want_rows in ((a, bad_rows, True), (b, bad_cols, False)):
        r, c = x.shape
        if r * c == 0:
            continue
        if x.strides[1] == it and x.strides[0] > 0 and x.strides[0] % it == 0:  # row-major
            jobs.append((x, x.strides[0] // it, r, c, 0 if want_rows else 1, flag))
        elif x.strides[0] == it and x.strides[1] > 0 and x.strides[1] % it == 0:  # column-major: x.T rows
            jobs.append((x, x.strides[1] // it, c, r, 1 if want_rows else 0, flag))
        else:
            return None
    f = _fn("nonfinite_f64" if a.dtype == cp.float64 else "nonfinite_f32")
    for x, ld, r, c, cols, flag in jobs:
        grid, block = _grid2d(c, r)
        grid = (grid[0], min(grid[1], max(1, 65536 // grid[0])))
        f(grid, block, (x, np.int64(ld), np.int32(r), np.int32(c), np.int32(cols), flag, anyf))
    return bad_rows, bad_cols, bool(anyf.get()[0])


class _Ready:
    """The event the side streams wait for: recorded on the caller's stream when the first
    tile is entered (after everything queued before the tiles: B's residues, the output)."""

    def __init__(self, cur):
        self._cur, self._event = cur, None

    def event(self):
        if self._event is None:
            self._event = self._cur.record()
        return self._event


class _Tile:
    """Rows i0:i1 of A; entered, its work runs on ``stream`` (None: the caller's stream)."""

    def __init__(self, i0, i1, stream=None, ready=None):
        self.i0, self.i1, self._stream, self._ready = i0, i1, stream, ready

    def __enter__(self):
        if self._stream is not None:
            self._stream.wait_event(self._ready.event())
            self._stream.__enter__()
        return self

    def __exit__(self, *exc):
        if self._stream is not None:
            self._stream.__exit__(*exc)
        return False


class _Tiles:
    """The row tiles of one product (:meth:`CudaBackend.row_tiles`), laid out on iteration."""

    def __init__(self, backend, plan, a_components, concurrent, products=1):
        self._b, self._plan, self._comp, self._conc, self._prod = backend, plan, a_components, concurrent, products
        self.streams = self.ready = None

    def _overlap(self, m, mp_all, np_, per_row, budget) -> bool:
        """Whether the tiles run on two side streams: concurrent, float results, one
        component, from ``overlap_min_rows`` rows, GEMM outputs up to ``gemm_split_out``, two
        tiles within the budget."""
        b, nt = self._b, self._b.overlap_tiles
        return (self._conc and nt > 1 and m >= b.overlap_min_rows
                and self._plan.contract.fmt.name in ("binary64", "binary32") and self._comp == 1
                and mp_all * np_ <= b.gemm_split_out
                and 2 * _ceil(-(-m // nt), _PAD) * per_row <= budget
                and not cp.cuda.get_current_stream().is_capturing())  # side streams are shared

    def __iter__(self):
        b, plan = self._b, self._plan
        m, k, n = plan.shape
        N = plan.n_moduli
        mp_all, np_, kp = _ceil(m, _PAD), _ceil(n, _PAD), _ceil(k, _PAD)
        per_row = (N * kp * (2 if self._comp > 1 else 1) + N * np_ * 4) * self._prod
        budget, free = b.workspace_budget()
        tm = max(_PAD, min(mp_all, (budget // max(per_row, 1)) // _PAD * _PAD))
        if tm * per_row > free:
            raise MemoryError(f"ozgemm: one {_PAD}-row tile needs {tm * per_row / 2**30:.1f} GiB of GPU memory, "
                              f"{free / 2**30:.1f} GiB are free; split k or free memory")
        nt = b.overlap_tiles
        if not self._overlap(m, mp_all, np_, per_row, budget):
            return iter([_Tile(i0, min(m, i0 + tm)) for i0 in range(0, m, tm)])
        tm = _ceil(-(-m // nt), _PAD)
        self.streams = _side_streams(cp.cuda.runtime.getDevice())
        self.ready = _Ready(cp.cuda.get_current_stream())
        return iter([_Tile(i0, min(m, i0 + tm), self.streams[ti % 2], self.ready)
                     for ti, i0 in enumerate(range(0, m, tm))])


def _reduced(c, n_moduli, dtype):
    """Exact product sums ``c`` (N, ...) int32/int64 reduced into [0, m_q) per modulus, as ``dtype``."""
    mods = cp.asarray(np.asarray(garner_constants(n_moduli).moduli, dtype=np.int64)).reshape(-1, 1, 1)
    return (c.astype(cp.int64, copy=False) % mods).astype(dtype, copy=False)


def _stats_from(st, off):
    """The per-row statistics from row ``off`` on (the rows of a stack's later products)."""
    import dataclasses

    return dataclasses.replace(st, **{f: getattr(st, f)[off:] for f in ("width", "norm1", "qsum", "n1_int", "n2_int")})


class CudaBackend:
    """Every phase of :class:`~ozgemm.kernels.base.Backend` on NVIDIA GPUs (module docstring)."""

    name = "cuda"
    xp = cp
    speculates = True  # speculative_shifts derives the width on the device
    flags_nonfinite = True  # row_stats(x, nonfinite=flag) flags NaN/Inf at no extra pass
    stack_shares_operands = False  # a stack's shared operand copied per product: groups by moduli count
    stack_chunk_bytes = None  # each group in one set of launches

    def __init__(self, memory_fraction: float = 0.6, overlap_tiles: int = _OVERLAP_TILES,
                 overlap_min_rows: int = _OVERLAP_MIN_ROWS, gemm_split_out: int = _GEMM_SPLIT_OUT,
                 gemm_rows: int = _GEMM_ROWS, gemm_batch_out: int = _GEMM_BATCH_OUT,
                 graph_max_work: int = _GRAPH_MAX_WORK):
        """``memory_fraction``: share of the free device memory a product's workspace may use;
        ``overlap_tiles`` / ``overlap_min_rows``: row tiles on side streams from that many rows
        of A (1: one stream); ``gemm_split_out`` / ``gemm_rows``: INT8 GEMMs with more outputs
        run in chunks of that many rows of A, those with at most ``gemm_batch_out`` outputs as
        one strided-batched call over the moduli; ``graph_max_work``: speculative products of at most
        that many multiply-adds are replayed from CUDA graphs (:mod:`.graphs`; 0: never). The
        defaults are the H200 measurements'."""
        self.memory_fraction = memory_fraction
        self.overlap_tiles, self.overlap_min_rows = int(overlap_tiles), int(overlap_min_rows)
        self.gemm_split_out, self.gemm_rows = int(gemm_split_out), int(gemm_rows)
        self.gemm_batch_out = int(gemm_batch_out)
        self.gemm_path = "cublas-int8"
        self._recorder = Recorder(graph_max_work) if graph_max_work else None

    def recorded(self, key, run, a, b, valid):
        """:meth:`Backend.recorded`: 2-D C-contiguous float32/float64 products of at most
        ``graph_max_work`` multiply-adds (one exact int32 k-block) are recorded into a CUDA graph on
        the second call of a kind and replay it from the third (:class:`.graphs.Recorder`)."""
        if self._recorder is None or not self._recorder.eligible(a, b, KBLOCK_INT32 // _PAD * _PAD):
            return run(a, b)
        return self._recorder.run(key, run, a, b, valid)

    def workspace_budget(self):
        """(tile budget, hard limit) in bytes: ``memory_fraction`` of the free device memory
        (the memory pool's free blocks included), and the free memory."""
        free = cp.cuda.runtime.memGetInfo()[0] + cp.get_default_memory_pool().free_bytes()
        return int(self.memory_fraction * free), free

    def check_planning_memory(self, m, k, n):
        """Statistics are O(m k + k n) device arrays; an allocation failure raises
        cupy's OutOfMemoryError (a MemoryError) itself."""

    def nonfinite_rows_cols(self, a, b):
        """One pass per operand and one 4-byte read (:func:`nonfinite_rows_cols`); other
        layouts: the generic array expressions."""
        fused = nonfinite_rows_cols(a, b)
        if fused is not None:
            return fused
        fa = cp.isfinite(a)
        fb = cp.isfinite(b)
        bad_rows = ~fa.all(axis=1) if a.shape[1] else cp.zeros((a.shape[0],), dtype=bool)
        bad_cols = ~fb.all(axis=0) if b.shape[0] else cp.zeros((b.shape[1],), dtype=bool)
        return bad_rows, bad_cols, bool(bad_rows.any()) or bool(bad_cols.any())

    def synchronize(self):
        cp.cuda.get_current_stream().synchronize()

    # -- INT8 GEMM ------------------------------------------------------------------
    def _gemm_batched_i32(self, a, bt, c):
        """c[q] = a[q] @ bt[q].T exactly; a (N, mp, kb), bt (N, np, kb) int8 C-contiguous,
        c (N, mp, np) int32; kb <= KBLOCK_INT32, mp, np, kb multiples of 4."""
        N, mp, kb = a.shape
        np_ = bt.shape[1]
        h = cublas.handle()
        if mp * np_ <= self.gemm_batch_out:  # small outputs: one strided-batched call over the moduli
            cublas.gemm_i8(h, a, bt, c, 0, N, 0, mp)
            return
        # One call per modulus: measured 1248 TOPS against 1186 for one strided-batched call
        # over the moduli at n = 16384 on the H200. Large outputs go in
        # chunks of _GEMM_ROWS rows of A: 1370 TOPS against 1263 whole at 16384^3, while whole
        # calls stay faster at 8192^3 and below (docs/design.md).
        rows = self.gemm_rows if mp * np_ > self.gemm_split_out and np_ >= self.gemm_rows else mp
        for q in range(N):
            for r0 in range(0, mp, rows):
                cublas.gemm_i8(h, a, bt, c, q, 1, r0, min(mp, r0 + rows))

    def _gemm_exact_padded(self, a, bt):
        """Exact products of padded (N, mp, kp) x (N, np, kp) int8 -> int32 or int64."""
        N, mp, kp = a.shape
        np_ = bt.shape[1]
        c = cp.empty((N, mp, np_), dtype=cp.int32)
        if kp <= KBLOCK_INT32:
            self._gemm_batched_i32(a, bt, c)
            return c
        acc = cp.zeros((N, mp, np_), dtype=cp.int64)
        kb = KBLOCK_INT32 // _PAD * _PAD
        for k0 in range(0, kp, kb):
            k1 = min(kp, k0 + kb)
            self._gemm_batched_i32(cp.ascontiguousarray(a[:, :, k0:k1]), cp.ascontiguousarray(bt[:, :, k0:k1]), c)
            acc += c
        return acc

    @staticmethod
    def _pad(x, rp, kp):
        N, r, k = x.shape
        if r == rp and k == kp and x.flags.c_contiguous:
            return x
        out = cp.zeros((N, rp, kp), dtype=x.dtype)
        out[:, :r, :k] = x
        return out

    def second_window(self, x, E):
        """:func:`ozgemm.precision.planner.second_window` in one pass (float32 widened
        exactly first); a transposed x (the planner's b^T) is read along its rows, then the
        int8 result transposed."""
        x = as_float64(x)
        if not x.flags.c_contiguous and x.T.flags.c_contiguous:
            return cp.ascontiguousarray(_second_window_kernel()(x.T, E[None, :]).T)
        return _second_window_kernel()(cp.ascontiguousarray(x), E[:, None])

    def gemm_exact(self, a, bt):
        """Exact ``a @ bt.T`` (int8). Returned as the int32 GEMM output itself (a view, no
        copy) when k fits one exact int32 k-block (|sum| <= k 2**14 < 2**31), else int64:
        every value is exact either way; the planner's width kernel reads both."""
        m, k = a.shape
        n = bt.shape[0]
        if k == 0 or m == 0 or n == 0:
            return cp.zeros((m, n), dtype=cp.int64)
        mp, np_, kp = _ceil(m, _PAD), _ceil(n, _PAD), _ceil(k, _PAD)
        c = self._gemm_exact_padded(self._pad(a[None], mp, kp), self._pad(bt[None], np_, kp))
        return c[0, :m, :n]

    def gemm_complex_bound(self, qa, qbt, k, form):
        """:meth:`~ozgemm.kernels.base.Backend.gemm_complex_bound`: each operand written straight
        into its padded INT8 GEMM operand by one pass over the interleaved magnitudes (stats.cu
        ``complex_bound_q``), then :meth:`gemm_exact`'s GEMM (and, "b_real", its two row
        halves side by side)."""
        m, n = qa.shape[0], qbt.shape[0]
        if k == 0 or m == 0 or n == 0:
            return cp.zeros((m, 2 * n if form != "half" else n), dtype=cp.int64)
        modes = {"half": (0, 1), "full": (4, 5), "a_real": (3, 2), "b_real": (2, 3)}[form]
        kp = _ceil(2 * k if form in ("half", "full") else k, _PAD)
        ops = []
        for q, mode in zip((qa, qbt), modes):
            r = q.shape[0]
            rp = _ceil(2 * r if mode in (2, 5) else r, _PAD)
            assert q.dtype == cp.int8 and q.strides[1] == 1 and q.shape[1] >= 2 * k
            out = cp.empty((1, rp, kp), dtype=cp.int8)
            words = rp * kp // 4
            _fn("complex_bound_q")((min(-(-words // 256), 1 << 20),), (256,),
                                   (q, np.int64(q.strides[0]), np.int32(r), np.int32(k), np.int32(rp), np.int32(kp),
                                    np.int32(mode), out))
            ops.append(out)
        g = self._gemm_exact_padded(*ops)[0]
        if g.dtype == cp.int32 and 2 * k > KBLOCK_INT32:
            # (a real operand's forms sum k terms, but the planner's int32 width kernel takes
            # sums over the statistics' 2k entries per row only up to one k-block: int64 here)
            g = g.astype(cp.int64)
        if form == "half":
            return g[:m, :n]
        if form in ("a_real", "full"):
            return g[:m, :2 * n]
        return cp.concatenate([g[:m, :n], g[m:2 * m, :n]], axis=1)

    # -- planner hooks (fused; mirror precision/stats.py and planner.required_beta) ------
    def row_stats(self, x, nonfinite=None):
        """Fused :class:`~ozgemm.precision.stats.RowStats` of the rows of ``x`` (r, k), or of
        (C, r, k) components (dd / binary128 operands, same rules as precision/stats.py).
        ``nonfinite``: an int32 device array whose element 0 is set to 1 when ``x`` holds
        NaN/Inf (checked at no cost from the row maxima; the statistics are then meaningless).
        A float64 column-major ``x`` (the planner's ``b.T`` of a row-major B) is read through
        B's columns, without a transposed copy, and kept as ``src`` (a view); other layouts are
        made contiguous rows first."""
        C = x.shape[0] if x.ndim == 3 else 1
        ldc = _columns_ld(x)
        if ldc is not None and -(-x.shape[1] // _CS_CHUNK) > 65535:
            ldc = None
        if ldc is None:
            x = cp.ascontiguousarray(x) if x.ndim == 3 else _rows_contiguous(x)
        r, k = x.shape[-2:]
        # the kernel writes every entry when r and k are non-zero (no memset then)
        alloc, alloc1 = (cp.empty, cp.empty) if r and k else (cp.zeros, cp.ones)
        E = alloc((r,), dtype=cp.int64)
        width = alloc((r,), dtype=cp.int64)
        norm1 = alloc((r,), dtype=cp.float64)
        zero = alloc1((r,), dtype=cp.bool_)
        q = alloc((r, k), dtype=cp.int8)
        n1 = alloc((r,), dtype=cp.int64)
        n2 = alloc((r,), dtype=cp.int64)
        qsum = alloc((r,), dtype=cp.int64)
        chunks = -(-k // (_RS_CHUNK * 8 // x.itemsize))  # stats.cu rs_chunk: 16 KiB of x per block
        ldx = x.strides[-2] // x.itemsize if ldc is None else 0
        flag = nonfinite if nonfinite is not None else np.uint64(0)  # a null pointer
        sfx = "_f32" if x.dtype == cp.float32 else ""
        if ldc is not None:
            # rows of x = columns of a row-major matrix: the same two passes read through its
            # columns (stats.cu col_extent / col_sums; same bits as row_stats), then row_finish
            acc = cp.zeros((5, r), dtype=cp.int64)
            grid = (-(-r // 32), -(-k // _CS_CHUNK))
            _fn("col_extent")(grid, (32, 8), (x, np.int64(ldc), np.int32(r), np.int32(k), acc))
            vec = int(k % 16 == 0 and q.data.ptr % 16 == 0)
            _fn("col_sums")(grid, (32, 8), (x, np.int64(ldc), np.int32(r), np.int32(k), q, np.int64(k),
                                                  np.int32(k), np.int32(vec), acc))
            _fn("row_finish")(((r + 255) // 256,), (256,), (acc, np.int32(r), E, width, norm1, zero,
                                                           n1, n2, qsum, flag))
        elif r and k and C == 1 and chunks <= 65535:
            # one-component rows: two streaming passes over (row, chunk) blocks and a per-row
            # finish (stats.cu row_extent / row_sums / row_finish; same bits as row_stats)
            acc = cp.zeros((5, r), dtype=cp.int64)
            _fn("row_extent" + sfx)((r, chunks), (_RS_THREADS,), (x, np.int64(ldx), np.int32(r),
                                                                             np.int32(k), acc))
            _fn("row_sums" + sfx)((r, chunks), (_RS_THREADS,), (
                x, np.int64(ldx), np.int32(r), np.int32(k), q, np.int64(k), np.int32(k), acc))
            _fn("row_finish")(((r + 255) // 256,), (256,), (acc, np.int32(r), E, width, norm1, zero,
                                                                           n1, n2, qsum, flag))
        elif r and k:
            # one block per row: float64 rows up to 16 x 512 entries kept in registers between
            # the kernel's two passes; longer rows and float32: 256 threads, row read twice
            # (the float32 register-cached variant measured slower on the H200)
            if k <= _STATS_CACHE * 512 and not sfx:
                name, threads = "row_stats", max(32, 1 << max(-(-k // _STATS_CACHE) - 1, 0).bit_length())
            else:
                name, threads = "row_stats" + sfx + "_long", 256
            _fn(name)((r,), (threads,), (x, np.int64(ldx), np.int32(r), np.int32(k), E, width, norm1,
                                                      zero, n1, n2, q, np.int64(k), np.int32(k), np.int32(C),
                                                      np.int64(r * k), qsum, flag))
        return RowStats(mant=None, exp=None, E=E, width=width, norm1=norm1, q=q, zero_row=zero,
                        n1_int=n1, n2_int=n2, qsum=qsum, src=x if C == 1 else None, ncomp=C)

    def plan_scalars(self, sa, sb, lb, bits, k, u, flag=None, lb_shift=0):
        """:func:`ozgemm.precision.planner.plan_scalars` in one kernel pass over ``lb``:
        int64 device array [minimal width, max n1 A, max n1 B, max n2 A, max n2 B, max_ij
        (LB_ij + ra_i + cb_j)] (+ [flag[0]] with ``flag``), bit-identical to the numpy planner.
        ``lb_shift``: ``lb`` in units of 2**-(14 + lb_shift) (int64, < 2**53): the kernel's
        exponent offset takes bits + lb_shift, its K = k 2**(1 - bits) the contract's bits."""
        from ...precision.planner import plan_scalars

        m, n = lb.shape
        if m * n == 0:
            return plan_scalars(sa, sb, lb, bits, k, u, cp, flag=flag, lb_shift=lb_shift)
        # zeros suffice: every block raises out[0] to at least 1 (plan_scalars_impl)
        out = cp.zeros((6 if flag is None else 7,), dtype=cp.uint64)
        if flag is not None:  # the NaN/Inf flag rides along in the same read (low half of out[6])
            cp.cuda.runtime.memcpyAsync(out.data.ptr + 48, flag.data.ptr, 4, cp.cuda.runtime.memcpyDeviceToDevice,
                                        cp.cuda.get_current_stream().ptr)
        if lb.dtype not in (cp.int32, cp.int64) or lb.strides[1] != lb.itemsize:
            lb = cp.ascontiguousarray(lb, dtype=cp.int64)
        self._plan_scalars_launch(sa, sb, lb, m, n, bits, k, u, lb_shift, out)
        return out.view(cp.int64)

    def _plan_scalars_launch(self, sa, sb, lb, m, n, bits, k, u, lb_shift, out, batch=(1, 0, 0, 0, 0)):
        """The plan_scalars kernels over ``lb`` (rows of stride ``lb.strides[-2]``); ``batch``:
        (products, lb stride, A-side stride, B-side stride, out stride), one grid z per product."""
        fac = (1.0 + u) * (1.0 + 2.0 ** -40)
        ld = lb.strides[-2] // lb.itemsize
        nb = batch[0]
        args = (lb, np.int64(ld), np.int32(m), np.int32(n), sa.width, sb.width, sa.norm1, sb.norm1,
                np.int32(bits + lb_shift), np.float64(k * 2.0 ** (1 - bits)), np.float64(fac), sa.qsum, sb.qsum, sa.n1_int, sb.n1_int,
                sa.n2_int, sb.n2_int, out) + tuple(np.int64(x) for x in batch[1:])
        if lb.dtype == cp.int32 and not lb_shift:
            # one exact int32 k-block: the q rows have kq <= KBLOCK_INT32 entries, so ra_i = sum |q_il|
            # <= 127 kq < 2**31 and the kernel's 32-bit sums L + ra_i stay < 2**32; four columns per
            # thread, ~2 resident waves of 256-thread blocks (stats.cu)
            assert sa.q.shape[-1] <= KBLOCK_INT32
            assert bits + lb_shift <= 1000  # R and the per-entry z are normal doubles (stats.cu, need_bits)
            grid, block = _grid2d(-(-n // 4), m)
            grid = (grid[0], min(grid[1], max(1, 2048 // (grid[0] * nb))), nb)
            vec = int(ld % 4 == 0 and lb.data.ptr % 16 == 0 and batch[1] % 4 == 0)
            _fn("plan_scalars_i32")(grid, block, args + (np.int32(vec),))
        else:
            # rows per thread: enough blocks to fill the device, one atomic per block and scalar
            grid, block = _grid2d(n, m)
            grid = (grid[0], min(grid[1], max(1, 8192 // (grid[0] * nb))), nb)
            _fn("plan_scalars")(grid, block, args)

    def normwise_scalars(self, sa, sb, table, k, flag=None):
        """:func:`ozgemm.precision.planner.normwise_scalars` in one launch of one block
        (stats.cu ``normwise_scalars``: the four maxima and the threshold count), ``table``
        uploaded once per content (no host transfer afterwards: a speculative normwise product
        can be recorded)."""
        tab = _device_table(table, cp.cuda.runtime.getDevice())
        out = cp.empty((6 + (flag is not None),), dtype=cp.int64)
        n1a, n2a, n1b, n2b = (cp.ascontiguousarray(v, dtype=cp.int64) for v in (sa.n1_int, sa.n2_int, sb.n1_int,
                                                                                  sb.n2_int))
        fl = np.uint64(0) if flag is None else cp.ascontiguousarray(flag, dtype=cp.int32)
        _fn("normwise_scalars")((1,), (256,), (n1a, n2a, np.int64(n1a.shape[0]), n1b, n2b, np.int64(n1b.shape[0]),
                                               tab, np.int32(tab.shape[0] - 1), np.int64((k << (2 * LB_BITS)) - k), fl, out))
        return out

    def shifts(self, beta, sa, sb):
        """The planner's row shifts of A and column shifts of B, ``where(zero_row, 0, beta - E)``
        as int64 (views of one buffer), in one launch (stats.cu ``plan_shifts``): this sits
        between the host read and the residues, where every launch is GPU idle time."""
        return self._shifts(beta, sa, sb)[:2]

    def speculative_shifts(self, scalars, table, sa, sb, k):
        """Shifts for a speculative plan (:func:`ozgemm.precision.planner.make_plan`,
        ``speculate=True``) without a host read: ``plan_shifts`` derives the width on the device
        from the planner's scalars (int64 device array of 6, or 7 with the NaN/Inf flag) and
        ``table`` (:func:`~ozgemm.precision.planner.speculative_thresholds` of the guessed
        moduli count; uploaded once per count and k), then the scalars and that width are
        copied to pinned host memory behind an event. Returns (s, t, pending); ``pending.read()``
        waits for that copy only (the work queued after it keeps the GPU busy) and returns the
        int64 host values [scalars..., width]."""
        return self._shifts(0, sa, sb, scalars, _device_table(table, cp.cuda.runtime.getDevice()), k)

    def _shifts(self, beta, sa, sb, spec=None, tab=None, k=0):
        m, n = sa.E.shape[0], sb.E.shape[0]
        nscal = 0 if spec is None else int(spec.shape[0])
        out = cp.empty((m + n + nscal + 1,), dtype=cp.int64)  # s, t, then [scalars, width] (speculative)
        if m + n or spec is not None:
            blocks = max(1, min(-(-(m + n) // _THREADS), 1024))
            e_a, z_a, e_b, z_b = (cp.ascontiguousarray(v, dtype=dt) for v, dt in (
                (sa.E, cp.int64), (sa.zero_row, cp.bool_), (sb.E, cp.int64), (sb.zero_row, cp.bool_)))
            spec_args = (np.uint64(0), np.int32(0), np.uint64(0), np.int32(0), np.int64(0), np.uint64(0)) \
                if spec is None else (spec, np.int32(nscal), tab, np.int32(tab.shape[0] - 1), np.int64(k),
                                      out[m + n:])
            _fn("plan_shifts")((blocks,), (_THREADS,), (e_a, z_a, np.int64(m), e_b, z_b, np.int64(n),
                                                        np.int64(beta), out) + spec_args)
        if spec is None:
            return out[:m], out[m:m + n], None
        return out[:m], out[m:m + n], _PendingRead(out[m + n:], keep=(tab,))

    # -- fused phases ------------------------------------------------------------------
    def residues_padded(self, x, shift, n_moduli, rp, kp):
        """Scaled residues of the rows of float64 or float32 ``x`` (r, k) into (N, rp, kp) int8
        (float32 rows are read as they are and widened exactly in the kernel; a float64
        column-major ``x`` is read through the columns of the matrix it transposes,
        ``scaled_residues_cols``; the same bytes either way)."""
        ldc = _columns_ld(x)
        if ldc is None and not (x.ndim == 2 and x.dtype in (cp.float32, cp.float64) and x.strides[1] == x.itemsize
                                and x.strides[0] > 0):
            x = as_float64(x, contiguous=True)  # (rows with a larger stride, e.g. [Ar | Ai], read in place)
        r, k = x.shape
        out = cp.empty((n_moduli, rp, kp), dtype=cp.int8)
        if not rp * kp:
            return out
        tab = _pow2_table(n_moduli, cp.cuda.runtime.getDevice())
        shift = cp.ascontiguousarray(shift, dtype=cp.int64)
        if ldc is not None:
            # rows of x = columns of a row-major matrix, read in place (crt.cu scaled_residues_cols)
            _residues_cols("scaled_residues_cols", n_moduli, (x,), ldc, shift, r, k, rp, kp, tab, (out,))
        else:
            _residues_rows("scaled_residues_f32" if x.dtype == cp.float32 else "scaled_residues", n_moduli, (x,),
                           shift, r, k, rp, kp, tab, (out,))
        return out

    def residues_multi(self, x, shift, n_moduli, rp, kp):
        """:meth:`residues_padded` of (r, k) rows, or of (C, r, k) components whose scaled
        integers add (residues added mod m by ``add_residues`` in wide.cu)."""
        if x.ndim == 2:
            return self.residues_padded(x, shift, n_moduli, rp, kp)
        acc = self.residues_padded(x[0], shift, n_moduli, rp, kp)
        f = _fn("add_residues", n_moduli)
        total = acc.size
        for c in range(1, x.shape[0]):
            r = self.residues_padded(x[c], shift, n_moduli, rp, kp)
            f(((total + _THREADS - 1) // _THREADS,), (_THREADS,), (acc, r, np.int64(rp * kp), np.int64(total)))
            del r
        return acc

    def reconstruct_exact(self, c, n_moduli, m, n):
        """The exact integers of the products ``c`` (N, >=m, >=n), reduced modulo each m_q
        (int64), through the array-generic :func:`~ozgemm.crt.reconstruct.crt_reconstruct`."""
        r = _reduced(c[:, :m, :n], n_moduli, cp.int64)
        mag, neg = crt_reconstruct(r.reshape(r.shape[0], -1), n_moduli, cp)
        return mag.reshape((mag.shape[0], m, n)), neg.reshape(m, n)

    def reconstruct_round(self, c, s, t, n_moduli, fmt, out=None):
        """Fused Garner + Horner + sign + rounding of (N, m, >=n) int32/int64 products.

        ``c`` may be a row/column slice of a padded product buffer: its strides are passed
        to the kernel (no copy)."""
        m, n = s.shape[0], t.shape[0]
        c = c[:, :m, :]  # the rows of a padded product buffer (a view)
        if c.dtype != cp.int32:  # long-k path: reduce the int64 sums first (exact)
            c = _reduced(c, n_moduli, cp.int32)
        if c.strides[2] != c.itemsize:
            c = cp.ascontiguousarray(c)
        sc, ldc = c.strides[0] // c.itemsize, c.strides[1] // c.itemsize
        if fmt.name in ("dd", "binary128"):  # wide results: wide.cu (storage as empty_result)
            if out is None:
                out = empty_result(m, n, fmt, cp)
            if m * n:
                grid = (((m * n) + _THREADS - 1) // _THREADS,)
                args = (c, np.int64(ldc), np.int64(sc), cp.ascontiguousarray(s, dtype=cp.int64),
                        cp.ascontiguousarray(t, dtype=cp.int64), np.int32(m), np.int32(n))
                if fmt.name == "dd":
                    assert out[0].strides[1] == 8 and out[0].strides == out[1].strides
                    _fn("crt_round_dd", n_moduli)(grid, (_THREADS,), args + (
                        out[0], out[1], np.int64(out.strides[1] // 8)))
                else:
                    assert out.strides[2] == 8 and out.strides[1] == 16
                    _fn("crt_round_q128", n_moduli)(grid, (_THREADS,), args + (
                        out, np.int64(out.strides[0] // 16)))
            return out
        dtype = cp.float64 if fmt.name == "binary64" else cp.float32
        if out is None:
            out = cp.empty((m, n), dtype=dtype)
        assert out.strides[1] == out.itemsize or n <= 1
        if m * n:
            _crt_round(fmt, n_moduli, c, ldc, sc, s, t, m, n, out, out.strides[0] // out.itemsize)
        return out

    def residue_moduli(self, n_moduli):
        """The plan's moduli (``MODULI[:n_moduli]``, or the plan's tuple: the engine's kernels
        are built for them)."""
        return plan_moduli(n_moduli)

    def residues_3m(self, x, y, shift, n_moduli, i0=0, i1=None):
        """(rx, ry, rs): the residues (N, rp, kp) int8 of rows ``i0:i1`` of ``x`` and ``y``
        (two parts of one scaling ``shift``, e.g. Ar and Ai) and of the sum of their scaled
        integers, in one pass (crt.cu ``scaled_residues_pair``; ``scaled_residues_cols_pair``
        for float64 column-major views of one stride, such as Br^T and Bi^T of the embedding,
        read through their columns): the bytes of :meth:`residues` twice and of the symmetric
        sum, without reading the two results back."""
        return self._two_part_residues("pair", 3, x, y, shift, n_moduli, i0, i1)

    def residues_split(self, x, y, shift, moduli, i0=0, i1=None):
        """(rp, rm): the residues (N, rp, kp) int8 of X' + t_q Y' and X' - t_q Y' for rows
        ``i0:i1`` of the parts ``x``, ``y`` (one scaling ``shift``) modulo the plan's ``moduli``
        (each with a square root t_q of -1), in one pass read like :meth:`residues_3m`
        (crt.cu ``scaled_residues_split``, ``_split_il``, ``scaled_residues_cols_split``)."""
        return self._two_part_residues("split", 2, x, y, shift, moduli, i0, i1)

    def _two_part_residues(self, form, nout, x, y, shift, n_moduli, i0, i1):
        r, k = x.shape
        i1 = r if i1 is None else i1
        if i0 or i1 != r:
            x, y, shift = x[i0:i1], y[i0:i1], shift[i0:i1]
        r = i1 - i0
        rp, kp = _ceil(r, _PAD), _ceil(k, _PAD)
        N = len(plan_moduli(n_moduli))
        outs = tuple(cp.empty((N, rp, kp), dtype=cp.int8) for _ in range(nout))
        if not rp * kp:
            return outs
        tab = _pow2_table(n_moduli, cp.cuda.runtime.getDevice())
        shift = cp.ascontiguousarray(shift, dtype=cp.int64)
        ldc = _columns_ld(x)
        if ldc is not None and _columns_ld(y) == ldc:
            _residues_cols(f"scaled_residues_cols_{form}", n_moduli, (x, y), ldc, shift, r, k, rp, kp, tab, outs)
            return outs
        if (x.dtype == y.dtype and x.dtype in (cp.float32, cp.float64) and x.strides == y.strides
                and x.strides[1] == 2 * x.itemsize and y.data.ptr == x.data.ptr + x.itemsize and x.strides[0] > 0):
            # the parts interleaved: the real and imaginary words of a complex array, read in place
            _residues_rows(f"scaled_residues_{form}_il" + ("_f32" if x.dtype == cp.float32 else ""),
                           n_moduli, (x,), shift, r, k, rp, kp, tab, outs)
            return outs
        if not (x.dtype == y.dtype and x.dtype in (cp.float32, cp.float64) and x.strides == y.strides
                and x.strides[1] == x.itemsize and x.strides[0] > 0):
            x, y = _rows_contiguous(x), _rows_contiguous(y)
            if x.dtype != y.dtype:
                x, y = as_float64(x, contiguous=True), as_float64(y, contiguous=True)
        _residues_rows(f"scaled_residues_{form}" + ("_f32" if x.dtype == cp.float32 else ""), n_moduli,
                       (x, y), shift, r, k, rp, kp, tab, outs)
        return outs

    def reconstruct_round_3m(self, p1, p2, p3, s, t_re, t_im, n_moduli, fmt, out_re, out_im, k):
        """The real part p1 - p2 and the imaginary part p3 - p1 - p2 of the int32 products,
        reconstructed and rounded in one kernel (crt.cu ``crt_round_3m``: no combined array is
        written) where k <= 2**15, so |p| <= 2**29 and both differences fit int32; otherwise
        combined in int64 by an elementwise pass, then :meth:`reconstruct_round` twice."""
        m, n = s.shape[0], t_re.shape[0]
        if p1.dtype == cp.int32 and _ceil(k, _PAD) <= _K3M_INT32 and fmt.name in ("binary64", "binary32"):
            if not m * n:
                return
            c1, c2, c3 = (x[:, :m, :] for x in (p1, p2, p3))
            assert c1.strides == c2.strides == c3.strides and c1.strides[2] == 4
            assert out_re.strides == out_im.strides and out_re.strides[1] in (out_re.itemsize, 2 * out_re.itemsize)
            f = _fn("crt_round_3m_f64", n_moduli) if fmt.name == "binary64" else _fn("crt_round_3m_f32", n_moduli)
            grid, block = _grid2d(n, m)
            i64 = cp.int64
            f(grid, block, (c1, c2, c3, np.int64(c1.strides[1] // 4), np.int64(c1.strides[0] // 4),
                            cp.ascontiguousarray(s, dtype=i64), cp.ascontiguousarray(t_re, dtype=i64),
                            cp.ascontiguousarray(t_im, dtype=i64), np.int32(m), np.int32(n), out_re, out_im,
                            np.int64(out_re.strides[0] // out_re.itemsize), np.int64(out_re.strides[1] // out_re.itemsize)))
            return
        p1, p2, p3 = (x.astype(cp.int64, copy=False) for x in (p1, p2, p3))
        _combine_3m_kernel()(p2, p1, p3)
        for c, t, o in ((p1, t_re, out_re), (p3, t_im, out_im)):
            if fmt.name in ("binary64", "binary32") and o.strides[1] != o.itemsize:  # (interleaved parts)
                o[...] = self.reconstruct_round(c, s, t, n_moduli, fmt)
            else:
                self.reconstruct_round(c, s, t, n_moduli, fmt, o)

    def reconstruct_round_split(self, pp, pm, s, t_re, t_im, moduli, fmt, out_re, out_im, k):
        """The split form of a complex product: from the int32 products ``pp``, ``pm`` of the
        residues of :meth:`residues_split` (inner dimension ``k``) the real part (pp + pm)/2
        and the imaginary part (pp - pm)/(2 t_q) modulo each of the plan's ``moduli``,
        reconstructed and rounded into ``out_re``, ``out_im`` in one kernel (crt.cu
        ``crt_round_split``) where k <= 2**15 (|p| <= 2**29: the sum and difference fit int32);
        otherwise reduced in int64 by an elementwise pass, then :meth:`reconstruct_round` twice."""
        m, n = s.shape[0], t_re.shape[0]
        if pp.dtype == cp.int32 and _ceil(k, _PAD) <= _K3M_INT32 and fmt.name in ("binary64", "binary32"):
            if not m * n:
                return
            cpp, cpm = (x[:, :m, :] for x in (pp, pm))
            assert cpp.strides == cpm.strides and cpp.strides[2] == 4
            assert out_re.strides == out_im.strides and out_re.strides[1] in (out_re.itemsize, 2 * out_re.itemsize)
            f = (_fn("crt_round_split_f64", moduli) if fmt.name == "binary64"
                 else _fn("crt_round_split_f32", moduli))
            grid, block = _grid2d(n, m)
            i64 = cp.int64
            f(grid, block, (cpp, cpm, np.int64(cpp.strides[1] // 4), np.int64(cpp.strides[0] // 4),
                            cp.ascontiguousarray(s, dtype=i64), cp.ascontiguousarray(t_re, dtype=i64),
                            cp.ascontiguousarray(t_im, dtype=i64), np.int32(m), np.int32(n), out_re, out_im,
                            np.int64(out_re.strides[0] // out_re.itemsize),
                            np.int64(out_re.strides[1] // out_re.itemsize)))
            return
        ms = plan_moduli(moduli)
        col = (-1, 1, 1)
        m_ = cp.asarray(np.array(ms, dtype=np.int64)).reshape(col)
        f_re, f_im = (cp.asarray(np.array(f, dtype=np.int64)).reshape(col) for f in split_factors(ms)[1:])
        pp, pm = (x.astype(cp.int64) for x in (pp, pm))
        im = cp.empty_like(pp)
        _combine_split_kernel()(pm, m_, f_re, f_im, pp, im)
        for c, t, o in ((pp, t_re, out_re), (im, t_im, out_im)):
            if fmt.name in ("binary64", "binary32") and o.strides[1] != o.itemsize:  # (interleaved parts)
                o[...] = self.reconstruct_round(c, s, t, moduli, fmt)
            else:
                self.reconstruct_round(c, s, t, moduli, fmt, o)

    def residue_products(self, ra, rb, moduli):
        """The exact int32 products (N, mp, np) of padded residues (int64 sums beyond one
        exact int32 k-block); :meth:`reconstruct_round` reduces them modulo each m_q."""
        return self._gemm_exact_padded(ra, rb)

    def residues(self, rows, stats, shift, n_moduli, i0=0, i1=None):
        """Residues (N, rp, kp) int8, padded to multiples of 16, of rows ``i0:i1``: read from
        the rows the fused statistics kept (``stats.src``, possibly B's columns in place) or
        from ``rows``; (C, r, k) components have their residues added mod m."""
        x = stats.src if (stats is not None and stats.src is not None and rows.ndim == 2) else rows
        if x.ndim == 3:
            x = cp.ascontiguousarray(x)
        r, k = x.shape[-2:]
        i1 = r if i1 is None else i1
        if i0 or i1 != r:  # (a view costs host time: only for a tile of the rows)
            x, shift = x[..., i0:i1, :], shift[i0:i1]
        return self.residues_multi(x, shift, n_moduli, _ceil(i1 - i0, _PAD), _ceil(k, _PAD))

    def complex_operands(self, a, b):
        """:func:`ozgemm.precision.operands.complex_operands`: A the float view of ``a`` where it
        is C-contiguous, B's top block row in one pass over ``b`` (its words moved as bit
        patterns, ``_embed_kernels``); a real operand, or parts of two widths, through the
        generic expressions."""
        from ...precision.operands import complex_operands

        if a.dtype.kind != "c" or a.dtype != b.dtype:
            return complex_operands(a, b, cp)
        dt = cp.float32 if a.dtype == cp.complex64 else cp.float64
        u = cp.uint32 if dt == cp.float32 else cp.uint64
        k, n = b.shape
        A = cp.ascontiguousarray(a).view(dt).reshape(a.shape[0], 2 * k)
        B = cp.empty((k, 2 * n), dtype=dt)
        if k * n:
            _embed_kernels()[1](cp.ascontiguousarray(b).view(u), np.int64(k), np.int64(n), True, B.view(u), size=k * n)
        return A, B

    def complex_embedding(self, a, b):
        """:func:`ozgemm.precision.operands.complex_embedding`, each complex operand in one
        pass that reads it once and writes its blocks (the generic array expressions read B
        four times); a real operand, or parts of two widths, through the generic expressions."""
        from ...precision.operands import complex_embedding

        if a.dtype.kind != "c" or a.dtype != b.dtype:  # (a real operand, or parts to widen)
            return complex_embedding(a, b, cp)
        dt = cp.float32 if a.dtype == cp.complex64 else cp.float64
        u = cp.uint32 if dt == cp.float32 else cp.uint64
        m, k = a.shape
        n = b.shape[1]
        ka, kb = _embed_kernels()
        A = cp.empty((m, 2 * k), dtype=dt)
        B = cp.empty((2 * k, 2 * n), dtype=dt)
        if m * k:
            ka(cp.ascontiguousarray(a).view(u), np.int64(k), A.view(u), size=m * k)
        if k * n:
            kb(cp.ascontiguousarray(b).view(u), np.int64(k), np.int64(n), False, B.view(u), size=k * n)
        return A, B

    # -- stacks (ozgemm.stacks) ---------------------------------------------------------
    def stack_supports(self, fmt, k):
        """Stacks run here with float results and one exact int32 k-block (``k`` <=
        KBLOCK_INT32); dd/binary128 results and longer k are computed product by product."""
        return fmt.name in ("binary64", "binary32") and _ceil(k, _PAD) <= KBLOCK_INT32

    def stack_workspace(self, n_moduli, Q, m, n, k, shared=None):
        """Bytes a group of ``Q`` products takes: padded residues of both operands (a
        ``shared`` operand's once), the int32 products and the result."""
        mp, np_, kp = _ceil(m, _ROW_PAD), _ceil(n, _ROW_PAD), _ceil(k, _PAD)
        rows = {"a": (mp, m), "b": (np_, n)}.get(shared, (0, 0))
        return (Q * (n_moduli * ((mp + np_) * kp + 4 * mp * np_) + 8 * (mp + np_) * k + 8 * m * n)
                - (Q - 1) * (n_moduli * rows[0] * kp + 8 * rows[1] * k))

    def _gemm_pairs_i32(self, a, bt):
        """c[z] = a[z] @ bt[z].T exactly for int8 (B, mp, kp) and (B, np, kp) (C-contiguous, mp,
        np multiples of 4, kp <= KBLOCK_INT32 a multiple of 16): one strided-batched call per
        65535 products, int32 (B, mp, np)."""
        B, mp, kp = a.shape
        np_ = bt.shape[1]
        c = cp.empty((B, mp, np_), dtype=cp.int32)
        h = cublas.handle()
        for z0 in range(0, B, 65535):
            cublas.gemm_i8(h, a, bt, c, z0, min(B, z0 + 65535) - z0, 0, mp)
        return c

    def stack_scalars(self, sa, sb, shape, bits, k, u, flag=None):
        """Per product of a stack, the planner's six scalars (:meth:`plan_scalars`) as a host
        int64 (P, 6) array, or None when ``flag`` (the statistics' NaN/Inf flag) is set.
        ``shape`` = (P, m, n, a_shared, b_shared); ``sa``, ``sb``: statistics of the rows of A
        (P m, or m when shared) and of the columns of B (P n, or n). One bound GEMM (batched,
        or one 2-D GEMM against a shared operand) and one batched plan_scalars launch."""
        P, m, n, a_sh, b_sh = shape
        if a_sh or b_sh:
            lb = self.gemm_exact(sa.q, sb.q)  # (P m, n) or (m, P n), a view of the padded output
            ld = lb.strides[0] // lb.itemsize
            batch = (P, m * ld, m, 0) if b_sh else (P, n, 0, n)
        else:
            mp, np_, kp = _ceil(m, _ROW_PAD), _ceil(n, _ROW_PAD), _ceil(k, _PAD)
            lb = self._gemm_pairs_i32(self._pad(sa.q.reshape(P, m, k), mp, kp), self._pad(sb.q.reshape(P, n, k), np_, kp))
            batch = (P, mp * np_, m, n)
        out = cp.zeros((P, 8), dtype=cp.uint64)
        for z0 in range(0, P, 65535):  # (grid z per product)
            z1 = min(P, z0 + 65535)
            sa_, sb_ = (_stats_from(st, z0 * b) if b else st for st, b in ((sa, batch[2]), (sb, batch[3])))
            lb_ = cp.ndarray(lb.shape, lb.dtype, lb.data + z0 * batch[1] * lb.itemsize, strides=lb.strides)
            self._plan_scalars_launch(sa_, sb_, lb_, m, n, bits, k, u, 0, out[z0:], (z1 - z0,) + batch[1:] + (8,))
        host = out.view(cp.int64).get()[:, :6]
        if flag is not None and int(flag.get()[0]):
            return None
        return host

    def stack_residues(self, st, sel, shift, n_moduli):
        """Residues (N, Q, rp, kp) int8 of the products ``sel`` (host indices, or None: the one
        product of a shared operand) of an operand whose statistics ``st`` kept its float rows
        (``st.src``, products after one another), scaled by ``shift`` (Q, r); rows padded per
        product to rp (a multiple of 4) with zero rows, k to kp (a multiple of 16)."""
        Q, r = shift.shape
        x = st.src
        k = x.shape[1]
        x3 = x.reshape(-1, r, k)
        if sel is None:
            x3 = x3[:1]
        elif not (len(sel) == x3.shape[0] and (np.diff(sel) == 1).all()):
            x3 = x3[cp.asarray(sel)]
        rp, kp = _ceil(r, _ROW_PAD), _ceil(k, _PAD)
        shift = cp.ascontiguousarray(shift, dtype=cp.int64)
        if rp != r:  # zero rows (residues 0) up to the padded row count of each product
            xp_ = cp.zeros((Q, rp, k), dtype=x3.dtype)
            xp_[:, :r] = x3
            sp = cp.zeros((Q, rp), dtype=cp.int64)
            sp[:, :r] = shift
            x3, shift = xp_, sp
        res = self.residues_padded(x3.reshape(Q * rp, k), shift.reshape(-1), n_moduli, Q * rp, kp)
        return res.reshape(n_moduli, Q, rp, kp)

    def stack_products(self, ra, rb, moduli, shared=None):
        """The exact int32 products ra[:, z] @ rb[:, z].T of :meth:`stack_residues` for every
        product z, strided-batched (this backend copies a shared operand per product,
        :attr:`stack_shares_operands`, so ``shared`` is None)."""
        if shared is not None:
            raise ValueError("the CUDA backend copies a stack's shared operand per product (stack_shares_operands)")
        N, Q, mp, kp = ra.shape
        return self._gemm_pairs_i32(ra.reshape(N * Q, mp, kp), rb.reshape(N * Q, rb.shape[2], kp)).reshape(
            N, Q, mp, rb.shape[2])

    def stack_reconstruct(self, c, s, t, n_moduli, fmt, shared=None):
        """The products' results (Q, m, n) from :meth:`stack_products` ((N, Q, mp, np) int32),
        shifts ``s`` (Q, m) and ``t`` (Q, n): the reconstruction kernel of
        :meth:`reconstruct_round`, one grid z per product."""
        if shared is not None:
            raise ValueError("the CUDA backend copies a stack's shared operand per product (stack_shares_operands)")
        m, n = s.shape[1], t.shape[1]
        Q = s.shape[0]
        ldc = c.shape[-1]
        cbs = c[0].size // Q
        dtype = cp.float64 if fmt.name == "binary64" else cp.float32
        out = cp.empty((Q, m, n), dtype=dtype)
        if Q * m * n:
            g = _grid2d(n, m)[0]
            grid = (g[0], max(1, min(g[1], 65536 // (g[0] * min(Q, 65535)))), min(Q, 65535))
            _crt_round(fmt, n_moduli, c, ldc, c[0].size, s, t, m, n, out, n,
                       batch=(Q, cbs, m if s.shape[0] > 1 else 0, n if t.shape[0] > 1 else 0, m * n), grid=grid)
        return out

    @contextlib.contextmanager
    def row_tiles(self, plan, a_components=1, concurrent=True, products=1):
        """Row tiles of A within ``memory_fraction`` of the free device memory. Workspace per
        row of A: N kp (residues; twice for components) + 4 N np (int32 products). From
        ``overlap_min_rows`` rows (up to ``gemm_split_out`` outputs, float results) the product
        runs as ``overlap_tiles`` tiles on two side streams, so that one tile's residues and
        reconstruction overlap another's INT8 GEMMs (not with ``concurrent=False``: per-phase
        timings); the caller's stream waits for both on exit (also on an error, before any
        array used here is freed and reused on it). The tiles are laid out when first
        iterated: the free-memory query then follows B's residues, already queued."""
        tiles = _Tiles(self, plan, a_components, concurrent, products)
        try:
            yield tiles
        finally:
            if tiles.ready is not None and tiles.ready._event is not None:
                cur = tiles.ready._cur
                for st in tiles.streams:
                    cur.wait_event(st.record())

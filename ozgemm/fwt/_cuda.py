"""CUDA path of ozgemm.fwt: launch plans for the kernels in ``fwht.cu`` (CuPy RawModule).

Plan for a row of n = 2**L elements, dtype with 16-byte vectors of V = 16/itemsize:

* L <= LMAX1 (15 for float16/float32, 14 for float64/int64): one ``fwht_rows`` launch,
  one read and one write of every element (or, where measured faster, one launch of the
  pipelined persistent ``fwht_rows_pipe``: the same transform, the next tile staged in shared
  memory by cp.async while the current one is transformed).
* A row pass of 2**L with a ``ROW_DEDICATED`` entry: one launch of that kernel (float16 2**15
  with the mma front end: ``fwht_rows_h15``, persistent, pipelined, two register layouts;
  float64 2**15: ``fwht_rows_d15s``, persistent, one CTA per SM holding one row at a time,
  the halves in registers and shared memory, the top butterfly last).
* L = LMAX1 + 1 where ``ROW_TUNED`` has a split entry and no ``ROW_DEDICATED`` kernel applies
  (it is used on sm_90+ GPUs with 227 KiB of opt-in shared memory per block; float32 2**16):
  one launch of ``fwht_rows_pipe_split``, the row's two halves on the two CTAs of a cluster (one
  read and one write of every element; the halves meet in shared memory). (The float64 2**15
  split entry stays in the table for ``lmax_single`` and the sweep; ``fwht_rows_d15s`` runs it.)
* Longer rows: a row pass on the low L1 bits (out-of-place; whichever of the kernels above
  the table gives 2**L1), then ``fwht_cols`` passes of MB ∈ {3, 6, 9} bits each (in place)
  until all L bits are done; q = ceil((L-lmax)/9) strided passes (lmax: the longest one-pass
  row, ``lmax_single``), so 2 passes in all up to L = lmax + 9 (2**25 float32, 2**24 float64
  with the H200 table), 3 up to lmax + 18, and so on.

The kernels compute in float32 for float16 (rounded once per pass), in the dtype itself for
float32/float64, and exactly in int64 for integers. The final ``scale`` is applied in the
last pass (for "ortho" each pass gets its share, keeping float16 intermediates in range).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import threading
from pathlib import Path
from typing import Mapping

import numpy as np

_SRC = Path(__file__).with_name("fwht.cu")

# dtype -> (storage C type, compute C type, compute numpy scalar, LOGV, LMAX1)
_TYPES = {
    np.dtype(np.float16): ("unsigned short", "float", np.float32, 3, 15),
    np.dtype(np.float32): ("float", "float", np.float32, 2, 15),
    np.dtype(np.float64): ("double", "double", np.float64, 1, 14),
    np.dtype(np.int64): ("long long", "long long", np.int64, 1, 14),
}
_SMEM_OPTIN = 227 * 1024


# Measured best configuration per (dtype name, L) on an H200, from the sweep in
# ozgemm/fwt/bench.py:tune (resulting speeds: docs/performance.md); missing entries use the rule.
# Entry: (TB, CB, CSB, mma, GB/s measured in the sweep[, WM, MINB[, XS[, PIPE]]]); WM
# (warp-major tile layout), MINB (__launch_bounds__ minimum CTAs per SM, 0 = unspecified), XS
# (True/1: exchange-store phase B; an int K >= 2: lane exchange with K thread bits after the
# exchange, see fwht.cu and ``xl_ok``) and PIPE (1: pipelined persistent kernel, 2: the same
# with a half-tile exchange buffer, see ``pipe_smem``) default to False, 0, False, 0 (the
# layout, bounds, phase B and kernel of the entries measured before they existed).
ROW_TUNED: dict = {
    # (dtype, log2 n): (TB, CB, CSB, mma, GB/s in the sweep, WM, MINB[, XS[, PIPE]]) on the
    # H200: rows up to 2**11 from the full sweep; 2**12-2**15 from sweeps restricted to those
    # lengths (``tune(Ls=...)``), each entry adopted only where a benchmark in the same process
    # confirmed the sweep; float32 2**16 and float64 2**15: the split kernel (CSB = 1 with PIPE),
    # one pass instead of two, faster than the 2-pass plan measured in the same sweep
    ("float16", 8): (7, 1, 0, True, 4025, False, 0),
    ("float16", 9): (7, 1, 0, True, 4028, True, 0),
    ("float16", 10): (8, 2, 0, True, 3975, True, 0),
    ("float16", 11): (7, 3, 0, True, 3830, True, 0),
    ("float16", 12): (7, 2, 0, True, 3928, False, 0, True),  # exchange-store
    ("float16", 13): (7, 3, 0, True, 3843, False, 2, 4),  # lane exchange, MINB = 2
    ("float16", 14): (8, 3, 0, True, 3769, False, 0, 4),  # lane exchange
    ("float16", 15): (9, 3, 0, True, 3226, False, 0, 5, 1),  # lane exchange, PIPE (fwht_rows_h15 runs it)
    ("float32", 8): (7, 1, 0, False, 4051, False, 0),
    ("float32", 9): (7, 1, 0, False, 4039, False, 0),
    ("float32", 10): (7, 1, 0, False, 4047, False, 0),
    ("float32", 11): (8, 3, 0, False, 3904, False, 0),
    ("float32", 12): (9, 2, 0, False, 3951, False, 2),  # MINB = 2
    ("float32", 13): (9, 2, 0, False, 3927, False, 2),  # MINB = 2
    ("float32", 14): (9, 3, 0, False, 3868, False, 2),  # MINB = 2
    ("float32", 15): (9, 4, 0, False, 3524, False, 0, True, 2),  # exchange-store, PIPE = 2
    ("float32", 16): (9, 4, 1, False, 2438, False, 0, True, 2),  # split kernel
    ("float64", 8): (7, 3, 0, False, 3899, False, 0),
    ("float64", 9): (7, 4, 0, False, 3911, False, 0),
    ("float64", 10): (7, 4, 0, False, 3929, False, 0),
    ("float64", 11): (7, 4, 0, False, 3877, False, 0),
    ("float64", 12): (7, 4, 0, False, 3915, False, 0, True),  # exchange-store
    ("float64", 13): (8, 4, 0, False, 3895, False, 2, True),  # exchange-store, MINB = 2
    ("float64", 14): (9, 4, 0, False, 3581, False, 0, True, 2),  # exchange-store, PIPE = 2
    ("float64", 15): (9, 4, 1, False, 2406, False, 0, True, 2),  # split kernel (fwht_rows_d15s runs it)
}


# Dedicated row kernels (fwht.cu) for one (dtype name, log2 n), used instead of the configurable
# row kernel where measured faster on the H200, on the table's device class (``_tuned``); the
# sweep's forced configurations (``cfg``) never use them. Entry: (kernel name, dynamic shared
# memory bytes, GB/s measured, whether it is the tensor-core front end: then only for the "auto"
# and "mma" variants, not "plain"; whether it takes the leftover-row ticket counter, ``row_args``).
# float16 2**15: ``fwht_rows_h15`` (two layouts, one exchange, two warp-shuffle levels, leftover
# rows by tickets; on the H200 3649 GB/s against 3558 GB/s for a three-layout form with two
# float4 exchanges in the same process, which itself measured 3392-3439 GB/s against 3233-3266
# for ROW_TUNED's kernel). float64 2**15: ``fwht_rows_d15s`` (3655-3692 GB/s on the H200 against
# 2393-2400 for the split kernel of ROW_TUNED; the split entry stays for the sweep and
# lmax_single); +16 bytes of shared memory for the leftover row's number. Current figures:
# docs/performance.md.
ROW_DEDICATED: dict = {
    ("float16", 15): ("fwht_rows_h15<1>", (2 + 4) << 15, 3649, True, True),
    ("float64", 15): ("fwht_rows_d15s<1>", ((1 << 14) + (1 << 13)) * 8 + 16, 3674, False, True),
}


def dedicated_row(dtype, L: int, mma: bool, cfg=None, dev: DeviceInfo = None):
    """(kernel name, shared memory bytes) of the ``ROW_DEDICATED`` kernel for a row pass of
    2**L of ``dtype`` (``mma``: the tensor-core front end was chosen), or None (no entry, a
    forced ``cfg``, a tensor-core kernel without mma, or a device outside the table's class)."""
    if cfg is not None:
        return None
    ent = ROW_DEDICATED.get((np.dtype(dtype).name, L))
    if ent is None or (ent[3] and not mma) or _tuned(np.dtype(dtype).name, L, dev) is None:
        return None
    return ent[0], ent[1]


@functools.lru_cache(maxsize=None)
def _device_cc(device_id: int) -> int:
    import cupy

    return int(cupy.cuda.Device(device_id).compute_capability)


@functools.lru_cache(maxsize=None)
def _device_attribute(device_id: int, key: str) -> int:
    """CUDA device attribute ``key`` (CuPy's name, e.g. "MultiProcessorCount")."""
    import cupy

    return int(cupy.cuda.Device(device_id).attributes[key])


def _current_device(query, default):
    """``query(device id)`` for the current CUDA device; ``default`` without CuPy/GPU."""
    try:
        import cupy

        return query(cupy.cuda.Device().id)
    except Exception:
        return default


def _cc() -> int:
    """Compute capability (e.g. 90) of the current CUDA device; 90 without CuPy/GPU."""
    return _current_device(_device_cc, 90)


def _smem_optin() -> int:
    """Opt-in shared memory per block (bytes) of the current CUDA device; the H100/H200 figure
    without CuPy/GPU."""
    return _current_device(lambda d: _device_attribute(d, "MaxSharedMemoryPerBlockOptin"), _SMEM_OPTIN)


def _sm_count(device_id: int) -> int:
    return _device_attribute(device_id, "MultiProcessorCount")


# One SM of an H100/H200: 228 KiB of shared memory, of which 1 KiB is reserved per resident CTA.
_SM_SMEM = 228 * 1024
_CTA_SMEM_RESERVED = 1024


def _ctas_by_smem(smem: int) -> int:
    """CTAs with ``smem`` bytes of shared memory each that fit on one SM."""
    return _SM_SMEM // (smem + _CTA_SMEM_RESERVED)


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """What the launch plan depends on: the compute capability (e.g. 90), the opt-in shared
    memory per block in bytes, and the table of measured configurations (``row_tuned``: a
    mapping like ``ROW_TUNED``; None: ``ROW_TUNED`` itself; the tuning sweep passes its own to
    time the multi-pass plan without the entries it is re-measuring). ``DeviceInfo.current()``:
    the current CUDA device (sm_90 with 227 KiB without CuPy/GPU). The planning functions take
    one as ``dev`` (None: current)."""

    cc: int = 90
    smem_optin: int = _SMEM_OPTIN
    row_tuned: Mapping = dataclasses.field(default=None, compare=False, repr=False)

    @classmethod
    def current(cls) -> "DeviceInfo":
        return cls(_cc(), _smem_optin())


def _dev(dev) -> DeviceInfo:
    return DeviceInfo.current() if dev is None else dev


def _tuned(dtype_name: str, L: int, dev: DeviceInfo = None):
    """The ``ROW_TUNED`` entry, used only on sm_90+ devices with the H100/H200's 227 KiB of
    shared memory per block (it was measured on an H200; its cluster, pipelined and large-tile
    kernels need sm_90 and that shared memory); elsewhere the fixed rule (no clusters, no mma)."""
    dev = _dev(dev)
    if dev.cc < 90 or dev.smem_optin < _SMEM_OPTIN:
        return None
    return (ROW_TUNED if dev.row_tuned is None else dev.row_tuned).get((dtype_name, L))


def _minb2_ok(tb: int, loge: int, acc_size: int, smem: int, lt: int) -> bool:
    """Whether asking for 2 resident CTAs per SM (MINB = 2) can work: large tiles only
    (2**12 elements or more), 2 x threads <= 2048, 2 x shared memory fits, and the register
    budget 65536 / (2 x threads) leaves >= 16 registers beside the tile's values."""
    nth = 1 << tb
    regs = (1 << loge) * max(1, acc_size // 4)
    return (lt >= 12 and lt <= 15 and 2 * nth <= 1024 and _ctas_by_smem(smem) >= 2
            and 65536 // (2 * nth) >= regs + 16)


def xs_ok(L: int, logv: int, tb: int, cb: int, csb: int = 0, wm: bool = False) -> bool:
    """Whether the exchange-store phase B (XS) applies: plain layout, no cluster, a
    shared-memory phase B for rows of 2**L (a warp bit is a transform bit) and all
    TB - 5 warp bits fit in the CB chunk bits (they become register bits in the warp-major
    layout)."""
    return (not wm and csb == 0 and tb > 5 and tb - 5 <= cb
            and logv + 5 < min(L, logv + tb + cb))


def xl_ok(L: int, logv: int, tb: int, cb: int, k: int, csb: int = 0, wm: bool = False) -> bool:
    """Whether the lane exchange (XS = K >= 2) applies: plain layout, no cluster, all warp bits
    and K - (TB - 5) upper lane bits after the exchange (TB - 5 <= K <= TB - 2, the mma front
    end does lane bits 0-1), P = LOGV + CB - K low index bits per store piece (0 <= P <=
    min(2, LOGV)), and a transform bit among those K (index bit LOGV + TB - K < L)."""
    p = logv + cb - k
    return (not wm and csb == 0 and k >= 2 and tb - 5 <= k <= tb - 2 and 0 <= p <= min(2, logv)
            and logv + tb - k < min(L, logv + tb + cb))


def phase_b_smem(L: int, logv: int, acc_size: int, tb: int, cb: int, csb: int = 0, wm: bool = False,
                 xs=False) -> int:
    """Bytes of shared memory the row kernel's exchange (phase B, lane exchange or cluster
    stage) needs for rows of 2**L: one tile of compute values, or 0."""
    lt = logv + tb + cb
    xs = int(xs)
    need = ((tb > 5 and logv + 5 + (cb if wm else 0) < L) or csb > 0
            or (xs >= 2 and logv + tb - xs < L))
    return (acc_size << lt) if need else 0


def pipe_smem(L: int, logv: int, acc_size: int, tb: int, cb: int, xs=False, pipe: int = 1) -> int:
    """Dynamic shared memory of the pipelined kernel: the staging buffer (one tile of 16-byte
    vectors of storage values, 2**(LT+4-LOGV) bytes) and the exchange buffer (half of it with
    PIPE = 2). The split kernel (rows of 2**(LT+1)) needs what rows of 2**LT need."""
    lt = logv + tb + cb
    ex = phase_b_smem(min(L, lt), logv, acc_size, tb, cb, xs=xs)
    return (16 << (lt - logv)) + (ex >> 1 if pipe == 2 else ex)


def pipe_ok(L: int, logv: int, acc_size: int, tb: int, cb: int, csb: int = 0, wm: bool = False,
            xs=False, pipe: int = 1) -> bool:
    """Whether the pipelined kernel (PIPE = 1, or 2: half exchange buffer, XS = 1 only) applies:
    plain layout, and staging plus exchange buffer fit in 227 KiB; CSB = 0 (no cluster), or
    CSB = 1: the split kernel ``fwht_rows_pipe_split``, rows of exactly 2**(LT+1) (two tiles,
    one per CTA of a 2-CTA cluster) with LT >= LC_MIN (it is compiled for its length)."""
    if pipe not in (1, 2) or wm or csb not in (0, 1):
        return False
    if csb and (logv + tb + cb + 1 != L or L - 1 < LC_MIN):
        return False
    if pipe == 2 and not (xs is True or xs == 1):
        return False
    return pipe_smem(L, logv, acc_size, tb, cb, xs, pipe) <= _SMEM_OPTIN


# Shortest row (log2) offered to the split kernel (fwht_rows_pipe_split): shorter rows fit one
# CTA's tile and reach >= 85 % of copy there (docs/performance.md).
SPLIT_MIN_L = 15


def row_candidates(L: int, logv: int, acc_size: int, clusters: bool = True) -> list:
    """All valid (TB, CB, CSB, WM, MINB, XS, PIPE) for a row of 2**L: 2**TB threads (128..1024),
    2**(LOGV+CB) = 8..32 values per thread (8 only for L <= 11), CTA tile 2**LT
    (LT = LOGV+TB+CB, at most 4 rows beyond 2**11) with shared memory <= 227 KiB;
    CSB = 0: tile >= row; CSB = 1, 2: the row spans a cluster of 2**CSB CTAs (LT + CSB = L);
    with PIPE > 0, CSB = 1 is the split kernel (rows of 2**SPLIT_MIN_L and longer).
    WM = True (warp-major layout) only where it makes the row warp-local (no shared-memory
    phase; 2**7-2**8 threads, rows >= 2**9), then also with 64 values per thread; MINB = 2
    for rows >= 2**12 where ``_minb2_ok``. XS = True (exchange-store phase B) where
    ``xs_ok``, with CB <= 4 and up to 64 four-byte registers of values per thread (64
    floats, 32 doubles), also with MINB = 2 where ``_minb2_ok``. PIPE = 0 for all of these;
    for rows of 2**12 and longer every plain single-CTA candidate whose tile holds one or two
    rows is also offered as the pipelined kernel (PIPE = 1, and PIPE = 2 for XS = 1) where
    ``pipe_ok``. For rows of 2**SPLIT_MIN_L and longer, every such PIPE candidate of rows of
    2**(L-1) whose tile is one row is also offered as the split kernel (CSB = 1)."""
    out = []
    for loge in (3, 4, 5, 6):
        if loge < logv or (loge == 3 and L > 11):
            continue
        cb = loge - logv
        for tb in range(7, 11):
            lt = loge + tb
            for wm in ((False, True) if cb > 0 else (False,)):
                wb0 = logv + 5 + (cb if wm else 0)
                phase_b = tb > 5 and wb0 < min(L, lt)
                if wm and (phase_b or tb > 8 or L < 9):
                    continue
                smem = (acc_size << lt) if phase_b else 0
                fits = lt >= L and lt <= max(L, 11) + 2 and smem <= _SMEM_OPTIN
                if (not wm and fits and xs_ok(L, logv, tb, cb) and cb <= 4
                        and (1 << loge) * max(1, acc_size // 4) <= 64):
                    out.append((tb, cb, 0, False, 0, True))
                    if L >= 12 and _minb2_ok(tb, loge, acc_size, smem, lt):
                        out.append((tb, cb, 0, False, 2, True))
                if not wm and logv == 3 and L >= 12 and lt >= L and lt <= L + 1:
                    # lane exchange (float16 only): K thread bits after the exchange,
                    # at least one lane bit among them (K >= TB - 4)
                    xsm = acc_size << lt
                    for k in range(max(2, tb - 4), tb - 1):
                        if xl_ok(L, logv, tb, cb, k) and xsm <= _SMEM_OPTIN:
                            out.append((tb, cb, 0, False, 0, k))
                            if _minb2_ok(tb, loge, acc_size, xsm, lt):
                                out.append((tb, cb, 0, False, 2, k))
                if loge == 6 and (not wm or acc_size > 4):
                    continue
                if fits:
                    out.append((tb, cb, 0, wm, 0, False))
                    if L >= 12 and _minb2_ok(tb, loge, acc_size, smem, lt):
                        out.append((tb, cb, 0, wm, 2, False))
                if wm:
                    continue
                for csb in ((1, 2) if clusters else ()):
                    if lt + csb == L and lt >= 10 and (acc_size << lt) <= _SMEM_OPTIN:
                        out.append((tb, cb, csb, False, 0, False))
                        if _minb2_ok(tb, loge, acc_size, acc_size << lt, lt):
                            out.append((tb, cb, csb, False, 2, False))
    out = [c + (0,) for c in out]
    if L >= 12 and clusters:  # cp.async needs sm_80; offered with the sm_90 candidates
        for tb, cb, csb, wm, minb, xs, _ in list(out):
            if csb or wm or logv + tb + cb > L + 1:
                continue
            for pipe in (1, 2):
                if minb == 2 and _ctas_by_smem(pipe_smem(L, logv, acc_size, tb, cb, xs, pipe)) < 2:
                    continue  # two CTAs cannot be resident: MINB = 2 would only cap registers
                if pipe_ok(L, logv, acc_size, tb, cb, csb, wm, xs, pipe):
                    out.append((tb, cb, csb, wm, minb, xs, pipe))
    if L >= SPLIT_MIN_L and clusters:  # the split kernel: the pipelined one-row tiles of 2**(L-1)
        for tb, cb, csb, wm, minb, xs, pipe in row_candidates(L - 1, logv, acc_size, clusters):
            if pipe and not csb and logv + tb + cb == L - 1:
                out.append((tb, cb, 1, wm, minb, xs, pipe))
    return out


def _cfg7(cfg) -> tuple:
    """(TB, CB, CSB, WM, MINB, XS, PIPE) from a 3-, 5-, 6- or 7-tuple (missing WM, MINB, XS,
    PIPE: False, 0, False, 0)."""
    cfg = tuple(cfg)
    if len(cfg) not in (3, 5, 6, 7):
        raise ValueError(f"row configuration must have 3, 5, 6 or 7 fields, got {cfg!r}")
    return cfg + (False, 0, False, 0)[len(cfg) - 3:]


def tuned_cfg(entry) -> tuple:
    """(TB, CB, CSB, WM, MINB, XS, PIPE) of a ``ROW_TUNED`` entry (TB, CB, CSB, mma, GB/s[, WM,
    MINB[, XS[, PIPE]]]); the fields an entry lacks mean False, 0, False, 0."""
    entry = tuple(entry)
    if len(entry) not in (3, 4, 5, 7, 8, 9):
        raise ValueError(f"ROW_TUNED entry must have 3-5 or 7-9 fields, got {entry!r}")
    wm = bool(entry[5]) if len(entry) > 5 else False
    minb = int(entry[6]) if len(entry) > 6 else 0
    xs = entry[7] if len(entry) > 7 else False
    xs = bool(xs) if isinstance(xs, bool) or xs in (0, 1) else int(xs)  # K >= 2: lane exchange
    pipe = int(entry[8]) if len(entry) > 8 else 0
    return tuple(int(v) for v in entry[:3]) + (wm, minb, xs, pipe)


def row_config(L: int, logv: int, dtype_name: str = None, dev: DeviceInfo = None):
    """(TB, CB, CSB, WM, MINB, XS, PIPE) for the row kernel: 2**TB threads, 2**CB 16-byte
    vectors per thread, cluster of 2**CSB CTAs, warp-major layout, min CTAs per SM (0:
    unspecified), exchange-store phase B, pipelined kernel. The measured choice
    (``ROW_TUNED``) if any, else a fixed rule."""
    t = _tuned(dtype_name, L, dev) if dtype_name is not None else None
    if t is not None:
        return tuned_cfg(t)
    if L <= 13:
        loge = 4
        tb = max(L - loge, 7)
    else:
        loge = 5
        tb = L - loge
    cb = loge - logv
    assert tb <= 10 and cb >= 0
    return tb, cb, 0, False, 0, False, 0


def lmax_single(dtype, dev: DeviceInfo = None) -> int:
    """Longest row (log2) done in one pass: LMAX1, or longer where a measured cluster
    configuration exists for every length up to it."""
    dt = np.dtype(dtype)
    lm = _TYPES[dt][4]
    while _tuned(dt.name, lm + 1, dev) is not None:
        lm += 1
    return lm


def col_config(mb: int):
    """TPLB (log2 threads per line) for ``fwht_cols`` with MB bits: >= 128 threads."""
    return {3: 7, 6: 4, 9: 3}[mb]


def _row_score(dtype, L1: int, dev: DeviceInfo = None) -> float:
    """Expected speed of a row pass of 2**L1 (measured GB/s from ``ROW_TUNED`` when known;
    else the first H200 run: rows up to 2**13 (float64: 2**12) reached ~95 % of copy,
    longer single-CTA rows ~60 %)."""
    dt = np.dtype(dtype)
    t = _tuned(dt.name, L1, dev)
    if t is not None and len(t) > 4:
        return float(t[4])
    return 1.0 if L1 <= (12 if dt.itemsize == 8 else 13) else 0.6


def plan(L: int, dtype, dev: DeviceInfo = None) -> list:
    """List of passes: ("rows", L1) then ("cols", s, MB)...; the transform bits in order.

    One row pass when L fits (``lmax_single``); else the fewest strided passes q =
    ceil((L - lmax)/9) of MB ∈ {3, 6, 9} bits, and among those splits the first-pass length
    L1 with the best expected row-pass speed (``_row_score``), larger L1 on ties."""
    dt = np.dtype(dtype)
    lmax1 = lmax_single(dt, dev)
    if L <= lmax1:
        return [("rows", L)]
    logv = _TYPES[dt][3]
    q = -(-(L - lmax1) // 9)
    best = None
    for m_total in range(3 * q, 9 * q + 1, 3):
        l1 = L - m_total
        if l1 > lmax1 or l1 < 7 + logv:  # the MB=3 strided kernel needs s >= 7 + LOGV
            continue
        key = (_row_score(dt, l1, dev), l1)
        if best is None or key > best[0]:
            best = (key, l1, m_total)
    _, l1, m_total = best
    ms = []
    left = m_total
    for i in range(q):  # split m_total into q multiples of 3, each <= 9, largest first
        m = min(9, left - 3 * (q - 1 - i))
        ms.append(m)
        left -= m
    passes = [("rows", l1)]
    s = l1
    for m in ms:
        passes.append(("cols", s, m))
        s += m
    return passes


# Rows of 2**LC_MIN and longer run kernels compiled for their length (template argument LC = L:
# no run-time branches around butterfly levels); shorter rows share one kernel per
# configuration (LC = 0, L passed at run time), which keeps the number of compiled kernels small.
LC_MIN = 12


def _row_name(dtype, L, mma=False, cfg=None, dev: DeviceInfo = None) -> str:
    T, A, sc, logv, _ = _TYPES[np.dtype(dtype)]
    tb, cb, csb, wm, minb, xs, pipe = _cfg7(cfg if cfg is not None else row_config(L, logv, np.dtype(dtype).name, dev))
    b = lambda v: "true" if v else "false"  # noqa: E731
    if pipe:
        if not pipe_ok(L, logv, np.dtype(sc).itemsize, tb, cb, csb, wm, xs, pipe):
            raise ValueError(f"PIPE={pipe} (pipelined kernel) does not apply to TB={tb}, CB={cb}, CSB={csb}, "
                             f"WM={wm}, XS={int(xs)} for rows of 2**{L}")
        split = bool(csb)
        L, csb = L - csb, 0  # the split kernel's CTAs transform half-rows of 2**(L-1)
    if csb:  # cluster kernels have no XS parameter (plain phase B)
        if xs:
            raise ValueError("XS (exchange-store) is not available for cluster configurations")
        return f"fwht_rows_cluster{1 << csb}<{T}, {A}, {logv}, {tb}, {cb}, {b(mma)}, {b(wm)}, {int(minb)}>"
    xs = int(xs)
    if xs == 1 and not xs_ok(L, logv, tb, cb, csb, wm):
        raise ValueError(f"XS (exchange-store) does not apply to TB={tb}, CB={cb}, WM={wm} for rows of 2**{L}")
    if xs >= 2 and not xl_ok(L, logv, tb, cb, xs, csb, wm):
        raise ValueError(f"XS={xs} (lane exchange) does not apply to TB={tb}, CB={cb}, WM={wm} for rows of 2**{L}")
    if xs < 0:
        raise ValueError(f"XS must be >= 0, got {xs}")
    lc = L if L >= LC_MIN else 0  # compile-time row length (fwht.cu: rows_body, LC)
    if pipe:
        kern = "fwht_rows_pipe_split" if split else "fwht_rows_pipe"
        return f"{kern}<{T}, {A}, {logv}, {tb}, {cb}, {b(mma)}, {int(minb)}, {xs}, {int(pipe)}, {lc}>"
    return f"fwht_rows<{T}, {A}, {logv}, {tb}, {cb}, {b(mma)}, {b(wm)}, {int(minb)}, {xs}, {lc}>"


# float16 row lengths (log2) for which the tensor-core (mma) front end is the default;
# outside ROW_TUNED (empty: plain everywhere; the table chooses mma per length on the H200)
MMA_DEFAULT_L: frozenset = frozenset()


def _names(dtype, cc: int = 90, sweep: bool = True, Ls=None) -> list:
    """Kernel instantiations compiled for ``dtype`` on a device of compute capability ``cc``
    (cluster kernels need sm_90, the mma variant sm_80): with ``sweep`` every candidate of
    the tuning sweep, else only the rule's and ``ROW_TUNED``'s configurations (what
    ``fwht`` launches; compiles faster). ``Ls``: only the sweep candidates of these row
    lengths (log2), without the rule's, the table's and the strided kernels."""
    T, A, _, logv, lmax1 = _TYPES[np.dtype(dtype)]
    names = set()
    acc = np.dtype(_TYPES[np.dtype(dtype)][2]).itemsize
    swept = sweep and np.dtype(dtype).kind == "f"  # the integer kernels use the fixed rule only
    for L in (range(0, lmax1 + 3) if Ls is None else Ls):
        cands = set(row_candidates(L, logv, acc, clusters=cc >= 90)) if swept else set()
        if L <= lmax1 and Ls is None:
            cands.add(row_config(L, logv))
        tuned = ROW_TUNED.get((np.dtype(dtype).name, L)) if cc >= 90 and Ls is None else None
        if tuned:
            cands.add(tuned_cfg(tuned))
        for cfg in cands:
            names.add(_row_name(dtype, L, cfg=cfg))
            if np.dtype(dtype) == np.float16 and cc >= 80:
                names.add(_row_name(dtype, L, mma=True, cfg=cfg))
    if Ls is None and cc >= 90:
        names.update(ent[0] for (dn, _), ent in ROW_DEDICATED.items() if dn == np.dtype(dtype).name)
    if Ls is None:
        for mb in (3, 6, 9):
            names.add(f"fwht_cols<{T}, {A}, {logv}, {mb}, {col_config(mb)}>")
    return sorted(names)


_MODULES: dict = {}  # (dtype str, device id) -> [(set of names, compiled RawModule), ...]


def _module_for(dtype_str: str, device_id: int, name: str, L: int = None):
    """A compiled module holding ``name``: one already compiled if any holds it, else a new
    one with the rule's and ``ROW_TUNED``'s kernels (what ``fwht`` launches), or, for a
    sweep candidate outside that set, the sweep's candidates for rows of 2**L (every
    candidate of the sweep when L is not given)."""
    mods = _MODULES.setdefault((dtype_str, device_id), [])
    for names, mod in mods:
        if name in names:
            return mod
    dtype = np.dtype(dtype_str)
    cc = _device_cc(device_id)
    names = _names(dtype, cc, sweep=False)
    if name not in names:
        names = _names(dtype, cc, sweep=True, Ls=None if L is None else (L,))
        if name not in names:
            names = sorted(set(names) | {name})
    return _compile(dtype_str, device_id, names)


def precompile(dtype, Ls, device_id: int = None) -> int:
    """Compile the sweep candidates of ``dtype`` for the row lengths ``Ls`` (log2) in one
    module (the tuning sweep calls this once, so that a restricted sweep compiles only what
    it runs); returns the number of kernels."""
    import cupy

    dt = np.dtype(dtype)
    dev = cupy.cuda.Device().id if device_id is None else device_id
    names = _names(dt, _device_cc(dev), sweep=True, Ls=tuple(Ls))
    if names:
        _compile(dt.str, dev, names)
    return len(names)


def compile_kernels(dtype, names, device_id: int = None) -> int:
    """Compile the kernels ``names`` (e.g. from ``_row_name``) of ``dtype`` that no compiled
    module holds yet, in one module (tests use it for many configurations at once)."""
    import cupy

    dt = np.dtype(dtype)
    dev = cupy.cuda.Device().id if device_id is None else device_id
    have = set().union(*[n for n, _ in _MODULES.get((dt.str, dev), [])])
    todo = sorted(set(names) - have)
    if todo:
        _compile(dt.str, dev, todo)
    return len(todo)


def _compile(dtype_str: str, device_id: int, names):
    import cupy

    mods = _MODULES.setdefault((dtype_str, device_id), [])
    with cupy.cuda.Device(device_id):
        mod = cupy.RawModule(code=_SRC.read_text(), options=("-std=c++17",), name_expressions=names)
        mod.compile()
    mods.append((set(names), mod))
    return mod


def configure_kernel(k, name: str, smem: int):
    """Set what launching the row/column kernel ``name`` with ``smem`` bytes of dynamic shared
    memory needs (the opt-in above 48 KiB; the largest carveout, which the pipelined kernels'
    persistent grid assumes); returns ``k``."""
    if smem > 48 * 1024:
        k.max_dynamic_shared_size_bytes = smem
    if name.startswith(("fwht_rows_pipe", "fwht_rows_h15")):
        k.preferred_shared_memory_carveout = 100
    return k


@functools.lru_cache(maxsize=None)
def _kernel(dtype_str: str, device_id: int, name: str, smem: int, L: int = None):
    return configure_kernel(_module_for(dtype_str, device_id, name, L).get_function(name), name, smem)


def _resident_ctas(regs: int, nthreads: int, smem: int) -> int:
    """CTAs of a kernel with ``regs`` registers per thread that fit on one SM (H100/H200
    limits: 2048 threads, 64K registers, 228 KiB shared memory with 1 KiB reserved per CTA,
    32 CTAs). Only the speed depends on it: any grid size is correct."""
    regs = max(1, int(regs))
    warps = -(-nthreads // 32)
    regs_per_warp = -(-regs * 32 // 256) * 256
    by_regs = 65536 // (regs_per_warp * warps)
    return max(1, min(32, 2048 // nthreads, by_regs, _ctas_by_smem(smem)))


@functools.lru_cache(maxsize=None)
def _pipe_grid(dtype_str: str, device_id: int, name: str, smem: int, L: int, tb: int) -> int:
    """CTAs of the pipelined kernel ``name`` resident on the whole device at once (the split
    kernel: 2 x the 2-CTA clusters resident at once, from the driver's
    cuOccupancyMaxActiveClusters; a cluster's CTAs share a GPC, so that can be fewer than the
    SMs: a grid larger than what is resident would run its last clusters' whole tile loops
    after the others)."""
    k = _kernel(dtype_str, device_id, name, smem, L)
    per_sm = _resident_ctas(k.attributes["num_regs"], 1 << tb, smem)
    if name.startswith("fwht_rows_pipe_split"):
        clusters = _active_clusters(k, 1 << tb, smem)
        if clusters is None:  # no driver answer: the SMs' count, rounded down to whole clusters
            return max(2, (_sm_count(device_id) * per_sm) & ~1)
        return max(2, 2 * clusters)
    return _sm_count(device_id) * per_sm


def _active_clusters(kernel, nthreads: int, smem: int):
    """The driver's cuOccupancyMaxActiveClusters for a compile-time 2-CTA-cluster kernel
    (CUDA 12+ driver API, through ctypes: CuPy does not wrap it), or None where it fails."""
    import ctypes

    class LaunchConfig(ctypes.Structure):  # CUlaunchConfig
        _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                    ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                    ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                    ("attrs", ctypes.c_void_p), ("numAttrs", ctypes.c_uint)]

    try:
        fn = getattr(kernel, "kernel", kernel)  # RawKernel -> its cupy.cuda.Function (CUfunction)
        lib = ctypes.CDLL("libcuda.so.1")
        cfg = LaunchConfig(2, 1, 1, nthreads, 1, 1, smem, None, None, 0)
        n = ctypes.c_int(0)
        rc = lib.cuOccupancyMaxActiveClusters(ctypes.byref(n), ctypes.c_void_p(fn.ptr), ctypes.byref(cfg))
        return int(n.value) if rc == 0 and n.value > 0 else None
    except Exception:
        return None


def _persistent_grid(src, name: str, smem: int, L: int, tb: int, ntiles: int, max_grid=None) -> int:
    """Grid of a persistent row kernel: the CTAs resident at once (``_pipe_grid``), at most
    one per tile, at most ``max_grid`` (None: no cap)."""
    grid = min(ntiles, _pipe_grid(src.dtype.str, src.device.id, name, smem, L, tb))
    return grid if max_grid is None else min(grid, max_grid)


def row_launch(src, L, mma=False, cfg=None, dev: DeviceInfo = None, max_grid=None):
    """(kernel name, dynamic shared memory bytes, grid, threads per CTA) of the row pass over
    the rows of 2**L of the contiguous array ``src`` with configuration ``cfg`` (default: the
    ``ROW_DEDICATED`` kernel where ``dedicated_row`` applies, else the table's or the rule's).
    ``dev``: the device the plan is for (None: the current one); ``max_grid``: cap on the grid of
    the persistent kernels (None: the CTAs resident at once; a small cap makes every CTA loop
    over several tiles). Raises ValueError where the split or the dedicated kernel would get
    partial rows."""
    dtype = src.dtype
    _, _, sc, logv, _ = _TYPES[dtype]
    ded = dedicated_row(dtype, L, mma, cfg, dev)
    if ded is not None:  # persistent, 512 threads, whole rows of 2**L (the row pass's segments)
        name, smem = ded
        if src.size % (1 << L):  # the kernel transforms total >> L whole rows
            raise ValueError(f"{name} needs whole rows of 2**{L} elements; got {src.size} elements")
        return name, smem, max(1, _persistent_grid(src, name, smem, L, 9, src.size >> L, max_grid)), 512
    cfg = _cfg7(cfg if cfg is not None else row_config(L, logv, dtype.name, dev))
    tb, cb, csb, wm, _, xs, pipe = cfg
    lt = logv + tb + cb
    total = src.size
    acc = np.dtype(sc).itemsize
    if pipe:
        smem = pipe_smem(L, logv, acc, tb, cb, xs, pipe)
    else:
        smem = phase_b_smem(L, logv, acc, tb, cb, csb, wm, xs)
    if csb and pipe and total % (2 << lt):  # the split kernel pairs the two tiles of each row
        raise ValueError(f"the split kernel needs whole rows of 2**{L} elements; got {total} elements")
    name = _row_name(dtype, L, mma, cfg, dev)
    ntiles = (total + (1 << lt) - 1) >> lt
    grid = ntiles
    if pipe:  # persistent: the CTAs that are resident at once loop over the tiles
        grid = _persistent_grid(src, name, smem, L, tb, ntiles, max_grid)
        if csb:  # split kernel: whole 2-CTA clusters (ntiles is even: whole rows of 2 tiles)
            grid = max(2, grid & ~1)
    return name, smem, grid, 1 << tb


_TICKETS: dict = {}  # (device id, stream pointer, host thread or 0) -> the row kernels' ticket counter


def row_tickets():
    """The leftover-row ticket counter of the row kernels that take one (``takes_tickets``) for
    the current device and stream (and host thread, on the per-thread default stream): one
    uint32, drawn modulo the grid size (fwht.cu, ``draw_leftover``: any value it holds gives every
    CTA of a launch a distinct ticket). Launches on one stream run one after another, so they may
    share it; launches that run at the same time must not (different streams get different
    counters; a CUDA graph keeps the counter it captured, so do not replay it while launches
    with that counter run). The buffers (4 bytes each) are kept for the process's lifetime."""
    import cupy

    stream = cupy.cuda.get_current_stream().ptr
    # the per-thread default stream has one handle for every host thread: one counter per thread
    thread = threading.get_ident() if stream == getattr(cupy.cuda.runtime, "streamPerThread", 2) else 0
    key = (cupy.cuda.Device().id, stream, thread)
    buf = _TICKETS.get(key)
    if buf is None:
        buf = _TICKETS[key] = cupy.zeros(1, dtype=cupy.uint32)
    return buf


def takes_tickets(name: str) -> bool:
    """Whether the row kernel ``name`` takes the leftover-row ticket counter (fwht.cu,
    ``draw_leftover``): the pipelined ``fwht_rows_pipe`` and the ``ROW_DEDICATED`` kernels marked
    so (``fwht_rows_h15``, ``fwht_rows_d15s``)."""
    return name.startswith("fwht_rows_pipe<") or any(name == ent[0] and ent[4] for ent in ROW_DEDICATED.values())


def row_args(name, src, dst, L, scale, tickets=None):
    """Kernel arguments of the row pass ``name`` (``row_launch``) from ``src`` to ``dst``: the
    five common ones, then the stream's ticket counter (``row_tickets``) where the kernel takes
    one (``takes_tickets``; ``tickets``: that counter, default the stream's)."""
    args = (src, dst, np.int64(src.size), np.int32(L), _TYPES[src.dtype][2](scale))
    if takes_tickets(name):
        args += (row_tickets() if tickets is None else tickets,)
    return args


def _launch_rows(xp, src, dst, L, scale, dtype, mma=False, cfg=None, dev=None, max_grid=None):
    name, smem, grid, threads = row_launch(src, L, mma, cfg, dev, max_grid)
    k = _kernel(dtype.str, src.device.id, name, smem, L)
    k((grid,), (threads,), row_args(name, src, dst, L, scale), shared_mem=smem)


def _launch_cols(xp, buf, s, mb, scale, dtype):
    T, A, sc, logv, _ = _TYPES[dtype]
    tplb = col_config(mb)
    wcb = tplb + logv
    assert s >= wcb
    total = buf.size
    smem = (np.dtype(sc).itemsize << (mb + wcb)) if mb > 3 else 0
    k = _kernel(dtype.str, buf.device.id, f"fwht_cols<{T}, {A}, {logv}, {mb}, {tplb}>", smem)
    nthreads = (1 << tplb) << (mb - 3)
    grid = (total >> (mb + wcb),)
    k(grid, (nthreads,), (buf, buf, np.int64(total), np.int32(s), sc(scale)), shared_mem=smem)


def auto_mma(dtype, L1: int, dev: DeviceInfo = None) -> bool:
    """Whether the "auto" variant uses the tensor-core (mma) front end for a float16 row pass
    of 2**L1: the table's choice (``ROW_TUNED``), else ``MMA_DEFAULT_L``."""
    if np.dtype(dtype) != np.float16:
        return False
    tuned = _tuned(np.dtype(dtype).name, L1, dev)
    return bool(tuned[3]) if tuned else L1 in MMA_DEFAULT_L


def transform_contiguous(xp, x2, L, scale, out=None, variant="auto", cfg=None, dev: DeviceInfo = None,
                         max_grid=None):
    """Unscaled-then-``scale`` natural WHT of each row of the C-contiguous array ``x2``
    (any shape whose last axis has 2**L elements) with the kernels; returns a new array
    (or ``out``, which must be C-contiguous and may alias ``x2``).

    ``variant``: "plain" (CUDA cores), "mma" (float16 only: tensor-core front end in the
    row pass), or "auto" (the measured choice in ``ROW_TUNED``, else ``MMA_DEFAULT_L``).
    ``cfg``: force one row pass with this (TB, CB, CSB[, WM, MINB[, XS[, PIPE]]]) (used by the
    tuning sweep). ``dev``, ``max_grid``: as for ``row_launch``."""
    dtype = x2.dtype
    if variant not in ("auto", "plain", "mma"):
        raise ValueError(f"variant must be 'auto', 'plain' or 'mma', got {variant!r}")
    if variant == "mma" and dtype != np.float16:
        raise TypeError("the tensor-core (mma) variant is for float16 only")
    dev = _dev(dev)
    passes = plan(L, dtype, dev) if cfg is None else [("rows", L)]
    l1 = passes[0][1]
    if variant == "mma" and dev.cc < 80:
        raise TypeError("the tensor-core (mma) variant needs an sm_80 or newer GPU")
    if cfg is not None and _cfg7(cfg)[6] and dev.cc < 80:
        raise TypeError("the pipelined kernel (PIPE > 0) needs an sm_80 or newer GPU (cp.async)")
    if cfg is not None and _cfg7(cfg)[2] and dev.cc < 90:
        raise TypeError("cluster configurations (CSB > 0, including the split kernel) need an sm_90 or "
                        "newer GPU (thread-block clusters)")
    mma = variant == "mma" or (variant == "auto" and auto_mma(dtype, l1, dev))
    y = xp.empty_like(x2) if out is None else out
    if x2.size == 0:
        return y
    # share the scale between passes (geometric split) so intermediates keep their range
    if len(passes) == 1:
        scales = [scale]
    elif scale == 1.0 or dtype.kind == "i":
        scales = [1.0] * len(passes)
    else:
        bits = [p[1] if p[0] == "rows" else p[2] for p in passes]
        scales = [scale ** (b / L) for b in bits[:-1]]
        scales.append(scale / math.prod(scales))
    for p, s_ in zip(passes, scales):
        if p[0] == "rows":
            _launch_rows(xp, x2, y, p[1], s_, dtype, mma, cfg, dev, max_grid)
        else:
            _launch_cols(xp, y, p[1], p[2], s_, dtype)
    return y


def supported(x2, L) -> bool:
    """Whether the kernels handle this contiguous array (else the generic cupy path)."""
    dt = x2.dtype
    if dt not in _TYPES:
        return False
    v = 16 // dt.itemsize
    return x2.size % v == 0 and x2.data.ptr % 16 == 0 and L <= 40


def try_transform(xm, L, scale, unit, dt, perm, inverse, out=None):
    """GPU path used by ``fwht``/``ifwht``: ``xm`` has the transform axis last.

    Returns the result (transform axis last, result dtype) or None to use the generic
    array-namespace path (dtypes without a kernel, sizes not a multiple of 16 bytes).
    """
    import cupy as xp

    if dt.kind in "iu":
        work_dt = np.dtype(np.int64)
    elif dt in _TYPES:
        work_dt = dt
    else:
        return None
    src = xm
    if perm is not None and inverse:
        inv = xp.empty_like(perm)
        inv[perm] = xp.arange(perm.size, dtype=perm.dtype)
        src = xp.take(src, inv, axis=-1)
    src = xp.ascontiguousarray(src, dtype=work_dt)
    if not supported(src, L):
        return None
    direct = (out is not None and perm is None and out.flags.c_contiguous and out.dtype == work_dt
              and (dt.kind == "f" or unit) and out.data.ptr % 16 == 0)
    if direct:  # write straight into the caller's out (no extra copy)
        return transform_contiguous(xp, src, L, 1.0 if dt.kind in "iu" else scale, out=out)
    if dt.kind in "iu":
        y = transform_contiguous(xp, src, L, 1.0)
        if not unit:
            y = y.astype(xp.float64) * scale
    else:
        y = transform_contiguous(xp, src, L, scale)
    if perm is not None and not inverse:
        y = xp.take(y, perm, axis=-1)
    return y

"""CPU tests of the host-side planning of ozgemm.fwt's CUDA path (no GPU needed): the
sweep's row candidates (incl. exchange-store XS), table-entry parsing, kernel names."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from ozgemm.fwt import _cuda

_DT = {"float16": (3, 4), "float32": (2, 4), "float64": (1, 8)}  # logv, compute itemsize


def _old_row_candidates(L, logv, acc_size, clusters=True):
    """The row_candidates rule without the XS option, as 5-tuples: a frozen reference for the
    non-XS candidates, which must stay exactly these."""
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
                if loge == 6 and (not wm or acc_size > 4):
                    continue
                smem = (acc_size << lt) if phase_b else 0
                if lt >= L and lt <= max(L, 11) + 2 and smem <= _cuda._SMEM_OPTIN:
                    out.append((tb, cb, 0, wm, 0))
                    if L >= 12 and _cuda._minb2_ok(tb, loge, acc_size, smem, lt):
                        out.append((tb, cb, 0, wm, 2))
                if wm:
                    continue
                for csb in ((1, 2) if clusters else ()):
                    if lt + csb == L and lt >= 10 and (acc_size << lt) <= _cuda._SMEM_OPTIN:
                        out.append((tb, cb, csb, False, 0))
                        if _cuda._minb2_ok(tb, loge, acc_size, acc_size << lt, lt):
                            out.append((tb, cb, csb, False, 2))
    return out


@pytest.mark.parametrize("name", list(_DT))
@pytest.mark.parametrize("clusters", [True, False])
def test_row_candidates_non_xs_unchanged(name, clusters):
    logv, acc = _DT[name]
    for L in range(0, 18):
        new = _cuda.row_candidates(L, logv, acc, clusters)
        assert all(len(c) == 7 for c in new)
        assert len(set(new)) == len(new)
        assert sorted(c[:5] for c in new if not c[5] and not c[6]) == sorted(_old_row_candidates(L, logv, acc, clusters))


@pytest.mark.parametrize("name", list(_DT))
def test_row_candidates_xs_valid(name):
    logv, acc = _DT[name]
    for L in range(0, 18):
        for tb, cb, csb, wm, minb, xs, pipe in _cuda.row_candidates(L, logv, acc):
            if not xs or xs >= 2 or pipe:  # lane-exchange candidates: test_row_candidates_xl_valid
                continue
            lt = logv + tb + cb
            assert csb == 0 and not wm and minb in (0, 2)
            assert tb - 5 <= cb <= 4                      # the warp bits are chunk bits
            assert logv + 5 < L <= lt                      # a shared-memory phase B, one tile per row or more
            assert (1 << (logv + cb)) * max(1, acc // 4) <= 64  # <= 64 registers of values
            assert (acc << lt) <= _cuda._SMEM_OPTIN
            assert _cuda.xs_ok(L, logv, tb, cb)
            if minb == 2:
                assert L >= 12 and (tb, cb, 0, False, 0, True, 0) in _cuda.row_candidates(L, logv, acc)


@pytest.mark.parametrize("name", list(_DT))
def test_row_candidates_xl_valid(name):
    # lane exchange (XS = K >= 2): float16 rows of 2**12-2**14 only, tiles of 1-2 rows
    logv, acc = _DT[name]
    for L in range(0, 18):
        got = [c for c in _cuda.row_candidates(L, logv, acc) if c[5] is not True and c[5] >= 2 and not c[6]]
        if name != "float16" or not 12 <= L <= 15:
            assert not got or name == "float16" and L <= 15
        for tb, cb, csb, wm, minb, k, _ in got:
            assert L >= 12 and logv == 3 and csb == 0 and not wm and minb in (0, 2)
            assert tb - 4 <= k <= tb - 2 and 0 <= logv + cb - k <= 2
            assert L <= logv + tb + cb <= L + 1
            assert _cuda.xl_ok(L, logv, tb, cb, k)
            if minb == 2:
                assert (tb, cb, 0, False, 0, k, 0) in _cuda.row_candidates(L, logv, acc)
    if name == "float16":
        c = {x for x in _cuda.row_candidates(12, logv, acc) if x[5] is not True and x[5] >= 2}
        assert (7, 2, 0, False, 0, 5, 0) in c and (7, 3, 0, False, 0, 5, 0) in c
        c = {x for x in _cuda.row_candidates(14, logv, acc) if x[5] is not True and x[5] >= 2}
        assert (8, 3, 0, False, 2, 6, 0) in c


def _sim_rows_xl(x, L, logv, tb, cb, k):
    """numpy model of fwht_rows' index bookkeeping with the lane exchange (plain variant,
    integer data): phase A (v and chunk bits in registers, lane bits < TB - K by shuffles),
    the exchange into layout Y, the K bits there, stores from Y."""
    V, C, nth = 1 << logv, 1 << cb, 1 << tb
    E, loge, lt = V * C, logv + cb, logv + tb + cb
    tid = np.arange(nth)
    tile = np.zeros(1 << lt, np.int64)
    tile[:x.size] = x.ravel()[:1 << lt]
    vofs = lambda c: (c * nth + tid) << logv  # noqa: E731
    r = np.stack([tile[vofs(e // V) + e % V] for e in range(E)], axis=1)

    def reg_stage(r, h):
        for i in range(E):
            if not i & h:
                u, w = r[:, i].copy(), r[:, i + h].copy()
                r[:, i], r[:, i + h] = u + w, u - w
    for b in range(logv):
        if b < L:
            reg_stage(r, 1 << b)
    for j in range(cb):
        if logv + tb + j < L:
            reg_stage(r, V << j)
    for j in range(tb - k):
        if logv + j < L:
            sg = np.where((tid >> j) & 1, -1, 1)[:, None]
            r = sg * r + r[tid ^ (1 << j)]
    sm = np.zeros(1 << lt, np.int64)
    for e in range(E):
        sm[vofs(e // V) + e % V] = r[:, e]
    yb0, p = logv + tb - k, loge - k
    nlo = yb0 - p
    ybase = ((tid & ((1 << nlo) - 1)) << p) | ((tid >> nlo) << (logv + tb))
    pos = np.stack([ybase | ((e >> p) << yb0) | (e & ((1 << p) - 1)) for e in range(E)], axis=1)
    assert np.array_equal(np.sort(pos.ravel()), np.arange(1 << lt))  # Y is a permutation
    r = sm[pos]
    for i in range(k):
        if yb0 + i < L:
            reg_stage(r, (1 << p) << i)
    out = np.zeros(1 << lt, np.int64)
    out[pos] = r
    return out[:x.size].reshape(x.shape)


def test_xl_layout_model_exact():
    from ozgemm.fwt import fwht
    logv, acc = _DT["float16"]
    for L in (12, 13):
        for tb, cb, csb, wm, minb, k, pipe in _cuda.row_candidates(L, logv, acc):
            if k is True or k < 2 or minb or pipe:
                continue
            rows = 1 << max(0, logv + tb + cb - L)
            x = np.random.default_rng(L + k).integers(-5, 6, size=(rows, 1 << L))
            assert np.array_equal(_sim_rows_xl(x, L, logv, tb, cb, k), fwht(x)), (L, tb, cb, k)


def test_xl_ok():
    assert _cuda.xl_ok(12, 3, 7, 2, 5)             # no shuffle after the mma, 2-byte stores
    assert _cuda.xl_ok(13, 3, 7, 3, 5)             # P = 1: 4-byte stores
    assert not _cuda.xl_ok(12, 3, 7, 2, 6)         # K > TB - 2: would redo the mma's lane bits
    assert not _cuda.xl_ok(12, 3, 8, 2, 2)         # warp bits not all after the exchange
    assert not _cuda.xl_ok(12, 3, 7, 3, 3)         # P = 3 > 2
    assert not _cuda.xl_ok(12, 3, 7, 2, 5, csb=1)  # no cluster
    assert not _cuda.xl_ok(12, 3, 7, 2, 5, wm=True)


def test_row_candidates_xs_examples():
    c = lambda n, L: {x[:6] for x in _cuda.row_candidates(L, *_DT[n]) if x[5] is True and not x[6]}  # noqa: E731
    assert (8, 4, 0, False, 0, True) in c("float32", 14)
    assert (9, 4, 0, False, 0, True) in c("float32", 15)
    assert (9, 4, 0, False, 0, True) in c("float64", 14)
    assert (7, 3, 0, False, 0, True) in c("float16", 13)
    assert (8, 3, 0, False, 0, True) in c("float16", 14)
    assert (7, 2, 0, False, 0, True) in c("float16", 12)
    assert not c("float16", 15)  # would need 128 values per thread
    assert not c("float64", 15)
    assert not c("float32", 7)   # no phase B: the row is within a warp
    # MINB = 2 only where _minb2_ok (float16 2**14: 256 threads x 64 floats, 64 KiB tile)
    assert (8, 3, 0, False, 2, True) in c("float16", 14)
    assert (9, 4, 0, False, 2, True) not in c("float64", 14)


def test_xs_ok():
    assert _cuda.xs_ok(14, 2, 8, 4)
    assert not _cuda.xs_ok(14, 2, 9, 3)           # 4 warp bits, 3 chunk bits
    assert not _cuda.xs_ok(14, 2, 8, 4, csb=1)    # no cluster
    assert not _cuda.xs_ok(14, 2, 8, 4, wm=True)  # plain layout only
    assert not _cuda.xs_ok(7, 2, 8, 4)            # no phase B (row within the lane bits)


def test_cfg7_and_tuned_cfg():
    assert _cuda._cfg7((7, 2, 0)) == (7, 2, 0, False, 0, False, 0)
    assert _cuda._cfg7((7, 2, 0, True, 2)) == (7, 2, 0, True, 2, False, 0)
    assert _cuda._cfg7((7, 2, 0, False, 0, True)) == (7, 2, 0, False, 0, True, 0)
    assert _cuda._cfg7((9, 4, 0, False, 0, True, 2)) == (9, 4, 0, False, 0, True, 2)
    with pytest.raises(ValueError):
        _cuda._cfg7((7, 2))
    # entries of 5 and 7 fields (tables without XS) mean XS = False; 8 fields carry XS, 9 also PIPE
    assert _cuda.tuned_cfg((7, 1, 0, True, 4025)) == (7, 1, 0, False, 0, False, 0)
    assert _cuda.tuned_cfg((9, 2, 0, True, 2657, False, 2)) == (9, 2, 0, False, 2, False, 0)
    assert _cuda.tuned_cfg((8, 3, 0, True, 3000, False, 2, True)) == (8, 3, 0, False, 2, True, 0)
    assert _cuda.tuned_cfg((7, 2, 0, True, 3000, False, 0, 5)) == (7, 2, 0, False, 0, 5, 0)
    assert _cuda.tuned_cfg((9, 4, 0, False, 3500, False, 0, True, 2)) == (9, 4, 0, False, 0, True, 2)
    with pytest.raises(ValueError):
        _cuda.tuned_cfg((8, 3, 0, True, 3000, False))
    for entry in _cuda.ROW_TUNED.values():
        assert len(_cuda.tuned_cfg(entry)) == 7


def test_row_names():
    f16, f32 = np.dtype(np.float16), np.dtype(np.float32)
    assert _cuda._row_name(f32, 14, cfg=(8, 4, 0, False, 0, True)) == \
        "fwht_rows<float, float, 2, 8, 4, false, false, 0, 1, 14>"
    assert _cuda._row_name(f16, 13, mma=True, cfg=(7, 3, 0)) == \
        "fwht_rows<unsigned short, float, 3, 7, 3, true, false, 0, 0, 13>"
    assert _cuda._row_name(f32, 15, cfg=(9, 3, 1, False, 2)) == \
        "fwht_rows_cluster2<float, float, 2, 9, 3, false, false, 2>"
    with pytest.raises(ValueError):
        _cuda._row_name(f32, 15, cfg=(9, 3, 1, False, 0, True))  # cluster + XS
    with pytest.raises(ValueError):
        _cuda._row_name(f32, 14, cfg=(9, 3, 0, False, 0, True))  # warp bits do not fit
    assert _cuda._row_name(f16, 12, mma=True, cfg=(7, 2, 0, False, 0, 5)) == \
        "fwht_rows<unsigned short, float, 3, 7, 2, true, false, 0, 5, 12>"
    # rows shorter than 2**LC_MIN: the run-time-L kernel (LC = 0)
    assert _cuda._row_name(f32, 11, cfg=(8, 3, 0)) == "fwht_rows<float, float, 2, 8, 3, false, false, 0, 0, 0>"
    with pytest.raises(ValueError):
        _cuda._row_name(f16, 12, mma=True, cfg=(7, 2, 0, False, 0, 6))  # lane exchange K > TB - 2


def test_row_config_and_names_with_an_xs_entry():
    cfg = _cuda.tuned_cfg((8, 4, 0, False, 3600, False, 0, True))
    assert cfg == (8, 4, 0, False, 0, True, 0)
    assert _cuda._row_name(np.float32, 14, cfg=cfg) == "fwht_rows<float, float, 2, 8, 4, false, false, 0, 1, 14>"
    # a restricted sweep compiles only the candidates of its lengths (no rule, table or cols)
    ns = _cuda._names(np.float32, 90, sweep=True, Ls=(14,))
    assert len(ns) == len(_cuda.row_candidates(14, 2, 4))
    assert all(n.startswith("fwht_rows") for n in ns)
    # plan and names work for every committed entry on sm_90 and sm_80
    for cc in (90, 80):
        for name in ("float16", "float32", "float64"):
            assert _cuda._names(np.dtype(name), cc, sweep=False)
            assert _cuda._names(np.dtype(name), cc, sweep=True)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_xs_kernels_compile_with_nvcc(tmp_path):
    names = ["fwht_rows<float, float, 2, 8, 4, false, false, 0, 1, 14>",
             "fwht_rows<unsigned short, float, 3, 7, 3, true, false, 0, 1, 13>",
             "fwht_rows<long long, long long, 1, 9, 4, false, false, 0, 1, 14>",
             "fwht_rows<double, double, 1, 8, 3, false, false, 0, 0, 0>",
             "fwht_rows<unsigned short, float, 3, 7, 2, true, false, 0, 5, 12>",
             "fwht_rows<unsigned short, float, 3, 8, 3, false, false, 2, 6, 13>",
             "fwht_rows_pipe<float, float, 2, 9, 4, false, 0, 1, 2, 15>",
             "fwht_rows_pipe<double, double, 1, 9, 4, false, 0, 1, 2, 14>",
             "fwht_rows_pipe<unsigned short, float, 3, 10, 2, true, 0, 0, 1, 15>",
             "fwht_rows_pipe<unsigned short, float, 3, 7, 2, true, 0, 3, 1, 12>",
             "fwht_rows_pipe<long long, long long, 1, 8, 4, false, 2, 1, 1, 13>",
             # the split kernel: the table's entries, int64 and the float16 mma combine (its
             # double/long long instantiations are a known NVRTC compile hazard)
             "fwht_rows_pipe_split<double, double, 1, 9, 4, false, 0, 1, 2, 14>",
             "fwht_rows_pipe_split<float, float, 2, 9, 4, false, 0, 1, 2, 15>",
             "fwht_rows_pipe_split<long long, long long, 1, 9, 4, false, 0, 1, 2, 14>",
             "fwht_rows_pipe_split<unsigned short, float, 3, 9, 2, true, 0, 5, 1, 14>"]
    src = _cuda._SRC.read_text() + "\n"
    for n in names:
        T, A = [a.strip() for a in n.split("<", 1)[1].split(",")[:2]]
        tk = ", unsigned* __restrict__" if _cuda.takes_tickets(n) else ""
        src += f"template __global__ void {n}(const {T}* __restrict__, {T}* __restrict__, long long, int, {A}{tk});\n"
    for (dname, _), (n, *_, tickets) in _cuda.ROW_DEDICATED.items():  # the dedicated kernels
        T, A, *_ = _cuda._TYPES[np.dtype(dname)]
        src += (f"template __global__ void {n}(const {T}* __restrict__, {T}* __restrict__, long long, int, {A}"
                + (", unsigned* __restrict__" if tickets else "") + ");\n")
    (tmp_path / "k.cu").write_text(src)
    p = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", "-o", str(tmp_path / "k.cubin"),
                        str(tmp_path / "k.cu")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-3000:]


def test_dedicated_row_kernels_selection():
    # ROW_DEDICATED: float16 2**15 (fwht_rows_h15) only with the mma front end, float64 2**15
    # (fwht_rows_d15s, CUDA cores) always; never for a forced sweep configuration, only on the
    # table's device class; compiled with the table's kernels on sm_90 (not on sm_80); the
    # shared memory fits the opt-in limit
    h200 = _cuda.DeviceInfo(90, _cuda._SMEM_OPTIN)
    assert _cuda.dedicated_row(np.float16, 15, True, dev=h200) == ("fwht_rows_h15<1>", 6 << 15)
    assert _cuda.dedicated_row(np.float16, 15, False, dev=h200) is None
    assert _cuda.dedicated_row(np.float16, 15, True, cfg=(9, 3, 0), dev=h200) is None
    assert _cuda.dedicated_row(np.float16, 14, True, dev=h200) is None
    assert _cuda.dedicated_row(np.float32, 15, True, dev=h200) is None
    assert _cuda.dedicated_row(np.float64, 15, False, dev=h200) == ("fwht_rows_d15s<1>", 192 * 1024 + 16)
    assert _cuda.dedicated_row(np.float64, 15, False, cfg=(9, 4, 1), dev=h200) is None
    assert _cuda.dedicated_row(np.float64, 14, False, dev=h200) is None
    assert _cuda.dedicated_row(np.int64, 15, False, dev=h200) is None
    for (dname, L), (name, smem, gbs, _, _) in _cuda.ROW_DEDICATED.items():
        assert smem <= _cuda._SMEM_OPTIN and gbs > 0
        assert name in _cuda._names(np.dtype(dname), 90, sweep=False)
        assert name not in _cuda._names(np.dtype(dname), 80, sweep=False)
    a100 = _cuda.DeviceInfo(80, 164 * 1024)  # not the table's class
    assert _cuda.dedicated_row(np.float16, 15, True, dev=a100) is None
    assert _cuda.dedicated_row(np.float64, 15, False, dev=a100) is None
    assert _cuda.dedicated_row(np.float64, 15, False, dev=_cuda.DeviceInfo(90, 164 * 1024)) is None


def test_row_args_ticket_counter_for_dedicated_kernels():
    # the kernels with leftover-row tickets (h15, d15s, the pipelined kernel) take the stream's
    # counter as a sixth argument, the others (split, one-pass rows) not
    counter = object()
    x = np.zeros((2, 1 << 15), dtype=np.float64)
    a = _cuda.row_args("fwht_rows_d15s<1>", x, x, 15, 0.5, tickets=counter)
    assert len(a) == 6 and a[5] is counter and a[2] == 1 << 16 and a[3] == 15 and a[4] == 0.5
    assert isinstance(a[4], np.float64) and isinstance(a[2], np.int64)
    h = np.zeros((1, 1 << 15), dtype=np.float16)
    a = _cuda.row_args("fwht_rows_h15<1>", h, h, 15, 1.0, tickets=counter)
    assert len(a) == 6 and a[5] is counter and isinstance(a[4], np.float32)
    assert len(_cuda.row_args("fwht_rows_pipe_split<double, double, 1, 9, 4, false, 0, 1, 2, 14>",
                              x, x, 15, 1.0, tickets=counter)) == 5
    f = np.zeros((2, 1 << 15), dtype=np.float32)  # the pipelined kernel draws leftover tiles too
    a = _cuda.row_args("fwht_rows_pipe<float, float, 2, 9, 4, false, 0, 1, 2, 15>", f, f, 15, 1.0, tickets=counter)
    assert len(a) == 6 and a[5] is counter
    assert len(_cuda.row_args("fwht_rows<float, float, 2, 8, 3, false, false, 0, 1, 13>", f, f, 13, 1.0, tickets=counter)) == 5


# ---- pipelined persistent kernel (PIPE) --------------------------------------------------------
def test_pipe_smem_and_ok():
    f16, f32, f64 = _DT["float16"], _DT["float32"], _DT["float64"]
    # float32 2**15, TB=9 CB=4 XS: staging 128 KiB + exchange 128 KiB does not fit; half does
    assert _cuda.pipe_smem(15, *f32, 9, 4, True, 1) == 256 * 1024
    assert _cuda.pipe_smem(15, *f32, 9, 4, True, 2) == 192 * 1024
    assert not _cuda.pipe_ok(15, *f32, 9, 4, xs=True, pipe=1)
    assert _cuda.pipe_ok(15, *f32, 9, 4, xs=True, pipe=2)
    # float16 2**15, TB=10 CB=2: 64 KiB of half staging + 128 KiB float32 exchange
    assert _cuda.pipe_smem(15, *f16, 10, 2, False, 1) == 192 * 1024
    assert _cuda.pipe_ok(15, *f16, 10, 2, pipe=1)
    assert not _cuda.pipe_ok(15, *f16, 10, 2, pipe=2)       # PIPE = 2 needs XS = 1
    assert _cuda.pipe_ok(14, *f64, 9, 4, xs=True, pipe=2)
    assert not _cuda.pipe_ok(14, *f64, 9, 4, xs=True, pipe=1)
    # CSB = 1: the split kernel, rows of exactly 2**(LT+1), LT >= LC_MIN, shared memory of 2**LT
    assert _cuda.pipe_ok(15, *f64, 9, 4, csb=1, xs=True, pipe=2)
    assert _cuda.pipe_smem(15, *f64, 9, 4, True, 2) == 192 * 1024
    assert _cuda.pipe_smem(15, *f32, 9, 3, False, 1) == 128 * 1024
    assert not _cuda.pipe_ok(15, *f32, 9, 4, csb=1, xs=True, pipe=2)  # tile = row: no split
    assert not _cuda.pipe_ok(16, *f32, 8, 3, csb=1, pipe=1)           # 2**16 = 4 tiles
    assert not _cuda.pipe_ok(12, *f32, 7, 2, csb=1, pipe=1)           # LT = 11 < LC_MIN
    assert not _cuda.pipe_ok(16, *f32, 9, 3, csb=2, pipe=1)           # no 4-CTA split
    assert not _cuda.pipe_ok(12, *f32, 7, 3, wm=True, pipe=1)
    assert not _cuda.pipe_ok(14, *f32, 8, 4, xs=True, pipe=3)


@pytest.mark.parametrize("name", list(_DT))
def test_row_candidates_pipe_valid(name):
    logv, acc = _DT[name]
    for L in range(0, 18):
        for clusters in (True, False):
            cands = _cuda.row_candidates(L, logv, acc, clusters)
            pipes = [c for c in cands if c[6]]
            if L < 12 or not clusters:
                assert not pipes
            for tb, cb, csb, wm, minb, xs, pipe in pipes:
                assert _cuda.pipe_ok(L, logv, acc, tb, cb, csb, wm, xs, pipe)
                if csb:  # split: a one-row PIPE candidate of the half-row
                    assert csb == 1 and L >= _cuda.SPLIT_MIN_L and logv + tb + cb == L - 1
                    assert (tb, cb, 0, wm, minb, xs, pipe) in _cuda.row_candidates(L - 1, logv, acc)
                    continue
                assert L <= logv + tb + cb <= L + 1
                assert (tb, cb, csb, wm, minb, xs, 0) in cands  # every PIPE has its PIPE = 0 twin
            splits = {c for c in pipes if c[2]}
            half = {c[:2] + (1,) + c[3:] for c in _cuda.row_candidates(L - 1, logv, acc, clusters)
                    if c[6] and not c[2] and logv + c[0] + c[1] == L - 1} if L >= 1 else set()
            assert splits == (half if L >= _cuda.SPLIT_MIN_L else set())
    c = lambda n, L: set(_cuda.row_candidates(L, *_DT[n]))  # noqa: E731
    assert (9, 4, 0, False, 0, True, 2) in c("float32", 15)
    assert (9, 4, 0, False, 0, True, 2) in c("float64", 14)
    assert (9, 4, 1, False, 0, True, 2) in c("float64", 15)  # split: two 2**14 halves
    assert (10, 2, 0, False, 0, False, 1) in c("float16", 15)
    assert (7, 2, 0, False, 0, 3, 1) in c("float16", 12)


def _sim_half_exchange(tile, logv, tb, cb):
    """numpy model of rows_body's PIPE = 2 exchange (XS = 1): registers in the plain layout
    r[tid, c*V + v] = tile[vofs(c) + v]; round h stores register half h of every vector at
    (vofs(c) >> LOGV) * V/2 + k of a half-size buffer, then every thread loads register half h
    of each vector from (vofs_wm(c) >> LOGV) * V/2 + k. Returns the registers after round 1."""
    V, nth, C, hv = 1 << logv, 1 << tb, 1 << cb, 1 << (logv - 1)
    tid = np.arange(nth)
    lane, wid = tid & 31, tid >> 5
    plain = [(c * nth + tid) << logv for c in range(C)]
    wm = [(lane << logv) | (c << (logv + 5)) | (wid << (logv + 5 + cb)) for c in range(C)]
    r = np.stack([tile[plain[c] + v] for c in range(C) for v in range(V)], axis=1)
    for h in (0, 1):
        buf = np.full(tile.size // 2, -1, np.int64)
        for c in range(C):
            for k in range(hv):
                buf[(plain[c] >> logv) * hv + k] = r[:, c * V + h * hv + k]
        assert (buf >= 0).all()  # every position of the half buffer written in this round
        for c in range(C):
            for k in range(hv):
                r[:, c * V + h * hv + k] = buf[(wm[c] >> logv) * hv + k]
    return r, wm


def test_pipe_half_exchange_model():
    # the two rounds deliver the tile in the warp-major layout: register c*V + v of thread tid
    # holds tile[vofs_wm(c) + v] (a round that moved the wrong register half, or a buffer
    # position that ignored the half index, would leave plain-layout or overwritten values)
    for logv, tb, cb in ((2, 9, 4), (1, 9, 4), (2, 8, 4), (1, 8, 4)):
        tile = np.random.default_rng(tb + cb).permutation(1 << (logv + tb + cb)).astype(np.int64)
        r, wm = _sim_half_exchange(tile, logv, tb, cb)
        V = 1 << logv
        want = np.stack([tile[wm[c] + v] for c in range(1 << cb) for v in range(V)], axis=1)
        assert np.array_equal(r, want), (logv, tb, cb)


def test_resident_ctas():
    # H100/H200 limits: threads, registers (per-warp granularity of 256), shared memory + 1 KiB
    assert _cuda._resident_ctas(128, 512, 192 * 1024) == 1
    assert _cuda._resident_ctas(64, 256, 48 * 1024) == 4       # 4 x 49 KiB <= 228 KiB; regs 4 x 16K
    assert _cuda._resident_ctas(96, 256, 0) == 2               # 96 x 256 = 24K registers per CTA
    assert _cuda._resident_ctas(32, 128, 0) == 16              # 2048 threads
    assert _cuda._resident_ctas(255, 1024, 200 * 1024) == 1    # never below 1


def test_tuned_needs_sm90_and_large_shared_memory():
    assert _cuda._tuned("float32", 15, _cuda.DeviceInfo(90, 227 * 1024)) is not None
    assert _cuda._tuned("float32", 15, _cuda.DeviceInfo(120, 99 * 1024)) is None  # e.g. consumer Blackwell
    assert _cuda._tuned("float32", 15, _cuda.DeviceInfo(80, 227 * 1024)) is None


def test_pipe_cfg_rejected_below_sm80():
    x = np.zeros((2, 1 << 15), np.float32)
    with pytest.raises(TypeError, match="sm_80"):
        _cuda.transform_contiguous(np, x, 15, 1.0, cfg=(9, 4, 0, False, 0, True, 2), dev=_cuda.DeviceInfo(75, 64 * 1024))


def test_pipe_minb2_only_where_two_ctas_fit():
    for name, (logv, acc) in _DT.items():
        for L in range(12, 16):
            for tb, cb, csb, wm, minb, xs, pipe in _cuda.row_candidates(L, logv, acc):
                if pipe and minb == 2:
                    assert 2 * (_cuda.pipe_smem(L, logv, acc, tb, cb, xs, pipe) + 1024) <= 228 * 1024


def test_pipe_row_names():
    f16, f32 = np.dtype(np.float16), np.dtype(np.float32)
    assert _cuda._row_name(f32, 15, cfg=(9, 4, 0, False, 0, True, 2)) == \
        "fwht_rows_pipe<float, float, 2, 9, 4, false, 0, 1, 2, 15>"
    assert _cuda._row_name(f16, 15, mma=True, cfg=(10, 2, 0, False, 0, False, 1)) == \
        "fwht_rows_pipe<unsigned short, float, 3, 10, 2, true, 0, 0, 1, 15>"
    with pytest.raises(ValueError):
        _cuda._row_name(f32, 15, cfg=(9, 4, 0, False, 0, True, 1))  # 256 KiB of shared memory
    assert _cuda._row_name(f32, 15, cfg=(9, 3, 1, False, 0, False, 1)) == \
        "fwht_rows_pipe_split<float, float, 2, 9, 3, false, 0, 0, 1, 14>"  # half-rows of 2**14
    assert _cuda._row_name(np.dtype(np.float64), 15, cfg=(9, 4, 1, False, 0, True, 2)) == \
        "fwht_rows_pipe_split<double, double, 1, 9, 4, false, 0, 1, 2, 14>"
    with pytest.raises(ValueError):
        _cuda._row_name(f32, 15, cfg=(9, 4, 1, False, 0, True, 2))  # tile = row: no split
    with pytest.raises(ValueError):
        _cuda._row_name(f32, 12, cfg=(8, 1, 1, False, 0, False, 1))  # LT = 11 < LC_MIN


def test_plan_with_the_split_entries():
    # the H200 table (sm_90 defaults without a GPU): float32 2**16 and float64 2**15 are one
    # split pass, so the longest 2-pass rows are 2**25 and 2**24; passes cover exactly L bits
    assert _cuda.lmax_single(np.float32) == 16 and _cuda.lmax_single(np.float64) == 15
    assert _cuda.lmax_single(np.float16) == 15 and _cuda.lmax_single(np.int64) == 14
    assert _cuda.plan(16, np.float32) == [("rows", 16)]
    assert _cuda.plan(15, np.float64) == [("rows", 15)]
    assert _cuda.plan(25, np.float32) == [("rows", 16), ("cols", 16, 9)]
    assert _cuda.plan(24, np.float64) == [("rows", 15), ("cols", 15, 9)]
    assert len(_cuda.plan(26, np.float32)) == 3 and len(_cuda.plan(25, np.float64)) == 3
    for dt in (np.float16, np.float32, np.float64, np.int64):
        logv = _cuda._TYPES[np.dtype(dt)][3]
        for L in range(0, 41):
            p = _cuda.plan(L, dt)
            assert p[0][0] == "rows" and p[0][1] + sum(q[2] for q in p[1:]) == L
            s = p[0][1]
            for kind, s_, mb in p[1:]:
                assert kind == "cols" and s_ == s and s_ >= 7 + logv and mb in (3, 6, 9)
                s += mb


def test_split_launch_needs_whole_rows():
    # the split kernel pairs tiles 2r, 2r+1 of one row: a size that is not whole rows is refused
    # before any launch (the public API always passes whole rows)
    class Fake:
        size = 3 << 14
        dtype = np.dtype(np.float64)

    with pytest.raises(ValueError, match="whole rows"):
        _cuda._launch_rows(None, Fake(), Fake(), 15, 1.0, np.dtype(np.float64), cfg=(9, 4, 1, False, 0, True, 2))


def test_split_cfg_rejected_below_sm90():
    with pytest.raises(TypeError, match="sm_90"):
        _cuda.transform_contiguous(np, np.zeros((2, 1 << 15)), 15, 1.0, cfg=(9, 4, 1, False, 0, True, 2),
                                   dev=_cuda.DeviceInfo(86, 99 * 1024))


def test_row_tickets_one_counter_per_stream_and_thread(monkeypatch):
    # row_tickets keys its counters by device and stream, and by host thread on the per-thread
    # default stream (one handle for every thread): a stub cupy stands in for the GPU
    import sys
    import threading
    import types

    cur = {"stream": types.SimpleNamespace(ptr=2)}
    # a device id no real device has, so the counters made here are this test's own
    cuda = types.SimpleNamespace(Device=lambda *a: types.SimpleNamespace(id=-7),
                                 get_current_stream=lambda: cur["stream"],
                                 runtime=types.SimpleNamespace(streamPerThread=2))
    stub = types.SimpleNamespace(cuda=cuda, uint32=np.uint32, zeros=lambda n, dtype=None: np.zeros(n, dtype))
    monkeypatch.setitem(sys.modules, "cupy", stub)

    def in_thread():
        out = []
        t = threading.Thread(target=lambda: out.append(_cuda.row_tickets()))
        t.start()
        t.join()
        return out[0]

    a = _cuda.row_tickets()
    assert _cuda.row_tickets() is a and a.dtype == np.uint32 and a.tolist() == [0]
    assert in_thread() is not a  # per-thread default stream: another thread, another counter
    cur["stream"] = types.SimpleNamespace(ptr=12345)
    b = _cuda.row_tickets()
    assert b is not a and in_thread() is b  # an explicit stream: one counter for every thread

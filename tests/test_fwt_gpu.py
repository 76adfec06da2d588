"""GPU (CuPy) tests of ozgemm.fwt; skipped cleanly without a CUDA device.

Exact checks: integer-valued inputs whose sums are exact in the compute precision give
results that must equal the integer product with ``scipy.linalg.hadamard`` (computed on
the CPU with int64) bit for bit — for float32/float64/int64 and, for float16, the exact
integer rounded once to float16. Random inputs are checked against the a-priori bound
``|ŷ − y| ≤ γ_passes · ||x||_1`` with a float64 CPU (numpy) reference.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from ozgemm._xp import gpu_available

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA GPU")]

if gpu_available():
    import cupy as cp

from ozgemm.fwt import fwht, ifwht, walsh_spectrum  # noqa: E402
from ozgemm.fwt import _cuda  # noqa: E402


def _ref_int(k):
    """Exact natural-order WHT of the integer rows of k on the CPU, independent of ozgemm:
    the Sylvester factorisation H_n = H_{n_1} (x) ... (x) H_{n_r} (factors <= 2**8 from
    scipy.linalg.hadamard) applied axis by axis with float64 matrix products. Exact because
    every partial sum is an integer of magnitude < 2**53 (callers keep ||x||_1 < 2**53)."""
    rows, n = k.shape
    assert np.abs(k).sum(axis=1).max() < 2**53
    L = n.bit_length() - 1
    facs = [8] * (L // 8) + ([L % 8] if L % 8 else [])
    t = k.astype(np.float64).reshape([rows] + [1 << f for f in reversed(facs)])
    for ax in range(1, t.ndim):
        m = t.shape[ax]
        H = scipy.linalg.hadamard(m).astype(np.float64) if m > 1 else np.ones((1, 1))
        t = np.moveaxis(np.tensordot(t, H, axes=([ax], [1])), -1, ax)
    return t.reshape(rows, n).astype(np.int64)


SIZES = list(range(0, 17)) + [18, 20, 22]


@pytest.mark.parametrize("L", SIZES)
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int64, np.int32])
def test_gpu_exact_integer_valued(dt, L):
    n = 1 << L
    rows = max(1, min(64, (1 << 18) // n))
    rng = np.random.default_rng(L)
    k = rng.integers(-7, 8, size=(rows, n))  # |sums| <= 7 * 2**22 < 2**24: exact in float32
    want = _ref_int(k)
    x = cp.asarray(k.astype(dt))
    keep = x.copy()
    y = fwht(x)
    assert isinstance(y, cp.ndarray)
    assert y.dtype == (dt if np.dtype(dt).kind == "f" else np.int64)
    np.testing.assert_array_equal(cp.asnumpy(y).astype(np.int64), want)
    assert bool((x == keep).all())


@pytest.mark.parametrize("L", list(range(0, 16)))
def test_gpu_float16_single_pass_one_rounding(L):
    n = 1 << L
    rows = max(1, min(64, (1 << 18) // n))
    rng = np.random.default_rng(100 + L)
    k = rng.integers(-64, 65, size=(rows, n))  # float32 sums exact (< 2**24)
    y = fwht(cp.asarray(k.astype(np.float16)))
    np.testing.assert_array_equal(cp.asnumpy(y), _ref_int(k).astype(np.float16))


@pytest.mark.parametrize("L", list(range(0, 16)) + [16, 18])
@pytest.mark.parametrize("variant", ["plain", "mma"])
def test_gpu_float16_variants_exact(variant, L):
    # integer-valued float16 inputs with float32-exact sums: both the CUDA-core and the
    # tensor-core (mma) variants must give the exact sums rounded once to float16
    n = 1 << L
    rows = max(1, min(64, (1 << 18) // n))
    rng = np.random.default_rng(200 + L)
    k = rng.integers(-16, 17, size=(rows, n))
    x = cp.asarray(k.astype(np.float16))
    y = _cuda.transform_contiguous(cp, x, L, 1.0, variant=variant)
    want = _ref_int(k)
    if len(_cuda.plan(L, np.float16)) == 1:
        np.testing.assert_array_equal(cp.asnumpy(y), want.astype(np.float16))
    else:  # one float16 rounding of the intermediate between passes
        np.testing.assert_allclose(cp.asnumpy(y).astype(np.float64), want, rtol=0,
                                   atol=2.0**-10 * np.abs(k).sum(axis=1).max())


@pytest.mark.parametrize("L", [4, 10, 13, 14, 15, 16, 17, 20, 22])
@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("norm", ["backward", "ortho"])
def test_gpu_random_within_bound(dt, L, norm):
    n = 1 << L
    rows = max(1, (1 << 20) // n)
    rng = np.random.default_rng(L)
    x = (rng.random((rows, n)) - 0.5).astype(dt)
    xd = x.astype(np.float64)
    ref = fwht(xd, norm=norm)  # CPU float64 (numpy butterflies), error ~1e-16 relative
    y = cp.asnumpy(fwht(cp.asarray(x), norm=norm)).astype(np.float64)
    c = 1.0 if norm == "backward" else n**-0.5
    _assert_within_bound(y, ref, np.abs(xd).sum(axis=1, keepdims=True) * c, dt, L, len(_cuda.plan(L, dt)))


def _assert_within_bound(y, ref, l1, dt, L, npass):
    """|y - ref| <= the a-priori bound (L + 2) u ||x||_1 (scaled l1 = c ||x||_1 per row), plus
    one float16 rounding per pass for float16; ref: a float64 CPU reference."""
    if dt == np.float64:
        bound = (L + 2) * 2.0**-53 * l1 * 1.01
    elif dt == np.float32:
        bound = (L + 2) * 2.0**-24 * l1 * 1.01
    else:  # float32 arithmetic, one float16 rounding per pass of the intermediate
        bound = ((L + 2) * 2.0**-24 + npass * 2.0**-11) * l1 * 1.01
    err = np.abs(y - ref)
    assert np.all(np.isfinite(y))
    assert np.all(err <= bound), float((err / bound).max())


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("order", ["natural", "sequency"])
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_gpu_matches_cpu_conventions(dt, order, norm):
    rng = np.random.default_rng(5)
    k = rng.integers(-9, 10, size=(3, 5, 256))
    x = k.astype(dt)
    for axis in (-1, 0):
        xs = x if axis == -1 else np.ascontiguousarray(np.moveaxis(x, -1, 0))
        cpu = fwht(xs, axis=axis, norm=norm, order=order)
        gpu = fwht(cp.asarray(xs), axis=axis, norm=norm, order=order)
        assert gpu.dtype == cpu.dtype and gpu.shape == cpu.shape
        np.testing.assert_allclose(cp.asnumpy(gpu), cpu, rtol=1e-6 if dt == np.float32 else 1e-14, atol=0)
        back = ifwht(gpu, axis=axis, norm=norm, order=order)
        np.testing.assert_allclose(cp.asnumpy(back), xs, rtol=0, atol=1e-4 if dt == np.float32 else 1e-10)


def test_gpu_generic_fallback_and_out():
    x = cp.asarray(np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float16))  # 6 halves: not 16 B
    np.testing.assert_array_equal(cp.asnumpy(fwht(x)), [[3, -1], [7, -1], [11, -1]])
    x = cp.arange(64, dtype=cp.float32).reshape(4, 16)
    out = cp.empty_like(x)
    r = fwht(x, out=out)
    assert r is out
    np.testing.assert_array_equal(cp.asnumpy(out), fwht(cp.asnumpy(x)))


def test_gpu_int_overflow_check_and_walsh():
    with pytest.raises(OverflowError):
        fwht(cp.full(4, 2**62, dtype=cp.int64))
    tt = cp.asarray(np.array([(x & 1) * ((x >> 1) & 1) ^ ((x >> 2) & 1) * ((x >> 3) & 1) for x in range(16)]))
    W = walsh_spectrum(tt)
    assert isinstance(W, cp.ndarray) and bool((cp.abs(W) == 4).all())


@pytest.mark.slow
def test_gpu_multipass_2_23_float64_exact():
    # float64 2**23: row pass of 2**14 (the pipelined kernel on the H200 table) + strided pass
    L = 23
    k = np.random.default_rng(23).integers(-1, 2, size=(1, 1 << L))
    y = cp.asnumpy(fwht(cp.asarray(k.astype(np.float64))))
    np.testing.assert_array_equal(y.astype(np.int64), _ref_int(k))


@pytest.mark.slow
def test_gpu_multipass_2_24_float32_exact():
    L = 24
    rng = np.random.default_rng(24)
    k = rng.integers(-1, 2, size=(1, 1 << L))
    y = cp.asnumpy(fwht(cp.asarray(k.astype(np.float32))))
    # float32: |sums| <= 2**24 exact
    np.testing.assert_array_equal(y.astype(np.int64), _ref_int(k))


# ---- exchange-store (XS) phase B: every XS candidate of the sweep, bit-exact -------------------
# (XS = 1: exchange-store; XS = K >= 2: lane exchange, float16 only — the same
# checks: exact on integer data, bit-identical to the configuration with XS = 0)
# XS replaces phase B's store/load/butterflies/store/load by one exchange into the warp-major
# layout and stores from there; the butterflies and their order are unchanged, so float
# results must be bit-identical to the same (TB, CB, MINB) without XS, and integer-valued
# inputs exact. Also int64 (the float64 candidates) and both float16 variants.
_XS_DTYPES = {np.float16: ("float16", ("plain", "mma")), np.float32: ("float32", ("plain",)),
              np.float64: ("float64", ("plain",)), np.int64: ("float64", ("plain",))}


def _candidate_cases(lmin, keep, tag, above=0):
    """pytest params (dtype, L, cfg, variant) of every sweep candidate with ``keep(cfg)``, for
    rows of 2**lmin .. 2**(LMAX1 + above) of each dtype; ``tag(cfg)``: extra text of the test id."""
    cases = []
    for dt, (cand_dt, variants) in _XS_DTYPES.items():
        _, _, sc, logv, lmax1 = _cuda._TYPES[np.dtype(cand_dt)]
        acc = np.dtype(sc).itemsize
        for L in range(lmin, lmax1 + 1 + above):
            for cfg in _cuda.row_candidates(L, logv, acc):
                if keep(cfg):
                    for v in variants:
                        cases.append(pytest.param(dt, L, cfg, v, id=f"{np.dtype(dt).name}-L{L}-{cfg[:2]}-minb{cfg[4]}"
                                                  f"-xs{int(cfg[5])}{tag(cfg)}-{v}"))
    return cases


def _xs_cases():
    # the pipelined XS candidates are in test_gpu_pipe_*
    return _candidate_cases(8, lambda cfg: cfg[5] and not cfg[6], lambda cfg: "")


_XS_CASES = _xs_cases()


def _xs_ref_cfg(cfg):
    return tuple(cfg[:5]) + (False,)


def _compile_selected(request, test_name, ref_cfg):
    """Compile, in one module per dtype, the kernels (and their reference twins) of the
    parametrized cases of ``test_name`` that this pytest run selects (after -k/-m selection)."""
    names = {}
    for item in request.node.listchain()[0].items:  # the root node's collected, selected items
        if getattr(item, "originalname", None) != test_name or not hasattr(item, "callspec"):
            continue
        p = item.callspec.params
        dt, L, cfg, v = p["dt"], p["L"], p["cfg"], p["variant"]
        for c in (cfg, ref_cfg(cfg)):
            names.setdefault(dt, set()).add(_cuda._row_name(np.dtype(dt), L, mma=v == "mma", cfg=c))
    for dt, ns in names.items():
        _cuda.compile_kernels(dt, ns)
    return True


@pytest.fixture(scope="module")
def _xs_compiled(request):
    # compile every selected XS kernel and its non-XS twin once per dtype (not one module per L)
    return _compile_selected(request, "test_gpu_xs_exact_and_bit_identical", _xs_ref_cfg)


def test_xs_cases_cover_the_briefed_configurations():
    got = {(np.dtype(p.values[0]).name, p.values[1], p.values[2][:2]) for p in _XS_CASES}
    for want in [("float32", 14, (8, 4)), ("float64", 14, (9, 4)), ("float16", 13, (7, 3)), ("float16", 14, (8, 3))]:
        assert want in got
    # lane-exchange candidates (XS = K >= 2, float16 2**12-2**14) are among them
    lx = {(p.values[1], p.values[2]) for p in _XS_CASES if p.values[2][5] is not True and p.values[2][5] >= 2}
    assert (12, (7, 2, 0, False, 0, 5, 0)) in lx and (14, (8, 3, 0, False, 2, 6, 0)) in lx


@pytest.mark.parametrize("dt, L, cfg, variant", _XS_CASES)
def test_gpu_xs_exact_and_bit_identical(_xs_compiled, dt, L, cfg, variant):
    n = 1 << L
    _, _, _, logv, _ = _cuda._TYPES[np.dtype(dt) if np.dtype(dt).kind == "f" else np.dtype(np.int64)]
    lt = logv + cfg[0] + cfg[1]
    tile_rows = max(1, 1 << (lt - L))
    rows = 3 * tile_rows + 1  # a partial last tile: exercises the bounds check in both layouts
    rng = np.random.default_rng(1000 + L)
    k = rng.integers(-16, 17, size=(rows, n))  # |sums| <= 16 * 2**15: exact in float32
    want = _ref_int(k)
    x = cp.asarray(k.astype(dt))
    y = _cuda.transform_contiguous(cp, x, L, 1.0, variant=variant, cfg=cfg)
    if np.dtype(dt).kind == "i":
        np.testing.assert_array_equal(cp.asnumpy(y), want)
        return
    np.testing.assert_array_equal(cp.asnumpy(y), want.astype(dt))  # float16: one rounding
    # random data with the "ortho" scale: bit-identical to the same configuration without XS
    _assert_bit_identical(rng, rows, L, dt, variant, cfg, _xs_ref_cfg(cfg))


def _assert_bit_identical(rng, rows, L, dt, variant, cfg, ref_cfg, max_grid=None):
    """Random data, "ortho" scale: configurations ``cfg`` and ``ref_cfg`` give the same bits."""
    n = 1 << L
    xr = cp.asarray((rng.random((rows, n)) - 0.5).astype(dt))
    s = n**-0.5
    y_a = _cuda.transform_contiguous(cp, xr, L, s, variant=variant, cfg=cfg, max_grid=max_grid)
    y_b = _cuda.transform_contiguous(cp, xr, L, s, variant=variant, cfg=ref_cfg)
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dt).itemsize]
    np.testing.assert_array_equal(cp.asnumpy(y_a).view(u), cp.asnumpy(y_b).view(u))


def test_gpu_xs_table_entries_exact():
    # the committed table's XS entries (if any) through the public API, integer-valued data
    for (name, L), entry in sorted(_cuda.ROW_TUNED.items()):
        if not _cuda.tuned_cfg(entry)[5]:
            continue
        n = 1 << L
        rows = max(1, (1 << 18) // n)
        k = np.random.default_rng(L).integers(-16, 17, size=(rows, n))
        y = fwht(cp.asarray(k.astype(name)))
        np.testing.assert_array_equal(cp.asnumpy(y), _ref_int(k).astype(name))


# ---- pipelined persistent kernel (PIPE = 1, 2): every PIPE candidate of the sweep -------------
# fwht_rows_pipe loops each CTA over several tiles and stages the next tile with cp.async; the
# butterflies and their order are those of the same (TB, CB, MINB, XS) with PIPE = 0, so float
# results must be bit-identical to it, and integer-valued inputs exact. The grid is capped
# (``max_grid``) so that every CTA transforms several tiles, the last one partial.
def _pipe_cases():  # the split candidates (CSB = 1) are in test_gpu_split_*
    return _candidate_cases(12, lambda cfg: cfg[6] and not cfg[2], lambda cfg: f"-pipe{cfg[6]}")


_PIPE_CASES = _pipe_cases()


def _pipe_ref_cfg(cfg):
    return tuple(cfg[:6]) + (0,)


@pytest.fixture(scope="module")
def _pipe_compiled(request):
    return _compile_selected(request, "test_gpu_pipe_exact_and_bit_identical", _pipe_ref_cfg)


def test_pipe_cases_cover_the_target_sizes():
    got = {(np.dtype(p.values[0]).name, p.values[1], p.values[2]) for p in _PIPE_CASES}
    assert ("float32", 15, (9, 4, 0, False, 0, True, 2)) in got
    assert ("float64", 14, (9, 4, 0, False, 0, True, 2)) in got
    assert ("int64", 14, (9, 4, 0, False, 0, True, 2)) in got
    assert ("float16", 15, (10, 2, 0, False, 0, False, 1)) in got
    assert ("float16", 12, (7, 2, 0, False, 0, 3, 1)) in got


@pytest.mark.parametrize("dt, L, cfg, variant", _PIPE_CASES)
def test_gpu_pipe_exact_and_bit_identical(_pipe_compiled, dt, L, cfg, variant):
    n = 1 << L
    _, _, _, logv, _ = _cuda._TYPES[np.dtype(dt) if np.dtype(dt).kind == "f" else np.dtype(np.int64)]
    lt = logv + cfg[0] + cfg[1]
    tile_rows = max(1, 1 << (lt - L))
    rows = 7 * tile_rows + 1  # 8 tiles (the last one partial when a tile holds 2 rows)
    cap = 3  # 3 CTAs: 2 tiles each, then 2 leftover tiles drawn
    rng = np.random.default_rng(2000 + L)
    # in place: each CTA reads a tile before it writes it
    _assert_exact_untouched_in_place(rng.integers(-16, 17, size=(rows, n)), dt, L, variant, cfg, max_grid=cap)
    if np.dtype(dt).kind == "i":
        return
    # random data, "ortho" scale: bit-identical to the same configuration with PIPE = 0
    _assert_bit_identical(rng, rows, L, dt, variant, cfg, _pipe_ref_cfg(cfg), max_grid=cap)


def _assert_exact_untouched_in_place(k, dt, L, variant, cfg, max_grid=None):
    """The row kernel ``cfg`` on integer rows ``k``: equal to the exact transform (float16:
    rounded once), the input untouched, and the same result in place (out aliases the input)."""
    want = _ref_int(k)
    x = cp.asarray(k.astype(dt))
    x0 = x.copy()
    y = _cuda.transform_contiguous(cp, x, L, 1.0, variant=variant, cfg=cfg, max_grid=max_grid)
    assert cp.array_equal(x, x0)  # input untouched
    if np.dtype(dt).kind == "i":
        np.testing.assert_array_equal(cp.asnumpy(y), want)
    else:
        np.testing.assert_array_equal(cp.asnumpy(y), want.astype(dt))  # float16: one rounding
    xi = x.copy()
    _cuda.transform_contiguous(cp, xi, L, 1.0, out=xi, variant=variant, cfg=cfg, max_grid=max_grid)
    assert cp.array_equal(xi, y)


def test_gpu_pipe_full_grid_exact():
    # without the cap: as many CTAs as fit at once, more tiles than CTAs (float32 2**15 PIPE=2,
    # float16 2**15 PIPE=1), through transform_contiguous
    for dt, L, cfg, v in ((np.float32, 15, (9, 4, 0, False, 0, True, 2), "plain"),
                          (np.float16, 15, (10, 2, 0, False, 0, False, 1), "mma"),
                          (np.float64, 14, (9, 4, 0, False, 0, True, 2), "plain"),
                          (np.float64, 15, (9, 4, 1, False, 0, True, 2), "plain"),   # split
                          (np.float16, 15, (9, 2, 1, False, 0, 5, 1), "mma")):       # split
        rows = 400  # > the resident CTAs (132 here): every CTA loops over 3 or more tiles
        k = np.random.default_rng(L).integers(-7, 8, size=(rows, 1 << L), dtype=np.int8)
        y = _cuda.transform_contiguous(cp, cp.asarray(k.astype(dt)), L, 1.0, variant=v, cfg=cfg)
        np.testing.assert_array_equal(cp.asnumpy(y), _ref_int(k.astype(np.int64)).astype(dt))


def test_gpu_pipe_table_entries_exact():
    # the committed table's pipelined entries (if any) with the plan fwht uses; the grid is
    # capped at 5 CTAs so that each CTA transforms several tiles (stages the next one)
    for (name, L), entry in sorted(_cuda.ROW_TUNED.items()):
        if not _cuda.tuned_cfg(entry)[6]:
            continue
        n = 1 << L
        rows = 3 * max(1, (1 << 20) // n) + 1
        k = np.random.default_rng(L).integers(-16, 17, size=(rows, n))
        y = _cuda.transform_contiguous(cp, cp.asarray(k.astype(name)), L, 1.0, max_grid=5)
        np.testing.assert_array_equal(cp.asnumpy(y), _ref_int(k).astype(name))


# ---- split kernel (PIPE with CSB = 1): a row of 2**(LT+1) over the 2 CTAs of a cluster ---------
# fwht_rows_pipe_split: each CTA stages its own half-row, reads the partner's half from the
# partner's shared memory (DSMEM) and starts with the top index bit; the butterfly order differs
# from every other kernel's, so random data are checked against the a-priori bound, and
# integer-valued data exactly. The grid is capped at 5 CTAs, rounded down to 2 clusters: every
# CTA loops over several tiles.
def _split_cases():
    return _candidate_cases(_cuda.SPLIT_MIN_L, lambda cfg: cfg[6] and cfg[2], lambda cfg: f"-split{cfg[6]}", above=1)


_SPLIT_CASES = _split_cases()


@pytest.fixture(scope="module")
def _split_compiled(request):
    return _compile_selected(request, "test_gpu_split_exact_in_place_and_within_bound", lambda cfg: cfg)


def test_split_cases_cover_the_target_sizes():
    got = {(np.dtype(p.values[0]).name, p.values[1], p.values[2], p.values[3]) for p in _SPLIT_CASES}
    assert ("float64", 15, (9, 4, 1, False, 0, True, 2), "plain") in got
    assert ("int64", 15, (9, 4, 1, False, 0, True, 2), "plain") in got
    assert ("float32", 15, (8, 4, 1, False, 0, True, 2), "plain") in got
    assert ("float16", 15, (9, 2, 1, False, 0, 5, 1), "mma") in got
    assert ("float16", 15, (9, 2, 1, False, 0, 5, 1), "plain") in got


@pytest.mark.parametrize("dt, L, cfg, variant", _SPLIT_CASES)
def test_gpu_split_exact_in_place_and_within_bound(_split_compiled, dt, L, cfg, variant):
    n = 1 << L
    rows = 5  # 10 tiles over 4 CTAs: 3, 3, 2 and 2 tiles each
    probe = cp.empty((rows, n), dtype=dt)
    assert _cuda.row_launch(probe, L, variant == "mma", cfg, max_grid=5)[2] == 4  # the cap applies: 2 clusters
    rng = np.random.default_rng(3000 + L)
    # in place: each half-row is read from global memory only by the CTA that writes it
    _assert_exact_untouched_in_place(rng.integers(-16, 17, size=(rows, n)), dt, L, variant, cfg, max_grid=5)
    if np.dtype(dt).kind == "i":
        return
    xr = (rng.random((rows, n)) - 0.5).astype(dt)
    xd = xr.astype(np.float64)
    s = n**-0.5
    yr = cp.asnumpy(_cuda.transform_contiguous(cp, cp.asarray(xr), L, s, variant=variant, cfg=cfg))
    _assert_within_bound(yr.astype(np.float64), fwht(xd, norm="ortho"),
                         np.abs(xd).sum(axis=1, keepdims=True) * s, dt, L, 1)


def test_gpu_split_grid_from_driver():
    # the split kernel's persistent grid comes from cuOccupancyMaxActiveClusters (ctypes)
    dt = np.dtype(np.float64)
    cfg = (9, 4, 1, False, 0, True, 2)
    name = _cuda._row_name(dt, 15, cfg=cfg)
    smem = _cuda.pipe_smem(15, 1, 8, 9, 4, True, 2)
    k = _cuda._kernel(dt.str, cp.cuda.Device().id, name, smem, 15)
    clusters = _cuda._active_clusters(k, 1 << 9, smem)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    # one 512-thread CTA per SM (192 KiB of shared memory): the driver pairs most SMs
    assert clusters is not None and sms // 4 <= clusters <= sms // 2
    assert _cuda._pipe_grid(dt.str, cp.cuda.Device().id, name, smem, 15, 9) == 2 * clusters


def _ref_sparse(n, idx, vals):
    """Exact natural-order WHT of a vector of length n with the entries ``vals`` at ``idx``
    (all others 0), independent of ozgemm: y_i = sum_j vals_j (-1)^popcount(i & idx_j)."""
    i = np.arange(n, dtype=np.int64)
    y = np.zeros(n, dtype=np.int64)
    for j, v in zip(idx, vals):
        y += v * (1 - 2 * (np.bitwise_count(i & int(j)) & 1).astype(np.int64))
    return y


@pytest.mark.parametrize("dt, L", [(np.float32, 16), (np.float32, 25)])
def test_gpu_split_first_pass_exact(dt, L):
    # the table's split entry float32 2**16 as one pass and as the first pass of a 2-pass plan
    # (2**25: split row pass + one strided pass), through the public API, out of place and in
    # place; sparse integer rows (||x||_1 <= 96: every sum exact). (float64 2**15, the other
    # split entry, runs the dedicated fwht_rows_d15s: test_gpu_d15s_*; the
    # split kernel itself stays tested with forced configurations above.)
    plan = _cuda.plan(L, dt)
    assert _cuda.row_launch(cp.empty((1, 1 << 16), dtype=dt), 16)[0].startswith("fwht_rows_pipe_split<")
    assert plan[0] == ("rows", 16) and len(plan) == (1 if L < 20 else 2)
    _assert_sparse_rows_exact(dt, L, 4000 + L, -6, 7)


def _assert_sparse_rows_exact(dt, L, seed, lo, hi):
    """Two rows of 2**L with 16 random integers in [lo, hi) each (all other entries 0), through
    the public API out of place and in place: equal to the exact sparse WHT (``_ref_sparse``)."""
    n = 1 << L
    rng = np.random.default_rng(seed)
    k = np.zeros((2, n), dtype=np.int64)
    want = np.empty((2, n), dtype=np.int64)
    for r in range(2):
        idx = rng.choice(n, size=16, replace=False)
        vals = rng.integers(lo, hi, size=16)
        k[r, idx] = vals
        want[r] = _ref_sparse(n, idx, vals)
    x = cp.asarray(k.astype(dt))
    y = fwht(x)
    np.testing.assert_array_equal(cp.asnumpy(y).astype(np.int64), want)
    fwht(x, out=x)
    np.testing.assert_array_equal(cp.asnumpy(x).astype(np.int64), want)


# ---- dedicated row kernels (ROW_DEDICATED): float16 2**15, fwht_rows_h15 ---------------------
# Its own order of butterfly levels (mma front end, then two layouts): integer rows exactly
# (one float16 rounding), random rows within the a-priori bound (test_gpu_random_within_bound,
# L = 15), here also with every CTA looping (grid capped), in place, input untouched, and as the
# first pass of the 2**24 plan.
@pytest.mark.parametrize("cap", [None, 5])
def test_gpu_h15_dedicated_exact_in_place(cap):
    rows = 17 if cap else 300  # capped: 5 CTAs with 4, 4, 3, 3, 3 rows; else > 132 CTAs
    x = cp.zeros((rows, 1 << 15), dtype=cp.float16)
    name, smem, grid, threads = _cuda.row_launch(x, 15, mma=True, max_grid=cap)
    assert name == "fwht_rows_h15<1>" and threads == 512 and smem == 6 << 15
    assert grid == (5 if cap else min(rows, cp.cuda.Device().attributes["MultiProcessorCount"]))
    k = np.random.default_rng(15).integers(-64, 65, size=(rows, 1 << 15))  # float32 sums exact
    _assert_exact_untouched_in_place(k, np.float16, 15, "mma", None, max_grid=cap)
    # "auto" takes it too, and the plain variant does not; partial rows are refused
    assert _cuda.auto_mma(np.float16, 15)
    with pytest.raises(ValueError, match="whole rows"):
        _cuda.row_launch(cp.zeros(3 << 14, dtype=cp.float16), 15, mma=True)
    assert _cuda.row_launch(x, 15, mma=False)[0].startswith("fwht_rows_pipe<")


def test_gpu_h15_dedicated_scaled_within_bound():
    # random rows, "ortho" and "forward" scales, against the CPU float64 transform
    rng = np.random.default_rng(16)
    x = (rng.random((40, 1 << 15)) - 0.5).astype(np.float16)
    xd = x.astype(np.float64)
    for norm, c in (("ortho", 2.0**-7.5), ("forward", 2.0**-15)):
        y = cp.asnumpy(fwht(cp.asarray(x), norm=norm)).astype(np.float64)
        ref = fwht(xd, norm=norm)
        l1 = np.abs(xd).sum(axis=1, keepdims=True) * c
        # the result itself may be subnormal in float16 ("forward": |y| ~ 2**-15 ||x||_2)
        err = np.abs(y - ref)
        bound = ((15 + 2) * 2.0**-24 + 2.0**-11) * l1 * 1.01 + 2.0**-25
        assert np.all(err <= bound), float((err / bound).max())


# ---- dedicated row kernels (ROW_DEDICATED): float64 2**15, fwht_rows_d15s ---------------------
# One CTA per row, the top butterfly last (its own order of the 15 levels): integer rows exactly,
# every CTA looping (grid capped) and more rows than CTAs, in place, input untouched; rows whose
# sums round (41-bit integers) within the a-priori bound against an exact int64 reference; and
# as the first pass of the float64 2**24 plan.
def _wht_int64(k):
    """Exact natural-order WHT of the int64 rows of k (numpy butterflies, |sums| < 2**63)."""
    r = k.astype(np.int64).copy()
    n = r.shape[-1]
    h = 1
    while h < n:
        r = r.reshape(-1, n // (2 * h), 2, h)
        a, b = r[:, :, 0, :].copy(), r[:, :, 1, :].copy()
        r[:, :, 0, :], r[:, :, 1, :] = a + b, a - b
        h *= 2
    return r.reshape(k.shape)


@pytest.mark.parametrize("cap", [None, 5])
def test_gpu_d15s_dedicated_exact_in_place(cap):
    rows = 17 if cap else 300  # capped: 5 CTAs, 3 rows each, then 2 leftover rows; else > 132 CTAs
    x = cp.zeros((rows, 1 << 15), dtype=cp.float64)
    name, smem, grid, threads = _cuda.row_launch(x, 15, max_grid=cap)
    assert name == "fwht_rows_d15s<1>" and threads == 512 and smem == 192 * 1024 + 16
    assert grid == (5 if cap else min(rows, cp.cuda.Device().attributes["MultiProcessorCount"]))
    k = np.random.default_rng(1515).integers(-(1 << 20), 1 << 20, size=(rows, 1 << 15))  # sums < 2**36
    _assert_exact_untouched_in_place(k, np.float64, 15, "auto", None, max_grid=cap)
    assert _cuda.row_launch(x, 15, mma=False)[0] == name  # "plain" takes it too (CUDA cores)
    with pytest.raises(ValueError, match="whole rows"):
        _cuda.row_launch(cp.zeros(3 << 14, dtype=cp.float64), 15)


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_gpu_d15s_dedicated_rounding_within_bound(norm):
    # 48-bit integers: partial sums pass 2**53 from about level 10 on, so the float64 adds round
    # (|sums| < 2**63: the int64 reference is exact)
    rows = 40
    assert _cuda.row_launch(cp.empty((rows, 1 << 15)), 15)[0] == "fwht_rows_d15s<1>"
    k = np.random.default_rng(1516).integers(-(1 << 48), 1 << 48, size=(rows, 1 << 15))
    want = _wht_int64(k)
    y = cp.asnumpy(fwht(cp.asarray(k.astype(np.float64)), norm=norm))
    c = {"backward": 1.0, "ortho": 2.0**-7.5, "forward": 2.0**-15}[norm]
    l1 = np.abs(k).sum(axis=1, keepdims=True).astype(np.float64) * c
    bound = (15 + 2) * 2.0**-53 * l1 * 1.01
    if norm == "ortho":  # reference rounded twice (to float64, times c): allow 2 u |ref| more
        ref = want.astype(np.float64) * c
        err = np.abs(y - ref)
        assert np.all(err <= bound + 2.0**-52 * np.abs(ref)), float((err / bound).max())
    else:  # c a power of two: y / c is an integer (> 2**53 or exact): the error exactly, in int64
        err = np.abs((y / c).astype(np.int64) - want).astype(np.float64) * c
        assert np.all(err <= bound), float((err / bound).max())
        assert np.any(err > 0)  # the rounding path is exercised (some outputs are not exact)


@pytest.mark.parametrize("dt, lo, hi", [(np.float16, -6, 7), (np.float64, -(1 << 30), 1 << 30)])
def test_gpu_dedicated_first_pass_of_2_24_exact(dt, lo, hi):
    # 2**24: the plan's row pass is 2**15 (the dedicated kernel: h15 / d15s), then one strided
    # pass; sparse integer rows (float16: ||x||_1 <= 96, every sum exact; float64: up to 2**34)
    L = 24
    n = 1 << L
    assert _cuda.plan(L, dt)[0] == ("rows", 15)
    assert _cuda.row_launch(cp.empty((2, n), dtype=dt), 15, dt == np.float16)[0] == (
        "fwht_rows_h15<1>" if dt == np.float16 else "fwht_rows_d15s<1>")
    # (seeds 4024 / 4025: fixed data, one per dtype)
    _assert_sparse_rows_exact(dt, L, 4024 if dt == np.float16 else 4025, lo, hi)


# ---- leftover rows and tiles: the ticket counter (draw_leftover) -------------------------------
# fwht_rows_h15 (float16 2**15), fwht_rows_d15s (float64 2**15) and fwht_rows_pipe (float32
# 2**15): rows b + k G statically,
# then one ticket per CTA for the ntiles - q G leftover rows, whichever CTA draws it: every row
# count (q = 0 is not reachable: the grid is at most one CTA per row), exact results written
# into a NaN-filled output (a skipped row stays NaN), the stream's counter back at its start
# after each launch, a counter left at any value (the draws are modulo G), and two streams with
# their own counters.
@pytest.mark.parametrize("dt, variant, kernel", [(np.float16, "mma", "fwht_rows_h15<1>"),
                                                 (np.float64, "plain", "fwht_rows_d15s<1>"),
                                                 (np.float32, "plain", "fwht_rows_pipe<")])
def test_gpu_dedicated_leftover_rows_and_counter(dt, variant, kernel):
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    k_all = np.random.default_rng(1517).integers(-7, 8, size=(2 * sms + 9, 1 << 15))
    for rows, cap in ((1, None), (sms - 1, None), (sms, None), (sms + 1, None), (sms + 68, None),
                      (2 * sms + 9, None), (17, 5), (23, 7)):
        x = cp.asarray(k_all[:rows].astype(dt))
        assert _cuda.row_launch(x, 15, mma=variant == "mma", max_grid=cap)[0].startswith(kernel)
        y = cp.full(x.shape, cp.nan, dtype=dt)
        _cuda.transform_contiguous(cp, x, 15, 1.0, out=y, variant=variant, max_grid=cap)
        np.testing.assert_array_equal(cp.asnumpy(y), _ref_int(k_all[:rows]).astype(dt))
        assert int(_cuda.row_tickets()[0]) == 0
    x = cp.asarray(k_all.astype(dt))  # a counter left at any value: every row still done once
    for start in (1, sms - 1, sms, 12345):
        _cuda.row_tickets()[0] = start
        y = cp.full(x.shape, cp.nan, dtype=dt)
        _cuda.transform_contiguous(cp, x, 15, 1.0, out=y, variant=variant)
        np.testing.assert_array_equal(cp.asnumpy(y), _ref_int(k_all).astype(dt))
    _cuda.row_tickets()[0] = 0
    x = cp.asarray(k_all.astype(dt))
    want = _ref_int(k_all).astype(dt)
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
    cp.cuda.Device().synchronize()  # x is written on the default stream
    outs = []
    for s in streams:
        with s:
            outs.append([_cuda.transform_contiguous(cp, x, 15, 1.0, variant=variant) for _ in range(3)])
    for s, ys in zip(streams, outs):
        s.synchronize()
        with s:
            assert int(_cuda.row_tickets()[0]) == 0
        for y in ys:
            np.testing.assert_array_equal(cp.asnumpy(y), want)

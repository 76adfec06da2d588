"""GPU engine: bit-identical to the CPU engine (==), cupy in/out, bounds kept.

Skipped cleanly where CuPy or a CUDA GPU is missing (CI). Run on an H200 before resolving.
"""
import dataclasses

import numpy as np
import pytest

import ozgemm
from ozgemm._xp import gpu_available
from ozgemm.verify.inputs import phi_matrix, phi_operands

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA GPU")]

if gpu_available():
    import cupy as cp


def phi(rng, m, k, n, p, dt=np.float64):
    return phi_operands(rng, m, k, n, p, dt)


@pytest.mark.parametrize("contract", ["fp64", "fp64-fast", "fp32", "fp32-fast"])
@pytest.mark.parametrize("shape", [(7, 68, 61), (1, 1, 1), (33, 100, 17), (130, 257, 129), (256, 512, 384)])
@pytest.mark.parametrize("p", [0.5, 2, 3])
def test_bit_identical_to_cpu(contract, shape, p):
    rng = np.random.default_rng(hash((contract, shape, p)) % 2**32)
    dt = ozgemm.load_contract(contract).fmt.dtype
    a, b = phi(rng, *shape, p, dt)
    c_cpu, pc = ozgemm.matmul(a, b, contract=contract, return_plan=True)
    c_gpu, pg = ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract=contract, return_plan=True)
    assert isinstance(c_gpu, cp.ndarray) and c_gpu.dtype == dt
    assert pc[0].n_moduli == pg[0].n_moduli and pc[0].beta == pg[0].beta
    assert np.array_equal(c_cpu.view(np.uint8), cp.asnumpy(c_gpu).view(np.uint8))


def test_bounds_against_exact_reference():
    from ozgemm.verify.reference import exact_product, measure

    rng = np.random.default_rng(5)
    for p in (0.5, 1, 2, 3):
        a, b = phi(rng, 40, 300, 30, p)
        c = cp.asnumpy(ozgemm.matmul(cp.asarray(a), cp.asarray(b)))
        assert measure(c, exact_product(a, b), ozgemm.load_contract("fp64")).breaches == 0


def test_large_k_blocks_and_edges():
    rng = np.random.default_rng(9)
    a, b = phi(rng, 3, 2**17 + 3, 5, 1.0)
    assert np.array_equal(ozgemm.matmul(a, b), cp.asnumpy(ozgemm.matmul(cp.asarray(a), cp.asarray(b))))
    # subnormals, cancellation, overflow, specials, batches, 1-D
    x = np.array([[5e-324, 1e308, -1e308, 1.0], [np.inf, 0.0, 1.0, 2.0], [3.0, -2.0**-1060, 1e-300, 7.0]])
    y = np.array([[1.0, 0.5], [1.0, 2.0], [1.0, 1e-300], [0.25, -3.0]])
    want = ozgemm.matmul(x, y)
    got = cp.asnumpy(ozgemm.matmul(cp.asarray(x), cp.asarray(y)))
    assert np.array_equal(want, got, equal_nan=True)
    A = rng.standard_normal((3, 5, 6))
    v = rng.standard_normal(6)
    assert np.array_equal(ozgemm.matmul(A, v), cp.asnumpy(ozgemm.matmul(cp.asarray(A), cp.asarray(v))))


def test_repeatable_and_tiled():
    from ozgemm.kernels import get_backend

    rng = np.random.default_rng(3)
    a, b = phi(rng, 300, 200, 100, 1.0)
    ag, bg = cp.asarray(a), cp.asarray(b)
    c1 = ozgemm.matmul(ag, bg)
    eng = get_backend("cuda")
    old = eng.memory_fraction
    try:
        eng.memory_fraction = 1e-9  # forces 16-row tiles
        c2 = ozgemm.matmul(ag, bg)
    finally:
        eng.memory_fraction = old
    assert cp.array_equal(c1, c2)
    assert np.array_equal(cp.asnumpy(c1), ozgemm.matmul(a, b))


@pytest.mark.parametrize("tiles", [2, 3])
@pytest.mark.parametrize("user_stream", [False, True])
def test_overlapped_row_tiles_bit_identical(tiles, user_stream):
    """Row tiles of A on two side streams (residues/reconstruction of one tile overlapping the
    GEMMs of another): the CPU engine's bits, fp64 and fp32, odd row counts, also when the
    caller works on its own non-blocking stream (the result is complete on that stream; the
    cuBLAS handle follows the current stream)."""
    from ozgemm.kernels.cuda.backend import CudaBackend

    eng = CudaBackend(overlap_tiles=tiles, overlap_min_rows=64)
    rng = np.random.default_rng(40 + tiles)
    a, b = phi(rng, 203, 150, 77, 1.0)
    for contract, dt in (("fp64", np.float64), ("fp32", np.float32)):
        x, y = a.astype(dt), b.astype(dt)
        want = ozgemm.matmul(x, y, contract=contract)
        if user_stream:
            st = cp.cuda.Stream(non_blocking=True)
            with st:
                xg, yg = cp.asarray(x), cp.asarray(y)
                got = ozgemm.matmul(xg, yg, contract=contract, engine=eng)
                host = cp.asnumpy(got, stream=st)  # ordered on st after the product
            st.synchronize()
        else:
            host = cp.asnumpy(ozgemm.matmul(cp.asarray(x), cp.asarray(y), contract=contract, engine=eng))
        assert np.array_equal(want.view(np.uint8), host.view(np.uint8)), (contract, tiles, user_stream)


@pytest.mark.parametrize("rows", [4, 12, 64])
def test_int8_gemm_row_chunks_exact(rows):
    """Large outputs run as several cuBLAS calls over chunks of rows of A: every chunking
    gives the exact product (int64 numpy reference) and the whole matmul keeps its bits."""
    from ozgemm.kernels.cuda.backend import CudaBackend

    rng = np.random.default_rng(rows)
    a8 = rng.integers(-128, 128, size=(3, 72, 132), dtype=np.int8)
    b8 = rng.integers(-128, 128, size=(3, 80, 132), dtype=np.int8)  # np_ = 80 >= rows: chunked
    want = np.einsum("qik,qjk->qij", a8.astype(np.int64), b8.astype(np.int64))
    a, b = phi(rng, 70, 130, 50, 1.0)
    c_whole = ozgemm.matmul(cp.asarray(a), cp.asarray(b))
    eng = CudaBackend(gemm_split_out=16, gemm_rows=rows)
    c = cp.empty((3, 72, 80), dtype=cp.int32)
    eng._gemm_batched_i32(cp.asarray(a8), cp.asarray(b8), c)
    assert np.array_equal(cp.asnumpy(c).astype(np.int64), want)
    assert cp.array_equal(ozgemm.matmul(cp.asarray(a), cp.asarray(b), engine=eng), c_whole)
    assert np.array_equal(cp.asnumpy(c_whole), ozgemm.matmul(a, b))


def test_mixed_libraries_rejected():
    with pytest.raises(TypeError, match="mixed"):
        ozgemm.matmul(np.ones((2, 2)), cp.ones((2, 2)))


def test_fused_stats_and_width_match_numpy():
    from ozgemm.kernels import get_backend
    from ozgemm.precision.planner import plan_scalars, required_beta
    from ozgemm.precision.stats import row_stats

    eng = get_backend("cuda")
    cpu = get_backend("cpu")
    rng = np.random.default_rng(11)
    for spread in (0, 10, 60):
        x = rng.standard_normal((37, 300)) * np.exp2(rng.integers(-spread, spread + 1, (37, 300)))
        x[3] = 0.0
        x[5, :4] = [5e-324, -2.0 ** -1050, 1e308, 0.0]
        y = rng.standard_normal((300, 23)) * np.exp2(rng.integers(-spread, spread + 1, (300, 23)))
        s_np, s_gpu = row_stats(x, np), eng.row_stats(cp.asarray(x))
        for f in ("E", "width", "norm1", "q", "zero_row", "n1_int", "n2_int", "qsum"):
            assert np.array_equal(getattr(s_np, f), cp.asnumpy(getattr(s_gpu, f))), f
        t_np, t_gpu = row_stats(y.T, np), eng.row_stats(cp.asarray(y.T))
        for f in ("E", "width", "norm1", "q", "zero_row", "n1_int", "n2_int", "qsum"):
            assert np.array_equal(getattr(t_np, f), cp.asnumpy(getattr(t_gpu, f))), f
        lb_np = cpu.gemm_exact(s_np.q, t_np.q)
        lb_gpu = eng.gemm_exact(s_gpu.q, t_gpu.q)
        assert np.array_equal(lb_np, cp.asnumpy(lb_gpu))
        b_np = int(required_beta(s_np, t_np, lb_np, 53, 300, 2.0 ** -53, np))
        b_gpu = int(eng.plan_scalars(s_gpu, t_gpu, lb_gpu, 53, 300, 2.0 ** -53)[0])
        assert b_np == b_gpu
        for bits, kk in ((53, 300), (24, 300), (107, 1200)):  # all six planner scalars, int32 and int64 lb
            want = plan_scalars(s_np, t_np, lb_np, bits, kk, 2.0 ** -bits, np)
            for lb_dev in (lb_gpu, lb_gpu.astype(cp.int64)):
                got = cp.asnumpy(eng.plan_scalars(s_gpu, t_gpu, lb_dev, bits, kk, 2.0 ** -bits))
                assert np.array_equal(want, got), (bits, want, got)


def test_plan_scalars_layouts_match_numpy():
    """The fused planner scalars (four columns per thread) against the numpy planner on the
    layouts the vector path does not take: a product view whose rows are not 16-byte aligned
    (vec = 0), partial column quads (n = 4 q + 1..3), and more rows than the grid holds (the
    grid-stride loop: 2600 rows, 1027 columns = 2 blocks of 256 quads, grid rows capped at
    1024); spreads that reach every regime."""
    from ozgemm.kernels import get_backend
    from ozgemm.precision.planner import plan_scalars
    from ozgemm.precision.stats import row_stats

    eng = get_backend("cuda")
    cpu = get_backend("cpu")
    rng = np.random.default_rng(12)
    for m, k, n, spread in ((2600, 40, 1027, 30), (50, 64, 37, 0), (61, 33, 18, 60)):
        x = rng.standard_normal((m, k)) * np.exp2(rng.integers(-spread, spread + 1, (m, k)))
        y = rng.standard_normal((k, n)) * np.exp2(rng.integers(-spread, spread + 1, (k, n)))
        x[1] = 0.0
        y[:, 2] = 0.0
        s_np, t_np = row_stats(x, np), row_stats(y.T, np)
        s_gpu, t_gpu = eng.row_stats(cp.asarray(x)), eng.row_stats(cp.asarray(y.T))
        lb_np = cpu.gemm_exact(s_np.q, t_np.q)
        lb_gpu = eng.gemm_exact(s_gpu.q, t_gpu.q)
        assert lb_gpu.dtype == cp.int32
        # columns 1.. of the product: rows start 4 bytes past a 16-byte boundary
        t1, t1g = (dataclasses.replace(st, **{f: getattr(st, f)[1:] for f in
                                              ("width", "norm1", "n1_int", "n2_int", "qsum", "q")})
                   for st in (t_np, t_gpu))
        for bits, kk in ((53, k), (24, k), (113, 4 * k)):
            want = plan_scalars(s_np, t_np, lb_np, bits, kk, 2.0 ** -bits, np)
            got = cp.asnumpy(eng.plan_scalars(s_gpu, t_gpu, lb_gpu, bits, kk, 2.0 ** -bits))
            assert np.array_equal(want, got), (m, n, bits, want, got)
            want = plan_scalars(s_np, t1, lb_np[:, 1:], bits, kk, 2.0 ** -bits, np)
            got = cp.asnumpy(eng.plan_scalars(s_gpu, t1g, lb_gpu[:, 1:], bits, kk, 2.0 ** -bits))
            assert np.array_equal(want, got), (m, n, bits, "unaligned", want, got)


def test_plan_scalars_small_products_match_numpy():
    """Many tiny products, so that single entries decide the maximum width: each entry's width
    (plan_scalars_i32's need_bits, every regime: exact rows/columns, zero rows/columns, ties of
    widths, wide spreads) against the numpy planner, for several promised bit counts."""
    from ozgemm.kernels import get_backend
    from ozgemm.precision.planner import plan_scalars
    from ozgemm.precision.stats import row_stats

    eng = get_backend("cuda")
    cpu = get_backend("cpu")
    rng = np.random.default_rng(31)
    for trial in range(300):
        m, k, n = (int(v) for v in rng.integers(1, 6, 3))
        spread = int(rng.choice([0, 3, 20, 200]))
        x = rng.standard_normal((m, k)) * np.exp2(rng.integers(-spread, spread + 1, (m, k)))
        y = rng.standard_normal((k, n)) * np.exp2(rng.integers(-spread, spread + 1, (k, n)))
        if trial % 3 == 0:  # exact (integer-valued, short) rows and columns: small widths
            x[0] = np.round(x[0] * 4)
            y[:, -1] = np.round(y[:, -1] * 8)
        if trial % 7 == 0:
            x[-1] = 0.0
        s_np, t_np = row_stats(x, np), row_stats(y.T, np)
        s_gpu, t_gpu = eng.row_stats(cp.asarray(x)), eng.row_stats(cp.asarray(y.T))
        lb_np = cpu.gemm_exact(s_np.q, t_np.q)
        lb_gpu = eng.gemm_exact(s_gpu.q, t_gpu.q)
        for bits in (53, 24, 113, 2):
            want = plan_scalars(s_np, t_np, lb_np, bits, k, 2.0 ** -bits, np)
            got = cp.asnumpy(eng.plan_scalars(s_gpu, t_gpu, lb_gpu, bits, k, 2.0 ** -bits))
            assert np.array_equal(want, got), (trial, m, k, n, bits, want, got)


def _td_at_or_above_lo(s, t, lb, bits, k):
    """Fraction of entries whose t_d (planner.required_beta) is >= min(w_i, v_j): the entries
    for which plan_scalars_i32 takes its regime pass instead of t_d alone."""
    from ozgemm.precision.planner import _ceil_log2_ratio
    from ozgemm.precision.stats import LB_BITS

    u = 2.0 ** -bits
    fac = (1.0 + u) * (1.0 + 2.0 ** -40)
    R = np.ldexp(lb.astype(np.float64), -(bits - 1) - 2 * LB_BITS)
    z = (t.norm1[None, :] + s.norm1[:, None] + k * 2.0 ** (1 - bits)) * fac
    td = np.where(R > 0, _ceil_log2_ratio(z, np.where(R > 0, R, 1.0), np) - 1, 1 << 40)
    return float((td >= np.minimum(s.width[:, None], t.width[None, :])).mean())


def test_plan_scalars_fast_and_regime_entries_mixed():
    """plan_scalars_i32 takes t_d alone where t_d < min(w_i, v_j) and the regime value
    elsewhere (v5): products whose rows and columns mix both kinds inside one column quad and
    one warp (exact integer rows/columns of small width among wide random ones, zero rows), so
    that the maximum comes from either kind, against the numpy planner."""
    from ozgemm.kernels import get_backend
    from ozgemm.precision.planner import plan_scalars
    from ozgemm.precision.stats import row_stats

    eng = get_backend("cuda")
    cpu = get_backend("cpu")
    rng = np.random.default_rng(41)
    fractions = []
    for trial in range(40):
        m, k, n = int(rng.integers(30, 90)), int(rng.integers(8, 200)), int(rng.integers(5, 70))
        spread = int(rng.choice([0, 4, 30]))
        x = phi_matrix(rng, (m, k), 0.5) * np.exp2(rng.integers(-spread, spread + 1, (m, k)))
        y = phi_matrix(rng, (k, n), 0.5) * np.exp2(rng.integers(-spread, spread + 1, (k, n)))
        p_exact = float(rng.choice([0.0, 0.05, 0.3]))
        rows = rng.random(m) < p_exact
        cols = rng.random(n) < p_exact
        x[rows] = np.round(x[rows] * float(rng.choice([1, 8, 2.0 ** 20])))
        y[:, cols] = np.round(y[:, cols] * float(rng.choice([1, 8, 2.0 ** 20])))
        if trial % 5 == 0:
            x[rng.integers(0, m)] = 0.0
        s_np, t_np = row_stats(x, np), row_stats(y.T, np)
        s_gpu, t_gpu = eng.row_stats(cp.asarray(x)), eng.row_stats(cp.asarray(y.T))
        lb_np = cpu.gemm_exact(s_np.q, t_np.q)
        lb_gpu = eng.gemm_exact(s_gpu.q, t_gpu.q)
        for bits in (53, 24, 113):
            fractions.append(_td_at_or_above_lo(s_np, t_np, lb_np, bits, k))
            want = plan_scalars(s_np, t_np, lb_np, bits, k, 2.0 ** -bits, np)
            got = cp.asnumpy(eng.plan_scalars(s_gpu, t_gpu, lb_gpu, bits, k, 2.0 ** -bits))
            assert np.array_equal(want, got), (trial, m, k, n, bits, want, got)
    # both passes were exercised, and products where they mix
    assert sum(f == 0.0 for f in fractions) >= 5 and sum(f == 1.0 for f in fractions) >= 5
    assert sum(0.0 < f < 0.5 for f in fractions) >= 10


@pytest.mark.parametrize("layout", ["rows", "columns", "components"])
def test_row_stats_long_rows_match_numpy(layout):
    """Rows longer than the kernel's register cache (16 entries x 512 threads) and than one
    streaming chunk (2048 float64 / 4096 float32 entries), float32 and float64, subnormals and extremes, through every
    statistics kernel: C-contiguous rows (streaming kernels), column-major rows (read through
    the columns; float32 transposed first) and (2, r, k) components (one block per row, with
    the register cache up to 8192 entries); and the NaN/Inf flag of each."""
    from ozgemm.kernels import get_backend
    from ozgemm.precision.stats import row_stats

    eng = get_backend("cuda")

    def shaped(x):
        if layout == "rows":
            return x
        if layout == "columns":
            return np.asfortranarray(x)
        return np.stack([x.astype(np.float64), np.zeros(x.shape)])  # hi + (lo = 0)
    rng = np.random.default_rng(12)
    for dt in (np.float64, np.float32):  # float32 rows are read as float32 and widened in the kernel
        for k in (1, 31, 8192, 8193, 20000):
            x = phi_matrix(rng, (5, k), 2.0, dt)
            x[1, ::3] = 0.0
            if k >= 3:
                x[2, :3] = [1.4e-45, -1e-40, 3e38] if dt == np.float32 else [5e-324, -1e-310, 1e308]
            if dt == np.float32:
                # random bit patterns with biased exponents 0..40: subnormals up to 2^-86, both signs
                bits = rng.integers(0, 2**23, k, dtype=np.uint32) | (rng.integers(0, 41, k, dtype=np.uint32) << 23)
                x[3] = (bits | (rng.integers(0, 2, k, dtype=np.uint32) << 31)).view(np.float32)
            xs = shaped(x)
            flag = cp.zeros((1,), dtype=cp.int32)
            s_np, s_gpu = row_stats(xs, np), eng.row_stats(cp.asarray(xs), nonfinite=flag)
            for f in ("E", "width", "norm1", "q", "zero_row", "n1_int", "n2_int", "qsum"):
                assert np.array_equal(getattr(s_np, f), cp.asnumpy(getattr(s_gpu, f))), (dt, k, f)
            assert int(flag[0]) == 0
            bad = x.copy()
            bad[4, k - 1] = np.inf if k % 2 else np.nan
            flag = cp.zeros((1,), dtype=cp.int32)
            eng.row_stats(cp.asarray(shaped(bad)), nonfinite=flag)
            assert int(flag[0]) == 1, (dt, k)


def test_column_stats_match_numpy_and_row_kernels():
    """Statistics of column-major float64 views (B^T of a row-major B: more than one block of
    32 columns, a row stride wider than n, a single column, k off the 128-row chunks) read
    through the columns, against numpy; and against the GPU row kernels on a transposed copy
    for a column holding Inf (the statistics are discarded there, NaN/Inf flag set, but both
    paths give the same bytes)."""
    from ozgemm.kernels.cuda import backend as kc
    from ozgemm.kernels import get_backend
    from ozgemm.precision.stats import row_stats

    eng = get_backend("cuda")
    rng = np.random.default_rng(41)
    fields = ("E", "width", "norm1", "q", "zero_row", "n1_int", "n2_int", "qsum")
    for k, n, extra in ((300, 70, 5), (5000, 1, 3), (129, 33, 3), (1, 40, 2), (5000, 1, 0)):
        wide = (rng.random((k, n + extra)) - 0.5) * np.exp2(rng.integers(-40, 40, (k, n + extra)))
        if n > 2:
            wide[:, 0] = 0.0
        bt = cp.asarray(wide)[:, :n].T
        # read through the columns unless the view is also C-contiguous (one row or k = 1:
        # then it is read as rows); (5000, 1, 3) is a single row through the columns
        assert (kc._columns_ld(bt) is not None) == (not bt.flags.c_contiguous)
        assert (k, n, extra) != (5000, 1, 3) or kc._columns_ld(bt) == n + extra
        s_np, s_gpu = row_stats(wide[:, :n].T, np), eng.row_stats(bt)
        for f in fields:
            assert np.array_equal(getattr(s_np, f), cp.asnumpy(getattr(s_gpu, f))), (k, n, f)
    b = rng.standard_normal((70, 40))
    b[0, 3], b[1, 3], b[5, 7] = np.inf, 2.0 ** 1020, -np.inf
    got = {}
    for columns in (True, False):  # through the columns, or rows of a transposed copy
        flag = cp.zeros((1,), dtype=cp.int32)
        bt = cp.asarray(b).T
        st = eng.row_stats(bt if columns else cp.ascontiguousarray(bt), nonfinite=flag)
        assert int(flag[0]) == 1
        got[columns] = [cp.asnumpy(getattr(st, f)).tobytes() for f in fields if f != "norm1"]
    assert got[True] == got[False]


def _residue_reference(x, shift, moduli, rp, kp):
    """Symmetric residues of round-half-up(x_il 2**s_i) (rows of x), padded to (N, rp, kp),
    from Python integers (independent of the kernels and of crt/residues.py)."""
    from fractions import Fraction

    r, k = x.shape
    out = np.zeros((len(moduli), rp, kp), dtype=np.int8)
    for i in range(r):
        for l in range(k):
            v = Fraction(float(x[i, l])) * Fraction(2) ** int(shift[i])
            X = (v + Fraction(1, 2)).__floor__()
            for q, m in enumerate(moduli):
                out[q, i, l] = (X + m // 2) % m - m // 2
    return out


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("columns", [True, False])
def test_residues_of_column_major_rows(dt, columns):
    """Residues of the rows of a column-major view (B^T of a row-major B with a row stride
    wider than n) against Python integers: read through the columns (crt.cu
    scaled_residues_cols, float64: tiles of 16 rows x 128 entries, moduli stored eight at a time) or
    copied first; moduli counts around the batch of 8, padding rows and entries, tails of
    both tile dimensions, rounded and left-shifted entries, subnormals and zeros."""
    from ozgemm.contracts.moduli import MODULI
    from ozgemm.kernels.cuda import backend as kc
    from ozgemm.kernels import get_backend

    eng = get_backend("cuda")
    rng = np.random.default_rng(21)
    for k, n, N in ((45, 70, 9), (300, 33, 16), (7, 5, 8), (70, 40, 17), (1100, 20, 16), (37, 20, 12),
                    (20, 20, 23), (20, 17, 40)):
        wide = ((rng.random((k, n + 5)) - 0.5) * np.exp2(rng.integers(-30, 30, (k, n + 5)))).astype(dt)
        wide[0, :3] = [0.0, -0.0, (1.4e-45 if dt == np.float32 else 5e-324)]
        wide[:, 1] = 0.0
        b = wide[:, :n]
        shift = rng.integers(-5, 80, n).astype(np.int64)  # some entries rounded, some exact/shifted
        rp, kp = -(-n // 16) * 16 + 16, -(-k // 16) * 16
        bt = cp.asarray(wide)[:, :n].T
        if not columns:
            bt = cp.ascontiguousarray(bt)
        assert (kc._columns_ld(bt) is not None) == (columns and dt == np.float64)  # float32: copied first
        want = _residue_reference(b.T.astype(np.float64), shift, MODULI[:N], rp, kp)
        got = cp.asnumpy(eng.residues_padded(bt, cp.asarray(shift), N, rp, kp))
        assert np.array_equal(got, want), (k, n, N)


def _scaled_integers(x, shift):
    """round-half-up(x_il 2**s_i) of the rows of x as Python integers (Fractions)."""
    from fractions import Fraction

    return [[(Fraction(float(v)) * Fraction(2) ** int(shift[i]) + Fraction(1, 2)).__floor__() for v in row]
            for i, row in enumerate(x)]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("columns", [True, False])
def test_residues_of_two_parts_and_their_sum(dt, columns):
    """The three-product form's residues in one pass (crt.cu scaled_residues_pair and
    scaled_residues_cols_pair) against Python integers: both parts X', Y' of one scaling and
    X' + Y', as views of one wider matrix like the embedding's parts (rows of one stride, or
    columns read in place), with tiles of rows, moduli counts around the column kernel's batch
    of 4, padding, shifted and rounded entries, subnormals, zeros and entries beyond the
    FP64 split (|x 2^s| >= 2^61)."""
    from ozgemm.contracts.moduli import MODULI
    from ozgemm.kernels.cuda import backend as kc
    from ozgemm.kernels import get_backend

    eng = get_backend("cuda")
    rng = np.random.default_rng(23)
    for r, k, N, (i0, i1) in (((45, 70, 9, (0, 45)), (33, 300, 16, (0, 33)), (5, 7, 8, (1, 4)),
                              (40, 70, 17, (16, 40)), (20, 37, 12, (0, 20)), (17, 20, 5, (3, 17)))):
        wide = ((rng.random((r, 2 * k + 3)) - 0.5) * np.exp2(rng.integers(-30, 30, (r, 2 * k + 3)))).astype(dt)
        wide[0, :3] = [0.0, -0.0, (1.4e-45 if dt == np.float32 else 5e-324)]
        wide[1, k:k + 2] = [-0.0, 2.0**40]
        wide[:, 1] = 0.0
        shift = rng.integers(-5, 80, r).astype(np.int64)
        shift[1] = 30  # 2**40 * 2**30 >= 2**61: the integer split
        x, y = wide[:, :k], wide[:, k:2 * k]
        if columns:  # rows of x^T: the columns of a row-major (k, r) matrix, read in place
            dev = cp.asarray(np.ascontiguousarray(wide.T))
            xd, yd = dev[:k].T, dev[k:2 * k].T
        else:
            dev = cp.asarray(wide)
            xd, yd = dev[:, :k], dev[:, k:2 * k]
        assert (kc._columns_ld(xd) is not None) == (columns and dt == np.float64)
        rx, ry, rs = (cp.asnumpy(v) for v in eng.residues_3m(xd, yd, cp.asarray(shift), N, i0, i1))
        rp, kp = -(-(i1 - i0) // 16) * 16, -(-k // 16) * 16
        X = _scaled_integers(x[i0:i1].astype(np.float64), shift[i0:i1])
        Y = _scaled_integers(y[i0:i1].astype(np.float64), shift[i0:i1])
        for q, m in enumerate(MODULI[:N]):
            for got, vals in ((rx, X), (ry, Y), (rs, [[u + v for u, v in zip(a, b)] for a, b in zip(X, Y)])):
                want = np.zeros((rp, kp), dtype=np.int64)
                want[:i1 - i0, :k] = [[(v + m // 2) % m - m // 2 for v in row] for row in vals]
                assert np.array_equal(got[q], want), (r, k, N, q, columns)


@pytest.mark.parametrize("columns", [True, False])
def test_residues_fp_split_edges(columns):
    """The FP64 split of crt.cu (split_scaled_fp) and its integer fallback (split_wide) against Python
    integers: exact ties k + 1/2 of both signs and their neighbours, values just off a tie by
    bits far below 1, tiny and subnormal products, |x 2^sh| around 2^61 (split_wide above) and
    around its word bounds 2^64 and 2^84 (2^d2 from a table above), row shifts at the ends of a
    double's exponent range and beyond (split_wide rows)."""
    import math

    from ozgemm.contracts.moduli import MODULI
    from ozgemm.kernels.cuda import backend as kc
    from ozgemm.kernels import get_backend

    eng = get_backend("cuda")
    rng = np.random.default_rng(8)
    vals = [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, -0.49999999999999994, 5e-324, -5e-324,
            2.2250738585072014e-308, -1e-300, 0.0, -0.0]
    for k in (0, 1, 1000, 2**20, 2**40):
        for j in (25, 40, 52, 60):
            vals += [sg * (k + 0.5 + d) for sg in (1, -1) for d in (2.0**-j, -(2.0**-j), 0.0)]
    for k in rng.integers(-(2**50), 2**50, 40):
        t = math.ldexp(float(k) + 0.5, int(rng.integers(-40, 10)))
        vals += [t, math.nextafter(t, math.inf), math.nextafter(t, -math.inf)]
    vals += [2.0**61 - 2.0**8, -(2.0**61 - 2.0**8), 2.0**61, -(2.0**61), 2.0**62 - 2.0**9, 3.0 * 2.0**60]
    # the integer split's three words: |X'| = |mant| 2^d1 with d1 <= 31 around 2^64 and 2^84
    # (d2 > 0 beyond), both signs, next to entries of the FP64 split in the same thread
    vals += [sg * v for b in (63, 64, 65, 83, 84, 85, 86, 93) for v in (2.0**b, 2.0**b - 2.0 ** (b - 53),
                                                                          1.5 * 2.0**b, 0.5) for sg in (1, -1)]
    k = len(vals)
    # row shifts: 0 (the values as given), the double range's ends, beyond them (fallback rows)
    shifts = [0, 0, -1022, -1023, 1023, 1024, 1100, -3, 7]
    x = np.empty((len(shifts), k))
    for i, sh in enumerate(shifts):
        x[i] = np.array(vals) * (1.0 if abs(sh) < 64 else 0.0)
        if abs(sh) >= 64:  # values that land near ties / tiny / large after a huge shift
            x[i] = [math.ldexp(v, -sh) if v == 0 or math.frexp(v)[1] - sh <= 1024 else 0.0 for v in vals]
    x[1] = -x[0][::-1]
    shift = np.array(shifts, dtype=np.int64)
    for N in (16, 9):
        rp, kp = -(-len(shifts) // 16) * 16, -(-k // 16) * 16
        want = _residue_reference(x, shift, MODULI[:N], rp, kp)
        src = cp.asarray(np.ascontiguousarray(x.T)).T if columns else cp.asarray(x)
        assert (kc._columns_ld(src) is not None) == columns
        got = cp.asnumpy(eng.residues_padded(src, cp.asarray(shift), N, rp, kp))
        assert np.array_equal(got, want), N


def test_semantics_rows_and_specials_on_gpu():
    """Every row of docs/semantics.md gives the CPU engine's bits on the GPU."""
    from test_semantics import CONTRACTS, rows

    for contract, dt in CONTRACTS:
        for rid, A, B, _ in rows(dt):
            a, b = np.array(A, dtype=dt), np.array(B, dtype=dt)
            want = ozgemm.matmul(a, b, contract=contract)
            got = cp.asnumpy(ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract=contract))
            assert np.array_equal(want.view(np.uint8), got.view(np.uint8)), (contract, rid, want, got)


def test_property_generator_gpu_equals_cpu():
    """The CPU property tests' generator (specials, spreads, shapes) reused on the GPU."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from test_robustness import operands_with_specials

    @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
    @given(operands_with_specials(np.float64), st.sampled_from(["fp64", "fp64-fast"]))
    def run(ab, name):
        a, b = ab
        try:
            want = ozgemm.matmul(a, b, contract=name)
        except ozgemm.ContractError:
            with pytest.raises(ozgemm.ContractError):
                ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract=name)
            return
        got = cp.asnumpy(ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract=name))
        assert np.array_equal(want.view(np.uint8), got.view(np.uint8))

    run()


def test_output_beyond_2_31_entries():
    """m * n > 2**31 (64-bit indexing in every kernel): 65600 x 16 x 32800, fp32 output."""
    m, k, n = 65600, 16, 32800
    assert m * n > 2**31
    rs = cp.random.RandomState(1)
    a = rs.standard_normal((m, k), dtype=cp.float32)
    b = rs.standard_normal((k, n), dtype=cp.float32)
    c = ozgemm.matmul(a, b, contract="fp32")
    # spot checks against the CPU engine on rows/columns at both ends of the index range
    rows = np.array([0, 1, m // 2, m - 2, m - 1])
    cols = np.array([0, 7, n // 2, n - 1])
    a_h, b_h = cp.asnumpy(a[rows]), cp.asnumpy(b[:, cols])
    want = ozgemm.matmul(a_h, b_h, contract="fp32")
    got = cp.asnumpy(c[rows][:, cols])
    # the plan of a sub-product may differ (moduli from its own data): compare with the bound
    from ozgemm.verify.reference import exact_product, measure
    assert measure(got, exact_product(a_h, b_h), ozgemm.load_contract("fp32")).breaches == 0
    assert np.allclose(got, want, rtol=1e-6, atol=1e-6)
    del c
    cp.get_default_memory_pool().free_all_blocks()


def test_float32_widening_keeps_subnormals():
    """CuPy compiles its kernels with -ftz=true (its astype flushes float32 subnormals):
    the GPU path's widening must give numpy's exact float64 for every float32 class."""
    from ozgemm._xp import as_float64

    rng = np.random.default_rng(5)
    bits = np.concatenate([rng.integers(0, 2**32, 20000, dtype=np.uint64),
                           np.arange(0, 300), 0x80000000 + np.arange(0, 300),
                           [0x7f800000, 0xff800000, 0x7f7fffff, 0x00800000, 0x007fffff]]).astype(np.uint32)
    x = bits.view(np.float32).reshape(-1, 5)
    want = x.astype(np.float64)
    got = cp.asnumpy(as_float64(cp.asarray(x)))
    assert np.array_equal(np.isnan(want), np.isnan(got))
    assert np.array_equal(want[~np.isnan(want)].view(np.uint64), got[~np.isnan(got)].view(np.uint64))
    # strided (transposed) view
    got_t = cp.asnumpy(as_float64(cp.asarray(x).T))
    assert np.array_equal(np.isnan(want.T), np.isnan(got_t))
    fin = ~np.isnan(want.T)
    assert np.array_equal(want.T[fin].view(np.uint64), got_t[fin].view(np.uint64))


@pytest.mark.parametrize("contract", ["fp64", "fp32"])
def test_float32_subnormal_operands_and_results(contract):
    """Subnormal float32 inputs are exact and subnormal float32 results correctly rounded on
    the GPU (bit-identical to the CPU engine)."""
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    rng = np.random.default_rng(9)
    a = (rng.integers(-40, 40, (9, 13)) * tiny).astype(np.float32)
    b = rng.integers(-3, 4, (13, 11)).astype(np.float32) * np.float32(0.375)
    want = ozgemm.matmul(a, b, contract=contract)
    got = cp.asnumpy(ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract=contract))
    assert np.array_equal(want.view(np.uint8), got.view(np.uint8))
    assert np.any(want != 0)


@pytest.mark.parametrize("contract", ["dd", "fp128", "fp64"])
@pytest.mark.parametrize("kind", ["float", "dd", "quad"])
def test_wide_formats_bit_identical_to_cpu(contract, kind):
    """dd / binary128 operands and results: the GPU (generic xp pipeline on cupy with the
    cuBLAS INT8 GEMMs) gives the CPU engine's bits."""
    from ozgemm.contracts.formats import quad_dtype, quad_to_bits

    rng = np.random.default_rng(4)
    a, b = phi(rng, 33, 100, 17, 2)
    Q = quad_dtype()
    r = rng.random(a.shape) - 0.5
    if kind == "dd":
        a_h, b_h = ozgemm.DD(a, a * r * 2.0 ** -53), ozgemm.DD(b, b * 2.0 ** -54)
        a_d, b_d = ozgemm.DD(cp.asarray(a_h.hi), cp.asarray(a_h.lo)), ozgemm.DD(cp.asarray(b_h.hi), cp.asarray(b_h.lo))
    elif kind == "quad":
        a_h, b_h = a.astype(Q) + (a * r * 2.0 ** -60).astype(Q), b.astype(Q)
        a_d, b_d = ozgemm.Binary128.from_numpy(a_h, device=True), ozgemm.Binary128.from_numpy(b_h, device=True)
    else:
        a_h, b_h, a_d, b_d = a, b, cp.asarray(a), cp.asarray(b)
    want = ozgemm.matmul(a_h, b_h, contract=contract)
    got = ozgemm.matmul(a_d, b_d, contract=contract)
    if contract == "dd":
        assert np.array_equal(want.hi, cp.asnumpy(got.hi)) and np.array_equal(want.lo, cp.asnumpy(got.lo))
    elif contract == "fp128":
        assert isinstance(got, ozgemm.Binary128)
        assert np.array_equal(quad_to_bits(want), cp.asnumpy(got.bits))
    else:
        assert np.array_equal(want.view(np.uint64), cp.asnumpy(got).view(np.uint64))


def test_binary128_underflow_to_zero_is_plus_zero():
    """A binary128 result below half the smallest subnormal rounds to zero and is +0 whatever
    its sign, on the GPU as on the CPU (crt_round_q128 must not store -0 for negative ones);
    next to it, the same products scaled into range keep their signs."""
    from ozgemm.contracts.formats import quad_dtype, quad_to_bits

    Q = quad_dtype()
    t = np.array(2.0 ** -1000, dtype=Q) ** 8 * np.array(2.0 ** -300, dtype=Q)  # 2^-8300
    a = np.array([[1.0, 0.5], [-1.0, 3.0]], dtype=Q) * t
    b = -np.array([[1.0, 2.0], [1.0, -0.25]], dtype=Q) * t  # products ~2^-16600 < 2^-16495
    big = np.array(2.0 ** 1000, dtype=Q) ** 8  # a * big: products ~2^-8600, normal, signs kept
    for x in (a, a * big):
        want = quad_to_bits(ozgemm.matmul(x, b, contract="fp128"))
        got = cp.asnumpy(ozgemm.matmul(ozgemm.Binary128.from_numpy(x, device=True),
                                       ozgemm.Binary128.from_numpy(b, device=True), contract="fp128").bits)
        assert np.array_equal(want, got), (want, got)
    assert not want[..., 0].any() and (want[..., 1] >> np.uint64(63)).tolist() == [[1, 1], [1, 0]]
    assert not quad_to_bits(ozgemm.matmul(a, b, contract="fp128")).any()  # +0 everywhere


def test_nonfinite_flag_read_with_the_plan():
    """Componentwise contracts plan unchecked cupy operands and read the NaN/Inf flag with the
    planner's scalars: operands holding NaN/Inf are planned again on their finite rows/columns
    and give the CPU engine's bits; specials = "raise" still raises; clean operands too."""
    from ozgemm.contracts.contract import ContractError

    rng = np.random.default_rng(21)
    a, b = phi_operands(rng, 20, 33, 17, 1.0)
    a_bad, b_bad = a.copy(), b.copy()
    a_bad[3, 5] = np.nan
    b_bad[7, 2] = -np.inf
    for con, dt in (("fp64", np.float64), ("fp32", np.float32), ("fp64-fast", np.float64)):
        for x, y in ((a, b), (a_bad, b), (a, b_bad), (a_bad, b_bad)):
            want = ozgemm.matmul(x.astype(dt), y.astype(dt), contract=con)
            got = ozgemm.matmul(cp.asarray(x.astype(dt)), cp.asarray(y.astype(dt)), contract=con).get()
            assert np.array_equal(np.isnan(want), np.isnan(got)), con
            ok = ~np.isnan(want)
            assert np.array_equal(want[ok].view(np.uint8), got[ok].view(np.uint8)), con
    strict = ozgemm.load_contract("fp64").with_(specials="raise", name="strict")
    with pytest.raises(ContractError, match="non-finite"):
        ozgemm.matmul(cp.asarray(a_bad), cp.asarray(b), contract=strict)
    assert np.array_equal(ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract=strict).get().view(np.uint64),
                          ozgemm.matmul(a, b, contract=strict).view(np.uint64))


def test_rows_contiguous_transposes_bit_exactly():
    """The planner's B^T copy keeps float32 as float32 (the kernels widen exactly as they read)
    and float64 as float64, bit for bit (subnormals, signed zeros, extremes)."""
    from ozgemm.kernels.cuda.backend import _rows_contiguous

    rng = np.random.default_rng(3)
    y = (rng.standard_normal((70, 45)) * np.exp2(rng.integers(-140, 120, (70, 45)))).astype(np.float32)
    y[0, :6] = [np.float32(1.4e-45), np.float32(-1.2e-38), np.float32(-0.0), np.float32(3.4e38), 0.0, 1e-40]
    for x in (y, y.astype(np.float64) * 2.0**-900):
        got = _rows_contiguous(cp.asarray(x).T).get()
        want = np.ascontiguousarray(x.T)
        assert got.dtype == x.dtype and got.flags.c_contiguous
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("contract", ["fp64", "fp32", "fp64-fast", "fp32-fast"])
def test_speculative_plans_confirmed_or_rerun(contract, monkeypatch):
    """A product whose moduli count is guessed (from the last plan of the same shapes) is queued
    before the planner's read and confirmed after it: the right guess is kept, a wrong one
    (one modulus more or less) runs again with the confirmed plan; the bits always equal the
    CPU engine's, NaN/Inf inputs still give numpy's classes and inputs beyond one
    componentwise plan still take exponent bands."""
    import ozgemm.api as api
    from ozgemm.precision import planner as P

    seen = []
    real = api.confirm_plan

    def spy(p, e):
        r = real(p, e)
        seen.append(r[0])
        return r

    monkeypatch.setattr(api, "confirm_plan", spy)
    rng = np.random.default_rng(21)
    dt = ozgemm.load_contract(contract).fmt.dtype
    a, b = phi(rng, 300, 700, 200, 0.5, dt)
    want = ozgemm.matmul(a, b, contract=contract)
    ga, gb = cp.asarray(a), cp.asarray(b)
    key = P.guess_key(ozgemm.load_contract(contract), ga, gb)
    P.set_guess(key, None)
    c1, (p1,) = ozgemm.matmul(ga, gb, contract=contract, return_plan=True)  # no guess yet
    assert seen == [] and P.guess_for(key) == (p1.n_moduli, p1.beta)
    for guess, right in ((p1.n_moduli, True), (p1.n_moduli + 1, False), (p1.n_moduli - 1, False)):
        P.set_guess(key, guess, p1.beta)
        seen.clear()
        c2, (p2,) = ozgemm.matmul(ga, gb, contract=contract, return_plan=True)
        assert seen == [right], guess
        assert (p2.n_moduli, p2.beta, p2.widened, p2.pending) == (p1.n_moduli, p1.beta, p1.widened, None)
        assert np.array_equal(cp.asnumpy(c2).view(np.uint8), want.view(np.uint8)), guess
    # NaN/Inf with a guess: the speculative product is dropped, numpy's classes come back
    an, bn = a.copy(), b.copy()
    an[3, 5], bn[7, 2] = np.nan, np.inf
    P.set_guess(key, p1.n_moduli, p1.beta)
    got = cp.asnumpy(ozgemm.matmul(cp.asarray(an), cp.asarray(bn), contract=contract))
    assert np.array_equal(got.view(np.uint8), ozgemm.matmul(an, bn, contract=contract).view(np.uint8))
    # a product beyond one plan with a guess is computed in exponent bands as without one (row
    # 0 spans far more bits than the moduli table holds and meets columns whose entry in row 0
    # of B is zero): the CPU's bits
    ab, bb = a.copy(), b.copy()
    ab[0, 0] = 2.0 ** (200 if dt == np.float64 else 120)
    if dt == np.float32:
        ab[0, 1] = 2.0 ** -60
    bb[0, :5] = 0
    wide, pw = ozgemm.matmul(ab, bb, contract=contract, return_plan=True)
    assert pw[0].method == ("bands" if ozgemm.load_contract(contract).bound_kind == "componentwise" else "crt")
    P.set_guess(key, p1.n_moduli, p1.beta)
    got = cp.asnumpy(ozgemm.matmul(cp.asarray(ab), cp.asarray(bb), contract=contract))
    assert np.array_equal(got.view(np.uint8), wide.view(np.uint8))
    # the speculative product fails before confirmation (say, out of memory): the guess is
    # dropped and the product planned without one
    from ozgemm.kernels import get_backend

    eng = get_backend("cuda")
    real_products = eng.residue_products
    calls = []

    def failing(*args, **kw):  # the first (speculative) product fails
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError("injected")
        return real_products(*args, **kw)

    monkeypatch.setattr(eng, "residue_products", failing)
    P.set_guess(key, p1.n_moduli + 1, p1.beta)
    seen.clear()
    c3 = ozgemm.matmul(ga, gb, contract=contract)
    assert seen == [] and P.guess_for(key) == (p1.n_moduli, p1.beta)
    assert np.array_equal(cp.asnumpy(c3).view(np.uint8), want.view(np.uint8))


def test_speculative_width_on_device_matches_planner():
    """plan_shifts' speculative width (128-bit Cauchy-Schwarz comparison, bisection) against the
    planner's exact search for scalars at and around the thresholds, the NaN/Inf flag, and the
    shifts it writes (0 everywhere when there is no width)."""
    from types import SimpleNamespace

    from ozgemm.precision.planner import moduli_product
    from ozgemm.kernels import get_backend
    from ozgemm.precision import planner as P

    eng = get_backend("cuda")
    rng = np.random.default_rng(4)
    E = cp.asarray(np.array([3, -2, 0, 7], dtype=np.int64))
    z = cp.asarray(np.array([False, True, False, False]))
    st = SimpleNamespace(E=E, zero_row=z)
    checked = 0
    for _ in range(120):
        nmod, k = int(rng.integers(9, 25)), int(rng.integers(1, 2**17))
        L = P.speculative_thresholds(nmod, k)
        b0 = int(rng.integers(20, 120))
        t = [int(v) for v in L[b0]]
        src = int(rng.integers(0, 3))
        big = 2**45
        n1 = max(0, t[0] + int(rng.integers(-1, 2))) if src == 0 else big
        n2 = max(1, t[1] + int(rng.integers(-1, 2))) if src == 1 else big
        ub = max(0, t[2] - k + int(rng.integers(-1, 2))) if src == 2 else big
        beta_min = int(rng.integers(1, b0 + 2))
        flag = int(rng.random() < 0.1)
        s = [beta_min, n1, n1 + 1, n2, n2 + (src == 1) * int(rng.integers(0, 2)), ub, flag]
        S = P.s_bound(s, k)
        want = P.max_beta_for(moduli_product(nmod), S, k, beta_min)
        if flag or want >= P.SPEC_BETA_HI:
            want = 0
        si, ti, pending = eng.speculative_shifts(cp.asarray(np.array(s, dtype=np.int64)), L, st, st, k)
        host = pending.read()
        assert list(host[:7]) == s and host[7] == want, (nmod, k, s, host[7], want)
        e = np.array([3, -2, 0, 7])
        shifts = np.where(np.array([False, True, False, False]) | (want == 0), 0, want - e)
        assert np.array_equal(cp.asnumpy(si), shifts) and np.array_equal(cp.asnumpy(ti), shifts)
        checked += want > 0
    assert checked > 40


def test_normwise_scalars_kernel_matches_planner():
    """stats.cu's one-block normwise_scalars (the four norm maxima, the threshold count, S <= k,
    the flag) against the planner's array expression on the CPU, for sums at and around the
    thresholds and row counts below, at and above the block size."""
    from types import SimpleNamespace

    from ozgemm.kernels import get_backend
    from ozgemm.precision import planner as P

    eng, cpu = get_backend("cuda"), get_backend("cpu")
    rng = np.random.default_rng(8)
    for case in range(60):
        c = ozgemm.load_contract(("fp64-fast", "fp32-fast", "fp64-fast:bits=47")[case % 3])
        k = int(rng.integers(1, 2**20))
        T = P.normwise_thresholds(c, k)
        m, n = (int(x) for x in rng.choice([1, 7, 255, 256, 257, 1000, 5000], 2))
        b0 = int(rng.integers(1, 100))
        target = max(int(T[b0]), 0) + int(rng.integers(-1, 2))  # the 1-norm sum at a threshold
        n1a = rng.integers(0, max(target // 2, 0) + 1, m)
        n1b = rng.integers(0, max(target - int(n1a.max()), 0) + 1, n)
        n1a[int(rng.integers(0, m))] = max(target - int(n1b.max()), 0)
        host = {}
        for side, r, n1 in (("a", m, n1a), ("b", n, n1b)):
            host[side] = SimpleNamespace(n1_int=n1.astype(np.int64), n2_int=rng.integers(0, 2**62, r, dtype=np.int64))
        dev = {s_: SimpleNamespace(n1_int=cp.asarray(v.n1_int), n2_int=cp.asarray(v.n2_int)) for s_, v in host.items()}
        for flag in (None, 0, 1):
            f_h = None if flag is None else np.full((1,), flag, dtype=np.int32)
            want = cpu.normwise_scalars(host["a"], host["b"], T, k, f_h)
            got = eng.normwise_scalars(dev["a"], dev["b"], T, k, None if f_h is None else cp.asarray(f_h))
            assert cp.asnumpy(got).tolist() == want.tolist(), (case, m, n, k, flag)
            assert int(want[0]) == P.normwise_width(c, int(n1a.max()) + int(n1b.max()), k)


@pytest.mark.parametrize("argv", [[], ["--contract", "dd", "--inputs", "dd"], ["--contract", "fp128", "--inputs", "binary128"],
                                  ["--contract", "fp32", "--method", "both"]])
def test_audit_cli_on_the_cuda_engine(argv, capsys):
    """`ozgemm audit --engine cuda` moves the operands to the device (float, DD, binary128)
    and keeps the contract, measured against the exact product as on the CPU."""
    from ozgemm.cli import main

    rc = main(["audit", "--engine", "cuda", "--size", "12", "--phi", "1", *argv])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "kept on all" in out


@pytest.mark.parametrize("contract", ["fp128", "dd", "fp64"])
def test_binary128_subnormal_row_maxima_bit_identical_and_kept(contract):
    """Rows whose largest entries are binary128 subnormals with few significant bits (the
    first float64 piece is zero): the fused statistics kernel's 7-bit magnitudes come from
    every piece, as on the CPU; the result keeps the contract against the exact product."""
    from ozgemm.contracts.formats import quad_dtype, quad_from_bits
    from ozgemm.verify.reference import exact_product, measure

    rng = np.random.default_rng(12)
    m, k, n = 6, 9, 5
    w = np.zeros((m, k, 2), dtype=np.uint64)
    for i in range(m):
        for j in range(k):
            nb = int(rng.choice([0, 1, 8, 40, 57, 60]))
            sig = (int(rng.integers(0, 2**62)) << 50 | int(rng.integers(0, 2**50))) % (1 << nb) | (1 << (nb - 1)) if nb else 0
            w[i, j] = (sig & ((1 << 64) - 1), (sig >> 64) | (int(rng.integers(0, 2)) << 63))
    a = quad_from_bits(w)
    b = (np.exp(rng.standard_normal((k, n))) * 2.0 ** 1000).astype(quad_dtype()) * np.array(2.0 ** 1000, dtype=quad_dtype()) ** 15
    want = ozgemm.matmul(a, b, contract=contract)
    got = ozgemm.matmul(ozgemm.Binary128.from_numpy(a, device=True), ozgemm.Binary128.from_numpy(b, device=True),
                        contract=contract)
    _assert_same_bits(want, got)
    assert measure(want, exact_product(a, b), ozgemm.load_contract(contract)).breaches == 0


def _assert_same_bits(c_cpu, c_gpu):
    """A CPU result (float, DD or numpy quad) and a GPU one hold the same bits."""
    from ozgemm.contracts.formats import DD, quad_to_bits

    if isinstance(c_cpu, DD):
        assert np.array_equal(c_cpu.hi, cp.asnumpy(c_gpu.hi)) and np.array_equal(c_cpu.lo, cp.asnumpy(c_gpu.lo))
    elif hasattr(c_gpu, "bits"):
        assert np.array_equal(quad_to_bits(c_cpu), cp.asnumpy(c_gpu.bits))
    else:
        assert np.array_equal(c_cpu.view(np.uint8), cp.asnumpy(c_gpu).view(np.uint8))


def test_dd_specials_on_device():
    """DD(hi) on cupy has lo = 0 (an infinite hi stays infinite), and a finite pair whose
    sum overflows has the class of hi + lo: the same bits as the CPU."""
    big = np.finfo(np.float64).max
    b = np.array([[2.0], [1.0]])
    d = ozgemm.DD(cp.asarray([[np.inf, 1.0]]))
    assert float(d.lo[0, 0]) == 0.0
    c = ozgemm.matmul(d, cp.asarray(b), contract="dd")
    assert float(c.hi[0, 0]) == np.inf and float(c.lo[0, 0]) == 0.0
    hi, lo = np.array([[big, 1.0], [-big, 3.0]]), np.array([[big, 0.0], [-big, 0.0]])
    for con in ("dd", "fp64"):
        want = ozgemm.matmul(ozgemm.DD(hi, lo), b, contract=con)
        got = ozgemm.matmul(ozgemm.DD(cp.asarray(hi), cp.asarray(lo)), cp.asarray(b), contract=con)
        wh = want.hi if con == "dd" else want
        gh = cp.asnumpy(got.hi if con == "dd" else got)
        assert wh[0, 0] == np.inf and wh[1, 0] == -np.inf and np.array_equal(wh, gh)


@pytest.mark.parametrize("contract", ["fp64", "dd", "fp64-ozaki", "fp32"])
def test_exponent_bands_bit_identical_to_cpu(contract):
    """Spreads beyond one plan (exponent bands) give the CPU's bits on the GPU and keep the
    contract (exact check)."""
    from ozgemm.contracts.contract import as_contract
    from ozgemm.verify.audit import measure_any

    rng = np.random.default_rng(17)
    dt = np.float32 if contract == "fp32" else np.float64
    lo, hi = (-140, 120) if contract == "fp32" else (-1000, 1000)
    a = (rng.standard_normal((40, 70)) * np.exp2(rng.integers(lo, hi, (40, 70)))).astype(dt)
    b = (rng.standard_normal((70, 30)) * np.exp2(rng.integers(lo, hi, (70, 30)))).astype(dt)
    with np.errstate(all="ignore"):
        c_cpu, pc = ozgemm.matmul(a, b, contract=contract, return_plan=True)
        c_gpu, pg = ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract=contract, return_plan=True)
    assert pc[0].method == "bands" and pg[0].info()["pairs"] == pc[0].info()["pairs"]
    if contract == "dd":
        assert np.array_equal(c_cpu.hi, cp.asnumpy(c_gpu.hi)) and np.array_equal(c_cpu.lo, cp.asnumpy(c_gpu.lo))
    else:
        assert np.array_equal(c_cpu.view(np.uint8), cp.asnumpy(c_gpu).view(np.uint8))
    assert measure_any(c_cpu, a, b, as_contract(contract))["breaches"] == 0


@pytest.mark.parametrize("contract", ["fp128", "dd", "fp64", "fp64-fast"])
def test_binary128_beyond_float64_range_bit_identical_to_cpu(contract):
    """binary128 rows and columns spanning far beyond float64's range (exponent bands from the
    exact pieces; fp64-fast: a normwise plan of the pieces) give the CPU's bits on the GPU and
    keep the contract (exact check)."""
    from conftest import binary128_of
    from ozgemm.contracts.contract import as_contract
    from ozgemm.verify.audit import measure_any

    rng = np.random.default_rng(21)

    def rows(r, c, lo, hi):
        return [[(bool(rng.integers(2)), int(rng.integers(1, 2**62)) << 51 | int(rng.integers(0, 2**51)),
                  int(rng.integers(lo, hi))) for _ in range(c)] for _ in range(r)]
    a = binary128_of(rows(7, 12, -16494, 12000))
    b = binary128_of(rows(12, 5, -12000, 100))
    with np.errstate(all="ignore"):
        c_cpu, pc = ozgemm.matmul(a, b, contract=contract, return_plan=True)
        c_gpu, pg = ozgemm.matmul(ozgemm.Binary128(cp.asarray(a.bits)), ozgemm.Binary128(cp.asarray(b.bits)),
                                  contract=contract, return_plan=True)
    assert pc[0].method == ("crt" if contract == "fp64-fast" else "bands")
    _assert_same_bits(c_cpu, c_gpu)
    assert measure_any(c_cpu, a, b, as_contract(contract))["breaches"] == 0


@pytest.mark.parametrize("contract", ["fp64-dgemm", "fp32-sgemm"])
def test_tiers_bit_identical_to_cpu(contract):
    """The DGEMM/SGEMM-grade tiers plan per k on the GPU as on the CPU (same moduli, same
    bits) and keep their sqrt(k) bound (exact check)."""
    from ozgemm.contracts.contract import as_contract
    from ozgemm.verify.audit import measure_any

    rng = np.random.default_rng(23)
    dt = np.float32 if contract == "fp32-sgemm" else np.float64
    from conftest import phi_pair

    a = phi_pair(rng, 96, 3000, 64, 1.0, dt)
    c_cpu, pc = ozgemm.matmul(a[0], a[1], contract=contract, return_plan=True)
    c_gpu, pg = ozgemm.matmul(cp.asarray(a[0]), cp.asarray(a[1]), contract=contract, return_plan=True)
    assert pc[0].n_moduli == pg[0].n_moduli and pc[0].info()["bits"] == pg[0].info()["bits"]
    assert np.array_equal(c_cpu.view(np.uint8), cp.asnumpy(c_gpu).view(np.uint8))
    assert measure_any(c_cpu, a[0], a[1], as_contract(contract))["breaches"] == 0


@pytest.mark.parametrize("contract", ["fp64", "fp64-dgemm", "fp32"])
def test_refined_lower_bound_bit_identical_to_cpu(contract, monkeypatch):
    """Wide spreads (phi = 2) refine the lower bound on the GPU as on the CPU: the same
    moduli and bits, also when a speculative plan of the same shapes (from phi = 0.5 inputs)
    has to give way to the refined one, and on the repeated call that no longer speculates.
    (The size from which products refine is lowered to this test's.)"""
    import ozgemm.precision.planner as P
    from conftest import phi_pair

    monkeypatch.setattr(P, "REFINE_MIN_WORK", 0)
    from ozgemm.contracts.contract import as_contract
    from ozgemm.verify.audit import measure_any

    rng = np.random.default_rng(29)
    dt = np.float32 if contract == "fp32" else np.float64
    x0, y0 = phi_pair(rng, 64, 2000, 48, 0.5, dt)
    x, y = phi_pair(rng, 64, 2000, 48, 2.0, dt)
    c_cpu, pc = ozgemm.matmul(x, y, contract=contract, return_plan=True)
    assert "refined" in pc[0].widened
    ozgemm.matmul(cp.asarray(x0), cp.asarray(y0), contract=contract)  # a guess for these shapes
    for _ in range(2):
        c_gpu, pg = ozgemm.matmul(cp.asarray(x), cp.asarray(y), contract=contract, return_plan=True)
        assert pg[0].n_moduli == pc[0].n_moduli and pg[0].beta == pc[0].beta and "refined" in pg[0].widened
        _assert_same_bits(c_cpu, c_gpu)
    assert measure_any(c_cpu, x, y, as_contract(contract))["breaches"] == 0


@pytest.mark.skipif(not __import__("os").environ.get("OZGEMM_GEMMUL8"),
                    reason="needs a GEMMul8 shim ($OZGEMM_GEMMUL8, see ozgemm.cli.peers)")
def test_bench_times_gemmul8_side_by_side(capsys, tmp_path):
    """ozgemm bench --device gpu with a GEMMul8 shim: its rows measured on the same inputs with
    the same error measures, results close to the exact product."""
    import json

    pytest.importorskip("gmpy2")
    from ozgemm.cli import main

    js = tmp_path / "b.json"
    assert main(["bench", "--device", "gpu", "--sizes", "256", "--contracts", "fp64", "--full", "--reps", "2",
                 "--block", "16", "--gemmul8-configs", "f15", "a15", "--json", str(js)]) == 0
    rows = json.loads(js.read_text())["rows"]
    peers = [r for r in rows if r.get("peer") == "GEMMul8"]
    assert {(r["config"], r["phi"]) for r in peers} == {("f15", 0.5), ("a15", 0.5), ("f15", 2.0), ("a15", 2.0)}
    for r in peers:
        assert r["ozgemm_s"] > 0 and r["oz_full_max_err_u"] is not None
        if r["phi"] == 0.5:  # (GEMMul8's accuracy at 15 moduli on mild inputs: within a few u)
            assert r["oz_full_max_err_u"] < 100
    assert "GEMMul8 f15" in capsys.readouterr().out


def test_bench_reports_a_refused_row_and_measures_the_others(capsys, tmp_path):
    """ozgemm bench --device gpu: a contract refused for some inputs (a fixed moduli count too
    small for the normwise width at that k) gives a row naming the reason, exit status 3; the
    other contract's rows (both phi) are still measured, with the error below its bound."""
    import json

    pytest.importorskip("gmpy2")
    from ozgemm.cli import main

    js = tmp_path / "b.json"
    rc = main(["bench", "--device", "gpu", "--sizes", "512", "--contracts", "fp64-fast:moduli=13", "fp64",
               "--reps", "1", "--block", "16", "--json", str(js)])
    cap = capsys.readouterr()
    assert rc == 3 and "Traceback" not in cap.err, cap.err
    assert any("fp64-fast:moduli=13" in ln and "refused" in ln and "moduli" in ln for ln in cap.out.splitlines())
    rows = json.loads(js.read_text())["rows"]
    assert {r["phi"] for r in rows if "refused" in r} == {0.5, 2.0}
    ok = [r for r in rows if r["contract"] == "fp64"]
    # fp64's bound u|AB| + 2u|A||B| is at most 3 in the table's units u (|A||B|)_ij
    assert len(ok) == 2 and all(r["oz_max_err_u"] <= 3.0 and r["ozgemm_s"] > 0 for r in ok), ok


def test_bench_reports_rows_that_do_not_fit_and_measures_the_others(capsys, tmp_path, monkeypatch):
    """ozgemm bench --device gpu: a product that does not fit (MemoryError) gives a "not
    measured" row naming why, exit status 4 after the table; the other sizes are measured; a
    whole-output reference that does not fit keeps the row's timings and block errors."""
    import json

    pytest.importorskip("gmpy2")
    import ozgemm.cli.bench_gpu as bg
    from ozgemm.cli import main

    real_inputs = bg._inputs

    def inputs(n, *a, **k):
        if n == 256:
            raise MemoryError("256 does not fit here")
        return real_inputs(n, *a, **k)

    monkeypatch.setattr(bg, "_inputs", inputs)
    js = tmp_path / "b.json"
    rc = main(["bench", "--device", "gpu", "--sizes", "128", "256", "--contracts", "fp64", "--reps", "1",
               "--block", "16", "--json", str(js)])
    cap = capsys.readouterr()
    assert rc == 4 and "Traceback" not in cap.err, cap.err
    rows = json.loads(js.read_text())["rows"]
    assert [(r["n"], r["phi"], "failed" in r) for r in rows] == [(128, 0.5, False), (256, 0.5, True), (256, 2.0, True)]
    assert rows[1]["dtype"] == "float64" and "does not fit" in rows[1]["failed"]
    assert any("not measured (256 does not fit here)" in ln for ln in cap.out.splitlines()), cap.out
    assert rows[0]["oz_max_err_u"] <= 3.0 and rows[0]["ozgemm_s"] > 0

    monkeypatch.setattr(bg, "_inputs", real_inputs)

    def no_room(*a, **k):
        raise MemoryError("no room for the dd reference")

    monkeypatch.setattr(bg, "full_max_errors", no_room)
    rc = main(["bench", "--device", "gpu", "--sizes", "128", "--contracts", "fp64", "--reps", "1", "--block", "16",
               "--full", "--json", str(js)])
    cap = capsys.readouterr()
    rows = json.loads(js.read_text())["rows"]
    assert rc == 0 and len(rows) == 2, (rc, cap.err)
    assert all(r["oz_full_max_err_u"] is None and "no room" in r["full_not_measured"] and r["ozgemm_s"] > 0
               for r in rows), rows


def test_float32_widening_is_exact_for_every_exponent_and_mantissa_bit():
    """The kernels' float32 -> float64 widening (integer operations on the bit pattern) against
    numpy's conversion on the CPU (exact, no flush): both signs, every exponent field, and
    mantissas with each single bit, each low run and random ones (every subnormal's highest
    set bit included); Inf/NaN keep their pattern, the payload shifted into float64's
    mantissa."""
    from ozgemm._xp import as_float64

    rng = np.random.default_rng(41)
    mant = np.concatenate([np.array([0], np.uint32), np.uint32(1) << np.arange(23, dtype=np.uint32),
                           (np.uint32(1) << np.arange(1, 24, dtype=np.uint32)) - np.uint32(1),
                           rng.integers(0, 1 << 23, 200, dtype=np.uint32)])
    expo = np.arange(256, dtype=np.uint32)
    bits = ((expo[:, None] << np.uint32(23)) | mant[None, :]).ravel()
    bits = np.concatenate([bits, bits | np.uint32(1 << 31)])
    got = cp.asnumpy(as_float64(cp.asarray(bits.view(np.float32)))).view(np.uint64)
    finite = ((bits >> np.uint32(23)) & np.uint32(0xFF)) != 0xFF
    want = bits[finite].view(np.float32).astype(np.float64).view(np.uint64)
    assert np.array_equal(got[finite], want)
    b = bits[~finite].astype(np.uint64)
    want_special = ((b >> np.uint64(31)) << np.uint64(63)) | (np.uint64(0x7FF) << np.uint64(52)) | (
        (b & np.uint64(0x7FFFFF)) << np.uint64(29))
    assert np.array_equal(got[~finite], want_special)

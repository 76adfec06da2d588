"""Complex products on the GPU: bit-identical to the CPU engine (itself checked exactly in
test_complex.py), cupy in and out. Skipped cleanly without CuPy and a CUDA GPU."""
import numpy as np
import pytest

import ozgemm
from ozgemm._xp import gpu_available
from test_complex import _operands, _split_and_three_product_plans

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA GPU")]

if gpu_available():
    import cupy as cp


def _same(cpu, gpu):
    assert isinstance(gpu, cp.ndarray) and gpu.dtype == cpu.dtype
    assert np.array_equal(cpu.view(np.uint8), cp.asnumpy(gpu).view(np.uint8))


@pytest.mark.parametrize("contract", ["fp64", "fp64-fast", "fp32", "fp64-ozaki"])
@pytest.mark.parametrize("shape", [(1, 1, 1), (7, 68, 61), (33, 100, 17), (130, 257, 129)])
@pytest.mark.parametrize("phi", [0.5, 3])
def test_complex_bit_identical_to_cpu(contract, shape, phi):
    rng = np.random.default_rng(hash((contract, shape, phi)) % 2**32)
    dt = np.complex64 if contract == "fp32" else np.complex128
    a, b = _operands(rng, *shape, phi, dt)
    _same(ozgemm.matmul(a, b, contract=contract), ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract=contract))


@pytest.mark.parametrize("shape", [(1, 1, 1), (33, 100, 17), (130, 257, 129)])
def test_complex_dd_bit_identical_to_cpu(shape):
    """contract "dd": a complex DD (hi, lo complex128), both words equal to the CPU engine's."""
    rng = np.random.default_rng(sum(shape))
    a, b = _operands(rng, *shape, 2.0)
    want = ozgemm.matmul(a, b, contract="dd")
    got = ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract="dd")
    assert isinstance(got.hi, cp.ndarray)
    for w, g in ((want.hi, got.hi), (want.lo, got.lo)):
        assert np.array_equal(w.view(np.uint8), cp.asnumpy(g).view(np.uint8))


@pytest.mark.parametrize("k", [2**15 + 5, 2**17 + 3])
def test_complex_long_k_combination_paths(k):
    """k above 2**15: the three-product combination in int64; above 2**17: int64 GEMM sums."""
    rng = np.random.default_rng(k)
    a, b = _operands(rng, 3, k, 5, 1.0)
    _same(ozgemm.matmul(a, b), ozgemm.matmul(cp.asarray(a), cp.asarray(b)))


def test_complex_tiles_and_overlap_bit_identical():
    from ozgemm.kernels.cuda.backend import CudaBackend

    rng = np.random.default_rng(2)
    a, b = _operands(rng, 203, 150, 77, 1.0)
    want = ozgemm.matmul(a, b)
    for eng in (CudaBackend(overlap_tiles=3, overlap_min_rows=64), CudaBackend(memory_fraction=1e-9)):
        _same(want, ozgemm.matmul(cp.asarray(a), cp.asarray(b), engine=eng))


@pytest.mark.parametrize("contract", ["fp64", "fp64-dgemm", "fp32"])
@pytest.mark.parametrize("real", [None, "a", "b", "half"])
def test_complex_refined_bound_bit_identical_to_cpu(contract, real, monkeypatch):
    """Wide spreads refine the complex product's lower bound (the full bound; the half form,
    forced; a real operand's form) on the GPU as on the CPU: the same moduli, width and bits.
    (The size from which products refine is lowered to this test's.)"""
    import ozgemm.precision.planner as P

    monkeypatch.setattr(P, "REFINE_MIN_WORK", 0)
    if real == "half":
        monkeypatch.setattr(P, "COMPLEX_SAMPLE_ROWS", 1)
        monkeypatch.setattr(P, "COMPLEX_SAMPLE_MIN_WORK", 0)
        monkeypatch.setattr(P, "COMPLEX_HALF_SLACK", 10**6)
    rng = np.random.default_rng(23)
    dt = np.complex64 if contract == "fp32" else np.complex128
    a, b = _operands(rng, 40, 700, 30, 4.0, dt)
    if real == "a":
        a = a.real.copy()
    elif real == "b":
        b = b.real.copy()
    want, (pc,) = ozgemm.matmul(a, b, contract=contract, return_plan=True)
    got, (pg,) = ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract=contract, return_plan=True)
    assert "refined" in pc.widened and "refined" in pg.widened
    assert (pg.n_moduli, pg.beta) == (pc.n_moduli, pc.beta)
    _same(want, got)


@pytest.mark.parametrize("nonfinite", [False, True])
def test_complex_bands_bit_identical_to_cpu(nonfinite):
    """Spreads beyond one plan: the complex product is planned from its operands, refused at
    the width check and split into exponent bands of the whole embedding, on the GPU as on the
    CPU (with a NaN row: set aside in the embedding first)."""
    rng = np.random.default_rng(31)

    def wide(r, c):
        return rng.standard_normal((r, c)) * np.exp2(rng.integers(-600, 600, (r, c)))

    a = wide(5, 7) + 1j * wide(5, 7)
    b = wide(7, 3) - 1j * wide(7, 3)
    if nonfinite:
        a[2, 3] = complex(np.nan, 1.0)
    with np.errstate(all="ignore"):
        want, (pc,) = ozgemm.matmul(a, b, return_plan=True)
        got, (pg,) = ozgemm.matmul(cp.asarray(a), cp.asarray(b), return_plan=True)
    assert pc.method == pg.method == "bands"
    assert np.array_equal(want, cp.asnumpy(got), equal_nan=True)


@pytest.mark.parametrize("form", ["half", "full", "a_real", "b_real"])
@pytest.mark.parametrize("mkn", [(1, 1, 1), (37, 45, 19), (130, 257, 64)])
def test_complex_bound_gemm_equals_the_numpy_backends(form, mkn):
    """The bound GEMM of each complex form from interleaved 7-bit magnitudes (one pass per
    operand into the padded GEMM operands) equals the numpy backend's, row and column padding,
    an odd k and q rows longer than 2k included."""
    from ozgemm.kernels import get_backend
    from ozgemm.kernels.numpy import NumpyBackend

    m, k, n = mkn
    rng = np.random.default_rng(sum(mkn))
    qa = rng.integers(0, 128, (m, 2 * k + 16), dtype=np.int8)
    qb = rng.integers(0, 128, (n, 2 * k + 16), dtype=np.int8)
    want = NumpyBackend().gemm_complex_bound(qa, qb, k, form)
    got = get_backend("cuda").gemm_complex_bound(cp.asarray(qa), cp.asarray(qb), k, form)
    assert got.shape == want.shape and np.array_equal(cp.asnumpy(got).astype(np.int64), want.astype(np.int64))


@pytest.mark.parametrize("real", ["a", "b"])
def test_real_operand_bound_beyond_one_int32_block_of_the_embedding(real):
    """A real operand with k beyond half an int32 k-block: its bound GEMM sums k terms (int32)
    while the statistics' rows hold 2k entries; the planner's width pass takes it as int64."""
    rng = np.random.default_rng(9)
    k = 70000
    a, b = _operands(rng, 6, k, 5, 0.5)
    if real == "a":
        a = a.real.copy()
    else:
        b = b.real.copy()
    _same(ozgemm.matmul(a, b), ozgemm.matmul(cp.asarray(a), cp.asarray(b)))


def test_complex_mixed_batched_and_specials_on_device():
    rng = np.random.default_rng(4)
    a, b = _operands(rng, 6, 9, 4, 2.0)
    br = b.real.copy()
    _same(ozgemm.matmul(a, br), ozgemm.matmul(cp.asarray(a), cp.asarray(br)))
    _same(ozgemm.matmul(br.T, a.T), ozgemm.matmul(cp.asarray(br.T), cp.asarray(a.T)))
    s = np.stack([a, a * 2])
    _same(ozgemm.matmul(s, b), ozgemm.matmul(cp.asarray(s), cp.asarray(b)))
    a2 = a.copy()
    a2[1, 2] = complex(np.inf, 1.0)
    a2[3, 0] = complex(0.0, np.nan)
    with np.errstate(all="ignore"):
        want = ozgemm.matmul(a2, b)
    got = cp.asnumpy(ozgemm.matmul(cp.asarray(a2), cp.asarray(b)))
    assert np.array_equal(want, got, equal_nan=True)


def test_gpu_bench_complex_full_error(capsys):
    """ozgemm bench --device gpu --complex --full: ZGEMM side by side, whole-output errors per part."""
    pytest.importorskip("gmpy2")
    from ozgemm.cli import main

    assert main(["bench", "--device", "gpu", "--complex", "--full", "--sizes", "64", "--contracts", "fp64",
                 "--reps", "2", "--block", "16"]) == 0
    out = capsys.readouterr().out
    assert "ZGEMM" in out and "full" in out


@pytest.mark.parametrize("dts", [(np.complex64, np.complex64), (np.complex128, np.complex128),
                                 (np.complex64, np.complex128), (np.float32, np.complex64),
                                 (np.complex64, np.float32), (np.float64, np.complex128)])
def test_embedding_on_device_equals_numpy_bit_for_bit(dts):
    """The backend's embedding (fused kernels where both operands have one complex dtype, the
    array expressions otherwise) holds numpy's bits, float32 subnormals and signed zeros
    included (a flush-to-zero negation or widening would lose them)."""
    from ozgemm.kernels import get_backend
    from ozgemm.precision.operands import complex_embedding

    rng = np.random.default_rng(11)
    tiny = {np.complex64: np.float32(2.0 ** -140), np.float32: np.float32(2.0 ** -140)}

    def operand(shape, dt):
        x = rng.standard_normal(shape) * tiny.get(dt, 1.0)
        if np.dtype(dt).kind == "c":
            x = x + 1j * rng.standard_normal(shape) * tiny.get(dt, 1.0)
            x.flat[0] = complex(0.0, -0.0)
        return x.astype(dt)

    a, b = operand((5, 7), dts[0]), operand((7, 3), dts[1])
    A, B = complex_embedding(a, b, np)
    gA, gB = get_backend("cuda").complex_embedding(cp.asarray(a), cp.asarray(b))
    oA, oB = get_backend("cuda").complex_operands(cp.asarray(a), cp.asarray(b))
    # the three-product form's operands: A's parts interleaved, B's top block row
    for want, got in ((A, gA), (B, gB), (np.stack([A[:, :7], A[:, 7:]], axis=2).reshape(5, 14), oA), (B[:7], oB)):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(want.view(np.uint8), cp.asnumpy(got).view(np.uint8))
    if np.dtype(dts[0]).kind == "c" and np.dtype(dts[1]).kind == "c":
        contract = "fp32" if dts == (np.complex64, np.complex64) else "fp64"
        _same(ozgemm.matmul(a, b, contract=contract), ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract=contract))


@pytest.mark.parametrize("contract,phi", [("fp64", 0.5), ("fp64", 2.0), ("fp32", 1.0), ("fp64-dgemm", 1.0)])
@pytest.mark.parametrize("layout", ["interleaved", "blocks"])
def test_split_and_three_product_forms_on_device(contract, phi, layout):
    """The split-form kernels (residues of X' +- t Y' from interleaved complex rows, from rows
    of the parts and from B's columns; the fused reconstruction of (P+ + P-)/2 and
    (P+ - P-)/(2t)) give the bits of the three-product form over table moduli holding the same
    width, and of the CPU engine."""
    from ozgemm.crt.pipeline import execute_complex
    from ozgemm.kernels import get_backend
    from ozgemm.precision.operands import complex_embedding, complex_operands

    dt = np.complex64 if contract == "fp32" else np.complex128
    a, b, c, p, p3 = _split_and_three_product_plans(contract, 37, 70, 29, phi, 4, dt)
    be = get_backend("cuda", cp)
    ga, gb = cp.asarray(a), cp.asarray(b)
    _, gp = ozgemm.matmul(ga, gb, contract=contract, return_plan=True)
    gp = gp[0]
    assert gp.moduli == p.moduli and gp.beta == p.beta
    k, n = a.shape[1], b.shape[1]
    if layout == "interleaved":
        ai, bt = complex_operands(ga, gb, cp)
        parts = (ai[:, 0::2], ai[:, 1::2]), (bt[:, :n], bt[:, n:])
    else:
        ae, be_ = complex_embedding(ga, gb, cp)
        parts = (ae[:, :k], ae[:, k:]), (be_[:k, :n], be_[:k, n:])
    r2 = cp.asnumpy(execute_complex(gp, be, *parts))
    r3 = cp.asnumpy(execute_complex(gp.evolve(moduli=p3.moduli), be, *parts))
    assert np.array_equal(r2.view(np.uint8), r3.view(np.uint8))
    assert np.array_equal(r2[:, :n], c.real) and np.array_equal(r2[:, n:], c.imag)

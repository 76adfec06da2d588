"""Stacks on the GPU (ozgemm.stacks over the CUDA backend): one batched pass, bit-identical
to the CPU engine's product-by-product results, with shared (broadcast) operands, products
of different moduli counts and widths, row counts that need padding, and more products than
one launch's grid holds. Skipped cleanly where CuPy or a CUDA GPU is missing."""
import numpy as np
import pytest

import ozgemm
from ozgemm._xp import gpu_available
from ozgemm.verify.inputs import phi_matrix

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA GPU")]

if gpu_available():
    import cupy as cp


def _cpu_loop(a, b, contract):
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    A = np.broadcast_to(a, shape + a.shape[-2:])
    B = np.broadcast_to(b, shape + b.shape[-2:])
    return np.stack([ozgemm.matmul(A[i], B[i], contract=contract) for i in np.ndindex(shape)]).reshape(
        shape + (a.shape[-2], b.shape[-1]))


@pytest.mark.parametrize("contract", ["fp64", "fp32", "fp64-fast", "fp64-dgemm", "fp32-sgemm"])
@pytest.mark.parametrize("ashape,bshape", [((12, 5, 9), (12, 9, 4)), ((12, 5, 9), (1, 9, 4)), ((12, 5, 9), (9, 4)),
                                           ((5, 9), (12, 9, 4)), ((1, 5, 9), (12, 9, 4)),
                                           ((6, 130, 257), (6, 257, 129)), ((3, 64, 64), (1, 64, 64))])
def test_gpu_stack_bit_identical_to_cpu_products(contract, ashape, bshape, stacked):
    rng = np.random.default_rng(len(ashape) * 7 + ashape[-1])
    dt = ozgemm.load_contract(contract).fmt.dtype
    a = phi_matrix(rng, ashape, 0.5, dt)
    b = phi_matrix(rng, bshape, 2.0, dt)
    if a.ndim == 3 and a.shape[0] > 1:
        a[1] *= dt.type(2.0 ** 20)  # a product needing a wider width
        a[-1, 0] = 0.0  # a zero row
    if b.ndim == 3 and b.shape[0] > 1:
        b[2] *= dt.type(2.0 ** -30)  # another width
    want = _cpu_loop(a, b, contract)
    got = ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract=contract)
    assert stacked == [True]
    assert isinstance(got, cp.ndarray) and got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(cp.asnumpy(got).view(np.uint8), want.view(np.uint8))


def test_gpu_stack_keeps_the_contract_against_the_exact_product(stacked):
    from ozgemm.verify.reference import exact_product, measure

    rng = np.random.default_rng(3)
    a, b = phi_matrix(rng, (4, 20, 300), 2.0), phi_matrix(rng, (4, 300, 30), 2.0)
    c = cp.asnumpy(ozgemm.matmul(cp.asarray(a), cp.asarray(b)))
    assert stacked == [True]
    for i in range(4):
        assert measure(c[i], exact_product(a[i], b[i]), ozgemm.load_contract("fp64")).breaches == 0


def test_gpu_stack_beyond_one_grid_of_products(stacked):
    """More products than one launch's grid z (65535): chunked launches, same bits as the CPU
    engine's stack (itself bit-identical to product-by-product calls, tests/test_stacks.py)."""
    rng = np.random.default_rng(4)
    a, b = phi_matrix(rng, (70000, 3, 2), 0.5), phi_matrix(rng, (70000, 2, 3), 0.5)
    got = cp.asnumpy(ozgemm.matmul(cp.asarray(a), cp.asarray(b)))
    want = ozgemm.matmul(a, b)
    assert stacked == [True, True]
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("case", ["nan", "inf", "dd"])
def test_gpu_stack_fallbacks_match_cpu(case, stacked):
    """NaN/Inf operands (flagged by the statistics) and dd results run product by product,
    with the CPU engine's bits."""
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((5, 4, 6)), rng.standard_normal((5, 6, 3))
    contract = "dd" if case == "dd" else "fp64"
    if case == "nan":
        a[2, 1, 3] = np.nan
    elif case == "inf":
        b[4, 0, 2] = -np.inf
    got = ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract=contract)
    want = ozgemm.matmul(a, b, contract=contract)
    assert stacked == ([False, True] if case == "dd" else [False, False])  # the GPU stack fell back
    if case == "dd":
        assert np.array_equal(cp.asnumpy(got.hi), want.hi) and np.array_equal(cp.asnumpy(got.lo), want.lo)
    else:
        assert np.array_equal(cp.asnumpy(got), want, equal_nan=True)

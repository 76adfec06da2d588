"""Ozaki scheme I on the GPU: bit-identical to the CPU engine (==), bounds kept.

Skipped cleanly where CuPy or a CUDA GPU is missing (CI). GPU tests compare against the CPU
engine's bits (which tests/test_ozaki.py checks against independent exact computations) and
against the exact reference where python-flint/gmpy2 are present.
"""
import numpy as np
import pytest

import ozgemm
from ozgemm._xp import gpu_available
from ozgemm.verify.inputs import phi_operands

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA GPU")]

if gpu_available():
    import cupy as cp

FP64 = ozgemm.load_contract("fp64")
CONTRACTS = {
    "fp64-ozaki": ozgemm.load_contract("fp64-ozaki"),
    "fp32-ozaki": ozgemm.load_contract("fp32-ozaki"),
    "fp64-tri": FP64.with_(method="ozaki", schedule="triangular", name="fp64-tri"),
    "fp64-full": FP64.with_(method="ozaki", schedule="full", name="fp64-full"),
    "bits16-ozaki": FP64.with_(method="ozaki", bits=16, name="bits16-ozaki"),
    "fp64-auto": FP64.with_(method="auto", name="fp64-auto"),
}


def phi(rng, m, k, n, p, dt=np.float64):
    return phi_operands(rng, m, k, n, p, dt)


def _same(name, a, b):
    c_obj = CONTRACTS[name]
    try:
        want, pc = ozgemm.matmul(a, b, contract=c_obj, return_plan=True)
    except ozgemm.ContractError:
        with pytest.raises(ozgemm.ContractError):
            ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract=c_obj)
        return None
    got, pg = ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract=c_obj, return_plan=True)
    assert isinstance(got, cp.ndarray) and got.dtype == want.dtype
    ic, ig = pc[0].info(), pg[0].info()
    assert (ic["method"], ic.get("slices"), ic.get("schedule"), ic["beta"]) == \
        (ig["method"], ig.get("slices"), ig.get("schedule"), ig["beta"])
    assert np.array_equal(want.view(np.uint8), cp.asnumpy(got).view(np.uint8)), name
    return want


@pytest.mark.parametrize("name", list(CONTRACTS))
@pytest.mark.parametrize("shape", [(7, 68, 61), (1, 1, 1), (33, 100, 17), (130, 257, 129)])
@pytest.mark.parametrize("p", [0.5, 3])
def test_bit_identical_to_cpu(name, shape, p):
    rng = np.random.default_rng(abs(hash((name, shape, p))) % 2**32)
    a, b = phi(rng, *shape, p, CONTRACTS[name].fmt.dtype)
    _same(name, a, b)


def test_bounds_against_exact_reference():
    from ozgemm.verify.reference import exact_product, measure

    rng = np.random.default_rng(5)
    for p in (0.5, 1, 2, 3):
        for name in ("fp64-ozaki", "fp32-ozaki"):
            c_obj = CONTRACTS[name]
            a, b = phi(rng, 40, 300, 30, p, c_obj.fmt.dtype)
            c = cp.asnumpy(ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract=c_obj))
            assert measure(c, exact_product(a, b), c_obj).breaches == 0


def test_large_k_blocks():
    rng = np.random.default_rng(9)
    a, b = phi(rng, 3, 2**17 + 3, 5, 1.0)
    _same("fp64-ozaki", a, b)
    _same("fp64-tri", a, b)


def test_subnormals_specials_and_tiling():
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    rng = np.random.default_rng(9)
    a = (rng.integers(-40, 40, (9, 13)) * tiny).astype(np.float32)
    b = rng.integers(-3, 4, (13, 11)).astype(np.float32) * np.float32(0.375)
    assert np.any(_same("fp32-ozaki", a, b) != 0)
    x = np.array([[5e-324, 1e308, -1e308, 1.0], [np.inf, 0.0, 1.0, 2.0], [3.0, -2.0**-1060, 1e-300, 7.0]])
    y = np.array([[1.0, 0.5], [1.0, 2.0], [1.0, 1e-300], [0.25, -3.0]])
    want = ozgemm.matmul(x, y, contract="fp64-ozaki")
    got = cp.asnumpy(ozgemm.matmul(cp.asarray(x), cp.asarray(y), contract="fp64-ozaki"))
    assert np.array_equal(want, got, equal_nan=True)
    from ozgemm.kernels import get_backend

    eng = get_backend("cuda")
    a, b = phi(rng, 300, 200, 100, 1.0)
    c1 = ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract="fp64-ozaki")
    old = eng.memory_fraction
    try:
        eng.memory_fraction = 1e-6  # forces small row tiles
        c2 = ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract="fp64-ozaki")
    finally:
        eng.memory_fraction = old
    assert cp.array_equal(c1, c2)
    assert np.array_equal(cp.asnumpy(c1), ozgemm.matmul(a, b, contract="fp64-ozaki"))

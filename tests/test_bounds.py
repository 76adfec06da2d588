"""Error-bound tests: every contract keeps its promise, checked exactly (ozgemm.verify)."""
import numpy as np
import pytest

import ozgemm
from ozgemm.verify.reference import exact_product, measure

from conftest import phi_pair

SHAPES = [(7, 68, 61), (1, 1, 1), (33, 100, 17), (16, 16, 16)]


@pytest.mark.parametrize("contract", ["fp64", "fp64-fast", "fp32", "fp32-fast"])
@pytest.mark.parametrize("phi", [0.5, 1, 2, 3])
@pytest.mark.parametrize("shape", SHAPES)
def test_bound_phi(rng, contract, phi, shape):
    c_obj = ozgemm.load_contract(contract)
    dtype = c_obj.fmt.dtype
    a, b = phi_pair(rng, *shape, phi, dtype)
    c = ozgemm.matmul(a, b, contract=contract)
    assert c.dtype == dtype and c.shape == (shape[0], shape[2])
    rep = measure(c, exact_product(a, b), c_obj)
    assert rep.breaches == 0, rep.summary()


def test_bound_large_k_blocks(rng):
    """k = 2^17 + 3 crosses the int32 k-block of the GPU engine and many float32 blocks."""
    k = 2**17 + 3
    a, b = phi_pair(rng, 2, k, 3, 1.0)
    c = ozgemm.matmul(a, b)
    rep = measure(c, exact_product(a, b), ozgemm.load_contract("fp64"))
    assert rep.breaches == 0
    assert np.array_equal(c, ozgemm.matmul(a, b, engine="cpu-int64"))


@pytest.mark.parametrize("contract", ["fp64", "fp32"])
def test_adversarial_cancellation(contract):
    dt = ozgemm.load_contract(contract).fmt.dtype
    big = 1e16 if dt == np.float64 else 1e7
    a = np.array([[big, 1.0, -big], [1.0, 2.0 ** -40, -1.0], [3.0, 1e-300 if dt == np.float64 else 1e-30, 3.0]], dtype=dt)
    b = np.array([[1.0, 1.0], [1.0, -1.0], [1.0, 1.0]], dtype=dt)
    c = ozgemm.matmul(a, b, contract=contract)
    ex = exact_product(a, b)
    rep = measure(c, ex, ozgemm.load_contract(contract))
    assert rep.breaches == 0
    # here the exact products are representable: the result must be exact
    assert c[0, 0] == 1.0 and c[0, 1] == -1.0
    if dt == np.float64:
        assert c[1, 0] == 2.0 ** -40


def test_integer_inputs_scaled_exactly_give_correct_rounding(rng):
    """Small integers are scaled exactly (plan.exact_inputs): C is the correctly rounded AB."""
    from ozgemm.verify.reference import correctly_rounded

    a = rng.integers(-2**20, 2**20, size=(9, 50)).astype(np.float64)
    b = rng.integers(-2**20, 2**20, size=(50, 8)).astype(np.float64) * 2.0 ** -30
    c, plans = ozgemm.matmul(a, b, return_plan=True)
    assert plans[0].exact_inputs
    assert np.array_equal(c, correctly_rounded(exact_product(a, b)))


def test_cancellation_bound_not_exactness():
    """[2^60, 1, -2^60].[1, 3, 1] = 3 while |A||B| = 2^61 + 3: the promise allows an error of
    about 2^-52 (2^61 + 3) = 512; the result must stay inside it (numpy gives 0 or 4)."""
    a = np.array([[2.0 ** 60, 1.0, -(2.0 ** 60)]])
    b = np.array([[1.0], [3.0], [1.0]])
    c = ozgemm.matmul(a, b)
    assert abs(c[0, 0] - 3.0) <= 2.0 ** -53 * 3 + 2.0 ** -52 * (2.0 ** 61 + 3)

"""Hypothesis: random small shapes and exponent spreads keep every contract's promise."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ozgemm
from ozgemm import ContractError

from conftest import assert_contract_kept


@st.composite
def operands(draw, dtype):
    m = draw(st.integers(1, 6))
    k = draw(st.integers(1, 9))
    n = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    spread = draw(st.sampled_from([0, 4, 16, 40, 60] if dtype == np.float64 else [0, 4, 12, 20]))
    zeros = draw(st.floats(0, 0.5))
    rng = np.random.default_rng(seed)
    def mat(r, c):
        x = rng.standard_normal((r, c)) * np.exp2(rng.integers(-spread, spread + 1, (r, c)))
        x[rng.random((r, c)) < zeros] = 0.0
        return x.astype(dtype)
    scale = draw(st.sampled_from([1.0, 2.0 ** 500, 2.0 ** -500] if dtype == np.float64 else [1.0, 2.0 ** 40, 2.0 ** -40]))
    return mat(m, k) * dtype(scale), mat(k, n)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operands(np.float64), st.sampled_from(["fp64", "fp64-fast"]))
def test_fp64_contracts(ab, name):
    assert_contract_kept(*ab, name)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operands(np.float32))
def test_fp32_contract(ab):
    assert_contract_kept(*ab, "fp32")


@settings(max_examples=30, deadline=None)
@given(operands(np.float64))
def test_engines_bit_identical(ab):
    a, b = ab
    try:
        c1 = ozgemm.matmul(a, b, engine="cpu")
    except ContractError:
        return
    assert np.array_equal(c1, ozgemm.matmul(a, b, engine="cpu-int64"), equal_nan=True)

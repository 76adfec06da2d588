"""DGEMM- and SGEMM-grade tiers (growth = "sqrt_k"): |C - AB| <= u|AB| + sqrt(k) u (|A||B|),
planned as a constant-growth contract per k, checked exactly entry by entry."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ozgemm
from ozgemm import ContractError, load_contract
from ozgemm.contracts.contract import as_contract
from ozgemm.verify.audit import measure_any
from ozgemm.verify.inputs import phi_operands
from ozgemm.verify.reference import exact_product, measure

from conftest import assert_contract_kept
from test_properties import whole_range_operands


def test_tiers_shipped_and_validated():
    d, s = load_contract("fp64-dgemm"), load_contract("fp32-sgemm")
    assert (d.format, d.bits, d.growth, d.bound_kind) == ("binary64", 53, "sqrt_k", "componentwise")
    assert (s.format, s.bits, s.growth) == ("binary32", 24, "sqrt_k")
    assert "sqrt(k)" in d.promise()
    with pytest.raises(ContractError, match="growth"):
        ozgemm.Contract(name="x", growth="linear")
    with pytest.raises(ContractError, match="growth"):
        ozgemm.Contract(name="x", growth="sqrt_k", bound_kind="normwise", moduli=17)


@pytest.mark.parametrize("bits", [24, 53])
def test_for_k_constant_within_sqrt_k_and_tight(bits):
    """The planned constant 2**-(b-1) is at most sqrt(k) 2**-bits (squares, exact) and more
    than half of it (no bit given away), for k = 1 .. 2**20."""
    c = ozgemm.Contract(name="t", format="binary64" if bits == 53 else "binary32", bits=bits, growth="sqrt_k")
    for k in list(range(1, 300)) + [2**j + d for j in range(9, 21) for d in (-1, 0, 1)]:
        b = c.for_k(k).bits
        assert c.for_k(k).growth == "constant"
        assert Fraction(1, 4 ** (b - 1)) <= Fraction(k, 4 ** bits)  # 2^-(b-1) <= sqrt(k) 2^-bits
        assert Fraction(4, 4 ** (b - 1)) > Fraction(k, 4 ** bits) / 4  # 2^-(b-2) > sqrt(k) 2^-bits / 2


def test_exact_check_of_the_sqrt_k_bound():
    """ozgemm.verify compares err <= u|AB| + sqrt(k) u |A||B| exactly (by squares): results
    placed just inside and just outside the bound, k = 4 (sqrt exact) and k = 2 (irrational)."""
    d = load_contract("fp64-dgemm")
    u = 2.0 ** -53
    a4, b4 = np.ones((1, 4)), np.ones((4, 1))  # AB = |A||B| = 4: bound 4u + 2 * 4u = 12u
    ex = exact_product(a4, b4)
    assert measure(np.array([[4 + 8 * u]]), ex, d).breaches == 0  # 8u <= 12u
    assert measure(np.array([[4 + 16 * u]]), ex, d).breaches == 1  # 16u > 12u
    a2, b2 = np.ones((1, 2)), np.ones((2, 1))  # AB = 2: bound 2u + sqrt(2) 2u = 4.83u
    ex = exact_product(a2, b2)
    assert measure(np.array([[2 + 4 * u]]), ex, d).breaches == 0
    assert measure(np.array([[2 + 8 * u]]), ex, d).breaches == 1
    # the fp64 contract (2^-52 |A||B| = 4u here) breaches where the tier does not
    assert measure(np.array([[2 + 4 * u]]), ex, load_contract("fp64")).breaches == 0
    assert measure(np.array([[4 + 16 * u]]), exact_product(a4, b4), load_contract("fp64")).breaches == 1


@pytest.mark.parametrize("k", [1000, 4096])
def test_tier_keeps_its_bound_and_costs_no_more(k):
    """fp64-dgemm / fp32-sgemm keep their bound (exact check) and never take more moduli than
    fp64 / fp32 on the same inputs; at these k they take fewer (their constant is looser)."""
    rng = np.random.default_rng(k)
    a, b = phi_operands(rng, 24, k, 20, 0.5)
    for tier, base, dt in (("fp64-dgemm", "fp64", np.float64), ("fp32-sgemm", "fp32", np.float32)):
        x, y = a.astype(dt), b.astype(dt)
        c, pt = ozgemm.matmul(x, y, contract=tier, return_plan=True)
        _, pb = ozgemm.matmul(x, y, contract=base, return_plan=True)
        assert pt[0].n_moduli < pb[0].n_moduli
        assert pt[0].info()["bits"] == load_contract(tier).bits + 1 - int(np.log2(k)) // 2
        assert measure_any(c, x, y, as_contract(tier))["breaches"] == 0
        assert np.array_equal(c, ozgemm.matmul(x, y, contract=tier, engine="cpu-int64"))


def test_tier_on_complex_stacks_wide_spreads_and_dd_operands():
    rng = np.random.default_rng(5)
    z = rng.standard_normal((5, 300)) + 1j * rng.standard_normal((5, 300))
    w = rng.standard_normal((300, 4)) - 1j * rng.standard_normal((300, 4))
    assert measure_any(ozgemm.matmul(z, w, contract="fp64-dgemm"), z, w, as_contract("fp64-dgemm"))["breaches"] == 0
    s, t = rng.standard_normal((6, 3, 40)), rng.standard_normal((1, 40, 2))
    cs = ozgemm.matmul(s, t, contract="fp64-dgemm")
    for i in range(6):
        assert np.array_equal(cs[i], ozgemm.matmul(s[i], t[0], contract="fp64-dgemm"))
    a = rng.standard_normal((4, 9)) * 10.0 ** rng.uniform(-300, 300, (4, 9))
    b = rng.standard_normal((9, 3)) * 10.0 ** rng.uniform(-300, 300, (9, 3))
    with np.errstate(all="ignore"):
        c, plans = ozgemm.matmul(a, b, contract="fp64-dgemm", return_plan=True)
    assert plans[0].method == "bands" and measure_any(c, a, b, as_contract("fp64-dgemm"))["breaches"] == 0
    d = ozgemm.DD(a, a * 2.0 ** -60)
    with np.errstate(all="ignore"):
        c = ozgemm.matmul(d, b, contract="fp64-dgemm")
    assert measure_any(c, d, b, as_contract("fp64-dgemm"))["breaches"] == 0


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(whole_range_operands(np.float64))
def test_dgemm_tier_over_the_whole_float64_range(ab):
    assert_contract_kept(*ab, "fp64-dgemm")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(whole_range_operands(np.float32))
def test_sgemm_tier_over_the_whole_float32_range(ab):
    assert_contract_kept(*ab, "fp32-sgemm")

"""Memory budget and tiling, interruption, threads, property tests with specials, grading."""
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ozgemm
from ozgemm.kernels import get_backend
from ozgemm.verify.audit import measure_any

from conftest import assert_contract_kept, phi_pair


@pytest.fixture
def cpu():
    eng = get_backend("cpu")
    old = eng.memory_budget_bytes
    yield eng
    eng.memory_budget_bytes = old


def test_tiling_is_bit_identical(rng, cpu):
    a, b = phi_pair(rng, 37, 50, 23, 1.0)
    full = ozgemm.matmul(a, b)
    # planning needs 48 (mk + kn) bytes; leave room for only a few rows of workspace
    cpu.memory_budget_bytes = 48 * (37 * 50 + 50 * 23) + 5 * 17 * 23 * 50 + 3 * (5 * 17 * 50 + 8 * 60 * 23)
    assert np.array_equal(ozgemm.matmul(a, b), full)


def test_memory_error_before_allocating(rng, cpu):
    a, b = phi_pair(rng, 64, 64, 64, 1.0)
    cpu.memory_budget_bytes = 10_000
    with pytest.raises(MemoryError, match="GiB"):
        ozgemm.matmul(a, b)
    cpu.memory_budget_bytes = None
    assert np.array_equal(ozgemm.matmul(a, b), ozgemm.matmul(a, b, engine="cpu-int64"))


def test_keyboard_interrupt_leaves_library_usable(rng, monkeypatch):
    a, b = phi_pair(rng, 20, 30, 10, 1.0)
    want = ozgemm.matmul(a, b)
    eng = get_backend("cpu")
    real = eng.residue_products
    calls = {"n": 0}

    def boom(*args, **kw):
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(eng, "residue_products", boom)
    with pytest.raises(KeyboardInterrupt):
        ozgemm.matmul(a, b)
    assert np.array_equal(ozgemm.matmul(a, b), want)


def test_threads_give_correct_results(rng):
    pairs = [phi_pair(rng, 30 + i, 40, 20 + i, 0.5 + i) for i in range(4)]
    want = [ozgemm.matmul(a, b) for a, b in pairs]
    got = [None] * 12
    errors = []

    def work(j):
        try:
            a, b = pairs[j % 4]
            got[j] = ozgemm.matmul(a, b)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    ts = [threading.Thread(target=work, args=(j,)) for j in range(12)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    for j in range(12):
        assert np.array_equal(got[j], want[j % 4])


SPECIALS = [0.0, -0.0, np.nan, np.inf, -np.inf, 5e-324, -2.0 ** -1050, 1e308, -1e308, 1.0, -3.5]


@st.composite
def operands_with_specials(draw, dtype=np.float64):
    m, k, n = draw(st.integers(1, 5)), draw(st.integers(0, 7)), draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    p_special = draw(st.sampled_from([0.0, 0.1, 0.3]))
    spread = draw(st.sampled_from([0, 8, 30]))
    rng = np.random.default_rng(seed)

    def mat(r, c):
        x = rng.standard_normal((r, c)) * np.exp2(rng.integers(-spread, spread + 1, (r, c)))
        mask = rng.random((r, c)) < p_special
        x[mask] = rng.choice(SPECIALS, size=int(mask.sum()))
        with np.errstate(over="ignore"):  # 1e308 becomes inf in float32: intended
            return x.astype(dtype)

    return mat(m, k), mat(k, n)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operands_with_specials(np.float64), st.sampled_from(["fp64", "fp64-fast"]))
def test_property_specials_fp64(ab, name):
    assert_contract_kept(*ab, name)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operands_with_specials(np.float32))
def test_property_specials_fp32(ab):
    assert_contract_kept(*ab, "fp32")


@pytest.mark.parametrize("contract", ["fp64", "fp32"])
def test_grading_flat_in_n(contract):
    """Demmel-style grading: max |C-AB| / (u |A||B|) over n = 2^4 .. 2^12 (inner dimension)
    stays below the promise (<= 3 for componentwise contracts) with a fitted log-log slope
    near zero; numpy's slope is reported for comparison, not asserted."""
    dt = ozgemm.load_contract(contract).fmt.dtype
    rng = np.random.default_rng(2024)
    ns, errs, np_errs = [], [], []
    for e in range(4, 13):
        n = 2**e
        a, b = phi_pair(rng, 6, n, 6, 1.0, dt)
        s = measure_any(ozgemm.matmul(a, b, contract=contract), a, b, ozgemm.load_contract(contract))
        assert s["breaches"] == 0
        ns.append(n)
        errs.append(max(s["max_err_u"], 1e-6))
        np_errs.append(max(measure_any(np.matmul(a, b), a, b, None)["max_err_u"], 1e-6))
    slope = np.polyfit(np.log2(ns), np.log2(errs), 1)[0]
    assert max(errs) <= 3.0
    assert slope < 0.25, (slope, errs)


def test_contract_moduli_and_slices_out_of_range_are_contract_errors():
    """A fixed moduli count beyond the table is refused when the contract is made; a slice
    count far beyond the exact accumulator (whose truncation bound overflows float64) is a
    ContractError at planning, not an OverflowError."""
    import ozgemm
    from ozgemm.contracts.moduli import MODULI

    for m in (len(MODULI) + 1, 100):
        with pytest.raises(ozgemm.ContractError, match="moduli"):
            ozgemm.Contract(name="x", moduli=m)
    ozgemm.Contract(name="x", moduli=len(MODULI))  # the whole table is fine
    a, b = np.ones((3, 4)), np.ones((4, 2))
    for s in (377, 10**4):
        with pytest.raises(ozgemm.ContractError, match="diagonals"):
            ozgemm.matmul(a, b, contract=ozgemm.Contract(name="x", method="ozaki", slices=s))

"""Hypothesis: random small shapes and exponent spreads keep every contract's promise."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ozgemm
from ozgemm import ContractError

from conftest import assert_contract_kept, binary128_of


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
@given(operands(np.float32), st.sampled_from(["fp32", "fp32-fast"]))
def test_fp32_contracts(ab, name):
    assert_contract_kept(*ab, name)


@settings(max_examples=30, deadline=None)
@given(operands(np.float64))
def test_engines_bit_identical(ab):
    a, b = ab
    try:
        c1 = ozgemm.matmul(a, b, engine="cpu")
    except ContractError:
        return
    assert np.array_equal(c1, ozgemm.matmul(a, b, engine="cpu-int64"), equal_nan=True)


@st.composite
def wide_operands(draw):
    """float64 operands whose rows/columns span up to 200 binades (some beyond what the
    moduli table can serve), with zeros and exact cancellations."""
    m, k, n = draw(st.integers(1, 4)), draw(st.integers(1, 6)), draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    spread = draw(st.sampled_from([8, 40, 60, 66, 70, 74, 78, 100]))
    rng = np.random.default_rng(seed)

    def mat(r, c):
        x = np.ldexp(rng.integers(-2**20, 2**20, (r, c)).astype(np.float64), rng.integers(-spread, spread + 1, (r, c)))
        x[rng.random((r, c)) < 0.2] = 0.0
        return x
    a, b = mat(m, k), mat(k, n)
    if draw(st.booleans()) and k >= 2:  # an exact cancellation in the first entry
        a[0, 1], b[1, 0] = -a[0, 0], b[0, 0]
    return a, b


def _kept(a, b, contract):
    try:
        with np.errstate(all="ignore"):
            ozgemm.matmul(a, b, contract=contract)
    except ContractError:
        return False
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wide_operands())
def test_a_weaker_contract_keeps_what_a_stronger_one_keeps(ab):
    """Fewer promised bits, or a binary32 result of float32 inputs, never refuse an input that
    fp64 keeps; fp64 never refuses one that dd keeps. Whatever is kept keeps its bound."""
    a, b = ab
    fp64 = ozgemm.load_contract("fp64")
    chain = [ozgemm.load_contract("dd"), fp64, fp64.with_(bits=45, name="fp64-45"),
             fp64.with_(bits=30, name="fp64-30")]
    kept = [_kept(a, b, c) for c in chain]
    for stronger, weaker, c in zip(kept, kept[1:], chain[1:]):
        assert weaker or not stronger, (c.name, a, b)
    for c, ok in zip(chain, kept):
        if ok:
            assert_contract_kept(a, b, c)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    if np.array_equal(a32, a) and np.array_equal(b32, b) and _kept(a32, b32, "fp64"):
        assert _kept(a32, b32, "fp32"), (a32, b32)


@st.composite
def complex_operands(draw):
    """complex128 operands: independent spreads of the real and imaginary parts, zeros, purely
    real or imaginary entries, and now and then an infinity or NaN in one part."""
    m, k, n = draw(st.integers(1, 4)), draw(st.integers(1, 7)), draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sr, si = draw(st.sampled_from([0, 8, 30, 50])), draw(st.sampled_from([0, 8, 30, 50]))

    def part(r, c, spread):
        x = rng.standard_normal((r, c)) * np.exp2(rng.integers(-spread, spread + 1, (r, c)))
        x[rng.random((r, c)) < 0.25] = 0.0
        return x

    a = part(m, k, sr) + 1j * part(m, k, si)
    b = part(k, n, si) + 1j * part(k, n, sr)
    if draw(st.integers(0, 5)) == 0:
        a.flat[0] = complex(draw(st.sampled_from([np.inf, -np.inf, np.nan])), a.flat[0].imag)
    return a, b


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(complex_operands(), st.sampled_from(["fp64", "fp64-fast", "fp64-ozaki", "dd"]))
def test_complex_contracts_per_part(ab, name):
    """Every complex result keeps its promise per real and imaginary part (ozgemm.verify's
    exact check, NaN/Inf by class), and the two CPU engines agree bit for bit."""
    a, b = ab
    assert_contract_kept(a, b, name)
    try:
        with np.errstate(all="ignore"):
            c1 = ozgemm.matmul(a, b, contract=name)
            c2 = ozgemm.matmul(a, b, contract=name, engine="cpu-int64")
    except ContractError:
        return
    for x, y in ((c1, c2),) if name != "dd" else ((c1.hi, c2.hi), (c1.lo, c2.lo)):
        assert np.array_equal(x, y, equal_nan=True)


@st.composite
def whole_range_operands(draw, dtype):
    """Entries anywhere in the format's range (subnormals included) around a random centre,
    spreads up to the whole range, zero entries, zero rows of A and columns of B, exact
    cancellations and rounding ties (x (1 + 2**-t) with t one bit past the result's
    precision: 24, 53 or 107)."""
    m, k, n = draw(st.integers(1, 3)), draw(st.integers(1, 5)), draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    lo, hi = (-1074, 1023) if dtype == np.float64 else (-149, 127)

    def mat(r, c):
        width = draw(st.sampled_from([0, 4, 60, 300, 2100]))
        e = np.clip(rng.integers(lo, hi + 1) + rng.integers(-width, width + 1, (r, c)), lo, hi - 1)
        x = np.ldexp(rng.integers(-2**10, 2**10, (r, c)).astype(np.float64), e - 10).astype(dtype)
        x[rng.random((r, c)) < 0.2] = 0.0
        if rng.random() < 0.2:
            x[rng.integers(0, r)] = 0.0
        return x
    a, b = mat(m, k), mat(k, n)
    if rng.random() < 0.2:
        b[:, rng.integers(0, n)] = 0.0
    if k >= 2 and draw(st.booleans()):
        a[0, 1], b[1, 0] = -a[0, 0], b[0, 0]
    elif k >= 2 and draw(st.booleans()):  # a tie of the result's rounding
        t = draw(st.sampled_from([24, 53, 107]))
        e = int(np.clip(rng.integers(lo, hi), lo + t + 2, hi - 2))
        a[0, 0], a[0, 1] = np.ldexp(1.0, e), np.ldexp(1.0, e - t)
        b[0, 0] = b[1, 0] = 1.0
    return a, b


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(whole_range_operands(np.float64), st.sampled_from(["fp64", "fp64-fast", "dd", "fp64-ozaki", "fp128"]))
def test_no_wrong_answer_over_the_whole_float64_range(ab, name):
    """Over the whole float64 range every shipped contract computes the product (no refusal)
    and keeps its promise on every entry."""
    assert_contract_kept(*ab, name)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(whole_range_operands(np.float32), st.sampled_from(["fp32", "fp32-ozaki"]))
def test_no_wrong_answer_over_the_whole_float32_range(ab, name):
    assert_contract_kept(*ab, name)


@st.composite
def binary128_operands(draw):
    """binary128 operands anywhere in binary128's range (subnormals included) around a random
    centre, spreads up to the whole range, 1..113 significant bits, zero entries and rows,
    exact cancellations, and rounding ties of the products (x (1 + 2**-t), t = 53, 107, 114)."""
    m, k, n = draw(st.integers(1, 3)), draw(st.integers(1, 5)), draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    centre = int(rng.integers(-16494 + 113, 16383))

    def entry(width):
        nb = int(rng.choice([1, 11, 53, 60, 113]))
        sig = int(rng.integers(0, 2**62)) | (int(rng.integers(0, 2**62)) << 62)
        sig = (sig & ((1 << nb) - 1)) | (1 << (nb - 1))
        top = int(np.clip(centre + rng.integers(-width, width + 1), -16494 + nb, 16383))
        return [bool(rng.random() < 0.5), sig, top - nb]

    def mat(r, c):
        width = draw(st.sampled_from([0, 4, 60, 1100, 2100, 33000]))
        x = [[entry(width) for _ in range(c)] for _ in range(r)]
        for row in x:
            for e in row:
                if rng.random() < 0.2:
                    e[1] = 0
        if rng.random() < 0.2:
            for e in x[int(rng.integers(0, r))]:
                e[1] = 0
        return x
    a, b = mat(m, k), mat(k, n)
    if k >= 2 and draw(st.booleans()):  # an exact cancellation in the first entry
        a[0][1] = [not a[0][0][0]] + a[0][0][1:]
        b[1][0] = list(b[0][0])
    elif k >= 2 and draw(st.booleans()):  # a tie: 2**e (1 + 2**-t), t = 53, 107 or 114
        t = int(draw(st.sampled_from([53, 107, 114])))
        e = int(np.clip(centre, -16494 + t + 120, 16383 - 120))
        a[0][0], a[0][1] = [False, 1, e], [False, 1, e - t]
        b[0][0], b[1][0] = [False, 1, 0], [False, 1, 0]

    return binary128_of(a), binary128_of(b)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(binary128_operands(), st.sampled_from(["fp128", "dd", "fp64", "fp64-fast", "fp64-ozaki"]))
def test_no_wrong_answer_over_the_whole_binary128_range(ab, name):
    """binary128 operands over binary128's whole range (far beyond float64's): every shipped
    contract that takes them computes the product, no refusal, within its promise."""
    assert_contract_kept(*ab, name)


@st.composite
def dd_operands(draw):
    """double-double operands over the whole float64 range: hi anywhere (subnormals
    included), lo up to half an ulp of hi or a zero, and unnormalised pairs."""
    a, b = draw(whole_range_operands(np.float64))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def dd(hi):
        lo = np.ldexp(rng.integers(-2**20, 2**20, hi.shape).astype(np.float64), np.frexp(hi)[1] - 54 - 20)
        lo[rng.random(hi.shape) < 0.3] = 0.0
        return ozgemm.DD(hi, lo)
    return dd(a), dd(b)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dd_operands(), st.sampled_from(["dd", "fp64", "fp64-fast", "fp64-ozaki", "fp128"]))
def test_no_wrong_answer_for_dd_operands_over_the_whole_float64_range(ab, name):
    assert_contract_kept(*ab, name)

"""Exponent bands: products whose spread no single plan holds are computed, never refused,
and keep every contract's promise, checked exactly (ozgemm.verify) entry by entry."""
from fractions import Fraction

import numpy as np
import pytest

import ozgemm
from ozgemm.contracts.contract import as_contract
from ozgemm.crt.reconstruct import ExactSum
from ozgemm.precision.bands import BAND_BITS, band_index, band_lower_bound
from ozgemm.verify.audit import measure_any

from conftest import binary128_of

CONTRACTS = ["fp64", "dd", "fp128", "fp64-ozaki"]


def _wide(rng, r, c, lo, hi):
    return rng.standard_normal((r, c)) * np.exp2(rng.integers(lo, hi, (r, c)).astype(np.float64))


def _cases():
    rng = np.random.default_rng(7)
    row = np.array([[2.0 ** 400, 1.0, -3.0, 1.0]])
    return {
        "tiny-meets-tiny": (np.array([[1.0, 1e-40]]), np.array([[1e-40], [1.0]])),
        "underflowing": (np.array([[-5e-324, 0.0]]), np.array([[1e-162], [1.0]])),
        "one-entry-2^400": (row, np.array([[2.0 ** -400], [1.0], [1.0], [5.0]])),
        "1e+-20": (rng.standard_normal((9, 14)) * 10.0 ** rng.uniform(-20, 20, (9, 14)),
                   rng.standard_normal((14, 6)) * 10.0 ** rng.uniform(-20, 20, (14, 6))),
        "1e+-300": (_wide(rng, 8, 12, -1000, 1000), _wide(rng, 12, 5, -1000, 1000)),
        "subnormal-to-huge": (np.array([[5e-324, 1e300, 0.0], [1e-310, -1e300, 2.0 ** -1000]]),
                              np.array([[1e300, 1.0], [1e-300, 5e-324], [2.0 ** 1000, -1.0]])),
    }


@pytest.mark.parametrize("case", list(_cases()))
@pytest.mark.parametrize("name", CONTRACTS)
def test_wide_spreads_kept_not_refused(case, name):
    a, b = _cases()[case]
    with np.errstate(all="ignore"):
        c, plans = ozgemm.matmul(a, b, contract=name, return_plan=True)
        c2 = ozgemm.matmul(a, b, contract=name, engine="cpu-int64")
    assert measure_any(c, a, b, as_contract(name))["breaches"] == 0
    for x, y in ((c, c2),) if name != "dd" else ((c.hi, c2.hi), (c.lo, c2.lo)):
        assert np.array_equal(np.asarray(x).view(np.uint8), np.asarray(y).view(np.uint8))


def test_float32_whole_range_and_complex_and_stacks():
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((6, 10)) * np.exp2(rng.integers(-140, 120, (6, 10)))).astype(np.float32)
    b = (rng.standard_normal((10, 4)) * np.exp2(rng.integers(-140, 120, (10, 4)))).astype(np.float32)
    c, plans = ozgemm.matmul(a, b, return_plan=True)
    assert c.dtype == np.float32 and measure_any(c, a, b, as_contract("fp32"))["breaches"] == 0
    z = _wide(rng, 5, 7, -600, 600) + 1j * _wide(rng, 5, 7, -600, 600)
    w = _wide(rng, 7, 3, -600, 600) - 1j * _wide(rng, 7, 3, -600, 600)
    cz, plans = ozgemm.matmul(z, w, return_plan=True)
    assert plans[0].method == "bands" and measure_any(cz, z, w, as_contract("fp64"))["breaches"] == 0
    s = np.stack([_wide(rng, 4, 6, -500, 500) for _ in range(3)])
    t = _wide(rng, 6, 2, -500, 500)
    cs = ozgemm.matmul(s, t)
    for i in range(3):
        assert np.array_equal(cs[i], ozgemm.matmul(s[i], t))
        assert measure_any(cs[i], s[i], t, as_contract("fp64"))["breaches"] == 0


def test_band_split_is_exact_and_narrow():
    """Every nonzero entry is in exactly one band, and a band's entries lie within BAND_BITS
    binades below the row's largest minus BAND_BITS times the band index."""
    rng = np.random.default_rng(1)
    x = _wide(rng, 5, 40, -1074, 1000)
    x[0, :3] = 0.0
    idx, E = band_index(x, np)
    e = np.frexp(x)[1]
    nz = x != 0
    assert np.array_equal(idx < 0, ~nz)
    top = E[:, None] - BAND_BITS * idx
    assert np.all((e <= top)[nz]) and np.all((e > top - BAND_BITS)[nz])
    parts = [np.where(idx == r, x, 0.0) for r in range(int(idx.max()) + 1)]
    assert np.array_equal(np.sum(parts, axis=0), x)  # one nonzero term per entry: exact


def test_lower_bound_below_exact_product_of_magnitudes():
    """2**(E_i + F_j + g_ij - 2) <= (|A||B|)_ij, checked with Fractions, also where the
    largest terms need a second window of the float64 GEMMs."""
    rng = np.random.default_rng(5)
    a, b = _wide(rng, 4, 9, -1000, 1000), _wide(rng, 9, 3, -1000, 1000)
    ia, Ea = band_index(a, np)
    ib, Fb = band_index(b.T, np)
    g = band_lower_bound(a, b, Ea, Fb, np)
    for i in range(4):
        for j in range(3):
            exact = sum(abs(Fraction(float(a[i, l])) * Fraction(float(b[l, j]))) for l in range(9))
            e = int(Ea[i] + Fb[j] + g[i, j] - 2)
            assert g[i, j] > -(1 << 39) and Fraction(2) ** e <= exact


def test_exact_sum_against_python_integers():
    """ExactSum: signed multiword terms at per-entry scales, summed and rounded once, equal
    the correctly rounded exact sum computed with Python integers."""
    from ozgemm.contracts.formats import get_format

    rng = np.random.default_rng(11)
    m, n, T = 3, 4, 6
    terms = []
    for _ in range(T):
        vals = [[int(rng.integers(-2**62, 2**62)) * int(rng.integers(1, 2**40)) for _ in range(n)] for _ in range(m)]
        e = rng.integers(-1200, -900, (m, n)).astype(np.int64)
        terms.append((vals, e))
    e0 = np.min([e for _, e in terms], axis=0)
    acc = ExactSum(e0, 64, np)
    for vals, e in terms:
        mag = np.zeros((4, m, n), dtype=np.uint64)
        neg = np.zeros((m, n), dtype=bool)
        for i in range(m):
            for j in range(n):
                v = abs(vals[i][j])
                neg[i, j] = vals[i][j] < 0
                for L in range(4):
                    mag[L, i, j] = (v >> (32 * L)) & 0xFFFFFFFF
        acc.add(mag, neg, e, np.arange(m), np.arange(n))
    got = acc.round(get_format("binary64"))
    for i in range(m):
        for j in range(n):
            x = sum(Fraction(vals[i][j]) * Fraction(2) ** int(e[i, j]) for vals, e in terms)
            # the correctly rounded binary64 of x (with subnormals), independently via Fraction
            assert Fraction(float(got[i, j])) == _rn64(x)


def _rn64(x: Fraction) -> Fraction:
    if x == 0:
        return Fraction(0)
    s = -1 if x < 0 else 1
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    while Fraction(2) ** e > x:
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    q = max(e - 52, -1074)
    u = Fraction(2) ** q
    t = x / u
    f = t.numerator // t.denominator
    r = t - f
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and f % 2 == 1):
        f += 1
    return s * f * u


def test_plan_reports_bands_and_a_cap_refuses_with_the_cost():
    a, b = np.array([[1.0, 1e-45]]), np.eye(2)
    c, plans = ozgemm.matmul(a, b, return_plan=True)
    info = plans[0].info()
    assert info["method"] == "bands" and info["bands"] == [3, 1] and info["pairs"]
    assert info["int8_gemms"] == sum(p["n_moduli"] + 1 for p in info["pairs"])
    capped = ozgemm.load_contract("fp64").with_(max_gemms=info["int8_gemms"] - 1, name="capped")
    with pytest.raises(ozgemm.ContractError, match=f"need {info['int8_gemms']} INT8 GEMMs"):
        ozgemm.matmul(a, b, contract=capped)
    ok = ozgemm.load_contract("fp64").with_(max_gemms=info["int8_gemms"], name="enough")
    assert np.array_equal(ozgemm.matmul(a, b, contract=ok), c)


def _q_rows(rng, r, c, lo, hi):
    return [[(bool(rng.integers(2)), int(rng.integers(1, 2**62)) << 51 | int(rng.integers(0, 2**51)),
              int(rng.integers(lo, hi))) for _ in range(c)] for _ in range(r)]


@pytest.mark.parametrize("name", ["fp128", "dd", "fp64", "fp64-ozaki"])
def test_binary128_rows_beyond_float64_range(name):
    """binary128 rows and columns spanning 2**-16494 .. 2**16000 (far more than float64's
    range, so no single float64 rescaling holds their pieces) are banded from the exact
    pieces, computed, kept (exact reference) and bit-identical on both CPU engines."""
    rng = np.random.default_rng(2)
    a = binary128_of(_q_rows(rng, 3, 5, -16494, 16000 - 113))
    b = binary128_of(_q_rows(rng, 5, 2, -16000, 100))
    with np.errstate(all="ignore"):
        c, plans = ozgemm.matmul(a, b, contract=name, return_plan=True)
        c2 = ozgemm.matmul(a, b, contract=name, engine="cpu-int64")
    assert plans[0].method == "bands" and plans[0].info()["bands"][0] > 200
    assert measure_any(c, a, b, as_contract(name))["breaches"] == 0
    for x, y in ((c, c2),) if name != "dd" else ((c.hi, c2.hi), (c.lo, c2.lo)):
        assert np.array_equal(np.asarray(x).view(np.uint8), np.asarray(y).view(np.uint8))


def test_binary128_band_split_of_the_pieces_is_exact():
    """Each piece of a binary128 entry lies in one band, and the pieces of band r scaled by
    2**-(E_i - r W) are exact float64 values whose sum over pieces and bands, times the scale,
    is the entry (Fractions from the encoding)."""
    from ozgemm.precision.operands import operand_rows

    rng = np.random.default_rng(4)
    rows = _q_rows(rng, 3, 6, -16494, 16000)
    rows[1][2] = (False, 0, 0)
    rows[2][0] = (True, 3, -16494)  # a subnormal with 2 significant bits
    src = operand_rows(binary128_of(rows), np).source
    idx, E = band_index(None, np, src)
    for r in range(int(idx.max()) + 1):
        pre = E - r * BAND_BITS
        part = src.scaled(pre, np, keep=idx == r)
        assert np.all(np.abs(part[idx == r]) < 1.0) and np.all(np.abs(part[idx == r]) >= 2.0 ** -(BAND_BITS + 53))
        rows_val = [[sum(Fraction(float(part[c, i, j])) for c in range(3)) * Fraction(2) ** int(pre[i])
                     for j in range(6)] for i in range(3)]
        if r == 0:
            total = rows_val
        else:
            total = [[t + v for t, v in zip(tr, vr)] for tr, vr in zip(total, rows_val)]
    for i in range(3):
        for j in range(6):
            neg, sig, unit = rows[i][j]
            assert total[i][j] == (-1 if neg else 1) * Fraction(sig) * Fraction(2) ** unit


def test_a_width_beyond_the_float_range_is_planned_in_bands_not_an_overflow():
    """The one-plan refusal's message states the moduli product needed as a power of two; a
    width whose product exceeds the float range (2**653 beside 0.0066 under a widened exponent
    range) must still refuse with WidthShortfall, so that the bands take it."""
    from ozgemm.verify.reference import exact_product, measure

    a, b = np.array([[0.0066, 2.0**653]]), np.array([[-62487.86], [61.37]])
    c = ozgemm.load_contract("fp64:exponent_range=900")
    r = ozgemm.matmul(a, b, contract=c)
    assert measure(r, exact_product(a, b), contract=c).breaches == 0

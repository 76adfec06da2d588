"""dd and binary128 contracts: rounding, adversarial products, bounds against the exact
reference, mixed input/output formats, specials, errors. Expected values come from exact
rational arithmetic (Fraction, gmpy2 IEEE contexts, mpmath at 2x the target bits)."""
import math
import random
from fractions import Fraction

import gmpy2
import mpmath
import numpy as np
import pytest

import ozgemm
from ozgemm.contracts.moduli import MODULI
from ozgemm.contracts.formats import FORMATS, quad_dtype, quad_from_bits, quad_to_bits
from ozgemm.precision.rounding import round_limbs_binary128, round_limbs_dd
from ozgemm.verify.inputs import phi_operands
from ozgemm.verify.reference import exact_product, measure

Q = quad_dtype()


def _frac_of(c, i=None, j=None):
    """Exact value of a dd / quad / float scalar result entry."""
    if isinstance(c, ozgemm.DD):
        h, l_ = c.hi[i, j], c.lo[i, j]
        return Fraction(float(h)) + Fraction(float(l_))
    if "Quad" in str(getattr(c, "dtype", "")):
        lo, hi = (int(v) for v in quad_to_bits(c[i:i + 1, j:j + 1]).reshape(2))
        be = (hi >> 48) & 0x7FFF
        sig = (((hi & ((1 << 48) - 1)) << 64) | lo) | ((1 << 112) if be else 0)
        v = Fraction(sig) * Fraction(2) ** (max(be, 1) - 16383 - 112)
        return -v if hi >> 63 else v
    return Fraction(float(c[i, j]))


def _gmpy_quad_words(x: Fraction):
    with gmpy2.context(gmpy2.ieee(128)):
        v = gmpy2.mpfr(gmpy2.mpq(x.numerator, x.denominator))
    if gmpy2.is_infinite(v):
        return 0, (0x7FFF << 48) | ((v < 0) << 63)
    if v == 0:
        return 0, 0
    m, ex = v.as_mantissa_exp()
    m, ex, neg = abs(int(m)), int(ex), v < 0
    sh = 113 - m.bit_length()
    m, ex = m << sh, ex - sh
    if ex < -16494:
        m, ex = m >> (-16494 - ex), -16494
    be, frac = (ex + 112 + 16383, m & ((1 << 112) - 1)) if m >> 112 else (0, m)
    return frac & ((1 << 64) - 1), (be << 48) | (frac >> 64) | (neg << 63)


def test_wide_rounding_matches_gmpy2():
    """dd = (RN64(x), RN64(x - hi)) and binary128 = RN113(x) from multiword integers, against
    gmpy2's IEEE contexts: ties, subnormals, overflow, 0..280-bit integers."""
    rng = random.Random(7)
    vals = []
    for _ in range(1500):
        nb = rng.choice([0, 1, 5, 53, 54, 60, 106, 107, 113, 114, 120, 200, 280])
        X = rng.getrandbits(nb) if nb else 0
        if rng.random() < 0.3 and nb > 12:
            X = ((X >> 10) << 10) | (1 << 9) | (1 << (nb - 1))  # exact ties at many positions
        e = rng.choice([0, -60, -1100, -1174, 900, 16283, -16594, -16450, 700, -1130, 16270, 16270 - 1])
        vals.append((X, e, rng.random() < 0.5))
    L = 9
    mag = np.array([[(X >> (32 * j)) & 0xFFFFFFFF for X, _, _ in vals] for j in range(L)], dtype=np.uint64)
    neg = np.array([n for _, _, n in vals])
    e = np.array([x for _, x, _ in vals], dtype=np.int64)
    with np.errstate(all="ignore"):
        dd = round_limbs_dd(mag, neg, e, np)
        q = round_limbs_binary128(mag, neg, e, np)
    for i, (X, ee, n) in enumerate(vals):
        x = Fraction(X) * Fraction(2) ** ee * (-1 if n else 1)
        with gmpy2.ieee(64):
            h = float(gmpy2.mpfr(gmpy2.mpq(x.numerator, x.denominator)))
            r = x - Fraction(h) if math.isfinite(h) else 0
            lo = float(gmpy2.mpfr(gmpy2.mpq(r.numerator, r.denominator))) if math.isfinite(h) else 0.0
        h, lo = h + 0.0, lo + 0.0  # zero results are +0
        assert dd[0, i] == h and dd[1, i] == lo and np.signbit(dd[0, i]) == np.signbit(h), (X, ee, n)
        assert (int(q[i, 0]), int(q[i, 1])) == _gmpy_quad_words(x), (X, ee, n)


@pytest.mark.parametrize("contract", ["dd", "fp128"])
def test_adversarial_products_need_all_bits(contract):
    # [1, 2^-60] . [1, 1] = 1 + 2^-60: exact in both formats
    c = ozgemm.matmul(np.array([[1.0, 2.0 ** -60]]), np.array([[1.0], [1.0]]), contract=contract)
    assert _frac_of(c, 0, 0) == 1 + Fraction(1, 2**60)
    # cancellation: [1e30, 1, -1e30] . [1, 1, 1] = 1
    c = ozgemm.matmul(np.array([[1e30, 1.0, -1e30]]), np.ones((3, 1)), contract=contract)
    assert _frac_of(c, 0, 0) == 1
    # the exact product of doubles needs 106 bits: (1 + 2^-52)^2 = 1 + 2^-51 + 2^-104
    x = 1 + 2.0 ** -52
    c = ozgemm.matmul(np.array([[x]]), np.array([[x]]), contract=contract)
    assert _frac_of(c, 0, 0) == Fraction(x) ** 2
    # 113 bits: (1 + 2^-56)(1 + 2^-56) + tiny terms, from binary128 operands
    a = (np.array([[1.0, 2.0 ** -100]]).astype(Q) + np.array([[2.0 ** -56, 0.0]]).astype(Q))
    b = np.array([[1.0], [3.0]]).astype(Q) + np.array([[2.0 ** -56], [0.0]]).astype(Q)
    c = ozgemm.matmul(a, b, contract=contract)
    want = (1 + Fraction(1, 2**56)) ** 2 + 3 * Fraction(1, 2**100)
    got = _frac_of(c, 0, 0)
    if contract == "fp128":
        w = _gmpy_quad_words(want)
        assert (int(quad_to_bits(c)[0, 0, 0]), int(quad_to_bits(c)[0, 0, 1])) == w
    else:
        assert abs(got - want) <= Fraction(1, 2**106) * want


def _phi(rng, m, k, n, p):
    return phi_operands(rng, m, k, n, p)


def _widen(x, kind, rng):
    r = rng.random(x.shape) - 0.5
    if kind == "dd":
        return ozgemm.DD(x, x * r * 2.0 ** -53)
    if kind == "quad":
        return x.astype(Q) + (x * r * 2.0 ** -60).astype(Q)
    return x


@pytest.mark.parametrize("contract", ["dd", "fp128", "fp64"])
@pytest.mark.parametrize("kind", ["float", "dd", "quad"])
@pytest.mark.parametrize("shape,p", [((7, 68, 61), 3), ((1, 1, 1), 0.5), ((33, 40, 17), 2), ((16, 16, 16), 0.5)])
def test_wide_bounds_kept(contract, kind, shape, p):
    """The contract's bound holds on every entry, counted exactly against the exact product,
    for float64, dd and binary128 operands (the mixed cases included)."""
    rng = np.random.default_rng(hash((contract, kind, shape)) % 2**32)
    a, b = _phi(rng, *shape, p)
    a, b = _widen(a, kind, rng), _widen(b, kind, rng)
    c = ozgemm.matmul(a, b, contract=contract)
    ex = exact_product(a, b)
    rep = measure(c, ex, ozgemm.load_contract(contract))
    assert rep.breaches == 0


@pytest.mark.parametrize("contract", ["dd", "fp128"])
def test_extreme_exponents(contract):
    """Subnormal-range and huge-exponent operands (binary64 range for dd; far beyond it for
    binary128), and results near dd's reduced-precision range, keep the bound."""
    rng = np.random.default_rng(3)
    a, b = _phi(rng, 6, 9, 5, 1)
    cases = [(a * 2.0 ** -1000, b * 2.0 ** -60), (a * 2.0 ** 500, b * 2.0 ** 480),
             (a * 2.0 ** -1060, b), (a * 2.0 ** -540, b * 2.0 ** -540)]
    for x, y in cases:
        c = ozgemm.matmul(x, y, contract=contract)
        assert measure(c, exact_product(x, y), ozgemm.load_contract(contract)).breaches == 0
    if contract == "fp128":  # binary128-only exponents: 2^+-9000
        big = a.astype(Q) * np.array(2.0 ** 1000, dtype=Q) ** 9
        tiny = b.astype(Q) * np.array(2.0 ** -1000, dtype=Q) ** 9
        for x, y in ((big, tiny), (tiny.T.copy(), (big * np.array(2.0 ** -1000, dtype=Q) ** 20).T.copy())):
            c = ozgemm.matmul(x, y, contract="fp128")
            assert measure(c, exact_product(x, y), ozgemm.load_contract("fp128")).breaches == 0


def test_mpmath_cross_check_at_twice_the_bits():
    """The error measured exactly agrees with mpmath at 2x the target bits (226)."""
    rng = np.random.default_rng(11)
    a, b = _phi(rng, 5, 30, 4, 2)
    aq, bq = _widen(a, "quad", rng), _widen(b, "quad", rng)
    c = ozgemm.matmul(aq, bq, contract="fp128")
    ra, rb = exact_product(aq, np.eye(30)), exact_product(np.eye(30), bq)
    def mp(fr):
        return mpmath.mpf(fr.numerator) / fr.denominator

    with mpmath.workprec(226):
        for i in range(5):
            for j in range(4):
                s = mpmath.mpf(0)
                for l_ in range(30):
                    s += mp(ra.value(i, l_)) * mp(rb.value(l_, j))
                g = _frac_of(c, i, j)
                err = abs(mp(g) - s)
                absab = sum(abs(mp(ra.value(i, l_)) * mp(rb.value(l_, j))) for l_ in range(30))
                assert err <= mpmath.mpf(2) ** -113 * abs(s) + mpmath.mpf(2) ** -112 * absab


def test_dd_result_normalised_and_unpacks():
    rng = np.random.default_rng(2)
    a, b = _phi(rng, 9, 20, 7, 1)
    hi, lo = ozgemm.matmul(a, b, contract="dd")
    s = hi + lo
    assert np.array_equal(s, hi)  # hi = RN(hi + lo)
    # 1-D and batched operands follow numpy.matmul's shapes
    r = ozgemm.matmul(a[0], b, contract="dd")
    assert r.shape == (7,) and np.array_equal(r.hi, hi[0]) and np.array_equal(r.lo, lo[0])
    A = np.stack([a, 2 * a])
    r = ozgemm.matmul(ozgemm.DD(A, 0 * A), b, contract="dd")
    assert r.shape == (2, 9, 7) and np.array_equal(r.hi[1], 2 * hi) and np.array_equal(r.lo[1], 2 * lo)
    q = ozgemm.matmul(a.astype(Q), b.astype(Q), contract="fp128")
    assert q.shape == (9, 7) and "Quad" in str(q.dtype)


def test_unnormalised_dd_input_is_renormalised_exactly():
    a = ozgemm.DD(np.array([[1.0, 3.0]]), np.array([[1.0, 2.0 ** -70]]))  # hi + lo not normalised
    b = np.array([[1.0], [1.0]])
    c = ozgemm.matmul(a, b, contract="dd")
    assert _frac_of(c, 0, 0) == 5 + Fraction(1, 2**70)


def test_quad_bits_round_trip_and_binary128_container():
    x = np.array([[1.0, -2.5], [2.0 ** -60, 3.0]]).astype(Q)
    bits = quad_to_bits(x)
    assert bits.shape == (2, 2, 2) and bits.dtype == np.uint64
    assert np.array_equal(quad_to_bits(quad_from_bits(bits)), bits)
    r = ozgemm.matmul(ozgemm.Binary128(bits), ozgemm.Binary128(bits), contract="fp128")
    assert np.array_equal(quad_to_bits(r), quad_to_bits(ozgemm.matmul(x, x, contract="fp128")))


@pytest.mark.parametrize("contract", ["dd", "fp128"])
def test_specials_in_wide_formats(contract):
    nan, inf = float("nan"), float("inf")
    a = np.array([[nan, 1.0], [inf, 1.0], [1.0, 2.0]])
    b = np.array([[1.0, 0.0], [1.0, 1.0]])
    c = ozgemm.matmul(a, b, contract=contract)
    with np.errstate(all="ignore"):
        want = a @ b
    hi = c.hi if contract == "dd" else c.astype(np.float64)
    assert np.array_equal(np.isnan(hi), np.isnan(want))
    fin = ~np.isnan(want)
    assert np.array_equal(hi[fin], want[fin])
    if contract == "dd":
        assert c.lo[1, 0] == 0.0
    # non-finite dd and quad operands
    d = ozgemm.DD(np.array([[inf, 1.0]]), np.array([[0.0, 0.0]]))
    r = ozgemm.matmul(d, np.array([[1.0], [1.0]]), contract=contract)
    assert (r.hi if contract == "dd" else r.astype(np.float64))[0, 0] == inf


def test_wide_errors_are_typed():
    a = np.ones((2, 2))
    d = ozgemm.DD(a, 0 * a)
    with pytest.raises(TypeError, match="fp32"):
        ozgemm.matmul(d, a.astype(np.float32), contract="fp32")
    with pytest.raises(ValueError, match="out="):
        ozgemm.matmul(a, a, contract="dd", out=np.empty((2, 2)))
    with pytest.raises(TypeError, match="dd"):
        ozgemm.matmul(a.astype(np.int64), a, contract="dd")
    with pytest.raises(ValueError, match="shapes"):
        ozgemm.DD(np.ones(2), np.ones(3))
    a_ro = np.ones((3, 3))
    a_ro.flags.writeable = False
    ozgemm.matmul(ozgemm.DD(a_ro, a_ro * 2.0 ** -60), a_ro, contract="dd")  # inputs never written


@pytest.mark.parametrize("wide", ["dd", "binary128"])
def test_normwise_contract_on_dd_and_binary128_operands(wide):
    """fp64-fast's normwise promise |C - AB|_ij <= u|AB|_ij + 2**-52 k max|A_i,:| max|B_:,j|
    holds for dd and binary128 operands (c/2-unit scaling errors of the components), checked
    with Fractions; (the expected values are Fractions of the operands, hi + lo exactly)."""
    rng = np.random.default_rng(8)
    m, k, n = 4, 30, 3
    hi = rng.standard_normal((m, k))
    lo = hi * rng.uniform(-2.0 ** -54, 2.0 ** -54, (m, k))
    b = rng.standard_normal((k, n))
    if wide == "dd":
        a = ozgemm.DD(hi, lo)
        fa = [[Fraction(float(hi[i, l])) + Fraction(float(lo[i, l])) for l in range(k)] for i in range(m)]
    else:
        fa = [[Fraction(float(hi[i, l])) + Fraction(float(lo[i, l])) for l in range(k)] for i in range(m)]
        a = _quad_exact(fa)
    c = ozgemm.matmul(a, b, contract="fp64-fast")
    for i in range(m):
        amax = max(abs(x) for x in fa[i])
        for j in range(n):
            ab = sum(fa[i][l] * Fraction(float(b[l, j])) for l in range(k))
            bmax = max(abs(Fraction(float(b[l, j]))) for l in range(k))
            err = abs(Fraction(float(c[i, j])) - ab)
            assert err <= abs(ab) / 2 ** 53 + Fraction(k, 2 ** 52) * amax * bmax


def test_moduli_table_covers_250_bits_pairwise_coprime():
    assert len(MODULI) >= 36
    assert sum(math.log2(m) for m in MODULI[:36]) >= 250
    for i, m in enumerate(MODULI):
        assert m <= 256
        for n in MODULI[:i]:
            assert math.gcd(m, n) == 1


def test_formats_declared():
    assert FORMATS["dd"].p == 106 and FORMATS["dd"].emin_sub == -1074
    assert FORMATS["binary128"].p == 113 and FORMATS["binary128"].emin_sub == -16494


def _quad_exact(rows):
    """numpy quad array from exact Fractions that fit binary128 (test helper, no rounding)."""
    out = np.zeros((len(rows), len(rows[0]), 2), dtype=np.uint64)
    for i, r in enumerate(rows):
        for j, v in enumerate(r):
            if v == 0:
                continue
            neg, v = v < 0, abs(v)
            e = v.numerator.bit_length() - v.denominator.bit_length()
            e += (Fraction(2) ** (e + 1) <= v) - (Fraction(2) ** e > v)
            if e < -16382:  # subnormal: biased exponent 0, unit 2**-16494
                e, be = -16382, 0
            else:
                be = e + 16383
            sig = int(v / Fraction(2) ** (e - 112))
            assert Fraction(sig) * Fraction(2) ** (e - 112) == v
            out[i, j] = (sig & ((1 << 64) - 1), ((sig >> 64) & ((1 << 48) - 1)) | (be << 48) | (neg << 63))
    return quad_from_bits(out)


@pytest.mark.parametrize("contract", ["dd", "fp128", "fp64"])
def test_binary128_spread_beyond_binary64_range_is_not_dropped(contract):
    """Entries ~2^1100 below their row's maximum are neither dropped as if the row were exact
    nor refused: the rows go to exponent bands, each scaled on its own, and the promise holds
    (exact reference); the terms 2**1200 * 2**-1300 and 1 + 3 are both in the result."""
    A = _quad_exact([[Fraction(2) ** 1200, Fraction(1), Fraction(3)]])
    B = _quad_exact([[Fraction(2) ** -1300], [Fraction(1)], [Fraction(1)]])
    for a, b in ((A, B), (_quad_exact([[Fraction(2) ** 1000, Fraction(2) ** -100]]),
                          _quad_exact([[Fraction(0)], [Fraction(1)]]))):
        c, plans = ozgemm.matmul(a, b, contract=contract, return_plan=True)
        assert measure(c, exact_product(a, b), ozgemm.load_contract(contract)).breaches == 0
    assert plans[0].method in ("crt", "bands")
    c, plans = ozgemm.matmul(A, B, contract=contract, return_plan=True)
    assert plans[0].method == "bands"
    if contract == "fp128":
        assert _frac_of(c, 0, 0) == 4 + Fraction(1, 2 ** 100)


def _quad_fracs(x):
    """Exact Fractions of a numpy quad array (decoded from its IEEE encoding)."""
    return [[_frac_of(x, i, j) for j in range(x.shape[1])] for i in range(x.shape[0])]


def _exact_bound_check(c, A, B, bits):
    """|C - AB| <= 2^-bits |AB| + 2^-(bits-1) (|A||B|) entry by entry, with Fractions, plus
    half the output format's smallest subnormal (the contracts' subnormal allowance)."""
    m, n = len(A), len(B[0])
    tiny = Fraction(1, 2 ** (16495 if bits == 113 else 1075))
    for i in range(m):
        for j in range(n):
            ab = sum(A[i][l] * B[l][j] for l in range(len(B)))
            aab = sum(abs(A[i][l] * B[l][j]) for l in range(len(B)))
            err = abs(_frac_of(c, i, j) - ab)
            assert err <= Fraction(1, 2 ** bits) * abs(ab) + Fraction(1, 2 ** (bits - 1)) * aab + tiny, (i, j)


_PROMISE_BITS = {"fp128": 113, "dd": 106, "fp64": 53}


def _quad_subnormal(sig):
    """binary128 subnormal sig * 2**-16494 (sig < 2**112) as a (1, 1) quad array."""
    w = np.zeros((1, 1, 2), dtype=np.uint64)
    w[0, 0] = (sig & ((1 << 64) - 1), sig >> 64)
    return quad_from_bits(w)


@pytest.mark.parametrize("contract", ["fp128", "dd", "fp64"])
def test_binary128_subnormal_row_maximum_keeps_the_bound(contract):
    """A row whose largest entries are binary128 subnormals with few significant bits (their
    leading bits lie in the second or third float64 piece, the first is zero): the bound
    GEMM's upper bound counts every piece, not the first alone (which would choose too few
    moduli and let the CRT wrap around). Expected values: Fractions decoded from the
    encodings."""
    bexp = np.zeros((1, 1, 2), dtype=np.uint64)
    bexp[0, 0, 1] = (16000 + 16383) << 48  # 2**16000
    B = quad_from_bits(bexp)
    A = _quad_subnormal(0x123456789ABCDEF)  # 57 significant bits
    c = ozgemm.matmul(A, B, contract=contract)
    exact = Fraction(0x123456789ABCDEF) * Fraction(2) ** (16000 - 16494)
    got = _frac_of(c, 0, 0)
    assert abs(got - exact) <= Fraction(3, 2 ** _PROMISE_BITS[contract]) * exact
    _exact_bound_check(c, _quad_fracs(A), _quad_fracs(B), _PROMISE_BITS[contract])
    # the same row times a float64 column
    c = ozgemm.matmul(A, np.array([[2.0 ** 1000]]), contract=contract)
    _exact_bound_check(c, _quad_fracs(A), [[Fraction(2) ** 1000]], _PROMISE_BITS[contract])


@pytest.mark.parametrize("contract", ["fp128", "dd", "fp64"])
def test_binary128_subnormal_rows_random(contract):
    """Rows of binary128 subnormals with 1..112 significant bits (and zeros), mixed signs,
    times normal binary128 columns: every entry within the promise (Fractions)."""
    rng = random.Random(11)
    m, k, n = 4, 5, 3
    rows = []
    for _ in range(m):
        row = []
        for _ in range(k):
            nb = rng.choice([0, 1, 7, 8, 40, 53, 57, 60, 61, 66, 100, 112])
            v = Fraction(rng.getrandbits(nb) | (1 << (nb - 1)) if nb else 0) * Fraction(2) ** -16494
            row.append(-v if rng.random() < 0.5 else v)
        rows.append(row)
    cols = [[Fraction(rng.getrandbits(30) + 1) * Fraction(2) ** rng.choice([16000, 16003, 16010])
             * rng.choice([-1, 1]) for _ in range(n)] for _ in range(k)]
    A, B = _quad_exact(rows), _quad_exact(cols)
    c = ozgemm.matmul(A, B, contract=contract)
    _exact_bound_check(c, rows, cols, _PROMISE_BITS[contract])


def test_dd_without_lo_keeps_infinite_hi():
    """DD(hi) alone has lo = 0 (not hi * 0, which is NaN for an infinite hi): the product has
    numpy's class (+inf), with no RuntimeWarning."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = ozgemm.DD(np.array([[np.inf, 1.0]]))
        assert d.lo[0, 0] == 0.0
        c = ozgemm.matmul(d, np.array([[2.0], [1.0]]), contract="dd")
    assert c.hi[0, 0] == np.inf and c.lo[0, 0] == 0.0
    assert np.matmul(np.array([[np.inf, 1.0]]), np.array([[2.0], [1.0]]))[0, 0] == np.inf


@pytest.mark.parametrize("contract", ["dd", "fp64", "fp128"])
def test_dd_pair_whose_sum_overflows_is_infinite(contract):
    """A finite DD pair whose value hi + lo reaches 2**1024 has the class of hi + lo (+-inf,
    as docs/semantics.md states); the other entries of its row are unaffected."""
    big = np.finfo(np.float64).max
    d = ozgemm.DD(np.array([[big, 1.0], [-big, 3.0]]), np.array([[big, 0.0], [-big, 0.0]]))
    b = np.array([[2.0], [1.0]])
    c = ozgemm.matmul(d, b, contract=contract)
    hi = c.hi if isinstance(c, ozgemm.DD) else np.asarray(c, dtype=np.float64)
    assert hi[0, 0] == np.inf and hi[1, 0] == -np.inf
    c0 = ozgemm.matmul(d, np.array([[0.0], [1.0]]), contract=contract)  # inf * 0: NaN, as numpy
    hi0 = c0.hi if isinstance(c0, ozgemm.DD) else np.asarray(c0, dtype=np.float64)
    assert np.isnan(hi0).all()


def test_auto_method_falls_back_to_crt_for_wide_formats():
    a = np.random.default_rng(0).standard_normal((8, 8))
    d = ozgemm.DD(a, a * 2.0 ** -60)
    for con in ("dd", "fp128", "fp64"):
        c, p = ozgemm.matmul(d, a, contract=ozgemm.load_contract(con).with_(method="auto"), return_plan=True)
        assert "auto: CRT" in p[0].widened
        assert measure(c, exact_product(d, a), ozgemm.load_contract(con)).breaches == 0


def test_dd_container_errors_are_typed():
    with pytest.raises(TypeError, match="numpy or cupy array"):
        ozgemm.DD([[1.0]], [[0.0]])
    with pytest.raises(TypeError, match="masked"):
        ozgemm.DD(np.ma.masked_array(np.ones(2)))
    assert ozgemm.DD(np.ones(2, dtype=">f8")).hi.dtype == np.float64  # big-endian: same values
    with pytest.raises(TypeError, match="float32 or float64, ozgemm.DD"):
        ozgemm.matmul(np.ones((2, 2), dtype=np.int64), np.ones((2, 2)), contract="dd")


def test_vector_dot_like_numpy_dd_and_fp128():
    """1-D @ 1-D: a DD of 0-d components for dd (not a TypeError), a numpy
    scalar for fp128 on numpy (as numpy.matmul gives a scalar); the dd value keeps the
    contract against the exact dot product (Fractions)."""
    x = np.array([0.1, 1e16, -1e16, 3.0, 2.0 ** -600])
    y = np.array([0.7, 1.0, 1.0, 1 / 3, 5.0])
    exact = sum(Fraction(a) * Fraction(b) for a, b in zip(x, y))
    absprod = sum(abs(Fraction(a) * Fraction(b)) for a, b in zip(x, y))
    c = ozgemm.load_contract("dd")
    r = ozgemm.matmul(ozgemm.DD(x), ozgemm.DD(y), contract=c)
    assert isinstance(r, ozgemm.DD) and r.hi.shape == () and r.lo.shape == ()
    err = abs(Fraction(float(r.hi)) + Fraction(float(r.lo)) - exact)
    assert err <= Fraction(c.fmt.u) * abs(exact) + Fraction(2) ** -(c.bits - 1) * absprod
    if quad_dtype() is not None:
        q = ozgemm.matmul(x, y, contract="fp128")
        assert np.ndim(q) == 0 and not isinstance(q, np.ndarray)
        assert abs(Fraction(float(q)) - exact) <= abs(exact) * Fraction(2) ** -52

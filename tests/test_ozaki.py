"""Ozaki scheme I (ozgemm/ozaki): error bounds, exactness of every phase, method choice.

Every assertion is against an independent exact computation: the exact reference of
ozgemm.verify (python-flint / gmpy2 integers), or Python integers / Fractions built here
(scaled integers, balanced digits, kept slice products, correct rounding by Fraction ->
float, which CPython rounds correctly) — never against the code under test.
"""
import math
from fractions import Fraction

import gmpy2
import numpy as np
import pytest

import ozgemm
from ozgemm import ContractError
from ozgemm.verify.reference import exact_product, measure

from conftest import assert_contract_kept, phi_pair

SHAPES = [(7, 68, 61), (1, 1, 1), (33, 100, 17), (16, 16, 16)]
FP64 = ozgemm.load_contract("fp64")


def contract_of(name):
    if name == "fp64-tri":
        return FP64.with_(method="ozaki", schedule="triangular", name="fp64-tri")
    if name == "fp64-full":
        return FP64.with_(method="ozaki", schedule="full", name="fp64-full")
    if name == "fp64-auto":
        return FP64.with_(method="auto", name="fp64-auto")
    if name == "bits16-ozaki":
        return FP64.with_(method="ozaki", bits=16, name="bits16-ozaki")
    return ozgemm.load_contract(name)


# -- the error bound, as for CRT (tests/test_bounds.py), over methods and schedules -------------
@pytest.mark.parametrize("name", ["fp64-ozaki", "fp32-ozaki", "fp64-full", "fp64-auto", "bits16-ozaki"])
@pytest.mark.parametrize("phi", [0.5, 1, 2, 3])
@pytest.mark.parametrize("shape", SHAPES)
def test_bound_phi(rng, name, phi, shape):
    c_obj = contract_of(name)
    dt = c_obj.fmt.dtype
    a, b = phi_pair(rng, *shape, phi, dt)
    c, plans = ozgemm.matmul(a, b, contract=c_obj, return_plan=True)
    assert c.dtype == dt and c.shape == (shape[0], shape[2])
    if c_obj.method == "ozaki":
        assert plans[0].info()["method"] == "ozaki"
    rep = measure(c, exact_product(a, b), c_obj)
    assert rep.breaches == 0, rep.summary()


@pytest.mark.parametrize("phi", [0.5, 1, 2, 3])
def test_bound_triangular_or_refusal(rng, phi):
    """An explicit triangular schedule either keeps the bound or refuses (entries with a zero
    lower bound LB_ij can only be proven without truncation) — never breaks it."""
    c_obj = contract_of("fp64-tri")
    a, b = phi_pair(rng, 33, 100, 17, phi)
    try:
        c, plans = ozgemm.matmul(a, b, contract=c_obj, return_plan=True)
    except ContractError as exc:
        assert "full" in str(exc)
        return
    assert plans[0].schedule == "triangular"
    assert measure(c, exact_product(a, b), c_obj).breaches == 0


def test_bound_large_k_across_int32_blocks(rng):
    """k = 2**17 + 3 crosses the GPU engine's int32 k-block (131071) and the concatenated
    diagonals (up to s k) cross it many times; the slice width stays 8 (|slice| <= 128, every
    int32 block exact), and the result equals the int64 reference engine."""
    from ozgemm.ozaki.slicing import slice_width

    k = 2**17 + 3
    assert slice_width(k) == slice_width(100) == 8
    a, b = phi_pair(rng, 2, k, 3, 1.0)
    c = ozgemm.matmul(a, b, contract="fp64-ozaki")
    assert measure(c, exact_product(a, b), ozgemm.load_contract("fp64-ozaki")).breaches == 0
    assert np.array_equal(c, ozgemm.matmul(a, b, contract="fp64-ozaki", engine="cpu-int64"))


def test_adversarial_and_specials():
    for dt, name in ((np.float64, "fp64-ozaki"), (np.float32, "fp32-ozaki")):
        big = 1e16 if dt == np.float64 else 1e7
        a = np.array([[big, 1.0, -big], [1.0, 2.0 ** -40, -1.0], [3.0, 1e-30, 3.0], [0.0, 0.0, 0.0]], dtype=dt)
        b = np.array([[1.0, 1.0], [1.0, -1.0], [1.0, 1.0]], dtype=dt)
        c = ozgemm.matmul(a, b, contract=name)
        assert c[0, 0] == 1.0 and c[0, 1] == -1.0 and np.all(c[3] == 0)
        assert_contract_kept(a, b, name)
        tiny = float(np.finfo(dt).smallest_subnormal)
        x = np.array([[np.nan, 1.0, 2.0], [tiny, -tiny, 3 * tiny], [np.inf, 0.0, 1.0]], dtype=dt)
        y = np.array([[1.0, 0.5], [2.0, 1.0], [0.25, -3.0]], dtype=dt)
        assert_contract_kept(x, y, name)
        assert_contract_kept(y.T.copy(), x.T.copy(), name)


def test_normwise_ozaki_keeps_bound(rng):
    c_obj = ozgemm.load_contract("fp64-fast").with_(method="ozaki")
    for phi in (0.5, 3):
        a, b = phi_pair(rng, 9, 70, 11, phi)
        c, plans = ozgemm.matmul(a, b, contract=c_obj, return_plan=True)
        assert plans[0].info()["method"] == "ozaki"
        assert measure(c, exact_product(a, b), c_obj).breaches == 0


# -- independent recomputation of the scheme: scaled integers, digits, kept sum, rounding -------
def _scaled_ints(x, shifts):
    """round-half-up(x_il 2**s_i) as Python ints, from as_integer_ratio (independent)."""
    out = []
    for row, s in zip(x.tolist(), shifts):
        r = []
        for v in row:
            q = Fraction(v) * Fraction(2) ** int(s)
            r.append(math.floor(q + Fraction(1, 2)))
        out.append(r)
    return out


def _digits(X, s, w=8):
    """Balanced base-2**w digits of X, least significant first, each in [-2**(w-1), 2**(w-1))."""
    d = []
    for _ in range(s):
        r = ((X + (1 << (w - 1))) % (1 << w)) - (1 << (w - 1))
        d.append(r)
        X = (X - r) >> w
    assert X == 0
    return d


def _kept_reference(a, b, plan):
    """The integer the plan's schedule keeps, by Python integers, scaled back exactly."""
    s, w = plan.slices, plan.width
    A = _scaled_ints(a, plan.s.tolist())
    B = _scaled_ints(b.T, plan.t.tolist())
    Ad = [[_digits(x, s, w)[::-1] for x in row] for row in A]  # most significant first
    Bd = [[_digits(y, s, w)[::-1] for y in row] for row in B]
    keep = (lambda p, q: p + q <= s - 1) if plan.schedule == "triangular" else (lambda p, q: True)
    m, n = len(A), len(B)
    out = [[None] * n for _ in range(m)]
    for i in range(m):
        for j in range(n):
            tot = 0
            for l in range(len(A[i])):
                for p in range(s):
                    for q in range(s):
                        if keep(p, q):
                            tot += Ad[i][l][p] * Bd[j][l][q] << (w * (2 * s - 2 - p - q))
            out[i][j] = Fraction(tot) * Fraction(2) ** -(int(plan.s[i]) + int(plan.t[j]))
    return out, A, B


def _round(v: Fraction, dt):
    if dt == np.float64:
        return float(v)  # CPython rounds int/int true division correctly
    with gmpy2.context(gmpy2.ieee(32)):
        return float(gmpy2.mpfr(gmpy2.mpq(v.numerator, v.denominator)))


@pytest.mark.parametrize("name,shape,phi", [("fp64-tri", (3, 9, 4), 1.0), ("fp64-full", (4, 7, 3), 3.0),
                                            ("fp32-ozaki", (3, 8, 5), 2.0), ("bits16-ozaki", (5, 6, 2), 0.5)])
def test_result_is_the_correctly_rounded_kept_sum(rng, name, shape, phi):
    c_obj = contract_of(name)
    dt = c_obj.fmt.dtype
    a, b = phi_pair(rng, *shape, phi, dt)
    a[0, 0] = 0.0
    try:
        c, plans = ozgemm.matmul(a, b, contract=c_obj, return_plan=True)
    except ContractError:
        pytest.skip("refused (triangular with a zero lower bound)")
    p = plans[0]
    kept, A, B = _kept_reference(a, b, p)
    assert all(abs(x) <= 2 ** p.beta for row in A + B for x in row)
    want = np.array([[_round(v, dt) for v in row] for row in kept], dtype=dt)
    assert np.array_equal(c.view(np.uint8), want.view(np.uint8)), (c, want)
    # the proven truncation term bounds the dropped products (in units of 2**(E_i+F_j))
    ex = exact_product(a, b)
    for i in range(shape[0]):
        for j in range(shape[2]):
            exact = Fraction(ex.X[i][j]) * Fraction(2) ** (ex.ea[i] + ex.eb[j])
            full = Fraction(sum(x * y for x, y in zip(A[i], B[j]))) * Fraction(2) ** -(int(p.s[i]) + int(p.t[j]))
            unit = Fraction(2) ** (int(p.E[i]) + int(p.F[j]))
            assert abs(kept[i][j] - full) <= Fraction(p.trunc) * unit
            assert abs(kept[i][j] - exact) <= Fraction(float(p.delta_norm[i, j])) * unit


def test_full_schedule_equals_crt_at_equal_width(rng):
    """Full schedule: the kept integer is A'B' itself, so the bits are CRT's at the same beta."""
    from ozgemm.kernels import get_backend
    import dataclasses

    from ozgemm.crt.pipeline import execute as crt_execute
    from ozgemm.ozaki.pipeline import execute as ozaki_execute
    from ozgemm.ozaki.planner import make_ozaki_plan
    from ozgemm.precision.planner import make_plan

    eng = get_backend("cpu")
    a, b = phi_pair(rng, 20, 40, 10, 1.0)
    po = make_ozaki_plan(contract_of("fp64-full"), a, b, eng, force_slices=6)
    assert po.schedule == "full" and po.beta == 46
    for nmod in range(8, 20):
        pc = make_plan(FP64, a, b, eng, force_moduli=nmod)
        if pc.beta >= po.beta:
            break
    pc = dataclasses.replace(pc, beta=po.beta, s=po.s, t=po.t)
    assert np.array_equal(crt_execute(pc, eng, a, b), ozaki_execute(po, eng, a, b))


def test_slices_are_exact_digits():
    from ozgemm.ozaki.slicing import scaled_slices
    from ozgemm.precision.stats import split_float

    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 40)) * np.exp2(rng.integers(-70, 70, (6, 40)))
    x[0, :5] = [5e-324, -5e-324, 0.0, -0.0, 1e308]
    x[1, :3] = [2.0 ** 53 - 1, -(2.0 ** 53), 0.5]
    mant, exp, _ = split_float(x, np)
    for s in (1, 3, 9):
        beta = 8 * s - 2
        E = np.frexp(np.abs(x).max(axis=1))[1].astype(np.int64)
        shift = beta - E
        sl = scaled_slices(mant, exp, shift, s, 8, np, msb_first=True)
        assert sl.dtype == np.int8
        want = _scaled_ints(x, shift.tolist())
        for i in range(6):
            for l in range(40):
                got = sum(int(sl[i, p, l]) << (8 * (s - 1 - p)) for p in range(s))
                assert got == want[i][l], (s, i, l)
    # the extremes of the balanced range: X = +-2**beta and X = -H
    for X in (2 ** 22, -(2 ** 22), -0x808080, 0x7F7F7F):
        xs = np.array([[float(X)]])
        m_, e_, _ = split_float(xs, np)
        sl = scaled_slices(m_, e_, np.zeros(1, np.int64), 3, 8, np, msb_first=False)
        assert sum(int(sl[0, j, 0]) << (8 * j) for j in range(3)) == X


def test_limb_accumulator_exact():
    from ozgemm.ozaki.accumulate import LimbAccumulator

    rng = np.random.default_rng(3)
    ds = [rng.integers(-2**62, 2**62, (4, 5)) for _ in range(9)]
    ds[0][0, 0] = -2**63
    ds[1][0, 0] = 2**63 - 1
    offs = [8 * (8 - t) for t in range(9)]
    acc = LimbAccumulator((4, 5), max(offs), len(ds), np)
    for d, o in zip(ds, offs):
        acc.add(d, o)
    mag, neg = acc.finish()
    for i in range(4):
        for j in range(5):
            want = sum(int(d[i, j]) << o for d, o in zip(ds, offs))
            got = sum(int(mag[q, i, j]) << (32 * q) for q in range(mag.shape[0]))
            assert (-got if neg[i, j] else got) == want


def test_narrow_to_float32_every_class():
    from ozgemm.ozaki.accumulate import narrow_to_float32

    rng = np.random.default_rng(5)
    bits = np.concatenate([rng.integers(0, 2**32, 20000, dtype=np.uint64), np.arange(0, 300),
                           0x80000000 + np.arange(0, 300), [0x7f800000, 0xff800000, 0x7f7fffff, 0x00800000,
                                                            0x007fffff]]).astype(np.uint32)
    x = bits.view(np.float32)
    x = x[~np.isnan(x)]
    got = narrow_to_float32(x.astype(np.float64), np)
    assert np.array_equal(got.view(np.uint32), x.view(np.uint32))
    big = narrow_to_float32(np.array([2.0 ** 128, -(2.0 ** 200), np.inf]), np)
    assert np.array_equal(big, np.array([np.inf, -np.inf, np.inf], dtype=np.float32))


def test_schedule_counts_and_diagonals():
    from ozgemm.ozaki.schedule import diagonals, n_products

    for s in range(1, 9):
        for sched in ("triangular", "full"):
            pairs = [(p, t - p) for t, p0, p1 in diagonals(s, sched) for p in range(p0, p1)]
            assert len(pairs) == len(set(pairs)) == n_products(s, sched)
            assert all(0 <= p < s and 0 <= q < s for p, q in pairs)
            if sched == "triangular":
                assert set(pairs) == {(p, q) for p in range(s) for q in range(s) if p + q <= s - 1}


# -- contracts and the method choice ---------------------------------------------------------------
def test_contracts_and_overrides(rng):
    c = ozgemm.load_contract("fp64").with_(method="ozaki")
    assert c.method == "ozaki" and c.bits == 53
    assert ozgemm.load_contract("fp64-ozaki").promise() == ozgemm.load_contract("fp64").promise()
    assert ozgemm.load_contract("fp32-ozaki").promise() == ozgemm.load_contract("fp32").promise()
    with pytest.raises(ContractError, match="schedule"):
        c.with_(schedule="diagonal")
    with pytest.raises(ContractError, match="slices"):
        c.with_(slices=0)


def test_fixed_slices_too_few_refused(rng):
    a, b = phi_pair(rng, 10, 30, 8, 0.5)
    with pytest.raises(ContractError, match="slices"):
        ozgemm.plan(a, b, FP64.with_(method="ozaki", slices=3))
    p = ozgemm.plan(a, b, FP64.with_(method="ozaki", slices=12, schedule="full"))
    assert p.slices == 12 and p.int8_gemms == 145


def test_auto_picks_a_method_that_keeps_the_bound(rng):
    a, b = phi_pair(rng, 30, 200, 20, 0.5)
    for bits in (8, 24, 53):
        c_obj = FP64.with_(method="auto", bits=bits)
        c, plans = ozgemm.matmul(a, b, contract=c_obj, return_plan=True)
        info = plans[0].info()
        assert info["method"] in ("crt", "ozaki") and "auto: modelled cost" in info["widened"]
        assert measure(c, exact_product(a, b), c_obj).breaches == 0


def test_engines_bit_identical(rng):
    a, b = phi_pair(rng, 37, 1100, 29, 0.5)  # k > 1024: several float32 BLAS blocks
    for name in ("fp64-ozaki", "fp64-tri"):
        c1 = ozgemm.matmul(a, b, contract=contract_of(name))
        c2 = ozgemm.matmul(a, b, contract=contract_of(name), engine="cpu-int64")
        assert np.array_equal(c1.view(np.uint8), c2.view(np.uint8))


def test_tiling_bit_identical(rng):
    from ozgemm.kernels import get_backend

    eng = get_backend("cpu")
    a, b = phi_pair(rng, 40, 50, 23, 1.0)
    full = ozgemm.matmul(a, b, contract="fp64-ozaki")
    old = eng.memory_budget_bytes
    try:
        eng.memory_budget_bytes = 48 * (40 * 50 + 50 * 23) + 2 * 9 * 23 * 50 + 40 * 23 * 50 + 3 * (2 * 9 * 50 + 8 * 70 * 23)
        assert np.array_equal(ozgemm.matmul(a, b, contract="fp64-ozaki"), full)
    finally:
        eng.memory_budget_bytes = old


def test_too_many_fixed_slices_is_a_contract_error():
    """22+ fixed slices with the full schedule exceed the exact limb accumulator: refused
    when planning, with a ContractError naming the fix."""
    a = np.random.default_rng(0).standard_normal((6, 6))
    c = ozgemm.load_contract("fp64").with_(method="ozaki", slices=50, schedule="full")
    with pytest.raises(ozgemm.ContractError, match="diagonals"):
        ozgemm.matmul(a, a, contract=c)

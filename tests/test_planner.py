"""The closed-form width search against a brute-force check of the same sufficient condition."""
import dataclasses
import numpy as np
import pytest

import ozgemm
from ozgemm.kernels import get_backend
from ozgemm.precision.planner import LB_BITS, required_beta
from ozgemm.precision.stats import row_stats
from ozgemm.verify.inputs import phi_operands


def brute(sa, sb, lb, bits, k, u, K_const):
    fac = (1 + u) * (1 + 2.0 ** -40)
    R = lb.astype(np.float64) * 2.0 ** (-(bits - 1) - 2 * LB_BITS)
    for beta in range(1, 400):
        x = (sa.width > beta).astype(float)[:, None]
        y = (sb.width > beta).astype(float)[None, :]
        K = k * 2.0 ** (1 - bits) if K_const else k * 2.0 ** (-beta - 1)
        G = x * sb.norm1[None, :] + y * (sa.norm1[:, None] + x * K)
        if np.all(2.0 ** (-beta - 1) * G * fac <= R):
            return beta
    return None


@pytest.mark.parametrize("seed", range(12))
def test_required_beta_is_minimal_and_sound(seed):
    rng = np.random.default_rng(seed)
    m, k, n = rng.integers(1, 9, 3)
    spread = [0, 5, 20, 40][seed % 4]
    a = rng.standard_normal((m, k)) * np.exp2(rng.integers(-spread, spread + 1, (m, k)))
    b = rng.standard_normal((k, n)) * np.exp2(rng.integers(-spread, spread + 1, (k, n)))
    if seed % 3 == 0:
        a[rng.random((m, k)) < 0.4] = 0
        b = np.round(b * 8) / 8  # some exactly representable columns
    sa, sb = row_stats(a, np), row_stats(b.T, np)
    lb = get_backend("cpu").gemm_exact(sa.q, sb.q)
    got = int(required_beta(sa, sb, lb, 53, k, 2.0 ** -53, np))
    want = brute(sa, sb, lb, 53, k, 2.0 ** -53, True)
    assert got == max(want, 1)
    # sound for the exact (beta-dependent) condition too
    assert brute(sa, sb, lb, 53, k, 2.0 ** -53, False) <= got


def _norm_maxima_by_hand(rows):
    """(max n1, max n2) over ``rows``: n1 = sum ceil(|x| 2**(30 - E)), n2 = sum
    ceil(|x| 2**(15 - E))**2 with E the row's exponent (|x| < 2**E), in Python integers."""
    import math
    from fractions import Fraction

    n1s, n2s = [], []
    for row in rows:
        mx = max(abs(float(v)) for v in row)
        e = math.frexp(mx)[1] if mx else 0
        n1s.append(sum(math.ceil(abs(Fraction(float(v))) * Fraction(2) ** (30 - e)) for v in row))
        n2s.append(sum(math.ceil(abs(Fraction(float(v))) * Fraction(2) ** (15 - e)) ** 2 for v in row))
    return max(n1s), max(n2s)


def _normwise_plan_by_hand(a, b, bits=53, u=None, moduli=None):
    """(minimal width, moduli, width) of a normwise plan, written here from the rule's
    definition with Python integers and Fractions: the row/column 1-norm bounds
    n1 = sum ceil(|x| 2**(30 - E)) and n2 = sum ceil(|x| 2**(15 - E))**2 (E: |x| < 2**E),
    S = min(k, min(n1)/2**30, ceil(sqrt(n2a n2b))/2**30), the smallest width w with
    u k + (1 + u) 2**(1-w) (na + nb + k 2**(-w-1)) <= 2**-(bits-1) k, the fewest moduli with
    M > 2 (S 2**(2w) + k 2**w + k) (or ``moduli``), then the widest width they allow."""
    import math
    from fractions import Fraction

    from ozgemm.contracts.moduli import MODULI

    u = Fraction(1, 2**53) if u is None else u
    k = a.shape[1]
    n1a, n2a = _norm_maxima_by_hand(a)
    n1b, n2b = _norm_maxima_by_hand(b.T)
    cs = math.isqrt(n2a * n2b)
    cs += cs * cs < n2a * n2b
    S = min(Fraction(k), Fraction(min(n1a, n1b), 2**30), Fraction(cs, 2**30))
    na, nb = Fraction(n1a, 2**30), Fraction(n1b, 2**30)
    w = 1
    while u * k + (1 + u) * Fraction(2) ** (1 - w) * (na + nb + k * Fraction(2) ** (-w - 1)) > Fraction(k, 2 ** (bits - 1)):
        w += 1

    def holds(M, beta):
        return M > 2 * (S * 2 ** (2 * beta) + k * 2**beta + k)

    n = moduli or next(n for n in range(1, len(MODULI) + 1) if holds(math.prod(MODULI[:n]), w))
    M = math.prod(MODULI[:n])
    beta = w
    while holds(M, beta + 1):
        beta += 1
    return w, n, beta


_NORMWISE_CASES = ["phi0.5", "phi3", "ones", "one-large", "k1", "tiny-k-rows"]


def _normwise_case(case):
    rng = np.random.default_rng(5)
    return {"phi0.5": lambda: phi_operands(rng, 6, 300, 5, 0.5),
            "phi3": lambda: phi_operands(rng, 6, 300, 5, 3.0),
            "ones": lambda: (np.full((4, 500), 1 - 2.0**-40), np.full((500, 3), -(1 - 2.0**-40))),
            "one-large": lambda: (np.eye(7, 400) * 1e3 + 1e-9, np.eye(400, 6) * 5 + 1e-12),
            "k1": lambda: (rng.standard_normal((3, 1)), rng.standard_normal((1, 4))),
            "tiny-k-rows": lambda: phi_operands(rng, 2, 3, 2, 1.0)}[case]()


@pytest.mark.parametrize("case", _NORMWISE_CASES)
def test_normwise_plan_follows_the_norms(case):
    """fp64-fast's minimal width, moduli count and width come from the row and column norms
    exactly as the rule says (computed here by hand); the same data scaled by powers of two
    plans alike; entries all within 2**-30 of a power of two below it (1-norm bounds of k, the
    norms' worst case) take width bits + 3, the data-independent rule."""
    a, b = _normwise_case(case)
    want = _normwise_plan_by_hand(a, b)
    p = ozgemm.plan(a, b, "fp64-fast")
    assert (p.n_moduli, p.beta) == want[1:] and f"minimal width {want[0]} " in p.info()["widened"]
    q = ozgemm.plan(a * 2.0**-40, b * 2.0**300, "fp64-fast")
    assert (q.n_moduli, q.beta) == (p.n_moduli, p.beta)
    if case == "ones":
        assert want[0] == 56
    fixed = ozgemm.load_contract("fp64-fast").with_(moduli=17)
    r = ozgemm.plan(a, b, fixed)
    assert (r.n_moduli, r.beta) == _normwise_plan_by_hand(a, b, moduli=17)[1:] and r.beta >= 56


@pytest.mark.parametrize("case", _NORMWISE_CASES)
def test_normwise_scalars_hold_the_norm_maxima_and_the_minimal_width(case):
    """What a normwise plan reads (and a speculative one keeps on the device): the minimal width
    and the 1-norm and 2-norm maxima computed here by hand, S <= k as the third source, and the
    NaN/Inf flag last when one is given."""
    from ozgemm.kernels import get_backend
    from ozgemm.precision.planner import normwise_thresholds, statistics

    a, b = _normwise_case(case)
    k = a.shape[1]
    eng = get_backend("cpu")
    sa, sb = statistics(a, b, eng)
    c = ozgemm.load_contract("fp64-fast")
    got = eng.normwise_scalars(sa, sb, normwise_thresholds(c, k), k)
    w = _normwise_plan_by_hand(a, b)[0]
    want = [w, *_norm_maxima_by_hand(a)[:1], *_norm_maxima_by_hand(b.T)[:1], _norm_maxima_by_hand(a)[1],
            _norm_maxima_by_hand(b.T)[1], k * 2**14 - k]
    assert got.dtype == np.int64 and got.tolist() == want
    flagged = eng.normwise_scalars(sa, sb, normwise_thresholds(c, k), k, np.ones((1,), dtype=np.int32))
    assert flagged.tolist() == want + [1]


def test_normwise_promise_with_the_fewest_moduli():
    """The data-derived plan keeps fp64-fast's promise |C - AB|_ij <= 2**-52 k max|A_i,:|
    max|B_:,j| on every entry against exact rational arithmetic, and uses fewer moduli than
    the data-independent 17 on ordinary inputs; fp32 with a normwise contract likewise."""
    from fractions import Fraction

    rng = np.random.default_rng(11)
    for con, dt in (("fp64-fast", np.float64),
                    ("fp32-fast", np.float32)):
        c_ = ozgemm.load_contract(con) if isinstance(con, str) else con
        for phi in (0.5, 4.0):
            a, b = (x.astype(dt) for x in phi_operands(rng, 7, 90, 6, phi))
            c, (p,) = ozgemm.matmul(a, b, contract=c_, return_plan=True)
            if c_.fmt.name == "binary64":
                assert p.n_moduli < 17
            k = a.shape[1]
            for i in range(7):
                ra = max(abs(Fraction(float(v))) for v in a[i])
                for j in range(6):
                    rb = max(abs(Fraction(float(v))) for v in b[:, j])
                    exact = sum(Fraction(float(a[i, l])) * Fraction(float(b[l, j])) for l in range(k))
                    assert abs(Fraction(float(c[i, j])) - exact) <= Fraction(k, 2 ** (c_.bits - 1)) * ra * rb


@pytest.mark.parametrize("p", [0.5, 3])
def test_lb_gemm_upper_bound_covers_abs_product(p):
    """(LB_ij + sum_l qa_il + sum_l qb_lj + k) 2**-14 >= sum_l |a~_il||b~_lj| for every entry,
    checked with exact Fractions (a~ = a 2**-E_i, b~ = b 2**-F_j)."""
    from fractions import Fraction

    from ozgemm.kernels import get_backend
    from ozgemm.precision.planner import _lb_upper_max
    from ozgemm.precision.stats import row_stats

    rng = np.random.default_rng(int(p * 10))
    a, b = phi_operands(rng, 9, 23, 7, p)
    sa, sb = row_stats(a, np), row_stats(b.T, np)
    lb = get_backend("cpu", np).gemm_exact(sa.q, sb.q)
    ub = int(_lb_upper_max(lb, sa.qsum, sb.qsum, np))
    exact_max = max(sum(abs(Fraction(a[i, l]) * Fraction(b[l, j])) * Fraction(2) ** (-int(sa.E[i]) - int(sb.E[j]))
                        for l in range(23)) for i in range(9) for j in range(7))
    assert exact_max <= Fraction(ub + 23, 2**14)
    assert exact_max > Fraction(ub + 23, 2**14) / 2  # and it is not vacuous


def test_min_moduli_for_equals_fraction_oracle():
    """min_moduli_for (integer comparisons) gives the fewest moduli whose product exceeds
    2 Cmax(beta) computed with Fractions (cmax), for dyadic, non-dyadic and float S."""
    from fractions import Fraction

    from ozgemm.precision.planner import moduli_exceeding
    from ozgemm.precision import planner as P

    rng = np.random.default_rng(6)
    Ss = [Fraction(int(rng.integers(1, 2**40)), 2**int(rng.integers(0, 40))) for _ in range(40)]
    Ss += [Fraction(int(rng.integers(1, 10**9)), int(rng.integers(1, 10**6))) for _ in range(20)]
    Ss += [4096.0, 0.1, 1.5e6]
    for S in Ss:
        for beta in (1, 17, 30, 53, 58, 61, 101, 160):
            for k, c in ((1, 1), (4096, 1), (16384, 2), (131071, 4)):
                want = moduli_exceeding(2 * P.cmax(beta, S, k, c))
                assert P.min_moduli_for(beta, S, k, c) == want, (S, beta, k, c)
    # exactly at a product: M = 2 Cmax needs one modulus more (M > 2 Cmax is strict)
    from ozgemm.precision.planner import moduli_product
    M3 = moduli_product(3)
    S = (Fraction(M3, 2) - 2 - 1) / 4  # Cmax(1) = 4 S + 2 + 1 = M3 / 2
    assert 2 * P.cmax(1, S, 1, 1) == M3
    assert P.min_moduli_for(1, S, 1, 1) == 4
    assert P.max_beta_for(M3, S, 1, 1, 1) == 0
    S = (Fraction(2 * M3 - 1, 4) - 3) / 4  # 2 Cmax(1) = M3 - 1/2: three moduli suffice
    assert 2 * P.cmax(1, S, 1, 1) == M3 - Fraction(1, 2)
    assert P.min_moduli_for(1, S, 1, 1) == 3
    assert P.max_beta_for(M3, S, 1, 1, 1) == 1


def test_max_beta_for_equals_linear_search():
    """The galloping search of max_beta_for returns the largest beta <= the cap with
    M > 2 Cmax(beta), as a plain linear scan does (including 0 and the cap)."""
    from fractions import Fraction

    from ozgemm.precision.planner import moduli_product
    from ozgemm.precision import planner as P

    rng = np.random.default_rng(5)
    cases = [(moduli_product(int(n)), Fraction(int(rng.integers(1, 2**20)), 2**int(rng.integers(0, 30))),
              int(rng.integers(1, 2**18)), int(lo), int(c))
             for n, lo, c in zip(rng.integers(1, 40, 60), rng.integers(1, 80, 60), rng.choice([1, 2, 4], 60))]
    cases.append((2**3000, Fraction(1), 1, 1, 1))  # every beta ok: the cap
    cases.append((2, Fraction(1), 1, 1, 1))  # none ok: 0
    for M, S, k, lo, c in cases:
        ok = [b for b in range(max(lo, 1), P._BETA_CAP + 1) if M > 2 * P.cmax(b, S, k, c)]
        want = 0 if not ok or ok[0] != max(lo, 1) else max(ok)
        assert P.max_beta_for(M, S, k, lo, c) == want, (M, S, k, lo, c)


def _spec_beta_model(s, L, k):
    """The device's width selection for a speculative plan (stats.cu spec_beta), restated:
    largest b >= beta_min valid in the table, 0 when beta_min is not valid, out of the table,
    or when the table's last row is valid."""
    def valid(b):
        l0, l1, l2 = (int(v) for v in L[b])
        return ((l0 >= 0 and min(s[1], s[2]) <= l0) or (l1 >= 0 and s[3] * s[4] <= l1 * l1)
                or (l2 >= 0 and s[5] + k <= l2))
    hi = L.shape[0] - 1
    lo = s[0]
    if lo < 1 or lo >= hi or not valid(lo) or valid(hi):
        return 0
    return max(b for b in range(lo, hi) if valid(b))


@pytest.mark.parametrize("cpow", [1, 2])
def test_speculative_thresholds_equal_fraction_oracle(cpow):
    """speculative_thresholds + the device's selection give the planner's width for the same
    moduli count: the largest beta >= beta_min with M > 2 Cmax(beta) for S = _s_bound(scalars)
    (Fraction arithmetic, _cmax), or 0 (no speculation) -- never a different nonzero width.
    Scalars are drawn around the thresholds (k 1..2**17, 8..30 moduli) and exactly at them."""
    from fractions import Fraction

    from ozgemm.precision.planner import moduli_product
    from ozgemm.precision import planner as P

    rng = np.random.default_rng(17)
    nonzero = 0
    for _ in range(400):
        nmod = int(rng.integers(8, 31))
        k = int(rng.integers(1, 2**17))
        L = P.speculative_thresholds(nmod, k, cpow)
        M = moduli_product(nmod)
        b0 = int(rng.integers(1, P.SPEC_BETA_HI - 1))
        # one source at its threshold for some width (+-1), the others random or large
        # (thresholds above 2**60 are clamped; the planner's scalars stay below 2**61: n1, n2
        # <= k 2**30 with k < 2**31, ub < 2**15 k)
        t = [int(v) if int(v) < 2**60 else -1 for v in L[b0]]
        n1 = max(0, t[0] + int(rng.integers(-1, 2))) if t[0] >= 0 else int(rng.integers(0, 2**40))
        n1b = n1 + int(rng.integers(0, 3)) * int(rng.integers(0, 2**20))
        if t[1] >= 0 and rng.random() < 0.5:
            n2a = max(1, t[1] + int(rng.integers(-2, 3)))
            n2b = n2a if rng.random() < 0.5 else n2a + 1
        else:
            n2a, n2b = int(rng.integers(0, 2**43)), int(rng.integers(0, 2**43))
        ub = max(0, t[2] - k + int(rng.integers(-1, 2))) if t[2] >= 0 else int(rng.integers(0, 2**35))
        beta_min = int(rng.integers(1, b0 + 2))
        s = [beta_min, n1, n1b, n2a, n2b, ub]
        got = _spec_beta_model(s, L, k)
        S = P.s_bound(s, k)
        ok = [b for b in range(beta_min, P.SPEC_BETA_HI + 1) if M > 2 * P.cmax(b, S, k, cpow)]
        if got:
            nonzero += 1
            assert ok and ok[0] == beta_min and got == max(ok) < P.SPEC_BETA_HI, (nmod, k, s)
            assert got == P.max_beta_for(M, S, k, beta_min, cpow)
        else:
            assert not ok or ok[0] != beta_min or max(ok) >= P.SPEC_BETA_HI or beta_min >= P.SPEC_BETA_HI
    assert nonzero > 100  # the comparison is not vacuous
    assert isinstance(S, Fraction)


def testspeculation_guess_follows_last_plan():
    """The moduli count guessed for a componentwise plan is the contract's fixed count, or the
    count of the last plan with the same contract, shapes and dtypes (none before the first)."""
    from ozgemm.precision import planner as P
    from ozgemm.contracts.contract import as_contract

    c = as_contract("fp64")
    a, b = np.zeros((5, 7)), np.zeros((7, 3))
    key = P.guess_key(c, a, b)
    P.set_guess(key, None)
    assert P.speculation_guess(c, key) is None
    P.set_guess(key, 17, 60)
    assert P.speculation_guess(c, key) == 17
    assert P.speculation_guess(c, P.guess_key(c, a.astype(np.float32), b)) is None
    fixed = dataclasses.replace(c, moduli=19)
    assert P.speculation_guess(fixed, P.guess_key(fixed, a, b)) == 19
    # a last width beyond the device's table: no speculation (it could not be confirmed)
    P.set_guess(key, 41, P.SPEC_BETA_HI)
    assert P.speculation_guess(c, key) is None
    P.set_guess(P.guess_key(fixed, a, b), 19, P.SPEC_BETA_HI + 3)
    assert P.speculation_guess(fixed, P.guess_key(fixed, a, b)) is None
    P.set_guess(key, None)
    P.set_guess(P.guess_key(fixed, a, b), None)


def test_speculative_thresholds_exact_at_the_boundary():
    """Each threshold L[b][s] is exactly the largest numerator of source s that keeps
    M > 2 Cmax(b) (Fraction oracle _cmax): L itself passes and L + 1 fails, for every width of
    the table and every moduli count of the table (where L is below the clamp), several k."""
    from fractions import Fraction

    from ozgemm.contracts.moduli import MODULI
    from ozgemm.precision.planner import moduli_product
    from ozgemm.precision import planner as P
    from ozgemm.precision.stats import LB_BITS, NORM_BITS

    dens = (2**NORM_BITS, 2**NORM_BITS, 2 ** (2 * LB_BITS))
    checked = 0
    for nmod in range(1, len(MODULI) + 1):
        M = moduli_product(nmod)
        for k in (1, 2, 1000, 2**17 - 1):
            L = P.speculative_thresholds(nmod, k)
            for b in range(P.SPEC_BETA_HI + 1):
                for col, den in enumerate(dens):
                    v = int(L[b, col])
                    if v >= P._SPEC_CLAMP:
                        continue
                    if v >= 0:
                        assert M > 2 * P.cmax(b, Fraction(v, den), k), (nmod, k, b, col)
                        checked += 1
                    assert not M > 2 * P.cmax(b, Fraction(v + 1, den), k), (nmod, k, b, col)
    assert checked > 1000


def test_second_window_lower_bound_is_below_the_exact_magnitudes():
    """LB2 = 2**14 qa qb^T + q1a q1b^T (units 2**-28) <= (|A~||B~|)_ij, checked with Fractions
    on phi = 3 inputs (most entries below 2**-7 of their row maximum), and strictly above
    2**14 LB where the 7-bit bound is 0."""
    from fractions import Fraction

    from ozgemm.kernels.numpy import NumpyBackend
    from ozgemm.precision.planner import second_window, statistics
    from ozgemm.verify.inputs import phi_operands

    eng = NumpyBackend()
    a, b = phi_operands(np.random.default_rng(2), 6, 300, 5, 3.0)
    sa, sb = statistics(a, b, eng)
    lb = eng.gemm_exact(sa.q, sb.q).astype(np.int64)
    lb2 = lb * 2**14 + eng.gemm_exact(second_window(a, sa.E, np), second_window(b.T, sb.E, np))
    assert (lb == 0).any() and (lb2[lb == 0] > 0).all()
    for i in range(6):
        for j in range(5):
            exact = sum(abs(Fraction(float(a[i, l])) * Fraction(float(b[l, j]))) for l in range(300))
            scale = Fraction(2) ** int(sa.E[i] + sb.E[j])
            assert Fraction(int(lb2[i, j]), 2**28) * scale <= exact


def test_refined_bound_saves_moduli_keeps_the_contract_and_stacks_agree(monkeypatch):
    """phi = 2: the refined lower bound plans fewer moduli than the 7-bit one alone (counted
    with the refinement switched off), one more INT8 GEMM is reported, the contract holds
    (exact check) and a stack of such products gives the per-product bits. (The size from
    which products refine is lowered to this test's.)"""
    import ozgemm.precision.planner as P
    from ozgemm.contracts.contract import as_contract
    from ozgemm.verify.audit import measure_any
    from ozgemm.verify.inputs import phi_operands

    assert ozgemm.plan(*phi_operands(np.random.default_rng(4), 40, 2000, 30, 2.0), "fp64").bound_gemms == 1
    monkeypatch.setattr(P, "REFINE_MIN_WORK", 0)

    a, b = phi_operands(np.random.default_rng(4), 40, 2000, 30, 2.0)
    for name in ("fp64", "fp64-dgemm", "fp32"):
        x, y = (a.astype(np.float32), b.astype(np.float32)) if name == "fp32" else (a, b)
        c, plans = ozgemm.matmul(x, y, contract=name, return_plan=True)
        p = plans[0]
        assert "refined" in p.widened and p.int8_gemms == p.n_moduli + 2
        assert measure_any(c, x, y, as_contract(name))["breaches"] == 0
        assert np.array_equal(c, ozgemm.matmul(x, y, contract=name, engine="cpu-int64"))
        with monkeypatch.context() as mp:
            mp.setattr(P, "REFINE_GAP", 10**6)
            q = ozgemm.plan(x, y, name)
        assert p.n_moduli < q.n_moduli and "refined" not in q.widened
    s = np.stack([a[:10], a[10:20]])
    cs = ozgemm.matmul(s, b)
    for i in range(2):
        assert np.array_equal(cs[i], ozgemm.matmul(s[i], b))

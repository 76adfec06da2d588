"""The closed-form width search against a brute-force check of the same sufficient condition."""
import numpy as np
import pytest

import ozgemm
from ozgemm.kernels import get_engine
from ozgemm.precision.planner import LB_BITS, required_beta
from ozgemm.precision.stats import row_stats


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
    lb = get_engine("cpu").gemm_exact(sa.q, sb.q)
    got = int(required_beta(sa, sb, lb, 53, k, 2.0 ** -53, np))
    want = brute(sa, sb, lb, 53, k, 2.0 ** -53, True)
    assert got == max(want, 1)
    # sound for the exact (beta-dependent) condition too
    assert brute(sa, sb, lb, 53, k, 2.0 ** -53, False) <= got


def test_normwise_beta_data_independent():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 1000))
    p1 = ozgemm.plan(a, a.T, "fp64-fast")
    p2 = ozgemm.plan(a * 1e-3, (a * 7).T, "fp64-fast")
    assert p1.beta == p2.beta >= 56


@pytest.mark.parametrize("p", [0.5, 3])
def test_lb_gemm_upper_bound_covers_abs_product(p):
    """(LB_ij + sum_l qa_il + sum_l qb_lj + k) 2**-14 >= sum_l |a~_il||b~_lj| for every entry,
    checked with exact Fractions (a~ = a 2**-E_i, b~ = b 2**-F_j)."""
    from fractions import Fraction

    from ozgemm.kernels import get_engine
    from ozgemm.precision.planner import _lb_upper_max
    from ozgemm.precision.stats import row_stats

    rng = np.random.default_rng(int(p * 10))
    a = (rng.random((9, 23)) - 0.5) * np.exp(p * rng.standard_normal((9, 23)))
    b = (rng.random((23, 7)) - 0.5) * np.exp(p * rng.standard_normal((23, 7)))
    sa, sb = row_stats(a, np), row_stats(b.T, np)
    lb = get_engine("cpu", np).gemm_exact(sa.q, sb.q)
    ub = int(_lb_upper_max(lb, sa.qsum, sb.qsum, np))
    exact_max = max(sum(abs(Fraction(a[i, l]) * Fraction(b[l, j])) * Fraction(2) ** (-int(sa.E[i]) - int(sb.E[j]))
                        for l in range(23)) for i in range(9) for j in range(7))
    assert exact_max <= Fraction(ub + 23, 2**14)
    assert exact_max > Fraction(ub + 23, 2**14) / 2  # and it is not vacuous


def test_min_moduli_for_equals_fraction_oracle():
    """_min_moduli_for (integer comparisons) gives the fewest moduli whose product exceeds
    2 Cmax(beta) computed with Fractions (_cmax), for dyadic, non-dyadic and float S."""
    from fractions import Fraction

    from ozgemm.crt.moduli import moduli_exceeding
    from ozgemm.precision import planner as P

    rng = np.random.default_rng(6)
    Ss = [Fraction(int(rng.integers(1, 2**40)), 2**int(rng.integers(0, 40))) for _ in range(40)]
    Ss += [Fraction(int(rng.integers(1, 10**9)), int(rng.integers(1, 10**6))) for _ in range(20)]
    Ss += [4096.0, 0.1, 1.5e6]
    for S in Ss:
        for beta in (1, 17, 30, 53, 58, 61, 101, 160):
            for k, c in ((1, 1), (4096, 1), (16384, 2), (131071, 4)):
                want = moduli_exceeding(2 * P._cmax(beta, S, k, c))
                assert P._min_moduli_for(beta, S, k, c) == want, (S, beta, k, c)
    # exactly at a product: M = 2 Cmax needs one modulus more (M > 2 Cmax is strict)
    from ozgemm.crt.moduli import moduli_product
    M3 = moduli_product(3)
    S = (Fraction(M3, 2) - 2 - 1) / 4  # Cmax(1) = 4 S + 2 + 1 = M3 / 2
    assert 2 * P._cmax(1, S, 1, 1) == M3
    assert P._min_moduli_for(1, S, 1, 1) == 4
    assert P._max_beta_for(M3, S, 1, 1, 1) == 0
    S = (Fraction(2 * M3 - 1, 4) - 3) / 4  # 2 Cmax(1) = M3 - 1/2: three moduli suffice
    assert 2 * P._cmax(1, S, 1, 1) == M3 - Fraction(1, 2)
    assert P._min_moduli_for(1, S, 1, 1) == 3
    assert P._max_beta_for(M3, S, 1, 1, 1) == 1


def test_max_beta_for_equals_linear_search():
    """The galloping search of _max_beta_for returns the largest beta <= the cap with
    M > 2 Cmax(beta), as a plain linear scan does (including 0 and the cap)."""
    from fractions import Fraction

    from ozgemm.crt.moduli import moduli_product
    from ozgemm.precision import planner as P

    rng = np.random.default_rng(5)
    cases = [(moduli_product(int(n)), Fraction(int(rng.integers(1, 2**20)), 2**int(rng.integers(0, 30))),
              int(rng.integers(1, 2**18)), int(lo), int(c))
             for n, lo, c in zip(rng.integers(1, 40, 60), rng.integers(1, 80, 60), rng.choice([1, 2, 4], 60))]
    cases.append((2**3000, Fraction(1), 1, 1, 1))  # every beta ok: the cap
    cases.append((2, Fraction(1), 1, 1, 1))  # none ok: 0
    for M, S, k, lo, c in cases:
        ok = [b for b in range(max(lo, 1), P._BETA_CAP + 1) if M > 2 * P._cmax(b, S, k, c)]
        want = 0 if not ok or ok[0] != max(lo, 1) else max(ok)
        assert P._max_beta_for(M, S, k, lo, c) == want, (M, S, k, lo, c)

"""ozgemm.gemm: alpha A B + beta C exact then rounded once, against exact Fractions; and the
iterative-refinement recipe of the README (the exact residual b - A x in double-double)."""
from fractions import Fraction

import numpy as np
import pytest

import ozgemm

U_DD = Fraction(1, 2**106)


def _val(r, i, j=None):
    idx = (i,) if j is None else (i, j)
    if isinstance(r, ozgemm.DD):
        return Fraction(float(r.hi[idx])) + Fraction(float(r.lo[idx]))
    return Fraction(float(r[idx]))


@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (-1.0, 1.0), (0.1, 3.0), (2.0 ** -40, -0.75), (-3.0, 1e-30)])
def test_gemm_keeps_the_dd_promise(alpha, beta):
    rng = np.random.default_rng(5)
    a = (rng.random((6, 9)) - 0.5) * np.exp2(rng.integers(-20, 20, (6, 9)))
    b = rng.standard_normal((9, 4))
    c = rng.standard_normal((6, 4)) * 1e3
    r = ozgemm.gemm(a, b, c, alpha=alpha, beta=beta, contract="dd")
    al, be = Fraction(alpha), Fraction(beta)
    for i in range(6):
        for j in range(4):
            ab = sum(Fraction(a[i, l]) * Fraction(b[l, j]) for l in range(9))
            x = al * ab + be * Fraction(c[i, j])
            absum = abs(al) * sum(abs(Fraction(a[i, l]) * Fraction(b[l, j])) for l in range(9)) + abs(be * Fraction(c[i, j]))
            assert abs(_val(r, i, j) - x) <= U_DD * abs(x) + 2 * U_DD * absum, (i, j)


def test_gemm_vector_and_float_results():
    rng = np.random.default_rng(6)
    a, x, b = rng.standard_normal((7, 5)), rng.standard_normal(5), rng.standard_normal(7)
    r = ozgemm.gemm(a, x, b, alpha=-1.0, beta=1.0)  # fp64 (float operands)
    assert r.shape == (7,) and r.dtype == np.float64
    for i in range(7):
        exact = Fraction(b[i]) - sum(Fraction(a[i, l]) * Fraction(x[l]) for l in range(5))
        absum = sum(abs(Fraction(a[i, l]) * Fraction(x[l])) for l in range(5)) + abs(Fraction(b[i]))
        assert abs(Fraction(float(r[i])) - exact) <= Fraction(1, 2**53) * abs(exact) + Fraction(1, 2**52) * absum
    assert np.array_equal(ozgemm.gemm(a, x), ozgemm.matmul(a, x))
    with pytest.raises(ValueError, match="shape"):
        ozgemm.gemm(a, x, np.ones(6), beta=1.0)
    with pytest.raises(ValueError, match="power of two"):
        ozgemm.gemm(ozgemm.DD(a), x, alpha=0.3)
    with pytest.raises(ValueError, match="double-double"):
        ozgemm.gemm(np.full((2, 2), 1e300), np.ones((2, 2)), alpha=1e10 + 1)


def _hilbert(n):
    return [[Fraction(1, i + j + 1) for j in range(n)] for i in range(n)]


def _solve_exact(A, b):
    n = len(A)
    M = [row[:] + [bi] for row, bi in zip(A, b)]
    for c in range(n):
        p = next(r for r in range(c, n) if M[r][c] != 0)
        M[c], M[p] = M[p], M[c]
        for r in range(n):
            if r != c and M[r][c] != 0:
                f = M[r][c] / M[c][c]
                M[r] = [x - f * y for x, y in zip(M[r], M[c])]
    return [M[i][n] / M[i][i] for i in range(n)]


def test_iterative_refinement_recipe():
    """Mixed-precision refinement with the exact residual: the float64 solution of a Hilbert
    system (condition ~1e13) reaches full double accuracy (every entry within 1 ulp of the
    exact solution), where float64 residuals leave it ~1e-4 off."""
    n = 10
    A = np.array([[float(v) for v in row] for row in _hilbert(n)])
    b = np.ones(n)
    exact = _solve_exact([[Fraction(v) for v in row] for row in A.tolist()], [Fraction(1)] * n)
    x = np.linalg.solve(A, b)
    P = ozgemm.prepare(np.column_stack([A, b]), "dd")  # the README's faster form of the residual
    for _ in range(10):  # the README's recipe
        r = ozgemm.gemm(A, x, b, alpha=-1.0, beta=1.0, contract="dd")  # b - A x, exact, rounded once
        rp = ozgemm.matmul(P, np.append(-x, 1.0))
        assert np.array_equal(rp.hi, r.hi) and np.array_equal(rp.lo, r.lo)
        x = x + np.linalg.solve(A, r.to_float64())
    err = max(abs(Fraction(float(xi)) - e) / abs(e) for xi, e in zip(x, exact))
    assert err <= Fraction(1, 2**52)
    xf = np.linalg.solve(A, b)
    for _ in range(10):
        xf = xf + np.linalg.solve(A, b - A @ xf)
    err_f = max(abs(Fraction(float(xi)) - e) / abs(e) for xi, e in zip(xf, exact))
    assert err_f > 1000 * err  # float64 residuals stall far from it


def test_gemm_float32_operands_are_scaled_in_binary64():
    """alpha is applied in binary64 (float32 operands widen exactly first): 3e38 * 2^-200 is a
    float32 value and comes back exactly, under fp32, fp64 and dd."""
    a, b = np.array([[3e38]], np.float32), np.array([[1.0]], np.float32)
    exact = Fraction(float(np.float32(3e38))) * Fraction(2) ** -200
    for con in (None, "fp64", "dd"):
        r = ozgemm.gemm(a, b, alpha=2.0 ** -200, contract=con)
        assert _val(r, 0, 0) == exact, con
    r = ozgemm.gemm(np.array([[1e-30]], np.float32), b, alpha=1e-20, contract="dd")
    x = Fraction(1e-20) * Fraction(float(np.float32(1e-30)))
    assert abs(_val(r, 0, 0) - x) <= 3 * U_DD * abs(x)
    assert ozgemm.gemm(np.array([[1e38]], np.float32), b, alpha=3.0, contract="fp64")[0, 0] == 3 * float(np.float32(1e38))
    a32 = np.ones((2, 2), np.float32)
    assert ozgemm.gemm(a32, a32, a32, beta=1.0).dtype == np.float32  # numpy's dtype; the identity block too
    with pytest.raises(ValueError, match="binary32"):
        ozgemm.gemm(a32, a32, alpha=0.1, contract="fp32")


def test_gemm_operands_are_checked_not_rounded():
    z = np.zeros((1, 1))
    with pytest.raises(TypeError, match="dtype int64"):
        ozgemm.gemm(z, z, np.array([[2 ** 53 + 1]]), beta=1.0, contract="dd")
    with pytest.raises(TypeError, match="dtype complex"):
        ozgemm.gemm(z, z, np.array([[1 + 1j]]), beta=1.0)
    with pytest.raises(ValueError, match="c has shape"):
        ozgemm.gemm(np.ones((2, 2)), np.ones((2, 2)), np.ones(3))  # checked with beta = 0 too
    with pytest.raises(TypeError, match="beta must be a real scalar"):
        ozgemm.gemm(z, z, z, beta=np.ones(2))
    with pytest.raises(ValueError, match="beta \\* c"):
        ozgemm.gemm(z, z, np.array([[1e300]]), beta=1e10 + 1)


@pytest.mark.parametrize("contract", ["fp64", "dd"])
def test_gemm_nonfinite_entries_follow_ieee_entry_by_entry(contract):
    """NaN/Inf in C affect only their own entries (not the whole row through the identity
    block), NaN/Inf in A give numpy's classes; finite entries keep the exact fused value."""
    a = np.array([[1.0, 2.0], [3.0, 4.0], [np.inf, 1.0]])
    b = np.array([[1.0, 0.5], [2.0, -1.0]])
    c = np.array([[np.inf, 1.0], [np.nan, 2.0], [1.0, 1.0]])
    r = ozgemm.gemm(a, b, c, alpha=-1.0, beta=1.0, contract=contract)
    hi = r.hi if isinstance(r, ozgemm.DD) else r
    with np.errstate(invalid="ignore"):
        want = -(a @ b) + c
    assert np.array_equal(np.isnan(hi), np.isnan(want))
    assert np.array_equal(hi[~np.isnan(want)], want[~np.isnan(want)])  # small integers: exact
    r2 = ozgemm.gemm(a, b, c, alpha=0.1, beta=1.0, contract=contract)
    hi2 = r2.hi if isinstance(r2, ozgemm.DD) else r2
    assert np.isinf(hi2[0, 0]) and np.isnan(hi2[1, 0]) and np.isinf(hi2[2, 0])
    exact = Fraction(0.1) * (Fraction(1) * Fraction(0.5) + Fraction(2) * Fraction(-1)) + 1
    assert abs(_val(r2, 0, 1) - exact) <= 4 * (U_DD if contract == "dd" else Fraction(1, 2**53)) * 3


def test_gemm_dd_c_whose_sum_overflows_stays_in_its_entry():
    """A DD entry of C whose hi + lo overflows has the class +inf (docs/semantics.md) and,
    like any non-finite entry of C, does not reach the rest of its row."""
    big = np.finfo(np.float64).max
    c = ozgemm.DD(np.array([[big, 1.0], [2.0, 3.0]]), np.array([[big, 0.0], [0.0, 0.0]]))
    r = ozgemm.gemm(np.eye(2), np.eye(2), c, alpha=1.0, beta=1.0, contract="dd")
    assert r.hi.tolist() == [[np.inf, 1.0], [2.0, 4.0]] and r.lo.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_gemm_classes_of_nonfinite_c_follow_ieee_and_keep_the_contract():
    """Where C holds NaN/Inf the entry is alpha (AB) + beta C in IEEE arithmetic (AB's class by
    the term-by-term rule, finite AB entries leaving C's class); no product runs outside the
    contract (its max_gemms cap holds for the whole call)."""
    a = np.array([[1.0, 2.0], [np.inf, 1.0], [3.0, -1.0]])
    b = np.array([[1.0, -1.0], [2.0, 0.5]])
    c = np.array([[np.inf, 1.0], [-np.inf, np.nan], [2.0, -np.inf]])
    con = ozgemm.load_contract("fp64").with_(max_gemms=40, name="capped")
    r = ozgemm.gemm(a, b, c, alpha=2.0, beta=-1.0, contract=con)
    with np.errstate(all="ignore"):
        want = 2.0 * (a @ b) - c
    bad = ~np.isfinite(c) | ~np.isfinite(want)
    assert np.array_equal(np.isnan(r[bad]), np.isnan(want[bad]))
    fin = bad & ~np.isnan(want)
    assert np.array_equal(r[fin], want[fin])
    assert r[0, 1] == 2.0 * 0.0 - 1.0 and r[2, 0] == 2.0 * 1.0 - 2.0


def test_power_of_two_factors_scale_subnormal_entries_exactly():
    """alpha, beta = +-1 or powers of two scale subnormal float64 entries exactly where the
    scaled value is a double (the result then follows from the exact value, Fractions)."""
    from fractions import Fraction

    tiny = np.array([[5e-324, -3 * 5e-324]])
    ones = np.array([[1.0], [1.0]])
    for alpha in (-1.0, 2.0, -4.0):
        c = ozgemm.gemm(tiny, ones, alpha=alpha, contract="fp64")
        want = Fraction(alpha) * (Fraction(5e-324) - 3 * Fraction(5e-324))
        assert Fraction(float(c[0, 0])) == want
    # the residual form with a subnormal c: computed (no refusal), within the dd bound
    c = ozgemm.gemm(np.array([[1.0]]), np.array([[1.0]]), np.array([[5e-324]]), alpha=1.0, beta=-1.0, contract="dd")
    x = 1 - Fraction(5e-324)
    assert float(c.hi[0, 0]) == 1.0
    assert abs(Fraction(float(c.hi[0, 0])) + Fraction(float(c.lo[0, 0])) - x) <= x / 2**105

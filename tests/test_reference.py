"""The exact reference itself, against plain Fraction sums and CPython's correct rounding."""
from fractions import Fraction

import numpy as np
import pytest

from ozgemm.verify.inputs import phi_operands
from ozgemm.verify.reference import correctly_rounded, exact_product, measure
from ozgemm import load_contract


def frac_product(a, b):
    m, k = a.shape
    n = b.shape[1]
    return [[sum((Fraction(float(a[i, l])) * Fraction(float(b[l, j])) for l in range(k)), Fraction(0))
             for j in range(n)] for i in range(m)]


@pytest.mark.parametrize("shape", [(3, 5, 4), (1, 1, 1), (6, 2, 7)])
def test_exact_product_equals_fraction_sum(rng, shape):
    m, k, n = shape
    a, b = phi_operands(rng, m, k, n, 3)
    a[0, 0] = 5e-324  # subnormal input
    ex = exact_product(a, b)
    F = frac_product(a, b)
    absF = frac_product(np.abs(a), np.abs(b))
    for i in range(m):
        for j in range(n):
            assert ex.value(i, j) == F[i][j]
            assert ex.abs_value(i, j) == absF[i][j]
    cr = correctly_rounded(ex)
    want = np.array([[F[i][j].numerator / F[i][j].denominator for j in range(n)] for i in range(m)])
    assert np.array_equal(cr, want)


def test_measure_counts_breaches_exactly():
    a = np.array([[1.0, 2.0 ** -30]])
    b = np.array([[1.0], [1.0]])
    ex = exact_product(a, b)
    c_ok = np.array([[1.0 + 2.0 ** -30]])
    c_bad = np.array([[1.0]])  # error 2^-30 >> bound 2^-53 + 2^-52 (1 + 2^-30)
    fp64 = load_contract("fp64")
    assert measure(c_ok, ex, fp64).breaches == 0
    r = measure(c_bad, ex, fp64)
    assert r.breaches == 1 and r.correctly_rounded == 0.0
    # an error exactly at the bound is kept (<=), one ulp beyond is not
    a = np.array([[1.0]])
    b = np.array([[1.0]])
    ex = exact_product(a, b)
    at = 1.0 + 2.0 ** -52  # |err| = 2^-52 <= 2^-53*1 + 2^-52*1
    assert measure(np.array([[at]]), ex, fp64).breaches == 0
    assert measure(np.array([[1.0 + 2 * 2.0 ** -52]]), ex, fp64).breaches == 1


def test_measure_ulps_and_units():
    a = np.array([[3.0]])
    b = np.array([[1.0]])
    ex = exact_product(a, b)
    r = measure(np.array([[np.nextafter(3.0, 4.0)]]), ex)
    assert r.ulps[0, 0] == 1
    assert r.err_u[0, 0] == pytest.approx(2.0 ** -51 / (2.0 ** -53 * 3))

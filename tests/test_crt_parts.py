"""Residues and Garner reconstruction against plain Python integers."""
import random
from fractions import Fraction
from math import prod

import numpy as np
import pytest

from ozgemm.crt.reconstruct import crt_reconstruct
from ozgemm.contracts.moduli import MODULI
from ozgemm.crt.residues import scaled_residues
from ozgemm.precision.stats import split_float
from ozgemm.verify.inputs import phi_matrix


@pytest.mark.parametrize("n", [2, 14, 17, 20, 36, len(MODULI)])
def test_crt_reconstruct_signed(n):
    M = prod(MODULI[:n])
    r = random.Random(n)
    vals = [r.randrange(-(M // 2) + 1, M // 2) for _ in range(400)]
    vals += [M // 2 - 1, -(M // 2) + 1, 0, 1, -1]
    c = np.array([[v % m for v in vals] for m in MODULI[:n]], dtype=np.int64)
    mag, neg = crt_reconstruct(c, n, np)
    got = [(-1 if neg[i] else 1) * sum(int(mag[j, i]) << (32 * j) for j in range(mag.shape[0])) for i in range(len(vals))]
    assert got == vals


def test_scaled_residues_match_python(rng):
    x = phi_matrix(rng, (5, 40), 6)
    x[0, :3] = [5e-324, -2.0 ** -1060, 0.0]
    x[1, 0] = 1.5  # a tie after scaling by 2**0 -> round half up
    shifts = np.array([70, 0, -3, 200, 1100], dtype=np.int64)
    mant, exp, _ = split_float(x, np)
    moduli = MODULI[:20]
    res = scaled_residues(mant, exp, shifts, moduli, np)
    for i in range(x.shape[0]):
        for l in range(x.shape[1]):
            v = Fraction(float(x[i, l])) * Fraction(2) ** int(shifts[i])
            X = (v + Fraction(1, 2)).__floor__()  # round half up
            for q, m in enumerate(moduli):
                want = X % m
                if want > (m - 1) // 2:
                    want -= m
                assert int(res[q, i, l]) == want, (i, l, m)
    assert res.dtype == np.int8


@pytest.mark.parametrize("n", [1, 2, 5, 17, 33, 49])
def test_direct_crt_equals_garner_and_python_ints(n):
    """crt_reconstruct (direct CRT through an exact float64 GEMM, quotient estimate and
    corrections) against Garner's mixed-radix digits and Python integers, on random residues
    and on the extremes (all zero, all m-1, C' = +-(M-1)/2 neighbourhoods)."""
    from ozgemm.crt.reconstruct import crt_reconstruct, garner_digits, mixed_radix_to_limbs
    from ozgemm.crt.moduli import garner_constants

    gc = garner_constants(n)
    rng = np.random.default_rng(n)
    vals = [0, 1, -1, (gc.M - 1) // 2, -((gc.M - 1) // 2), (gc.M - 1) // 2 - 1] + \
        [int(rng.integers(0, 2**62)) * int(rng.integers(0, 2**62)) % gc.M - gc.M // 2 for _ in range(300)]
    vals = [v for v in vals if 2 * abs(v) < gc.M]
    c = np.array([[v % m for v in vals] for m in gc.moduli], dtype=np.int64)
    mag, neg = crt_reconstruct(c, n, np)
    x = mixed_radix_to_limbs(garner_digits(c, gc, np), gc, np)
    for i, v in enumerate(vals):
        got = sum(int(mag[j, i]) << (32 * j) for j in range(gc.limbs)) * (-1 if neg[i] else 1)
        assert got == v
        X = sum(int(x[j, i]) << (32 * j) for j in range(gc.limbs))
        assert (X if 2 * X < gc.M else X - gc.M) == v

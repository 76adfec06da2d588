"""The CPU engine's own moduli (primes up to 2965821, about 2**21.5): float64 GEMMs at the
largest sums the exactness bound allows, the exact reduction at its limit, the generic direct
CRT reconstruction, and wide scaled residues."""
from math import prod

import numpy as np
import pytest

from ozgemm.contracts.moduli import MODULI
from ozgemm.crt.moduli import WIDE_BOUND, WIDE_MODULI, garner_constants, wide_moduli
from ozgemm.crt.reconstruct import crt_reconstruct
from ozgemm.crt.residues import scaled_residues
from ozgemm.kernels.numpy import DGEMM_EXACT_K, NumpyBackend


def test_wide_moduli_cover_the_table():
    assert all(m <= WIDE_BOUND and m % 2 for m in WIDE_MODULI) and len(set(WIDE_MODULI)) == len(WIDE_MODULI)
    assert all(all(m % d for d in range(3, int(m ** 0.5) + 1, 2)) for m in WIDE_MODULI)  # primes
    for n in range(1, len(MODULI) + 1):
        w = wide_moduli(n)
        assert prod(w) >= 4 * prod(MODULI[:n]) and prod(w[:-1]) < 4 * prod(MODULI[:n])
    assert len(wide_moduli(16)) == 6 and len(wide_moduli(17)) == 7


def test_wide_bound_is_the_exactness_limit():
    """WIDE_BOUND is the largest odd p whose k-block sums |c| <= 1024 ((p-1)/2)**2 keep
    |c + 1/2| < 2**51 / (1 + 2**-54) (exact rational arithmetic here, independent of the code)."""
    from fractions import Fraction

    lim = Fraction(2**51) / (1 + Fraction(1, 2**54))
    h = (WIDE_BOUND - 1) // 2
    assert DGEMM_EXACT_K * h * h + Fraction(1, 2) < lim <= DGEMM_EXACT_K * (h + 1) ** 2 + Fraction(1, 2)


def test_reduce_exact_at_the_limit():
    """The float64 reduction c - p floor((c + 1/2) fl(1/p)) of block sums at and near the
    largest magnitude, and at multiples of p and their neighbours there, for the largest
    moduli and an odd p at WIDE_BOUND itself: [0, p) and equal to Python's c % p."""
    rng = np.random.default_rng(5)
    moduli = list(WIDE_MODULI[:4]) + [WIDE_BOUND]
    rows = []
    for p in moduli:
        top = DGEMM_EXACT_K * ((p - 1) // 2) ** 2
        q = top // p
        vals = [top, -top, top - 1, -(top - 1), 0, 1, -1]
        for j in (q, q - 1, q - 2, -q, -q + 1):
            vals += [j * p, j * p - 1, j * p + 1, j * p + (p - 1) // 2, j * p - (p - 1) // 2]
        vals += [int(v) for v in rng.integers(-top, top + 1, size=60)]
        rows.append([v for v in vals if abs(v) <= top][:70])
    c = np.array(rows, dtype=np.float64)[:, None, :]
    assert all(float(int(v)) == v for v in c.ravel())  # exact integers in float64
    NumpyBackend._reduce(c, moduli)
    for q, p in enumerate(moduli):
        assert [int(v) for v in c[q, 0]] == [v % p for v in rows[q]], p


@pytest.mark.parametrize("k", [DGEMM_EXACT_K, 3 * DGEMM_EXACT_K + 17])
@pytest.mark.parametrize("sign", ["same", "mixed"])
def test_residue_products_largest_sums(k, sign):
    """All residues at +-(p-1)/2 (the largest symmetric residues, |r| <= 1482910): block sums
    at the bound 1024 ((p-1)/2)**2 < 2**51, against Python integers."""
    be = NumpyBackend("blas")
    moduli = wide_moduli(17)
    rng = np.random.default_rng(k)
    m, n = 3, 4
    h = np.array([(p - 1) // 2 for p in moduli], dtype=np.float64)[:, None, None]
    if sign == "same":
        sa, sb = np.ones((m, k)), np.ones((n, k))
        sa[1] = -1
    else:
        sa, sb = rng.choice([-1.0, 1.0], (m, k)), rng.choice([-1.0, 1.0], (n, k))
    ra, rb = h * sa[None], h * sb[None]
    c = be.residue_products(ra, rb, moduli)
    for q, p in enumerate(moduli):
        A = [[int(v) for v in row] for row in ra[q]]
        B = [[int(v) for v in row] for row in rb[q]]
        for i in range(m):
            for j in range(n):
                want = sum(x * y for x, y in zip(A[i], B[j])) % p
                assert c[q, i, j] == want, (q, i, j)


@pytest.mark.parametrize("n_table", [1, 2, 16, 17, 30, 49])
def test_crt_reconstruct_wide(n_table):
    """|C'| < M/2 (M of the plan's table moduli) from residues mod the wide moduli."""
    M = prod(MODULI[:n_table])
    w = wide_moduli(n_table)
    rng = np.random.default_rng(n_table)
    vals = [0, 1, -1, M // 2 - 1, -(M // 2 - 1), M // 3, -(M // 5)]
    vals += [int(rng.integers(-2**62, 2**62)) * int(rng.integers(1, 2**62)) % M - M // 2 for _ in range(40)]
    vals = [v for v in vals if abs(v) < M / 2 or abs(v) * 2 < M]
    c = np.array([[v % p for v in vals] for p in w], dtype=np.int64)
    for cc, bound in ((c, None), (c.astype(np.float64), None), (c, M // 2 + 1), (c.astype(np.float64), M // 2 + 1)):
        mag, neg = crt_reconstruct(cc, w, np, bound)
        for i, v in enumerate(vals):
            got = sum(int(mag[j, i]) << (32 * j) for j in range(mag.shape[0]))
            assert (-got if neg[i] else got) == v, (i, v)
    # the 8-bit path through the same code
    c8 = np.array([[v % p for v in vals] for p in MODULI[:n_table]], dtype=np.int64)
    mag, neg = crt_reconstruct(c8, n_table, np)
    assert mag.shape[0] == garner_constants(n_table).limbs
    for i, v in enumerate(vals):
        got = sum(int(mag[j, i]) << (32 * j) for j in range(mag.shape[0]))
        assert (-got if neg[i] else got) == v


@pytest.mark.parametrize("moduli", ["wide", "table"])
@pytest.mark.parametrize("narrow", [False, True])
@pytest.mark.parametrize("C", [1, 2, 3])
def test_scaled_residues_wide(C, narrow, moduli):
    """Residues mod the wide moduli (and the 8-bit table's) of round(mant 2**(exp + s)) for
    shifts down to rounding and up to very wide integers (many chunks), components added;
    ``narrow``: every exp + s <= 9, the scaled integers below 2**62 (the signed-chunk path),
    with the extremes +-(2**53 - 1) 2**9 and round-half-up ties of both signs."""
    rng = np.random.default_rng(C + 10 * narrow)
    r, k = 5, 9
    mant = rng.integers(-(2**53) + 1, 2**53, (C, r, k), dtype=np.int64)
    mant[..., 0] = 2**53 - 1
    mant[..., 1] = -(2**53 - 1)
    mant[..., 2] = 0
    mant[..., 3] = 3  # 3 2**-1 and -3 2**-1: ties
    mant[..., 4] = -3
    exp = rng.integers(-80, 10, (C, r, k), dtype=np.int64)
    shift = np.array([0, 30, 200, 900, 2000], dtype=np.int64)
    if narrow:
        exp[..., 3:5] = -1
        shift = np.array([0, 1, 5, -20, -60], dtype=np.int64)
        exp = np.minimum(exp, 9 - shift[None, :, None])
        exp[:, 0, :2] = 9  # (2**53 - 1) 2**9: the widest scaled integers
        exp[:, 2, 3:5] = -1 - 5  # ties after the shift of row 2 too
    moduli = wide_moduli(49) if moduli == "wide" else MODULI[:17]
    got = scaled_residues(mant, exp, shift, moduli, np, dtype=np.float64)
    for i in range(r):
        for l in range(k):
            X = 0
            for c in range(C):
                d = int(exp[c, i, l]) + int(shift[i])
                mv = int(mant[c, i, l])
                X += mv << d if d >= 0 else (mv + (1 << (-d - 1))) >> -d
            for q, p in enumerate(moduli):
                assert got[q, i, l] == (X + p // 2) % p - p // 2, (i, l, q)

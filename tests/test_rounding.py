"""The final rounding against CPython's correctly rounded int/int division and gmpy2."""
import random

import gmpy2
import numpy as np
import pytest

from ozgemm.contracts.formats import get_format
from ozgemm.precision.rounding import round_limbs


def to_limbs(vals, L):
    arr = np.zeros((L, len(vals)), dtype=np.uint64)
    for i, v in enumerate(vals):
        for j in range(L):
            arr[j, i] = (abs(v) >> (32 * j)) & 0xFFFFFFFF
    return arr


def ref64(x, e):
    # CPython's int true division is correctly rounded (half-even, gradual underflow)
    try:
        return x * 2**e / 1 if e >= 0 else x / 2 ** (-e)
    except OverflowError:
        return float("inf") if x > 0 else float("-inf")


def ref32(x, e):
    with gmpy2.ieee(32):
        q = gmpy2.mpq(x * 2**e, 1) if e >= 0 else gmpy2.mpq(x, 2 ** (-e))
        return np.float32(float(gmpy2.mpfr(q)))


def cases(seed, count=3000, L=8):
    r = random.Random(seed)
    xs, es = [], []
    for _ in range(count):
        bits = r.choice([1, 2, 24, 25, 53, 54, 55, 64, 65, 100, 200, L * 32 - 1])
        x = r.getrandbits(bits) | 1 if r.random() < 0.5 else r.getrandbits(bits)
        kind = r.random()
        if kind < 0.2:  # exact ties: odd mantissa followed by a one and zeros
            x = (r.getrandbits(53) | (1 << 52)) * 2 + 1
            x <<= r.randint(0, 40)
        elif kind < 0.3:
            x = (1 << bits) - 1  # all ones: carry into a new binade
        x = -x if r.random() < 0.5 else x
        e = r.choice([r.randint(-1200, 1100), r.randint(-1150, -1050), r.randint(-200, 200),
                      r.randint(950, 1030)]) - x.bit_length() // 2
        xs.append(x), es.append(e)
    return xs, es


@pytest.mark.parametrize("seed", [1, 2])
def test_binary64_matches_python_division(seed):
    xs, es = cases(seed)
    L = 8
    mag = to_limbs(xs, L)
    neg = np.array([x < 0 for x in xs])
    got = round_limbs(mag, neg, np.array(es, dtype=np.int64), get_format("binary64"), np)
    want = np.array([ref64(x, e) for x, e in zip(xs, es)])
    want[want == 0] = 0.0  # documented: a result rounding to zero is +0 (numpy.matmul's sign)
    bad = np.nonzero(got.view(np.int64) != want.view(np.int64))[0]
    assert bad.size == 0, [(xs[i], es[i], got[i], want[i]) for i in bad[:5]]


def test_binary32_matches_gmpy2():
    xs, es = cases(3, 2000)
    es = [e // 8 for e in es]  # move into binary32's range
    got = round_limbs(to_limbs(xs, 8), np.array([x < 0 for x in xs]), np.array(es, dtype=np.int64),
                      get_format("binary32"), np)
    want = np.array([ref32(x, e) for x, e in zip(xs, es)], dtype=np.float32)
    want[want == 0] = 0.0
    assert got.dtype == np.float32
    assert np.array_equal(got.view(np.int32), want.view(np.int32))


def test_specific_edges():
    f = get_format("binary64")
    vals = [(1, -1074), (1, -1075), (3, -1076), (1, -1076), ((1 << 53) - 1, 971), ((1 << 54) - 1, 970),
            (0, 5), ((1 << 53) + 1, -1), ((1 << 53) + 3, 0)]
    mag = to_limbs([v for v, _ in vals], 4)
    got = round_limbs(mag, np.zeros(len(vals), bool), np.array([e for _, e in vals]), f, np)
    want = [ref64(v, e) for v, e in vals]
    assert got.tolist() == want
    neg = round_limbs(to_limbs([1], 1), np.array([True]), np.array([-1076]), f, np)
    assert neg[0] == 0.0 and not np.signbit(neg[0])  # -2^-1076 rounds to +0, like numpy.matmul
    neg = round_limbs(to_limbs([3], 1), np.array([True]), np.array([-1076]), f, np)
    assert neg[0] == -5e-324
    assert got[1] == 0.0 and got[2] == 5e-324 and got[5] == np.inf

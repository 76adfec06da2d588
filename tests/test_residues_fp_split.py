"""The FP64 split of the GPU residue kernels (crt.cu ``split_scaled_fp``), restated step by step
in exact rational arithmetic with each round-down (RD) operation modelled exactly, against the
definition X' = floor(x 2^sh + 1/2) (round half up, ozgemm/crt/residues.py). CPU only: the
kernel itself is compared with Python integers on the GPU (tests/test_gpu.py)."""
import math
import struct
from fractions import Fraction

import numpy as np
import pytest

T = 6755399441055744.0  # 1.5 2^52


def _rd(v: Fraction) -> float:
    """The largest double <= v (round toward -inf)."""
    f = float(v)  # correctly rounded to nearest
    return math.nextafter(f, -math.inf) if Fraction(f) > v else f


def _words(d: float) -> tuple[int, int]:
    b = struct.unpack("<Q", struct.pack("<d", d))[0]
    return b & 0xFFFFFFFF, b >> 32


def split_fp_model(x: float, sh: int):
    """(u_lo, u_hi, ok) exactly as the kernel computes them (u = X' + 2^62 when ok)."""
    scale = math.ldexp(1.0, sh)
    y = x * scale  # IEEE round to nearest: exact unless |y| < 2^-1022
    t1 = _rd(Fraction(_rd(Fraction(y) * Fraction(1, 2**32))) + Fraction(T))
    hi = t1 - T
    rem = _rd(Fraction(y) - Fraction(hi) * 2**32)
    t2 = _rd(Fraction(_rd(Fraction(rem) + Fraction(1, 2))) + Fraction(T))
    lo_w, t2_hi = _words(t2)
    t1_lo, _ = _words(t1)
    u_hi = (t1_lo + t2_hi + 0x40000000 - 0x43380000) % 2**32
    return lo_w, u_hi, abs(y) < 2.0**61


def _cases():
    rng = np.random.default_rng(5)
    out = []
    for _ in range(1500):  # random mantissas over the whole exponent range of X'
        x = float((rng.random() - 0.5) * 2.0 ** int(rng.integers(-60, 60)))
        out.append((x, int(rng.integers(-40, 100))))
    for _ in range(400):  # exact ties k + 1/2 and their neighbours, both signs
        k = int(rng.integers(-(2**52), 2**52))
        e = int(rng.integers(-200, 200))
        x = math.ldexp(k + 0.5, e) if abs(k) < 2**51 else math.ldexp(float(2 * k + 1), e)
        sh = -e if abs(k) < 2**51 else -e - 1
        for xx in (x, math.nextafter(x, math.inf), math.nextafter(x, -math.inf)):
            out.append((xx, sh))
    for k in (0, 1, 2, 1000, 2**20):  # small |y| just off a tie: |y| < 2^32 with bits far below 1
        for j in (25, 40, 52, 60):
            for sgn in (1, -1):
                out += [(sgn * (k + 0.5 + d), 0) for d in (2.0**-j, -(2.0**-j)) if k + 0.5 + d > 0]
    for sh in (-1022, -500, 0, 1, 1023):  # the scale's range, tiny and subnormal products
        for x in (5e-324, -5e-324, 2.2250738585072014e-308, -1e-300, 0.0, -0.0, 0.49999999999999994,
                  -0.5, 0.5, -0.49999999999999994, 1.5, -1.5):
            out.append((x, sh))
    for x in (2.0**61 - 2.0**8, -(2.0**61 - 2.0**8), 2.0**61, 2.0**60 + 0.5 * 2.0**8, -(2.0**53) + 0.5):
        out.append((x, 0))
    return out


def test_split_fp_model_equals_round_half_up():
    fast = 0
    for x, sh in _cases():
        lo, hi, ok = split_fp_model(x, sh)
        X = math.floor(Fraction(x) * Fraction(2) ** sh + Fraction(1, 2))
        if not ok:
            assert abs(x * math.ldexp(1.0, sh)) >= 2.0**61
            continue
        fast += 1
        assert (hi << 32 | lo) == X + 2**62, (x, sh)
    assert fast > 2000  # the fast path was exercised, not only the fallback


@pytest.mark.parametrize("x", [0.5, -0.5, 2.5, -2.5, 0.49999999999999994, -0.49999999999999994])
def test_split_fp_model_ties_round_up(x):
    lo, hi, ok = split_fp_model(x, 0)
    assert ok and (hi << 32 | lo) - 2**62 == math.floor(Fraction(x) + Fraction(1, 2))

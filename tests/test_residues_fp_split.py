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


def split_wide_model(x: float, sh: int):
    """(w0, w1, pk) exactly as crt.cu ``split_wide`` computes them: the low 64 bits of v'
    (two's complement) and pk = (floor(v' / 2^64) + 2^21) 2^10 + d2, X' = v' 2^d2."""
    bits = struct.unpack("<Q", struct.pack("<d", x))[0]
    eb, frac = (bits >> 52) & 0x7FF, bits & (2**52 - 1)
    mant, ex = (frac, -1074) if eb == 0 else (frac | 2**52, eb - 1075)
    if bits >> 63:
        mant = -mant
    d = ex + sh
    lo = hi = d2 = 0
    if mant:
        if d >= 0:
            d1 = min(d, 31)
            d2 = d - d1
            lo = mant << d1
            hi = mant >> min(64 - d1, 63)  # an arithmetic shift of the 64-bit mant
        else:
            rsh = min(-d, 60)
            lo = (mant + (1 << (rsh - 1))) >> rsh
            hi = -1 if lo < 0 else 0
    lo %= 2**64
    pk = ((hi + 2**21) << 10) | d2
    assert 0 < pk < 2**32 and 2**30 <= pk
    return lo & 0xFFFFFFFF, lo >> 32, pk


def _dp4a(a: int, b: int, c: int) -> int:
    """__dp4a(unsigned, unsigned, unsigned): the four byte products of a and b plus c (mod 2^32)."""
    return (sum(((a >> 8 * j) & 255) * ((b >> 8 * j) & 255) for j in range(4)) + c) % 2**32


def _fastmod(n: int, fm: int, m: int) -> int:
    return ((fm * n) % 2**32) * m >> 32


def residue_model(w0: int, w1: int, pk: int, wide: bool, q: int, k: dict, m: int, pow2: list) -> int:
    """crt.cu ``residue8`` for one entry and modulus m = MOD[q], with the header's constants."""
    h = m // 2
    acc = _dp4a(pk >> 10, k["rb2"][q], k["rc3"][q]) if wide else k["rc"][q]
    sm = _dp4a(w0, k["rb"][q][0], _dp4a(w1, k["rb"][q][1], acc))
    assert sm < 2**20
    d2 = pk & 0x3FF
    if d2:
        sm = (_fastmod(sm, k["fm"][q], m) + m - h) * pow2[d2] + h
    return _fastmod(sm, k["fm"][q], m) - h


def test_wide_split_model_gives_the_symmetric_residues():
    """split_wide (entries the FP64 split does not take: |y| >= 2^61, rows shifted beyond the
    double range) and the FP64 split converted into the same three words (a thread with one
    wide entry converts all eight), through the kernel's byte dot products with the generated
    header's constants (RB, RB2, RC3, FM), against the exact symmetric residues of
    X' = floor(x 2^sh + 1/2), for moduli with an even (256) and odd members."""
    from ozgemm.contracts.moduli import MODULI
    from ozgemm.kernels.cuda.source import _constants

    N = 40
    k = _constants(N)
    rng = np.random.default_rng(9)
    cases = []
    for _ in range(600):  # |y| from below 1 to 2^125, both signs, every kind of mantissa
        x = float((rng.random() - 0.5) * 2.0 ** int(rng.integers(-20, 20)))
        cases.append((x, int(rng.integers(-30, 110))))
    for b in (53, 61, 62, 63, 64, 65, 83, 84, 85, 86, 100):  # the bounds of the words and of d1 = 31
        for sg in (1, -1):
            for v in (2.0**b, 2.0**b - 2.0 ** (b - 53), 2.0**b + 2.0 ** (b - 52), 1.5 * 2.0**b):
                cases += [(sg * v, 0), (sg * math.ldexp(v, -40), 40)]
    for x in (0.5, -0.5, 2.5, -2.5, 5e-324, -5e-324, 0.0, -0.0, 1.0, -1.0):
        cases += [(x, 0), (x, 1050), (x, -1100), (x, 1020)]  # d <= 999: d2 <= 968 (the table's range)
    for x, sh in cases:
        X = math.floor(Fraction(x) * Fraction(2) ** sh + Fraction(1, 2))
        fp = -1022 <= sh <= 1023  # the kernel's fp_row
        if fp:
            lo, hi, ok = split_fp_model(x, sh)
            fp = ok
        if fp:  # the FP64 entry as a wide thread converts it
            neg = int(hi < 0x40000000)
            w0, w1, pk = lo, (hi - 0x40000000) % 2**32, ((1 << 21) - neg) << 10
        else:
            w0, w1, pk = split_wide_model(x, sh)
        for q, m in enumerate(MODULI[:N]):
            pow2 = [pow(2, d, m) for d in range(1024)]
            want = (X + m // 2) % m - m // 2
            assert residue_model(w0, w1, pk, True, q, k, m, pow2) == want, (x, sh, m)
            if fp:  # and as a narrow thread leaves it
                assert residue_model(lo, hi, 0, False, q, k, m, pow2) == want, (x, sh, m)


def test_wide_split_table_index_in_range():
    """d2 = d - 31 indexes a 1024-entry table: up to d = 999 (beta <= 1000 bounds d by beta - 1:
    d2 = 968) and for shift 0 on Inf/NaN/the largest doubles (d = 972: d2 = 941)."""
    # (x, sh, d): d = (the exponent of x's integer mantissa) + sh, 972 for Inf/NaN
    for x, sh, d in ((float("inf"), 0, 972), (float("nan"), 0, 972), (1.7976931348623157e308, 0, 971),
                     (-math.inf, 0, 972), (0.75, 999, 946), (2.5, 1050, 999), (5e-324, 2073, 999)):
        _, _, pk = split_wide_model(x, sh)
        assert pk & 0x3FF == d - 31 <= 968

"""The bit-pattern form of the planner's ceil(log2(z / R)) used by the GPU kernel
plan_scalars_i32 (stats.cu ``need_bits``, ``zbits``), restated in Python, against exact
rational arithmetic and against the planner's own frexp form (planner._ceil_log2_ratio).
CPU only: the kernel is compared with the numpy planner on the GPU (tests/test_gpu.py)."""
import math
import struct
from fractions import Fraction

import numpy as np

from ozgemm.precision.planner import _ceil_log2_ratio

TWO64 = 2.0**64


def _bits(d: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", d))[0]


def _zbits(z: float) -> int:
    """stats.cu zbits: bits(z), or bits(z 2^64) - 64 2^52 for a subnormal z (mod 2^64)."""
    return _bits(z) if z >= 2.2250738585072014e-308 else (_bits(z * TWO64) - (64 << 52)) % 2**64


def need_bits(zb: int, rb: int) -> int:
    d = (zb - rb - 1) % 2**64
    return (d - 2**64 if d >= 2**63 else d) >> 52  # arithmetic shift of the int64


def _exact_need(z: float, r: float) -> int:
    q = Fraction(z) / Fraction(r)  # smallest c with 2**c >= q, less 1
    c = q.numerator.bit_length() - q.denominator.bit_length() - 1
    while Fraction(2) ** c < q:
        c += 1
    return c - 1


def _cases():
    rng = np.random.default_rng(3)
    for _ in range(3000):
        z = float(rng.random() + 0.5) * 2.0 ** int(rng.integers(-60, 60))
        r = float(rng.random() + 0.5) * 2.0 ** int(rng.integers(-60, 60))
        yield z, r
    for _ in range(600):  # equal significands, neighbours, powers of two
        s = float(rng.random() + 1.0)
        e1, e2 = (int(v) for v in rng.integers(-40, 40, 2))
        z, r = math.ldexp(s, e1), math.ldexp(s, e2)
        yield z, r
        yield math.nextafter(z, math.inf), r
        yield math.nextafter(z, 0.0), r
        yield math.ldexp(1.0, e1), math.ldexp(1.0, e2)
    eoff = 52 + 14
    for L in (1, 2, 3, 127 * 127, 2**21 - 1, 2**21, 2**21 + 1, 2**30 + 12345, 2**31 - 1):  # R = L 2^-eoff
        r = math.ldexp(float(L), -eoff)
        for z in (r, math.nextafter(r, math.inf), math.nextafter(r, 0.0), 2 * r, 1.0, 1e-300, 7.5e-310):
            yield z, r


def test_need_bits_equals_exact_and_planner():
    for z, r in _cases():
        want = _exact_need(z, r)
        assert need_bits(_zbits(z), _bits(r)) == want, (z, r)
        assert int(_ceil_log2_ratio(np.float64(z), np.float64(r), np)) - 1 == want, (z, r)


def test_bits_of_r_from_the_integer():
    """bits(L 2^-eoff) = bits(double(L)) - eoff 2^52 (the kernel forms double(L) as
    bits 0x43300000:L less 2^52)."""
    for eoff in (1 + 14, 52 + 14, 112 + 14):
        for L in (1, 5, 127 * 127 * 300, 2**31 - 1):
            d = struct.unpack("<d", struct.pack("<Q", (0x43300000 << 32) | L))[0] - 4503599627370496.0
            assert d == L
            assert _bits(d) - (eoff << 52) == _bits(math.ldexp(float(L), -eoff))


def test_subnormal_z_scaled():
    """A subnormal z: need_bits on zbits(z) equals the exact value (scaling by 2^64)."""
    for z in (5e-324, 1e-310, 2.2250738585072009e-308):
        for r in (1e-300, 1e-320 * 2**60, 1.0):
            assert need_bits(_zbits(z), _bits(r)) == _exact_need(z, r), (z, r)

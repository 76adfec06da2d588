"""The device functions of the GPU's CRT kernels, compiled from crt.cu's own text for the host
(g++; the CUDA intrinsics emulated, the FP64 round-down operations run under FE_DOWNWARD),
against exact computations in Python integers: the residue split and byte sums (the
symmetric residues of X' = floor(x 2^sh + 1/2)), and the reconstruction with its one rounding
(Garner's digits, the sign, |C'| in limbs, the binary64 / binary32 bit pattern of C' 2^e). It
checks the kernel code itself, without a GPU; the GPU tests compare the launched kernels with
the CPU engine and Python integers as well (tests/test_gpu.py)."""
import math
import random
import shutil
import struct
import subprocess
from fractions import Fraction
from importlib import resources

import pytest

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

_PRELUDE = r"""
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;
#define __device__
#define __forceinline__ inline
#define __constant__
#define __restrict__
static long long __double_as_longlong(double d) { long long r; std::memcpy(&r, &d, 8); return r; }
static double __longlong_as_double(long long v) { double r; std::memcpy(&r, &v, 8); return r; }
static int __double2loint(double d) { u64 b; std::memcpy(&b, &d, 8); return (int)(u32)b; }
static int __double2hiint(double d) { u64 b; std::memcpy(&b, &d, 8); return (int)(u32)(b >> 32); }
static double __attribute__((noinline)) __dadd_rd(double a, double b) {
    std::fesetround(FE_DOWNWARD); volatile double r = a + b; std::fesetround(FE_TONEAREST); return r; }
static double __attribute__((noinline)) __dmul_rd(double a, double b) {
    std::fesetround(FE_DOWNWARD); volatile double r = a * b; std::fesetround(FE_TONEAREST); return r; }
static double __attribute__((noinline)) __fma_rd(double a, double b, double c) {
    std::fesetround(FE_DOWNWARD); volatile double r = std::fma(a, b, c); std::fesetround(FE_TONEAREST); return r; }
static unsigned int __umulhi(unsigned int a, unsigned int b) { return (unsigned int)(((u64)a * b) >> 32); }
static unsigned int __dp4a(unsigned int a, unsigned int b, unsigned int c) {
    for (int j = 0; j < 4; ++j) c += ((a >> (8 * j)) & 255u) * ((b >> (8 * j)) & 255u);
    return c; }
static unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
    const u64 v = ((u64)y << 32) | x;
    unsigned int r = 0;
    for (int j = 0; j < 4; ++j) r |= (unsigned int)((v >> (8 * ((s >> (4 * j)) & 7u))) & 255u) << (8 * j);
    return r; }
static int __clz(unsigned int x) { return x ? __builtin_clz(x) : 32; }
static unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int sh) {
    return (unsigned int)(((((u64)hi << 32) | lo) << (sh & 31u)) >> 32); }
static double __ull2double_rn(u64 w) { return (double)w; }
static float __ull2float_rn(u64 w) { return (float)w; }
static unsigned int __float_as_uint(float f) { unsigned int r; std::memcpy(&r, &f, 4); return r; }
struct uint2 { unsigned int x, y; };
// pow2tab of the residue functions: tab[q * tabw + d] = 2^d mod MOD[q]
#define POW2_TABLE                                                                          \
    const int tabw = 1024;                                                                  \
    std::vector<short> tab(NMOD * tabw);                                                    \
    for (int q = 0; q < NMOD; ++q) {                                                        \
        int v = 1 % MOD[q];                                                                 \
        for (int d = 0; d < tabw; ++d) { tab[q * tabw + d] = (short)v; v = (v * 2) % MOD[q]; } \
    }
"""

_MAIN = r"""
int main() {  // lines "sh bits0 ... bits7" (hex) -> "wide r(q=0, e=0..7) r(q=1, ...) ..."
    POW2_TABLE
    char line[1024];
    while (std::fgets(line, sizeof line, stdin)) {
        long long sh; unsigned long long b[8];
        if (std::sscanf(line, "%lld %llx %llx %llx %llx %llx %llx %llx %llx", &sh, &b[0], &b[1], &b[2], &b[3],
                        &b[4], &b[5], &b[6], &b[7]) != 9) return 2;
        double xv[8];
        for (int e = 0; e < 8; ++e) xv[e] = __longlong_as_double((long long)b[e]);
        Split8 s;
        split8(xv, sh, s);
        std::printf("%d", s.wide);
        for (int q = 0; q < NMOD; ++q) {
            int r[8];
            residue8(s, q, tab.data(), tabw, r);
            for (int e = 0; e < 8; ++e) std::printf(" %d", r[e]);
        }
        std::printf("\n");
    }
    return 0;
}
"""


_MAIN_CRT = r"""
int main() {  // lines "e c_0 ... c_{N-1}" (int32 products) -> "neg limb_0 ... bits64 bits32" (hex)
    char line[4096];
    while (std::fgets(line, sizeof line, stdin)) {
        char* p = line;
        long long e = std::strtoll(p, &p, 10);
        unsigned int cu[NMOD];
        for (int q = 0; q < NMOD; ++q) cu[q] = (unsigned int)(int)std::strtol(p, &p, 10);
        u32 x[NLIMB];
        const bool neg = crt_limbs_v(cu, x);
        std::printf("%d", (int)neg);
        for (int j = 0; j < NLIMB; ++j) std::printf(" %x", x[j]);
        std::printf(" %llx %x\n", (unsigned long long)round_bits<53, -1074, 2047, 63>(x, neg, e),
                    (unsigned int)round_bits<24, -149, 255, 31>(x, neg, e));
    }
    return 0;
}
"""


_MAIN_SPLIT = r"""
int main() {  // lines "sh x0..x7 y0..y7" (hex bits) -> "rp(q=0, e=0..7) rm(q=0, ...) rp(q=1, ...) ..."
    POW2_TABLE
    char line[2048];
    while (std::fgets(line, sizeof line, stdin)) {
        char* p = line;
        long long sh = std::strtoll(p, &p, 10);
        double xv[8], yv[8];
        for (int e = 0; e < 16; ++e) {
            const long long b = (long long)std::strtoull(p, &p, 16);
            (e < 8 ? xv[e] : yv[e - 8]) = __longlong_as_double(b);
        }
        residues8_two<true>(xv, yv, sh, tab.data(), tabw, [&](int q, uint2 wp, uint2 wm, uint2) {
            for (const uint2 w : {wp, wm})
                for (int e = 0; e < 8; ++e)
                    std::printf(" %d", (int)(signed char)(((e < 4 ? w.x : w.y) >> (8 * (e % 4))) & 255u));
        });
        std::printf("\n");
    }
    return 0;
}
"""


_MAIN_CRT_SPLIT = r"""
int main() {  // lines "p+_0 p-_0 p+_1 p-_1 ..." (int32) -> "neg limbs (Re)  neg limbs (Im)" (hex)
    char line[4096];
    while (std::fgets(line, sizeof line, stdin)) {
        char* p = line;
        unsigned int re[NMOD], im[NMOD];
        for (int q = 0; q < NMOD; ++q) {
            const unsigned int pp = (unsigned int)(int)std::strtol(p, &p, 10);
            const unsigned int pm = (unsigned int)(int)std::strtol(p, &p, 10);
            re[q] = pp + pm;  // as crt_round_split_impl
            im[q] = pp - pm;
        }
        u32 x[NLIMB];
        bool neg = crt_limbs_v<1>(re, x);
        std::printf("%d", (int)neg);
        for (int j = 0; j < NLIMB; ++j) std::printf(" %x", x[j]);
        neg = crt_limbs_v<2>(im, x);
        std::printf(" %d", (int)neg);
        for (int j = 0; j < NLIMB; ++j) std::printf(" %x", x[j]);
        std::printf("\n");
    }
    return 0;
}
"""


def _device_functions() -> str:
    """crt.cu from fastmod through the residue functions of one, two and the split form's two
    parts (the split and the byte sums), without the load helpers (they use CUDA vector loads),
    and crt_limbs_v and round_bits (the reconstruction and its rounding)."""
    src = (resources.files("ozgemm.kernels") / "cuda" / "crt.cu").read_text()
    marks = ["// n mod m for 0 <= n", "#define RES_PER_THREAD 8",
             "// Symmetric residues of X' + Y' from those of X' and Y'",
             "// One thread: RES_PER_THREAD consecutive entries of a row",
             "// Garner's mixed-radix digits with one reduction per digit",
             "// crt_limbs_v of the entry at off",
             "// Bit pattern of (-1)^neg X 2^e",
             "__device__ __forceinline__ void store_bits(double* o"]
    at = [src.index(m) for m in marks]  # a missing mark: crt.cu changed, update this test with it
    assert at == sorted(at)
    return (src[at[0]:at[1]] + "#define RES_PER_THREAD 8\n" + src[at[2]:at[3]] + src[at[4]:at[5]]
            + src[at[6]:at[7]])


def _run_host(tmp_path, n_moduli, main: str, feed: str) -> list:
    """The output lines of crt.cu's device functions (with the header for ``n_moduli``)
    compiled with ``main`` for the host and run on ``feed``."""
    from ozgemm.kernels.cuda.source import _header

    src = tmp_path / "kernels.cpp"
    src.write_text(_PRELUDE + _header(n_moduli).replace("__device__ __constant__ const", "static const")
                   + _device_functions() + main)
    exe = tmp_path / "kernels"
    p = subprocess.run(["g++", "-std=c++17", "-O1", "-frounding-math", "-o", str(exe), str(src)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-3000:]
    run = subprocess.run([str(exe)], input=feed, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def _bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _groups(rng):
    """(shift, eight doubles): wide entries at the split's bounds (2^61, 2^64, 2^84 and beyond,
    both signs, +-1 ulp) next to small and tie entries in one group, the same values reached
    through positive shifts, rows shifted below and above the double range, random rows."""
    wide = []
    for b in (52, 53, 60, 61, 62, 63, 64, 65, 83, 84, 85, 86, 93, 117, 300, 900):
        for v in (2.0**b, 2.0**b - 2.0 ** (b - 53), 2.0**b + 2.0 ** (b - 52), 1.5 * 2.0**b):
            wide += [v, -v]
    small = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, -0.49999999999999994, 5e-324,
             -5e-324, 1.0, -3.0]
    out = []
    for i in range(0, len(wide), 4):
        g = wide[i:i + 4] + rng.sample(small, 4)
        rng.shuffle(g)
        out.append((0, g))
        for sh in (7, 40, 300):  # the same values, from smaller x and a positive shift
            out.append((sh, [math.ldexp(v, -sh) for v in g]))
    for sh in (-1023, -1030, -1100, 1024, 1050):  # rows outside the double range of 2^sh
        for _ in range(6):
            g = []
            for _ in range(8):
                if sh < 0:  # the ties (2j + 1) 2^(-sh - 1) that fit a double, huge and tiny values
                    t = math.ldexp(rng.choice([1, 3]), -sh - 1) if sh >= -1023 else 1.7e308
                    g.append(rng.choice([t, -t, math.nextafter(t, math.inf), -1e300, 5e-324]))
                else:  # |X'| up to 2^999 (a plan's widest)
                    g.append(math.ldexp(rng.random() - 0.5, rng.randrange(-1100, 998 - sh)))
            out.append((sh, g))
    for _ in range(300):  # random rows: magnitudes from tiny to 2^100 after the shift
        sh = rng.randrange(-60, 120)
        out.append((sh, [math.ldexp(rng.random() - 0.5, rng.randrange(-80, 100 - sh)) for _ in range(8)]))
    return out


@pytest.mark.parametrize("n_moduli", [18, 40])
def test_kernel_split_and_byte_sums_give_the_symmetric_residues(tmp_path, n_moduli):
    from ozgemm.contracts.moduli import MODULI

    groups = _groups(random.Random(n_moduli))
    feed = "".join(f"{sh} " + " ".join(f"{_bits(x):x}" for x in g) + "\n" for sh, g in groups)
    lines = _run_host(tmp_path, n_moduli, _MAIN, feed)
    assert len(lines) == len(groups)
    wide = 0
    for (sh, g), line in zip(groups, lines):
        vals = [int(v) for v in line.split()]
        wide += vals[0]
        X = [math.floor(Fraction(x) * Fraction(2) ** sh + Fraction(1, 2)) for x in g]
        got = vals[1:]
        for q, m in enumerate(MODULI[:n_moduli]):
            want = [(v + m // 2) % m - m // 2 for v in X]
            assert got[8 * q:8 * q + 8] == want, (sh, g, m)
    assert 50 < wide < len(groups)  # both forms were exercised


def _round_bits(v: int, e: int, p: int, emin_sub: int, emax: int, fmt: str) -> int:
    """The bit pattern of v 2^e rounded to nearest even in a binary format with p-bit
    significands, smallest subnormal exponent emin_sub and values below 2^emax (+0 for a
    result that rounds to zero, either sign; Inf beyond the largest finite)."""
    a = abs(v)
    if a:
        q = max(a.bit_length() + e - p, emin_sub)  # the exponent of the last significand place
        if q >= e:
            d = q - e
            mant, rest = a >> d, a & ((1 << d) - 1)
            half = 1 << d >> 1
            mant += rest > half or (rest == half and d > 0 and mant & 1)
        else:
            mant = a << (e - q)
        val = math.inf if mant and mant.bit_length() + q > emax else math.ldexp(mant, q)
    else:
        val = 0.0
    if val and v < 0:
        val = -val
    return struct.unpack("<Q" if fmt == "d" else "<I", struct.pack("<" + fmt, val))[0]


@pytest.mark.parametrize("n_moduli", [9, 17, 31])
def test_kernel_reconstruction_and_rounding(tmp_path, n_moduli):
    """crt_limbs_v and round_bits: for values V across the symmetric range of M (its ends, 0,
    +-1, random ones of every size) given as int32 products c_q = V mod m_q + j m_q with random
    j (any int32 congruent to V), the sign, |V| in 32-bit limbs, and V 2^e rounded to binary64
    and binary32 for e around the normal, subnormal and overflow thresholds."""
    from ozgemm.crt.moduli import garner_constants

    gc = garner_constants(n_moduli)
    moduli, limbs = [int(m) for m in gc.moduli], int(gc.limbs)
    M = math.prod(moduli)
    lo, hi = M // 2 - M + 1, M // 2  # the kernel's symmetric range: V = X - M for X > floor(M / 2)
    rng = random.Random(n_moduli)
    values = [0, 1, -1, hi, lo, hi - 1, lo + 1, 2**52 + 1, -(2**53 + 3), 2**24 + 1]
    values += [rng.randrange(lo, hi + 1) for _ in range(300)]
    values += [rng.choice([1, -1]) * rng.getrandbits(rng.randrange(1, (M.bit_length() - 2)))
               for _ in range(300)]
    cases = []
    for v in values:
        b = abs(v).bit_length()
        for e in (0, -b, -1074 - b + 30, -1074 - b - 1, 1024 - b, 1023 - b, -149 - b + 10, 128 - b,
                  rng.randrange(-1200, 1100)):
            cases.append((v, e))
    feed = ""
    for v, e in cases:
        cs = []
        for m in moduli:
            r = v % m
            j = rng.randrange(-((2**31 - r) // m), (2**31 - 1 - r) // m + 1)
            cs.append(r + j * m)
        feed += f"{e} " + " ".join(map(str, cs)) + "\n"
    lines = _run_host(tmp_path, n_moduli, _MAIN_CRT, feed)
    assert len(lines) == len(cases)
    for (v, e), line in zip(cases, lines):
        f = line.split()
        got_neg, got_limbs = int(f[0]), [int(t, 16) for t in f[1:1 + limbs]]
        assert got_neg == (v < 0), (v, e)
        assert sum(x << (32 * j) for j, x in enumerate(got_limbs)) == abs(v), (v, e)
        assert int(f[1 + limbs], 16) == _round_bits(v, e, 53, -1074, 1024, "d"), (v, e)
        assert int(f[2 + limbs], 16) == _round_bits(v, e, 24, -149, 128, "f"), (v, e)


@pytest.mark.parametrize("n_moduli", [9, 17, 22])
def test_kernel_split_form_residues(tmp_path, n_moduli):
    """residues8_two<true> (the split form of complex products): the symmetric residues of
    X' + t Y' and X' - t Y' modulo each split modulus (t = SQRT_MINUS_ONE), X', Y' the two
    parts scaled by 2**sh and rounded half up, for groups on both split paths and with the
    table step (entries beyond 2**84)."""
    from ozgemm.contracts.moduli import GAUSSIAN_MODULI, SQRT_MINUS_ONE

    rng = random.Random(n_moduli)
    xs, ys = _groups(rng), _groups(rng)
    groups = [(sx, gx, gy) for (sx, gx), (_, gy) in zip(xs, ys)]
    feed = "".join(f"{sh} " + " ".join(f"{_bits(x):x}" for x in gx + gy) + "\n" for sh, gx, gy in groups)
    lines = _run_host(tmp_path, GAUSSIAN_MODULI[:n_moduli], _MAIN_SPLIT, feed)
    assert len(lines) == len(groups)
    for (sh, gx, gy), line in zip(groups, lines):
        got = [int(v) for v in line.split()]
        X = [math.floor(Fraction(x) * Fraction(2) ** sh + Fraction(1, 2)) for x in gx]
        Y = [math.floor(Fraction(y) * Fraction(2) ** sh + Fraction(1, 2)) for y in gy]
        for q, (m, t) in enumerate(zip(GAUSSIAN_MODULI[:n_moduli], SQRT_MINUS_ONE)):
            h = m // 2
            want = [(x + t * y + h) % m - h for x, y in zip(X, Y)] + [(x - t * y + h) % m - h for x, y in zip(X, Y)]
            assert got[16 * q:16 * q + 16] == want, (sh, m)


@pytest.mark.parametrize("n_moduli", [5, 16, 22])
def test_kernel_split_form_reconstruction(tmp_path, n_moduli):
    """crt_limbs_v<1> and <2> (the split form's parts): from int32 products P+ = Re + t Im and
    P- = Re - t Im modulo each split modulus (any int32 of that class with |P| < 2**29, as the
    INT8 products give), Re and Im across the symmetric range of M: their signs and limbs."""
    from ozgemm.contracts.moduli import GAUSSIAN_MODULI, SQRT_MINUS_ONE

    moduli = GAUSSIAN_MODULI[:n_moduli]
    M = math.prod(moduli)
    lo, hi = M // 2 - M + 1, M // 2
    rng = random.Random(n_moduli)
    vals = [0, 1, -1, hi, lo, hi - 1, lo + 1] + [rng.randrange(lo, hi + 1) for _ in range(400)]
    pairs = [(rng.choice(vals), rng.choice(vals)) for _ in range(600)]
    feed = ""
    for re, im in pairs:
        cs = []
        for m, t in zip(moduli, SQRT_MINUS_ONE):
            for r in ((re + t * im) % m, (re - t * im) % m):
                j = rng.randrange(-((2**29 - r) // m), (2**29 - 1 - r) // m + 1)
                cs.append(r + j * m)
        feed += " ".join(map(str, cs)) + "\n"
    lines = _run_host(tmp_path, moduli, _MAIN_CRT_SPLIT, feed)
    limbs = (M.bit_length() + 31) // 32
    assert len(lines) == len(pairs)
    for (re, im), line in zip(pairs, lines):
        f = line.split()
        for part, off in ((re, 0), (im, 1 + limbs)):
            assert int(f[off]) == (part < 0), (re, im)
            assert sum(int(x, 16) << (32 * j) for j, x in enumerate(f[off + 1:off + 1 + limbs])) == abs(part)

"""The residue split and byte sums of the GPU kernels, compiled from crt.cu's own text for the
host (g++; the CUDA intrinsics emulated, the FP64 round-down operations run under
FE_DOWNWARD), against the exact symmetric residues of X' = floor(x 2^sh + 1/2) from Python
integers. It checks the kernel code itself, without a GPU; the GPU tests compare the launched
kernels with Python integers as well (tests/test_gpu.py)."""
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
"""

_MAIN = r"""
int main() {  // lines "sh bits0 ... bits7" (hex) -> "wide r(q=0, e=0..7) r(q=1, ...) ..."
    const int tabw = 1024;
    std::vector<short> tab(NMOD * tabw);
    for (int q = 0; q < NMOD; ++q) {
        int v = 1 % MOD[q];
        for (int d = 0; d < tabw; ++d) { tab[q * tabw + d] = (short)v; v = (v * 2) % MOD[q]; }
    }
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


def _device_functions() -> str:
    """crt.cu from fastmod through residue8 (the split and the byte sums), without the load
    helpers between them (they use CUDA vector types)."""
    src = (resources.files("ozgemm.kernels") / "cuda" / "crt.cu").read_text()
    marks = ["// n mod m for 0 <= n", "#define RES_PER_THREAD 8",
             "// RES_PER_THREAD consecutive entries xv of one row, scaled by 2^sh, split once for every",
             "// The low bytes of eight residues as one 8-byte word"]
    at = [src.index(m) for m in marks]  # a missing mark: crt.cu changed, update this test with it
    assert at == sorted(at)
    return src[at[0]:at[1]] + "#define RES_PER_THREAD 8\n" + src[at[2]:at[3]]


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
    from ozgemm.kernels.cuda.source import _header

    src = tmp_path / "residues.cpp"
    src.write_text(_PRELUDE + _header(n_moduli).replace("__device__ __constant__ const", "static const")
                   + _device_functions() + _MAIN)
    exe = tmp_path / "residues"
    p = subprocess.run(["g++", "-std=c++17", "-O1", "-frounding-math", "-o", str(exe), str(src)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-3000:]
    from ozgemm.contracts.moduli import MODULI

    groups = _groups(random.Random(n_moduli))
    feed = "".join(f"{sh} " + " ".join(f"{_bits(x):x}" for x in g) + "\n" for sh, g in groups)
    run = subprocess.run([str(exe)], input=feed, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
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

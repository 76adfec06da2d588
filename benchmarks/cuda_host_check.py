"""Host check of the CRT kernels without a GPU: compile ozgemm/kernels/cuda/crt.cu as plain
C++ (g++, CUDA built-ins emulated below, every block/thread run in turn) and compare its
residues and its reconstructed, rounded products bit for bit with the CPU engine.

Usage: python3 benchmarks/cuda_host_check.py [cases]   (needs g++; ~1 min)
This checks the integer arithmetic of the kernels (fastmod, lazy Garner, Horner groups,
rounding) on the host compiler; the device run (tests/test_gpu.py) remains the real test.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile
from importlib import resources

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from ozgemm.crt.moduli import MODULI, garner_constants  # noqa: E402
from ozgemm.crt.residues import pow2_mod_table, scaled_residues  # noqa: E402
from ozgemm.kernels.cuda_src import _header, common_source  # noqa: E402

SHIM = r"""
#include <cmath>
#include <cstdint>
#include <cstring>
#define __device__
#define __global__
#define __forceinline__ inline
#define __constant__
#define __restrict__
using std::scalbn; using std::fabs; using std::ceil; using std::floor;
struct dim3_ { unsigned x, y, z; };
static dim3_ blockIdx, threadIdx, blockDim, gridDim;
struct uint2 { unsigned int x, y; };
struct double2 { double x, y; };
struct uint4 { unsigned int x, y, z, w; };
static inline unsigned int __umulhi(unsigned int a, unsigned int b) { return (unsigned int)(((unsigned long long)a * b) >> 32); }
static inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
    unsigned char b[8]; for (int i = 0; i < 4; ++i) { b[i] = (x >> (8 * i)) & 255; b[4 + i] = (y >> (8 * i)) & 255; }
    unsigned int r = 0; for (int i = 0; i < 4; ++i) r |= (unsigned int)b[(s >> (4 * i)) & 7] << (8 * i); return r; }
static inline long long __double_as_longlong(double d) { long long r; std::memcpy(&r, &d, 8); return r; }
static inline double __longlong_as_double(long long i) { double r; std::memcpy(&r, &i, 8); return r; }
static inline unsigned int __dp4a(unsigned int a, unsigned int b, unsigned int c) {
    for (int i = 0; i < 4; ++i) c += ((a >> (8 * i)) & 255u) * ((b >> (8 * i)) & 255u); return c; }
static inline float __uint_as_float(unsigned int u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline unsigned int __float_as_uint(float f) { unsigned int u; std::memcpy(&u, &f, 4); return u; }
static inline int __clz(unsigned int x) { return x ? __builtin_clz(x) : 32; }
template <typename T> static inline T __ldg(const T* p) { return *p; }
"""

DRIVER = r"""
static void launch(unsigned gx, unsigned gy, unsigned bx, unsigned by, void (*body)()) {
    gridDim = {gx, gy, 1}; blockDim = {bx, by, 1};
    for (unsigned a = 0; a < gy; ++a) for (unsigned b = 0; b < gx; ++b)
        for (unsigned ty = 0; ty < by; ++ty) for (unsigned tx = 0; tx < bx; ++tx) {
            blockIdx = {b, a, 0}; threadIdx = {tx, ty, 0}; body(); }
}
static const double* g_x; static long long g_ldx; static const long long* g_shift; static int g_r, g_k, g_rp, g_kp;
static const short* g_tab; static int g_tabw, g_vec; static uint2* g_out;
static void res_body() { scaled_residues(g_x, g_ldx, g_shift, g_r, g_k, g_rp, g_kp, g_tab, g_tabw, g_vec, g_out); }
extern "C" void run_residues(const double* x, long long ldx, const long long* shift, int r, int k, int rp, int kp,
                             const short* tab, int tabw, int vec, void* out, unsigned gx, unsigned gy, unsigned bx, unsigned by) {
    g_x = x; g_ldx = ldx; g_shift = shift; g_r = r; g_k = k; g_rp = rp; g_kp = kp; g_tab = tab; g_tabw = tabw;
    g_vec = vec; g_out = (uint2*)out; launch(gx, gy, bx, by, res_body);
}
static const int* g_c; static long long g_ldc, g_sc, g_ldo; static const long long *g_s, *g_t; static int g_m, g_n;
static double* g_o64; static float* g_o32;
static void r64_body() { crt_round_f64(g_c, g_ldc, g_sc, g_s, g_t, g_m, g_n, g_o64, g_ldo); }
static void r32_body() { crt_round_f32(g_c, g_ldc, g_sc, g_s, g_t, g_m, g_n, g_o32, g_ldo); }
extern "C" void run_round(const int* c, long long ldc, long long sc, const long long* s, const long long* t, int m, int n,
                          void* out, long long ldo, int f64, unsigned gx, unsigned gy, unsigned bx, unsigned by) {
    g_c = c; g_ldc = ldc; g_sc = sc; g_s = s; g_t = t; g_m = m; g_n = n; g_ldo = ldo;
    g_o64 = (double*)out; g_o32 = (float*)out; launch(gx, gy, bx, by, f64 ? r64_body : r32_body);
}
"""


def _grid2d(nx, ny, threads=256):
    bx = min(threads, 1 << max(nx - 1, 0).bit_length())
    by = threads // bx
    return ((nx + bx - 1) // bx, min((ny + by - 1) // by, 65535)), (bx, by)


def build(n: int, tmp: str, defines: tuple = ()):
    body = (resources.files("ozgemm.kernels") / "cuda" / "crt.cu").read_text()  # crt.cu only (not wide.cu)
    common = common_source().replace("#pragma once", "")
    src = SHIM + "".join(f"#define {d}\n" for d in defines) + common + _header(n) + body.replace('extern "C"', "") + DRIVER
    path = os.path.join(tmp, f"crt{n}{''.join(defines)}.cpp")
    with open(path, "w") as f:
        f.write(src)
    so = path[:-4] + ".so"
    subprocess.run(["g++", "-O2", "-std=c++17", "-shared", "-fPIC", "-w", path, "-o", so], check=True)
    lib = ctypes.CDLL(so)
    return lib


def ptr(a):
    return ctypes.c_void_p(a.ctypes.data)


def check(n_moduli, r, k, ncols, phi, seed, lib, fmt="binary64"):
    from ozgemm.precision.formats import get_format
    from ozgemm.precision.rounding import round_limbs
    from ozgemm.crt.garner import crt_reconstruct
    from ozgemm.precision.stats import split_float

    rng = np.random.default_rng(seed)
    x = (rng.random((r, k)) - 0.5) * np.exp(phi * rng.standard_normal((r, k)))
    x[rng.random((r, k)) < 0.05] = 0.0
    if r > 2:
        x[1, : k // 2] *= 2.0 ** -1060  # subnormals
        x[2, :] = 0.0
    shift = rng.integers(-40, 980, r).astype(np.int64)
    shift[0] = 1070  # large left shifts (d2 > 0)
    moduli = MODULI[:n_moduli]
    mant, exp, _ = split_float(x, np)
    want = scaled_residues(mant, exp, shift, moduli, np)
    rp, kp = -(-r // 16) * 16 + 16, -(-k // 16) * 16
    tab = pow2_mod_table(moduli, 1023, np).astype(np.int16)
    out = np.full((n_moduli, rp, kp), 77, dtype=np.int8)
    xs = np.zeros((r, k + (k % 2)))  # even leading dimension -> vector path
    xs[:, :k] = x
    for vec, xx in ((0, np.ascontiguousarray(x)), (1, xs)):
        (gx, gy), (bx, by) = _grid2d(kp // 8, rp)
        lib.run_residues(ptr(xx), ctypes.c_longlong(xx.shape[1]), ptr(shift), r, k, rp, kp, ptr(tab), 1024, vec,
                         ptr(out), gx, gy, bx, by)
        assert np.array_equal(out[:, :r, :k], want), ("residues", vec)
        assert not out[:, r:, :].any() and not out[:, :, k:].any(), "padding"
    # reconstruction: random exact int32 products with |C'| < M/2 (residues of a random C')
    gc = garner_constants(n_moduli)
    fmt_ = get_format(fmt)
    m_, n_ = r, ncols
    half = gc.M // 2
    bits = rng.integers(1, max(2, gc.M.bit_length() - 1), (m_, n_))
    vals = [[(int(rng.integers(0, 2**62)) * (1 << 64) + int(rng.integers(0, 2**62))) % (1 << int(b)) for b in row]
            for row in bits]
    vals = [[min(v, half - 1) * (1 if rng.random() < 0.5 else -1) for v in row] for row in vals]
    vals[0][0] = 0
    if n_ > 1:
        vals[0][1] = half - 1
        vals[0][n_ - 1] = -(half - 1)
    cres = np.array([[[v % mq for v in row] for row in vals] for mq in gc.moduli], dtype=np.int64)
    # add a random multiple of m_q (as an int32 GEMM result would carry) within int32
    lift = rng.integers(-(2**31) // 256, 2**31 // 256, cres.shape) * np.array(gc.moduli)[:, None, None]
    c32 = np.clip(cres + lift, -(2**31) + 256, 2**31 - 256)
    c32 = (c32 - ((c32 - cres) % np.array(gc.moduli)[:, None, None])).astype(np.int32)
    assert np.array_equal(c32.astype(np.int64) % np.array(gc.moduli)[:, None, None], cres)
    s = rng.integers(-1200, 1200, m_).astype(np.int64)
    t = rng.integers(-1200, 1200, n_).astype(np.int64)
    mag, neg = crt_reconstruct(cres, n_moduli, np)
    e = -(s[:, None] + t[None, :])
    want_c = round_limbs(mag, neg, e, fmt_, np)
    dt = np.float64 if fmt == "binary64" else np.float32
    got = np.zeros((m_, n_), dtype=dt)
    (gx, gy), (bx, by) = _grid2d(n_, m_)
    lib.run_round(ptr(c32), ctypes.c_longlong(n_), ctypes.c_longlong(m_ * n_), ptr(s), ptr(t), m_, n_, ptr(got),
                  ctypes.c_longlong(n_), int(fmt == "binary64"), gx, gy, bx, by)
    assert np.array_equal(want_c.view(np.uint8), got.view(np.uint8)), ("round", fmt)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for nm, defines in [(n, ()) for n in (1, 2, 5, 9, 16, 17, 27, 40, 49)]:
            lib = build(nm, tmp, defines)
            for seed, (r, k, nc, phi) in enumerate([(7, 68, 61, 0.5), (1, 1, 1, 2.0), (33, 100, 17, 3.0),
                                                    (20, 37, 300, 1.0)]):
                check(nm, r, k, nc, phi, seed, lib, "binary64")
                check(nm, r, k, nc, phi, seed + 100, lib, "binary32")
            print(f"{nm} moduli {defines}: residues and reconstruction bit-identical to the CPU engine")


if __name__ == "__main__":
    main()

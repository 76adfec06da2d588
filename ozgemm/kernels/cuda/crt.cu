// ozgemm CUDA kernels for Ozaki scheme II (CRT): scaled residues and fused reconstruction.
//
// Compiled at run time by CuPy (NVRTC) once per moduli count; the including code prepends a
// generated header defining, as compile-time constants:
//   NMOD                      number of moduli
//   NLIMB                     32-bit limbs holding any value in [0, M)
//   MOD[NMOD]                 the moduli (<= 256)
//   INV[NMOD]                 (m_0 ... m_{q-1})^{-1} mod m_q
//   W[NMOD][NMOD]             (m_0 ... m_{p-1}) mod m_q for p < q
//   MLIMB[NLIMB]              M in little-endian 32-bit limbs
//   P31[NMOD]                 2^31 mod m_q
// The arithmetic mirrors ozgemm/crt/residues.py, crt/garner.py and precision/rounding.py
// step for step (integers only), so CPU and GPU results are bit-identical.

typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;

// --- scaling + residues --------------------------------------------------------------
// x: r x k row-major doubles (ld = ldx). shift[i] = s_i. out: NMOD slabs of rp x kp int8
// (row-major, K-contiguous); padding (i >= r or l >= k) is written as 0.
__device__ __forceinline__ void split_scaled(double xv, i64 sh, int* hi, int* lo, int* d2) {
    u64 bits = (u64)__double_as_longlong(xv);
    int eb = (int)((bits >> 52) & 0x7ff);
    i64 frac = (i64)(bits & ((1ULL << 52) - 1));
    i64 mant, ex;
    if (eb == 0) { mant = frac; ex = -1074; } else { mant = frac | (1LL << 52); ex = eb - 1075; }
    if (bits >> 63) mant = -mant;
    i64 d = ex + sh;
    i64 v;
    *d2 = 0;
    if (mant == 0) {
        v = 0;
    } else if (d >= 0) {
        int d1 = d < 9 ? (int)d : 9;
        v = mant << d1;  // |v| < 2^62
        *d2 = (int)(d - d1);
    } else {
        int rsh = (-d) > 60 ? 60 : (int)(-d);
        v = (mant + (1LL << (rsh - 1))) >> rsh;  // round half up (arithmetic shift)
    }
    // v = hi 2^31 + lo, |hi| < 2^31, 0 <= lo < 2^31: 32-bit modular arithmetic only
    *hi = (int)(v >> 31);
    *lo = (int)(v & 0x7fffffffLL);
}

__device__ __forceinline__ int sym_residue(int hi, int lo, int d2, int q, int m,
                                           const short* __restrict__ pow2tab, int tabw) {
    int rr = ((hi % m) * P31[q] + lo % m) % m;
    if (rr < 0) rr += m;
    if (d2 > 0) rr = (rr * (int)pow2tab[q * tabw + d2]) % m;
    if (rr > (m - 1) / 2) rr -= m;
    return rr;
}

// Four consecutive entries of a row per thread (kp is a multiple of 16): one 4-byte store
// per modulus. Padding (i >= r or l >= k) is written as 0.
extern "C" __global__ void scaled_residues(const double* __restrict__ x, i64 ldx,
                                           const i64* __restrict__ shift,
                                           int r, int k, int rp, int kp,
                                           const short* __restrict__ pow2tab, int tabw,
                                           int* __restrict__ out) {
    // pow2tab[q * tabw + d] = 2^d mod MOD[q], for 0 <= d < tabw; out viewed as int (char4)
    i64 idx4 = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 total4 = (i64)rp * kp / 4;
    if (idx4 >= total4) return;
    int kp4 = kp / 4;
    int i = (int)(idx4 / kp4);
    int l0 = (int)(idx4 - (i64)i * kp4) * 4;
    int hi[4], lo[4], d2[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        hi[e] = 0; lo[e] = 0; d2[e] = 0;
        if (i < r && l0 + e < k) split_scaled(x[(i64)i * ldx + l0 + e], shift[i], &hi[e], &lo[e], &d2[e]);
    }
#pragma unroll
    for (int q = 0; q < NMOD; ++q) {
        const int m = MOD[q];
        unsigned int packed = 0;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            int rr = sym_residue(hi[e], lo[e], d2[e], q, m, pow2tab, tabw);
            packed |= ((unsigned int)(rr & 0xff)) << (8 * e);
        }
        out[q * total4 + idx4] = (int)packed;
    }
}

// --- CRT reconstruction + final rounding ------------------------------------------------
// c: NMOD slabs of int32 exact products (row-major, row stride ldc, slab stride sc), or
// residues already reduced. s[m], t[n]: shifts. out: m x n (ld = ldo) of OUT_T.
// Store (-1)^neg mant 2^qexp, already rounded to the output format (mant < 2^P + 1,
// qexp >= the format's subnormal exponent). Zero results are +0, as numpy.matmul gives.
__device__ __forceinline__ void store_rounded(double* o, u64 mant, i64 qexp, bool neg) {
    if (qexp > 3000) qexp = 3000;
    double res = scalbn((double)mant, (int)qexp);  // exact, or +-Inf beyond the range
    *o = (neg && mant != 0) ? -res : res;
}

// binary32 from its bit pattern: CuPy compiles with -ftz=true, under which a double ->
// float conversion flushes subnormal results to zero.
__device__ __forceinline__ void store_rounded(float* o, u64 mant, i64 qexp, bool neg) {
    u32 bits = 0;
    if (mant != 0) {
        if (mant == (1ULL << 24)) { mant >>= 1; qexp += 1; }  // rounding carried out
        if (mant < (1ULL << 23)) {
            bits = (u32)mant;                                 // subnormal: qexp == -149
        } else {
            i64 be = qexp + 150;                              // biased exponent
            bits = be >= 255 ? 0x7f800000u : ((u32)be << 23) | ((u32)mant & 0x7fffffu);
        }
        if (neg) bits |= 0x80000000u;
    }
    *o = __uint_as_float(bits);
}

template <typename OUT_T, int P, int EMIN_SUB>
__device__ __forceinline__ void reconstruct_one(const int* __restrict__ c, i64 sc, i64 off,
                                                i64 e, OUT_T* o) {
    int v[NMOD];
#pragma unroll
    for (int q = 0; q < NMOD; ++q) {
        const int m = MOD[q];
        int cq = c[q * sc + off] % m;
        if (cq < 0) cq += m;
        int acc = 0;
#pragma unroll
        for (int p = 0; p < q; ++p) acc += v[p] * W[p][q];
        int t = (cq - acc) % m;
        if (t < 0) t += m;
        v[q] = (t * INV[q]) % m;
    }
    // Horner: X = v0 + m0 (v1 + m1 (...))
    u32 x[NLIMB];
#pragma unroll
    for (int j = 0; j < NLIMB; ++j) x[j] = 0;
    x[0] = (u32)v[NMOD - 1];
#pragma unroll
    for (int q = NMOD - 2; q >= 0; --q) {
        u64 carry = (u64)v[q];
#pragma unroll
        for (int j = 0; j < NLIMB; ++j) {
            u64 tt = (u64)x[j] * (u64)MOD[q] + carry;
            x[j] = (u32)tt;
            carry = tt >> 32;
        }
    }
    // D = M - X; negative iff X > D
    u32 dl[NLIMB];
    i64 borrow = 0;
#pragma unroll
    for (int j = 0; j < NLIMB; ++j) {
        i64 tt = (i64)MLIMB[j] - (i64)x[j] - borrow;
        borrow = tt < 0;
        dl[j] = (u32)(tt + (borrow << 32));
    }
    bool gt = false, decided = false;
#pragma unroll
    for (int j = NLIMB - 1; j >= 0; --j) {
        if (!decided) {
            if (x[j] != dl[j]) { gt = x[j] > dl[j]; decided = true; }
        }
    }
    const bool neg = gt;
#pragma unroll
    for (int j = 0; j < NLIMB; ++j) if (neg) x[j] = dl[j];
    // top limb, 64-bit window, sticky
    int tt = -1;
#pragma unroll
    for (int j = 0; j < NLIMB; ++j) if (x[j] != 0) tt = j;
    if (tt < 0) { *o = (OUT_T)0.0; return; }
    u64 hi = 0, mid = 0, lo = 0;
    bool sticky = false;
#pragma unroll
    for (int j = 0; j < NLIMB; ++j) {
        if (j == tt) hi = x[j];
        else if (j == tt - 1) mid = x[j];
        else if (j == tt - 2) lo = x[j];
        else if (j < tt - 2 && x[j] != 0) sticky = true;
    }
    int b = 32 - __clz((u32)hi);  // 1..32
    int sh = 32 - b;
    u64 w = (hi << (32 + sh)) | (mid << sh) | (lo >> (32 - sh));
    if (lo & ((1ULL << (32 - sh)) - 1)) sticky = true;
    i64 g = 32 * (i64)(tt - 1) - sh + e;
    i64 qexp = g + 63 - (P - 1);
    if (qexp < EMIN_SUB) qexp = EMIN_SUB;
    i64 d = qexp - g;
    u64 mant;
    if (d > 64) {
        mant = 0;
    } else {
        int dd = (int)d;
        u64 top = w >> (dd - 1);
        u64 kept = top >> 1;
        u64 rb = top & 1;
        u64 rest = w & ((1ULL << (dd - 1)) - 1);
        bool st = sticky || rest != 0;
        mant = kept + ((rb && (st || (kept & 1))) ? 1 : 0);
    }
    store_rounded(o, mant, qexp, neg);
}

extern "C" __global__ void crt_round_f64(const int* __restrict__ c, i64 ldc, i64 sc,
                                         const i64* __restrict__ s, const i64* __restrict__ t,
                                         int m, int n, double* __restrict__ out, i64 ldo) {
    i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (i64)m * n) return;
    int i = (int)(idx / n);
    int j = (int)(idx - (i64)i * n);
    reconstruct_one<double, 53, -1074>(c, sc, (i64)i * ldc + j, -(s[i] + t[j]), out + (i64)i * ldo + j);
}

extern "C" __global__ void crt_round_f32(const int* __restrict__ c, i64 ldc, i64 sc,
                                         const i64* __restrict__ s, const i64* __restrict__ t,
                                         int m, int n, float* __restrict__ out, i64 ldo) {
    i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (i64)m * n) return;
    int i = (int)(idx / n);
    int j = (int)(idx - (i64)i * n);
    reconstruct_one<float, 24, -149>(c, sc, (i64)i * ldc + j, -(s[i] + t[j]), out + (i64)i * ldo + j);
}

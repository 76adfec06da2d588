// ozgemm CUDA kernels for Ozaki scheme II (CRT): scaled residues and fused reconstruction.
//
// Compiled at run time by CuPy (NVRTC) once per moduli count; the including code prepends a
// generated header (ozgemm/kernels/cuda/source.py) defining, as compile-time constants:
//   NMOD                      number of moduli
//   NLIMB                     32-bit limbs holding any value in [0, M)
//   MOD[NMOD]                 the moduli (<= 256)
//   MLIMB[NLIMB]              M in little-endian 32-bit limbs
//   FM[NMOD]                  ceil(2^32 / m_q) (fastmod)
//   RB[NMOD][2], RC[NMOD]     residue byte weights 2^(8 j) mod m_q, j = 0..7, packed four per
//                             word, and (m_q/2 - 2^62) mod m_q
//   RB2[NMOD], RC3[NMOD]      the weights of j = 8..11 packed, and (m_q/2 - 2^85) mod m_q
//   PI[NMOD], KC[NMOD]        (2^(8 j) INV_q mod m_q, j = 0..3) packed, -2^31 INV_q mod m_q
//                             (INV_q = (m_0 ... m_{q-1})^{-1} mod m_q)
//   NGW, GP[NMOD][NGW]        Garner weights G[p][q] = -W[p][q] INV_q mod m_q packed four digits
//                             p = 4w..4w+3 per word, 0 for p >= q
//                             (W[p][q] = (m_0 ... m_{p-1}) mod m_q, the Garner weights)
//   NGRP, GR[NGRP], GUSED[NGRP]          Horner groups of four moduli: radix, limbs in use
// and checks (in Python, before emitting) every range bound the fastmod steps rely on.
// The integer results equal those of ozgemm/crt/residues.py, crt/reconstruct.py and
// precision/rounding.py (the same residues, digits and limbs: each is unique), so CPU and
// GPU results are bit-identical.

// (i64, u64, u32 and widen_f32_bits come from common.cuh, prepended by source.py)

// --- scaling + residues --------------------------------------------------------------
// x: r x k row-major doubles (ld = ldx). shift[i] = s_i. out: NMOD slabs of rp x kp int8
// (row-major, K-contiguous); padding (i >= r or l >= k) is written as 0.
//
// Residues without division (byte dot products). For one entry with |X'| < 2^61 and a row
// shift in [-1022, 1023], split_scaled_fp computes X' = v on the FP64 pipe. With
// u = v + 2^62 in [0, 2^63) (|v| < 2^62) and its bytes u_0..u_7
//   X' + h ≡ RC_q + sum_j u_j (2^(8 j) mod m)  (mod m),
// h = m/2 (integer part), RC_q = (h - 2^62) mod m, so that ((X' + h) mod m) - h is the
// symmetric residue in [-(m-1)/2 - (m even), (m-1)/2], the range of ozgemm/crt/residues.py.
// The byte sum is two __dp4a (four byte products each) on the halves of u, < 2^20, and is
// reduced by fastmod (below). Other entries (split_wide) give X' = v' 2^d2 with |v'| < 2^84:
// u = v' + 2^85 as three words, one __dp4a more (RB2, RC3 = (h - 2^85) mod m), and for d2 > 0
// one multiplication by 2^d2 mod m from a table. The generated header checks every bound it relies on
// (source.py, _constants). The two __dp4a per modulus measured about 20 % faster on the H200
// than splitting u into five 13-bit limbs with four multiply-adds (residues of A at 16384:
// 2.30 -> 1.84 ms; docs/design.md, "Residue kernels").
//
// (Accumulating these sums exactly in float32, to use the FP32 pipe, measured slower on the
// H200 in both kernels: residues 2.29 -> 2.47 ms, reconstruction 7.11 -> 8.34 ms;
// docs/design.md, "Residue kernels".)

// n mod m for 0 <= n with e (n + m - 1) < 2^32, where FM = ceil(2^32 / m) = (2^32 + e) / m,
// 0 <= e < m (Lemire, Kaser, Kurz 2019, "Faster remainder by direct computation").
// Proof: n = Q m + r; FM n = Q 2^32 + (Q e + r FM). Q e + r FM <= (n e + (m-1)(2^32 + e)) / m
// < 2^32 iff e (n + m - 1) < 2^32, so low := FM n mod 2^32 = Q e + r FM, and
// floor(low m / 2^32) = floor((Q e m + r 2^32 + r e) / 2^32) = r + floor(e n / 2^32) = r.
__device__ __forceinline__ unsigned int fastmod(unsigned int n, unsigned int fm, unsigned int m) {
    return __umulhi(fm * n, m);
}

// X' = round(x 2^sh) (round half up, exactly as residues.py) = v' 2^d2 for an entry that
// split_scaled_fp below does not take (|y| >= 2^61, a shift outside the double range, Inf/NaN),
// as the 96-bit word u = v' + 2^85 with X' = v' 2^d2, |v'| < 2^84:
// v' = mant 2^d1 with d1 = min(d, 31) (|mant| < 2^53), or v' = the rounded x 2^sh for d < 0.
// (w0, w1) are the low 64 bits of v' (two's complement) and pk = top 2^10 + d2 with
// top = floor(v' / 2^64) + 2^21 in [2^20, 3 2^20) (22 bits) and d2 = d - d1 < 2^10 (d <= beta - 1
// <= 999 for a plan's shifts, d2 <= 968; 941 for Inf/NaN at shift 0: _POW2_WIDTH in backend.py).
// The 2^61 <= |y| < 2^84 of wide rows (beta >= 62: the fp64 contract at phi = 2, the normwise
// fixed counts from 17 moduli, dd) need no d2 step; with two words (a cap of 9) every entry from
// 2^62 on would take the pow2tab step for every modulus.
__device__ __forceinline__ void split_wide(double xv, i64 sh, unsigned int* w0, unsigned int* w1, unsigned int* pk) {
    u64 bits = (u64)__double_as_longlong(xv);
    int eb = (int)((bits >> 52) & 0x7ff);
    i64 frac = (i64)(bits & ((1ULL << 52) - 1));
    i64 mant, ex;
    if (eb == 0) { mant = frac; ex = -1074; } else { mant = frac | (1LL << 52); ex = eb - 1075; }
    if (bits >> 63) mant = -mant;
    const i64 d = ex + sh;
    i64 lo = 0;
    int hi = 0, d2 = 0;
    if (mant != 0) {
        if (d >= 0) {
            const int d1 = d < 31 ? (int)d : 31;
            d2 = (int)(d - d1);
            lo = (i64)((u64)mant << d1);  // the low 64 bits of mant 2^d1
            hi = (int)(mant >> (64 - d1 > 63 ? 63 : 64 - d1));  // floor(mant 2^d1 / 2^64), |.| < 2^20
        } else {
            const int rsh = (-d) > 60 ? 60 : (int)(-d);
            lo = (mant + (1LL << (rsh - 1))) >> rsh;  // round half up, |v| <= 2^52 + 1
            hi = lo < 0 ? -1 : 0;
        }
    }
    *w0 = (unsigned int)lo;
    *w1 = (unsigned int)((u64)lo >> 32);
    *pk = ((unsigned int)(hi + (1 << 21)) << 10) | (unsigned int)d2;
}

// u = v + 2^62 with X' = v, on the FP64 pipe (7 operations instead of ~30 integer
// ones, 2-5 % faster on the H200: docs/design.md, "Residue kernels"): y = x 2^sh (scale =
// 2^sh, a normal double: exact, or |y| < 2^-1022 where v = 0 anyway), v = floor(y + 1/2) =
// hi 2^32 + lo with
//   hi = floor(RD(y 2^-32)), rem = RD(y - hi 2^32) in [0, 2^32), lo = floor(RD(rem + 1/2)),
// each floor taken by a round-down addition of T = 1.5 2^52 (the sum's ulp is 1, and its bit
// pattern is 0x4338000000000000 + the integer, |integer| < 2^51). A round-down first step
// keeps the floor: floor(RD(r)) = floor(r) and floor(RD(RD(r) + 1/2)) = floor(r + 1/2), because
// the integers and half-integers involved are doubles. (Only the last three round-downs are
// needed: y 2^-32 is exact unless it underflows, and a nearest hi only makes lo negative, which
// the carry word handles.) Valid for |y| < 2^61 (then |v| < 2^62; 2^62 would do, 2^61 leaves a
// margin); returns false otherwise (Inf, NaN, huge), and the caller takes split_wide. The result
// is the same integer, so the residues are the same bytes.
__device__ __forceinline__ bool split_scaled_fp(double xv, double scale, unsigned int* ulo, unsigned int* uhi) {
    const double T = 6755399441055744.0;  // 1.5 2^52
    const double y = xv * scale;
    const double t1 = __dadd_rd(__dmul_rd(y, 2.3283064365386963e-10), T);  // T + floor(y 2^-32)
    const double hi = t1 - T;
    const double t2 = __dadd_rd(__dadd_rd(__fma_rd(-hi, 4294967296.0, y), 0.5), T);  // T + lo
    *ulo = (unsigned int)__double2loint(t2);
    // u_hi = hi + floor(lo / 2^32) + 2^30: floor(lo / 2^32) = (t2's high word) - 0x43380000
    *uhi = (unsigned int)__double2loint(t1) + (unsigned int)__double2hiint(t2) + (0x40000000u - 0x43380000u);
    return fabs(y) < 2305843009213693952.0;  // 2^61
}

#define RES_PER_THREAD 8

// RES_PER_THREAD consecutive inputs of a row as float64 (float32 widened exactly); vec: the
// thread's 16-byte-aligned vector loads are in bounds (double2, or float4 for float32)
__device__ __forceinline__ void load_row8(const double* row, int l0, int k, bool in, int vec, double* xv) {
    if (in && vec && l0 + 8 <= k) {
#pragma unroll
        for (int e = 0; e < 8; e += 2) {
            double2 t = *reinterpret_cast<const double2*>(row + l0 + e);
            xv[e] = t.x; xv[e + 1] = t.y;
        }
    } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) xv[e] = (in && l0 + e < k) ? row[l0 + e] : 0.0;
    }
}
__device__ __forceinline__ void load_row8(const float* row, int l0, int k, bool in, int vec, double* xv) {
    if (in && vec && l0 + 8 <= k) {
#pragma unroll
        for (int e = 0; e < 8; e += 4) {
            uint4 t = *reinterpret_cast<const uint4*>(row + l0 + e);
            xv[e] = widen_f32_bits(t.x); xv[e + 1] = widen_f32_bits(t.y);
            xv[e + 2] = widen_f32_bits(t.z); xv[e + 3] = widen_f32_bits(t.w);
        }
    } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) xv[e] = (in && l0 + e < k) ? load_f64(row + l0 + e) : 0.0;
    }
}

// The same for the two parts of interleaved complex entries (re, im of entry l at row[2 l],
// row[2 l + 1]): one 16-byte load per complex128 entry, one per two complex64 entries, where
// the row start is 16-byte aligned (vec).
__device__ __forceinline__ void load_row8_il(const double* row, int l0, int k, bool in, int vec, double* xv,
                                             double* yv) {
    if (in && vec && l0 + 8 <= k) {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            double2 t = *reinterpret_cast<const double2*>(row + 2 * (l0 + e));
            xv[e] = t.x; yv[e] = t.y;
        }
    } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            const bool ok = in && l0 + e < k;
            xv[e] = ok ? row[2 * (l0 + e)] : 0.0;
            yv[e] = ok ? row[2 * (l0 + e) + 1] : 0.0;
        }
    }
}
__device__ __forceinline__ void load_row8_il(const float* row, int l0, int k, bool in, int vec, double* xv,
                                             double* yv) {
    if (in && vec && l0 + 8 <= k) {
#pragma unroll
        for (int e = 0; e < 8; e += 2) {
            uint4 t = *reinterpret_cast<const uint4*>(row + 2 * (l0 + e));
            xv[e] = widen_f32_bits(t.x); yv[e] = widen_f32_bits(t.y);
            xv[e + 1] = widen_f32_bits(t.z); yv[e + 1] = widen_f32_bits(t.w);
        }
    } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            const bool ok = in && l0 + e < k;
            xv[e] = ok ? load_f64(row + 2 * (l0 + e)) : 0.0;
            yv[e] = ok ? load_f64(row + 2 * (l0 + e) + 1) : 0.0;
        }
    }
}

// Symmetric residues of X' + Y' from those of X' and Y' (the summed operands of the
// three-product form): both lie in the symmetric range [lo, hi] of m_q, so their sum lies in
// [2 lo, 2 hi] and one step of m_q brings it back.
__device__ __forceinline__ signed char sym_add(int v, int mq, int hi, int lo) {
    v = v > hi ? v - mq : v;
    v = v < lo ? v + mq : v;
    return (signed char)v;
}

// RES_PER_THREAD consecutive entries xv of one row, scaled by 2^sh, split once for every
// modulus. Narrow (every entry on the FP64 path): u = v + 2^62 as two 32-bit halves, pk = 0.
// Wide (some entry not): every entry as split_wide's three words (an FP64-path entry
// converted: low 64 bits of v = u - 2^62, top = 2^21 - [v < 0], d2 = 0); any_d2: some d2 > 0.
struct Split8 {
    unsigned int ulo[RES_PER_THREAD], uhi[RES_PER_THREAD], pk[RES_PER_THREAD];
    int wide, any_d2;
};

__device__ __forceinline__ void split8(const double* xv, i64 sh, Split8& s) {
    s.any_d2 = 0;
    s.wide = 0;
    const bool fp_row = sh >= -1022 && sh <= 1023;  // 2^sh a normal double
    const double scale = __longlong_as_double((fp_row ? sh + 1023 : 1023) << 52);
#pragma unroll
    for (int e = 0; e < RES_PER_THREAD; ++e) {
        s.pk[e] = 0;  // an FP64-path entry (split_wide's pk is >= 2^30)
        if (!(split_scaled_fp(xv[e], scale, &s.ulo[e], &s.uhi[e]) && fp_row)) {
            split_wide(xv[e], sh, &s.ulo[e], &s.uhi[e], &s.pk[e]);
            s.wide = 1;
            s.any_d2 |= (int)(s.pk[e] & 0x3ffu);
        }
    }
    if (s.wide) {
#pragma unroll
        for (int e = 0; e < RES_PER_THREAD; ++e) {
            if (s.pk[e] == 0) {
                const unsigned int neg = s.uhi[e] < 0x40000000u;  // v < 0 iff u < 2^62
                s.uhi[e] -= 0x40000000u;
                s.pk[e] = ((1u << 21) - neg) << 10;
            }
        }
    }
}

// sm[e] = (X'_e + h) mod m, MOD[q] = m, h = m / 2, up to a multiple of m: sm[e] < 2^20.
// pow2tab[q * tabw + d] = 2^d mod MOD[q], for 0 <= d < tabw
__device__ __forceinline__ void residue8_sm(const Split8& s, int q, const short* __restrict__ pow2tab, int tabw,
                                            unsigned int* sm) {
    const unsigned int m = MOD[q], h = m / 2;
    if (s.wide) {  // bytes 8..10 of u = v' + 2^85 weighted by RB2, RC3 = (h - 2^85) mod m
#pragma unroll
        for (int e = 0; e < RES_PER_THREAD; ++e)  // < 2^20 (checked in the header), = v' + h mod m
            sm[e] = __dp4a(s.ulo[e], RB[q][0], __dp4a(s.uhi[e], RB[q][1], __dp4a(s.pk[e] >> 10, RB2[q], RC3[q])));
    } else {
#pragma unroll
        for (int e = 0; e < RES_PER_THREAD; ++e)  // < 2^20 (checked in the header), = v + h mod m
            sm[e] = __dp4a(s.ulo[e], RB[q][0], __dp4a(s.uhi[e], RB[q][1], RC[q]));
    }
    if (s.any_d2) {  // X' = v' 2^d2: (X' + h) mod m = (((v' + h) mod m + m - h) T + h) mod m
#pragma unroll
        for (int e = 0; e < RES_PER_THREAD; ++e) {
            const unsigned int d2 = s.pk[e] & 0x3ffu;
            const unsigned int t = d2 ? (unsigned int)pow2tab[q * tabw + d2] : 1u;  // < m
            sm[e] = (fastmod(sm[e], FM[q], m) + m - h) * t + h;  // < 2^17
        }
    }
}

// The symmetric residues b[e] modulo MOD[q] of the split entries.
__device__ __forceinline__ void residue8(const Split8& s, int q, const short* __restrict__ pow2tab, int tabw,
                                         int* b) {
    const unsigned int m = MOD[q], h = m / 2;
    unsigned int sm[RES_PER_THREAD];
    residue8_sm(s, q, pow2tab, tabw, sm);
    // (v + h) mod m - h, the symmetric residue. (The -h fused into the fastmod's IMAD.HI
    // as its addend, mad.hi.u32, measured slower on the H200.)
#pragma unroll
    for (int e = 0; e < RES_PER_THREAD; ++e) b[e] = (int)fastmod(sm[e], FM[q], m) - (int)h;
}

// The low bytes of eight residues as one 8-byte word (entry e in byte e).
__device__ __forceinline__ uint2 pack8(const int* b) {
    uint2 w;
    w.x = __byte_perm(__byte_perm(b[0], b[1], 0x0040), __byte_perm(b[2], b[3], 0x0040), 0x5410);
    w.y = __byte_perm(__byte_perm(b[4], b[5], 0x0040), __byte_perm(b[6], b[7], 0x0040), 0x5410);
    return w;
}

// The symmetric residues of RES_PER_THREAD consecutive entries xv of one row, scaled by
// 2^sh, as one 8-byte word per modulus, handed to store(q, word) for q = 0, 1, ..., NMOD - 1
// in order (every thread of a block calls it for every q, so store may hold block barriers).
// Shared by the row and column kernels below.
template <typename Store>
__device__ __forceinline__ void residues8(const double* xv, i64 sh, const short* __restrict__ pow2tab,
                                          int tabw, Store store) {
    Split8 s;
    split8(xv, sh, s);
#pragma unroll
    for (int q = 0; q < NMOD; ++q) {
        int b[RES_PER_THREAD];
        residue8(s, q, pow2tab, tabw, b);
        store(q, pack8(b));
    }
}

// The same for two parts of one scaling (rows of Ar and Ai, or columns of Br and Bi, of a
// complex product), store(q, w0, w1, w2) for q in order as above:
// * the three-product form: the words of X', Y' and of the sum of their scaled integers X' + Y';
// * SPLIT_FORM (moduli with a square root SQ[q] = t of -1, odd): the words of X' + t Y' and
//   X' - t Y' (w2 unused). From sm_x = X' + h and r_y = (Y' + h) mod m:
//   X' + t Y' + h = sm_x + t r_y + KP and X' - t Y' + h = sm_x + (m - t) r_y + KM (mod m),
//   KP = -t h, KM = t h mod m, each below 2^21 (checked in the header), one fastmod each.
template <bool SPLIT_FORM, typename Store>
__device__ __forceinline__ void residues8_two(const double* xv, const double* yv, i64 sh,
                                              const short* __restrict__ pow2tab, int tabw, Store store) {
    Split8 sx, sy;
    split8(xv, sh, sx);
    split8(yv, sh, sy);
#pragma unroll
    for (int q = 0; q < NMOD; ++q) {
        if (SPLIT_FORM) {
            const unsigned int m = MOD[q], h = m / 2;
            unsigned int smx[RES_PER_THREAD], smy[RES_PER_THREAD];
            residue8_sm(sx, q, pow2tab, tabw, smx);
            residue8_sm(sy, q, pow2tab, tabw, smy);
            int bp[RES_PER_THREAD], bm[RES_PER_THREAD];
#pragma unroll
            for (int e = 0; e < RES_PER_THREAD; ++e) {
                const unsigned int ry = fastmod(smy[e], FM[q], m);
                bp[e] = (int)fastmod(smx[e] + SQ[q] * ry + KP[q], FM[q], m) - (int)h;
                bm[e] = (int)fastmod(smx[e] + (m - SQ[q]) * ry + KM[q], FM[q], m) - (int)h;
            }
            const uint2 wp = pack8(bp);
            store(q, wp, pack8(bm), wp);
        } else {
            int bx[RES_PER_THREAD], by[RES_PER_THREAD], bs[RES_PER_THREAD];
            residue8(sx, q, pow2tab, tabw, bx);
            residue8(sy, q, pow2tab, tabw, by);
            const int mq = MOD[q], hi = (mq - 1) / 2, lo = -hi - ((mq & 1) ? 0 : 1);
#pragma unroll
            for (int e = 0; e < RES_PER_THREAD; ++e) bs[e] = sym_add(bx[e] + by[e], mq, hi, lo);
            store(q, pack8(bx), pack8(by), pack8(bs));
        }
    }
}

// One thread: RES_PER_THREAD consecutive entries of a row (kp is a multiple of 16), one
// 8-byte store per modulus. 2-D launch: x over column groups, y over rows (grid-stride).
// T: double, or float (widened exactly: the fp32 contract reads its operands as they are).
// vec != 0: x 16-byte aligned and ldx a multiple of 16 bytes (vector loads).
// PAIR: two parts x, y of one scaling (same ldx; vec for both) into out, out_y, and the
// residues of their sum into out_s (residues8_two); otherwise y, out_y, out_s are unused.
// IL (with PAIR): the parts interleaved in the rows of x (complex entries, load_row8_il; ldx
// in T units), y unused. SPLIT (with PAIR): the split form's two words (residues8_two) into
// out, out_y; out_s unused.
template <typename T, bool PAIR, bool IL = false, bool SPLIT_FORM = false>
__device__ __forceinline__ void scaled_residues_impl(const T* __restrict__ x, const T* __restrict__ y, i64 ldx,
                                                     const i64* __restrict__ shift,
                                                     int r, int k, int rp, int kp,
                                                     const short* __restrict__ pow2tab, int tabw, int vec,
                                                     uint2* __restrict__ out, uint2* __restrict__ out_y,
                                                     uint2* __restrict__ out_s) {
    const int l0 = (blockIdx.x * blockDim.x + threadIdx.x) * RES_PER_THREAD;
    if (l0 >= kp) return;
    const i64 slab8 = (i64)rp * kp / RES_PER_THREAD;  // one modulus slab in uint2 units
    for (int i = blockIdx.y * blockDim.y + threadIdx.y; i < rp; i += gridDim.y * blockDim.y) {
        double xv[RES_PER_THREAD];
        double yv[RES_PER_THREAD];
        if (IL)
            load_row8_il(x + (i64)i * ldx, l0, k, i < r, vec, xv, yv);
        else
            load_row8(x + (i64)i * ldx, l0, k, i < r, vec, xv);
        const i64 sh = i < r ? shift[i] : 0;
        const i64 o = ((i64)i * kp + l0) / RES_PER_THREAD;
        if (PAIR) {
            if (!IL) load_row8(y + (i64)i * ldx, l0, k, i < r, vec, yv);
            residues8_two<SPLIT_FORM>(xv, yv, sh, pow2tab, tabw, [&](int q, uint2 w0, uint2 w1, uint2 w2) {
                out[o + q * slab8] = w0;
                out_y[o + q * slab8] = w1;
                if (!SPLIT_FORM) out_s[o + q * slab8] = w2;
            });
        } else {
            residues8(xv, sh, pow2tab, tabw, [&](int q, uint2 w) { out[o + q * slab8] = w; });
        }
    }
}

// The same residues for the rows of x^T, read from x's columns (no transposed copy): x is
// k x r row-major float64 (ldx: row stride in elements), row i of the output comes from
// column i of x, out is (NMOD, rp, kp) as above. Block (RC_ROWS, RC_GROUPS) = a tile of 16
// output rows x 128 entries: threadIdx.x picks the column (a warp's loads are two 128-byte
// runs of rows of x), threadIdx.y the group of 8 entries; the tile's 8-byte words go through
// shared memory, BATCH moduli at a time, so that a warp stores 128-byte runs of two output
// rows. (Measured on the H200 against 16 x 256, 32 x 64 and 32 x 128 tiles, a prefetch of the
// next tile and a swapped grid: this geometry is the fastest or equal, still ~20 % slower
// than the row kernel on a transposed copy, but without the copy; docs/design.md,
// "Operand B".)
// W = 3: two parts x, y of one scaling (same ldx) and their sum, as the row kernel's PAIR
// (three words per modulus through the tile, BATCH moduli at a time within 48 KB); W = 2: the
// split form's two words (residues8_two).
// Grid: x over ceil(rp / RC_ROWS) tiles, y over 128-entry groups (grid-stride, block-uniform).
#define RC_ROWS 16
#define RC_GROUPS 16
template <int W, int BATCH>
__device__ __forceinline__ void scaled_residues_cols_impl(const double* __restrict__ x,
                                                          const double* __restrict__ y, i64 ldx,
                                                          const i64* __restrict__ shift,
                                                          int r, int k, int rp, int kp,
                                                          const short* __restrict__ pow2tab, int tabw,
                                                          uint2* __restrict__ out0, uint2* __restrict__ out1,
                                                          uint2* __restrict__ out2) {
    // [word][modulus][output row][entry group]; +1 keeps half-warp accesses conflict-free
    __shared__ uint2 tile[W][BATCH][RC_ROWS][RC_GROUPS + 1];
    uint2* const outs[3] = {out0, out1, out2};
    const int tx = threadIdx.x, ty = threadIdx.y, t = ty * RC_ROWS + tx;
    const i64 slab8 = (i64)rp * kp / RES_PER_THREAD;
    const i64 row8 = kp / RES_PER_THREAD;  // one output row in uint2 units
    const int span = RC_GROUPS * RES_PER_THREAD;  // entries per tile
    // blockIdx.x over row tiles, y over entry groups; both loops grid-stride and block-uniform
    // (x over entry groups instead, so that the blocks running together write whole output
    // rows, measured the same on the H200)
    for (int bt = blockIdx.x; bt * RC_ROWS < rp; bt += gridDim.x) {
        const int i = bt * RC_ROWS + tx;
        const i64 sh = i < r ? shift[i] : 0;
        // in the stores, thread t moves word t % RC_GROUPS of tile row t / RC_GROUPS per modulus
        const int orow = bt * RC_ROWS + t / RC_GROUPS;
        for (int g0 = blockIdx.y * span; g0 < kp; g0 += gridDim.y * span) {
            const int l0 = g0 + ty * RES_PER_THREAD;
            const i64 og = g0 / RES_PER_THREAD + t % RC_GROUPS;
            const bool st_ok = orow < rp && og < row8;
            const i64 o = (i64)orow * row8 + og;
            auto put = [&](int q, const uint2* w) {
                const int q0 = q - q % BATCH;
#pragma unroll
                for (int wi = 0; wi < W; ++wi) tile[wi][q - q0][tx][ty] = w[wi];
                if (q - q0 == BATCH - 1 || q == NMOD - 1) {  // a batch is complete: store it
                    __syncthreads();
#pragma unroll
                    for (int wi = 0; wi < W; ++wi)
#pragma unroll
                        for (int qq = 0; qq < BATCH; ++qq)
                            if (q0 + qq <= q && st_ok)
                                outs[wi][o + (i64)(q0 + qq) * slab8] = tile[wi][qq][t / RC_GROUPS][t % RC_GROUPS];
                    __syncthreads();  // before the next batch overwrites the tile
                }
            };
            double xv[RES_PER_THREAD];
#pragma unroll
            for (int e = 0; e < RES_PER_THREAD; ++e)
                xv[e] = (i < r && l0 + e < k) ? x[(i64)(l0 + e) * ldx + i] : 0.0;
            if (W >= 2) {
                double yv[RES_PER_THREAD];
#pragma unroll
                for (int e = 0; e < RES_PER_THREAD; ++e)
                    yv[e] = (i < r && l0 + e < k) ? y[(i64)(l0 + e) * ldx + i] : 0.0;
                residues8_two<W == 2>(xv, yv, sh, pow2tab, tabw, [&](int q, uint2 w0, uint2 w1, uint2 w2) {
                    const uint2 w[3] = {w0, w1, w2};  // (put stores the first W)
                    put(q, w);
                });
            } else {
                residues8(xv, sh, pow2tab, tabw, [&](int q, uint2 w) { put(q, &w); });
            }
        }
    }
}

#define SCALED_RESIDUES_KERNEL(NAME, T)                                                              \
    extern "C" __global__ void NAME(const T* __restrict__ x, i64 ldx, const i64* __restrict__ shift, \
                                    int r, int k, int rp, int kp, const short* __restrict__ pow2tab, \
                                    int tabw, int vec, uint2* __restrict__ out) {                   \
        scaled_residues_impl<T, false>(x, nullptr, ldx, shift, r, k, rp, kp, pow2tab, tabw, vec, out, \
                                       nullptr, nullptr);                                            \
    }
SCALED_RESIDUES_KERNEL(scaled_residues, double)
SCALED_RESIDUES_KERNEL(scaled_residues_f32, float)

// Two parts and their sum (the three-product form of a complex product): x, y rows of one
// stride ldx, one scaling shift; out_x, out_y, out_s as out above. (Two splits live at once:
// capped at 80 registers, three blocks of 256 threads per SM, with a few bytes spilled:
// measured faster on the H200 than 96 registers and two blocks, docs/design.md.)
#define SCALED_RESIDUES_PAIR_KERNEL(NAME, T)                                                         \
    extern "C" __global__ void __launch_bounds__(256, 3) NAME(const T* __restrict__ x,              \
                                    const T* __restrict__ y, i64 ldx,                                \
                                    const i64* __restrict__ shift, int r, int k, int rp, int kp,     \
                                    const short* __restrict__ pow2tab, int tabw, int vec,            \
                                    uint2* __restrict__ out_x, uint2* __restrict__ out_y,            \
                                    uint2* __restrict__ out_s) {                                     \
        scaled_residues_impl<T, true>(x, y, ldx, shift, r, k, rp, kp, pow2tab, tabw, vec, out_x,     \
                                      out_y, out_s);                                                 \
    }
SCALED_RESIDUES_PAIR_KERNEL(scaled_residues_pair, double)
SCALED_RESIDUES_PAIR_KERNEL(scaled_residues_pair_f32, float)

// The two parts interleaved in the rows of x (complex128 / complex64 entries read in place).
#define SCALED_RESIDUES_PAIR_IL_KERNEL(NAME, T)                                                      \
    extern "C" __global__ void __launch_bounds__(256, 3) NAME(const T* __restrict__ x, i64 ldx,     \
                                    const i64* __restrict__ shift, int r, int k, int rp, int kp,     \
                                    const short* __restrict__ pow2tab, int tabw, int vec,            \
                                    uint2* __restrict__ out_x, uint2* __restrict__ out_y,            \
                                    uint2* __restrict__ out_s) {                                     \
        scaled_residues_impl<T, true, true>(x, nullptr, ldx, shift, r, k, rp, kp, pow2tab, tabw, vec, \
                                            out_x, out_y, out_s);                                    \
    }
SCALED_RESIDUES_PAIR_IL_KERNEL(scaled_residues_pair_il, double)
SCALED_RESIDUES_PAIR_IL_KERNEL(scaled_residues_pair_il_f32, float)

// (at most 64 registers: four blocks of 256 threads per SM; with five, ptxas spills)
extern "C" __global__ void __launch_bounds__(RC_ROWS * RC_GROUPS, 4) scaled_residues_cols(
    const double* __restrict__ x, i64 ldx, const i64* __restrict__ shift, int r, int k, int rp, int kp,
    const short* __restrict__ pow2tab, int tabw, uint2* __restrict__ out) {
    scaled_residues_cols_impl<1, 8>(x, nullptr, ldx, shift, r, k, rp, kp, pow2tab, tabw, out, nullptr, nullptr);
}

// The column kernel for two parts and their sum (two splits live at once: three blocks of 256
// threads per SM, 80 registers, no spills; measured faster on the H200 than two blocks).
extern "C" __global__ void __launch_bounds__(RC_ROWS * RC_GROUPS, 3) scaled_residues_cols_pair(
    const double* __restrict__ x, const double* __restrict__ y, i64 ldx, const i64* __restrict__ shift, int r,
    int k, int rp, int kp, const short* __restrict__ pow2tab, int tabw, uint2* __restrict__ out_x,
    uint2* __restrict__ out_y, uint2* __restrict__ out_s) {
    scaled_residues_cols_impl<3, 4>(x, y, ldx, shift, r, k, rp, kp, pow2tab, tabw, out_x, out_y, out_s);
}

#ifdef SPLIT
// The split form (moduli with a square root of -1): the residues of X' + t Y' and X' - t Y'
// of two parts x, y of one scaling, as the pair kernels above without the third word.
#define SCALED_RESIDUES_SPLIT_KERNEL(NAME, T)                                                        \
    extern "C" __global__ void __launch_bounds__(256, 3) NAME(const T* __restrict__ x,              \
                                    const T* __restrict__ y, i64 ldx,                                \
                                    const i64* __restrict__ shift, int r, int k, int rp, int kp,     \
                                    const short* __restrict__ pow2tab, int tabw, int vec,            \
                                    uint2* __restrict__ out_p, uint2* __restrict__ out_m) {          \
        scaled_residues_impl<T, true, false, true>(x, y, ldx, shift, r, k, rp, kp, pow2tab, tabw,   \
                                                   vec, out_p, out_m, nullptr);                      \
    }
SCALED_RESIDUES_SPLIT_KERNEL(scaled_residues_split, double)
SCALED_RESIDUES_SPLIT_KERNEL(scaled_residues_split_f32, float)

#define SCALED_RESIDUES_SPLIT_IL_KERNEL(NAME, T)                                                     \
    extern "C" __global__ void __launch_bounds__(256, 3) NAME(const T* __restrict__ x, i64 ldx,     \
                                    const i64* __restrict__ shift, int r, int k, int rp, int kp,     \
                                    const short* __restrict__ pow2tab, int tabw, int vec,            \
                                    uint2* __restrict__ out_p, uint2* __restrict__ out_m) {          \
        scaled_residues_impl<T, true, true, true>(x, nullptr, ldx, shift, r, k, rp, kp, pow2tab,    \
                                                  tabw, vec, out_p, out_m, nullptr);                 \
    }
SCALED_RESIDUES_SPLIT_IL_KERNEL(scaled_residues_split_il, double)
SCALED_RESIDUES_SPLIT_IL_KERNEL(scaled_residues_split_il_f32, float)

extern "C" __global__ void __launch_bounds__(RC_ROWS * RC_GROUPS, 3) scaled_residues_cols_split(
    const double* __restrict__ x, const double* __restrict__ y, i64 ldx, const i64* __restrict__ shift, int r,
    int k, int rp, int kp, const short* __restrict__ pow2tab, int tabw, uint2* __restrict__ out_p,
    uint2* __restrict__ out_m) {
    scaled_residues_cols_impl<2, 6>(x, y, ldx, shift, r, k, rp, kp, pow2tab, tabw, out_p, out_m, nullptr);
}
#endif

// --- CRT reconstruction + final rounding ------------------------------------------------
// c: NMOD slabs of int32 exact products (row-major, row stride ldc, slab stride sc), or
// residues already reduced. s[m], t[n]: shifts. out: m x n (ld = ldo) of OUT_T.

// Garner's mixed-radix digits with one reduction per digit (byte dot products). c_q is the
// exact int32 product (|c_q| < 2^31; or a residue in [0, m) on the long-k path). For q >= 1,
// with b_0..b_3 the bytes of c_q + 2^31 (as unsigned) and V the digits v_p packed four per word,
//   v_q = (KC_q + sum_j b_j PI_q[j] + sum_{p<q} v_p G[p][q]) mod m_q,
// PI_q[j] = 2^(8 j) INV_q mod m_q, G[p][q] = -W[p][q] INV_q mod m_q, KC_q = -2^31 INV_q mod m_q:
// the digit garner_digits (crt/reconstruct.py) computes, ((c_q - sum_p v_p W[p][q]) mod m_q)
// INV_q mod m_q, with the sum kept unreduced (< 2^22, checked in the header) and its byte
// products taken four at a time by __dp4a. v_0 = c_0 mod 256. (The plain form reduces c_q
// mod m_q first and adds one product per p < q; the measured steps of this kernel are in
// docs/design.md, "Reconstruction".)
// Horner on groups of four digits: D_g = v_4g + m_4g (v_4g+1 + m_4g+1 (...)) < R_g =
// m_4g ... m_4g+3 < 2^32, X = D_0 + R_0 (D_1 + R_1 (...)), one 32x32->64 step per limb.
// |C'| as NLIMB little-endian 32-bit limbs in x, from the NMOD values cu[q] (the bits of c_q);
// returns C' < 0. (Garner's mixed-radix digits, Horner in base 2^32, symmetric range.)
// SET 1, 2: the value reconstructed is c_q f_q mod m_q, f_q = 1/2 (SET 1) or 1/(2 SQ[q])
// (SET 2), the factor folded into the byte weights and the constant (PIS, KCS): the real and
// imaginary parts (P+ + P-)/2 and (P+ - P-)/(2t) of the split form.
template <int SET = 0>
__device__ __forceinline__ bool crt_limbs_v(const unsigned int* cu, u32* x) {
    unsigned int v[NMOD];
    unsigned int V[NGW];  // v_p, byte p % 4 of word p / 4
#pragma unroll
    for (int q = 0; q < NMOD; ++q) {
        const unsigned int m = MOD[q];
        if (q == 0 && m == 256u && SET == 0) {
            v[0] = cu[0] & 255u;  // two's complement: c mod 256
        } else {
            const unsigned int pi = SET == 0 ? PI[q] : PIS[SET == 1 ? 0 : 1][q];
            const unsigned int kc = SET == 0 ? KC[q] : KCS[SET == 1 ? 0 : 1][q];
            unsigned int z = __dp4a(cu[q] ^ 0x80000000u, pi, kc);  // bytes of c + 2^31
#pragma unroll
            for (int w = 0; w < NGW; ++w)
                if (4 * w < q) z = __dp4a(V[w], GP[q][w], z);
            v[q] = fastmod(z, FM[q], m);
        }
        // byte q % 4 of V[q / 4] (one PRMT; v_q < 256)
        if (q % 4 == 0) V[q / 4] = v[q];
        else V[q / 4] = __byte_perm(V[q / 4], v[q], q % 4 == 1 ? 0x3240 : (q % 4 == 2 ? 0x3410 : 0x4210));
    }
    // Horner group digits D_g (X = D_0 + R_0 (D_1 + R_1 (...)), D_g < R_g)
    (void)MLIMB;  // M's limbs: not needed, the sign and |C'| come from the group digits
    u32 D[NGRP];
#pragma unroll
    for (int g = 0; g < NGRP; ++g) {
        u32 dg = 0;
#pragma unroll
        for (int q = NMOD - 1; q >= 0; --q)
            if (q / 4 == g) dg = dg * (u32)MOD[q] + v[q];  // highest digit of the group first
        D[g] = dg;
    }
    // C' = X - M < 0 iff X > M - X, i.e. 2 X > M, i.e. X > floor(M / 2): compare the group
    // digits with those of floor(M / 2) (H_g, constants: M halved from the top group down), from
    // the top; the top group decides unless it equals H (rare: lower groups then decide)
    u32 H[NGRP];
    u32 rem = 1u;
#pragma unroll
    for (int g = NGRP - 1; g >= 0; --g) {
        H[g] = rem ? (u32)GR[g] / 2u : 0u;
        rem = rem ? (u32)GR[g] % 2u : 0u;
    }
    bool neg = D[NGRP - 1] > H[NGRP - 1];
    if (D[NGRP - 1] == H[NGRP - 1]) {
        bool decided = false;
#pragma unroll
        for (int g = NGRP - 2; g >= 0; --g) {
            if (!decided && D[g] != H[g]) {
                neg = D[g] > H[g];
                decided = true;
            }
        }
    }
    // |C'| = M - X = (M - 1 - X) + 1 when negative: group digits R_g - 1 - D_g (no borrows), plus
    // one in the lowest (R_0 - D_0 <= R_0 < 2^32: Horner takes it as its carry-in)
#pragma unroll
    for (int g = 0; g < NGRP; ++g) D[g] = neg ? (u32)GR[g] - (g == 0 ? 0u : 1u) - D[g] : D[g];
#pragma unroll
    for (int j = 0; j < NLIMB; ++j) x[j] = 0;
#pragma unroll
    for (int g = NGRP - 1; g >= 0; --g) {
        if (g == NGRP - 1) {
            x[0] = D[g];
        } else {
            u64 carry = D[g];
#pragma unroll
            for (int j = 0; j < NLIMB; ++j) {
                if (j < GUSED[g]) {
                    const u64 tt = (u64)x[j] * (u64)GR[g] + carry;  // < 2^64
                    x[j] = (u32)tt;
                    carry = tt >> 32;
                }
            }
        }
    }
    return neg;
}

// crt_limbs_v of the entry at off (crt_round_impl, wide.cu)
__device__ __forceinline__ bool crt_limbs(const int* __restrict__ c, i64 sc, i64 off, u32* x) {
    unsigned int cu[NMOD];
#pragma unroll
    for (int q = 0; q < NMOD; ++q) cu[q] = (unsigned int)__ldg(c + q * sc + off);
    return crt_limbs_v(cu, x);
}

// Bit pattern of (-1)^neg X 2^e (X in x, NLIMB limbs) rounded to nearest even in the binary
// format with P-bit significands (binary64: P = 53, binary32: P = 24), smallest subnormal
// exponent EMIN_SUB, biased exponent BEINF for Inf and the sign at bit SIGN; X = 0 gives +0, and
// so does a negative value that rounds to zero. The same integers as precision/rounding.py,
// which takes the same rounding step by step.
template <int P> struct round_bits_t { typedef u64 T; };
template <> struct round_bits_t<24> { typedef u32 T; };

template <int P, int EMIN_SUB, int BEINF, int SIGN>
__device__ __forceinline__ typename round_bits_t<P>::T round_bits(const u32* x, bool neg, i64 e) {
    typedef typename round_bits_t<P>::T T;
    // the highest non-zero limb (hi, index tt), the two below it (mid, lo) and whether any
    // lower limb is non-zero (select chains, no branches)
    u32 hi = x[0], mid = 0u, lo = 0u, below = 0u, pre = 0u;
    int tt = 0;
#pragma unroll
    for (int j = 1; j < NLIMB; ++j) {
        if (j >= 3) pre |= x[j >= 3 ? j - 3 : 0];
        if (x[j] != 0u) {
            hi = x[j];
            mid = x[j - 1];
            lo = j >= 2 ? x[j >= 2 ? j - 2 : 0] : 0u;
            below = pre;
            tt = j;
        }
    }
    // w: the 64 bits of X from its top bit down (top bit set; 0 for X = 0);
    // X 2^e = (w + f) 2^g with 0 <= f < 1, f != 0 iff below != 0
    const int sh = __clz(hi);  // 32 for X = 0 (funnel shifts take it mod 32: all limbs are 0)
    const u32 whi = __funnelshift_l(mid, hi, sh), wlo = __funnelshift_l(lo, mid, sh);
    below |= __funnelshift_l(0u, lo, sh);  // the bits of lo under w
    const i64 g = e + (32 * (tt - 1) - sh);
    // qexp = g + 64 - P: exponent of the last significand place of a normal result
    constexpr int GMIN = EMIN_SUB - (64 - P);        // qexp >= EMIN_SUB
    constexpr int GINF = BEINF + EMIN_SUB - (64 - P);  // qexp - EMIN_SUB >= BEINF: Inf
    T bits;
    if (hi != 0u && g >= GMIN) {
        // normal (or Inf): the conversion rounds w (sticky in bit 0, under the round bit) to
        // nearest even, mant 2^(64-P) with mant in [2^(P-1), 2^P], bit pattern
        // (64 - P - EMIN_SUB) 2^(P-1) + mant; the result's is (qexp - EMIN_SUB) 2^(P-1) + mant
        // (a carry to 2^P moves into the exponent field, up to Inf)
        const u64 w = ((u64)whi << 32) | wlo | (u64)(below != 0u);
        const int gc = g < GINF ? (int)g : GINF;
        T r;
        if (P == 53) r = (T)__double_as_longlong(__ull2double_rn(w));
        else r = (T)__float_as_uint(__ull2float_rn(w));
        r += (T)gc << (P - 1);
        bits = r < ((T)BEINF << (P - 1)) ? r : ((T)BEINF << (P - 1));
    } else {
        // subnormal or zero: rounded at the fixed place 2^EMIN_SUB, d = EMIN_SUB - g > 64 - P
        // bits of w dropped; bits = mant (a carry to 2^(P-1) is the smallest normal)
        const u64 w = ((u64)whi << 32) | wlo;
        const i64 d = EMIN_SUB - g;
        u64 mant = 0;
        if (hi != 0u && d <= 64) {  // (X = 0: mant = 0; d may be < 1 there, no shift by it)
            const int dd = (int)d;
            const u64 top = w >> (dd - 1);
            const u64 kept = top >> 1;
            const u64 rest = (w & ((1ULL << (dd - 1)) - 1)) | below;
            mant = kept + (top & ((u64)(rest != 0) | kept) & 1u);
        }
        bits = (T)mant;
    }
    if (neg && bits != 0) bits |= (T)1 << SIGN;
    return bits;
}

__device__ __forceinline__ void store_bits(double* o, u64 b) { *o = __longlong_as_double((i64)b); }
__device__ __forceinline__ void store_bits(float* o, u32 b) { *o = __uint_as_float(b); }

// One thread per output column, every row of the grid-stride loop. 2-D launch: x over
// columns, y over rows (grid y <= 65535). (Two or four columns per thread, with 8- or 16-byte
// loads per slab, measured slower on the H200 — 1.450 and 1.811 ms against 1.227 at fp64 8192:
// 96-163 registers; docs/design.md, "Reconstruction".)
template <typename OUT_T, int P, int EMIN_SUB, int BEINF, int SIGN>
__device__ __forceinline__ void crt_round_impl(const int* __restrict__ c, i64 ldc, i64 sc,
                                               const i64* __restrict__ s, const i64* __restrict__ t,
                                               int m, int n, OUT_T* __restrict__ out, i64 ldo, int nb,
                                               i64 cbs, i64 sbs, i64 tbs, i64 obs) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    for (int z = blockIdx.z; z < nb; z += gridDim.z) {
        const int* cz = c + z * cbs;
        const i64* sz = s + z * sbs;
        OUT_T* oz = out + z * obs;
        const i64 tj = t[z * tbs + j];
        for (int i = blockIdx.y * blockDim.y + threadIdx.y; i < m; i += gridDim.y * blockDim.y) {
            u32 x[NLIMB];
            const bool neg = crt_limbs(cz, sc, (i64)i * ldc + j, x);
            store_bits(oz + (i64)i * ldo + j, round_bits<P, EMIN_SUB, BEINF, SIGN>(x, neg, -(sz[i] + tj)));
        }
    }
}

// A stack of nb products (grid z, grid-stride): product z reads c + z cbs, s + z sbs, t + z tbs
// and writes out + z obs (a stride 0 shares one operand's shifts, e.g. a broadcast B).
#define CRT_ROUND_KERNEL(NAME, OUT_T, P, EMIN_SUB, BEINF, SIGN)                                    \
    extern "C" __global__ void NAME(const int* __restrict__ c, i64 ldc, i64 sc,                    \
                                    const i64* __restrict__ s, const i64* __restrict__ t,          \
                                    int m, int n, OUT_T* __restrict__ out, i64 ldo, int nb,        \
                                    i64 cbs, i64 sbs, i64 tbs, i64 obs) {                          \
        crt_round_impl<OUT_T, P, EMIN_SUB, BEINF, SIGN>(c, ldc, sc, s, t, m, n, out, ldo, nb, cbs, \
                                                        sbs, tbs, obs);                            \
    }

CRT_ROUND_KERNEL(crt_round_f64, double, 53, -1074, 2047, 63)
CRT_ROUND_KERNEL(crt_round_f32, float, 24, -149, 255, 31)

// Complex products, both parts of each entry reconstructed and rounded like crt_round_impl, so
// no combined array is written. FORM 3, the three-product form: from the exact int32 products
// P1 = Ar'Br', P2 = Ai'Bi', P3 = (Ar' + Ai')(Br' + Bi') (same layout) the real part P1 - P2 and
// the imaginary part P3 - P1 - P2. FORM 2, the split form (moduli with a square root t of -1):
// from P+ (c1, of the residues of X' + t Y') and P- (c2, X' - t Y'; c3 unused)
// Re = (P+ + P-)/2 and Im = (P+ - P-)/(2t) modulo each m_q (crt_limbs_v SET 1 and 2). The caller
// guarantees |P| <= 2^29 (inner dimension <= 2^15), so the sums and differences fit int32; they
// are formed in unsigned arithmetic (wrap-around gives the two's complement bits of the exact
// value) and read by crt_limbs_v like any product. The outputs have row stride ldo and column
// stride cso (2: the interleaved words of a complex array).
template <int FORM, typename OUT_T, int P, int EMIN_SUB, int BEINF, int SIGN>
__device__ __forceinline__ void crt_round_parts_impl(const int* __restrict__ c1, const int* __restrict__ c2,
                                                     const int* __restrict__ c3, i64 ldc, i64 sc,
                                                     const i64* __restrict__ s, const i64* __restrict__ tr,
                                                     const i64* __restrict__ ti, int m, int n,
                                                     OUT_T* __restrict__ out_re, OUT_T* __restrict__ out_im,
                                                     i64 ldo, i64 cso) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    const i64 trj = tr[j], tij = ti[j];
    for (int i = blockIdx.y * blockDim.y + threadIdx.y; i < m; i += gridDim.y * blockDim.y) {
        const i64 off = (i64)i * ldc + j;
        unsigned int re[NMOD], im[NMOD];
#pragma unroll
        for (int q = 0; q < NMOD; ++q) {
            const unsigned int p1 = (unsigned int)__ldg(c1 + q * sc + off);
            const unsigned int p2 = (unsigned int)__ldg(c2 + q * sc + off);
            if (FORM == 3) {
                const unsigned int p3 = (unsigned int)__ldg(c3 + q * sc + off);
                re[q] = p1 - p2;
                im[q] = p3 - p1 - p2;
            } else {
                re[q] = p1 + p2;
                im[q] = p1 - p2;
            }
        }
        u32 x[NLIMB];
        bool neg = crt_limbs_v<FORM == 3 ? 0 : 1>(re, x);
        store_bits(out_re + (i64)i * ldo + j * cso, round_bits<P, EMIN_SUB, BEINF, SIGN>(x, neg, -(s[i] + trj)));
        neg = crt_limbs_v<FORM == 3 ? 0 : 2>(im, x);
        store_bits(out_im + (i64)i * ldo + j * cso, round_bits<P, EMIN_SUB, BEINF, SIGN>(x, neg, -(s[i] + tij)));
    }
}

#define CRT_ROUND_3M_KERNEL(NAME, OUT_T, P, EMIN_SUB, BEINF, SIGN)                                 \
    extern "C" __global__ void NAME(const int* __restrict__ c1, const int* __restrict__ c2,        \
                                    const int* __restrict__ c3, i64 ldc, i64 sc,                   \
                                    const i64* __restrict__ s, const i64* __restrict__ tr,         \
                                    const i64* __restrict__ ti, int m, int n,                      \
                                    OUT_T* __restrict__ out_re, OUT_T* __restrict__ out_im,        \
                                    i64 ldo, i64 cso) {                                            \
        crt_round_parts_impl<3, OUT_T, P, EMIN_SUB, BEINF, SIGN>(c1, c2, c3, ldc, sc, s, tr, ti, m, \
                                                                 n, out_re, out_im, ldo, cso);     \
    }

CRT_ROUND_3M_KERNEL(crt_round_3m_f64, double, 53, -1074, 2047, 63)
CRT_ROUND_3M_KERNEL(crt_round_3m_f32, float, 24, -149, 255, 31)

#ifdef SPLIT
// The split form (crt_round_parts_impl FORM 2): P+ and P-, no third product.
#define CRT_ROUND_SPLIT_KERNEL(NAME, OUT_T, P, EMIN_SUB, BEINF, SIGN)                              \
    extern "C" __global__ void NAME(const int* __restrict__ cp_, const int* __restrict__ cm_,      \
                                    i64 ldc, i64 sc, const i64* __restrict__ s,                    \
                                    const i64* __restrict__ tr, const i64* __restrict__ ti, int m, \
                                    int n, OUT_T* __restrict__ out_re, OUT_T* __restrict__ out_im, \
                                    i64 ldo, i64 cso) {                                            \
        crt_round_parts_impl<2, OUT_T, P, EMIN_SUB, BEINF, SIGN>(cp_, cm_, nullptr, ldc, sc, s, tr, \
                                                                 ti, m, n, out_re, out_im, ldo, cso); \
    }

CRT_ROUND_SPLIT_KERNEL(crt_round_split_f64, double, 53, -1074, 2047, 63)
CRT_ROUND_SPLIT_KERNEL(crt_round_split_f32, float, 24, -149, 255, 31)
#endif

// ozgemm CUDA kernels: CRT reconstruction into the wide formats (dd, binary128).
//
// Appended after crt.cu (same generated header: NMOD, NLIMB, MOD, MLIMB, ...); uses its
// crt_limbs() for the exact integer |C'| (base-2^32 limbs) and its sign. The rounding
// mirrors ozgemm/precision/rounding.py (round_to_precision, round_limbs_dd,
// round_limbs_binary128) step for step with integers only, so results are bit-identical to
// the CPU engine: round to nearest even, gradual underflow, zero results +0.

// bits [pos, pos + 32) of the integer held in n little-endian 32-bit limbs (0 outside)
template <int n>
__device__ __forceinline__ u32 getw(const u32* x, i64 pos) {
    if (pos >= 32 * (i64)n || pos <= -32) return 0;
    i64 j = pos >= 0 ? pos / 32 : -1;
    int b = (int)(pos - 32 * j);
    u32 lo = (j >= 0 && j < n) ? x[j] : 0u;
    u32 hi = (j + 1 >= 0 && j + 1 < n) ? x[j + 1] : 0u;
    return b == 0 ? lo : (lo >> b) | (hi << (32 - b));
}

// Round X 2^e (X in n limbs) to P <= 124 bits: mant (4 limbs) 2^qexp; returns false for X = 0.
template <int n, int P, int EMIN_SUB>
__device__ __forceinline__ bool round_p(const u32* x, i64 e, u32* mant, i64* qexp) {
    int tt = -1;
#pragma unroll
    for (int j = 0; j < n; ++j) if (x[j] != 0) tt = j;
    if (tt < 0) {
        mant[0] = mant[1] = mant[2] = mant[3] = 0;
        *qexp = 0;
        return false;
    }
    u32 top = 0;
#pragma unroll
    for (int j = 0; j < n; ++j) if (j == tt) top = x[j];
    const i64 nbits = 32 * (i64)tt + (32 - __clz(top));
    i64 drop = nbits - P;
    i64 q = e + drop;
    if (q < EMIN_SUB) { drop += EMIN_SUB - q; q = EMIN_SUB; }
#pragma unroll
    for (int k = 0; k < 4; ++k) mant[k] = getw<n>(x, drop + 32 * k);
    u32 rb = drop >= 1 ? (getw<n>(x, drop - 1) & 1u) : 0u;
    bool sticky = false;
    if (drop >= 2) {
        const i64 nb = drop - 1;  // bits [0, nb)
#pragma unroll
        for (int j = 0; j < n; ++j) {
            if ((i64)32 * (j + 1) <= nb) sticky |= x[j] != 0;
            else if ((i64)32 * j < nb) sticky |= (x[j] & ((1u << (int)(nb - 32 * j)) - 1u)) != 0;
        }
    }
    if (rb && (sticky || (mant[0] & 1u))) {
        u64 c = 1;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const u64 v = (u64)mant[k] + c;
            mant[k] = (u32)v;
            c = v >> 32;
        }
    }
    if ((mant[P / 32] >> (P % 32)) & 1u) {  // rounded up to 2^P
#pragma unroll
        for (int k = 0; k < 4; ++k) mant[k] = (mant[k] >> 1) | (k < 3 ? (mant[k + 1] << 31) : 0u);
        q += 1;
    }
    *qexp = q;
    return true;
}

__device__ __forceinline__ double limbs_to_double(const u32* mant, i64 qexp, bool neg) {
    const u64 v = (u64)mant[0] | ((u64)mant[1] << 32);
    if (qexp > 3000) qexp = 3000;
    if (qexp < -3000) qexp = -3000;
    double r = scalbn((double)v, (int)qexp);  // exact, or +-inf beyond the range
    return (neg && v != 0) ? -r : r;
}

// dd: hi = RN53(x), lo = RN53(x - hi)
__device__ __forceinline__ void round_store_dd(const u32* x, bool neg, i64 e, double* ohi, double* olo) {
    u32 mant[4];
    i64 qexp;
    if (!round_p<NLIMB, 53, -1074>(x, e, mant, &qexp)) { *ohi = 0.0; *olo = 0.0; return; }
    const double hi = limbs_to_double(mant, qexp, neg);
    *ohi = hi;
    const i64 d = qexp - e;
    if (d <= 0 || isinf(hi)) { *olo = 0.0; return; }  // hi exact, or beyond the range
    // R = X - mant 2^d over NLIMB + 1 limbs (two's complement), |R| <= ulp(hi)/2
    u32 r[NLIMB + 1];
    i64 borrow = 0;
#pragma unroll
    for (int j = 0; j < NLIMB + 1; ++j) {
        const u32 xj = j < NLIMB ? x[j] : 0u;
        const i64 v = (i64)xj - (i64)getw<2>(mant, 32 * (i64)j - d) - borrow;
        borrow = v < 0;
        r[j] = (u32)(v + (borrow << 32));
    }
    const bool rneg = borrow != 0;
    if (rneg) {  // negate
        u64 c = 1;
#pragma unroll
        for (int j = 0; j < NLIMB + 1; ++j) {
            const u64 v = (u64)(~r[j]) + c;
            r[j] = (u32)v;
            c = v >> 32;
        }
    }
    u32 m2[4];
    i64 q2;
    if (!round_p<NLIMB + 1, 53, -1074>(r, e, m2, &q2)) { *olo = 0.0; return; }
    *olo = limbs_to_double(m2, q2, neg != rneg);
}

// binary128 encodings [low, high]
__device__ __forceinline__ void round_store_q128(const u32* x, bool neg, i64 e, u64* o) {
    u32 mant[4];
    i64 qexp;
    if (!round_p<NLIMB, 113, -16494>(x, e, mant, &qexp)) { o[0] = 0; o[1] = 0; return; }
    const bool normal = (mant[3] >> 16) & 1u;
    const i64 be = normal ? qexp + 112 + 16383 : 0;
    u64 lo = (u64)mant[0] | ((u64)mant[1] << 32);
    u64 hi = (u64)mant[2] | ((u64)(mant[3] & 0xffffu) << 32) | ((u64)(be < 32767 ? be : 32767) << 48);
    if (be >= 32767) { lo = 0; hi = 0x7fffULL << 48; }
    if (neg && (lo | hi) != 0) hi |= 1ULL << 63;  // a zero result is +0 (rounding.py, numpy.matmul)
    o[0] = lo;
    o[1] = hi;
}

extern "C" __global__ void crt_round_dd(const int* __restrict__ c, i64 ldc, i64 sc,
                                        const i64* __restrict__ s, const i64* __restrict__ t,
                                        int m, int n, double* __restrict__ ohi,
                                        double* __restrict__ olo, i64 ldo) {
    const i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (i64)m * n) return;
    const int i = (int)(idx / n), j = (int)(idx - (i64)(idx / n) * n);
    u32 x[NLIMB];
    const bool neg = crt_limbs(c, sc, (i64)i * ldc + j, x);
    const i64 o = (i64)i * ldo + j;
    round_store_dd(x, neg, -(s[i] + t[j]), ohi + o, olo + o);
}

extern "C" __global__ void crt_round_q128(const int* __restrict__ c, i64 ldc, i64 sc,
                                          const i64* __restrict__ s, const i64* __restrict__ t,
                                          int m, int n, u64* __restrict__ out, i64 ldo) {
    const i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (i64)m * n) return;
    const int i = (int)(idx / n), j = (int)(idx - (i64)(idx / n) * n);
    u32 x[NLIMB];
    const bool neg = crt_limbs(c, sc, (i64)i * ldc + j, x);
    round_store_q128(x, neg, -(s[i] + t[j]), out + 2 * ((i64)i * ldo + j));
}

// sum of two symmetric residue slabs (N, rp, kp) int8, reduced to the symmetric range
extern "C" __global__ void add_residues(signed char* __restrict__ acc, const signed char* __restrict__ r,
                                        i64 slab, i64 total) {
    const i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    const int q = (int)(idx / slab);
    const int mq = MOD[q];
    int v = (int)acc[idx] + (int)r[idx];  // in [-256, 254]
    const int hi = (mq - 1) / 2, lo = -hi - ((mq & 1) ? 0 : 1);  // the symmetric range
    if (mq >= 86) {  // |v| <= 256: at most two steps of m reach the range (uniform per slab)
#pragma unroll
        for (int it = 0; it < 2; ++it) {
            if (v > hi) v -= mq;
            else if (v < lo) v += mq;
        }
    } else {  // the small moduli at the end of the table
        v %= mq;
        if (v > hi) v -= mq;
        else if (v < lo) v += mq;
    }
    acc[idx] = (signed char)v;
}

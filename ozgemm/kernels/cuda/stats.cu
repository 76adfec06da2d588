// ozgemm CUDA kernels for the planner: fused row statistics and the closed-form width.
// They mirror ozgemm/precision/stats.py (row_stats) and ozgemm/precision/planner.py
// (required_beta) operation for operation (exact integer/frexp arithmetic, IEEE
// round-to-nearest multiplies and adds written with __dmul_rn/__dadd_rn so that no FMA
// contraction changes a bit), so plans are identical on CPU and GPU.

// (i64, u64, widen_f32_bits and load_f64 come from common.cuh, prepended by kernels/cuda/backend.py)

#define NORM_BITS 30
#define LB_BITS 7

// frexp exponent ("top": |x| < 2^top, |x| >= 2^(top-1)) and lowest-set-bit exponent of x != 0
__device__ __forceinline__ void top_lsb(double x, int* top, int* lsb) {
    u64 bits = (u64)__double_as_longlong(x);
    int eb = (int)((bits >> 52) & 0x7ff);
    u64 frac = bits & ((1ULL << 52) - 1);
    if (eb == 0) {  // subnormal: value frac * 2^-1074
        int hb = 63 - __clzll(frac);          // highest set bit
        *top = hb + 1 - 1074;
        *lsb = __ffsll(frac) - 1 - 1074;
    } else {
        *top = eb - 1022;
        u64 mant = frac | (1ULL << 52);
        *lsb = __ffsll(mant) - 1 + eb - 1075;
    }
}

// Block-wide reductions (blockDim.x a multiple of 32, at most 1024): warp shuffles, then
// one value per warp through shared memory. Every thread gets the result.
template <typename T, typename OP>
__device__ __forceinline__ T block_reduce(T v, OP op, T* sh) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads();  // sh may still be read from a previous reduction
    if ((threadIdx.x & 31) == 0) sh[w] = v;
    __syncthreads();
    v = sh[0];
    for (int i = 1; i < nw; ++i) v = op(v, sh[i]);
    return v;
}

struct MaxOp { __device__ int operator()(int a, int b) const { return a > b ? a : b; } };
struct MinOp { __device__ int operator()(int a, int b) const { return a < b ? a : b; } };
struct AddOp { __device__ i64 operator()(i64 a, i64 b) const { return a + b; } };

// a 2^n for a >= 0 with a < 2^(c - n) (c <= 30) and -1017 <= n <= 1104, equal to
// scalbn(a, n) (= numpy's ldexp): one correctly rounded multiply by 2^n where 2^n is a normal
// double (n <= 1000); else (a < 2^-970) a 2^1000 is exact and normal, and the second
// multiply by 2^(n - 1000) <= 2^104 is exact (the result is below 2^30 and normal).
struct Pow2 {
    double f1, f2;
    __device__ explicit Pow2(int n) {
        f1 = __longlong_as_double((i64)(1023 + (n > 1000 ? 1000 : n)) << 52);
        f2 = __longlong_as_double((i64)(1023 + (n > 1000 ? n - 1000 : 0)) << 52);
    }
    __device__ double operator()(double a) const { return __dmul_rn(__dmul_rn(a, f1), f2); }
};

// extent of one entry: the row maximum of top and minimum of the lowest set bit (x != 0)
__device__ __forceinline__ void extent(double v, int& tmax, int& lmin) {
    if (v != 0.0) {
        int t, b;
        top_lsb(v, &t, &b);
        tmax = max(tmax, t);
        lmin = min(lmin, b);
    }
}

// quantisations of one |entry| a at the row exponent E (f30, f15, f7 = 2^(30-E), 2^(15-E),
// 2^(7-E)): ceil(a 2^(30-E)) (1-norm), ceil(a 2^(15-E)) (sum of squares), a 2^(7-E), floor of it
struct EntryQ {
    i64 n1, h;
    double y;
    int fq;
};
__device__ __forceinline__ EntryQ entry_quant(double a, const Pow2& f30, const Pow2& f15, const Pow2& f7) {
    EntryQ e;
    e.n1 = __double2ll_ru(f30(a));  // <= 2^30
    e.h = __double2ll_ru(f15(a));   // <= 2^15
    e.y = f7(a);
    e.fq = __double2int_rd(e.y);    // <= 127
    return e;
}

// One block per row of x (r x k, row stride ldx; blockDim.x a multiple of 32). Writes E,
// width, norm1, zero_row, the 7-bit quantisation q (r x kq int8, zero padding for l >= k) and
// its row sum qsum, bit for bit as ozgemm/precision/stats.py (ceil/floor of ldexp-scaled |x|,
// exact integer sums). T: double, or float (widened exactly; one component only).
// CACHE > 0: the first CACHE entries per thread of component 0 stay in registers between the
// two passes (one read of the row for k <= CACHE blockDim.x, 512 threads at most: ~88
// registers, one block per SM); CACHE == 0: both passes read the row, small blocks, many rows
// in flight per SM (long rows). Loops are unrolled so that several loads are in flight.
template <typename T, int CACHE>
__device__ __forceinline__ void row_stats_impl(const T* __restrict__ x, i64 ldx, int r, int k,
                                               i64* __restrict__ E_out, i64* __restrict__ width_out,
                                               double* __restrict__ norm_out, bool* __restrict__ zero_out,
                                               i64* __restrict__ n1_out, i64* __restrict__ n2_out,
                                               signed char* __restrict__ q, i64 ldq, int kq,
                                               int ncomp, i64 sc, i64* __restrict__ qsum_out,
                                               int* __restrict__ nonfinite) {
    // ncomp components per entry (x + c sc: dd hi/lo, binary128 pieces; see
    // precision/stats.py row_stats for the multi-component rules)
    __shared__ i64 s_red[32];
    const int i = blockIdx.x;
    if (i >= r) return;
    const T* row = x + (i64)i * ldx;
    const int bd = blockDim.x, tid = threadIdx.x;
    int tmax = -100000, lmin = 100000;
    constexpr int CN = CACHE > 0 ? CACHE : 1;
    double cache[CN];
    auto see = [&](double v) { extent(v, tmax, lmin); };
#pragma unroll
    for (int p = 0; p < CACHE; ++p) {  // independent loads first, then the reductions
        const int l = tid + p * bd;
        cache[p] = l < k ? load_f64(row + l) : 0.0;
    }
#pragma unroll
    for (int p = 0; p < CACHE; ++p) see(cache[p]);
    for (int c = 0; c < ncomp; ++c) {
        const T* rc = row + c * sc;
#pragma unroll 8
        for (int l = (c == 0 ? tid + CACHE * bd : tid); l < k; l += bd) see(load_f64(rc + l));
    }
    tmax = block_reduce(tmax, MaxOp(), (int*)s_red);
    lmin = block_reduce(lmin, MinOp(), (int*)s_red);
    // a NaN/Inf entry has top_lsb's top = 2047 - 1022 = 1025, every finite one <= 1024: the
    // row's maximum tells (for free) whether it holds one; nonfinite may be null
    if (tid == 0 && tmax > 1024 && nonfinite != nullptr) *nonfinite = 1;
    const bool zero = tmax == -100000;
    const int E = zero ? 0 : tmax;
    const Pow2 f30(NORM_BITS - E), f15(NORM_BITS / 2 - E), f7(LB_BITS - E);
    i64 acc = 0, acc2 = 0, qs64 = 0;
    auto entry = [&](int l, double x0) {
        signed char qq = 0;
        if (l < k) {
            const EntryQ eq = entry_quant(fabs(x0), f30, f15, f7);
            acc += eq.n1;
            i64 h = eq.h;
            const double y = eq.y;
            int fq = eq.fq, fr = 0;
            double rest = 0.0;                                       // first non-zero lower component
            for (int c = 1; c < ncomp; ++c) {
                const double xc = load_f64(row + c * sc + l);
                acc += __double2ll_ru(f30(fabs(xc)));
                h += __double2ll_ru(f15(fabs(xc)));
                fr += __double2int_rd(f7(fabs(xc)));  // binary128 pieces: disjoint bits (a dd lo adds 0)
                if (rest == 0.0) rest = xc;
            }
            acc2 += h * h;                                           // <= 9 2^30
            if ((double)fq == y && ((rest < 0.0 && x0 > 0.0) || (rest > 0.0 && x0 < 0.0))) fq -= 1;
            fq += fr;
            qq = (signed char)fq;
        }
        qs64 += qq;
        q[(i64)i * ldq + l] = qq;
    };
#pragma unroll
    for (int p = 0; p < CACHE; ++p) {
        const int l = tid + p * bd;
        if (l < kq) entry(l, cache[p]);
    }
#pragma unroll 8
    for (int l = tid + CACHE * bd; l < kq; l += bd) entry(l, l < k ? load_f64(row + l) : 0.0);
    acc = block_reduce(acc, AddOp(), s_red);
    acc2 = block_reduce(acc2, AddOp(), s_red);
    qs64 = block_reduce(qs64, AddOp(), s_red);
    if (tid == 0) {
        E_out[i] = E;
        width_out[i] = zero ? 0 : (i64)E - lmin;
        norm_out[i] = scalbn((double)acc, -NORM_BITS);
        zero_out[i] = zero;
        n1_out[i] = acc;
        n2_out[i] = acc2;
        qsum_out[i] = qs64;
    }
}

#define ROW_STATS_KERNEL(NAME, T, CACHE, MAXT)                                                      \
    extern "C" __global__ void __launch_bounds__(MAXT) NAME(                                        \
        const T* __restrict__ x, i64 ldx, int r, int k, i64* __restrict__ E_out,                    \
        i64* __restrict__ width_out, double* __restrict__ norm_out, bool* __restrict__ zero_out,    \
        i64* __restrict__ n1_out, i64* __restrict__ n2_out, signed char* __restrict__ q, i64 ldq,   \
        int kq, int ncomp, i64 sc, i64* __restrict__ qsum_out, int* __restrict__ nonfinite) {     \
        row_stats_impl<T, CACHE>(x, ldx, r, k, E_out, width_out, norm_out, zero_out, n1_out,        \
                                 n2_out, q, ldq, kq, ncomp, sc, qsum_out, nonfinite);               \
    }
ROW_STATS_KERNEL(row_stats, double, 16, 512)
ROW_STATS_KERNEL(row_stats_long, double, 0, 256)
ROW_STATS_KERNEL(row_stats_f32_long, float, 0, 256)

// The same statistics for one-component rows in three streaming kernels without block-wide
// barriers (many blocks per row, high occupancy): row_extent (pass 1: E and the lowest set
// bit), row_sums (pass 2: q and the integer sums), row_finish (per row). Per-row accumulators
// acc (5 x r int64, zero-initialised): [n1 | n2 | qsum | tmax + 2048 | 2048 - lmin], the
// last two encoded >= 1 so that atomicMax on zeros finds them (0: no non-zero entry). Sums
// are exact integers, so the atomics' order changes nothing: bit for bit the same results.
// Grid (r, ceil(kq / rs_chunk<T>()) <= 65535; the engine launches with kq = k), RS_THREADS
// threads: RS_CHUNK entries per block for float64, twice as many for float32 (below).
#define RS_THREADS 256
#define RS_PER 8  // loads (runs) per thread: RS_PER * RowWord<T>::V entries
#define RS_CHUNK (RS_THREADS * RS_PER)

__device__ __forceinline__ void warp_atomic_max(u64* p, i64 v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = max(v, (i64)__shfl_xor_sync(0xffffffffu, v, o));
    if ((threadIdx.x & 31) == 0 && v > 0) atomicMax((unsigned long long*)p, (unsigned long long)v);
}
__device__ __forceinline__ void warp_atomic_add(u64* p, i64 v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += (i64)__shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0 && v != 0) atomicAdd((unsigned long long*)p, (unsigned long long)v);
}

// Each thread holds RS_PER runs of V = RowWord<T>::V consecutive entries of its row chunk (raw
// words: float64 bits, or float32 bits widened exactly where used): run p starts at column
// l0 + p * RS_THREADS * V with l0 = chunk start + threadIdx.x * V, so that every load of a warp
// reads 32 consecutive runs. float32 rows are read as 8-byte pairs (V = 2), where the row is
// 8-byte aligned and both entries lie in it, so that a thread keeps as many bytes in flight as
// for float64 (the float32 statistics are bound by their per-entry work, not by memory; the
// pairs measured 8 % faster, with common.cuh's integer widening 14 %). Entries at columns >= k
// read as 0.
template <typename T> struct RowWord;
template <> struct RowWord<double> {
    typedef u64 W;
    static constexpr int V = 1;
    static __device__ __forceinline__ double widen(W w) { return __longlong_as_double((i64)w); }
};
template <> struct RowWord<float> {
    typedef unsigned int W;
    static constexpr int V = 2;
    static __device__ __forceinline__ double widen(W w) { return widen_f32_bits(w); }
};
template <typename T> __host__ __device__ constexpr int rs_chunk() { return RS_CHUNK * RowWord<T>::V; }

template <typename T>
__device__ __forceinline__ void load_row_chunk(const T* row, int l0, int k,
                                               typename RowWord<T>::W (&w)[RS_PER * RowWord<T>::V]) {
    typedef typename RowWord<T>::W W;
    constexpr int V = RowWord<T>::V;
    const W* rw = reinterpret_cast<const W*>(row);
    if (V == 2) {
        const bool aligned = (reinterpret_cast<size_t>(row) & 7) == 0;
#pragma unroll
        for (int p = 0; p < RS_PER; ++p) {
            const int l = l0 + p * RS_THREADS * V;
            if (aligned && l + 1 < k) {
                const uint2 pr = *reinterpret_cast<const uint2*>(rw + l);
                w[V * p] = (W)pr.x;
                w[V * p + V - 1] = (W)pr.y;
            } else {
                w[V * p] = l < k ? rw[l] : (W)0;
                w[V * p + V - 1] = l + 1 < k ? rw[l + 1] : (W)0;
            }
        }
    } else {
#pragma unroll
        for (int p = 0; p < RS_PER; ++p) {
            const int l = l0 + p * RS_THREADS;
            w[p] = l < k ? rw[l] : (W)0;
        }
    }
}

// float32 entries in 32-bit integer arithmetic (the same values as the float64 path of the
// widened entry, bit for bit): a finite float32 |x| = m 2^e with m < 2^24 (m = f + 2^23, e =
// ef - 150 for a normal; m = f, e = -149 for a subnormal), so that top = bits(m) + e, the lowest
// set bit ffs(m) - 1 + e, and x 2^(c - E) = m 2^(e + c - E) is a shift of m: ceil/floor of it
// are integer shifts with a rounding addend (|x| < 2^E bounds every result by 2^c). Shifts are
// clamped to 31: for m < 2^24 a right shift by d >= 25 gives floor 0 and ceil (m != 0), as by 31.
// Inf/NaN (ef = 255): top 1025 and the widened value's lowest set bit, as top_lsb gives them;
// a row holding one is quantised by the float64 path (the row's flag discards it anyway).
__device__ __forceinline__ void extent_f32(unsigned int u, int& tmax, int& lmin) {
    const unsigned int ef = (u >> 23) & 0xffu, f = u & 0x7fffffu;
    if (ef == 0xffu) {
        tmax = max(tmax, 1025);
        lmin = min(lmin, (f ? __ffs(f) + 28 : 52) + 972);
    } else {
        const unsigned int m = ef ? (f | 0x800000u) : f;
        if (m) {
            const int e = (int)max(ef, 1u) - 150;
            tmax = max(tmax, 32 - __clz(m) + e);
            lmin = min(lmin, __ffs(m) - 1 + e);
        }
    }
}
__device__ __forceinline__ unsigned int shift_ceil(unsigned int m, int sh) {
    if (sh >= 0) return m << min(sh, 31);
    const int d = min(-sh, 31);
    return (m + ((1u << d) - 1u)) >> d;
}
__device__ __forceinline__ unsigned int shift_floor(unsigned int m, int sh) {
    return sh >= 0 ? m << min(sh, 31) : m >> min(-sh, 31);
}
struct F32Quant {
    unsigned int n1, h, fq;
};
// ceil(|x| 2^(30 - E)), ceil(|x| 2^(15 - E)), floor(|x| 2^(7 - E)) of a finite float32 word u
// with |x| < 2^E (entry_quant's n1, h and fq)
__device__ __forceinline__ F32Quant quant_f32(unsigned int u, int E) {
    const unsigned int ef = (u >> 23) & 0xffu, f = u & 0x7fffffu;
    const unsigned int m = ef ? (f | 0x800000u) : f;
    const int s = (int)max(ef, 1u) - 150 - E;
    F32Quant r;
    r.n1 = shift_ceil(m, s + NORM_BITS);
    r.h = shift_ceil(m, s + NORM_BITS / 2);
    r.fq = shift_floor(m, s + LB_BITS);
    return r;
}

template <typename T>
__device__ __forceinline__ void row_extent_impl(const T* __restrict__ x, i64 ldx, int r, int k,
                                                u64* __restrict__ acc) {
    typedef RowWord<T> RW;
    const int i = blockIdx.x;
    const T* row = x + (i64)i * ldx;
    const int l0 = blockIdx.y * rs_chunk<T>() + threadIdx.x * RW::V;
    typename RW::W w[RS_PER * RW::V];
    load_row_chunk(row, l0, k, w);
    int tmax = -100000, lmin = 100000;
#pragma unroll
    for (int p = 0; p < RS_PER * RW::V; ++p) {
        if constexpr (RW::V == 2) extent_f32(w[p], tmax, lmin);
        else extent(RW::widen(w[p]), tmax, lmin);
    }
    warp_atomic_max(acc + 3 * (i64)r + i, tmax > -100000 ? (i64)tmax + 2048 : 0);
    warp_atomic_max(acc + 4 * (i64)r + i, lmin < 100000 ? 2048 - (i64)lmin : 0);
}

template <typename T>
__device__ __forceinline__ void row_sums_impl(const T* __restrict__ x, i64 ldx, int r, int k,
                                              signed char* __restrict__ q, i64 ldq, int kq,
                                              u64* __restrict__ acc) {
    typedef RowWord<T> RW;
    const int i = blockIdx.x;
    const T* row = x + (i64)i * ldx;
    const int l0 = blockIdx.y * rs_chunk<T>() + threadIdx.x * RW::V;
    const i64 tenc = (i64)acc[3 * (i64)r + i];
    const int E = tenc == 0 ? 0 : (int)(tenc - 2048);
    typename RW::W w[RS_PER * RW::V];
    i64 s1 = 0, s2 = 0, sq = 0;
    if (RW::V == 2 && E <= 128) {
        // a float32 row of finite entries (E <= 128): the quantisations in integer arithmetic
        // (quant_f32), two entries at a time: each n1 and h^2 is at most 2^30, so a pair's sum
        // fits 32 bits; its two q bytes are one 2-byte store where aligned. Entries l >=
        // min(k, kq) read as 0 and add nothing.
        load_row_chunk(row, l0, min(k, kq), w);
#pragma unroll
        for (int p = 0; p < RS_PER; ++p) {
            const F32Quant u = quant_f32((unsigned int)w[RW::V * p], E);
            const F32Quant v = quant_f32((unsigned int)w[RW::V * p + RW::V - 1], E);
            s1 += u.n1 + v.n1;
            s2 += u.h * u.h + v.h * v.h;
            sq += u.fq + v.fq;
            const int lp = l0 + p * RS_THREADS * RW::V;
            signed char* dst = q + (i64)i * ldq + lp;
            if (lp + 1 < kq && (reinterpret_cast<size_t>(dst) & 1) == 0) {
                *reinterpret_cast<unsigned short*>(dst) = (unsigned short)(u.fq | (v.fq << 8));
            } else {
                if (lp < kq) dst[0] = (signed char)u.fq;
                if (lp + 1 < kq) dst[1] = (signed char)v.fq;
            }
        }
    } else {
        // float64 rows, and float32 rows holding Inf/NaN (E = 1025; the flag discards them)
        const Pow2 f30(NORM_BITS - E), f15(NORM_BITS / 2 - E), f7(LB_BITS - E);
        load_row_chunk(row, l0, k, w);
#pragma unroll
        for (int p = 0; p < RS_PER; ++p) {
#pragma unroll
            for (int e = 0; e < RW::V; ++e) {
                const int l = l0 + p * RS_THREADS * RW::V + e;
                if (l < kq) {
                    signed char qq = 0;
                    if (l < k) {
                        const EntryQ eq = entry_quant(fabs(RW::widen(w[RW::V * p + e])), f30, f15, f7);
                        s1 += eq.n1;
                        s2 += eq.h * eq.h;
                        qq = (signed char)eq.fq;
                    }
                    sq += qq;
                    q[(i64)i * ldq + l] = qq;
                }
            }
        }
    }
    warp_atomic_add(acc + i, s1);
    warp_atomic_add(acc + (i64)r + i, s2);
    warp_atomic_add(acc + 2 * (i64)r + i, sq);
}

#define ROW_SPLIT_KERNELS(SUFFIX, T)                                                                  \
    extern "C" __global__ void __launch_bounds__(RS_THREADS) row_extent##SUFFIX(                       \
        const T* __restrict__ x, i64 ldx, int r, int k, u64* __restrict__ acc) {                      \
        row_extent_impl<T>(x, ldx, r, k, acc);                                                        \
    }                                                                                                 \
    extern "C" __global__ void __launch_bounds__(RS_THREADS) row_sums##SUFFIX(                         \
        const T* __restrict__ x, i64 ldx, int r, int k, signed char* __restrict__ q, i64 ldq, int kq, \
        u64* __restrict__ acc) {                                                                      \
        row_sums_impl<T>(x, ldx, r, k, q, ldq, kq, acc);                                              \
    }
ROW_SPLIT_KERNELS(, double)
ROW_SPLIT_KERNELS(_f32, float)

// The same two passes for the rows of x^T, read from x's columns (no transposed copy): x is
// k x r row-major float64 (row stride ldx), statistics row i is column i of x, q is r x kq (row
// stride ldq) as above, acc as above (then row_finish). Block (32, CS_Y): threadIdx.x picks
// the column (each load is 32 consecutive elements of a row of x), threadIdx.y a run of
// CS_PER consecutive entries (its q bytes are one 16-byte store where aligned); the block's
// values are reduced through shared memory, one atomic per column and quantity.
// Grid (ceil(r / 32), ceil(kq / CS_CHUNK) <= 65535).
#define CS_Y 8
#define CS_PER 16
#define CS_CHUNK (CS_Y * CS_PER)

template <typename T>
__device__ __forceinline__ void load_col_run(const T* x, i64 ldx, int i, int r, int l0, int k,
                                             double (&v)[CS_PER]) {
#pragma unroll
    for (int p = 0; p < CS_PER; ++p) v[p] = (i < r && l0 + p < k) ? load_f64(x + (i64)(l0 + p) * ldx + i) : 0.0;
}

template <typename T>
__device__ __forceinline__ void col_extent_impl(const T* __restrict__ x, i64 ldx, int r, int k,
                                                u64* __restrict__ acc) {
    __shared__ int sh[2][CS_Y][33];
    const int tx = threadIdx.x, ty = threadIdx.y, i = blockIdx.x * 32 + tx;
    double v[CS_PER];
    load_col_run(x, ldx, i, r, blockIdx.y * CS_CHUNK + ty * CS_PER, k, v);
    int tmax = -100000, lmin = 100000;
#pragma unroll
    for (int p = 0; p < CS_PER; ++p) extent(v[p], tmax, lmin);
    sh[0][ty][tx] = tmax;
    sh[1][ty][tx] = lmin;
    __syncthreads();
    if (ty == 0 && i < r) {
        for (int y = 1; y < CS_Y; ++y) {
            tmax = max(tmax, sh[0][y][tx]);
            lmin = min(lmin, sh[1][y][tx]);
        }
        if (tmax > -100000) atomicMax((unsigned long long*)(acc + 3 * (i64)r + i), (unsigned long long)(tmax + 2048));
        if (lmin < 100000) atomicMax((unsigned long long*)(acc + 4 * (i64)r + i), (unsigned long long)(2048 - lmin));
    }
}

template <typename T>
__device__ __forceinline__ void col_sums_impl(const T* __restrict__ x, i64 ldx, int r, int k,
                                              signed char* __restrict__ q, i64 ldq, int kq, int vec,
                                              u64* __restrict__ acc) {
    __shared__ i64 sh[3][CS_Y][33];
    const int tx = threadIdx.x, ty = threadIdx.y, i = blockIdx.x * 32 + tx;
    const int l0 = blockIdx.y * CS_CHUNK + ty * CS_PER;
    const i64 tenc = i < r ? (i64)acc[3 * (i64)r + i] : 0;
    const int E = tenc == 0 ? 0 : (int)(tenc - 2048);
    const Pow2 f30(NORM_BITS - E), f15(NORM_BITS / 2 - E), f7(LB_BITS - E);
    double v[CS_PER];
    load_col_run(x, ldx, i, r, l0, k, v);
    i64 s1 = 0, s2 = 0, sq = 0;
    unsigned int w[CS_PER / 4];
#pragma unroll
    for (int p = 0; p < CS_PER; ++p) {
        signed char qq = 0;
        if (l0 + p < k) {  // (v = 0 for a column i >= r: all sums 0)
            const EntryQ eq = entry_quant(fabs(v[p]), f30, f15, f7);
            s1 += eq.n1;
            s2 += eq.h * eq.h;
            qq = (signed char)eq.fq;  // as row_sums (0..127 for finite rows; a byte of garbage
        }                             // beside an Inf, where the flag discards the statistics)
        sq += qq;
        const unsigned int b8 = (unsigned char)qq;
        if (p % 4 == 0) w[p / 4] = b8; else w[p / 4] |= b8 << (8 * (p % 4));
    }
    if (i < r && l0 < kq) {
        signed char* dst = q + (i64)i * ldq + l0;
        if (vec && l0 + CS_PER <= kq) {
            *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
        } else {
#pragma unroll
            for (int p = 0; p < CS_PER; ++p)
                if (l0 + p < kq) dst[p] = (signed char)((w[p / 4] >> (8 * (p % 4))) & 255u);
        }
    }
    sh[0][ty][tx] = s1;
    sh[1][ty][tx] = s2;
    sh[2][ty][tx] = sq;
    __syncthreads();
    if (ty == 0 && i < r) {
        for (int y = 1; y < CS_Y; ++y) {
            s1 += sh[0][y][tx];
            s2 += sh[1][y][tx];
            sq += sh[2][y][tx];
        }
        if (s1) atomicAdd((unsigned long long*)(acc + i), (unsigned long long)s1);
        if (s2) atomicAdd((unsigned long long*)(acc + (i64)r + i), (unsigned long long)s2);
        if (sq) atomicAdd((unsigned long long*)(acc + 2 * (i64)r + i), (unsigned long long)sq);
    }
}

// float64 only (for float32 the column kernels measured slower on the H200 than a transposed
// copy, statistics at 8192 0.595 -> 0.681 ms; docs/design.md, "Operand B")
extern "C" __global__ void __launch_bounds__(32 * CS_Y) col_extent(const double* __restrict__ x, i64 ldx, int r, int k,
                                                                 u64* __restrict__ acc) {
    col_extent_impl<double>(x, ldx, r, k, acc);
}
extern "C" __global__ void __launch_bounds__(32 * CS_Y) col_sums(const double* __restrict__ x, i64 ldx, int r, int k,
                                                               signed char* __restrict__ q, i64 ldq, int kq, int vec,
                                                               u64* __restrict__ acc) {
    col_sums_impl<double>(x, ldx, r, k, q, ldq, kq, vec, acc);
}

// per row: E, width, norm1, zero_row, n1, n2, qsum from the accumulators; the NaN/Inf flag
// (top = 1025, see row_stats_impl). One thread per row.
extern "C" __global__ void row_finish(const u64* __restrict__ acc, int r, i64* __restrict__ E_out,
                                      i64* __restrict__ width_out, double* __restrict__ norm_out,
                                      bool* __restrict__ zero_out, i64* __restrict__ n1_out,
                                      i64* __restrict__ n2_out, i64* __restrict__ qsum_out,
                                      int* __restrict__ nonfinite) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= r) return;
    const i64 tenc = (i64)acc[3 * (i64)r + i], lenc = (i64)acc[4 * (i64)r + i];
    const bool zero = tenc == 0;
    const i64 E = zero ? 0 : tenc - 2048;
    if (E > 1024 && nonfinite != nullptr) *nonfinite = 1;
    E_out[i] = E;
    width_out[i] = zero ? 0 : E - (2048 - lenc);
    norm_out[i] = scalbn((double)(i64)acc[i], -NORM_BITS);
    zero_out[i] = zero;
    n1_out[i] = (i64)acc[i];
    n2_out[i] = (i64)acc[(i64)r + i];
    qsum_out[i] = (i64)acc[2 * (i64)r + i];
}

// out (r x c, row-major) = transpose of x (c x r, row-major, row stride ldx) for 4- or 8-byte
// elements (bit copies): 32 x 32 tiles through shared memory, blockDim (32, 8).
template <typename U>
__device__ __forceinline__ void transpose_impl(const U* __restrict__ x, i64 ldx, int c, int r, U* __restrict__ out) {
    __shared__ U tile[32][33];
    const int i0 = blockIdx.x * 32, l0 = blockIdx.y * 32;  // i: rows of out, l: columns of out
    for (int dy = threadIdx.y; dy < 32; dy += 8) {
        const int l = l0 + dy, i = i0 + threadIdx.x;
        if (l < c && i < r) tile[dy][threadIdx.x] = x[(i64)l * ldx + i];
    }
    __syncthreads();
    for (int dy = threadIdx.y; dy < 32; dy += 8) {
        const int i = i0 + dy, l = l0 + threadIdx.x;
        if (i < r && l < c) out[(i64)i * c + l] = tile[threadIdx.x][dy];
    }
}
extern "C" __global__ void transpose_f64(const u64* __restrict__ x, i64 ldx, int c, int r, u64* __restrict__ out) {
    transpose_impl<u64>(x, ldx, c, r, out);
}
extern "C" __global__ void transpose_f32(const u32* __restrict__ x, i64 ldx, int c, int r, u32* __restrict__ out) {
    transpose_impl<u32>(x, ldx, c, r, out);
}

// The operands of a complex product's bound GEMM (planner.complex_bound_operands) from 7-bit
// magnitudes q with the parts interleaved (r rows of stride ldq; term l's real part at entry
// 2 l, its imaginary part at 2 l + 1) into the padded INT8 GEMM operand out (rp x kp,
// row-major; zero beyond what a mode writes). mode 0: row i = [max | min] of row i's two
// parts (2k entries); 1: [min | max]; 2: rows i < r the real parts of row i, rows r + i its
// imaginary parts (k entries); 3: row i the real parts; 4: row i = [re | im] (2k entries);
// 5: rows i < r as mode 4, rows r + i = [im | re] of row i. Four output bytes per thread (kp is
// a multiple of 4), one pass.
extern "C" __global__ void complex_bound_q(const unsigned char* __restrict__ q, i64 ldq, int r, int k, int rp,
                                           int kp, int mode, unsigned int* __restrict__ out) {
    const i64 words = (i64)rp * (kp / 4);
    const int rows = (mode == 2 || mode == 5) ? 2 * r : r, cols = (mode == 2 || mode == 3) ? k : 2 * k;
    for (i64 w = (i64)blockIdx.x * blockDim.x + threadIdx.x; w < words; w += (i64)gridDim.x * blockDim.x) {
        const int i = (int)(w / (kp / 4)), c0 = (int)(w % (kp / 4)) * 4;
        unsigned int word = 0;
        if (i < rows && c0 < cols) {
            const int src = i < r ? i : i - r;
            const unsigned char* row = q + (i64)src * ldq;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int c = c0 + e;
                unsigned int v = 0;
                if (c < cols) {
                    if (mode < 2) {
                        const int l = c < k ? c : c - k;
                        const unsigned int x = row[2 * l], y = row[2 * l + 1];
                        v = ((c < k) == (mode == 0)) ? max(x, y) : min(x, y);
                    } else if (mode < 4) {
                        v = row[2 * c + (i < r ? 0 : 1)];
                    } else {  // [re | im], or [im | re] in mode 5's second half
                        const int l = c < k ? c : c - k;
                        v = row[2 * l + ((c < k) == (i < r) ? 0 : 1)];
                    }
                }
                word |= v << (8 * e);
            }
        }
        out[w] = word;
    }
}

// Non-finite entries of a row-major (r x c, row stride ld) float32/float64 array: flag[i] = 1
// (rows, cols == 0) or flag[j] = 1 (cols != 0) for every non-finite entry, and *any = 1.
// 2-D launch: x over columns, y over rows (grid-stride).
template <typename T, typename U, int EBITS, int MBITS>
__device__ __forceinline__ void nonfinite_flags(const U* __restrict__ x, i64 ld, int r, int c, int cols,
                                                bool* __restrict__ flag, int* __restrict__ any) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= c) return;
    const U emask = (U)((1u << EBITS) - 1);
    for (int i = blockIdx.y * blockDim.y + threadIdx.y; i < r; i += gridDim.y * blockDim.y) {
        if (((x[(i64)i * ld + j] >> MBITS) & emask) == emask) {
            flag[cols ? j : i] = true;
            *any = 1;
        }
    }
}

extern "C" __global__ void nonfinite_f64(const u64* __restrict__ x, i64 ld, int r, int c, int cols,
                                         bool* __restrict__ flag, int* __restrict__ any) {
    nonfinite_flags<double, u64, 11, 52>(x, ld, r, c, cols, flag, any);
}

extern "C" __global__ void nonfinite_f32(const unsigned int* __restrict__ x, i64 ld, int r, int c, int cols,
                                         bool* __restrict__ flag, int* __restrict__ any) {
    nonfinite_flags<float, unsigned int, 8, 23>(x, ld, r, c, cols, flag, any);
}

// A positive finite double as x = s 2^(e-53) with the integer s in [2^52, 2^53): frexp's
// fraction is s / 2^53 and its exponent e, so comparing fractions is comparing s (integers).
struct Sig {
    u64 s;
    int e;
};
__device__ __forceinline__ Sig sig_pos(double x) {
    const u64 b = (u64)__double_as_longlong(x);
    const int eb = (int)(b >> 52);
    const u64 frac = b & ((1ULL << 52) - 1);
    if (eb != 0) return {frac | (1ULL << 52), eb - 1022};
    const int bl = 64 - __clzll(frac);  // subnormal: normalise
    return {frac << (53 - bl), bl - 1074};
}

// need(z) of planner.required_beta (smallest beta with 2^(-beta-1) z fac <= R) from zz = z fac
// (zpos: zz > 0, z its Sig) and R (pos: R > 0, sR its significand, er its frexp exponent):
//   zz == 0: -2^40; R == 0 < zz: 2^40; else ceil(log2(zz / R)) - 1 = ez - er + (fz > fr) - 1.
__device__ __forceinline__ i64 need_s(bool zpos, Sig z, bool pos, u64 sR, int er) {
    const i64 big = 1LL << 40;
    if (!zpos) return -big;
    if (!pos) return big;
    return (i64)(z.e - er + (z.s > sR ? 1 : 0) - 1);
}

// The block's six maxima into out[0..5] (atomicMax; a value <= 0 is not written).
__device__ __forceinline__ void plan_scalars_reduce(i64 best, i64 m1a, i64 m1b, i64 m2a, i64 m2b, i64 ub,
                                                    unsigned long long* __restrict__ out) {
    __shared__ i64 s_red[6][32];
    i64 vals[6] = {best, m1a, m1b, m2a, m2b, ub};
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
#pragma unroll
    for (int q = 0; q < 6; ++q) {
        i64 x = vals[q];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) x = max(x, (i64)__shfl_xor_sync(0xffffffffu, x, o));
        if ((tid & 31) == 0) s_red[q][tid >> 5] = x;
    }
    __syncthreads();
    if (tid < 6) {
        i64 x = s_red[tid][0];
        for (int w = 1; w < (int)(blockDim.x * blockDim.y) >> 5; ++w) x = max(x, s_red[tid][w]);
        if (x > 0) atomicMax(out + tid, (unsigned long long)x);
    }
}

// The planner's six device scalars (planner.plan_scalars) in one pass over the bound GEMM's
// int64 products lb (long k: int32 k-blocks summed; row stride ldlb; one int32 k-block goes to
// plan_scalars_i32 below), out (u64[6], initialised to
// zeros: every block's thread 0 raises out[0] to its best >= 1, so out[0] >= 1) by atomicMax:
//   out[0] = max(1, max_ij beta_ij)   the minimal width, per entry as planner.required_beta
//            (R_ij = lb_ij 2^(-(bits-1)-14) is normal for bits <= 1000, so its frexp comes from
//            the integer: er = e - (bits-1) - 14 with e the bit length of lb, and the fraction
//            comparisons are integer comparisons of 53-bit significands, see Sig)
//   out[1..4] = max n1a, max n1b, max n2a, max n2b   (threads of column 0 visit every row,
//            threads of the first row every column)
//   out[5] = max_ij (lb_ij + ra_i + cb_j)   (planner._lb_upper_max)
// 2-D launch: x over columns, y over rows (grid-stride).
__device__ __forceinline__ void plan_scalars_impl(const i64* __restrict__ lb, i64 ldlb, int m, int n,
                                                  const i64* __restrict__ wa, const i64* __restrict__ vb,
                                                  const double* __restrict__ na, const double* __restrict__ nb,
                                                  int bits, double K, double fac,
                                                  const i64* __restrict__ ra, const i64* __restrict__ cb,
                                                  const i64* __restrict__ n1a, const i64* __restrict__ n1b,
                                                  const i64* __restrict__ n2a, const i64* __restrict__ n2b,
                                                  unsigned long long* __restrict__ out) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    const int i_first = blockIdx.y * blockDim.y + threadIdx.y;
    i64 best = 1, ub = 0, m1a = 0, m1b = 0, m2a = 0, m2b = 0;
    if (j < n) {
        const i64 v = vb[j];
        const double b = nb[j];
        const i64 cbj = cb[j];
        if (i_first == 0) {
            m1b = n1b[j];
            m2b = n2b[j];
        }
        const double zzb = __dmul_rn(b, fac);
        const Sig sb = sig_pos(zzb > 0 ? zzb : 1.0);
        const int eoff = (bits - 1) + 2 * LB_BITS;
#pragma unroll 1  // (unrolling 4 rows measured slower on the H200)
        for (int i = i_first; i < m; i += gridDim.y * blockDim.y) {
            // R = L 2^(-eoff), L < 2^53 an integer: frexp exponent bitlen(L) - eoff, significand
            // L shifted to 53 bits (R is a normal double for bits <= 1000)
            const i64 L = (i64)lb[(i64)i * ldlb + j];
            const bool pos = L > 0;
            const int eL = 64 - __clzll((u64)L);
            const u64 sR = pos ? (u64)L << (53 - eL) : 0;
            const int er = eL - eoff;
            const i64 w = wa[i];
            const double a = na[i];
            const double zza = __dmul_rn(a, fac);
            const Sig sa = sig_pos(zza > 0 ? zza : 1.0);
            const Sig sd = sig_pos(__dmul_rn(__dadd_rn(__dadd_rn(b, a), K), fac));  // > 0 (K > 0)
            const i64 t_d = need_s(true, sd, pos, sR, er);
            const i64 lo = min(w, v);
            const i64 t_b = min(max(w, need_s(zza > 0, sa, pos, sR, er)), v);
            const i64 t_c = min(max(v, need_s(zzb > 0, sb, pos, sR, er)), w);
            const i64 after = w < v ? t_b : (v < w ? t_c : w);
            const i64 bij = t_d < lo ? t_d : after;
            best = max(best, bij);
            ub = max(ub, L + ra[i] + cbj);
            if (j == 0) {
                m1a = max(m1a, n1a[i]);
                m2a = max(m2a, n2a[i]);
            }
        }
    }
    plan_scalars_reduce(best, m1a, m1b, m2a, m2b, ub, out);
}

#define PLAN_SCALARS_ARGS(LB_T)                                                                     \
    const LB_T* __restrict__ lb, i64 ldlb, int m, int n, const i64* __restrict__ wa,               \
        const i64* __restrict__ vb, const double* __restrict__ na, const double* __restrict__ nb,   \
        int bits, double K, double fac, const i64* __restrict__ ra, const i64* __restrict__ cb,    \
        const i64* __restrict__ n1a, const i64* __restrict__ n1b, const i64* __restrict__ n2a,     \
        const i64* __restrict__ n2b, unsigned long long* __restrict__ out, i64 lbb, i64 abs_, i64 bbs, \
        i64 outs

// A stack of products (grid z): product z reads lb + z lbb, its A-side arrays (wa, na, ra, n1a,
// n2a) at z abs_, its B-side arrays at z bbs (a stride 0: a broadcast operand's statistics) and
// writes out + z outs.
#define PLAN_SCALARS_BATCH                                                                          \
    {                                                                                               \
        const i64 z = blockIdx.z;                                                                   \
        lb += z * lbb;                                                                              \
        wa += z * abs_; na += z * abs_; ra += z * abs_; n1a += z * abs_; n2a += z * abs_;           \
        vb += z * bbs; nb += z * bbs; cb += z * bbs; n1b += z * bbs; n2b += z * bbs;                \
        out += z * outs;                                                                            \
    }

extern "C" __global__ void plan_scalars(PLAN_SCALARS_ARGS(i64)) {
    PLAN_SCALARS_BATCH
    plan_scalars_impl(lb, ldlb, m, n, wa, vb, na, nb, bits, K, fac, ra, cb, n1a, n1b, n2a, n2b, out);
}

// int32 products (one k-block, k <= 131071): plan_scalars_impl's integers, four adjacent
// columns per thread (one 16-byte load of lb where aligned), the row terms computed once per
// row and the column terms once per thread; each need from bit patterns; the regime
// comparisons only for entries with t_d >= min(w_i, v_j), every other entry's width is t_d
// itself (see the loop). On the H200 these measured 2.0-2.2x faster, -22 % and -21 %
// (docs/design.md, "Planning on the GPU"). What they rely on:
//  * need_s(z) = ceil(log2(z / R)) - 1 with R = L 2^-eoff is floor((bits(z) - bits(R) - 1) / 2^52)
//    for positive normal z and R (need_bits; R is normal for bits <= 1000, which the host
//    checks, and bits(R) = bits(double(L)) - eoff 2^52 since double(L) is exact);
//  * the per-entry double ((b + a) + K) fac is >= K, normal for bits <= 1000; a row's or
//    column's z (a fac or b fac) may in principle be subnormal: zbits gives bits(z 2^64) - 64 2^52
//    then, and need_bits is unchanged by scaling z and R by 2^64 (the difference is the same);
//  * the widths are < 2^29 and every finite need value is < 2^12 in magnitude, so the
//    sentinels +-2^40 become +-2^30 with the same comparisons (and the same maximum);
//  * L + ra_i < 127^2 k + 127 k < 2^32: the upper-bound maximum is kept per column in u32
//    over the rows, cb_j added in 64 bits at the end (max_i (L + ra_i) + cb_j is the maximum
//    over i of L + ra_i + cb_j).
// Launch: x over column quads (j0 = 4 (blockIdx.x blockDim.x + threadIdx.x)), y over rows
// (grid-stride); vec != 0: lb 16-byte aligned and ldlb a multiple of 4.

// need_s from bit patterns: for positive normal doubles z and R,
//   ceil(log2(z / R)) - 1 = floor((bits(z) - bits(R) - 1) / 2^52)
// (bits(z) - bits(R) = (e_z - e_R) 2^52 + (s_z - s_R) with |s_z - s_R| < 2^52, and the -1 sends
// equal significands down, as the planner's (fz > fr)). zb: bits(z) (or zbits); rb: bits(R).
__device__ __forceinline__ int need_bits(bool zpos, u64 zb, bool pos, u64 rb) {
    return !zpos ? -(1 << 30) : (!pos ? (1 << 30) : (int)((i64)(zb - rb - 1ULL) >> 52));
}

// bits(z) for a normal z > 0; for a subnormal z, bits(z 2^64) - 64 2^52 (see above)
__device__ __forceinline__ u64 zbits(double z) {
    return z >= 2.2250738585072014e-308 ? (u64)__double_as_longlong(z)
                                         : (u64)__double_as_longlong(z * 18446744073709551616.0) - (64ULL << 52);
}

// bits(R) for R = L 2^-eoff: double(L) exactly (2^52 + L for 0 <= L < 2^31, less 2^52), less eoff 2^52
__device__ __forceinline__ u64 rbits(int L, u64 eoff52) {
    return (u64)__double_as_longlong(__hiloint2double(0x43300000, L) - 4503599627370496.0) - eoff52;
}

extern "C" __global__ void plan_scalars_i32(PLAN_SCALARS_ARGS(int), int vec) {
    PLAN_SCALARS_BATCH
    const int j0 = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    const int i_first = blockIdx.y * blockDim.y + threadIdx.y;
    i64 best = 1, ub = 0, m1a = 0, m1b = 0, m2a = 0, m2b = 0;
    if (j0 < n && i_first < m) {
        const u64 eoff52 = (u64)((bits - 1) + 2 * LB_BITS) << 52;
        const int nv = min(4, n - j0);
        int v[4];
        u64 zbb[4];
        u32 ubm[4];
        bool zposb[4];
        double b[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int j = e < nv ? j0 + e : j0;  // a valid column (results masked below)
            v[e] = (int)min(vb[j], (i64)(1 << 29));
            b[e] = nb[j];
            const double zzb = __dmul_rn(b[e], fac);
            zposb[e] = zzb > 0;
            zbb[e] = zbits(zposb[e] ? zzb : 1.0);
            ubm[e] = 0u;
            if (i_first == 0 && e < nv) {
                m1b = max(m1b, n1b[j]);
                m2b = max(m2b, n2b[j]);
            }
        }
        int bst = 1;
        for (int i = i_first; i < m; i += gridDim.y * blockDim.y) {
            const int* row = lb + (i64)i * ldlb + j0;
            int L4[4];
            if (vec && nv == 4) {
                const int4 t = *reinterpret_cast<const int4*>(row);
                L4[0] = t.x; L4[1] = t.y; L4[2] = t.z; L4[3] = t.w;
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e) L4[e] = e < nv ? row[e] : 0;
            }
            const int w = (int)min(wa[i], (i64)(1 << 29));
            const double a = na[i];
            const u32 rai = (u32)ra[i];
            if (j0 == 0) {
                m1a = max(m1a, n1a[i]);
                m2a = max(m2a, n2a[i]);
            }
            // beta_ij = t_d when t_d < lo = min(w, v_j) (the usual case: row and column
            // widths above every t_d), else the regime value min(max(lo, t_s), max(w, v_j)); the
            // fast pass takes t_d of every entry, the exact regime pass runs only for the
            // entries (and warps) that have t_d >= lo
            bool slow = false;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                if (e < nv) {
                    const int L = L4[e];
                    const double zd = __dmul_rn(__dadd_rn(__dadd_rn(b[e], a), K), fac);  // >= K: normal
                    const int t_d = need_bits(true, (u64)__double_as_longlong(zd), L > 0, rbits(L, eoff52));
                    const bool s_e = t_d >= min(w, v[e]);
                    slow |= s_e;
                    bst = s_e ? bst : max(bst, t_d);
                    ubm[e] = max(ubm[e], (u32)L + rai);
                }
            }
            if (slow) {
                const double zza = __dmul_rn(a, fac);
                const bool zposa = zza > 0;
                const u64 zba = zbits(zposa ? zza : 1.0);
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    if (e < nv) {
                        const int L = L4[e];
                        const bool pos = L > 0;
                        const u64 rb = rbits(L, eoff52);
                        const double zd = __dmul_rn(__dadd_rn(__dadd_rn(b[e], a), K), fac);
                        const int t_d = need_bits(true, (u64)__double_as_longlong(zd), pos, rb);
                        // planner.required_beta's regimes: w < v: min(max(w, need(na)), v); v < w:
                        // min(max(v, need(nb)), w); w == v: w -- all three are min(max(lo, need), hi)
                        const bool rowside = w < v[e];
                        const int lo = rowside ? w : v[e], hi_w = rowside ? v[e] : w;
                        if (t_d >= lo) {
                            const int t_s = need_bits(rowside ? zposa : zposb[e], rowside ? zba : zbb[e], pos, rb);
                            bst = max(bst, min(max(lo, t_s), hi_w));
                        }
                    }
                }
            }
        }
        best = bst;
#pragma unroll
        for (int e = 0; e < 4; ++e)
            if (e < nv) ub = max(ub, (i64)ubm[e] + cb[j0 + e]);
    }
    plan_scalars_reduce(best, m1a, m1b, m2a, m2b, ub, out);
}

// Speculative width (planner.speculative_thresholds, CudaEngine.speculative_shifts): with the
// planner's scalars s = [beta_min, n1a, n1b, n2a, n2b, ub(, flag)] and the exact integer
// thresholds L[b] of one moduli count for b = 0..hi, b is a valid width (M > 2 Cmax(b)) iff
// min(n1a, n1b) <= L[b][0] or n2a n2b <= L[b][1]^2 (i.e. ceil(sqrt(n2a n2b)) <= L[b][1]) or
// ub + k <= L[b][2] (L < 0: never). Valid widths form a prefix, so the planner's
// max_beta_for(M, S, k, beta_min) is the largest valid b >= beta_min, found by bisection.
// 0 (no width: the host's check then rejects the speculation) when the NaN/Inf flag is set,
// beta_min is not valid or out of the table, or hi itself is valid (the answer lies beyond).
__device__ __forceinline__ bool spec_valid(const i64* s, const i64* tab, int b, i64 k) {
    const i64 l0 = tab[3 * b], l1 = tab[3 * b + 1], l2 = tab[3 * b + 2];
    const i64 n1 = s[1] < s[2] ? s[1] : s[2];
    if (l0 >= 0 && n1 <= l0) return true;
    if (l1 >= 0) {  // n2a n2b <= l1^2 as 128-bit products (high words by __umul64hi)
        const u64 a = (u64)s[3], b = (u64)s[4], l = (u64)l1;
        const u64 ph = __umul64hi(a, b), lh = __umul64hi(l, l);
        if (ph < lh || (ph == lh && a * b <= l * l)) return true;
    }
    return l2 >= 0 && s[5] + k <= l2;
}

__device__ __forceinline__ i64 spec_beta(const i64* s, int nscal, const i64* tab, int hi, i64 k) {
    if (nscal > 6 && s[6] != 0) return 0;
    const i64 lo = s[0];
    if (lo < 1 || lo >= hi || !spec_valid(s, tab, (int)lo, k) || spec_valid(s, tab, hi, k)) return 0;
    int a = (int)lo, b = hi;  // valid(a), not valid(b)
    while (b - a > 1) {
        const int mid = (a + b) / 2;
        if (spec_valid(s, tab, mid, k)) a = mid;
        else b = mid;
    }
    return a;
}

// The planner's shifts of both operands in one launch: out[0..m) = s_i = zero_a[i] ? 0 :
// beta - Ea[i], out[m..m+n) = t_j likewise from Eb, zero_b (planner.make_plan). Grid-stride.
// spec != null (a speculative plan): beta is spec_beta(spec, ...) instead of the argument, every
// shift is 0 when that is 0 (inputs then may hold NaN/Inf: shift 0 keeps the residue kernels'
// table index d2 = d - 31 < 1024 for every bit pattern), and thread 0 writes spec[0..nscal) and beta
// to spec_out (the one buffer the host reads).
extern "C" __global__ void plan_shifts(const i64* __restrict__ Ea, const bool* __restrict__ za, i64 m,
                                       const i64* __restrict__ Eb, const bool* __restrict__ zb, i64 n,
                                       i64 beta, i64* __restrict__ out, const i64* __restrict__ spec,
                                       int nscal, const i64* __restrict__ tab, int hi, i64 k,
                                       i64* __restrict__ spec_out) {
    if (spec != nullptr) beta = spec_beta(spec, nscal, tab, hi, k);
    const bool none = spec != nullptr && beta == 0;
    for (i64 x = blockIdx.x * (i64)blockDim.x + threadIdx.x; x < m + n; x += (i64)gridDim.x * blockDim.x) {
        const bool z = x < m ? za[x] : zb[x - m];
        const i64 E = x < m ? Ea[x] : Eb[x - m];
        out[x] = (z || none) ? 0 : beta - E;
    }
    if (spec != nullptr && blockIdx.x == 0 && threadIdx.x == 0) {
        for (int i = 0; i < nscal; ++i) spec_out[i] = spec[i];
        spec_out[nscal] = beta;
    }
}

// A normwise plan's scalars (planner.normwise_scalars) in one launch of one block: out[0] =
// max(1, #{b in 0..hi : tab[b] < max n1a + max n1b}) (normwise_thresholds grow with b, so this
// is normwise_width), out[1..4] = the maxima of n1a (m), n1b (n), n2a (m), n2b (n), out[5] =
// third, out[6] = *flag when flag is given. The norm sums are non-negative, m, n >= 1.
struct MaxI64 { __device__ i64 operator()(i64 a, i64 b) const { return a > b ? a : b; } };

extern "C" __global__ void normwise_scalars(const i64* __restrict__ n1a, const i64* __restrict__ n2a, i64 m,
                                            const i64* __restrict__ n1b, const i64* __restrict__ n2b, i64 n,
                                            const i64* __restrict__ tab, int hi, i64 third,
                                            const int* __restrict__ flag, i64* __restrict__ out) {
    __shared__ i64 sh[32];
    i64 v[4] = {0, 0, 0, 0};
    for (i64 i = threadIdx.x; i < m; i += blockDim.x) {
        v[0] = max(v[0], n1a[i]);
        v[2] = max(v[2], n2a[i]);
    }
    for (i64 j = threadIdx.x; j < n; j += blockDim.x) {
        v[1] = max(v[1], n1b[j]);
        v[3] = max(v[3], n2b[j]);
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] = block_reduce(v[e], MaxI64(), sh);
    const i64 N = v[0] + v[1];
    int below = 0;
    for (int b = threadIdx.x; b <= hi; b += blockDim.x) below += tab[b] < N;
    below = (int)block_reduce((i64)below, AddOp(), sh);
    if (threadIdx.x == 0) {
        out[0] = below > 1 ? below : 1;
        for (int e = 0; e < 4; ++e) out[1 + e] = v[e];
        out[5] = third;
        if (flag != nullptr) out[6] = *flag;
    }
}

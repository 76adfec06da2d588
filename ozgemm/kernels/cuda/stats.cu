// ozgemm CUDA kernels for the planner: fused row statistics and the closed-form width.
// They mirror ozgemm/precision/stats.py (row_stats) and ozgemm/precision/planner.py
// (required_beta) operation for operation (exact integer/frexp arithmetic, IEEE
// round-to-nearest multiplies and adds written with __dmul_rn/__dadd_rn so that no FMA
// contraction changes a bit), so plans are identical on CPU and GPU.

typedef long long i64;
typedef unsigned long long u64;

#define NORM_BITS 30
#define LB_BITS 7
#define STATS_THREADS 256

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

// One block per row of x (r x k, row stride ldx). Writes E, width, norm1, zero_row and the
// 7-bit quantisation q (r x kq int8, zero padding for l >= k).
extern "C" __global__ void row_stats(const double* __restrict__ x, i64 ldx, int r, int k,
                                     i64* __restrict__ E_out, i64* __restrict__ width_out,
                                     double* __restrict__ norm_out, bool* __restrict__ zero_out,
                                     i64* __restrict__ n1_out, i64* __restrict__ n2_out,
                                     signed char* __restrict__ q, i64 ldq, int kq) {
    __shared__ int s_top[STATS_THREADS];
    __shared__ int s_lsb[STATS_THREADS];
    __shared__ i64 s_sum[STATS_THREADS];
    __shared__ i64 s_sq[STATS_THREADS];
    int i = blockIdx.x;
    if (i >= r) return;
    const double* row = x + (i64)i * ldx;
    int tmax = -100000, lmin = 100000;
    for (int l = threadIdx.x; l < k; l += blockDim.x) {
        double v = row[l];
        if (v != 0.0) {
            int t, b;
            top_lsb(v, &t, &b);
            tmax = max(tmax, t);
            lmin = min(lmin, b);
        }
    }
    s_top[threadIdx.x] = tmax;
    s_lsb[threadIdx.x] = lmin;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            s_top[threadIdx.x] = max(s_top[threadIdx.x], s_top[threadIdx.x + s]);
            s_lsb[threadIdx.x] = min(s_lsb[threadIdx.x], s_lsb[threadIdx.x + s]);
        }
        __syncthreads();
    }
    const bool zero = s_top[0] == -100000;
    const int E = zero ? 0 : s_top[0];
    i64 acc = 0, acc2 = 0;
    for (int l = threadIdx.x; l < kq; l += blockDim.x) {
        signed char qq = 0;
        if (l < k) {
            double a = fabs(row[l]);
            acc += (i64)ceil(scalbn(a, NORM_BITS - E));
            i64 h = (i64)ceil(scalbn(a, NORM_BITS / 2 - E));
            acc2 += h * h;
            qq = (signed char)floor(scalbn(a, LB_BITS - E));
        }
        q[(i64)i * ldq + l] = qq;
    }
    s_sum[threadIdx.x] = acc;
    s_sq[threadIdx.x] = acc2;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            s_sum[threadIdx.x] += s_sum[threadIdx.x + s];
            s_sq[threadIdx.x] += s_sq[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        E_out[i] = E;
        width_out[i] = zero ? 0 : (i64)E - s_lsb[0];
        norm_out[i] = scalbn((double)s_sum[0], -NORM_BITS);
        zero_out[i] = zero;
        n1_out[i] = s_sum[0];
        n2_out[i] = s_sq[0];
    }
}

__device__ __forceinline__ i64 ceil_log2_ratio(double z, double r) {
    int ez, er;
    double fz = frexp(z, &ez);
    double fr = frexp(r, &er);
    return (i64)ez - (i64)er + (fz > fr ? 1 : 0);
}

// need(z): smallest beta with 2^(-beta-1) z fac <= R   (see planner.required_beta)
__device__ __forceinline__ i64 need(double z, double fac, bool pos, double Rs) {
    const i64 big = 1LL << 40;
    double zz = __dmul_rn(z, fac);
    i64 n = zz > 0 ? ceil_log2_ratio(zz, Rs) - 1 : -big;
    return (pos || zz == 0) ? n : big;
}

// per-entry width, reduced to one max per block (atomicMax into *out, initialised to 1)
extern "C" __global__ void required_beta(const i64* __restrict__ lb, i64 ldlb, int m, int n,
                                         const i64* __restrict__ wa, const i64* __restrict__ vb,
                                         const double* __restrict__ na, const double* __restrict__ nb,
                                         int bits, double K, double fac,
                                         unsigned long long* __restrict__ out) {
    __shared__ i64 s_max[256];
    i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 best = 1;
    if (idx < (i64)m * n) {
        int i = (int)(idx / n), j = (int)(idx - (i64)(idx / n) * n);
        double R = scalbn((double)lb[(i64)i * ldlb + j], -(bits - 1) - 2 * LB_BITS);
        bool pos = R > 0;
        double Rs = pos ? R : 1.0;
        i64 w = wa[i], v = vb[j];
        double a = na[i], b = nb[j];
        i64 t_d = need(__dadd_rn(__dadd_rn(b, a), K), fac, pos, Rs);
        i64 lo = min(w, v);
        i64 t_b = min(max(w, need(a, fac, pos, Rs)), v);
        i64 t_c = min(max(v, need(b, fac, pos, Rs)), w);
        i64 after = w < v ? t_b : (v < w ? t_c : w);
        i64 bij = t_d < lo ? t_d : after;
        best = max(bij, (i64)1);
    }
    s_max[threadIdx.x] = best;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) s_max[threadIdx.x] = max(s_max[threadIdx.x], s_max[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicMax(out, (unsigned long long)s_max[0]);
}

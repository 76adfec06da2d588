// ozgemm CUDA: definitions shared by the kernel files (prepended to crt.cu and stats.cu).
#pragma once

typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;

// float32 -> float64 from the bit pattern, exact for every value (NaN payloads and signed
// zeros kept): CuPy compiles with -ftz=true, under which a float -> double conversion flushes
// subnormal inputs to zero. The same function widens float32 arrays in ozgemm/_xp.py.
__device__ __forceinline__ double widen_f32_bits(unsigned int u) {
    // the float64 bit pattern built with integer operations only, no float -> double
    // conversion (with stats.cu's pair loads the float32 statistics ran 14 % faster; alone
    // it measured slower, docs/design.md "Planning on the GPU"): normal, exponent rebiased;
    // Inf/NaN, exponent 0x7ff and
    // the payload kept; subnormal f 2^-149, normalised at its highest set bit h (exponent
    // h - 149); zero, the sign alone
    const unsigned int e = (u >> 23) & 0xffu, f = u & 0x7fffffu;
    const u64 sign = (u64)(u >> 31) << 63;
    u64 body;
    if (e != 0u) {
        body = ((u64)(e == 255u ? 0x7ffu : e + 896u) << 52) | ((u64)f << 29);
    } else {
        const int h = 31 - __clz(f | 1u);
        body = f == 0u ? 0ULL : (((u64)(h + 874) << 52) | (((u64)f << (52 - h)) & ((1ULL << 52) - 1)));
    }
    return __longlong_as_double((i64)(sign | body));
}

// one input value as float64: float64 as is, float32 widened exactly
__device__ __forceinline__ double load_f64(const double* p) { return *p; }
__device__ __forceinline__ double load_f64(const float* p) { return widen_f32_bits(__float_as_uint(*p)); }

// ozgemm CUDA: definitions shared by the kernel files (prepended to crt.cu and stats.cu).
#pragma once

typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;

// float32 -> float64 from the bit pattern, exact for every value (NaN payloads and signed
// zeros kept): CuPy compiles with -ftz=true, under which a float -> double conversion flushes
// subnormal inputs to zero. Same rule as ozgemm/_xp.py (_WIDEN_F32).
__device__ __forceinline__ double widen_f32_bits(unsigned int u) {
    // three candidates, one select each (no branches): normal (the conversion is exact, no
    // flush), subnormal/zero (f 2^-149, exact), Inf/NaN (bit pattern, payload kept)
    const unsigned int e = (u >> 23) & 0xffu, f = u & 0x7fffffu;
    const u64 sign = (u64)(u >> 31) << 63;
    const double normal = (double)__uint_as_float(u);
    const double sub = __longlong_as_double((i64)(sign | (u64)__double_as_longlong((double)f * 1.4012984643248171e-45)));
    const double special = __longlong_as_double((i64)(sign | (0x7ffULL << 52) | ((u64)f << 29)));
    return e == 0u ? sub : (e == 255u ? special : normal);
}

// one input value as float64: float64 as is, float32 widened exactly
__device__ __forceinline__ double load_f64(const double* p) { return *p; }
__device__ __forceinline__ double load_f64(const float* p) { return widen_f32_bits(__float_as_uint(*p)); }

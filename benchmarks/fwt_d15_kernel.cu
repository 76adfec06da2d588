// Session 13 experiment (not shipped): one-CTA float64 2^15 row kernel, the top butterfly first.
// Appended to ozgemm/fwt/fwht.cu by benchmarks/fwt_d15_probe.py (it uses d15_levels from there,
// the levels of the shipped fwht_rows_d15s). Correct (CPU emulation and device checks); 56.8 % of
// copy in session 13 (with an L2 prefetch of the whole next row), 64.7-75.6 % in session 14 with
// the next row's x0 staged during the d half (OZ_FWT_D15_STAGE) and no prefetch (OZ_FWT_D15_PF=0);
// the shipped fwht_rows_d15s (top butterfly last) replaced it (benchmarks/results_fwt.md).
// One-CTA kernel for float64 rows of 2^15 (256 KiB: more than one SM's shared memory), session
// 13. Persistent (one 512-thread CTA per SM); thread 0 prefetches the CTA's next row into the
// L2 cache (cp.async.bulk.prefetch) when a row starts, so the DRAM stream does not wait for
// this row's butterflies, and the row's loads are L2 hits. Per row: the top butterfly first,
// s = x0 + x1 (registers: 32 values per thread) and d = x0 - x1 (shared memory, thread-private
// slots), then each half is a 2^14 transform (s -> y0, then d -> y1) in three layouts:
//   L1 (load): e = v + 2*lane + 64*c + 1024*wid (v < 2, c < 16): registers bits 0, 6-9, then
//      bit 5 (lane bit 4) with one warp shuffle per value;
//   L2: registers bits 0-4 (lanes 5-9, warps 10-13): bits 1-4;
//   L3: registers bits 0, 10-13 (lanes 1-5, warps 6-9): bits 10-13; 16-byte stores from there.
// The exchanges run in two rounds (index bit 0 = 0, 1: an 8 K-double, 64 KiB buffer) of 8-byte
// accesses at e' = e >> 1, stored at e' ^ ((e' >> 4) & 15): conflict-free for the 16-lane
// phases of 8-byte accesses in all three layouts. Shared memory: 128 KiB (d) + 64 KiB.
// Whole rows only; in place is safe (a row is read completely before its CTA writes it).
// Session 14: oz_trace_at points (OZ_FWT_TRACE builds, benchmarks/fwt_trace.py): 0 row start,
// 1 loads and top butterfly done, 2 first half done (stores issued), 3 second half done.
template <int MINB>
__device__ __forceinline__ void d15_half(double* r, double* xs, double* out, double scale) {
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  d15_levels(r, xs);
#pragma unroll
  for (int m = 0; m < 16; ++m) gstore(out + (lane << 1) + (wid << 6) + (m << 10), r + 2 * m, scale);
}

#ifndef OZ_FWT_D15_STAGE
#define OZ_FWT_D15_STAGE 1
#endif
// OZ_FWT_D15_PF: L2 prefetch of the CTA's next row: 0 none, 1 the whole row at the top of the
// current row (session 13), 2 its x1 half when the d half starts (x1 is then read ~one half
// later), 3 its x1 half at the top
#ifndef OZ_FWT_D15_PF
#define OZ_FWT_D15_PF 0
#endif
template <int MINB>
__global__ void __launch_bounds__(512, MINB)
fwht_rows_d15(const double* __restrict__ x, double* __restrict__ y, long long total, int L, double scale) {
  constexpr int LT = 15, H = 1 << 14;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  double2* dsm = reinterpret_cast<double2*>(smem_raw);  // thread-private slots tid + 512 c, c < 16
  double* xs = reinterpret_cast<double*>(smem_raw) + H; // exchange rounds: 2^13 doubles
  const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5;
  const long long ntiles = total >> LT;
  const int o1 = (lane << 1) | (wid << 10);  // L1 offset of piece c: o1 + (c << 6)
  long long t = blockIdx.x;
#if OZ_FWT_D15_STAGE
  // session 14: x0 of the CTA's next row is staged into the d slots (cp.async, each thread its
  // own slots) while the d half of the current row is transformed; x1 comes from global memory
  // into registers at the top of the row (16 loads of 16 bytes in flight per thread)
  if (t < ntiles) {
#pragma unroll
    for (int c = 0; c < 16; ++c) cp_async16(dsm + tid + 512 * c, x + (t << LT) + o1 + (c << 6));
  }
  cp_async_commit();
#endif
  int it = 0;  // row count of this CTA (OZ_FWT_TRACE only)
  for (; t < ntiles; t += gridDim.x, ++it) {
    oz_trace_at(it, 0);
    const long long nt = t + gridDim.x;
    if (tid == 0 && nt < ntiles && (OZ_FWT_D15_PF == 1 || OZ_FWT_D15_PF == 3)) {
#pragma unroll
      for (int q = OZ_FWT_D15_PF == 3 ? 2 : 0; q < 4; ++q) prefetch_l2(x + (nt << LT) + (q << 13), 1u << 16);
    }
    const double* xr = x + (t << LT);
    double r[32];
#if OZ_FWT_D15_STAGE
#pragma unroll
    for (int c = 0; c < 16; ++c) {
      const double2 b = __ldcs(reinterpret_cast<const double2*>(xr + H + o1 + (c << 6)));
      r[2 * c] = b.x;
      r[2 * c + 1] = b.y;
    }
    cp_async_wait_all();
#pragma unroll
    for (int c = 0; c < 16; ++c) {
      const double2 a = dsm[tid + 512 * c];
      const double b0 = r[2 * c], b1 = r[2 * c + 1];
      r[2 * c] = a.x + b0;
      r[2 * c + 1] = a.y + b1;
      dsm[tid + 512 * c] = make_double2(a.x - b0, a.y - b1);
    }
#else
#pragma unroll
    for (int g = 0; g < 4; ++g) {
      double2 a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        a[i] = __ldcs(reinterpret_cast<const double2*>(xr + o1 + ((4 * g + i) << 6)));
        b[i] = __ldcs(reinterpret_cast<const double2*>(xr + H + o1 + ((4 * g + i) << 6)));
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int c = 4 * g + i;
        r[2 * c] = a[i].x + b[i].x;
        r[2 * c + 1] = a[i].y + b[i].y;
        dsm[tid + 512 * c] = make_double2(a[i].x - b[i].x, a[i].y - b[i].y);
      }
    }
#endif
    oz_trace_at(it, 1);
    d15_half<MINB>(r, xs, y + (t << LT), scale);
    oz_trace_at(it, 2);
#pragma unroll
    for (int c = 0; c < 16; ++c) {
      const double2 d = dsm[tid + 512 * c];
      r[2 * c] = d.x;
      r[2 * c + 1] = d.y;
    }
    if (OZ_FWT_D15_PF == 2 && tid == 0 && nt < ntiles) {  // the next row's x1 into L2
      prefetch_l2(x + (nt << LT) + H, 1u << 16);
      prefetch_l2(x + (nt << LT) + H + (1 << 13), 1u << 16);
    }
#if OZ_FWT_D15_STAGE
    if (nt < ntiles) {  // the next row's x0 into the slots this thread has just read
#pragma unroll
      for (int c = 0; c < 16; ++c) cp_async16(dsm + tid + 512 * c, x + (nt << LT) + o1 + (c << 6));
    }
    cp_async_commit();
#endif
    d15_half<MINB>(r, xs, y + (t << LT) + H, scale);
    oz_trace_at(it, 3);
  }
}

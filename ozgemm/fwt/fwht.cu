// ozgemm.fwt CUDA kernels: fast Walsh–Hadamard transform (natural order, unscaled sums
// times a final factor `scale`). Compiled at run time by cupy.RawModule (NVRTC); no headers.
//
// Storage types T: unsigned short (IEEE binary16 bits), float, double, long long.
// Compute types A: float for binary16 and float, double, long long (exact).
//
// fwht_rows<T, A, LOGV, TB, CB, MMA, WM, MINB, XS>: one pass through memory. A block owns a tile of
//   2^(LOGV+TB+CB) contiguous elements (whole rows of 2^L elements, L <= tile bits).
//   Element index inside the tile: idx = v + (tid << LOGV) + (c << (LOGV+TB)) (WM: warp-major,
//   idx = v + (lane << LOGV) + (c << (LOGV+5)) + (wid << (LOGV+5+CB))),
//   v < V = 16/sizeof(T) (one 16-byte vector), tid < 2^TB threads, c < 2^CB chunks.
//   Phase A (from global, 16-byte coalesced loads): butterflies on the v bits and the
//   chunk bits in registers, on the 5 lane bits with warp shuffles.
//   Phase B (only when a warp bit is a transform bit): exchange through shared memory so
//   that the warp bits become register bits, butterflies, exchange back.
//   Store from the phase-A layout with 16-byte coalesced stores.
//   XS ("exchange-store", plain layout, TB-5 <= CB warp bits): phase B is one exchange into
//   the warp-major layout, where the warp bits are chunk (register) bits; butterflies there,
//   and the 16-byte coalesced stores go straight from that layout (2 shared-memory passes and
//   1 barrier instead of 4 and 2; same butterflies in the same order: bit-identical).
//   XS = K >= 2 ("lane exchange", plain layout, binary16 candidates): the top K thread bits
//   (all warp bits and the upper lane bits) are not shuffled; after phase A one exchange loads
//   the tile in a layout whose register bits are index bits [0, P) and the K thread bits
//   (P = LOGV + CB - K <= 2), butterflies there, and the stores go straight from that layout in
//   pieces of 2^P elements (2^P * sizeof(T) bytes per lane, consecutive lanes contiguous).
//   Fewer shuffle levels (TB - K instead of 5, minus the mma's 2) for narrower stores; same
//   butterflies in the same order as XS = 0: bit-identical.
//   Bits >= L inside the tile are row (batch) bits: no butterfly.
//
// fwht_cols<T, A, LOGV, MB, TPLB>: one strided pass for long rows. Transforms the MB index
//   bits [s, s+MB) of the flat index (rows are contiguous and 2^L-aligned, s+MB <= L).
//   A block owns a tile of 2^MB "lines" (stride 2^s) x Wc = 2^TPLB * V contiguous columns;
//   each thread holds 8 lines x one 16-byte vector; MB/3 register phases separated by
//   shared-memory exchanges; 16-byte coalesced loads and stores (>= 128 B per line).

typedef unsigned short half_bits;

__device__ __forceinline__ float h2f(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short f2h(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

// ---- 16-byte vector load/store, converting T <-> A, with the final scale ---------------
// gload<false>: from global memory (streaming); gload<true>: from shared memory (the
// pipelined kernel's staging buffer, see rows_body)
template <bool SH, typename V4> __device__ __forceinline__ V4 ld16(const V4* p) {
  if constexpr (SH) return *p;
  else return __ldcs(p);
}
template <bool SH = false> __device__ __forceinline__ void gload(const half_bits* p, float* a) {
  uint4 u = ld16<SH>(reinterpret_cast<const uint4*>(p));
  unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    a[2 * k] = h2f((unsigned short)(w[k] & 0xffffu));
    a[2 * k + 1] = h2f((unsigned short)(w[k] >> 16));
  }
}
template <bool SH = false> __device__ __forceinline__ void gload(const float* p, float* a) {
  float4 u = ld16<SH>(reinterpret_cast<const float4*>(p));
  a[0] = u.x; a[1] = u.y; a[2] = u.z; a[3] = u.w;
}
template <bool SH = false> __device__ __forceinline__ void gload(const double* p, double* a) {
  double2 u = ld16<SH>(reinterpret_cast<const double2*>(p));
  a[0] = u.x; a[1] = u.y;
}
template <bool SH = false> __device__ __forceinline__ void gload(const long long* p, long long* a) {
  longlong2 u = ld16<SH>(reinterpret_cast<const longlong2*>(p));
  a[0] = u.x; a[1] = u.y;
}
__device__ __forceinline__ unsigned f2h2(float lo, float hi) {  // one cvt for two values
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  unsigned d;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
#else
  return (unsigned)f2h(lo) | ((unsigned)f2h(hi) << 16);
#endif
}
__device__ __forceinline__ void gstore(half_bits* p, const float* a, float s) {
  unsigned w[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) w[k] = f2h2(a[2 * k] * s, a[2 * k + 1] * s);
  __stcs(reinterpret_cast<uint4*>(p), make_uint4(w[0], w[1], w[2], w[3]));
}
__device__ __forceinline__ void gstore(float* p, const float* a, float s) {
  __stcs(reinterpret_cast<float4*>(p), make_float4(a[0] * s, a[1] * s, a[2] * s, a[3] * s));
}
__device__ __forceinline__ void gstore(double* p, const double* a, double s) {
  __stcs(reinterpret_cast<double2*>(p), make_double2(a[0] * s, a[1] * s));
}
__device__ __forceinline__ void gstore(long long* p, const long long* a, long long) {
  __stcs(reinterpret_cast<longlong2*>(p), make_longlong2(a[0], a[1]));
}

// ---- asynchronous 16-byte global -> shared copies (cp.async, sm_80+) -------------------
// The pipelined row kernel stages the next tile with these while it transforms the current
// one. Each thread copies exactly the 16-byte vectors it will read itself, so waiting for its
// own copies (cp.async.wait_all) is enough before it reads them.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
#else
  __trap();  // the host code never selects the pipelined kernel below sm_80
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
__device__ __forceinline__ void cp_async_wait_all() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

// ---- global store of a piece of 2^P consecutive elements (P <= 2; lane exchange) --------
// Same conversion and scaling as gstore (f2h2 rounds each half like f2h): bit-identical.
template <int P> __device__ __forceinline__ void gstore_piece(half_bits* p, const float* a, float s) {
  if constexpr (P == 0) {
    __stcs(reinterpret_cast<unsigned short*>(p), f2h(a[0] * s));
  } else if constexpr (P == 1) {
    __stcs(reinterpret_cast<unsigned*>(p), f2h2(a[0] * s, a[1] * s));
  } else {
    __stcs(reinterpret_cast<uint2*>(p), make_uint2(f2h2(a[0] * s, a[1] * s), f2h2(a[2] * s, a[3] * s)));
  }
}
template <int P> __device__ __forceinline__ void gstore_piece(float* p, const float* a, float s) {
  if constexpr (P == 0) __stcs(p, a[0] * s);
  else if constexpr (P == 1) __stcs(reinterpret_cast<float2*>(p), make_float2(a[0] * s, a[1] * s));
  else gstore(p, a, s);
}
template <int P> __device__ __forceinline__ void gstore_piece(double* p, const double* a, double s) {
  if constexpr (P == 0) __stcs(p, a[0] * s);
  else gstore(p, a, s);
}
template <int P> __device__ __forceinline__ void gstore_piece(long long* p, const long long* a, long long s) {
  if constexpr (P == 0) __stcs(p, a[0]);
  else gstore(p, a, s);
}

// ---- shared-memory vector store/load of V compute values (16-byte pieces) --------------
// V = 8 floats per lane (binary16 tiles computed in float32): consecutive lanes are 32 B
// apart, so two plain float4 accesses would hit each bank group twice per 8-lane phase.
// Lanes with bit 2 set access their two halves in the opposite order: conflict-free.
// (Same locations either way; only which instruction moves which half changes.)
template <int V> __device__ __forceinline__ void sstore(float* p, const float* a) {
  if constexpr (V == 8) {
    const bool sw = (threadIdx.x >> 2) & 1;
    const float4 v0 = make_float4(a[0], a[1], a[2], a[3]);
    const float4 v1 = make_float4(a[4], a[5], a[6], a[7]);
    *reinterpret_cast<float4*>(p + (sw ? 4 : 0)) = sw ? v1 : v0;
    *reinterpret_cast<float4*>(p + (sw ? 0 : 4)) = sw ? v0 : v1;
  } else {
#pragma unroll
    for (int k = 0; k < V; k += 4)
      *reinterpret_cast<float4*>(p + k) = make_float4(a[k], a[k + 1], a[k + 2], a[k + 3]);
  }
}
template <int V> __device__ __forceinline__ void sload(const float* p, float* a) {
  if constexpr (V == 8) {
    const bool sw = (threadIdx.x >> 2) & 1;
    const float4 u = *reinterpret_cast<const float4*>(p + (sw ? 4 : 0));
    const float4 w = *reinterpret_cast<const float4*>(p + (sw ? 0 : 4));
    const float4 v0 = sw ? w : u, v1 = sw ? u : w;
    a[0] = v0.x; a[1] = v0.y; a[2] = v0.z; a[3] = v0.w;
    a[4] = v1.x; a[5] = v1.y; a[6] = v1.z; a[7] = v1.w;
  } else {
#pragma unroll
    for (int k = 0; k < V; k += 4) {
      float4 u = *reinterpret_cast<const float4*>(p + k);
      a[k] = u.x; a[k + 1] = u.y; a[k + 2] = u.z; a[k + 3] = u.w;
    }
  }
}
template <int V> __device__ __forceinline__ void sstore(double* p, const double* a) {
#pragma unroll
  for (int k = 0; k < V; k += 2) *reinterpret_cast<double2*>(p + k) = make_double2(a[k], a[k + 1]);
}
template <int V> __device__ __forceinline__ void sload(const double* p, double* a) {
#pragma unroll
  for (int k = 0; k < V; k += 2) {
    double2 u = *reinterpret_cast<const double2*>(p + k);
    a[k] = u.x; a[k + 1] = u.y;
  }
}
template <int V> __device__ __forceinline__ void sstore(long long* p, const long long* a) {
#pragma unroll
  for (int k = 0; k < V; k += 2)
    *reinterpret_cast<longlong2*>(p + k) = make_longlong2(a[k], a[k + 1]);
}
template <int V> __device__ __forceinline__ void sload(const long long* p, long long* a) {
#pragma unroll
  for (int k = 0; k < V; k += 2) {
    longlong2 u = *reinterpret_cast<const longlong2*>(p + k);
    a[k] = u.x; a[k + 1] = u.y;
  }
}

// lower lane: r + o, upper lane: o - r, as one fused op o + sg*r with sg = +-1 (exact
// product, one rounding: bit-identical to the separate add/subtract)
__device__ __forceinline__ float bfly(float sg, float r, float o) { return __fmaf_rn(sg, r, o); }
__device__ __forceinline__ double bfly(double sg, double r, double o) { return __fma_rn(sg, r, o); }
__device__ __forceinline__ long long bfly(long long sg, long long r, long long o) {
  return sg > 0 ? r + o : o - r;
}

// butterfly on register pairs (i, i + h) for all i with bit h clear, i < N
template <typename A, int N>
__device__ __forceinline__ void reg_stage(A* r, int h) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if ((i & h) == 0) {
      A u = r[i], w = r[i + h];
      r[i] = u + w;
      r[i + h] = u - w;
    }
  }
}

// butterfly on index bit log2(m) held in lane bit log2(m): lower lane r + o, upper lane o - r
// (bit-identical to reg_stage's u + w, u - w), one warp shuffle per value
template <typename A, int N>
__device__ __forceinline__ void shfl_stage(A* r, int m) {
  const A sg = (threadIdx.x & m) ? A(-1) : A(1);
#pragma unroll
  for (int k = 0; k < N; ++k) {
    const A o = __shfl_xor_sync(0xffffffffu, r[k], m);
    r[k] = bfly(sg, r[k], o);
  }
}

// ---- tensor-core front end for binary16 (MMA variant of fwht_rows) ---------------------
// One 16-byte vector per lane = 8 halves at tile index 8*lane + e (e < 8) of a 256-element
// chunk. Read as the A fragment of mma.m16n8k16 (row-major 16x16, fp16) with the mapping
//   e bit 0 -> k bit 0, e bit 1 -> m bit 3, e bit 2 -> k bit 3, lane&3 -> k bits 1-2,
//   lane>>2 -> m bits 0-2,
// the four 32-bit words (e = 0-1, 2-3, 4-5, 6-7) are exactly the fragment {a0a1, a2a3, a4a5,
// a6a7} in register order (no moves). Multiplying by B = H16 (k x n, entries
// (-1)^popcount(k & n); Sylvester order is invariant under a common permutation of the index
// bits) transforms index bits {0, 2, 3, 4}; the fp32 D fragments of the two mmas (n < 8,
// n >= 8, i.e. index bit 2 = 0, 1) are the values e = 0-3 and 4-7 in order, so the plain
// pipeline continues from there (index bit 1 is left for a register butterfly).
// (The alternative mapping e bit 1 -> k bit 3, e bit 2 -> m bit 3 needs the word order
// {x, z, y, w}: the SASS shows 4-8 register moves per mma pair.)
// b: this lane's B fragments of H16 for n < 8 (b.x, b.y) and n >= 8 (b.z, b.w), h16_frags.
__device__ __forceinline__ void mma_h16(const uint4& u, const uint4& b, float* r) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%10,%10,%10};"
      : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3])
      : "r"(u.x), "r"(u.y), "r"(u.z), "r"(u.w), "r"(b.x), "r"(b.y), "f"(0.f));  // n < 8
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%10,%10,%10};"
      : "=f"(r[4]), "=f"(r[5]), "=f"(r[6]), "=f"(r[7])
      : "r"(u.x), "r"(u.y), "r"(u.z), "r"(u.w), "r"(b.z), "r"(b.w), "f"(0.f));  // n >= 8
#else
  __trap();  // the host code never selects the mma variant below sm_80
#endif
}
__device__ __forceinline__ unsigned h16_pm1(int k, int n) {
  return (__popc(k & n) & 1) ? 0xBC00u : 0x3C00u;  // -1.0 / +1.0 in binary16
}
// The B fragments (k x n = 16 x 8, "col") of H16 held by `lane` for the two mmas of mma_h16:
// k = 2*(lane & 3) + {0, 1} and + 8 + {0, 1}, n = lane >> 2 (x, y) and + 8 (z, w).
__device__ __forceinline__ uint4 h16_frags(int lane) {
  const int gq = lane >> 2, tq = lane & 3;
  return make_uint4(h16_pm1(2 * tq, gq) | (h16_pm1(2 * tq + 1, gq) << 16),
                    h16_pm1(2 * tq + 8, gq) | (h16_pm1(2 * tq + 9, gq) << 16),
                    h16_pm1(2 * tq, gq + 8) | (h16_pm1(2 * tq + 1, gq + 8) << 16),
                    h16_pm1(2 * tq + 8, gq + 8) | (h16_pm1(2 * tq + 9, gq + 8) << 16));
}

// ============================================================================ row kernel
// ---- thread-block cluster helpers (sm_90): distributed shared memory, cluster barrier ----
// Below sm_90 they compile to traps; the host code never launches cluster kernels there.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define FWHT_HAVE_CLUSTERS 1
#else
#define FWHT_HAVE_CLUSTERS 0
#endif
__device__ __forceinline__ unsigned cluster_rank() {
#if FWHT_HAVE_CLUSTERS
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
#else
  __trap();
  return 0;
#endif
}
__device__ __forceinline__ void cluster_sync() {
#if FWHT_HAVE_CLUSTERS
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#else
  __trap();
#endif
}
template <typename P> __device__ __forceinline__ P* map_rank(P* p, unsigned rank) {
#if FWHT_HAVE_CLUSTERS
  unsigned long long q;
  asm volatile("mapa.u64 %0, %1, %2;" : "=l"(q) : "l"(reinterpret_cast<unsigned long long>(p)), "r"(rank));
  return reinterpret_cast<P*>(q);
#else
  __trap();
  return p;
#endif
}

// elements of the tile at `base` (a multiple of 2^LT below total) that exist: 2^LT but in the
// last tile
template <int LT> __device__ __forceinline__ int tile_limit(long long total, long long base) {
  return total - base < (1LL << LT) ? (int)(total - base) : (1 << LT);
}

// (every thread) start copying its 16-byte vectors of tile `tile` (plain layout, as rows_body
// reads them: offset (c * 2^TB + tid) << LOGV) into the staging buffer with cp.async
template <typename T, int LOGV, int TB, int CB>
__device__ __forceinline__ void stage_tile(const T* x, T* stage, long long tile, long long total) {
  constexpr int LT = LOGV + TB + CB;
  const long long b = tile << LT;
  const int lim = tile_limit<LT>(total, b);
#pragma unroll
  for (int c = 0; c < (1 << CB); ++c) {
    const int o = (c * (1 << TB) + (int)threadIdx.x) << LOGV;
    if (o < lim) cp_async16(stage + o, x + b + o);
  }
}

// CSB = log2(cluster size): with CSB > 0 a row of 2^(LT+CSB) elements spans the 2^CSB CTAs
// of a cluster (CTA rank = index bits [LT, LT+CSB)); after the in-CTA stages the last
// butterflies read the other CTAs' shared memory (DSMEM) and combine with H_{2^CSB}.
// PIPE (pipelined persistent kernel, plain layout, no cluster): the tile's 16-byte vectors
// come from the shared-memory staging buffer at the start of dynamic shared memory (the raw
// storage values, 2^LT * sizeof(T) bytes, filled by cp.async), and as soon as a thread has
// read its vectors its copies of tile `next` (if < ntiles) into the same buffer start (each
// thread copies only the vectors it reads itself), so that they overlap this tile's
// butterflies, exchange and stores. The exchange buffer follows
// the staging buffer. PIPE = 2 (XS = 1 only): the exchange buffer holds half the tile and the
// exchange runs in two rounds, one per half of each 16-byte vector (the register halves
// [0, V/2) and [V/2, V) are stored and reloaded in turn: a round's loads overwrite only the
// register half that round has stored). Same butterflies in the same order: bit-identical.
// LC > 0: the row length 2^LC is a compile-time constant (the host launches such a kernel only
// for rows of 2^LC): every "is index bit b a transform bit" test folds, so the kernel has no
// run-time branches around butterfly levels (the SASS of the run-time-L kernels spent register
// moves at the joins of those branches). LC = 0: L from the argument.
template <typename T, typename A, int LOGV, int TB, int CB, bool MMA, int CSB, bool WM, int XS,
          int PIPE = 0, int LC = 0>
__device__ __forceinline__ void rows_body(const T* __restrict__ x, T* __restrict__ y, long long total,
                                          int L_arg, A scale, long long tile, long long next = 0,
                                          long long ntiles = 0) {
  const int L = LC > 0 ? LC : L_arg;
  constexpr int V = 1 << LOGV;
  constexpr int C = 1 << CB;
  constexpr int E = V * C;
  constexpr int LOGE = LOGV + CB;
  constexpr int NTH = 1 << TB;
  constexpr int LT = LOGV + TB + CB;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // SPLIT (PIPE with CSB = 1): a row of 2^(LT+1) spans the 2 CTAs of a cluster, its top index
  // bit first (see fwht_rows_pipe_split)
  constexpr bool SPLIT = PIPE != 0 && CSB == 1;
  // EARLY_PF: the pipelined kernel (not split) stages the next tile without waiting for the
  // other warps (each thread copies only the vectors it has just read itself); the barrier that
  // keeps the exchange buffer safe (the previous tile's exchange reads done before this tile's
  // first exchange write) sits just before that first write (measured +1.1 to +2.2 % on the
  // table's pipelined rows on the H200)
  constexpr bool EARLY_PF = PIPE != 0 && !SPLIT;
  static_assert(PIPE == 0 || ((CSB == 0 || CSB == 1) && !WM),
                "the pipelined kernel uses the plain layout, no cluster or the 2-CTA split");
  static_assert(PIPE != 2 || (XS == 1 && LOGV >= 1), "PIPE = 2 (half exchange buffer) needs XS = 1");
  T* stage = reinterpret_cast<T*>(smem_raw);  // PIPE only
  A* sm = reinterpret_cast<A*>(smem_raw + (PIPE ? (sizeof(T) << LT) : 0));

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int wid = tid >> 5;
  const long long base = tile << LT;
  // tile-relative 32-bit offsets: elements [0, lim) of this tile exist (lim = 2^LT but in the
  // last tile); xt/yt point at the tile (one 64-bit address per thread, 32-bit checks)
  const int lim = tile_limit<LT>(total, base);
  const T* __restrict__ xt = x + base;
  T* __restrict__ yt = y + base;
  A r[E];
  // tile offset of thread tid's chunk c (16-byte vector): WM = false: chunk bits on top,
  // [v | tid | c]; WM = true (warp-major): [v | lane | c | wid], so that the chunk bits are
  // the index bits just above the lane bits and a warp owns 2^(LOGV+5+CB) contiguous
  // elements (rows that short need no shared memory at all).
  // (vofs_wm: the warp-major offset, also the exchange-store layout of XS, see below)
  auto vofs_wm = [&](int c) -> int {
    return (lane << LOGV) | (c << (LOGV + 5)) | (wid << (LOGV + 5 + CB));
  };
  auto vofs = [&](int c) -> int {
    if constexpr (WM) return vofs_wm(c);
    else return (c * NTH + tid) << LOGV;
  };
  constexpr int CH0 = WM ? LOGV + 5 : LOGV + TB;  // index bit of chunk bit 0
  constexpr int WB0 = WM ? LOGV + 5 + CB : LOGV + 5;  // index bit of warp bit 0
  // XS: the warp-major offset of the plain tile, [v | lane | c | wid]; its chunk bits
  // 0..TB-6 are the plain layout's warp bits [LOGV+5, LOGV+TB) (needs TB-5 <= CB).
  static_assert(XS != 1 || (!WM && (CSB == 0 || SPLIT) && TB > 5 && TB - 5 <= CB),
                "XS needs the plain layout, no cluster and all warp bits in the chunk bits");
  constexpr int XK = XS >= 2 ? XS : 0;  // lane exchange: thread bits done after the exchange
  constexpr int XP = XK ? LOGE - XK : 0;  // its low register bits (elements per store piece)
  static_assert(XS >= 0 && (XK == 0 || (!WM && (CSB == 0 || SPLIT) && XK >= TB - 5 && XK <= TB - (MMA ? 2 : 0)
                                        && XP >= 0 && XP <= 2 && XP <= LOGV)),
                "lane exchange: plain layout, no cluster, TB-5 <= K <= TB (TB-2 with mma), "
                "0 <= LOGV+CB-K <= min(2, LOGV)");
  bool xs_layout = false;  // whether r holds the tile in the vofs_wm layout (uniform)
  // the 16 raw bytes of chunk c (zeros past the end): from global memory, or (PIPE) from the
  // staging buffer after this thread's copies have landed
  // PIPE: the tile comes from the staging buffer once this thread's copies have landed
  if (PIPE) cp_async_wait_all();
  // SPLIT: the partner CTA's staging buffer (its half of the row, same offsets) through
  // distributed shared memory, once both CTAs' copies have landed; rank 0 keeps own + partner
  // (x0 + x1), rank 1 partner - own (x0 - x1)
  const T* pstage = stage;
  A ssg = A(1);
  if constexpr (SPLIT) {
    cluster_sync();
    const unsigned rank = cluster_rank();
    pstage = map_rank(stage, rank ^ 1u);
    ssg = (rank & 1u) ? A(-1) : A(1);
  }
  // PIPE: once this thread holds its vectors, start copying its vectors of tile `next` into the
  // staging buffer (SPLIT: after a cluster barrier, which ends the partner's reads of this CTA's
  // staging buffer)
  auto prefetch_next = [&]() {
    if constexpr (SPLIT) {
      cluster_sync();
      if (next < ntiles) stage_tile<T, LOGV, TB, CB>(x, stage, next, total);
      cp_async_commit();
    } else if constexpr (PIPE != 0) {  // no barrier: see EARLY_PF
      if (next < ntiles) stage_tile<T, LOGV, TB, CB>(x, stage, next, total);
      cp_async_commit();
    }
  };

  // ---- phase A: load (16-byte vectors, consecutive threads -> consecutive vectors)
  // MMA (binary16 only, needs L >= 5): bits {0,2,3,4} on tensor cores, see mma_h16.
  const bool use_mma = MMA && L >= 5;
  if (MMA && use_mma) {
    const uint4 hb = h16_frags(lane);
    if constexpr (PIPE == 0) {
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const int off = vofs(c);
        uint4 u = make_uint4(0u, 0u, 0u, 0u);
        if (off < lim) u = __ldcs(reinterpret_cast<const uint4*>(xt + off));
        mma_h16(u, hb, reinterpret_cast<float*>(r + c * V));
      }
    } else {
      uint4 u[C];
      uint4 w[SPLIT ? C : 1];  // SPLIT: the partner's vectors
#pragma unroll
      for (int c = 0; c < C; ++c) {
        u[c] = make_uint4(0u, 0u, 0u, 0u);
        if (vofs(c) < lim) u[c] = *reinterpret_cast<const uint4*>(stage + vofs(c));
        if constexpr (SPLIT) w[c] = *reinterpret_cast<const uint4*>(pstage + vofs(c));  // whole rows
      }
      prefetch_next();
#pragma unroll
      for (int c = 0; c < C; ++c) {
        mma_h16(u[c], hb, reinterpret_cast<float*>(r + c * V));
        if constexpr (SPLIT) {  // H is linear: H(x0 +- x1) = H x0 +- H x1 on these 4 bits
          float t[V];
          mma_h16(w[c], hb, t);
#pragma unroll
          for (int v = 0; v < V; ++v) r[c * V + v] = bfly(ssg, r[c * V + v], A(t[v]));  // A = float
        }
      }
    }
    if (1 < L) reg_stage<A, E>(r, 2);  // index bit 1 = register bit 1 (see mma_h16)
  } else {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int off = vofs(c);
      if (off < lim) {
        if constexpr (PIPE == 0) gload(xt + off, r + c * V);
        else gload<true>(stage + vofs(c), r + c * V);
        if constexpr (SPLIT) {  // top index bit first: one butterfly with the partner's half
          A t[V];
          gload<true>(pstage + vofs(c), t);
#pragma unroll
          for (int v = 0; v < V; ++v) r[c * V + v] = bfly(ssg, r[c * V + v], t[v]);
        }
      } else {
#pragma unroll
        for (int v = 0; v < V; ++v) r[c * V + v] = A(0);
      }
    }
    prefetch_next();
    // v bits: index bits [0, LOGV) = register bits [0, LOGV)
#pragma unroll
    for (int b = 0; b < LOGV; ++b)
      if (b < L) reg_stage<A, E>(r, 1 << b);
  }
  // chunk bits: index bits [CH0, CH0+CB) = register bits [LOGV, LOGE)
#pragma unroll
  for (int j = 0; j < CB; ++j)
    if (CH0 + j < L) reg_stage<A, E>(r, V << j);
  // lane bits: index bits [LOGV, LOGV + min(5,TB))
  constexpr int LANEB = XK ? TB - XK : (TB < 5 ? TB : 5);  // XK: the upper lane bits come later
#pragma unroll
  for (int j = 0; j < LANEB; ++j) {
    if (LOGV + j < L && !(use_mma && j < 2))  // MMA did index bits 3, 4 (lane bits 0, 1)
      shfl_stage<A, E>(r, 1 << j);
  }

  // ---- phase B: warp bits [WB0, WB0+TB-5) through shared memory, in groups of at most
  // LOGE bits (one exchange per group). For a group of g bits starting at index bit b0:
  // lanes -> index bits [0,5); register e's low g bits -> [b0, b0+g);
  // q = (e >> g) | (wid << (LOGE - g)) -> the remaining bits [5, b0) and [b0+g, LT), in order.
  // One group (the usual case) has its own code path: the generic loop raised register use
  // (e.g. float32 TB=10 CB=3: 64 registers and 140 bytes of spills instead of 4; float32
  // TB=8 CB=3 cluster: 100 registers instead of 80) and was measurably slower on the H200.
  // ---- lane exchange (XS = K >= 2): index bits [YB0, LOGV+TB) (the upper lane bits and the
  // warp bits) become register bits P.. of layout Y: register e -> index bits (e & (2^P-1)) |
  // (e >> P) << YB0; thread -> its low NLO bits at [P, YB0), its high CB bits at [LOGV+TB, LT).
  // Then the 16-byte-piece layout is not restored: stores of 2^P elements per lane from Y.
  if constexpr (XK > 0) {
    constexpr int YB0 = LOGV + TB - XK;
    constexpr int NLO = YB0 - XP;
    constexpr int PW = 1 << XP;
    if (YB0 < L) {  // uniform
      if constexpr (EARLY_PF) __syncthreads();  // the previous tile's exchange reads are done
#pragma unroll
      for (int c = 0; c < C; ++c) sstore<V>(sm + vofs(c), r + c * V);
      __syncthreads();
      const int ybase = ((tid & ((1 << NLO) - 1)) << XP) | ((tid >> NLO) << (LOGV + TB));
      struct alignas(sizeof(A) * PW) Piece { A v[PW]; };
#pragma unroll
      for (int g = 0; g < (E >> XP); ++g) {
        const Piece u = *reinterpret_cast<const Piece*>(sm + (ybase | (g << YB0)));
#pragma unroll
        for (int k = 0; k < PW; ++k) r[g * PW + k] = u.v[k];
      }
#pragma unroll
      for (int i = 0; i < XK; ++i)
        if (YB0 + i < L) reg_stage<A, E>(r, PW << i);
#pragma unroll
      for (int g = 0; g < (E >> XP); ++g) {
        const int off = ybase | (g << YB0);
        if (off < lim) gstore_piece<XP>(yt + off, r + g * PW, scale);
      }
      return;
    }
  }

  if (XK == 0 && TB > 5 && WB0 < L) {
    constexpr int WB = TB > 5 ? TB - 5 : 0;            // warp bits
    constexpr int GB = WB < LOGE ? WB : LOGE;          // bits per group
    constexpr int NG = GB > 0 ? (WB + GB - 1) / GB : 0;
    if constexpr (EARLY_PF) __syncthreads();  // the previous tile's exchange reads are done
    if constexpr (PIPE != 2) {
#pragma unroll
      for (int c = 0; c < C; ++c) sstore<V>(sm + vofs(c), r + c * V);
      __syncthreads();
    }
    if constexpr (PIPE == 2) {
      // exchange-store in two rounds through a half-tile buffer (see the top of rows_body):
      // round h moves register half [h*V/2, (h+1)*V/2) of every vector; position of a
      // vector's half in the buffer: (tile offset >> LOGV) * V/2
      constexpr int HV = V / 2;
      struct alignas(sizeof(A) * HV) HalfVec { A v[HV]; };
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (h) __syncthreads();
#pragma unroll
        for (int c = 0; c < C; ++c) {
          HalfVec p;
#pragma unroll
          for (int k = 0; k < HV; ++k) p.v[k] = r[c * V + h * HV + k];
          *reinterpret_cast<HalfVec*>(sm + (vofs(c) >> LOGV) * HV) = p;
        }
        __syncthreads();
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const HalfVec p = *reinterpret_cast<const HalfVec*>(sm + (vofs_wm(c) >> LOGV) * HV);
#pragma unroll
          for (int k = 0; k < HV; ++k) r[c * V + h * HV + k] = p.v[k];
        }
      }
#pragma unroll
      for (int j = 0; j < TB - 5; ++j)
        if (WB0 + j < L) reg_stage<A, E>(r, V << j);
      xs_layout = true;
    } else if constexpr (XS == 1) {
      // one exchange: load in the warp-major layout (same lane bits, so the sstore/sload<8>
      // swizzle on threadIdx.x bit 2 stays conflict-free), warp bits = chunk bits 0..WB-1
#pragma unroll
      for (int c = 0; c < C; ++c) sload<V>(sm + vofs_wm(c), r + c * V);
#pragma unroll
      for (int j = 0; j < WB; ++j)
        if (WB0 + j < L) reg_stage<A, E>(r, V << j);
      xs_layout = true;
    } else if constexpr (NG == 1) {
      constexpr int W = 1 << WB;
      constexpr int XB = LOGE - WB;  // extra register bits
      constexpr int LOWB = WB0 - 5;
      auto pos = [&](int e) -> int {
        const int q = (e >> WB) | (wid << XB);
        return lane + ((q & ((1 << LOWB) - 1)) << 5) + ((e & (W - 1)) << WB0) + ((q >> LOWB) << (WB0 + WB));
      };
#pragma unroll
      for (int e = 0; e < E; ++e) r[e] = sm[pos(e)];
#pragma unroll
      for (int jj = 0; jj < WB; ++jj)
        if (WB0 + jj < L) reg_stage<A, E>(r, 1 << jj);
#pragma unroll
      for (int e = 0; e < E; ++e) sm[pos(e)] = r[e];
      __syncthreads();
    } else {
#pragma unroll
      for (int gi = 0; gi < NG; ++gi) {
        const int b0 = WB0 + gi * GB;
        const int g = (WB - gi * GB) < GB ? (WB - gi * GB) : GB;
        if (b0 < L) {  // uniform over the block
          const int lowb = b0 - 5;
          auto pos = [&](int e) -> int {
            const int q = (e >> g) | (wid << (LOGE - g));
            return lane | ((e & ((1 << g) - 1)) << b0) | ((q & ((1 << lowb) - 1)) << 5) | ((q >> lowb) << (b0 + g));
          };
#pragma unroll
          for (int e = 0; e < E; ++e) r[e] = sm[pos(e)];
#pragma unroll
          for (int jj = 0; jj < GB; ++jj)
            if (jj < g && b0 + jj < L) reg_stage<A, E>(r, 1 << jj);
#pragma unroll
          for (int e = 0; e < E; ++e) sm[pos(e)] = r[e];
          __syncthreads();
        }
      }
    }
    if constexpr (XS != 1) {
#pragma unroll
      for (int c = 0; c < C; ++c) sload<V>(sm + vofs(c), r + c * V);
    }
  }

  // ---- cluster stage: index bits [LT, LT+CSB) across the CTAs of the cluster
  if (CSB > 0 && !SPLIT) {
    constexpr int CS = 1 << CSB;
#pragma unroll
    for (int c = 0; c < C; ++c) sstore<V>(sm + vofs(c), r + c * V);
    cluster_sync();
    const unsigned rank = cluster_rank();
#pragma unroll
    for (int c = 0; c < C; ++c) {
#pragma unroll
      for (int v = 0; v < V; ++v) r[c * V + v] = A(0);
    }
#pragma unroll
    for (int j = 0; j < CS; ++j) {
      const A sg = (__popc(rank & j) & 1) ? A(-1) : A(1);
      const A* rsm = map_rank(sm, (unsigned)j);
#pragma unroll
      for (int c = 0; c < C; ++c) {
        A t[V];
        sload<V>(rsm + vofs(c), t);
#pragma unroll
        for (int v = 0; v < V; ++v) r[c * V + v] = bfly(sg, t[v], r[c * V + v]);
      }
    }
    cluster_sync();  // keep every CTA's shared memory alive until all remote reads are done
  }

  // ---- store (XS after phase B: from the warp-major layout, still 16-byte coalesced)
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const int off = XS == 1 && xs_layout ? vofs_wm(c) : vofs(c);
    if (off < lim) gstore(yt + off, r + c * V, scale);
  }
}

// WM: warp-major tile layout (see vofs); MINB: minimum resident CTAs per SM asked of the
// register allocator (__launch_bounds__), e.g. 2 so that two large tiles overlap;
// XS: 0 = phase B as above, 1 = exchange-store phase B (plain layout, TB-5 <= CB only),
// K >= 2 = lane exchange with K thread bits after the exchange (see the top).
// LC: compile-time row length (log2), 0 = from the argument L (see rows_body).
template <typename T, typename A, int LOGV, int TB, int CB, bool MMA, bool WM, int MINB, int XS, int LC>
__global__ void __launch_bounds__(1 << TB, MINB)
fwht_rows(const T* __restrict__ x, T* __restrict__ y, long long total, int L, A scale) {
  rows_body<T, A, LOGV, TB, CB, MMA, 0, WM, XS, 0, LC>(x, y, total, L, scale, blockIdx.x);
}

// Pipelined persistent variant (PIPE = 1 or 2, see rows_body): gridDim.x CTAs, CTA b
// transforms tiles b, b + gridDim.x, ...; while it transforms one tile, cp.async copies its
// next tile into the shared-memory staging buffer (one tile of raw storage values), so the
// loads of the next tile overlap the butterflies and stores of this one even with one CTA per
// SM. Dynamic shared memory: 2^LT * sizeof(T) (staging) + 2^LT * sizeof(A) (exchange; half
// with PIPE = 2; none when the rows need no shared-memory phase).
// (the loop of both pipelined kernels; CSB = 1: the split kernel below)
// Leftover rows (tiles) of the persistent kernels fwht_rows_d15s and fwht_rows_pipe (d15s on
// the H200: 145.5-146.9 us against 150.8-151.9 us with the static schedule) and fwht_rows_h15
// (see there; the split kernel keeps its pairs of tiles). With G CTAs and q = ntiles / G,
// CTA b transforms rows b + k G (k < q) and then draws one ticket from the launch's counter: the
// first ntiles - q G tickets are the leftover rows q G + ticket, so the CTAs that finish their
// static rows first take them (a static schedule gives them to CTAs 0 .. ntiles - q G - 1, and
// the launch lasts until the slowest of those ends). Every CTA draws exactly once, with atomicInc
// modulo G: from any starting value s < G the G draws are s, ..., G - 1, 0, ..., s - 1 (distinct,
// and the counter is back at s afterwards); from s >= G one draw gets s (no row) and the others
// 0 .. G - 2, which still covers the at most G - 1 leftover rows. So a counter left in any state
// (a launch that never finished, a graph that captured its first zeroing) cannot make a later
// launch skip or repeat a row. The host keeps one counter per device and stream (and per host
// thread on the per-thread default stream), ``_cuda.row_tickets``; two launches that use the
// same counter must not run at the same time.
__device__ __forceinline__ long long draw_leftover(unsigned* tickets, long long ntiles) {  // thread 0
  const long long g = gridDim.x, qg = ntiles / g * g;
  const unsigned v = atomicInc(tickets, gridDim.x - 1);  // v; the counter becomes v + 1, or 0 after G - 1
  return qg + v < ntiles ? qg + v : ntiles;
}
// Every thread of the CTA gets its leftover row (draw_leftover), passed through *slot (shared
// memory that no other thread reads or writes from the call until the caller's next use of it)
__device__ __forceinline__ long long leftover_row(unsigned* tickets, long long ntiles, long long* slot) {
  if (threadIdx.x == 0) *slot = draw_leftover(tickets, ntiles);
  __syncthreads();
  const long long t = *slot;
  __syncthreads();  // every thread has read the number before the slot is reused
  return t;
}

template <typename T, typename A, int LOGV, int TB, int CB, bool MMA, int CSB, int XS, int PIPE, int LC>
__device__ __forceinline__ void pipe_loop(const T* __restrict__ x, T* __restrict__ y, long long total, int L,
                                          A scale, unsigned* __restrict__ tickets = nullptr) {
  constexpr int LT = LOGV + TB + CB;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* stage = reinterpret_cast<T*>(smem_raw);
  const long long ntiles = (total + (1LL << LT) - 1) >> LT;
  long long t = blockIdx.x;
  if constexpr (CSB == 0) {
    // the static tiles below qg (pipelined), then the leftover tile drawn (draw_leftover), staged
    // and transformed alone; its number passes through the idle staging buffer
    const long long G = gridDim.x, qg = ntiles / G * G;
    if (t < qg) stage_tile<T, LOGV, TB, CB>(x, stage, t, total);  // prologue: the first tile
    cp_async_commit();
    for (; t < qg; t += G)
      rows_body<T, A, LOGV, TB, CB, MMA, CSB, false, XS, PIPE, LC>(x, y, total, L, scale, t, t + G, qg);
    __syncthreads();  // every thread has read its staged vectors
    // through the idle staging buffer (the copies below overwrite it)
    t = leftover_row(tickets, ntiles, reinterpret_cast<long long*>(smem_raw));
    if (t < ntiles) {
      stage_tile<T, LOGV, TB, CB>(x, stage, t, total);
      cp_async_commit();
      rows_body<T, A, LOGV, TB, CB, MMA, CSB, false, XS, PIPE, LC>(x, y, total, L, scale, t, ntiles, ntiles);
    }
  } else {
    if (t < ntiles) stage_tile<T, LOGV, TB, CB>(x, stage, t, total);  // prologue: the first tile
    cp_async_commit();
    for (; t < ntiles; t += gridDim.x)
      rows_body<T, A, LOGV, TB, CB, MMA, CSB, false, XS, PIPE, LC>(x, y, total, L, scale, t, t + gridDim.x, ntiles);
  }
}
template <typename T, typename A, int LOGV, int TB, int CB, bool MMA, int MINB, int XS, int PIPE, int LC>
__global__ void __launch_bounds__(1 << TB, MINB)
fwht_rows_pipe(const T* __restrict__ x, T* __restrict__ y, long long total, int L, A scale,
               unsigned* __restrict__ tickets) {
  pipe_loop<T, A, LOGV, TB, CB, MMA, 0, XS, PIPE, LC>(x, y, total, L, scale, tickets);
}
// Prefetch `bytes` (a multiple of 16) at p into the L2 cache (bulk, asynchronous, no
// completion to wait for; sm_90). Below sm_90 a no-op (the host never launches its users there).
__device__ __forceinline__ void prefetch_l2(const void* p, unsigned bytes) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#endif
}



// Two-layout kernel for binary16 rows of 2^15: pipelined and persistent
// like fwht_rows_pipe, with float32 compute, the mma front end, and one shared-memory exchange.
// 512 threads, 64 elements each; element index e (15 bits) of the row:
//   L1 (load, mma, registers, lanes): e = v + 8*lane + 256*c + 2048*wid (v < 8, c < 8); the mma
//      front end (mma_h16) transforms bits {0, 2, 3, 4}, register butterflies bits 1, 8, 9, 10,
//      then two warp-shuffle levels bits 5 and 6 (lane bits 2 and 3);
//   L2 (after the exchange): e = k + 2*lane + 64*(wid & 1) + 128*p0 + 256*(wid >> 1) + 2048*p1
//      (r[2p + k], p = p0 + 2 p1): registers hold bits {0, 7, 11, 12, 13, 14}, lanes 1-5, warps
//      6, 8, 9, 10; register butterflies bits 7, 11, 12, 13, 14, then 4-byte stores (two halves
//      per lane, 128 contiguous bytes per warp store).
// The levels run in a fixed order (mma; bits 1, 8, 9, 10, 5, 6, 7, 11, 12, 13, 14); every
// output is the exact transform rounded as: one mma of 16 inputs with float32 accumulation, then
// 11 float32 adds, then the scale and one rounding to binary16 (the same operations as
// fwht_rows_pipe with the mma front end, in another order of levels).
// Why one exchange (H200, 4096 rows, same process): a three-layout form with registers-only
// levels and two float4 exchanges (L2 bits 5, 6, 7, 11; L3 bits 12, 13, 14, 16-byte stores)
// took 150.9 us, its two exchanges in this row loop (leftover tickets) 149.6 us, this kernel
// 147.1 us (with a static row schedule: 150.0 us against 150.5 us for the three-layout form).
// The same one-exchange loop written with a buffer of packed outputs, stored after all the
// conversions, took 180.8 us.
// The rows: CTA b transforms rows b + k G below q G (G CTAs, q = ntiles / G), then at most one
// leftover row drawn by ticket (draw_leftover; measured 149.9 us against 151.1 us for a static
// schedule of the three-layout form; with the loop in a non-inlined function 151.7 us, its
// static build 154.0 us).
// Shared memory: 64 KiB staging (binary16) + 128 KiB exchange (float32). Whole rows only
// (total a multiple of 2^15); in place is safe (a row is staged completely before its CTA
// writes it, and the next row staged meanwhile is another row).
__device__ __forceinline__ void h15_rows(const half_bits* __restrict__ x, half_bits* __restrict__ y, long long t,
                                         long long end, float scale) {
  constexpr int LT = 15;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  half_bits* stage = reinterpret_cast<half_bits*>(smem_raw);
  float* sm = reinterpret_cast<float*>(smem_raw + (sizeof(half_bits) << LT));
  const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5;
  const int o1 = (lane << 3) | (wid << 11);  // L1 offset of chunk c: o1 + (c << 8)
  const int o2 = (lane << 1) | ((wid & 1) << 6) | ((wid >> 1) << 8);  // L2 pair p: o2 + 128 (p & 1) + 2048 (p >> 1)
  // The exchange buffer holds element e at float offset e ^ (4 * bit 5 of e) (the two float4
  // halves of each 8-float group swapped where bit 5 is set): in L1 lanes are 32 bytes apart and
  // bit 5 is lane bit 2, so the 8 lanes of each 16-byte store phase hit 8 different bank groups;
  // in L2 each half-warp reads 128 contiguous bytes (bit 5 is lane bit 4). The swap is a
  // per-thread constant in both layouts.
  const int sw1 = lane & 4;         // 4 * bit 5 of e in L1 (lane bit 2)
  const int sw2 = (lane >> 2) & 4;  // 4 * bit 5 of e in L2 (lane bit 4)
  if (t < end) {
#pragma unroll
    for (int c = 0; c < 8; ++c) cp_async16(stage + o1 + (c << 8), x + (t << LT) + o1 + (c << 8));
  }
  cp_async_commit();
  const uint4 hb = h16_frags(lane);
  for (; t < end; t += gridDim.x) {
    float r[64];
    uint4 u[8];
    // the row after the staged one into L2 (its cp.async copies then hit L2; measured 0.3-1.0 %
    // faster in 4 of 4 same-process A/Bs on the H200, the same bits; prefetching the row after
    // that instead: 190.5 us against 149.6 us)
    if (tid == 0 && t + 2 * (long long)gridDim.x < end)
      prefetch_l2(x + ((t + 2 * (long long)gridDim.x) << LT), 2u << LT);
    cp_async_wait_all();
#pragma unroll
    for (int c = 0; c < 8; ++c) u[c] = *reinterpret_cast<const uint4*>(stage + o1 + (c << 8));
    const long long nt = t + gridDim.x;
    if (nt < end) {  // stage the next row into the slots this thread has just read
#pragma unroll
      for (int c = 0; c < 8; ++c) cp_async16(stage + o1 + (c << 8), x + (nt << LT) + o1 + (c << 8));
    }
    cp_async_commit();
#pragma unroll
    for (int c = 0; c < 8; ++c) mma_h16(u[c], hb, r + 8 * c);  // bits 0, 2, 3, 4
    reg_stage<float, 64>(r, 2);   // bit 1
    reg_stage<float, 64>(r, 8);   // bit 8
    reg_stage<float, 64>(r, 16);  // bit 9
    reg_stage<float, 64>(r, 32);  // bit 10
    shfl_stage<float, 64>(r, 4);  // bit 5 (lane bit 2)
    shfl_stage<float, 64>(r, 8);  // bit 6 (lane bit 3)
    __syncthreads();  // the previous row's L2 reads are done
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      sstore<4>(sm + ((o1 + (c << 8)) ^ sw1), r + 8 * c);
      sstore<4>(sm + ((o1 + (c << 8)) ^ sw1 ^ 4), r + 8 * c + 4);
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < 32; ++p) {  // r[2p + k]: bit 0 = k, bits 7, 11, 12, 13, 14 = bits of p
      const float2 v = *reinterpret_cast<const float2*>(sm + ((o2 + ((p & 1) << 7) + ((p >> 1) << 11)) ^ sw2));
      r[2 * p] = v.x;
      r[2 * p + 1] = v.y;
    }
    reg_stage<float, 64>(r, 2);   // bit 7
    reg_stage<float, 64>(r, 4);   // bit 11
    reg_stage<float, 64>(r, 8);   // bit 12
    reg_stage<float, 64>(r, 16);  // bit 13
    reg_stage<float, 64>(r, 32);  // bit 14
    half_bits* yt = y + (t << LT);
    if (scale == 1.f) {  // (x * 1 is x: the same bits without the multiplies)
#pragma unroll
      for (int p = 0; p < 32; ++p)
        __stcs(reinterpret_cast<unsigned*>(yt + o2 + ((p & 1) << 7) + ((p >> 1) << 11)), f2h2(r[2 * p], r[2 * p + 1]));
    } else {
#pragma unroll
      for (int p = 0; p < 32; ++p)
        __stcs(reinterpret_cast<unsigned*>(yt + o2 + ((p & 1) << 7) + ((p >> 1) << 11)),
               f2h2(r[2 * p] * scale, r[2 * p + 1] * scale));
    }
  }
}

template <int MINB>
__global__ void __launch_bounds__(512, MINB)
fwht_rows_h15(const half_bits* __restrict__ x, half_bits* __restrict__ y, long long total, int L, float scale,
              unsigned* __restrict__ tickets) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const long long ntiles = total >> 15, qg = ntiles / gridDim.x * gridDim.x;
  h15_rows(x, y, blockIdx.x, qg, scale);  // the static rows b + k G below q G
  if (qg < ntiles) {  // the leftover rows by tickets (draw_leftover), one per CTA at most
    // through thread 0's own staging slot (its copies of the drawn row overwrite it)
    const long long t = leftover_row(tickets, ntiles, reinterpret_cast<long long*>(smem_raw));
    if (t < ntiles) h15_rows(x, y, t, t + 1, scale);
  }
}

// The 14 levels of a 2^14 half: r in the L1 layout in, r in the L3 layout out (no stores).
__device__ __forceinline__ void d15_levels(double* r, double* xs) {
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  auto sw = [](int e) { return e ^ ((e >> 4) & 15); };
  reg_stage<double, 32>(r, 1);   // bit 0 (r[2c + v])
  reg_stage<double, 32>(r, 2);   // bit 6
  reg_stage<double, 32>(r, 4);   // bit 7
  reg_stage<double, 32>(r, 8);   // bit 8
  reg_stage<double, 32>(r, 16);  // bit 9
  shfl_stage<double, 32>(r, 16);  // bit 5 = lane bit 4
  // exchange A: L1 -> L2, rounds k = index bit 0; r[2c + k] <-> r[2j + k]. Warps hold bits
  // 10-13 in both layouts: each warp exchanges within its own 4 KiB region, with warp barriers
  // (measured on the H200: 150.2 us against 153.9 us with CTA barriers), then one CTA barrier before
  // exchange B writes into other warps' regions
#pragma unroll
  for (int k = 0; k < 2; ++k) {
#pragma unroll
    for (int c = 0; c < 16; ++c) xs[sw(lane + (c << 5) + (wid << 9))] = r[2 * c + k];
    __syncwarp();
#pragma unroll
    for (int j = 0; j < 16; ++j) r[2 * j + k] = xs[sw(j + (lane << 4) + (wid << 9))];
    __syncwarp();
  }
  reg_stage<double, 32>(r, 2);   // bit 1
  reg_stage<double, 32>(r, 4);   // bit 2
  reg_stage<double, 32>(r, 8);   // bit 3
  reg_stage<double, 32>(r, 16);  // bit 4
  __syncthreads();  // every warp's exchange A reads are done
  // exchange B: L2 -> L3; r[2m + k]: bit 0 = k, bits 10-13 = m
#pragma unroll
  for (int k = 0; k < 2; ++k) {
#pragma unroll
    for (int j = 0; j < 16; ++j) xs[sw(j + (lane << 4) + (wid << 9))] = r[2 * j + k];
    __syncthreads();
#pragma unroll
    for (int m = 0; m < 16; ++m) r[2 * m + k] = xs[sw(lane + (wid << 5) + (m << 9))];
    __syncthreads();
  }
  reg_stage<double, 32>(r, 2);   // bit 10
  reg_stage<double, 32>(r, 4);   // bit 11
  reg_stage<double, 32>(r, 8);   // bit 12
  reg_stage<double, 32>(r, 16);  // bit 13
}
// One-CTA kernel for float64 rows of 2^15 (``fwht_rows_d15s``): a 256 KiB row is
// more than one SM's shared memory, so it is held as two halves x0, x1 of 2^14, one in registers
// (32 values per thread, 512 threads) and one in 128 KiB of thread-private shared-memory slots
// (slot tid + 512 c holds the thread's 16-byte piece c), and the top butterfly comes last:
// y0 = H x0, y1 = H x1, out = [y0 + y1, y0 - y1] (H_2n = [[H_n, H_n], [H_n, -H_n]]). Per row:
//   x0 (staged into the slots during the previous row) -> registers; x1 staged into the same
//   slots by cp.async while x0 is transformed (its loads hidden behind 14 levels);
//   per-thread swap: registers (y0) <-> slots (x1); x1 transformed;
//   the combine reads y0 back piece by piece, stores both output halves from registers and
//   stages the CTA's next x0 into each slot as it frees it (these loads overlap the stores).
// Each half's 14 levels (d15_levels), half index h (14 bits):
//   L1: h = v + 2 lane + 64 c + 1024 wid (v < 2, c < 16; r[2c + v]): registers bits 0, 6-9, then
//       bit 5 (lane bit 4) with one warp shuffle per value;
//   L2 (exchange A): h = k + 2 j + 32 lane + 1024 wid (r[2j + k]): registers bits 1-4;
//   L3 (exchange B): h = k + 2 lane + 64 wid + 1024 m (r[2m + k]): registers bits 10-13.
// Each exchange runs in two rounds (k = h bit 0) through a 64 KiB buffer of 8-byte slots at
// e' = h >> 1, stored at e' ^ ((e' >> 4) & 15): conflict-free for the 16-lane phases of 8-byte
// accesses in all three layouts (checked by a CPU emulation of the same maps). The slots are
// thread-private (no barrier around them); the exchange buffer is fenced by the rounds' barriers.
// Shared memory 192 KiB + 16 bytes (the leftover row's number): one CTA per SM; persistent (grid
// = resident CTAs, whole rows only). In
// place is safe: a row's halves are read (staged) before its CTA writes any output of that row,
// and the next row staged meanwhile is another row. Every output is the exact transform rounded
// as 15 float64 adds (the same count as every other float64 kernel, in another order), then the
// scale. Measured on the H200: see docs/performance.md (float64 2^15) and docs/design.md.
template <int MINB>
__global__ void __launch_bounds__(512, MINB)
fwht_rows_d15s(const double* __restrict__ x, double* __restrict__ y, long long total, int L, double scale,
               unsigned* __restrict__ tickets) {
  constexpr int LT = 15, H = 1 << 14;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  double2* dsm = reinterpret_cast<double2*>(smem_raw);  // thread-private slots tid + 512 c, c < 16
  double* xs = reinterpret_cast<double*>(smem_raw) + H; // exchange rounds: 2^13 doubles
  const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5;
  const long long ntiles = total >> LT;
  const int o1 = (lane << 1) | (wid << 10);   // L1 offset of piece c: o1 + (c << 6)
  const int o3 = (lane << 1) | (wid << 6);    // L3 offset of piece m: o3 + (m << 10)
  // rows: blockIdx.x + k G below qg, then the leftover row drawn (draw_leftover) while the last
  // static row is transformed (the next x0 is staged during the combine)
  const long long G = gridDim.x, qg = ntiles / G * G;
  // (in the dynamic buffer, after the exchange buffer: with static __shared__ variables this
  // kernel measured 4-5 % slower on the H200)
  long long& s_first = *reinterpret_cast<long long*>(smem_raw + (3 << 16));
  long long& s_row = *reinterpret_cast<long long*>(smem_raw + (3 << 16) + 8);
  long long t = blockIdx.x;
  if (qg == 0) {  // no static row: the leftover row is the first
    if (tid == 0) s_first = draw_leftover(tickets, ntiles);
    __syncthreads();
    t = s_first;
  }
  if (t < ntiles) {
#pragma unroll
    for (int c = 0; c < 16; ++c) cp_async16(dsm + tid + 512 * c, x + (t << LT) + o1 + (c << 6));
  }
  cp_async_commit();
  for (; t < ntiles;) {
    // t is this CTA's last static row: draw the leftover row (read after the y1 levels' barriers;
    // the atomic's latency is paid once per CTA, and nothing is kept live across the levels)
    if (tid == 0 && t < qg && t + G >= qg) s_row = draw_leftover(tickets, ntiles);
    const double* xr = x + (t << LT);
    double r[32];
    cp_async_wait_all();  // x0
#pragma unroll
    for (int c = 0; c < 16; ++c) {
      const double2 a = dsm[tid + 512 * c];
      r[2 * c] = a.x;
      r[2 * c + 1] = a.y;
    }
#pragma unroll
    for (int c = 0; c < 16; ++c) cp_async16(dsm + tid + 512 * c, xr + H + o1 + (c << 6));  // x1
    cp_async_commit();
    d15_levels(r, xs);  // y0
    cp_async_wait_all();  // x1
#pragma unroll
    for (int c = 0; c < 16; ++c) {
      const double2 b = dsm[tid + 512 * c];
      dsm[tid + 512 * c] = make_double2(r[2 * c], r[2 * c + 1]);  // y0 piece c (L3 piece m = c)
      r[2 * c] = b.x;
      r[2 * c + 1] = b.y;
    }
    d15_levels(r, xs);  // y1
    const long long nt = t + G < qg ? t + G : (t < qg ? s_row : ntiles);  // the next row
    double* yt = y + (t << LT);
#pragma unroll
    for (int m = 0; m < 16; ++m) {
      const double2 a = dsm[tid + 512 * m];
      const double s0[2] = {a.x + r[2 * m], a.y + r[2 * m + 1]};
      const double s1[2] = {a.x - r[2 * m], a.y - r[2 * m + 1]};
      if (nt < ntiles) cp_async16(dsm + tid + 512 * m, x + (nt << LT) + o1 + (m << 6));  // next x0
      gstore(yt + o3 + (m << 10), s0, scale);
      gstore(yt + H + o3 + (m << 10), s1, scale);
    }
    cp_async_commit();
    t = nt;
  }
}

#if FWHT_HAVE_CLUSTERS
// Pipelined split kernel (PIPE = 1 or 2 with a cluster of 2 CTAs): a row of 2^(LT+1) elements
// is two tiles, its halves x0 and x1, handled by the two CTAs of a cluster in the same loop
// iteration (gridDim.x even, so tile t and its partner t ^ 1 have the parity of the CTA's rank).
// Each CTA stages only its own half (one read of every element from global memory), then reads
// the partner's half from the partner's staging buffer (DSMEM) and starts with the butterfly
// on the top index bit: rank 0 transforms x0 + x1, rank 1 x0 - x1 (H_2n = [[H_n, H_n],
// [H_n, -H_n]]), each a row of 2^LT (LC = LT) written to its own half. Same shared memory as
// fwht_rows_pipe for rows of 2^LT. The outputs never overwrite an input another CTA still
// reads (each half is read from global memory only by its own CTA): in place is safe.
template <typename T, typename A, int LOGV, int TB, int CB, bool MMA, int MINB, int XS, int PIPE, int LC>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(1 << TB, MINB)
fwht_rows_pipe_split(const T* __restrict__ x, T* __restrict__ y, long long total, int L, A scale) {
  static_assert(LC == LOGV + TB + CB, "the split kernel transforms half-rows of 2^LT");
  pipe_loop<T, A, LOGV, TB, CB, MMA, 1, XS, PIPE, LC>(x, y, total, L, scale);  // ntiles even
}
template <typename T, typename A, int LOGV, int TB, int CB, bool MMA, bool WM, int MINB>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(1 << TB, MINB)
fwht_rows_cluster2(const T* __restrict__ x, T* __restrict__ y, long long total, int L, A scale) {
  rows_body<T, A, LOGV, TB, CB, MMA, 1, WM, 0>(x, y, total, L, scale, blockIdx.x);
}
template <typename T, typename A, int LOGV, int TB, int CB, bool MMA, bool WM, int MINB>
__global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(1 << TB, MINB)
fwht_rows_cluster4(const T* __restrict__ x, T* __restrict__ y, long long total, int L, A scale) {
  rows_body<T, A, LOGV, TB, CB, MMA, 2, WM, 0>(x, y, total, L, scale, blockIdx.x);
}
#endif  // FWHT_HAVE_CLUSTERS

// ========================================================================= strided kernel
template <typename T, typename A, int LOGV, int MB, int TPLB>
__global__ void __launch_bounds__((1 << TPLB) << (MB - 3))
fwht_cols(const T* __restrict__ x, T* __restrict__ y, long long total, int s, A scale) {
  constexpr int V = 1 << LOGV;
  constexpr int RB = 3;                 // 8 lines per thread per phase
  constexpr int R = 1 << RB;
  constexpr int E = R * V;
  constexpr int P = MB / RB;            // phases (MB is a multiple of 3)
  constexpr int TPL = 1 << TPLB;        // threads per line
  constexpr int WCB = TPLB + LOGV;      // log2 of columns per tile
  constexpr int WC = 1 << WCB;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  A* sm = reinterpret_cast<A*>(smem_raw);

  const int tid = threadIdx.x;
  const int cv = tid & (TPL - 1);
  const int g = tid >> TPLB;
  const long long nlo = 1LL << (s - WCB);
  const long long hi = blockIdx.x / nlo;
  const long long lt = blockIdx.x - hi * nlo;
  const long long base = (hi << (s + MB)) + (lt << WCB) + (long long)cv * V;
  (void)total;

  A r[E];
  // phase 0: lines (g << 3) | j ... in general line(p, j) below
  auto line = [&](int p, int j) -> int {
    const int lowmask = (1 << (RB * p)) - 1;
    return (g & lowmask) | (j << (RB * p)) | ((g >> (RB * p)) << (RB * p + RB));
  };
#pragma unroll
  for (int j = 0; j < R; ++j) gload(x + base + ((long long)line(0, j) << s), r + j * V);
#pragma unroll
  for (int b = 0; b < RB; ++b) reg_stage<A, E>(r, V << b);
#pragma unroll
  for (int p = 1; p < P; ++p) {
#pragma unroll
    for (int j = 0; j < R; ++j) sstore<V>(sm + line(p - 1, j) * WC + cv * V, r + j * V);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < R; ++j) sload<V>(sm + line(p, j) * WC + cv * V, r + j * V);
#pragma unroll
    for (int b = 0; b < RB; ++b) reg_stage<A, E>(r, V << b);
  }
#pragma unroll
  for (int j = 0; j < R; ++j) gstore(y + base + ((long long)line(P - 1, j) << s), r + j * V, scale);
}

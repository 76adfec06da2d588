// ozgemm.lcn CUDA kernels: exact crossing counts, batched move deltas, device-resident
// simulated annealing. Loaded by ozgemm/lcn/gpu.py with cupy.RawModule (NVRTC).
//
// Exactness: coordinates are int64; orientation determinants are exact when
// (max x - min x) * (max y - min y) <= 2^62 - 1 (the host checks this for the grid
// [0,width] x [0,height] before launching anything). No floating point touches the
// predicates or the counts; the only floating point is the Metropolis acceptance test.
//
// The random numbers, candidate generation and acceptance rule mirror
// ozgemm/lcn/rng.py and ozgemm/lcn/solver.py line by line.

typedef long long i64;
typedef unsigned long long u64;

#define LCN_MAXDEG 1024
#define K1 0x9E3779B97F4A7C15ULL
#define K2 0xD1B54A32D192ED03ULL
#define K3 0xABC98388FB8FAC03ULL
#define K4 0x8CB92BA72F3D8DD7ULL

// scalar state slots (int64 array `st`)
#define ST_IT 0        // iteration counter
#define ST_K 1         // current local crossing number
#define ST_SUMC 2      // sum of per-edge counts (= 2 * total crossings)
#define ST_CHOSEN 3    // candidate accepted in this iteration, -1 if none
#define ST_BEST_K 4
#define ST_BEST_AT 5
#define ST_BEST_TOT 6
#define ST_ACCEPTED 7  // number of accepted moves
#define ST_IMPROVED 8  // 1 if the state just became the best
#define ST_EVALS 9     // number of candidates evaluated (non-trivial ones)
#define ST_DSUM 10     // scratch: sum of non-incident deltas of the applied move
#define ST_BEFF 11     // candidates evaluated in this iteration (adaptive, <= batch)

extern "C" {

__device__ __forceinline__ u64 lcn_mix(u64 z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ u64 lcn_hash(u64 seed, u64 it, u64 cand, u64 d) {
    return lcn_mix((seed * K1) ^ (it * K2) ^ (cand * K3) ^ (d * K4));
}

__device__ __forceinline__ i64 lcn_below(u64 h, u64 n) { return (i64)(((h >> 32) * n) >> 32); }

__device__ __forceinline__ double lcn_unit(u64 h) {
    return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

__device__ __forceinline__ int lcn_orient(i64 ax, i64 ay, i64 bx, i64 by, i64 cx, i64 cy) {
    i64 v = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
    return (v > 0) - (v < 0);
}

// closed segments p1q1 and p2q2 share a point (same rule as exact.segments_intersect)
__device__ __forceinline__ int lcn_seg_x(i64 p1x, i64 p1y, i64 q1x, i64 q1y,
                                         i64 p2x, i64 p2y, i64 q2x, i64 q2y) {
    if (min(p1x, q1x) > max(p2x, q2x) || min(p2x, q2x) > max(p1x, q1x) ||
        min(p1y, q1y) > max(p2y, q2y) || min(p2y, q2y) > max(p1y, q1y))
        return 0;
    int o1 = lcn_orient(p1x, p1y, q1x, q1y, p2x, p2y);
    int o2 = lcn_orient(p1x, p1y, q1x, q1y, q2x, q2y);
    int o3 = lcn_orient(p2x, p2y, q2x, q2y, p1x, p1y);
    int o4 = lcn_orient(p2x, p2y, q2x, q2y, q1x, q1y);
    if (o1 == 0 && o2 == 0 && o3 == 0 && o4 == 0) return 1;  // collinear, boxes overlap
    return (o1 * o2 <= 0) && (o3 * o4 <= 0);
}

__device__ __forceinline__ int lcn_on_seg(i64 ax, i64 ay, i64 bx, i64 by, i64 px, i64 py) {
    if (px < min(ax, bx) || px > max(ax, bx) || py < min(ay, by) || py > max(ay, by)) return 0;
    return lcn_orient(ax, ay, bx, by, px, py) == 0;
}

// ---------------------------------------------------------------------------------------
// Full recount: grid (T, T) of 256-edge tiles, blocks with by < bx exit. Each unordered
// pair (i < j) is tested once; counts are added with integer atomics (order-independent).
__global__ void lcn_count_all(const i64* __restrict__ x, const i64* __restrict__ y,
                              const int* __restrict__ eu, const int* __restrict__ ev,
                              int m, int* __restrict__ cnt) {
    __shared__ i64 sx0[256], sy0[256], sx1[256], sy1[256];
    __shared__ int su[256], sv[256];
    int bi = blockIdx.x, bj = blockIdx.y;
    if (bj < bi) return;
    int i = bi * 256 + threadIdx.x;
    int jt = bj * 256 + threadIdx.x;
    if (jt < m) {
        int a = eu[jt], b = ev[jt];
        su[threadIdx.x] = a; sv[threadIdx.x] = b;
        sx0[threadIdx.x] = x[a]; sy0[threadIdx.x] = y[a];
        sx1[threadIdx.x] = x[b]; sy1[threadIdx.x] = y[b];
    }
    __syncthreads();
    if (i >= m) return;
    int a = eu[i], b = ev[i];
    i64 ax = x[a], ay = y[a], bx = x[b], by = y[b];
    int local = 0;
    int jmax = min(256, m - bj * 256);
    for (int t = 0; t < jmax; ++t) {
        int j = bj * 256 + t;
        if (j <= i) continue;
        int c = su[t], d = sv[t];
        if (c == a || c == b || d == a || d == b) continue;
        if (lcn_seg_x(ax, ay, bx, by, sx0[t], sy0[t], sx1[t], sy1[t])) {
            ++local;
            atomicAdd(&cnt[j], 1);
        }
    }
    if (local) atomicAdd(&cnt[i], local);
}

// floor(a / b) for b > 0 (C++ '/' truncates toward zero; Python '//' floors)
__device__ __forceinline__ i64 lcn_floordiv(i64 a, i64 b) {
    i64 q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

// ---------------------------------------------------------------------------------------
// Candidate generation (thread 0 of a block); mirrors solver._candidate.
struct LcnParams {
    u64 seed;
    int n, m, width, height;
    int cycle, r_min, r_max;
    int tournament, slack;
    int slack_best;  // 1: the count bound is best k + slack (solver.AnnealParams.slack_best)
    double p_uniform, p_global, t0, t1, reheat, t_floor, p_bary, p_short;
};

// parameters travel as two small device arrays (layout: gpu.py, _param_arrays)
__device__ __forceinline__ LcnParams lcn_params(const i64* ip, const double* dp) {
    LcnParams P;
    P.seed = (u64)ip[0]; P.n = (int)ip[1]; P.m = (int)ip[2]; P.width = (int)ip[3]; P.height = (int)ip[4];
    P.cycle = (int)ip[5]; P.r_min = (int)ip[6]; P.r_max = (int)ip[7]; P.tournament = (int)ip[8];
    P.slack = (int)ip[9];
    P.slack_best = (int)ip[10];
    P.p_uniform = dp[0]; P.p_global = dp[1]; P.t0 = dp[2]; P.t1 = dp[3]; P.reheat = dp[4]; P.t_floor = dp[5];
    P.p_bary = dp[6];
    P.p_short = dp[7];
    return P;
}

__device__ void lcn_candidate(const LcnParams& P, u64 it, int j, const int* cnt,
                              const int* eu, const int* ev, const int* off, const int* inc,
                              const i64* x, const i64* y,
                              int* v_out, i64* nx_out, i64* ny_out, int* trivial) {
    u64 q = it % (u64)P.cycle;
    i64 r = P.r_min + ((i64)(P.r_max - P.r_min) * (i64)(P.cycle - 1 - (i64)q)) / (i64)(P.cycle - 1);
    int v, w_hot = -1;  // w_hot: other endpoint of the tournament's (hot) edge
    if (P.m == 0 || lcn_unit(lcn_hash(P.seed, it, j, 0)) < P.p_uniform) {
        v = (int)lcn_below(lcn_hash(P.seed, it, j, 1), (u64)P.n);
    } else {
        int best = -1, bc = -1;
        for (int t = 0; t < P.tournament; ++t) {
            int e = (int)lcn_below(lcn_hash(P.seed, it, j, 2 + t), (u64)P.m);
            if (cnt[e] > bc) { best = e; bc = cnt[e]; }
        }
        const bool side = (lcn_hash(P.seed, it, j, 1) >> 63) != 0;
        v = side ? ev[best] : eu[best];
        w_hot = side ? eu[best] : ev[best];
    }
    i64 nx, ny;
    double u = lcn_unit(lcn_hash(P.seed, it, j, 10));
    if (u < P.p_global) {
        nx = lcn_below(lcn_hash(P.seed, it, j, 11), (u64)P.width + 1);
        ny = lcn_below(lcn_hash(P.seed, it, j, 12), (u64)P.height + 1);
    } else if (u < P.p_global + P.p_bary) {  // around the barycentre of the neighbours
        i64 sx = 0, sy = 0, deg = off[v + 1] - off[v];
        for (int t = off[v]; t < off[v + 1]; ++t) {
            int e = inc[t];
            int w = (eu[e] == v) ? ev[e] : eu[e];
            sx += x[w]; sy += y[w];
        }
        i64 cx = deg ? sx / deg : x[v], cy = deg ? sy / deg : y[v];
        nx = cx + lcn_below(lcn_hash(P.seed, it, j, 11), (u64)(2 * r + 1)) - r;
        ny = cy + lcn_below(lcn_hash(P.seed, it, j, 12), (u64)(2 * r + 1)) - r;
    } else if (u < P.p_global + P.p_bary + P.p_short && w_hot >= 0) {
        // shorten the hot edge: fraction t/1024 of the way to its other endpoint (floor
        // division, as Python's //), plus a uniform offset in [-r, r]^2 (solver._candidate)
        i64 t = (i64)lcn_below(lcn_hash(P.seed, it, j, 14), 1024);
        nx = x[v] + lcn_floordiv((x[w_hot] - x[v]) * t, 1024) + lcn_below(lcn_hash(P.seed, it, j, 11), (u64)(2 * r + 1)) - r;
        ny = y[v] + lcn_floordiv((y[w_hot] - y[v]) * t, 1024) + lcn_below(lcn_hash(P.seed, it, j, 12), (u64)(2 * r + 1)) - r;
    } else {
        nx = x[v] + lcn_below(lcn_hash(P.seed, it, j, 11), (u64)(2 * r + 1)) - r;
        ny = y[v] + lcn_below(lcn_hash(P.seed, it, j, 12), (u64)(2 * r + 1)) - r;
    }
    *v_out = v; *nx_out = nx; *ny_out = ny;
    *trivial = (nx < 0 || ny < 0 || nx > P.width || ny > P.height || (nx == x[v] && ny == y[v]));
}

// ---------------------------------------------------------------------------------------
// Batched move evaluation: block j evaluates candidate j of iteration st[ST_IT] (or, when
// cand_v != NULL, the given move (cand_v[j], cand_x[j], cand_y[j])). Outputs per candidate:
// energy change dE = sum_f W[c_f + d_f] - W[c_f] (int64, exact), the largest new count
// among edges whose count changes (-1 if none), and ok = 1 if the move keeps the drawing
// valid, 0 if not, -1 for a trivial candidate (outside the grid or not moving; not evaluated).
__global__ void lcn_eval_moves(const i64* __restrict__ ip, const double* __restrict__ dp,
                               const i64* __restrict__ st,
                               const i64* __restrict__ x, const i64* __restrict__ y,
                               const int* __restrict__ eu, const int* __restrict__ ev,
                               const int* __restrict__ off, const int* __restrict__ inc,
                               const int* __restrict__ cnt, const i64* __restrict__ W,
                               int use_cand, const int* __restrict__ cand_v, const i64* __restrict__ cand_x,
                               const i64* __restrict__ cand_y,
                               int* __restrict__ out_v, i64* __restrict__ out_x, i64* __restrict__ out_y,
                               i64* __restrict__ out_de, int* __restrict__ out_max,
                               int* __restrict__ out_ok) {
    __shared__ int s_v, s_deg, s_triv, s_bad;
    __shared__ i64 s_nx, s_ny, s_vx, s_vy;
    __shared__ int s_e[LCN_MAXDEG], s_u[LCN_MAXDEG], s_d[LCN_MAXDEG];
    __shared__ i64 s_ux[LCN_MAXDEG], s_uy[LCN_MAXDEG];
    __shared__ i64 red_de[256];
    __shared__ int red_mx[256];
    const LcnParams P = lcn_params(ip, dp);
    int j = blockIdx.x, tid = threadIdx.x;
    if (!use_cand && (i64)j >= st[ST_BEFF]) return;  // beyond this iteration's adaptive batch
    if (tid == 0) {
        int v, triv; i64 nx, ny;
        if (use_cand) {
            v = cand_v[j]; nx = cand_x[j]; ny = cand_y[j];
            triv = (nx < 0 || ny < 0 || nx > P.width || ny > P.height || (nx == x[v] && ny == y[v]));
        } else {
            lcn_candidate(P, (u64)st[ST_IT], j, cnt, eu, ev, off, inc, x, y, &v, &nx, &ny, &triv);
        }
        s_v = v; s_nx = nx; s_ny = ny; s_triv = triv; s_bad = 0;
        s_vx = x[v]; s_vy = y[v];
        s_deg = off[v + 1] - off[v];
    }
    __syncthreads();
    const int v = s_v, deg = s_deg;
    const i64 nx = s_nx, ny = s_ny, vx = s_vx, vy = s_vy;
    if (s_triv) {
        if (tid == 0) { out_v[j] = v; out_x[j] = nx; out_y[j] = ny; out_de[j] = 0; out_max[j] = -1; out_ok[j] = -1; }
        return;
    }
    for (int i = tid; i < deg; i += blockDim.x) {
        int e = inc[off[v] + i];
        int u = (eu[e] == v) ? ev[e] : eu[e];
        s_e[i] = e; s_u[i] = u; s_ux[i] = x[u]; s_uy[i] = y[u]; s_d[i] = 0;
    }
    __syncthreads();
    i64 de = 0;
    int mx = -1, bad = 0;
    for (int f = tid; f < P.m; f += blockDim.x) {
        int a = eu[f], b = ev[f];
        if (a == v || b == v) continue;
        i64 ax = x[a], ay = y[a], bx = x[b], by = y[b];
        if (lcn_on_seg(ax, ay, bx, by, nx, ny)) bad = 1;
        i64 fx0 = min(ax, bx), fx1 = max(ax, bx), fy0 = min(ay, by), fy1 = max(ay, by);
        int d = 0;
        for (int i = 0; i < deg; ++i) {
            int u = s_u[i];
            if (u == a || u == b) continue;
            i64 ux = s_ux[i], uy = s_uy[i];
            if (min(min(ux, vx), nx) > fx1 || max(max(ux, vx), nx) < fx0 ||
                min(min(uy, vy), ny) > fy1 || max(max(uy, vy), ny) < fy0) continue;
            int dd = lcn_seg_x(nx, ny, ux, uy, ax, ay, bx, by) - lcn_seg_x(vx, vy, ux, uy, ax, ay, bx, by);
            if (dd) { d += dd; atomicAdd(&s_d[i], dd); }
        }
        if (d) {
            int c = cnt[f];
            de += W[c + d] - W[c];
            mx = max(mx, c + d);
        }
    }
    for (int w = tid; w < P.n; w += blockDim.x) {
        if (w == v) continue;
        i64 wx = x[w], wy = y[w];
        if (wx == nx && wy == ny) { bad = 1; continue; }
        for (int i = 0; i < deg; ++i) {
            if (w == s_u[i]) continue;
            if (lcn_on_seg(nx, ny, s_ux[i], s_uy[i], wx, wy)) { bad = 1; break; }
        }
    }
    __syncthreads();  // s_d complete
    for (int i = tid; i < deg; i += blockDim.x) {
        int d = s_d[i];
        if (d) {
            int c = cnt[s_e[i]];
            de += W[c + d] - W[c];
            mx = max(mx, c + d);
        }
    }
    if (bad) s_bad = 1;  // benign race: every writer stores 1
    red_de[tid] = de; red_mx[tid] = mx;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            red_de[tid] += red_de[tid + s];
            red_mx[tid] = max(red_mx[tid], red_mx[tid + s]);
        }
        __syncthreads();
    }
    if (tid == 0) {
        out_v[j] = v; out_x[j] = nx; out_y[j] = ny;
        out_de[j] = red_de[0]; out_max[j] = red_mx[0]; out_ok[j] = !s_bad;
    }
}

// Metropolis selection: the first candidate (in index order) that is valid, keeps every
// count <= k + slack (best k + slack when slack_best), and passes the Metropolis test is chosen. This equals sequential
// annealing where rejected candidates leave the state unchanged.
// The number of candidates per iteration adapts (same rule as solver.py): doubled (up to
// the maximum batch B) when none was accepted, halved (down to bmin) when the accepted one
// lies in the first quarter. Rejected candidates never change the state, so this only moves
// iteration boundaries.
__global__ void lcn_select(const i64* ip, const double* dp, int B, int bmin, i64* st, const i64* de,
                           const int* mx, const int* ok) {
    // one warp: lane l tests candidates l, l+32, ...; the first accepted index (in index
    // order) and the number of non-trivial candidates up to it are those of the sequential loop
    if (blockIdx.x != 0 || threadIdx.x >= 32) return;
    const int lane = threadIdx.x;
    const LcnParams P = lcn_params(ip, dp);
    u64 it = (u64)st[ST_IT];
    u64 q = it % (u64)P.cycle;
    double peak = P.t0 * fmax(pow(P.reheat, (double)(it / (u64)P.cycle)), P.t_floor);
    double T = peak * pow(P.t1 / P.t0, (double)q / (double)P.cycle);
    i64 k = st[ST_K];
    const i64 kb = P.slack_best ? min(k, st[ST_BEST_K]) : k;  // bound reference (best k <= k)
    int chosen = -1;
    i64 evals = 0;
    i64 beff = st[ST_BEFF];
    for (i64 base = 0; base < beff; base += 32) {
        const i64 j = base + lane;
        bool in = j < beff, acc = false;
        const int o = in ? ok[j] : -1;
        if (o == 1 && (i64)mx[j] <= kb + P.slack) {
            i64 d = de[j];
            acc = d <= 0 || lcn_unit(lcn_hash(P.seed, it, (u64)j, 13)) < exp(-(double)d / T);
        }
        const unsigned a = __ballot_sync(0xffffffffu, acc);
        const unsigned nt = __ballot_sync(0xffffffffu, o >= 0);  // non-trivial: evaluated
        if (a) {
            const int first = __ffs(a) - 1;
            const unsigned upto = (first == 31) ? 0xffffffffu : ((2u << first) - 1u);
            evals += __popc(nt & upto);
            chosen = (int)(base + first);
            break;
        }
        evals += __popc(nt);
    }
    if (lane != 0) return;
    st[ST_CHOSEN] = chosen;
    st[ST_EVALS] += evals;
    if (chosen < 0) beff = min((i64)B, 2 * beff);
    else if (4 * (i64)chosen < beff) beff = max((i64)bmin, beff / 2);
    st[ST_BEFF] = beff;
    if (chosen >= 0) st[ST_ACCEPTED] += 1;
}

// Apply the chosen move to the counts of non-incident edges (grid over edges).
__global__ void lcn_apply(const i64* ip, const double* dp, i64* st, const i64* __restrict__ x, const i64* __restrict__ y,
                          const int* __restrict__ eu, const int* __restrict__ ev,
                          const int* __restrict__ off, const int* __restrict__ inc,
                          int* cnt, int* hist, int* dinc,
                          const int* out_v, const i64* out_x, const i64* out_y) {
    int chosen = (int)st[ST_CHOSEN];
    if (chosen < 0) return;
    const LcnParams P = lcn_params(ip, dp);
    int f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= P.m) return;
    int v = out_v[chosen];
    i64 nx = out_x[chosen], ny = out_y[chosen], vx = x[v], vy = y[v];
    int a = eu[f], b = ev[f];
    if (a == v || b == v) return;
    i64 ax = x[a], ay = y[a], bx = x[b], by = y[b];
    int d = 0, o = off[v], deg = off[v + 1] - o;
    for (int i = 0; i < deg; ++i) {
        int e = inc[o + i];
        int u = (eu[e] == v) ? ev[e] : eu[e];
        if (u == a || u == b) continue;
        i64 ux = x[u], uy = y[u];
        int dd = lcn_seg_x(nx, ny, ux, uy, ax, ay, bx, by) - lcn_seg_x(vx, vy, ux, uy, ax, ay, bx, by);
        if (dd) { d += dd; atomicAdd(&dinc[i], dd); }
    }
    if (d) {
        int c = cnt[f];
        cnt[f] = c + d;
        atomicSub(&hist[c], 1);
        atomicAdd(&hist[c + d], 1);
        atomicAdd((u64*)&st[ST_DSUM], (u64)(i64)d);
    }
}

// Finish the move (incident edges, coordinates), update k and the best objective.
__global__ void lcn_finalize(i64* st, i64* x, i64* y,
                             const int* __restrict__ eu, const int* __restrict__ ev,
                             const int* __restrict__ off, const int* __restrict__ inc,
                             int* cnt, int* hist, int* dinc,
                             const int* out_v, const i64* out_x, const i64* out_y, const int* out_max) {
    int chosen = (int)st[ST_CHOSEN];
    int tid = threadIdx.x;
    if (chosen >= 0) {
        int v = out_v[chosen];
        int o = off[v], deg = off[v + 1] - o;
        for (int i = tid; i < deg; i += blockDim.x) {
            int d = dinc[i];
            if (d) {
                int e = inc[o + i];
                int c = cnt[e];
                cnt[e] = c + d;
                atomicSub(&hist[c], 1);
                atomicAdd(&hist[c + d], 1);
                dinc[i] = 0;
            }
        }
        __syncthreads();
        if (tid == 0) {
            x[v] = out_x[chosen];
            y[v] = out_y[chosen];
            st[ST_SUMC] += 2 * st[ST_DSUM];
            st[ST_DSUM] = 0;
            i64 k = max(st[ST_K], (i64)out_max[chosen]);
            while (k > 0 && hist[k] == 0) --k;
            st[ST_K] = k;
            i64 at = hist[k], tot = st[ST_SUMC] / 2;
            int better = (k < st[ST_BEST_K]) || (k == st[ST_BEST_K] && (at < st[ST_BEST_AT] ||
                         (at == st[ST_BEST_AT] && tot < st[ST_BEST_TOT])));
            if (better) { st[ST_BEST_K] = k; st[ST_BEST_AT] = at; st[ST_BEST_TOT] = tot; }
            st[ST_IMPROVED] = better;
        }
    } else if (tid == 0) {
        st[ST_IMPROVED] = 0;
    }
    if (tid == 0) st[ST_IT] += 1;
}

__global__ void lcn_save_best(const i64* st, int n, const i64* x, const i64* y, i64* bx, i64* by) {
    if (!st[ST_IMPROVED]) return;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { bx[i] = x[i]; by[i] = y[i]; }
}

}  // extern "C"

"""Same-run A/B timings of the planner and residue kernel variants (issue #8, NOTES.md).

For each n: CUDA-event medians (--reps, interleaved rounds so that clock drift hits every
variant alike) of
  * row statistics of A: three streaming kernels vs one block per row, float64 and float32;
  * the planner's scalar kernel: v2 (integer significand compares; unrolled 1 and 4) against an
    older source given with --v1 (e.g. git show 5e3e14d:ozgemm/kernels/cuda/stats.cu);
  * residues of float32 A: read as float32 vs widened to float64 first (widen + float64 kernel);
  * whole fp64 / fp32 matmul calls (INT8 GEMMs in row chunks, and whole) and native DGEMM/SGEMM;
  * section crt (--crt-old DIR): residues of A and the fused reconstruction of the fp64 and fp32
    plans, shipped kernels vs older full sources DIR/k{N}.cu; the reconstruction's "new" is
    CudaEngine.reconstruct_round, "old" the older kernel with the same launch geometry (session
    8 also timed 2 and 4 columns per thread: NOTES.md, GPU v5).
Every variant's output is compared with the shipped one (identical bytes) before timing.
Usage: python3 benchmarks/gpu_ab.py --sizes 4096 8192 16384 [--v1 benchmarks/_stats_v1.cu] [--json F]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import ozgemm  # noqa: E402
from ozgemm._xp import as_float64  # noqa: E402
from ozgemm.kernels import cuda as kc  # noqa: E402
from ozgemm.kernels import get_engine  # noqa: E402
from ozgemm.kernels.cuda_bench import _event_seconds, _inputs  # noqa: E402


def event_ms(fn):
    return 1e3 * _event_seconds(fn)


def interleaved(variants: dict, reps: int) -> dict:
    for f in variants.values():  # warm-up (compilation)
        f()
    cp.cuda.Device().synchronize()
    ts = {k: [] for k in variants}
    for _ in range(reps):
        for k, f in variants.items():
            ts[k].append(event_ms(f))
    return {k: statistics.median(v) for k, v in ts.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192, 16384])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--v1", default=None, help="an older stats.cu whose plan_scalars_i32 is timed too (one from "
                    "before session 8: one column per thread, no vec argument, e.g. benchmarks/_ab_s8/stats.cu)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", default="stats,scalars,residues,calls", help="comma-separated sections")
    ap.add_argument("--crt-old", default=None, help="section crt: a folder of older full kernel sources "
                    "k{N}.cu (cuda_src.kernel_source(N) of an older commit) timed against the shipped ones")
    args = ap.parse_args()
    only = set(args.only.split(","))
    eng = get_engine("cuda")
    out = []
    for n in args.sizes:
        a, b = _inputs(n, 0.5, 0, cp.float64)
        a32, b32 = a.astype(cp.float32), b.astype(cp.float32)
        rec = {"n": n}
        fields = ("E", "width", "norm1", "q", "zero_row", "n1_int", "n2_int", "qsum")

        def stats_with(x, split):
            old_split = kc._STATS_SPLIT
            kc._STATS_SPLIT = split
            try:
                return eng.row_stats(x)
            finally:
                kc._STATS_SPLIT = old_split

        for x, nm in (((a, "f64"), (a32, "f32")) if "stats" in only else ()):
            # block: one block per row (float64 rows <= 8192 register-cached, else read twice)
            vs = {"split": lambda: stats_with(x, True), "block": lambda: stats_with(x, False)}
            s0 = vs["split"]()
            rec[f"stats_{nm}_identical"] = all(all(bool(cp.array_equal(getattr(s0, f), getattr(f2(), f)))
                                                   for f in fields) for f2 in vs.values())
            for kk, v in interleaved(vs, args.reps).items():
                rec[f"stats_{nm}_{kk.replace(' ', '_')}_ms"] = v
        # planner scalars
        sa, sb = eng.row_stats(a), eng.row_stats(kc._rows_contiguous(b.T))
        lb = eng.gemm_exact(sa.q, sb.q)
        want = eng.plan_scalars(sa, sb, lb, 53, n, 2.0 ** -53, cp).get()
        if "scalars" in only and n <= 4096:  # the numpy planner's scalars as the reference (host copies)
            from ozgemm.precision.planner import plan_scalars
            from ozgemm.precision.stats import RowStats

            def host(st):
                return RowStats(**{f: (cp.asnumpy(getattr(st, f)) if isinstance(getattr(st, f), cp.ndarray) else
                                       getattr(st, f)) for f in RowStats.__dataclass_fields__})

            sa_np, sb_np = host(sa), host(sb)

        def scal(mod, name="plan_scalars_i32"):
            m, nn = lb.shape
            o = cp.zeros((6,), dtype=cp.uint64)
            o[0] = 1
            grid, block = kc._grid2d(nn, m)
            grid = (grid[0], min(grid[1], max(1, 8192 // grid[0])))
            mod.get_function(name)(grid, block, (
                lb, np.int64(lb.strides[0] // lb.itemsize), np.int32(m), np.int32(nn), sa.width, sb.width,
                sa.norm1, sb.norm1, np.int32(53), np.float64(n * 2.0 ** -52),
                np.float64((1.0 + 2.0 ** -53) * (1.0 + 2.0 ** -40)), sa.qsum, sb.qsum, sa.n1_int, sb.n1_int,
                sa.n2_int, sb.n2_int, o))
            return o

        variants = {}
        if "scalars" in only:
            # shipped: the engine's own launch (v3: four columns per thread); --v1: an older
            # stats.cu launched with the one-column geometry above (e.g. benchmarks/_ab_s8/stats.cu)
            variants = {"shipped": lambda: eng.plan_scalars(sa, sb, lb, 53, n, 2.0 ** -53, cp)}
            if args.v1:
                v1 = cp.RawModule(code=open(args.v1).read(), options=("-std=c++17",))
                variants["v1"] = lambda: scal(v1)
        for k, f in variants.items():
            rec[f"scalars_{k}_identical"] = bool(np.array_equal(f().view(cp.int64).get(), want)) and (
                n > 4096 or bool(np.array_equal(want, plan_scalars(sa_np, sb_np, lb.get(), 53, n, 2.0 ** -53, np))))
        for k, v in (interleaved(variants, args.reps).items() if variants else ()):
            rec[f"scalars_{k}_ms"] = v
        if "residues" in only:
            # residues of float32 A: direct vs widen + float64 kernel (9 moduli, the fp32 plan's count)
            p = ozgemm.plan(a32, b32, "fp32")
            N, kp = p.n_moduli, kc._ceil(n, kc._PAD)
            r1 = eng.residues_padded(a32, p.s, N, kp, kp)
            r2 = eng.residues_padded(as_float64(a32), p.s, N, kp, kp)
            rec["residues_f32_identical"] = bool(cp.array_equal(r1, r2))
            del r1, r2
            t = interleaved({"direct": lambda: eng.residues_padded(a32, p.s, N, kp, kp),
                             "widen+f64": lambda: eng.residues_padded(as_float64(a32), p.s, N, kp, kp),
                             "widen only": lambda: as_float64(a32)}, args.reps)
            rec.update({f"residues_f32_{k}_ms": v for k, v in t.items()})
        if "crt" in only and args.crt_old:
            for c, x, y in (("fp64", a, b), ("fp32", a32, b32)):
                p = ozgemm.plan(x, y, c)
                N, kp = p.n_moduli, kc._ceil(n, kc._PAD)
                src = open(os.path.join(args.crt_old, f"k{N}.cu")).read()
                old = cp.RawModule(code=src.replace("__device__ __constant__ const", "__device__ const"),
                                   options=("-std=c++17",))
                new = kc._module(N)
                rname = "scaled_residues_f32" if x.dtype == cp.float32 else "scaled_residues"
                tab = kc._pow2_table(N)
                grid, block = kc._grid2d(kp // kc._RES_PER_THREAD, kp)
                shift = cp.ascontiguousarray(p.s, dtype=cp.int64)

                def res(mod):
                    o = cp.empty((N, kp, kp), dtype=cp.int8)
                    mod.get_function(rname)(grid, block, (x, np.int64(n), shift, np.int32(n), np.int32(n), np.int32(kp),
                                                          np.int32(kp), tab, np.int32(tab.shape[1]), np.int32(1), o))
                    return o

                ra = res(new)
                rec[f"crt_{c}_residues_identical"] = bool(cp.array_equal(ra, res(old)))
                for kk, v in interleaved({"new": lambda: res(new), "old": lambda: res(old)}, args.reps).items():
                    rec[f"crt_{c}_residues_{kk}_ms"] = v
                rb = eng.residues_padded(kc._rows_contiguous(y.T), p.t, N, kp, kp)
                prod = eng._gemm_exact_padded(ra, rb)
                del ra, rb
                fname = "crt_round_f64" if x.dtype == cp.float64 else "crt_round_f32"
                tt = cp.ascontiguousarray(p.t, dtype=cp.int64)

                def rnd_new():  # the engine's own launch
                    return eng.reconstruct_round(prod[:, :n, :], shift, tt, N, p.contract.fmt)

                def rnd_old():  # the older sources: one column per thread, the same launch geometry
                    o = cp.empty((n, n), dtype=x.dtype)
                    g2, b2 = kc._grid2d(n, n)
                    old.get_function(fname)(g2, b2, (prod, np.int64(kp), np.int64(kp * kp), shift, tt, np.int32(n),
                                                     np.int32(n), o, np.int64(n)))
                    return o

                rv = {"new": rnd_new, "old": rnd_old}
                r0 = rnd_new()
                rec[f"crt_{c}_round_identical"] = bool(cp.array_equal(r0, ozgemm.matmul(x, y, contract=c))) and all(
                    bool(cp.array_equal(r0, f())) for f in rv.values())
                del r0
                for kk, v in interleaved(rv, args.reps).items():
                    rec[f"crt_{c}_round_{kk}_ms"] = v
                del prod
                cp.get_default_memory_pool().free_all_blocks()
        if "calls" in only:
            def whole(contract, x, y):  # INT8 GEMMs as one cuBLAS call each (before GPU v4)
                old = kc._GEMM_SPLIT_OUT
                kc._GEMM_SPLIT_OUT = 1 << 62
                try:
                    return ozgemm.matmul(x, y, contract=contract)
                finally:
                    kc._GEMM_SPLIT_OUT = old

            def tiles(contract, x, y, nt):  # row tiles overlapped on side streams (GPU v5): nt = 1 off
                old = kc._OVERLAP_TILES
                kc._OVERLAP_TILES = nt
                try:
                    return ozgemm.matmul(x, y, contract=contract)
                finally:
                    kc._OVERLAP_TILES = old

            for c, x, y in (("fp64", a, b), ("fp32", a32, b32)):
                ref = tiles(c, x, y, 1)
                rec[f"{c}_chunked_identical"] = bool(cp.array_equal(ref, whole(c, x, y)))
                rec[f"{c}_overlap_identical"] = all(bool(cp.array_equal(ref, tiles(c, x, y, nt))) for nt in (2, 4))
            t = interleaved({"fp64": lambda: ozgemm.matmul(a, b, contract="fp64"),
                             "fp64_tiles1": lambda: tiles("fp64", a, b, 1),
                             "fp64_tiles2": lambda: tiles("fp64", a, b, 2),
                             "fp64_tiles4": lambda: tiles("fp64", a, b, 4),
                             "dgemm": lambda: cp.matmul(a, b),
                             "fp32_tiles1": lambda: tiles("fp32", a32, b32, 1),
                             "fp32_tiles2": lambda: tiles("fp32", a32, b32, 2),
                             "fp32_tiles4": lambda: tiles("fp32", a32, b32, 4),
                             "sgemm": lambda: cp.matmul(a32, b32)}, max(5, args.reps // 2))
            rec.update({f"call_{k}_ms": v for k, v in t.items()})
        out.append(rec)
        print(json.dumps(rec), flush=True)
        del a, b, a32, b32, sa, sb, lb
        cp.get_default_memory_pool().free_all_blocks()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    keys = [k for k in out[0] if k.endswith("_ms")]
    print("\n| quantity (ms, median) | " + " | ".join(f"n = {r['n']}" for r in out) + " |")
    print("|---|" + "---|" * len(out))
    for k in keys:
        print(f"| {k[:-3]} | " + " | ".join(f"{r[k]:.3f}" for r in out) + " |")
    print("identical:", {k: all(r[k] for r in out) for k in out[0] if k.endswith("identical")})


if __name__ == "__main__":
    main()

"""Phase-by-phase timing of the non-GEMM work of one fp64 product on the GPU (NOTES.md, GPU v2).

Times each step of ``ozgemm.matmul`` separately with CUDA events (median of --reps after a
warm-up that compiles the kernels), for the current kernels and, where a directory of older
kernel sources is given (--v1 DIR holding crt.cu and stats.cu, e.g. the files of commit
51db71c: ``git show 51db71c:ozgemm/kernels/cuda/crt.cu``), for those too, side by side on the
same inputs; it also checks that old and new kernels give identical bytes at full size.

Input: A, B = (rand - 0.5) exp(phi randn), cupy RandomState(seed), square n, float64.
Usage: python3 benchmarks/gpu_overhead.py [--n 16384] [--phi 0.5] [--v1 benchmarks/_v1] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import ozgemm  # noqa: E402
from ozgemm.crt.moduli import garner_constants  # noqa: E402
from ozgemm.kernels import get_engine  # noqa: E402
from ozgemm.kernels import cuda as kc  # noqa: E402
from ozgemm.precision.contract import as_contract  # noqa: E402
from ozgemm.precision.planner import make_plan  # noqa: E402
from ozgemm.precision.specials import split_nonfinite  # noqa: E402


def timed(fn, reps):
    """Median CUDA-event time of ``fn`` in milliseconds (ozgemm.kernels.cuda_bench._time)."""
    from ozgemm.kernels.cuda_bench import _time

    return _time(fn, reps) * 1e3


def v1_modules(d, n):
    gc = garner_constants(n)
    hdr = "\n".join([
        f"#define NMOD {n}", f"#define NLIMB {gc.limbs}",
        "__device__ const int MOD[NMOD] = {" + ", ".join(map(str, gc.moduli)) + "};",
        "__device__ const int INV[NMOD] = {" + ", ".join(str(int(v)) for v in gc.inv) + "};",
        "__device__ const int W[NMOD][NMOD] = {" + ", ".join(
            "{" + ", ".join(str(int(v)) for v in row) + "}" for row in gc.w) + "};",
        "__device__ const unsigned int MLIMB[NLIMB] = {" + ", ".join(f"{int(v)}u" for v in gc.M_limbs) + "};",
        "__device__ const int P31[NMOD] = {" + ", ".join(str((1 << 31) % m) for m in gc.moduli) + "};"]) + "\n"
    crt = cp.RawModule(code=hdr + open(os.path.join(d, "crt.cu")).read(), options=("-std=c++17",))
    st = cp.RawModule(code=open(os.path.join(d, "stats.cu")).read(), options=("-std=c++17",))
    return crt, st


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--phi", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--v1", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--defines", nargs="*", default=[], help="crt.cu variants to time, e.g. MY_FLAG,OTHER")
    args = ap.parse_args()
    n, reps = args.n, args.reps
    rs = cp.random.RandomState(args.seed)
    a = (rs.random_sample((n, n)) - 0.5) * cp.exp(args.phi * rs.standard_normal((n, n)))
    b = (rs.random_sample((n, n)) - 0.5) * cp.exp(args.phi * rs.standard_normal((n, n)))
    contract = as_contract("fp64")
    eng = get_engine("cuda")
    res = {}

    def rec(name, ms):
        res[name] = ms
        print(f"  {name:34s} {ms:9.3f} ms", flush=True)

    # whole call and native
    rec("matmul (whole call)", timed(lambda: ozgemm.matmul(a, b, contract=contract), reps))
    rec("native DGEMM", timed(lambda: cp.matmul(a, b), reps))
    # specials
    rec("split_nonfinite (v2 fused)", timed(lambda: split_nonfinite(a, b, contract, cp), reps))

    def old_split():
        fa, fb = cp.isfinite(a), cp.isfinite(b)
        br, bc = ~fa.all(axis=1), ~fb.all(axis=0)
        return int(br.sum()), int(bc.sum())

    rec("split_nonfinite (v1: isfinite/all/2 reads)", timed(old_split, reps))
    # planning pieces
    rec("make_plan (v2)", timed(lambda: make_plan(contract, a, b, eng), reps))
    rec("row_stats A (v2)", timed(lambda: eng.row_stats(a), reps))
    rec("B^T copy (v2 tiled transpose; float64 B is read in place since GPU v7)", timed(lambda: kc._rows_contiguous(b.T), reps))
    rec("B^T copy (v1 ascontiguousarray)", timed(lambda: cp.ascontiguousarray(b.T), reps))
    bt = kc._rows_contiguous(b.T)
    assert cp.array_equal(bt, cp.ascontiguousarray(b.T))
    sa, sb = eng.row_stats(a), eng.row_stats(bt)
    rec("bound GEMM (int32 out)", timed(lambda: eng.gemm_exact(sa.q, sb.q), reps))
    lb = eng.gemm_exact(sa.q, sb.q)
    rec("bound GEMM int64 copy (v1 only)", timed(lambda: lb.astype(cp.int64), reps))
    rec("width kernel (v2, int32)", timed(lambda: eng.required_beta(sa, sb, lb, 53, n, 2.0**-53, cp), reps))
    p = make_plan(contract, a, b, eng)
    N = p.n_moduli
    res["moduli"], res["beta"] = N, p.beta
    print(f"  plan: {N} moduli, beta {p.beta}")
    kp = np_ = mp = kc._ceil(n, kc._PAD)
    rec("residues A (v2)", timed(lambda: eng.residues_padded(a, p.s, N, mp, kp), reps))
    rec("residues B (v2; float64: the column kernel since GPU v7)", timed(lambda: eng.residues_padded(sb.src, p.t, N, np_, kp), reps))
    ra = eng.residues_padded(a, p.s, N, mp, kp)
    rb = eng.residues_padded(sb.src, p.t, N, np_, kp)
    c = cp.empty((N, mp, np_), dtype=cp.int32)
    rec(f"GEMMs ({N} x int8)", timed(lambda: eng._gemm_batched_i32(ra, rb, c), reps))
    res["gemm_tops"] = N * 2 * n**3 / (res[f"GEMMs ({N} x int8)"] / 1e3) / 1e12
    out = cp.empty((n, n), dtype=cp.float64)
    rec("reconstruction (v2)", timed(lambda: eng.reconstruct_round(c, p.s, p.t, N, contract.fmt, out=out), reps))
    c_v2 = eng.reconstruct_round(c, p.s, p.t, N, contract.fmt).copy()
    # kernel variants compiled with extra -D defines (--defines): same inputs, same checks
    for dset in args.defines:
        orig = kc._module
        kc._module = lambda n_, defines=(), dset=dset: orig(n_, tuple(dset.split(",")))
        kc._fn_on.cache_clear()  # kernel functions are cached per (name, moduli, device)
        try:
            rec(f"residues A ({dset})", timed(lambda: eng.residues_padded(a, p.s, N, mp, kp), reps))
            res[f"{dset}_residues_identical"] = bool(cp.array_equal(eng.residues_padded(a, p.s, N, mp, kp), ra))
            rec(f"reconstruction ({dset})",
                timed(lambda: eng.reconstruct_round(c, p.s, p.t, N, contract.fmt, out=out), reps))
            res[f"{dset}_reconstruction_identical"] = bool(cp.array_equal(
                eng.reconstruct_round(c, p.s, p.t, N, contract.fmt).view(cp.uint64), c_v2.view(cp.uint64)))
        finally:
            kc._module = orig
            kc._fn_on.cache_clear()

    if args.v1:
        crt1, st1 = v1_modules(args.v1, N)
        sh_a = cp.ascontiguousarray(p.s, dtype=cp.int64)
        sh_b = cp.ascontiguousarray(p.t, dtype=cp.int64)
        tab = kc._pow2_table(N)

        def res_v1(x, sh):
            o = cp.empty((N, mp, kp), dtype=cp.int8)
            total4 = mp * kp // 4
            crt1.get_function("scaled_residues")(((total4 + 255) // 256,), (256,),
                                                 (x, np.int64(n), sh, np.int32(n), np.int32(n), np.int32(mp),
                                                  np.int32(kp), tab, np.int32(tab.shape[1]), o))
            return o

        rec("residues A (v1)", timed(lambda: res_v1(a, sh_a), reps))
        rec("residues B (v1)", timed(lambda: res_v1(sb.src, sh_b), reps))
        res["residues_identical"] = bool(cp.array_equal(res_v1(a, sh_a), ra)) and bool(
            cp.array_equal(res_v1(sb.src, sh_b), rb))
        del ra, rb

        def rec_v1():
            o = cp.empty((n, n), dtype=cp.float64)
            crt1.get_function("crt_round_f64")((((n * n) + 255) // 256,), (256,),
                                               (c, np.int64(np_), np.int64(mp * np_), sh_a, sh_b, np.int32(n),
                                                np.int32(n), o, np.int64(n)))
            return o

        rec("reconstruction (v1)", timed(rec_v1, reps))
        res["reconstruction_identical"] = bool(cp.array_equal(rec_v1().view(cp.uint64), c_v2.view(cp.uint64)))

        def stats_v1(x):
            r, k = x.shape
            E = cp.zeros((r,), cp.int64); w = cp.zeros((r,), cp.int64); nm = cp.zeros((r,), cp.float64)
            z = cp.ones((r,), cp.bool_); q = cp.zeros((r, k), cp.int8)
            n1 = cp.zeros((r,), cp.int64); n2 = cp.zeros((r,), cp.int64)
            st1.get_function("row_stats")((r,), (256,), (x, np.int64(k), np.int32(r), np.int32(k), E, w, nm, z,
                                                          n1, n2, q, np.int64(k), np.int32(k)))
            return E, w, nm, z, n1, n2, q

        rec("row_stats A (v1)", timed(lambda: stats_v1(a), reps))
        s1 = stats_v1(a)
        res["row_stats_identical"] = all(bool(cp.array_equal(u, v)) for u, v in zip(
            s1, (sa.E, sa.width, sa.norm1, sa.zero_row, sa.n1_int, sa.n2_int, sa.q)))
        lb64 = lb.astype(cp.int64)

        def rb_v1():
            out1 = cp.ones((1,), dtype=cp.uint64)
            fac = (1.0 + 2.0**-53) * (1.0 + 2.0 ** -40)
            st1.get_function("required_beta")((((n * n) + 255) // 256,), (256,),
                                              (lb64, np.int64(n), np.int32(n), np.int32(n), sa.width, sb.width,
                                               sa.norm1, sb.norm1, np.int32(53), np.float64(n * 2.0 ** (1 - 53)),
                                               np.float64(fac), out1))
            return out1

        rec("width kernel (v1, int64)", timed(rb_v1, reps))
        res["width_identical"] = int(rb_v1()[0]) == int(eng.required_beta(sa, sb, lb, 53, n, 2.0**-53, cp))
        print("  identical (v1 vs v2):", {k: v for k, v in res.items() if k.endswith("identical")})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()

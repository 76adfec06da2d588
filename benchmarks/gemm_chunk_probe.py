"""Probe: does splitting one INT8 TN GEMM into column/row chunks change its throughput?

The engine issues one cuBLAS int8->int32 TN GEMM per modulus over the whole m x n output.
This probe times, in one process and interleaved rounds, a sequence of ``--reps`` GEMMs of
the same shape (as the moduli loop issues them) done whole, or split into chunks of the
rows of A (``m``) or of B^T (``n``). Prints TOPS = 2 m n k / time (medians of the rounds).

Usage (device): python benchmarks/gemm_chunk_probe.py [--sizes 8192 16384] [--reps 17]
"""
import argparse

import cupy as cp
import numpy as np

from ozgemm.kernels.cuda import CudaEngine, _CUBLAS_COMPUTE_32I, _CUDA_R_32I, _CUDA_R_8I, _GEMM_DEFAULT, _OP_N, _OP_T


def gemm(eng, a, bt, c, ms, ns):
    """c = a @ bt.T by chunks: rows of a in chunks of ms, rows of bt in chunks of ns."""
    mp, kb = a.shape
    np_ = bt.shape[0]
    handle = cp.cuda.device.get_cublas_handle()
    one = np.array(1, dtype=np.int32)
    zero = np.array(0, dtype=np.int32)
    for r0 in range(0, mp, ms):
        r1 = min(mp, r0 + ms)
        for j0 in range(0, np_, ns):
            j1 = min(np_, j0 + ns)
            eng._cublas.gemmStridedBatchedEx(
                handle, _OP_T, _OP_N, j1 - j0, r1 - r0, kb,
                one.ctypes.data, bt.data.ptr + j0 * kb, _CUDA_R_8I, kb, 0,
                a.data.ptr + r0 * kb, _CUDA_R_8I, kb, 0,
                zero.ctypes.data, c.data.ptr + (r0 * np_ + j0) * 4, _CUDA_R_32I, np_, 0,
                1, _CUBLAS_COMPUTE_32I, _GEMM_DEFAULT)


def interleaved_ms(variants, run, rounds, reps):
    """Per variant, the ms per call of ``reps`` back-to-back calls ``run(v, q)`` (q = 0..reps-1,
    after a warm-up call ``run(v, 0)``), timed with CUDA events once per round, the variants
    interleaved within each round: {variant: numpy array of ``rounds`` figures}."""
    times = {v: [] for v in variants}
    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(rounds):
        for v in variants:
            run(v, 0)  # warm-up of this variant
            ev0.record()
            for q in range(reps):
                run(v, q)
            ev1.record()
            ev1.synchronize()
            times[v].append(cp.cuda.get_elapsed_time(ev0, ev1) / reps)
    return {v: np.array(t) for v, t in times.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192, 16384])
    ap.add_argument("--reps", type=int, default=17)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    eng = CudaEngine()
    print("| n | split | chunks | TOPS (median) | min..max | ms per GEMM |")
    print("|---|---|---|---|---|---|")
    for n in args.sizes:
        nb = 2
        a = [cp.random.randint(-128, 128, size=(n, n), dtype=cp.int8) for _ in range(nb)]
        b = [cp.random.randint(-128, 128, size=(n, n), dtype=cp.int8) for _ in range(nb)]
        c = cp.empty((n, n), dtype=cp.int32)
        ref = cp.empty((n, n), dtype=cp.int32)
        variants = [("whole", n, n)]
        for ch in (12288, 8192, 4096, 2048):
            if ch < n:
                variants += [("rows of A", ch, n), ("rows of B^T", n, ch)]
        gemm(eng, a[0], b[0], ref, n, n)
        for name, ms, ns in variants:  # every split gives the same int32 product
            c.fill(0)
            gemm(eng, a[0], b[0], c, ms, ns)
            assert bool((c == ref).all()), (n, name, ms, ns)
        times = interleaved_ms(variants, lambda v, q: gemm(eng, a[q % nb], b[q % nb], c, v[1], v[2]),
                               args.rounds, args.reps)
        for v in variants:
            t = times[v]
            tops = 2.0 * n ** 3 / (t * 1e-3) / 1e12
            chunks = -(-n // v[1]) * -(-n // v[2])
            label = v[0] if v[0] == "whole" else f"{v[0]} by {v[1] if v[0] == 'rows of A' else v[2]}"
            print(f"| {n} | {label} | {chunks} | {np.median(tops):.0f} | {tops.min():.0f}..{tops.max():.0f} "
                  f"| {np.median(t):.3f} |", flush=True)
        del a, b, c, ref
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()

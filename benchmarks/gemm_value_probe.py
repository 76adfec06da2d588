"""Probe: does the INT8 GEMM's hot (power-limited) speed depend on the operand values?

The residue GEMMs run at the H200's power limit (NOTES.md GPU v4, v6). Tensor-core energy per
operation depends on the operands' bit activity, so this probe times, in one process and
interleaved rounds, ``--reps`` back-to-back n x n x n int8 -> int32 TN GEMMs (the engine's
cuBLAS call, ``gemm_chunk_probe.gemm``) on operands drawn from different value distributions.
Prints TOPS = 2 n^3 / time (median over rounds) per distribution.

Usage (device): python benchmarks/gemm_value_probe.py [--sizes 8192] [--reps 17] [--rounds 5]
"""
import argparse
import os
import sys

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from gemm_chunk_probe import gemm, interleaved_ms  # noqa: E402

from ozgemm.kernels.cuda import CudaEngine  # noqa: E402


def operands(kind, n, rs):
    def r(lo, hi):
        return rs.randint(lo, hi, size=(n, n), dtype=cp.int64).astype(cp.int8)
    if kind == "uniform -127..127":
        return r(-127, 128), r(-127, 128)
    if kind == "uniform -63..63":
        return r(-63, 64), r(-63, 64)
    if kind == "uniform -15..15":
        return r(-15, 16), r(-15, 16)
    if kind == "uniform 0..127":
        return r(0, 128), r(0, 128)
    if kind == "A -127..127, B 0..127":
        return r(-127, 128), r(0, 128)
    if kind == "rows sorted along k":  # same values as the first kind, each row of A and B sorted
        a, b = r(-127, 128), r(-127, 128)
        return cp.sort(a, axis=1), cp.sort(b, axis=1)
    if kind == "zeros":
        z = cp.zeros((n, n), dtype=cp.int8)
        return z, z.copy()
    raise ValueError(kind)


KINDS = ["uniform -127..127", "uniform -63..63", "uniform -15..15", "uniform 0..127",
         "A -127..127, B 0..127", "rows sorted along k", "zeros"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[8192])
    ap.add_argument("--reps", type=int, default=17)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    eng = CudaEngine()
    print("| n | operands | TOPS (median) | min..max | ms per GEMM |")
    print("|---|---|---|---|---|")
    for n in args.sizes:
        rs = cp.random.RandomState(0)
        ops = {k: operands(k, n, rs) for k in KINDS}
        c = cp.empty((n, n), dtype=cp.int32)
        times = interleaved_ms(KINDS, lambda k, q: gemm(eng, *ops[k], c, n, n), args.rounds, args.reps)
        for k in KINDS:
            t = times[k]
            tops = 2.0 * n ** 3 / (t * 1e-3) / 1e12
            print(f"| {n} | {k} | {np.median(tops):.0f} | {tops.min():.0f}..{tops.max():.0f} | {np.median(t):.3f} |",
                  flush=True)
        del ops, c
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()

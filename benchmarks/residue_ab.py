"""A/B of the residue kernels' build options (crt.cu RES_FP_SPLIT; NOTES.md GPU v8):
the same ``eng.residues_padded`` calls with the CRT module built with each variant's -D
defines, same process, interleaved rounds, outputs compared byte for byte.

Timed per variant (CUDA events, median over rounds of the per-round median of --reps): the
residues of A's rows (``scaled_residues``) and of B^T read through B's columns
(``scaled_residues_cols``) for a width of 58 bits and 16 moduli, float64 bench inputs.

Usage (device, repo root):
  python3 benchmarks/residue_ab.py --sizes 4096 8192 --variant fp: --variant int:RES_FP_SPLIT=0
"""
import argparse
import statistics

import cupy as cp
import numpy as np

import ozgemm.kernels.cuda as kc
from ozgemm.kernels import get_engine
from ozgemm.kernels.cuda_bench import _inputs

from bside_ab import _ms  # benchmarks/bside_ab.py (this script's folder is on sys.path)

_ORIG_MODULE = kc._module


def _use(defines):
    kc._fn_on.cache_clear()
    kc._module = lambda n, d=(): _ORIG_MODULE(n, tuple(defines) + tuple(d))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--variant", action="append", required=True,
                    help="NAME:DEF1,DEF2 (-D names without -D; empty for the default build)")
    args = ap.parse_args()
    vs = []
    for v in args.variant:
        name, _, defs = v.partition(":")
        vs.append((name, [d.replace("=", " ") for d in defs.split(",") if d]))
    eng = get_engine("cuda")
    beta, N = 58, 16
    print("| n | variant | A rows ms | B columns ms | sum ms |")
    print("|---|---|---|---|---|")
    for n in args.sizes:
        a, b = _inputs(n, 0.5, 0, np.dtype("float64"))
        sa, sb = eng.row_stats(a), eng.row_stats(b.T)
        s = cp.where(sa.zero_row, 0, beta - sa.E)
        t = cp.where(sb.zero_row, 0, beta - sb.E)
        assert sb.src is not None and kc._columns_ld(sb.src) is not None, "B is not read through its columns"
        p = -(-n // 16) * 16
        calls = {"A": lambda: eng.residues_padded(a, s, N, p, p), "B": lambda: eng.residues_padded(sb.src, t, N, p, p)}
        times = {name: {"A": [], "B": []} for name, _ in vs}
        outs = {}
        for r in range(args.rounds):
            for name, defs in (vs if r % 2 == 0 else vs[::-1]):
                _use(defs)
                if r == 0:
                    outs[name] = [cp.asnumpy(calls[x]()).tobytes() for x in "AB"]
                for x in "AB":
                    times[name][x].append(_ms(calls[x], args.reps))
        same = all(outs[name] == outs[vs[0][0]] for name, _ in vs)
        for name, _ in vs:
            ta, tb = (statistics.median(times[name][x]) for x in "AB")
            print(f"| {n} | {name} | {ta:.3f} | {tb:.3f} | {ta + tb:.3f} |")
        print(f"| {n} | identical bytes: {same} | | | |", flush=True)
        del a, b, sa, sb
        cp.get_default_memory_pool().free_all_blocks()
    _use(())


if __name__ == "__main__":
    main()

"""A/B of B's path on the GPU (NOTES.md, GPU v7): statistics + residues of a float64 B^T read
through B's columns (``_READ_COLUMNS = True``) against a transposed copy first (False), same
process, interleaved rounds, outputs compared byte for byte. (float32 B always takes the copy
since GPU v7; call 2's float32 figures came from the removed float32 column kernels.)

Timed per variant (CUDA events, median over rounds of the per-round median of --reps):
``eng.row_stats(b.T)`` (the planner's B statistics, including the transposed copy where it
is made) and ``eng.residues_padded`` of the same rows (execute's B residues) for a width of
58 bits and 16 moduli.

Usage (device, repo root): python3 benchmarks/bside_ab.py --sizes 4096 8192 16384 --rounds 5
"""
import argparse
import statistics

import cupy as cp
import numpy as np

import ozgemm.kernels.cuda as kc
from ozgemm.kernels import get_engine
from ozgemm.kernels.cuda_bench import _event_seconds, _inputs


def _ms(fn, reps):
    """Median milliseconds of ``reps`` calls, each between two CUDA events."""
    return 1e3 * statistics.median(_event_seconds(fn) for _ in range(reps))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--dtypes", nargs="+", default=["float64"],
                    help="float64 only takes the column path (float32 would time the copy twice)")
    args = ap.parse_args()
    eng = get_engine("cuda")
    print("| dtype | n | variant | stats ms | residues ms | sum ms |")
    print("|---|---|---|---|---|---|")
    for dt in args.dtypes:
        beta, N = (58, 16) if dt == "float64" else (31, 9)
        for n in args.sizes:
            _, b = _inputs(n, 0.5, 0, np.dtype(dt))
            bt = b.T
            kp = np_ = -(-n // 16) * 16
            vs = ["transpose", "columns"]
            times = {v: ([], []) for v in vs}
            outs = {}
            for r in range(args.rounds):
                for v in (vs if r % 2 == 0 else vs[::-1]):
                    kc._READ_COLUMNS = v != "transpose"
                    st = eng.row_stats(bt)
                    t = cp.where(st.zero_row, 0, beta - st.E)
                    src = st.src
                    if r == 0:
                        res = eng.residues_padded(src, t, N, np_, kp)
                        outs[v] = [cp.asnumpy(x).tobytes() for x in (st.q, st.n1_int, st.n2_int, st.qsum, st.E,
                                                                      st.width, res)]
                        del res
                    times[v][0].append(_ms(lambda: eng.row_stats(bt), args.reps))
                    times[v][1].append(_ms(lambda: eng.residues_padded(src, t, N, np_, kp), args.reps))
                    del st, src
            same = all(outs[v] == outs["transpose"] for v in vs)
            for v in vs:
                s, rr = statistics.median(times[v][0]), statistics.median(times[v][1])
                print(f"| {dt} | {n} | {v} | {s:.3f} | {rr:.3f} | {s + rr:.3f} |")
            print(f"| {dt} | {n} | identical bytes: {same} | | | |", flush=True)
            del b, bt
            cp.get_default_memory_pool().free_all_blocks()
    kc._READ_COLUMNS = True


if __name__ == "__main__":
    main()

"""Can a memory-bound phase run beside an INT8 GEMM on the H200? (NOTES.md, GPU v6)

Times, interleaved in one process (CUDA events on the current stream, median of --reps):
  gemm      the planner's bound GEMM (int8 q of A times q of B^T, one cuBLAS call)
  res       B's residues for 16 moduli (CudaEngine.residues_multi, the execute() call)
  both      the two launched on two side streams at once (the current stream waits for both)
  serial    the two one after the other on the current stream
If ``both`` is close to max(gemm, res) the residues can hide behind the GEMM; close to
``serial``, they only interleave with it. Inputs: (rand - 0.5) exp(0.5 randn), cupy
RandomState(0), square n.

    python3 benchmarks/overlap_probe.py --sizes 4096 8192
"""
import argparse
import statistics

import cupy as cp

from ozgemm.kernels import get_engine
from ozgemm.kernels import cuda as kc
from ozgemm.kernels.cuda_bench import _event_seconds, _inputs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    eng = get_engine("cuda")
    s1, s2 = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    for n in args.sizes:
        a, b = _inputs(n, 0.5, 0, cp.float64)
        sa, sb = eng.row_stats(a), eng.row_stats(kc._rows_contiguous(b.T))
        bt = sb.src
        t = cp.where(sb.zero_row, 0, 58 - sb.E).astype(cp.int64)
        np_, kp = kc._ceil(n, kc._PAD), kc._ceil(n, kc._PAD)

        def gemm():
            return eng.gemm_exact(sa.q, sb.q)

        def res():
            return eng.residues_multi(bt, t, 16, np_, kp)

        def both():
            cur = cp.cuda.get_current_stream()
            ev = cur.record()
            outs = []
            for st, f in ((s1, gemm), (s2, res)):
                st.wait_event(ev)
                with st:
                    outs.append(f())
            for st in (s1, s2):
                cur.wait_event(st.record())
            return outs

        def serial():
            return gemm(), res()

        fs = {"gemm": gemm, "res": res, "both": both, "serial": serial}
        for f in fs.values():
            f()
        cp.cuda.Device().synchronize()
        ts = {k: [] for k in fs}
        for _ in range(args.reps):
            for k, f in fs.items():
                ts[k].append(1e3 * _event_seconds(f))
        med = {k: statistics.median(v) for k, v in ts.items()}
        hidden = (med["serial"] - med["both"]) / min(med["gemm"], med["res"])
        print(f"n={n}: " + ", ".join(f"{k} {v:.3f} ms" for k, v in med.items())
              + f"; share of the shorter phase hidden: {100 * hidden:.0f} %", flush=True)


if __name__ == "__main__":
    main()

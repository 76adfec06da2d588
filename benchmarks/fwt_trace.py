"""Timeline probe (session 14): where a persistent row kernel's time goes, from global-timer
stamps taken by thread 0 of every CTA at four points of each row (build option
-DOZ_FWT_TRACE=1 of ozgemm/fwt/fwht.cu; the default build has no stamps).

    PYTHONPATH=. [FWT_TRACE_OPTS="-D..."] python3 benchmarks/fwt_trace.py [h15|d15 ...] [--grid G]

Kernels: ``h15`` = fwht_rows_h15<1> (float16 2**15; points: 0 row start, 1 own staged copies
arrived, 2 after the first CTA barrier (all threads' register levels done), 3 before the
stores); ``d15`` = the session-13 float64 2**15 experiment of benchmarks/fwt_d15_kernel.cu
(0 row start, 1 loads and top butterfly done, 2 first half stored, 3 second half stored);
``d15s`` = its "swap" variant (0 row start, 1 x0 in registers, 2 y0 and x1 swapped, 3 y1 done).
256 MiB per array, uniform data in [-0.5, 0.5), "ortho" scale (the benchmark's input), one
warm-up launch, then the traced launch (CUDA events around it).

Printed per kernel: the traced launch's time; the span from the first CTA's first stamp to
the last CTA's last stamp; per phase (point k -> k+1, and 3 -> next row's 0) the median and
90th percentile over the CTAs' middle rows; the first row's wait (pipeline fill); the CTAs'
last-stamp spread (tail); and how aligned the CTAs are: for middle rows, the spread (p10-p90)
of the row-start stamps across CTAs relative to the median row period, and the mean and range
of the number of CTAs in phase 0 -> 1 over the middle of the launch (phase-locked CTAs wait
together). (The global timer's update granularity limits single stamps, not the medians.)
"""
import os
import sys
from pathlib import Path

import cupy as cp
import numpy as np

from ozgemm.fwt import _cuda

KERNELS = {
    # key: (kernel, dtype, smem bytes, extra source file or None)
    "h15": ("fwht_rows_h15<1>", np.float16, _cuda.ROW_DEDICATED[("float16", 15)][1], None),
    "d15": ("fwht_rows_d15<1>", np.float64, ((1 << 14) + (1 << 13)) * 8, "fwt_d15_kernel.cu"),
    "d15s": ("fwht_rows_d15s<1>", np.float64, _cuda.ROW_DEDICATED[("float64", 15)][1], None),
}


def build(key):
    name, _, smem, extra = KERNELS[key]
    src = _cuda._SRC.read_text()
    if extra:
        src += Path(__file__).with_name(extra).read_text()
    opts = ("-std=c++17", "-DOZ_FWT_TRACE=1") + tuple(os.environ.get("FWT_TRACE_OPTS", "").split())
    mod = cp.RawModule(code=src, options=opts, name_expressions=[name])
    mod.compile()
    k = mod.get_function(name)
    k.max_dynamic_shared_size_bytes = smem
    k.preferred_shared_memory_carveout = 100
    return mod, k


def run(key, grid=None):
    name, dt, smem, _ = KERNELS[key]
    mod, k = build(key)
    n = (256 << 20) // np.dtype(dt).itemsize
    x = (cp.random.default_rng(0).random(n, dtype=cp.float32) - 0.5).astype(dt)
    y = cp.empty_like(x)
    rows = n >> 15
    g = min(rows, grid or cp.cuda.Device().attributes["MultiProcessorCount"])
    scale = (np.float32 if dt == np.float16 else np.float64)(2.0 ** -7.5)
    args = _cuda.row_args(name, x, y, 15, scale)
    k((g,), (512,), args, shared_mem=smem)  # warm-up
    tr = cp.ndarray((1 << 16,), cp.uint64, mod.get_global("oz_trace"))
    tr.fill(0)
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    e0.record()
    k((g,), (512,), args, shared_mem=smem)
    e1.record()
    e1.synchronize()
    ms = cp.cuda.get_elapsed_time(e0, e1)
    T = tr.get().reshape(256, 64, 4)[:g].astype(np.int64)
    # rows of CTA b: the rows it stamped (with leftover rows by tickets, which CTAs take the last
    # rows is decided at run time; a stamp is a global-timer value, never 0)
    per = [int((T[b, :, 0] > 0).sum()) for b in range(g)]
    report(key, name, g, rows, ms, T, per)


def report(key, name, g, rows, ms, T, per):
    t0 = min(T[b, 0, 0] for b in range(g))
    T = T - t0
    last = np.array([T[b, per[b] - 1, 3] for b in range(g)])
    print(f"== {key}: {name}, grid {g}, {rows} rows ({min(per)}-{max(per)} per CTA); launch {ms * 1e3:.1f} us "
          f"(events); stamps span {last.max() / 1e3:.1f} us (+ last stores)")
    mid = [(b, i) for b in range(g) for i in range(2, per[b] - 2)]
    ph = {f"{k}->{k + 1}": np.array([T[b, i, k + 1] - T[b, i, k] for b, i in mid]) for k in range(3)}
    ph["3->next 0"] = np.array([T[b, i + 1, 0] - T[b, i, 3] for b, i in mid])
    period = np.array([T[b, i + 1, 0] - T[b, i, 0] for b, i in mid])
    for kk, v in ph.items():
        print(f"  phase {kk:10s} median {np.median(v) / 1e3:6.2f} us  p90 {np.percentile(v, 90) / 1e3:6.2f} us")
    print(f"  row period median {np.median(period) / 1e3:.2f} us, p10-p90 {np.percentile(period, 10) / 1e3:.2f}-"
          f"{np.percentile(period, 90) / 1e3:.2f} us")
    first = np.array([T[b, 0, 1] for b in range(g)])
    print(f"  first row: point 1 reached at median {np.median(first) / 1e3:.2f} us, max {first.max() / 1e3:.2f} us")
    print(f"  CTA last stamps: min {last.min() / 1e3:.1f} us, median {np.median(last) / 1e3:.1f}, max "
          f"{last.max() / 1e3:.1f} (CTAs with {max(per)} rows: {sum(p == max(per) for p in per)})")
    nmin = min(per)
    spreads = [np.percentile(T[:, i, 0], 90) - np.percentile(T[:, i, 0], 10) for i in range(2, nmin - 2)]
    print(f"  row-start spread across CTAs (p10-p90), middle rows: median {np.median(spreads) / 1e3:.2f} us "
          f"= {np.median(spreads) / np.median(period):.2f} row periods")
    lo, hi = np.percentile(last, 10) * 0.2, np.percentile(last, 10) * 0.8
    grid_t = np.linspace(lo, hi, 400)
    waiting = np.zeros_like(grid_t)
    for b in range(g):
        for i in range(per[b]):
            waiting += (grid_t >= T[b, i, 0]) & (grid_t < T[b, i, 1])
    print(f"  CTAs in phase 0->1 over the middle 60 % of the launch: mean {waiting.mean():.1f}, "
          f"p10 {np.percentile(waiting, 10):.0f}, p90 {np.percentile(waiting, 90):.0f} of {g}")


if __name__ == "__main__":
    args = sys.argv[1:]
    grid = None
    if "--grid" in args:
        i = args.index("--grid")
        grid = int(args[i + 1])
        del args[i:i + 2]
    for key in args or ["h15", "d15"]:
        run(key, grid)

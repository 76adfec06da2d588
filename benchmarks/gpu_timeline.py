"""Kernel timeline of whole ``ozgemm.matmul`` calls on the GPU (issue #8 overhead work).

Records every GPU activity of a few calls with the PyTorch profiler (CUPTI sees CuPy's and
cuBLAS's kernels too; torch is only the trace recorder here), and reports per call: the span
from the first to the last GPU activity, the time the GPU was busy, the idle gaps (with the
activities on both sides), and the busy time per kernel family. The whole-call time is also
taken with CUDA events (median of --reps) without the profiler.

Input: (rand - 0.5) exp(phi randn), cupy RandomState(seed), square n; float64 (fp32: float32).
Usage: python3 benchmarks/gpu_timeline.py --sizes 4096 8192 16384 --contracts fp64 fp32 [--json F]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile

import cupy as cp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import ozgemm  # noqa: E402
from ozgemm.kernels.cuda_bench import _time  # noqa: E402

FAMILIES = [  # (label, regex on the kernel name), first match wins
    ("widen f32", r"ozgemm_widen"),
    ("int8 GEMM", r"gemm|xmma|cutlass|imma"),
    ("residues", r"scaled_residues|add_residues"),
    ("reconstruction", r"crt_round"),
    ("row stats", r"row_stats"),
    ("width", r"required_beta"),
    ("nonfinite", r"nonfinite"),
    ("transpose", r"transpose"),
    ("memcpy", r"^Memcpy|memcpy"),
    ("memset", r"^Memset|memset"),
]


def family(name: str) -> str:
    for lab, rx in FAMILIES:
        if re.search(rx, name, re.I):
            return lab
    return "other: " + name[:40]


HOST_RANGES = [  # (module, qualified name): host spans recorded with --host-ranges
    ("ozgemm.api", "_prepare"), ("ozgemm.api", "_plan_2d"), ("ozgemm.api", "_product_2d"),
    ("ozgemm.precision.planner", "make_plan"), ("ozgemm.precision.planner", "_min_moduli_for"),
    ("ozgemm.precision.planner", "_max_beta_for"), ("ozgemm.crt.scheme", "execute"),
    ("ozgemm.kernels.cuda", "CudaEngine.row_stats"), ("ozgemm.kernels.cuda", "CudaEngine.gemm_exact"),
    ("ozgemm.kernels.cuda", "CudaEngine.plan_scalars"), ("ozgemm.kernels.cuda", "CudaEngine.shifts"),
    ("ozgemm.kernels.cuda", "CudaEngine.execute"), ("ozgemm.kernels.cuda", "CudaEngine.residues_multi"),
    ("ozgemm.kernels.cuda", "CudaEngine._gemm_exact_padded"), ("ozgemm.kernels.cuda", "CudaEngine.reconstruct_round"),
    ("ozgemm.kernels.cuda", "_rows_contiguous"), ("cupy", "ndarray.get"),
]


def wrap_host_ranges():
    """Wrap HOST_RANGES in torch.profiler.record_function ranges (named "host:<name>"), so that
    the trace shows where the host's time goes between GPU launches (benchmark only)."""
    import functools
    import importlib

    import torch

    for mod, qual in HOST_RANGES:
        owner = importlib.import_module(mod)
        parts = qual.split(".")
        for p in parts[:-1]:
            owner = getattr(owner, p)
        f = getattr(owner, parts[-1])

        def make(f, label):
            @functools.wraps(f)
            def w(*a, **kw):
                with torch.profiler.record_function("host:" + label):
                    return f(*a, **kw)
            return w

        try:
            setattr(owner, parts[-1], make(f, qual))
        except (TypeError, AttributeError):  # a compiled type (cupy.ndarray): not wrappable
            print(f"(host range {mod}.{qual} not wrapped)")
    # functions imported by name into other modules: rebind there too
    import ozgemm.api as api
    import ozgemm.crt.scheme as scheme
    import ozgemm.precision.planner as planner
    api.make_plan = planner.make_plan
    api.execute = scheme.execute


def trace_calls(fn, ncalls):
    import torch
    from torch.profiler import ProfilerActivity, profile

    cp.cuda.Device().synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(ncalls):
            with torch.profiler.record_function("ozgemm_call"):
                fn()
            cp.cuda.Device().synchronize()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    prof.export_chrome_trace(path)
    with open(path) as f:
        tr = json.load(f)
    os.unlink(path)
    ev = tr["traceEvents"] if isinstance(tr, dict) else tr
    calls = sorted((e for e in ev if e.get("name") == "ozgemm_call" and e.get("ph") == "X"), key=lambda e: e["ts"])
    hosts = sorted((e for e in ev if e.get("ph") == "X" and str(e.get("name", "")).startswith("host:")),
                   key=lambda e: e["ts"])
    for c in calls:
        c["host_ranges"] = [(e["ts"] - c["ts"], e["dur"], e["name"][5:]) for e in hosts
                            if c["ts"] <= e["ts"] <= c["ts"] + c["dur"]]
    gpu = sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")),
                 key=lambda e: e["ts"])
    # host side: the runtime/driver call that issued each GPU activity (same correlation id)
    rt = {e["args"]["correlation"]: e for e in ev if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
          and "correlation" in e.get("args", {})}
    for e in gpu:
        h = rt.get(e.get("args", {}).get("correlation"))
        e["host_ts"] = h["ts"] if h else None
    return calls, gpu


def analyse(call, gpu, next_call_ts):
    acts = [e for e in gpu if call["ts"] <= e["ts"] < next_call_ts]
    if not acts:
        return None
    t0 = acts[0]["ts"]
    t1 = max(e["ts"] + e["dur"] for e in acts)
    busy = 0.0
    fam = {}
    gaps = []
    end = t0
    prev = None
    for e in acts:
        if e["ts"] > end:
            gaps.append((e["ts"] - end, prev["name"][:48] if prev else "-", e["name"][:48]))
        s = max(e["ts"], end)
        if e["ts"] + e["dur"] > s:
            busy += e["ts"] + e["dur"] - s
        end = max(end, e["ts"] + e["dur"])
        fam[family(e["name"])] = fam.get(family(e["name"]), 0.0) + e["dur"]
        prev = e
    listing = [(e["ts"] - t0, e["dur"], None if e.get("host_ts") is None else e["host_ts"] - call["ts"], e["name"][:60])
               for e in acts]
    return {"host_call_us": call["dur"], "launch_lag_us": t0 - call["ts"], "gpu_span_us": t1 - t0, "listing": listing,
            "host_ranges": call.get("host_ranges", []),
            "gpu_busy_us": busy, "n_activities": len(acts), "families_us": fam,
            "gaps_us": sorted(gaps, reverse=True)[:8], "gap_total_us": sum(g[0] for g in gaps)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192, 16384])
    ap.add_argument("--contracts", nargs="+", default=["fp64", "fp32"])
    ap.add_argument("--phi", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", default=None)
    ap.add_argument("--host-ranges", action="store_true", help="also record and print host spans of the "
                    "library's phases (HOST_RANGES), from the call's start, in us")
    ap.add_argument("--list", action="store_true", help="print every GPU activity of the median traced call: "
                    "GPU start and duration, and when the host issued it (from the call's start), in us")
    ap.add_argument("--speculate", choices=["on", "off", "both"], default="on",
                    help="speculative plans (planner._SPECULATE; the library's default is on)")
    args = ap.parse_args()
    from ozgemm.precision import planner

    modes = {"on": [True], "off": [False], "both": [False, True]}[args.speculate]
    if args.host_ranges:
        wrap_host_ranges()
    out = []
    for n in args.sizes:
        rs = cp.random.RandomState(args.seed)
        a64 = (rs.random_sample((n, n)) - 0.5) * cp.exp(args.phi * rs.standard_normal((n, n)))
        b64 = (rs.random_sample((n, n)) - 0.5) * cp.exp(args.phi * rs.standard_normal((n, n)))
        for con, spec in [(c, sp) for c in args.contracts for sp in modes]:
            planner._SPECULATE = spec
            if con == "fp32":
                a, b = a64.astype(cp.float32), b64.astype(cp.float32)
            else:
                a, b = a64, b64
            fn = lambda: ozgemm.matmul(a, b, contract=con)  # noqa: E731
            fn()
            fn()
            whole = _time(fn, args.reps) * 1e3
            native = _time(lambda: cp.matmul(a, b), args.reps) * 1e3
            info = ozgemm.plan(a, b, con).info()
            calls, gpu = trace_calls(fn, 3)
            rows = []
            for i, c in enumerate(calls):
                nxt = calls[i + 1]["ts"] if i + 1 < len(calls) else float("inf")
                r = analyse(c, gpu, nxt)
                if r:
                    rows.append(r)
            r = rows[len(rows) // 2]
            rec = {"n": n, "contract": con, "speculate": spec, "whole_ms": whole, "native_ms": native, "x_native": native / whole,
                   "moduli": info["n_moduli"], "beta": info["beta"], "widened": info["widened"], **r}
            out.append(rec)
            print(f"\n== {con} n={n} speculate={spec}: whole {whole:.3f} ms (events, median of {args.reps}), native {native:.3f} ms, "
                  f"x{native / whole:.3f}; {info['n_moduli']} moduli, beta {info['beta']} ({info['widened']})")
            print(f"   traced call: host {r['host_call_us'] / 1e3:.3f} ms, first GPU activity after "
                  f"{r['launch_lag_us'] / 1e3:.3f} ms, GPU span {r['gpu_span_us'] / 1e3:.3f} ms, busy "
                  f"{r['gpu_busy_us'] / 1e3:.3f} ms, idle gaps {r['gap_total_us'] / 1e3:.3f} ms, "
                  f"{r['n_activities']} activities")
            for k, v in sorted(r["families_us"].items(), key=lambda kv: -kv[1]):
                print(f"     {k:44s} {v / 1e3:9.3f} ms")
            for g, p, q in r["gaps_us"][:5]:
                print(f"     gap {g / 1e3:7.3f} ms  after {p}  before {q}")
            if args.list:
                print("     GPU start us | dur us | host issue us | activity")
                for st, du, hs, nm in r["listing"]:
                    print(f"     {st:10.1f} | {du:8.1f} | {'-' if hs is None else f'{hs:9.1f}'} | {nm}")
            if r["host_ranges"]:
                print("     host span start us | dur us | range")
                for st, du, nm in r["host_ranges"]:
                    print(f"     {st:10.1f} | {du:8.1f} | {nm}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    print("\n| contract | n | whole ms | native ms | x native | GPU busy ms | idle gaps ms | GEMM ms | GEMM share |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in out:
        g = r["families_us"].get("int8 GEMM", 0) / 1e3
        print(f"| {r['contract']} | {r['n']} | {r['whole_ms']:.3f} | {r['native_ms']:.3f} | {r['x_native']:.3f} | "
              f"{r['gpu_busy_us'] / 1e3:.3f} | {r['gap_total_us'] / 1e3:.3f} | {g:.3f} | {g / r['whole_ms']:.1%} |")


if __name__ == "__main__":
    main()

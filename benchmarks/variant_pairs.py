"""Paired GPU processes: engine settings A/B'd in alternating processes (NOTES.md, GPU v6).

Same-process A/Bs of whole calls were inconclusive in session 8 (two runs of identical code
in one process differed by up to 5 %); alternating processes spread the process-to-process
drift over every variant alike.

Each child process sets module attributes of ``ozgemm.kernels.cuda`` (a variant), then per
size: inputs as ``ozgemm bench`` makes them ((rand-0.5)*exp(0.5*randn), cupy RandomState(0),
square n), the whole ``ozgemm.matmul`` call and native ``cupy.matmul`` timed with CUDA events,
median of --reps after a warm-up (the bench's ``_time``), and a SHA-256 of the result bytes so
that the variants can be checked bit-identical.

Usage (device, repo root, after ``source benchmarks/device_env.sh``)::

    python3 benchmarks/variant_pairs.py --sizes 4096 8192 --contract fp64 --rounds 4 \
        --variant base:_STATS_SMEM_MAX=0,_OVERLAP_COL_TILES=1 --variant smem:_OVERLAP_COL_TILES=1
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys


def child(args):
    import cupy as cp

    import ozgemm.kernels.cuda as kc
    from ozgemm import matmul
    from ozgemm.kernels.cuda_bench import _inputs, _time
    from ozgemm.precision.contract import as_contract

    import importlib

    for kv in filter(None, args.settings.split(",")):
        k, v = kv.split("=")
        mod, _, k = k.rpartition(".")  # "attr" of ozgemm.kernels.cuda, or "precision.planner.attr"
        target = importlib.import_module("ozgemm." + mod) if mod else kc
        if not hasattr(target, k):
            raise SystemExit(f"{target.__name__} has no attribute {k}")
        setattr(target, k, int(v))
    contract = as_contract(args.contract)
    for n in args.sizes:
        a, b = _inputs(n, 0.5, 0, contract.fmt.dtype)
        c = matmul(a, b, contract=contract)
        digest = hashlib.sha256(cp.asnumpy(c).tobytes()).hexdigest()[:16]
        t_oz = _time(lambda: matmul(a, b, contract=contract), args.reps)
        t_nat = _time(lambda: cp.matmul(a, b), args.reps)
        print(json.dumps({"n": n, "oz_ms": t_oz * 1e3, "nat_ms": t_nat * 1e3, "ratio": t_nat / t_oz,
                          "sha": digest}), flush=True)


def parent(args):
    variants = [v.split(":", 1) for v in args.variant]
    res = {name: [] for name, _ in variants}
    for r in range(args.rounds):
        for name, settings in (variants if r % 2 == 0 else variants[::-1]):
            p = subprocess.run([sys.executable, __file__, "--child", "--settings", settings, "--contract",
                                args.contract, "--reps", str(args.reps), "--sizes", *map(str, args.sizes)],
                               capture_output=True, text=True, timeout=300)
            if p.returncode:
                print(f"{name} round {r}: rc {p.returncode}\n{p.stderr[-2000:]}", flush=True)
                continue
            recs = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
            res[name].append(recs)
            print(f"round {r} {name:10} " + "  ".join(f"{x['n']}: {x['oz_ms']:.3f} ms {x['ratio']:.3f}x"
                                                     for x in recs), flush=True)
    print(f"\n{args.contract}, median over {args.rounds} processes of (median of {args.reps} whole calls)")
    shas = {}
    for name, runs in res.items():
        line = []
        for i, n in enumerate(args.sizes):
            oz = [run[i]["oz_ms"] for run in runs]
            ra = [run[i]["ratio"] for run in runs]
            shas.setdefault(n, set()).update(run[i]["sha"] for run in runs)
            if oz:
                line.append(f"{n}: {statistics.median(oz):.3f} ms ({min(oz):.3f}-{max(oz):.3f}) "
                            f"{statistics.median(ra):.3f}x ({min(ra):.3f}-{max(ra):.3f})")
        print(f"{name:10} " + "  ".join(line))
    print("bit-identical across variants and rounds:", {n: len(s) == 1 for n, s in shas.items()})
    out = os.environ.get("OUT")
    if out and args.json:
        with open(os.path.join(out, args.json), "w") as f:
            json.dump({"contract": args.contract, "sizes": args.sizes, "variants": dict(variants), "runs": res}, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[8192])
    ap.add_argument("--contract", default="fp64")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME:attr=int,... (attributes of ozgemm.kernels.cuda, or sub.module.attr of ozgemm)")
    ap.add_argument("--json", default=None, help="file name under $OUT for the raw results")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--settings", default="")
    args = ap.parse_args()
    child(args) if args.child else parent(args)


if __name__ == "__main__":
    main()

"""Benchmark ozgemm.fwt on the GPU: effective bandwidth vs a device copy, plus accuracy.

Usage: PYTHONPATH=. python3 benchmarks/fwt_bench.py [--lmin 8 --lmax 22 --mbytes 256 --json out.json]
(as ``ozgemm fwt bench``, plus --variants). See ozgemm/fwt/bench.py for the timing scope and
docs/performance.md for the figures.
"""
import argparse
import sys

from ozgemm.fwt.bench import main

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--dtypes", default="float16,float32,float64")
    p.add_argument("--lmin", type=int, default=8)
    p.add_argument("--lmax", type=int, default=22)
    p.add_argument("--mbytes", type=int, default=256)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--json", default=None)
    p.add_argument("--variants", default="auto", help="comma list: auto,plain,mma")
    a = p.parse_args()
    sys.exit(main(dtypes=a.dtypes.split(","), lmin=a.lmin, lmax=a.lmax, mbytes=a.mbytes,
                  reps=a.reps, json_path=a.json, variants=tuple(a.variants.split(","))))

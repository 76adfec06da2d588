"""k of the start layouts of ozgemm.lcn.layout on the contest instances (CPU).

    python benchmarks/lcn_layouts.py [--instances 1,2,3,4,5,6,7,9] [--seed 1] [--json OUT]

For each instance and method (given, kamada-kawai, spring): layout(d, method, seed) (layout +
snap + repair), then the exact objective (k, edges at k, total) and the wall time."""
import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import networkx  # noqa: E402
import numpy  # noqa: E402
import scipy  # noqa: E402

from lcn_bench import DATA, path  # noqa: E402  (the instances' folder; OZGEMM_LCN_DATA overrides)
from ozgemm import lcn  # noqa: E402
from ozgemm.lcn.layout import layout  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--instances", default="1,2,3,4,5,6,7,9")
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--json", default=None)
a = ap.parse_args()
env = dict(python=platform.python_version(), numpy=numpy.__version__, scipy=scipy.__version__,
           networkx=networkx.__version__, machine=platform.processor() or platform.machine(), cpus=os.cpu_count())
print(env)
rows = []
print("| inst | given k (s) | kamada-kawai k (s) | spring k (s) |\n|---|---|---|---|")
for i in [int(x) for x in a.instances.split(",")]:
    d = lcn.load(path(DATA, i))
    row = dict(instance=i)
    for m in ("given", "kamada-kawai", "spring"):
        t = time.perf_counter()
        s = layout(d, m, seed=a.seed)
        obj = lcn.crossings(s).objective
        row[m] = dict(objective=list(obj), seconds=time.perf_counter() - t)
    rows.append(row)
    print(f"| {i} | " + " | ".join(f"{row[m]['objective'][0]} ({row[m]['seconds']:.1f} s)"
                                   for m in ("given", "kamada-kawai", "spring")) + " |", flush=True)
if a.json:
    json.dump(dict(env=env, seed=a.seed, rows=rows), open(a.json, "w"), indent=1)

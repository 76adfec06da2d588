"""Re-validate solution drawings independently of the solver.

    python benchmarks/lcn_validate.py DIR_OR_TAR... [--json OUT]

For every drawing (automatic-I.*.json): (1) ``lcn.validate`` returns no violation; (2) a full
recount with ``lcn.crossings`` (NumPy, from scratch) gives k, edges at k, total; (3) every
edge at k and 5 random edges are recounted against all edges with the plain-Python pairwise
test below (Python integers, one pair at a time, independent of ozgemm.lcn; the same textbook
test as the reference in the test suite), and must equal (2); the edge list, grid and vertex
ids must equal those of the input instance.
"""
import argparse
import json
import os
import random
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from ozgemm import lcn  # noqa: E402
from ozgemm.lcn.reference import plain, ref_counts  # noqa: E402  (the independent plain-Python recount)
from lcn_bench import DATA, path  # noqa: E402  (the instances' folder; OZGEMM_LCN_DATA overrides)


def check(fn):
    name = os.path.basename(fn)
    inst = int(name.split("-")[1].split(".")[0])
    d = lcn.load(fn)
    orig = lcn.load(path(DATA, inst))
    same = (d.edges.tolist() == orig.edges.tolist() and (d.width, d.height) == (orig.width, orig.height)
            and d.n == orig.n)
    viol = lcn.validate(d)
    c = lcn.crossings(d)
    pts, edges = plain(d)
    at_k = [e for e in range(d.m) if c.per_edge[e] == c.k]
    extra = random.Random(inst).sample(range(d.m), min(5, d.m))
    ref = ref_counts(pts, edges, sorted(set(at_k + extra)))
    ok_ref = all(ref[e] == int(c.per_edge[e]) for e in ref)
    row = dict(file=name, instance=inst, same_instance=same, valid=not viol, k=c.k, at_k=c.at_k, total=c.total,
               plain_python_edges=len(ref), plain_python_equal=ok_ref,
               plain_python_max_at_k=max(ref[e] for e in at_k) if at_k else 0)
    row["ok"] = same and not viol and ok_ref and row["plain_python_max_at_k"] == c.k
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--json")
    a = ap.parse_args()
    files = []
    tmp = tempfile.mkdtemp()
    for p in a.paths:
        if p.endswith(".tar.gz"):
            sub = os.path.join(tmp, os.path.basename(p)[:-7])
            with tarfile.open(p) as tf:
                tf.extractall(sub)
            p = sub
        files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.startswith("automatic-") and f.endswith(".json"))
    rows = []
    for fn in files:
        r = check(fn)
        rows.append(r)
        print(json.dumps(r), flush=True)
    print(f"{sum(r['ok'] for r in rows)}/{len(rows)} drawings valid and confirmed")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

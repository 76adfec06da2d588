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
from lcn_bench import DATA, path  # noqa: E402  (the instances' folder; OZGEMM_LCN_DATA overrides)


# Independent recount: plain Python integers, one pair at a time.
def ref_orient(a, b, c):
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])


def ref_on_segment(p, a, b):
    """p lies on the closed segment ab."""
    return (ref_orient(a, b, p) == 0 and min(a[0], b[0]) <= p[0] <= max(a[0], b[0])
            and min(a[1], b[1]) <= p[1] <= max(a[1], b[1]))


def ref_intersect(p1, q1, p2, q2):
    """Closed segments p1q1, p2q2 share a point (textbook case analysis, CLRS 33.1)."""
    d1 = ref_orient(p2, q2, p1)
    d2 = ref_orient(p2, q2, q1)
    d3 = ref_orient(p1, q1, p2)
    d4 = ref_orient(p1, q1, q2)
    if ((d1 > 0 > d2) or (d1 < 0 < d2)) and ((d3 > 0 > d4) or (d3 < 0 < d4)):
        return True
    if d1 == 0 and ref_on_segment(p1, p2, q2):
        return True
    if d2 == 0 and ref_on_segment(q1, p2, q2):
        return True
    if d3 == 0 and ref_on_segment(p2, p1, q1):
        return True
    if d4 == 0 and ref_on_segment(q2, p1, q1):
        return True
    return False


def ref_counts(pts, edges, only):
    """Crossing counts of the edges ``only`` (edges sharing no endpoint whose segments meet),
    each tested against all edges."""
    out = {}
    for i in only:
        a, b = edges[i]
        c = 0
        for j, (u, v) in enumerate(edges):
            if j == i or len({a, b, u, v}) < 4:
                continue
            if ref_intersect(pts[a], pts[b], pts[u], pts[v]):
                c += 1
        out[i] = c
    return out


def plain(d):
    """(points, edges) of drawing ``d`` as Python integer tuples."""
    return list(zip(d.x.tolist(), d.y.tolist())), [tuple(e) for e in d.edges.tolist()]


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

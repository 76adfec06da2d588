"""A plain-Python recount of crossings and validity, one pair of edges at a time.

Python integers only, no numpy and nothing of the vectorised evaluator (:mod:`ozgemm.lcn.exact`):
the independent reference the tests and ``benchmarks/lcn_validate.py`` check the library
against. Segment intersection by the textbook case analysis (Cormen, Leiserson, Rivest,
Stein, *Introduction to Algorithms*, 33.1); quadratic in the edges, for checks only.
"""
from __future__ import annotations

__all__ = ["ref_orient", "ref_on_segment", "ref_intersect", "ref_counts", "ref_valid", "plain"]


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


def ref_counts(pts, edges, only=None):
    """Per-edge crossing counts (edges sharing no endpoint whose segments meet).
    ``only``: restrict to these edge indices (each still tested against all edges)."""
    m = len(edges)
    idx = range(m) if only is None else only
    out = {}
    for i in idx:
        a, b = edges[i]
        c = 0
        for j in range(m):
            u, v = edges[j]
            if j == i or len({a, b, u, v}) < 4:
                continue
            if ref_intersect(pts[a], pts[b], pts[u], pts[v]):
                c += 1
        out[i] = c
    return out


def ref_valid(pts, edges, width, height):
    for i, p in enumerate(pts):
        if not (0 <= p[0] <= width and 0 <= p[1] <= height):
            return False
        for j in range(i):
            if pts[j] == p:
                return False
    for a, b in edges:
        for w, p in enumerate(pts):
            if w != a and w != b and ref_on_segment(p, pts[a], pts[b]):
                return False
    seen = set()
    for a, b in edges:
        if a == b or frozenset((a, b)) in seen:
            return False
        seen.add(frozenset((a, b)))
    return True


def plain(d):
    """(points, edges) of drawing ``d`` as Python integer tuples."""
    return list(zip(d.x.tolist(), d.y.tolist())), [tuple(e) for e in d.edges.tolist()]

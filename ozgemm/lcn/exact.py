"""Exact crossing counts, validity and incremental move deltas (CPU, NumPy).

Predicates
----------
Everything reduces to the sign of the orientation determinant
``orient(a, b, c) = (b.x-a.x)*(c.y-a.y) - (b.y-a.y)*(c.x-a.x)`` on integer points
(no floating point anywhere). With ``Dx`` and ``Dy`` the extents (max - min) of all
x and y values involved, every coordinate difference satisfies ``|dx| <= Dx``,
``|dy| <= Dy`` and ``|orient| <= 2*Dx*Dy``. So int64 evaluation is exact whenever

    ``Dx * Dy <= 2**62 - 1``        (:func:`int64_exact`)

e.g. any grid with both sides ``< 2**31``. Larger extents are evaluated exactly with
Python integers (NumPy object arrays, slow) on the CPU; the GPU code refuses them with
:class:`CoordinateRangeError`.

Crossings
---------
Two edges *cross* iff they share no endpoint and their closed segments intersect
(proper crossings, touching and collinear overlap all count; in a valid drawing only
proper crossings can occur). The crossing count ``c_e`` of an edge is the number of edges
crossing it; the local crossing number is ``k = max_e c_e`` (a drawing is k-planar iff
every ``c_e <= k``); the total is the number of crossing pairs ``= sum(c) / 2``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .drawing import Drawing

__all__ = [
    "CoordinateRangeError", "Crossings", "Violation", "int64_exact", "orient_sign",
    "segments_intersect", "crossings", "crossing_pairs", "validate", "is_valid",
    "move_delta", "move_is_valid", "MoveEvaluator", "repair", "INT64_EXTENT_PRODUCT_MAX",
]

INT64_EXTENT_PRODUCT_MAX = 2**62 - 1
"""Largest ``Dx*Dy`` for which int64 orientation determinants are exact."""


class CoordinateRangeError(ValueError):
    """Coordinates too far apart for the exact int64 arithmetic of this code path."""


def int64_exact(xs, ys) -> bool:
    """True if orientation determinants of points with these coordinates are exact in int64.

    ``xs``, ``ys``: integer arrays (any shape) or iterables of all x and y values involved.
    The test is ``(max x - min x) * (max y - min y) <= 2**62 - 1`` in Python integers.
    """
    xs = np.asarray(xs)
    ys = np.asarray(ys)
    if xs.size == 0 or ys.size == 0:
        return True
    dx = int(xs.max()) - int(xs.min())
    dy = int(ys.max()) - int(ys.min())
    return dx * dy <= INT64_EXTENT_PRODUCT_MAX and max(abs(int(xs.max())), abs(int(xs.min())),
                                                       abs(int(ys.max())), abs(int(ys.min()))) < 2**62


def _sgn(a):
    return (a > 0).astype(np.int8) - (a < 0).astype(np.int8)


def orient_sign(ax, ay, bx, by, cx, cy):
    """Sign (-1, 0, +1; int8 array) of ``orient(a, b, c)``, exactly, elementwise.

    +1: c lies left of the directed line a->b (counter-clockwise turn), 0: collinear.
    Inputs are broadcast integer arrays (int64, or object arrays of Python ints for
    extents beyond the int64 bound, see the module docstring).
    """
    return _sgn((bx - ax) * (cy - ay) - (by - ay) * (cx - ax))


def segments_intersect(p1x, p1y, q1x, q1y, p2x, p2y, q2x, q2y):
    """Elementwise: do the closed segments p1q1 and p2q2 share a point? (bool array)

    Exact: signs of four orientation determinants; collinear pairs are decided by
    bounding-box overlap. Degenerate (zero-length) segments are handled as points.
    """
    o1 = orient_sign(p1x, p1y, q1x, q1y, p2x, p2y)
    o2 = orient_sign(p1x, p1y, q1x, q1y, q2x, q2y)
    o3 = orient_sign(p2x, p2y, q2x, q2y, p1x, p1y)
    o4 = orient_sign(p2x, p2y, q2x, q2y, q1x, q1y)
    general = (o1 * o2 <= 0) & (o3 * o4 <= 0)
    allzero = (o1 == 0) & (o2 == 0) & (o3 == 0) & (o4 == 0)
    box = ((np.minimum(p1x, q1x) <= np.maximum(p2x, q2x)) & (np.minimum(p2x, q2x) <= np.maximum(p1x, q1x))
           & (np.minimum(p1y, q1y) <= np.maximum(p2y, q2y)) & (np.minimum(p2y, q2y) <= np.maximum(p1y, q1y)))
    return np.where(allzero, box, general & box)


def _coords(d: Drawing, extra_x=(), extra_y=()):
    """Coordinates as int64 when exact, else as object arrays of Python ints."""
    xs = np.concatenate([d.x, np.asarray(extra_x, dtype=np.int64)])
    ys = np.concatenate([d.y, np.asarray(extra_y, dtype=np.int64)])
    if int64_exact(xs, ys):
        return d.x, d.y
    return d.x.astype(object), d.y.astype(object)


@dataclass(frozen=True)
class Crossings:
    """Result of :func:`crossings`.

    per_edge : int64 (m,) crossing count of each edge; k : local crossing number
    (0 for m = 0); total : number of crossing pairs; at_k : number of edges with count k.
    """

    per_edge: np.ndarray
    k: int
    total: int
    at_k: int

    @property
    def objective(self):
        """The lexicographic objective ``(k, at_k, total)`` minimised by :func:`ozgemm.lcn.anneal`."""
        return (self.k, self.at_k, self.total)


def _pair_blocks(d: Drawing, block: int):
    """Yield candidate pairs (i, j), i < j, no shared endpoint, bounding boxes overlapping."""
    e = d.edges
    m = d.m
    x, y = d.x, d.y
    ax, ay, bx, by = x[e[:, 0]], y[e[:, 0]], x[e[:, 1]], y[e[:, 1]]
    x0, x1 = np.minimum(ax, bx), np.maximum(ax, bx)
    y0, y1 = np.minimum(ay, by), np.maximum(ay, by)
    # sort by x0 so that for each block only a prefix of later edges can overlap in x
    order = np.argsort(x0, kind="stable")
    sx0 = x0[order]
    for s in range(0, m, block):
        I = order[s:s + block]
        hi = np.searchsorted(sx0, x1[I].max(), side="right")
        J = order[s:hi]
        if J.size == 0:
            continue
        ov = ((x0[J][None, :] <= x1[I][:, None]) & (x0[I][:, None] <= x1[J][None, :])
              & (y0[J][None, :] <= y1[I][:, None]) & (y0[I][:, None] <= y1[J][None, :]))
        # each unordered pair once: J position > I position in the sorted order
        pos_i = np.arange(s, s + I.size)[:, None]
        pos_j = np.arange(s, hi)[None, :]
        ov &= pos_j > pos_i
        ii, jj = np.nonzero(ov)
        if ii.size == 0:
            continue
        gi, gj = I[ii], J[jj]
        ei, ej = e[gi], e[gj]
        share = ((ei[:, 0] == ej[:, 0]) | (ei[:, 0] == ej[:, 1]) | (ei[:, 1] == ej[:, 0]) | (ei[:, 1] == ej[:, 1]))
        keep = ~share
        yield gi[keep], gj[keep]


def crossing_pairs(d: Drawing, block: int = 512):
    """All crossing pairs of ``d`` as an int64 array (P, 2) with ``i < j``, sorted.

    Exact (see module docstring); O(m^2) worst case, tiled with a bounding-box filter and
    an x-sorted sweep so that memory stays O(block * m).
    """
    xs, ys = _coords(d)
    e = d.edges
    out = []
    for gi, gj in _pair_blocks(d, block):
        if gi.size == 0:
            continue
        hit = segments_intersect(xs[e[gi, 0]], ys[e[gi, 0]], xs[e[gi, 1]], ys[e[gi, 1]],
                                 xs[e[gj, 0]], ys[e[gj, 0]], xs[e[gj, 1]], ys[e[gj, 1]])
        a, b = gi[hit], gj[hit]
        out.append(np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1))
    if not out:
        return np.zeros((0, 2), dtype=np.int64)
    p = np.concatenate(out).astype(np.int64)
    return p[np.lexsort((p[:, 1], p[:, 0]))]


def _summary(per_edge) -> Crossings:
    per_edge = np.asarray(per_edge, dtype=np.int64)
    if per_edge.size == 0:
        return Crossings(per_edge, 0, 0, 0)
    k = int(per_edge.max())
    return Crossings(per_edge, k, int(per_edge.sum()) // 2, int((per_edge == k).sum()))


def crossings(d: Drawing, block: int = 512) -> Crossings:
    """Per-edge crossing counts, local crossing number k and total crossings of ``d``.

    Parameters
    ----------
    d : Drawing
    block : int
        Edges per tile (memory ~ block * m bytes per boolean temporary).

    Returns
    -------
    Crossings
        ``per_edge`` int64 (m,), ``k``, ``total``, ``at_k``.

    Exact integer arithmetic (int64 when :func:`int64_exact`, else Python ints). Works on
    invalid drawings too (any shared point of two non-adjacent edges counts).
    """
    p = crossing_pairs(d, block)
    c = np.bincount(p.reshape(-1), minlength=d.m).astype(np.int64)
    return _summary(c)


@dataclass(frozen=True)
class Violation:
    """One validity violation.

    kind : "coincident" (vertices a, b share a point), "on_edge" (vertex ``a`` lies in the
    interior of non-incident edge ``b``), "out_of_grid" (vertex ``a``), "self_loop" (edge
    ``a``), "duplicate_edge" (edges ``a`` < ``b`` join the same pair of vertices).
    """

    kind: str
    a: int
    b: int = -1

    def __str__(self):
        return {
            "coincident": f"vertices {self.a} and {self.b} coincide",
            "on_edge": f"vertex {self.a} lies on the interior of edge {self.b}",
            "out_of_grid": f"vertex {self.a} lies outside the grid",
            "self_loop": f"edge {self.a} is a self-loop",
            "duplicate_edge": f"edges {self.a} and {self.b} join the same vertices",
        }[self.kind]


def _vertices_on_edges(d: Drawing, xs, ys, block=256):
    """Pairs (vertex w, edge f) with w not an endpoint of f and w on the closed segment f."""
    e = d.edges
    n, m = d.n, d.m
    if n == 0 or m == 0:
        return []
    ax, ay, bx, by = xs[e[:, 0]], ys[e[:, 0]], xs[e[:, 1]], ys[e[:, 1]]
    x0, x1 = np.minimum(d.x[e[:, 0]], d.x[e[:, 1]]), np.maximum(d.x[e[:, 0]], d.x[e[:, 1]])
    y0, y1 = np.minimum(d.y[e[:, 0]], d.y[e[:, 1]]), np.maximum(d.y[e[:, 0]], d.y[e[:, 1]])
    order = np.argsort(d.x, kind="stable")
    sx = d.x[order]
    out = []
    for s in range(0, m, block):
        F = np.arange(s, min(m, s + block))
        lo = np.searchsorted(sx, x0[F].min(), side="left")
        hi = np.searchsorted(sx, x1[F].max(), side="right")
        W = order[lo:hi]
        if W.size == 0:
            continue
        inbox = ((d.x[W][None, :] >= x0[F][:, None]) & (d.x[W][None, :] <= x1[F][:, None])
                 & (d.y[W][None, :] >= y0[F][:, None]) & (d.y[W][None, :] <= y1[F][:, None]))
        inbox &= (W[None, :] != e[F, 0][:, None]) & (W[None, :] != e[F, 1][:, None])
        fi, wi = np.nonzero(inbox)
        if fi.size == 0:
            continue
        f, w = F[fi], W[wi]
        on = orient_sign(ax[f], ay[f], bx[f], by[f], xs[w], ys[w]) == 0
        out.extend(zip(w[on].tolist(), f[on].tolist()))
    return out


def validate(d: Drawing) -> list:
    """Return the list of :class:`Violation` of ``d`` (empty iff the drawing is valid).

    Checks: coincident vertices; a vertex on the interior of a non-incident edge (a vertex
    on the closed segment, not one of its endpoints; coincidence with an endpoint is
    reported as "coincident" as well); coordinates outside ``[0, width] x [0, height]``;
    self-loops; duplicate edges (same unordered vertex pair). Exact integer arithmetic.
    """
    out = []
    xs, ys = _coords(d)
    for v in np.nonzero((d.x < 0) | (d.x > d.width) | (d.y < 0) | (d.y > d.height))[0].tolist():
        out.append(Violation("out_of_grid", v))
    if d.n:
        order = np.lexsort((d.y, d.x))
        same = (d.x[order][1:] == d.x[order][:-1]) & (d.y[order][1:] == d.y[order][:-1])
        for i in np.nonzero(same)[0].tolist():
            a, b = int(order[i]), int(order[i + 1])
            out.append(Violation("coincident", min(a, b), max(a, b)))
    e = d.edges
    for j in np.nonzero(e[:, 0] == e[:, 1])[0].tolist():
        out.append(Violation("self_loop", j))
    if d.m:
        lo, hi = np.minimum(e[:, 0], e[:, 1]), np.maximum(e[:, 0], e[:, 1])
        order = np.lexsort((hi, lo))
        dup = (lo[order][1:] == lo[order][:-1]) & (hi[order][1:] == hi[order][:-1])
        for i in np.nonzero(dup)[0].tolist():
            a, b = int(order[i]), int(order[i + 1])
            out.append(Violation("duplicate_edge", min(a, b), max(a, b)))
    for w, f in _vertices_on_edges(d, xs, ys):
        a, b = e[f]
        if (d.x[w] == d.x[a] and d.y[w] == d.y[a]) or (d.x[w] == d.x[b] and d.y[w] == d.y[b]):
            continue  # already reported as coincident
        out.append(Violation("on_edge", int(w), int(f)))
    return out


def is_valid(d: Drawing) -> bool:
    """True iff :func:`validate` finds no violation."""
    return not validate(d)


class _Inc:
    """Cached incidence (CSR) of a drawing's graph."""

    def __init__(self, d: Drawing):
        self.off, self.eid = d.incidence()

    def of(self, v):
        return self.eid[self.off[v]:self.off[v + 1]]


class MoveEvaluator:
    """Mutable evaluation state for single-vertex moves on a drawing (CPU, NumPy).

    Holds copies of the coordinates, the edge endpoints and per-edge bounding boxes, and
    evaluates a move of vertex ``v`` to ``(nx, ny)`` in O(deg(v) * (m + n)): the exact
    per-edge delta of the crossing counts (:meth:`delta`) and whether the move keeps the
    drawing valid (:meth:`valid`). :meth:`apply` commits a move. The input drawing is not
    modified. Arithmetic is int64 when exact for the whole grid and the drawing's points
    (:func:`int64_exact`), else Python integers (object arrays).
    """

    def __init__(self, d: Drawing, extra=()):
        self.d = d
        self.inc = _Inc(d)
        self.e = d.edges
        self.width, self.height = d.width, d.height
        # extra: points (x, y) to be evaluated later, included in the int64 exactness decision
        ex = [int(p[0]) for p in extra]
        ey = [int(p[1]) for p in extra]
        xs = [int(d.x.min()), int(d.x.max())] if d.n else []
        ys = [int(d.y.min()), int(d.y.max())] if d.n else []
        # the extent of every point involved so far (grid corners, drawing, extra points):
        # a new point keeps int64 exact only together with all of them
        self._ext = [min(xs + [0] + ex), max(xs + [d.width] + ex), min(ys + [0] + ey), max(ys + [d.height] + ey)]
        self.exact64 = int64_exact(self._ext[:2], self._ext[2:])
        dt = np.int64 if self.exact64 else object
        self.x = d.x.astype(dt, copy=True)
        self.y = d.y.astype(dt, copy=True)
        self.n, self.m = d.n, d.m
        self.ids = np.arange(self.n)
        self._refresh_edges()

    def _refresh_edges(self, E=None):
        e = self.e
        if E is None:
            self.ax, self.ay = self.x[e[:, 0]], self.y[e[:, 0]]
            self.bx, self.by = self.x[e[:, 1]], self.y[e[:, 1]]
        else:
            self.ax[E], self.ay[E] = self.x[e[E, 0]], self.y[e[E, 0]]
            self.bx[E], self.by[E] = self.x[e[E, 1]], self.y[e[E, 1]]
        self.x0, self.x1 = np.minimum(self.ax, self.bx), np.maximum(self.ax, self.bx)
        self.y0, self.y1 = np.minimum(self.ay, self.by), np.maximum(self.ay, self.by)

    def _point(self, nx, ny):
        if not self.exact64:
            return int(nx), int(ny)
        x0, x1, y0, y1 = self._ext
        if not (x0 <= nx <= x1 and y0 <= ny <= y1) and not int64_exact([int(nx), x0, x1], [int(ny), y0, y1]):
            raise CoordinateRangeError(f"point ({nx}, {ny}) too far from the grid and the drawing for exact int64 "
                                       "arithmetic (move_delta computes it exactly with Python integers)")
        return np.int64(nx), np.int64(ny)

    def delta(self, v: int, nx: int, ny: int):
        """Exact per-edge change (int64 (m,)) of the crossing counts if ``v`` moves to (nx, ny)."""
        if not 0 <= v < self.n:
            raise IndexError(f"vertex {v} out of range 0..{self.n - 1}")
        nx, ny = self._point(nx, ny)
        E = np.unique(self.inc.of(v))  # a self-loop is listed once per endpoint
        delta = np.zeros(self.m, dtype=np.int64)
        if E.size == 0:
            return delta
        e = self.e
        other = np.where(e[E, 0] == v, e[E, 1], e[E, 0])
        ux, uy = self.x[other], self.y[other]
        vx, vy = self.x[v], self.y[v]
        loop = other == v  # a self-loop moves with v: its new segment is the point (nx, ny)
        wx = np.where(loop, nx, ux).astype(ux.dtype)
        wy = np.where(loop, ny, uy).astype(uy.dtype)
        # bounding box of old and new positions of each incident edge, against all edges
        lx = np.minimum(np.minimum(ux, vx), nx)[:, None]
        hx = np.maximum(np.maximum(ux, vx), nx)[:, None]
        ly = np.minimum(np.minimum(uy, vy), ny)[:, None]
        hy = np.maximum(np.maximum(uy, vy), ny)[:, None]
        cand = (self.x0[None, :] <= hx) & (lx <= self.x1[None, :]) & (self.y0[None, :] <= hy) & (ly <= self.y1[None, :])
        cand &= (e[:, 0][None, :] != v) & (e[:, 1][None, :] != v)
        cand &= (e[:, 0][None, :] != other[:, None]) & (e[:, 1][None, :] != other[:, None])
        ii, ff = np.nonzero(cand)
        if ii.size == 0:
            return delta
        fx0, fy0, fx1, fy1 = self.ax[ff], self.ay[ff], self.bx[ff], self.by[ff]
        old = segments_intersect(vx, vy, ux[ii], uy[ii], fx0, fy0, fx1, fy1)
        new = segments_intersect(nx, ny, wx[ii], wy[ii], fx0, fy0, fx1, fy1)
        diff = new.astype(np.int64) - old.astype(np.int64)
        nz = diff != 0
        np.add.at(delta, ff[nz], diff[nz])
        np.add.at(delta, E[ii[nz]], diff[nz])
        return delta

    def valid(self, v: int, nx: int, ny: int, _repairing: bool = False) -> bool:
        """True if moving ``v`` to (nx, ny) keeps the drawing valid (assuming it is valid now).

        Checks what one move can break: the grid bounds, coincidence with another vertex,
        the new point on a non-incident edge, another vertex on a moved edge.
        """
        if not (0 <= nx <= self.width and 0 <= ny <= self.height):
            return False
        nx, ny = self._point(nx, ny)
        x, y, e = self.x, self.y, self.e
        hit = (x == nx) & (y == ny)
        hit[v] = False
        if hit.any():
            return False
        inbox = (self.x0 <= nx) & (nx <= self.x1) & (self.y0 <= ny) & (ny <= self.y1)
        inbox &= (e[:, 0] != v) & (e[:, 1] != v)
        f = np.nonzero(inbox)[0]
        if f.size and np.any(orient_sign(self.ax[f], self.ay[f], self.bx[f], self.by[f], nx, ny) == 0):
            return False
        E = self.inc.of(v)
        if E.size:
            other = np.where(e[E, 0] == v, e[E, 1], e[E, 0])
            ux, uy = x[other][:, None], y[other][:, None]
            inb = ((np.minimum(ux, nx) <= x[None, :]) & (x[None, :] <= np.maximum(ux, nx))
                   & (np.minimum(uy, ny) <= y[None, :]) & (y[None, :] <= np.maximum(uy, ny)))
            inb &= (self.ids[None, :] != other[:, None]) & (self.ids[None, :] != v)
            if _repairing:  # a vertex sitting on the far endpoint is that vertex's own violation
                inb &= ~((x[None, :] == ux) & (y[None, :] == uy))
            ii, ww = np.nonzero(inb)
            if ii.size and np.any(orient_sign(nx, ny, x[other[ii]], y[other[ii]], x[ww], y[ww]) == 0):
                return False
        return True

    def apply(self, v: int, nx: int, ny: int) -> None:
        """Move vertex ``v`` to (nx, ny) in the evaluator's state (no checks)."""
        nx, ny = self._point(nx, ny)
        self.x[v], self.y[v] = nx, ny
        e = self._ext
        self._ext = [min(e[0], int(nx)), max(e[1], int(nx)), min(e[2], int(ny)), max(e[3], int(ny))]
        self._refresh_edges(self.inc.of(v))

    def drawing(self) -> Drawing:
        """The current state as a new Drawing."""
        return self.d.with_coords(np.asarray(self.x, dtype=np.int64), np.asarray(self.y, dtype=np.int64))


def move_delta(d: Drawing, v: int, nx: int, ny: int):
    """Per-edge change of the crossing counts when vertex ``v`` moves to ``(nx, ny)``.

    Returns an int64 array (m,): ``crossings(moved).per_edge - crossings(d).per_edge``,
    computed in O(deg(v) * m) from the incident edges only (exact; the same predicate as
    :func:`crossings`; valid or invalid drawings). For many moves on one drawing use
    :class:`MoveEvaluator`, which caches the incidence lists and bounding boxes.

    Raises IndexError for a vertex out of range.
    """
    return MoveEvaluator(d, extra=[(nx, ny)]).delta(v, nx, ny)


def move_is_valid(d: Drawing, v: int, nx: int, ny: int, inc=None) -> bool:
    """True if moving ``v`` to ``(nx, ny)`` keeps a valid drawing valid.

    Checks exactly what a single move can break: the grid bounds, coincidence of the new
    point with another vertex, the new point on a non-incident edge, and another vertex on
    one of the moved (incident) edges. Assumes ``d`` itself is valid apart from ``v``.
    """
    return MoveEvaluator(d).valid(v, nx, ny)


def _blocked_points(d: Drawing, limit: int = 5_000_000) -> set:
    """Occupied grid points and lattice points inside edges (a cheap pre-filter for repair)."""
    pts = set(zip(d.x.tolist(), d.y.tolist()))
    e = d.edges
    dx = d.x[e[:, 1]] - d.x[e[:, 0]]
    dy = d.y[e[:, 1]] - d.y[e[:, 0]]
    g = np.gcd(dx, dy)
    if int(np.maximum(g - 1, 0).sum()) > limit:
        return pts
    for f in np.nonzero(g > 1)[0].tolist():
        gx, gy, gg = int(dx[f] // g[f]), int(dy[f] // g[f]), int(g[f])
        x0, y0 = int(d.x[e[f, 0]]), int(d.y[e[f, 0]])
        pts.update((x0 + t * gx, y0 + t * gy) for t in range(1, gg))
    return pts


def _ring(x0, y0, r, width, height):
    """The grid points at Chebyshev distance exactly ``r`` from (x0, y0), clipped to the grid,
    in a fixed order (x offset major, then the lower and upper row; then the left and right
    column): O(points returned), not O(r)."""
    pts = []
    rows = [dy for dy in (-r, r) if 0 <= y0 + dy <= height]
    if rows:  # (skipped when both rows are off the grid: each dx below then yields a point)
        for dx in range(max(-r, -x0), min(r, width - x0) + 1):
            pts += [(x0 + dx, y0 + dy) for dy in rows]
    for dx in (-r, r):
        if 0 <= x0 + dx <= width:
            pts += [(x0 + dx, y0 + dy) for dy in range(max(-r + 1, -y0), min(r - 1, height - y0) + 1)]
    return pts


def repair(d: Drawing, seed: int = 0, max_radius: int | None = None, max_tries: int = 100_000) -> Drawing:
    """Return a valid drawing close to ``d`` (``d`` itself if it is already valid).

    Vertices involved in a violation (every vertex but the first at a shared point, every
    vertex lying on a non-incident edge, every vertex outside the grid after clamping) are
    moved, one at a time, to the nearest free grid point (rings of growing Chebyshev radius
    around the old point, points of a ring visited in a seeded random order) for which
    :func:`move_is_valid` holds. Deterministic for a given seed. Greedy: it can fail on
    crowded grids where another arrangement of the vertices would be valid.

    ``max_tries`` bounds the candidate points examined per vertex (each costs O(n + m)), so
    that a hopeless case (e.g. a triangle on a one-row grid) ends with ValueError in bounded
    time instead of scanning a huge grid.

    Raises
    ------
    ValueError
        The graph has self-loops or duplicate edges (no layout can fix those), or no valid
        position was found within ``max_radius`` / ``max_tries`` candidates.
    """
    bad = [v for v in validate(d) if v.kind in ("self_loop", "duplicate_edge")]
    if bad:
        raise ValueError(f"graph cannot be drawn validly: {bad[0]}")
    rng = np.random.default_rng(seed)
    x = np.clip(d.x, 0, d.width)
    y = np.clip(d.y, 0, d.height)
    cur = d.with_coords(x, y)
    max_radius = max_radius or max(d.width, d.height) + 1
    for _ in range(d.n + 1):
        viol = validate(cur)
        if not viol:
            return cur
        movers = [vi.b for vi in viol if vi.kind == "coincident"]
        movers += [vi.a for vi in viol if vi.kind in ("on_edge", "out_of_grid")]
        ev = MoveEvaluator(cur)
        blocked = _blocked_points(cur)
        progress = False
        for v in dict.fromkeys(movers):
            x0, y0 = int(ev.x[v]), int(ev.y[v])
            if ev.valid(v, x0, y0, True):
                continue  # fixed by an earlier move
            placed = False
            tries = 0
            # beyond this radius every ring lies outside the grid
            rmax = min(max_radius, max(x0, cur.width - x0, y0, cur.height - y0))
            for r in range(1, rmax + 1):
                if tries >= max_tries:
                    break
                ring = [pt for pt in _ring(x0, y0, r, cur.width, cur.height) if pt not in blocked]
                tries += max(1, len(ring))
                for i in rng.permutation(len(ring)):
                    a, b = ring[i]
                    if ev.valid(v, a, b, True):
                        ev.apply(v, a, b)
                        blocked.add((a, b))
                        placed = progress = True
                        break
                if placed:
                    break
            # not placed: a neighbour may still coincide with another vertex; retry next pass
        cur = ev.drawing()
        if not progress:
            raise ValueError(f"repair found no valid position for vertices {sorted(set(movers))[:10]} "
                             f"(within radius {max_radius} and {max_tries} candidate points per vertex)")
    if validate(cur):
        raise ValueError("repair did not converge")
    return cur

"""Start layouts for the annealer: force-directed and stress layouts snapped to the grid.

The annealer only moves one vertex at a time, so a poor given layout (several contest
inputs are random-looking and invalid, e.g. automatic-9 with k = 2542) can trap it far from
a good drawing. A layout computed from the graph alone often starts much lower: on
automatic-9 the Kamada–Kawai layout, snapped to the 148 x 148 grid and repaired, has k = 17
before any annealing (docs/performance.md, "Start layouts").

Methods (the layouts themselves come from networkx; only the snapping is ours):

* ``"kamada-kawai"``: :func:`networkx.kamada_kawai_layout` — the stress (energy) layout of
  T. Kamada and S. Kawai, "An algorithm for drawing general undirected graphs",
  Inf. Process. Lett. 31 (1989): spring lengths = graph distances. O(n^2) memory and time
  per optimiser step, so refused above ``KK_MAX_N`` vertices.
* ``"spring"``: :func:`networkx.spring_layout` — Fruchterman–Reingold force-directed
  layout (Softw. Pract. Exp. 21 (1991)), seeded.
* ``"given"``: the input coordinates.

Snapping: the layout's bounding box is mapped affinely onto ``[0, width] x [0, height]``
(an affine map preserves which segments cross; only the rounding to integers changes
crossings), coordinates are rounded to the nearest integer, and :func:`ozgemm.lcn.repair`
makes the drawing valid (coincident vertices and vertices on non-incident edges moved to
the nearest free point).
"""
from __future__ import annotations

import numpy as np

from .drawing import Drawing
from .exact import crossings, repair

__all__ = ["METHODS", "KK_MAX_N", "layout", "best_start"]

METHODS = ("given", "kamada-kawai", "spring")
KK_MAX_N = 3000
"""Largest vertex count for the Kamada–Kawai layout (its distance matrix is n^2 float64)."""


def _networkx():
    """networkx, imported on first use (an optional dependency, the ``[lcn]`` extra)."""
    try:
        import networkx
    except ImportError as exc:
        raise ImportError("ozgemm.lcn.layout needs networkx: pip install 'ozgemm[lcn]'") from exc
    return networkx


def _graph(d: Drawing):
    nx = _networkx()

    g = nx.Graph()
    g.add_nodes_from(range(d.n))
    g.add_edges_from((int(a), int(b)) for a, b in d.edges)
    return g


def _snap(d: Drawing, pos: np.ndarray) -> Drawing:
    lo, hi = pos.min(axis=0), pos.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    unit = (pos - lo) / span
    x = np.rint(unit[:, 0] * d.width).astype(np.int64)
    y = np.rint(unit[:, 1] * d.height).astype(np.int64)
    return d.with_coords(x, y)


def layout(d: Drawing, method: str = "kamada-kawai", seed: int = 0) -> Drawing:
    """Return a valid drawing of ``d``'s graph on ``d``'s grid, laid out by ``method``.

    Parameters
    ----------
    d : Drawing
        Supplies the graph, the grid and (for ``"given"``) the coordinates; not modified.
    method : "kamada-kawai", "spring" or "given" (see the module docstring).
    seed : int, seeds the spring layout and the repair.

    Returns
    -------
    Drawing with int64 coordinates in ``[0, width] x [0, height]``, valid
    (:func:`ozgemm.lcn.validate` is empty). Deterministic for given inputs and seed.

    Raises
    ------
    ValueError
        Unknown method; a negative or non-integer seed; grid sides above 2**52; Kamada–Kawai
        on more than ``KK_MAX_N`` vertices; a graph that cannot be drawn validly, or a
        snapped layout that :func:`repair` cannot make valid (possible on tiny grids where
        the given drawing is valid; :func:`best_start` then skips that layout).

    Notes
    -----
    networkx lays out each connected component over the whole box for Kamada–Kawai, so the
    components of a disconnected graph overlap; compare with ``"given"`` (as
    :func:`best_start` does).
    """
    if method not in METHODS:
        raise ValueError(f"layout method must be one of {METHODS}, got {method!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or int(seed) < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if max(d.width, d.height) > 2**52:
        raise ValueError(f"grid {d.width}x{d.height}: layouts are snapped in float64, sides must be <= 2**52")
    if method == "given" or d.n <= 1:
        return repair(d, seed=seed)
    nx = _networkx()

    g = _graph(d)
    if method == "kamada-kawai":
        if d.n > KK_MAX_N:
            raise ValueError(f"kamada-kawai layout needs O(n^2) memory; refused for n = {d.n} > {KK_MAX_N}")
        pos = nx.kamada_kawai_layout(g)
    else:
        pos = nx.spring_layout(g, seed=int(seed) % 2**32)
    p = np.array([pos[v] for v in range(d.n)], dtype=np.float64)
    return repair(_snap(d, p), seed=seed)


def best_start(d: Drawing, methods=None, seed: int = 0):
    """Lay ``d`` out with each method and return the best start for the annealer.

    Parameters
    ----------
    d : Drawing
    methods : list or tuple of method names (see :data:`METHODS`), default ``["given",
        "kamada-kawai"]``, or ``["given"]`` when ``n > KK_MAX_N``. (The spring layout is
        cheaper per call but rarely better than Kamada–Kawai on the contest instances and
        cost 14 s on instance 9; docs/performance.md, "Start layouts".)
    seed : int

    Returns
    -------
    (drawing, method, table): the valid drawing with the smallest objective
    ``(k, edges at k, total crossings)`` (exact counts; ties go to the earlier method),
    its method name, and a dict ``method -> objective`` of every candidate (``None`` for a
    layout that :func:`repair` could not make valid, which is skipped).

    Raises
    ------
    TypeError if ``methods`` is not a list/tuple; ValueError for an empty or unknown
    method list, or when no candidate gives a valid drawing (the first candidate's error).
    """
    if methods is None:
        methods = ["given"] + (["kamada-kawai"] if d.n <= KK_MAX_N else [])
    if not isinstance(methods, (list, tuple)):
        raise TypeError(f"methods must be a list or tuple of names from {METHODS}, got {type(methods).__name__}")
    if not methods or any(m not in METHODS for m in methods):
        raise ValueError(f"methods must be a non-empty list of names from {METHODS}, got {methods!r}")
    best = None
    table = {}
    first_error = None
    for m in methods:
        try:
            cand = layout(d, m, seed)
        except ValueError as e:
            if m == "kamada-kawai" and d.n > KK_MAX_N:
                raise
            first_error = first_error or e
            table[m] = None
            continue
        obj = crossings(cand).objective
        table[m] = obj
        if best is None or obj < best[2]:
            best = (cand, m, obj)
    if best is None:
        raise first_error
    return best[0], best[1], table

"""Straight-line drawings on an integer grid: the :class:`Drawing` type and contest JSON I/O.

File format (Graph Drawing Contest 2025, live challenge)::

    {"nodes": [{"id": 0, "x": 3, "y": 7}, ...],
     "edges": [{"source": 0, "target": 5}, ...],
     "width": W, "height": H}

Vertex ``id`` values may be any JSON scalars; internally vertices are numbered by their
position in ``nodes``. Every other field (top level, per node, per edge) is kept verbatim
and written back by :func:`save`.
"""
from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Drawing", "DrawingFormatError", "load", "save", "from_arrays"]


class DrawingFormatError(ValueError):
    """The JSON document (or the arrays) do not describe a drawing."""


def _frozen(a, dtype):
    a = np.array(a, dtype=dtype, copy=True)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Drawing:
    """A straight-line drawing of a graph on the integer grid ``[0, width] x [0, height]``.

    Attributes
    ----------
    x, y : numpy.ndarray, int64, shape (n,)
        Vertex coordinates in grid units (read-only copies).
    edges : numpy.ndarray, int64, shape (m, 2)
        Endpoints of each edge as vertex indices 0..n-1 (read-only copy).
    width, height : int
        Grid size; valid coordinates are ``0 <= x <= width`` and ``0 <= y <= height``
        (both bounds inclusive, as in the contest files).
    doc : dict
        The source JSON document (deep copy) with all unknown fields; used by :func:`save`.

    A Drawing is immutable: methods return new drawings and never modify their inputs.
    """

    x: np.ndarray
    y: np.ndarray
    edges: np.ndarray
    width: int
    height: int
    doc: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        x = _frozen(self.x, np.int64)
        y = _frozen(self.y, np.int64)
        e = np.array(self.edges, dtype=np.int64, copy=True).reshape(-1, 2)
        e.setflags(write=False)
        if x.ndim != 1 or y.shape != x.shape:
            raise DrawingFormatError(f"x and y must be 1-D of equal length, got {x.shape} and {y.shape}")
        n = x.shape[0]
        if e.size and (e.min() < 0 or e.max() >= n):
            raise DrawingFormatError(f"edge endpoint out of range 0..{n - 1}")
        if int(self.width) < 0 or int(self.height) < 0:
            raise DrawingFormatError("width and height must be non-negative")
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "edges", e)
        object.__setattr__(self, "width", int(self.width))
        object.__setattr__(self, "height", int(self.height))

    @property
    def n(self) -> int:
        """Number of vertices."""
        return int(self.x.shape[0])

    @property
    def m(self) -> int:
        """Number of edges."""
        return int(self.edges.shape[0])

    def with_coords(self, x, y) -> "Drawing":
        """Return a new Drawing with the same graph, grid and metadata and coordinates x, y."""
        return Drawing(x, y, self.edges, self.width, self.height, self.doc)

    def incidence(self):
        """Return the CSR incidence lists ``(offsets (n+1,), edge_ids (2m,))``, int64.

        Edges incident to vertex v are ``edge_ids[offsets[v]:offsets[v+1]]`` (ascending).
        """
        n, m = self.n, self.m
        ends = self.edges.reshape(-1)
        eid = np.repeat(np.arange(m, dtype=np.int64), 2)
        order = np.lexsort((eid, ends))
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(ends, minlength=n), out=offsets[1:])
        return offsets, eid[order]


def from_arrays(x, y, edges, width, height) -> Drawing:
    """Build a Drawing from coordinate arrays and an (m, 2) edge array (vertex indices)."""
    return Drawing(x, y, edges, width, height, {})


def _int(v, what):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise DrawingFormatError(f"{what} must be an integer, got {v!r}")
    if isinstance(v, float):
        if not v.is_integer():
            raise DrawingFormatError(f"{what} must be an integer grid coordinate, got {v!r}")
        v = int(v)
    return int(v)


def load(path_or_file) -> Drawing:
    """Read a contest JSON drawing.

    Parameters
    ----------
    path_or_file : str, os.PathLike or file object

    Returns
    -------
    Drawing
        Coordinates as int64; edges mapped from node ids to node positions.

    Raises
    ------
    DrawingFormatError
        Missing keys, non-integer coordinates, unknown or duplicate node ids.
    """
    if isinstance(path_or_file, (str, os.PathLike)):
        with open(path_or_file) as fh:
            doc = json.load(fh)
    else:
        doc = json.load(path_or_file)
    return from_document(doc)


def from_document(doc: dict) -> Drawing:
    """Build a Drawing from an already parsed contest JSON document (see :func:`load`)."""
    try:
        nodes, edges = doc["nodes"], doc["edges"]
        width, height = _int(doc["width"], "width"), _int(doc["height"], "height")
    except KeyError as exc:
        raise DrawingFormatError(f"missing key {exc.args[0]!r} in drawing document") from None
    index = {}
    xs, ys = [], []
    for i, nd in enumerate(nodes):
        try:
            nid = nd["id"]
            xs.append(_int(nd["x"], f"nodes[{i}].x"))
            ys.append(_int(nd["y"], f"nodes[{i}].y"))
        except KeyError as exc:
            raise DrawingFormatError(f"nodes[{i}] lacks {exc.args[0]!r}") from None
        if nid in index:
            raise DrawingFormatError(f"duplicate node id {nid!r}")
        index[nid] = i
    pairs = []
    for j, ed in enumerate(edges):
        try:
            pairs.append((index[ed["source"]], index[ed["target"]]))
        except KeyError as exc:
            raise DrawingFormatError(f"edges[{j}] refers to unknown node or lacks a key: {exc.args[0]!r}") from None
    for c in xs + ys:
        if abs(c) >= 2**62:
            raise DrawingFormatError(f"coordinate {c} does not fit in int64 arithmetic (|c| < 2**62 required)")
    return Drawing(np.array(xs, dtype=np.int64), np.array(ys, dtype=np.int64),
                   np.array(pairs, dtype=np.int64).reshape(-1, 2), width, height, copy.deepcopy(doc))


def to_document(d: Drawing) -> dict:
    """Return the contest JSON document of ``d`` (unknown fields of the source kept)."""
    doc = copy.deepcopy(d.doc) if d.doc else {}
    xs, ys = d.x.tolist(), d.y.tolist()
    if doc.get("nodes") is not None and len(doc["nodes"]) == d.n:
        for nd, xv, yv in zip(doc["nodes"], xs, ys):
            nd["x"], nd["y"] = xv, yv
        ids = [nd["id"] for nd in doc["nodes"]]
    else:
        ids = list(range(d.n))
        doc["nodes"] = [{"id": i, "x": xv, "y": yv} for i, xv, yv in zip(ids, xs, ys)]
    if doc.get("edges") is None or len(doc["edges"]) != d.m:
        doc["edges"] = [{"source": ids[a], "target": ids[b]} for a, b in d.edges.tolist()]
    doc["width"], doc["height"] = d.width, d.height
    return doc


def save(d: Drawing, path_or_file) -> None:
    """Write ``d`` as contest JSON (node order, ids and unknown fields of the source kept)."""
    doc = to_document(d)
    if isinstance(path_or_file, (str, os.PathLike)):
        with open(path_or_file, "w") as fh:
            json.dump(doc, fh)
    else:
        json.dump(doc, path_or_file)

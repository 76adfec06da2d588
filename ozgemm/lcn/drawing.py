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


def _short(c) -> str:
    """An integer for a message (huge ones in scientific notation)."""
    return str(c) if abs(c) < 10**20 else f"{float(c):.3e}"


def _int_array(a, what) -> np.ndarray:
    """A read-only int64 copy of integer-valued ``a``: integer dtypes within int64, or finite
    integral floats / Python ints; anything else (fractions, NaN, strings, bools, values
    beyond int64) raises DrawingFormatError instead of being truncated or wrapped."""
    a = np.asarray(a)
    k = a.dtype.kind
    if k == "i" or (k == "u" and (a.size == 0 or int(a.max()) < 2**63)):
        out = np.array(a, dtype=np.int64, copy=True)
    elif k == "f" and bool(np.all(np.isfinite(a))) and bool(np.all(a == np.round(a))) \
            and (a.size == 0 or float(np.abs(a).max()) < 2.0**63):
        out = np.array(a, dtype=np.int64, copy=True)
    elif k == "O" and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                          and -2**63 <= int(v) < 2**63 for v in a.ravel().tolist()):
        out = np.array([int(v) for v in a.ravel().tolist()], dtype=np.int64).reshape(a.shape)
    else:
        bad = next((v for v in a.ravel().tolist()
                    if isinstance(v, bool) or not isinstance(v, (int, float)) or
                    (isinstance(v, float) and not v.is_integer()) or not -2**63 <= v < 2**63), None)
        raise DrawingFormatError(f"{what} must hold integers within int64, got dtype {a.dtype}"
                                 + (f" (e.g. {bad!r})" if bad is not None else ""))
    out.setflags(write=False)
    return out


def _int_scalar(v, what) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise DrawingFormatError(f"{what} must be an integer, got {v!r}")
    if isinstance(v, (float, np.floating)) and not float(v).is_integer():
        raise DrawingFormatError(f"{what} must be an integer, got {v!r}")
    return int(v)


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
        x = _int_array(self.x, "x")
        y = _int_array(self.y, "y")
        e = _int_array(self.edges, "edges")
        if e.size % 2:
            raise DrawingFormatError(f"edges must be an (m, 2) array of vertex indices, got shape {e.shape}")
        e = e.reshape(-1, 2)
        if x.ndim != 1 or y.shape != x.shape:
            raise DrawingFormatError(f"x and y must be 1-D of equal length, got {x.shape} and {y.shape}")
        n = x.shape[0]
        if e.size and (e.min() < 0 or e.max() >= n):
            raise DrawingFormatError(f"edge endpoint out of range 0..{n - 1}")
        width, height = _int_scalar(self.width, "width"), _int_scalar(self.height, "height")
        if width < 0 or height < 0:
            raise DrawingFormatError("width and height must be non-negative")
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "edges", e)
        object.__setattr__(self, "width", width)
        object.__setattr__(self, "height", height)

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


def _id_key(nid, what):
    """Dictionary key of a JSON scalar node id: true and 1 (equal in Python) stay distinct."""
    if nid is not None and not isinstance(nid, (str, int, float)):
        raise DrawingFormatError(f"{what} must be a JSON scalar (string, number, boolean or null), got {nid!r}")
    return (type(nid) is bool, nid)


def from_document(doc: dict) -> Drawing:
    """Build a Drawing from an already parsed contest JSON document (see :func:`load`)."""
    if not isinstance(doc, dict):
        raise DrawingFormatError(f"a drawing document is a JSON object, got {type(doc).__name__}")
    try:
        nodes, edges = doc["nodes"], doc["edges"]
        width, height = _int(doc["width"], "width"), _int(doc["height"], "height")
    except KeyError as exc:
        raise DrawingFormatError(f"missing key {exc.args[0]!r} in drawing document") from None
    for key, val in (("nodes", nodes), ("edges", edges)):
        if not isinstance(val, list):
            raise DrawingFormatError(f"'{key}' must be a JSON array, got {type(val).__name__}")
    index = {}
    xs, ys = [], []
    for i, nd in enumerate(nodes):
        if not isinstance(nd, dict):
            raise DrawingFormatError(f"nodes[{i}] must be a JSON object, got {type(nd).__name__}")
        try:
            nid = _id_key(nd["id"], f"nodes[{i}].id")
            xs.append(_int(nd["x"], f"nodes[{i}].x"))
            ys.append(_int(nd["y"], f"nodes[{i}].y"))
        except KeyError as exc:
            raise DrawingFormatError(f"nodes[{i}] lacks {exc.args[0]!r}") from None
        if nid in index:
            raise DrawingFormatError(f"duplicate node id {nid[1]!r}")
        index[nid] = i
    pairs = []
    for j, ed in enumerate(edges):
        if not isinstance(ed, dict):
            raise DrawingFormatError(f"edges[{j}] must be a JSON object, got {type(ed).__name__}")
        try:
            pairs.append((index[_id_key(ed["source"], f"edges[{j}].source")],
                          index[_id_key(ed["target"], f"edges[{j}].target")]))
        except KeyError as exc:
            k = exc.args[0]
            k = k[1] if isinstance(k, tuple) else k
            raise DrawingFormatError(f"edges[{j}] refers to unknown node or lacks a key: {k!r}") from None
    for c in xs + ys:
        if abs(c) >= 2**62:
            raise DrawingFormatError(f"coordinate {_short(c)} does not fit in int64 arithmetic (|c| < 2**62 required)")
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

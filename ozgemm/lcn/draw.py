"""Plot a drawing with matplotlib, highlighting the edges at the local crossing number."""
from __future__ import annotations

import numpy as np

from .drawing import Drawing
from .exact import crossings

__all__ = ["plot"]


def plot(d: Drawing, path: str, *, counts=None, dpi: int = 150, title: str | None = None) -> None:
    """Write a PNG (or any matplotlib format, by extension) of ``d`` to ``path``.

    Edges are grey, coloured by crossing count; the edges with count k (the maximum) are
    drawn in red on top. ``counts`` may pass precomputed :class:`Crossings`.
    """
    try:  # an optional dependency (the ``[lcn]`` extra), imported on first use
        import matplotlib
    except ImportError as exc:
        raise ImportError("ozgemm.lcn.draw needs matplotlib: pip install 'ozgemm[lcn]'") from exc

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    c = counts or crossings(d)
    e = d.edges
    seg = np.stack([np.stack([d.x[e[:, 0]], d.y[e[:, 0]]], 1), np.stack([d.x[e[:, 1]], d.y[e[:, 1]]], 1)], 1)
    fig, ax = plt.subplots(figsize=(8, 8 * max(d.height, 1) / max(d.width, 1) if d.width else 8))
    top = c.per_edge == c.k if d.m else np.zeros(0, bool)
    lw = 0.3 if d.m > 3000 else 0.6
    ax.add_collection(LineCollection(seg[~top], colors="0.6", linewidths=lw, zorder=1))
    ax.add_collection(LineCollection(seg[top], colors="red", linewidths=2 * lw + 0.6, zorder=3))
    ax.scatter(d.x, d.y, s=2 if d.n > 2000 else 6, c="k", zorder=2)
    ax.set_xlim(0, max(d.width, 1))
    ax.set_ylim(0, max(d.height, 1))
    ax.set_aspect("equal")
    ax.set_title(title or f"n={d.n} m={d.m}  k={c.k} ({c.at_k} edges at k, red)  total={c.total}")
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)

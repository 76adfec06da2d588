"""Annealer parameters, results, resumable state and energy tables: what the CPU annealer
(:mod:`ozgemm.lcn.solver`) and the GPU annealer (:mod:`ozgemm.lcn.gpu`) share. The algorithm
is described in :mod:`ozgemm.lcn.solver`."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from .drawing import Drawing
from .exact import Crossings, repair, validate

__all__ = ["AnnealParams", "AnnealResult", "AnnealState", "weights", "hinge_base", "edges_fingerprint",
           "CAL_IT", "CAL_BATCH"]

CAL_IT = 1 << 62     # iteration number whose candidates calibrate T0
CAL_BATCH = 256
SEARCH_DEFAULTS = dict(slack_best=True, p_short=0.3, restart=True)
"""Defaults (both devices) of the bound from the best k, hot-edge shortening and restarts where
``AnnealParams`` leaves them ``None``: on, chosen by a 120 s GPU comparison of five parameter
sets on instances 1, 3, 7, 9 and a 600 s H200 run of all nine (docs/design.md, "LCN annealer
design"; docs/performance.md)."""


def _check_params(p) -> None:
    """ValueError (TypeError for a non-integer count) naming the first parameter out of range."""
    def integer(name, lo, hi=None):
        v = getattr(p, name)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"annealing parameter {name} must be an integer, got {v!r}")
        if v < lo or (hi is not None and v > hi):
            raise ValueError(f"annealing parameter {name} must be in [{lo}, {f'{hi}]' if hi is not None else 'inf)'}, "
                             f"got {v}")

    def real(name, lo, hi=None, lo_open=False, hi_open=False):
        v = getattr(p, name)
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
            raise ValueError(f"annealing parameter {name} must be a finite number, got {v!r}")
        if (v <= lo if lo_open else v < lo) or (hi is not None and (v >= hi if hi_open else v > hi)):
            raise ValueError(f"annealing parameter {name} = {v} is out of range "
                             f"{'(' if lo_open else '['}{lo}, {hi if hi is not None else 'inf'}{')' if hi_open or hi is None else ']'}")

    integer("batch", 1)
    integer("batch_min", 1)
    integer("cycle", 2)
    integer("power", 1, 3)
    integer("tournament", 1, 8)
    integer("r_max", 1)
    integer("r_min", 1)
    integer("slack", 0)
    real("t_hi", 0.0, lo_open=True)
    real("t_ratio", 0.0, lo_open=True)  # T1 = T0 t_ratio > 0 (0 divides by zero in exp(-dE / T))
    real("reheat", 0.0)
    real("t_floor", 0.0, lo_open=True)  # the cycle peak T0 max(reheat**c, t_floor) stays > 0
    for name in ("p_uniform", "p_global", "p_bary", "p_short"):
        real(name, 0.0, 1.0)
    if p.p_global + p.p_bary > 1.0:
        raise ValueError(f"annealing parameters p_global + p_bary must be <= 1, got {p.p_global + p.p_bary}")
    real("hinge", 0.0, 1.0, hi_open=True)


@dataclass(frozen=True)
class AnnealParams:
    """Parameters of :func:`anneal` (see the module docstring for their meaning).

    ``None`` for ``batch``, ``cycle``, ``r_max``, ``r_min`` selects a default from the
    device and the grid: batch 64 (CPU) / 1024 (GPU); cycle 4000 (CPU) / 32000 (GPU);
    ``r_max = max(2, max(width, height) // 8)``; ``r_min = max(1, max(width, height) // 2000)``.
    ``None`` for ``slack_best``, ``p_short``, ``restart`` selects ``SEARCH_DEFAULTS`` (on) on both devices (see the module docstring).
    """

    batch: int | None = None
    batch_min: int = 16
    cycle: int | None = None
    power: int = 2
    t_hi: float = 0.3
    t_ratio: float = 1e-3
    reheat: float = 1.0
    t_floor: float = 0.01
    p_uniform: float = 0.2
    tournament: int = 4
    p_global: float = 0.1
    p_bary: float = 0.0
    r_max: int | None = None
    r_min: int | None = None
    slack: int = 3
    slack_best: bool | None = None
    p_short: float | None = None
    restart: bool | None = None
    recal: bool = True
    hinge: float = 0.5

    def resolved(self, d: Drawing, device: str) -> "AnnealParams":
        side = max(d.width, d.height, 1)
        p = replace(
            self,
            batch=self.batch or (1024 if device == "gpu" else 64),
            cycle=self.cycle or (32_000 if device == "gpu" else 4000),
            r_max=self.r_max or max(2, side // 8),
            r_min=self.r_min or max(1, side // 2000),
        )
        # bound from the best k, hot-edge shortening, restarts: SEARCH_DEFAULTS where None
        p = replace(
            p,
            slack_best=SEARCH_DEFAULTS["slack_best"] if p.slack_best is None else bool(p.slack_best),
            p_short=SEARCH_DEFAULTS["p_short"] if p.p_short is None else float(p.p_short),
            restart=SEARCH_DEFAULTS["restart"] if p.restart is None else bool(p.restart),
        )
        _check_params(p)
        if p.r_min > p.r_max:
            p = replace(p, r_min=p.r_max)
        return p

    @property
    def batch_min_eff(self) -> int:
        return min(self.batch_min, self.batch)

    @property
    def batch_first(self) -> int:
        return self.batch_min_eff


@dataclass
class AnnealResult:
    """Outcome of :func:`anneal`.

    drawing : the best drawing found (valid); crossings : its exact counts, recomputed from
    scratch on the CPU with :func:`crossings`; initial : counts of the (repaired) start
    (None for a resumed run: see ``state.initial``);
    history : list of dicts (seconds, iteration, k, at_k, total, best_k, best_at_k,
    best_total) read back at intervals; iterations, accepted, evaluations : counters;
    seconds : wall time of the annealing loop (of all segments of a resumed run); device :
    "cpu" or "gpu"; seed; params; state : the :class:`AnnealState` at the end (for
    ``anneal(..., resume=state)``).
    """

    drawing: Drawing
    crossings: Crossings
    initial: Crossings
    repaired: bool
    history: list = field(default_factory=list)
    iterations: int = 0
    accepted: int = 0
    evaluations: int = 0
    seconds: float = 0.0
    device: str = "cpu"
    seed: int = 0
    params: dict = field(default_factory=dict)
    state: "AnnealState | None" = None


@dataclass
class AnnealState:
    """The complete state of an annealing run between two iterations, for an exact resume.

    x, y : current coordinates; bx, by : coordinates of the best drawing; counts : exact
    per-edge crossing counts of the current drawing; it : next iteration number; beff :
    adaptive batch size of that iteration; T0 : calibrated temperature in force (the start
    calibration, or the last re-calibration with ``recal``); base : hinge of the energy table
    in force (-1: none); best : objective (k, edges at k, total) of the best drawing;
    accepted, evals : counters; elapsed : annealing seconds so far; initial : objective of
    the (repaired) start drawing; repaired; seed; device; params : the resolved
    :class:`AnnealParams` as a dict; edges_sha : SHA-256 of the edge list, n, m, width,
    height (checked on resume).

    ``anneal(d, resume=state, iterations=N)`` continues at iteration ``state.it``; the
    trajectory is exactly the one of an uninterrupted run (same device, seed, parameters).
    """

    x: np.ndarray
    y: np.ndarray
    bx: np.ndarray
    by: np.ndarray
    counts: np.ndarray
    it: int
    beff: int
    T0: float
    base: int
    best: tuple
    accepted: int
    evals: int
    elapsed: float
    initial: tuple
    repaired: bool
    seed: int
    device: str
    params: dict
    edges_sha: str

    _ARRAYS = ("x", "y", "bx", "by", "counts")

    def save(self, path) -> None:
        """Write the state to ``path`` (NumPy ``.npz``; scalars as JSON)."""
        import json
        meta = {k: v for k, v in asdict(self).items() if k not in self._ARRAYS}
        np.savez(path, meta=np.array(json.dumps(meta)), **{k: np.asarray(getattr(self, k), dtype=np.int64)
                                                             for k in self._ARRAYS})

    @classmethod
    def load(cls, path) -> "AnnealState":
        """Read a state written by :meth:`save` (``.npz`` is appended when ``path`` lacks it,
        as :meth:`save` does)."""
        import json
        import os
        if not os.path.exists(path) and os.path.exists(str(path) + ".npz"):
            path = str(path) + ".npz"
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            arrs = {k: z[k].astype(np.int64) for k in cls._ARRAYS}
        meta["best"], meta["initial"] = tuple(meta["best"]), tuple(meta["initial"])
        return cls(**arrs, **meta)


def edges_fingerprint(d: Drawing) -> str:
    """SHA-256 of (n, m, width, height, edge list) of ``d`` (identifies the instance of a state)."""
    import hashlib
    h = hashlib.sha256(np.array([d.n, d.m, d.width, d.height], dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(d.edges, dtype=np.int64).tobytes())
    return h.hexdigest()


def _check_resume(drawing: Drawing, state: AnnealState, p: "AnnealParams", seed: int, device: str):
    if state.edges_sha != edges_fingerprint(drawing):
        raise ValueError("resume state belongs to another instance (edge list / grid differ)")
    if state.device != device or state.seed != seed or state.params != asdict(p):
        raise ValueError(f"resume state was made with device={state.device}, seed={state.seed}, "
                         f"params={state.params}; got device={device}, seed={seed}, params={asdict(p)}")
    if len(state.x) != drawing.n or len(state.counts) != drawing.m:
        raise ValueError("resume state has the wrong size")
    for what, xs, ys in (("current", state.x, state.y), ("best", state.bx, state.by)):
        if validate(drawing.with_coords(xs, ys)):
            raise ValueError(f"resume state: its {what} drawing is not valid")


def weights(m: int, power: int, base: int = -1) -> np.ndarray:
    """Energy table for c = 0..m (int64): ``W[c] = c**power`` when ``base < 0`` (default),
    else the hinge ``W[c] = max(0, c - base)**power + c`` (``AnnealParams.hinge``).
    Raises OverflowError if the sum over m edges could overflow int64."""
    if m * (m ** power + m) >= 2**62:
        raise OverflowError(f"energy c**{power} summed over {m} edges may overflow int64; use a lower power")
    c = np.arange(m + 1, dtype=np.int64)
    if base < 0:
        return c ** power
    return np.maximum(c - base, 0) ** power + c


def hinge_base(p: "AnnealParams", best_k: int) -> int:
    """The hinge of the energy table for a cycle: ``floor(hinge * best_k)`` (-1: no hinge).

    ``best_k`` is the best k found before the cycle starts (the start drawing's k for the
    first cycle). Computed on the host for both devices (integer: ``hinge`` is first turned
    into a multiple of 2**-20)."""
    if p.hinge <= 0.0:
        return -1
    return (int(best_k) * int(p.hinge * (1 << 20))) >> 20


def _t0_from(des, p):
    if len(des) == 0:
        return max(1.0, p.t_hi)
    return max(1.0, p.t_hi * float(np.median(np.asarray(des, dtype=np.float64))))


def _prepare(drawing: Drawing, do_repair: bool, seed: int):
    viol = validate(drawing)
    if viol:
        if not do_repair:
            raise ValueError(f"input drawing is invalid ({len(viol)} violations, e.g. {viol[0]}); "
                             "pass repair=True")
        return repair(drawing, seed=seed), True
    return drawing, False

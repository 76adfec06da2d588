"""Simulated annealing for the local crossing number, on the CPU (NumPy) or the GPU (CuPy).

Algorithm (identical on both devices; the CUDA version is ``lcn_kernels.cu``)
----------------------------------------------------------------------------
State: a *valid* drawing, exact per-edge crossing counts ``c``, their histogram, ``k``.

Iteration ``it`` (``q = it mod cycle``):

* temperature ``T = peak * (T1/T0) ** (q / cycle)`` with ``peak = T0 * max(reheat**(it //
  cycle), t_floor)`` (geometric cooling within a cycle; each new cycle reheats, to a peak that
  decays from cycle to cycle) and move radius ``r = r_min + (r_max - r_min)*(cycle-1-q) // (cycle-1)``;
* ``B_it`` candidate moves ``j = 0..B_it-1`` (adaptive batch: ``B_0 = min(batch_min, batch)``;
  after an iteration ``B`` doubles, up to ``batch``, when no candidate was accepted, and
  halves, down to ``min(batch_min, batch)``, when the accepted one had ``4*j < B``; this
  only moves iteration boundaries). Candidate ``j`` picks a vertex: with
  probability ``p_uniform`` uniformly, else an endpoint of the edge with the largest count
  among ``tournament`` uniformly drawn edges (tournament selection concentrates moves on
  the edges at or near k); and a target point: with probability ``p_global`` uniform on
  the grid, with probability ``p_bary`` a uniform offset in ``[-r, r]^2`` from the
  barycentre of its neighbours (integer floor of the mean), with probability ``p_short``
  (only when the vertex came from the tournament) the point at fraction ``t/1024`` (``t``
  uniform in ``0..1023``, floor division) of the way from ``v`` to the other endpoint of the
  tournament's edge plus a uniform offset in ``[-r, r]^2`` ("shorten the hot edge": a
  shorter edge crosses fewer edges), else a uniform offset in ``[-r, r]^2`` from its current
  position. All random numbers are counter-based
  (:mod:`ozgemm.lcn.rng`), a function of ``(seed, it, j, draw)``;
* with ``restart``, at the start of every cycle but the first (``it > 0``, ``q = 0``) the
  state is reset to the best drawing found so far (counts recounted from scratch), so every
  reheat explores around the best drawing instead of wherever the last cycle drifted to;
* the *first* candidate (in index order) that (a) is a real move inside the grid, (b) keeps
  the drawing valid, (c) leaves every count ``<= K + slack`` (``K`` = the current k, or the
  best k found so far with ``slack_best``; without it k can ratchet up by ``slack`` again
  and again while the energy falls) and (d) passes the Metropolis
  test ``dE <= 0 or u < exp(-dE/T)`` is applied. Rejected candidates do not change the
  state, so this is exactly sequential simulated annealing; the GPU evaluates the whole
  batch in parallel, the CPU stops at the first accepted candidate.

Energy (guides the search): ``E = sum_e W[c_e]`` with ``W[c] = c**power`` (int64, exact;
default power 2), which spreads crossings evenly and so pushes the maximum down, or the
hinge table of ``hinge`` (below; on by default); a move
may raise k by at most ``slack`` (default 3) above ``K`` (see (c)). Reported objective (and the "best" drawing kept):
lexicographic ``(k, number of edges at k, total crossings)``.

``T0 = t_hi * median(dE > 0)`` over a fixed calibration batch of 256 candidates of the
input drawing; ``T1 = T0 * t_ratio``.

Cycle boundaries (``it > 0``, ``it % cycle == 0``), in this order: with ``restart`` the
state is reset to the best drawing (see above); with ``hinge > 0`` the energy table becomes
``W[c] = max(0, c - b)**power + c`` with ``b = floor(hinge * best k)`` (the first cycle uses
the start drawing's k): counts below ``b`` cost only their total, so the energy concentrates
on the edges near the maximum; with ``recal`` T0 is re-calibrated on the current drawing
(the calibration candidates of iteration ``CAL_IT + it``), so the temperature follows the
energy scale of the drawing being improved instead of the start drawing's.

Defaults (both devices): ``slack_best``, ``p_short = 0.3``, ``restart``, ``recal``,
``reheat = 1`` (every cycle re-anneals from the re-calibrated T0), ``hinge = 0.5``; cycle
32,000 iterations on the GPU (4,000 on the CPU). This configuration (restarts +
re-calibration + hinge) won a 120 s GPU comparison of five parameter sets on instances 1, 3,
7, 9 (mean k / reference k 1.84 against 2.54; docs/design.md, "LCN annealer design"); at equal
iteration counts over 600 s on the H200 it is better than the plain schedule (all of these
off, reheat 0.5, cycle 100,000) on instances 1, 2, 3, 5, 6, 7, 8 and worse on 4 and 9.
``AnnealParams(slack_best=False, p_short=0.0, restart=False, recal=False, hinge=0.0,
reheat=0.5, cycle=100_000)`` selects that plain schedule.

Reproducibility: for a given device, input, seed and parameters the trajectory is a pure
function of the iteration number; a run limited by ``iterations`` is bit-reproducible, a
run limited by ``seconds`` follows the same trajectory and stops where the time runs out.
CPU and GPU use the same random numbers and integer arithmetic; only the
``exp``/``pow`` of the acceptance test may round differently (1 ulp) between libm and CUDA.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict

import numpy as np

from .rng import below, draw, unit
from ._common import (CAL_BATCH, CAL_IT, AnnealParams, AnnealResult, AnnealState, _check_resume,
                      _prepare, _t0_from, edges_fingerprint, hinge_base, weights)
from .drawing import Drawing
from .exact import CoordinateRangeError, MoveEvaluator, _Inc, _summary, crossings
from .gpu import anneal_gpu

__all__ = ["AnnealParams", "AnnealResult", "AnnealState", "anneal", "check_anneal_args", "weights", "hinge_base", "edges_fingerprint",
           "CAL_IT", "CAL_BATCH"]

def _radius(p: AnnealParams, it: int) -> int:
    q = it % p.cycle
    return p.r_min + ((p.r_max - p.r_min) * (p.cycle - 1 - q)) // (p.cycle - 1)


def _temperature(p: AnnealParams, T0: float, it: int) -> float:
    q = it % p.cycle
    peak = T0 * max(math.pow(p.reheat, float(it // p.cycle)), p.t_floor)
    return peak * math.pow((T0 * p.t_ratio) / T0, q / p.cycle)


def _candidate(seed, it, j, p: AnnealParams, d: Drawing, c, x, y, r, inc=None):
    """Candidate move j of iteration it: (v, nx, ny, trivial). Mirrors lcn_candidate (CUDA)."""
    n, m = d.n, d.m
    w_hot = -1
    if m == 0 or unit(draw(seed, it, j, 0)) < p.p_uniform:
        v = below(draw(seed, it, j, 1), n)
    else:
        best, bc = -1, -1
        for t in range(p.tournament):
            e = below(draw(seed, it, j, 2 + t), m)
            if c[e] > bc:
                best, bc = e, int(c[e])
        side = draw(seed, it, j, 1) >> 63
        v = int(d.edges[best, side])
        w_hot = int(d.edges[best, 1 - side])  # the other endpoint of the selected (hot) edge
    u = unit(draw(seed, it, j, 10))
    pb = p.p_global + p.p_bary
    if u < p.p_global:
        nx = below(draw(seed, it, j, 11), d.width + 1)
        ny = below(draw(seed, it, j, 12), d.height + 1)
    elif u < pb:
        inc = inc if inc is not None else _Inc(d)
        E = inc.of(v)
        if E.size:
            e = d.edges[E]
            w = np.where(e[:, 0] == v, e[:, 1], e[:, 0])
            cx, cy = int(x[w].sum()) // E.size, int(y[w].sum()) // E.size
        else:
            cx, cy = int(x[v]), int(y[v])
        nx = cx + below(draw(seed, it, j, 11), 2 * r + 1) - r
        ny = cy + below(draw(seed, it, j, 12), 2 * r + 1) - r
    elif u < pb + p.p_short and w_hot >= 0:
        # shorten the hot edge: a point at fraction t/1024 of the way from v to its other
        # endpoint (floor division), plus a uniform offset in [-r, r]^2
        t = below(draw(seed, it, j, 14), 1024)
        nx = int(x[v]) + ((int(x[w_hot]) - int(x[v])) * t) // 1024 + below(draw(seed, it, j, 11), 2 * r + 1) - r
        ny = int(y[v]) + ((int(y[w_hot]) - int(y[v])) * t) // 1024 + below(draw(seed, it, j, 12), 2 * r + 1) - r
    else:
        nx = int(x[v]) + below(draw(seed, it, j, 11), 2 * r + 1) - r
        ny = int(y[v]) + below(draw(seed, it, j, 12), 2 * r + 1) - r
    trivial = nx < 0 or ny < 0 or nx > d.width or ny > d.height or (nx == int(x[v]) and ny == int(y[v]))
    return v, nx, ny, trivial


def _evaluate_cpu(ev: MoveEvaluator, c, Wt, v, nx, ny):
    """(ok, dE, max_new, delta) of one non-trivial candidate; delta None when invalid."""
    if not ev.valid(v, nx, ny):
        return False, 0, -1, None
    delta = ev.delta(v, nx, ny)
    nz = np.nonzero(delta)[0]
    if nz.size == 0:
        return True, 0, -1, delta
    cn = c[nz] + delta[nz]
    return True, int((Wt[cn] - Wt[c[nz]]).sum()), int(cn.max()), delta


def _calibrate_cpu(d, p, seed, ev, c, Wt, cal_it=CAL_IT):
    T0s = []
    r = _radius(p, cal_it)  # the candidates of iteration cal_it, exactly as the GPU draws them
    for j in range(CAL_BATCH):
        v, nx, ny, triv = _candidate(seed, cal_it, j, p, d, c, ev.x, ev.y, r, ev.inc)
        if triv:
            continue
        ok, de, _, _ = _evaluate_cpu(ev, c, Wt, v, nx, ny)
        if ok and de > 0:
            T0s.append(de)
    return _t0_from(T0s, p)


def check_anneal_args(drawing: Drawing, *, seconds=None, iterations=None, seed: int = 0, device: str = "auto",
                      params: "AnnealParams | None" = None, resume=None) -> str:
    """Check :func:`anneal`'s arguments without running anything; return the device to use.

    Used by :func:`anneal` itself and by ``ozgemm lcn solve`` before it spends time on a
    start layout. Raises as :func:`anneal` does (ValueError, TypeError,
    CoordinateRangeError, RuntimeError when ``device="gpu"`` and no GPU is visible).
    """
    if seconds is None and iterations is None:
        raise ValueError("give seconds= or iterations=")
    if seconds is not None and not seconds >= 0:
        raise ValueError(f"seconds must be >= 0, got {seconds}")
    if iterations is not None and int(iterations) < 0:
        raise ValueError(f"iterations must be >= 0, got {iterations}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"device must be 'cpu', 'gpu' or 'auto', got {device!r}")
    if params is not None and not isinstance(params, AnnealParams):
        raise TypeError(f"params must be an AnnealParams, got {type(params).__name__}")
    if resume is not None and not isinstance(resume, AnnealState):
        raise TypeError(f"resume must be an AnnealState (AnnealState.load(path)), got {type(resume).__name__}")
    if drawing.width * drawing.height > 2**62 - 1 or max(drawing.width, drawing.height) >= 2**32 - 1:
        raise CoordinateRangeError(f"grid {drawing.width}x{drawing.height} too large for the exact int64 annealer")
    if drawing.n == 0:
        raise ValueError("empty drawing")
    from .._xp import gpu_available
    if device == "auto":
        device = "gpu" if gpu_available() else "cpu"
    elif device == "gpu" and not gpu_available():
        raise RuntimeError("device='gpu' but CuPy sees no CUDA GPU")
    (params or AnnealParams()).resolved(drawing, device)  # parameter range checks
    return device


def anneal(drawing: Drawing, *, seconds: float | None = None, iterations: int | None = None,
           seed: int = 0, device: str = "auto", params: AnnealParams | None = None,
           repair: bool = True, progress=None, report_every: float = 1.0,
           resume: AnnealState | None = None) -> AnnealResult:
    """Minimise the local crossing number of ``drawing`` by simulated annealing.

    Parameters
    ----------
    drawing : Drawing
        Start layout (not modified). If invalid it is first made valid with
        :func:`ozgemm.lcn.repair` (or ValueError if ``repair=False``).
    seconds, iterations : stop after this wall time (s) / number of iterations (at least
        one must be given; whichever comes first).
    seed : int, 0 <= seed < 2**64
    device : "cpu", "gpu" or "auto" (GPU when CuPy sees one).
    params : AnnealParams
    progress : callable(dict) or None, called with each history record.
    report_every : seconds between history records (the GPU state is read back only then).
    resume : AnnealState or None
        Continue the run that ended in this state (``AnnealResult.state``; same input
        drawing, device, seed and params): ``iterations`` then counts from 0 of the whole
        run (a run of N iterations resumed with ``iterations=2N`` equals one run of 2N), and
        ``seconds`` limits this call only. No repair or calibration is done again.

    Returns
    -------
    AnnealResult (best valid drawing under the objective (k, edges at k, total)).

    Raises
    ------
    ValueError for bad arguments or an unrepairable input; CoordinateRangeError if the grid
    is too large for exact int64 arithmetic (width*height > 2**62 - 1) or for the 32-bit
    random ranges (side >= 2**32 - 1); RuntimeError if device="gpu" and no GPU.
    """
    device = check_anneal_args(drawing, seconds=seconds, iterations=iterations, seed=seed, device=device,
                               params=params, resume=resume)
    if resume is not None:
        p = (params or AnnealParams()).resolved(drawing, device)
        _check_resume(drawing, resume, p, int(seed), device)
        start, repaired = drawing, resume.repaired
    else:
        start, repaired = _prepare(drawing, repair, seed)
        p = (params or AnnealParams()).resolved(start, device)
    if device == "gpu":
        return anneal_gpu(start, repaired, p, int(seed), seconds, iterations, progress, report_every,
                          resume=resume)
    return _anneal_cpu(start, repaired, p, int(seed), seconds, iterations, progress, report_every, resume)


def _anneal_cpu(d, repaired, p, seed, seconds, iterations, progress, report_every, resume=None):
    if resume is not None:
        d = d.with_coords(resume.x, resume.y)
    ev = MoveEvaluator(d)
    cur = crossings(d)
    c = cur.per_edge.copy()
    m = d.m
    hist = np.bincount(c, minlength=m + 1).astype(np.int64)
    k, sumc = cur.k, int(c.sum())
    if resume is None:
        init = cur.objective
        best = cur.objective
        bx, by = ev.x.copy(), ev.y.copy()
        base = hinge_base(p, best[0])
        Wt = weights(m, p.power, base)
        T0 = _calibrate_cpu(d, p, seed, ev, c, Wt)
        it = accepted = evals = 0
        beff = p.batch_first
        t_prev = 0.0
    else:
        if c.tolist() != resume.counts.tolist():
            raise ValueError("resume state: stored counts differ from the recount of its drawing")
        init, best = tuple(resume.initial), tuple(resume.best)
        bx, by = resume.bx.astype(np.int64).copy(), resume.by.astype(np.int64).copy()
        base, T0, it, beff = resume.base, resume.T0, resume.it, resume.beff
        accepted, evals, t_prev = resume.accepted, resume.evals, resume.elapsed
        Wt = weights(m, p.power, base)
    hist_rec = []
    t_start = time.perf_counter()
    next_report = 0.0

    def record(now):
        rec = dict(seconds=round(t_prev + now, 3), iteration=it, k=int(k), at_k=int(hist[k]), total=sumc // 2,
                   best_k=best[0], best_at_k=best[1], best_total=best[2], accepted=accepted, evaluations=evals)
        hist_rec.append(rec)
        if progress:
            progress(rec)

    while True:
        now = time.perf_counter() - t_start
        if now >= next_report:
            record(now)
            next_report = now + report_every
        if (iterations is not None and it >= iterations) or (seconds is not None and now >= seconds):
            break
        if it > 0 and it % p.cycle == 0 and (p.restart or p.recal or p.hinge > 0):
            # cycle boundary: restart from the best drawing (full recount), rebuild the hinge
            # energy from the best k, re-calibrate T0 on the current drawing
            if p.restart:
                ev.x[:], ev.y[:] = bx, by
                ev._refresh_edges()
                c = crossings(ev.drawing()).per_edge.copy()
                hist = np.bincount(c, minlength=m + 1).astype(np.int64)
                k, sumc = int(c.max(initial=0)), int(c.sum())
            if p.hinge > 0:
                base = hinge_base(p, best[0])
                Wt = weights(m, p.power, base)
            if p.recal:
                T0 = _calibrate_cpu(d, p, seed, ev, c, Wt, CAL_IT + it)
        r = _radius(p, it)
        T = _temperature(p, T0, it)
        chosen = -1
        for j in range(beff):
            v, nx, ny, triv = _candidate(seed, it, j, p, d, c, ev.x, ev.y, r, ev.inc)
            if triv:
                continue
            evals += 1
            ok, de, mx, delta = _evaluate_cpu(ev, c, Wt, v, nx, ny)
            if not ok or mx > (best[0] if p.slack_best else k) + p.slack:
                continue
            if de <= 0 or unit(draw(seed, it, j, 13)) < math.exp(-de / T):
                nz = np.nonzero(delta)[0]
                np.subtract.at(hist, c[nz], 1)
                c[nz] += delta[nz]
                np.add.at(hist, c[nz], 1)
                sumc += int(delta.sum())
                ev.apply(v, nx, ny)
                k = max(k, mx)
                while k > 0 and hist[k] == 0:
                    k -= 1
                obj = (int(k), int(hist[k]), sumc // 2)
                if obj < best:
                    best = obj
                    bx[:], by[:] = ev.x, ev.y
                accepted += 1
                chosen = j
                break
        if chosen < 0:
            beff = min(p.batch, 2 * beff)
        elif 4 * chosen < beff:
            beff = max(p.batch_min_eff, beff // 2)
        it += 1
    elapsed = time.perf_counter() - t_start
    record(elapsed)
    out = d.with_coords(np.asarray(bx, dtype=np.int64), np.asarray(by, dtype=np.int64))
    final = crossings(out)
    if final.objective != best:
        raise AssertionError(f"incremental objective {best} disagrees with recount {final.objective}")
    state = AnnealState(x=ev.x.astype(np.int64).copy(), y=ev.y.astype(np.int64).copy(), bx=np.asarray(bx).copy(),
                        by=np.asarray(by).copy(), counts=c.astype(np.int64).copy(), it=int(it), beff=int(beff),
                        T0=float(T0), base=int(base), best=tuple(int(v) for v in best), accepted=int(accepted),
                        evals=int(evals), elapsed=t_prev + elapsed, initial=tuple(int(v) for v in init),
                        repaired=bool(repaired), seed=int(seed), device="cpu", params=asdict(p),
                        edges_sha=edges_fingerprint(d))
    initial = cur if resume is None else None
    return AnnealResult(out, final, initial, repaired, hist_rec, it, accepted, evals, t_prev + elapsed, "cpu", seed,
                        asdict(p) | {"T0": T0}, state)

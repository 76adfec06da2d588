"""GPU (CuPy) back end of ozgemm.lcn: tiled full recount, batched move deltas, annealing.

The kernels are in ``lcn_kernels.cu`` (compiled once per process with NVRTC through
``cupy.RawModule`` and cached). All counts, coordinates, the annealing state and the
random numbers (counter-based, no stored state) live on the device; the host reads back
a few scalars at intervals.

Exactness: int64 coordinates; the host refuses (:class:`CoordinateRangeError`) grids or
drawings whose extents violate ``Dx*Dy <= 2**62 - 1``.
"""
from __future__ import annotations

import functools
import importlib.resources
import time
from dataclasses import asdict

import numpy as np

from .._xp import cupy_or_none, to_numpy
from ._common import (CAL_BATCH, CAL_IT, AnnealParams, AnnealResult, AnnealState, _check_resume, _prepare,
                      _t0_from, edges_fingerprint, hinge_base, weights)
from .drawing import Drawing
from .exact import CoordinateRangeError, Crossings, _summary, crossings, int64_exact

__all__ = ["crossings_gpu", "GpuState", "anneal_gpu", "MAXDEG"]

MAXDEG = 1024  # LCN_MAXDEG in lcn_kernels.cu
_ST = dict(IT=0, K=1, SUMC=2, CHOSEN=3, BEST_K=4, BEST_AT=5, BEST_TOT=6, ACCEPTED=7, IMPROVED=8, EVALS=9, DSUM=10,
           BEFF=11)


def _cp():
    cp = cupy_or_none()
    if cp is None:
        raise RuntimeError("ozgemm.lcn GPU back end needs CuPy and a CUDA GPU")
    return cp


@functools.lru_cache(maxsize=None)
def _module(device_id: int):
    cp = _cp()
    src = importlib.resources.files("ozgemm.lcn").joinpath("lcn_kernels.cu").read_text()
    with cp.cuda.Device(device_id):
        return cp.RawModule(code=src, options=("--std=c++17",))


@functools.lru_cache(maxsize=None)
def _function(device_id: int, name: str):
    return _module(device_id).get_function(name)


def _kernel(name):
    cp = _cp()
    return _function(cp.cuda.Device().id, name)


def _check_exact(d: Drawing, grid: bool):
    xs = np.concatenate([d.x, [0, d.width]]) if grid else d.x
    ys = np.concatenate([d.y, [0, d.height]]) if grid else d.y
    if not int64_exact(xs, ys):
        raise CoordinateRangeError("coordinates too far apart for exact int64 predicates on the GPU "
                                   "(need (max x - min x)*(max y - min y) <= 2**62 - 1); use the CPU path")


def _count(cp, x, y, eu, ev, m):
    cnt = cp.zeros(m, dtype=cp.int32)
    if m:
        t = (m + 255) // 256
        _kernel("lcn_count_all")((t, t), (256,), (x, y, eu, ev, np.int32(m), cnt))
    return cnt


def crossings_gpu(d: Drawing) -> Crossings:
    """Exact per-edge crossing counts of ``d`` computed on the GPU (same result as :func:`crossings`).

    Tiled all-pairs kernel (256 x 256 edge tiles, each unordered pair tested once, integer
    atomics). Returns numpy arrays. Raises RuntimeError without a GPU and
    CoordinateRangeError beyond the int64 bound.
    """
    cp = _cp()
    _check_exact(d, grid=False)
    x, y = cp.asarray(d.x), cp.asarray(d.y)
    eu = cp.asarray(d.edges[:, 0].astype(np.int32))
    ev = cp.asarray(d.edges[:, 1].astype(np.int32))
    return _summary(to_numpy(_count(cp, x, y, eu, ev, d.m)).astype(np.int64))


class GpuState:
    """Device-resident drawing, counts and annealing state (see :func:`anneal_gpu`).

    ``evaluate(v, nx, ny)`` evaluates a batch of given moves at once (per move: energy change
    dE (int64), largest changed count (-1 if none), ok = 1 valid / 0 invalid / -1 trivial).
    """

    def __init__(self, d: Drawing, p, seed: int, T0: float = 1.0, base: int | None = None):
        cp = self.cp = _cp()
        _check_exact(d, grid=True)
        self.d, self.p, self.seed = d, p, seed
        n, m = d.n, d.m
        off, eid = d.incidence()
        if int(np.diff(off).max(initial=0)) > MAXDEG:
            raise ValueError(f"maximum degree {int(np.diff(off).max())} exceeds the GPU limit {MAXDEG}")
        self.n, self.m = n, m
        self.x, self.y = cp.asarray(d.x), cp.asarray(d.y)
        self.bx, self.by = self.x.copy(), self.y.copy()
        self.eu = cp.asarray(d.edges[:, 0].astype(np.int32))
        self.ev = cp.asarray(d.edges[:, 1].astype(np.int32))
        self.off = cp.asarray(off.astype(np.int32))
        self.inc = cp.asarray(eid.astype(np.int32))
        self.cnt = _count(cp, self.x, self.y, self.eu, self.ev, m)
        self.hist = cp.bincount(self.cnt, minlength=m + 1).astype(cp.int32)
        self.dinc = cp.zeros(MAXDEG, dtype=cp.int32)
        c = to_numpy(self.cnt).astype(np.int64)
        self.initial = _summary(c)
        st = np.zeros(16, dtype=np.int64)
        st[_ST["K"]] = self.initial.k
        st[_ST["SUMC"]] = int(c.sum())
        st[_ST["CHOSEN"]] = -1
        st[_ST["BEST_K"]], st[_ST["BEST_AT"]], st[_ST["BEST_TOT"]] = self.initial.objective
        st[_ST["BEFF"]] = p.batch_first
        self.st = cp.asarray(st)
        self.set_weights(hinge_base(p, self.initial.k) if base is None else base)
        self.set_temperature(T0)
        self._alloc(max(p.batch, 256))

    def set_weights(self, base: int):
        """Energy table ``weights(m, power, base)`` (in place once allocated, so captured
        CUDA graphs see the new table)."""
        self.base = int(base)
        W = self.cp.asarray(weights(self.m, self.p.power, self.base))
        if getattr(self, "W", None) is None:
            self.W = W
        else:
            self.W[...] = W

    def set_temperature(self, T0: float):
        """Set the calibrated temperature T0 (in place once allocated, like :meth:`set_weights`)."""
        p, cp = self.p, self.cp
        ip = np.array([0, self.n, self.m, self.d.width, self.d.height, p.cycle, p.r_min, p.r_max,
                       p.tournament, p.slack, int(p.slack_best)], dtype=np.int64)
        ip[0] = np.array([self.seed], dtype=np.uint64).view(np.int64)[0]
        self.T0 = float(T0)
        dp = np.array([p.p_uniform, p.p_global, self.T0, self.T0 * p.t_ratio, p.reheat, p.t_floor,
                       p.p_bary, p.p_short], dtype=np.float64)
        if getattr(self, "dp", None) is None:
            self.ip, self.dp = cp.asarray(ip), cp.asarray(dp)
        else:
            self.ip[...] = cp.asarray(ip)
            self.dp[...] = cp.asarray(dp)

    def cycle_boundary(self, it: int):
        """The work at the start of cycle ``it // cycle`` (it > 0, ``it % cycle == 0``), as in
        solver._anneal_cpu: restart from the best drawing (``restart``), rebuild the hinge
        energy from the best k (``hinge``), re-calibrate T0 on the current drawing (``recal``).
        Runs on the current stream; the hinge and the calibration read scalars back (sync)."""
        p = self.p
        if p.restart:
            self.restart_from_best()
        if p.hinge > 0:
            self.set_weights(hinge_base(p, self.scalars()["BEST_K"]))
        if p.recal:
            self.set_temperature(self.calibrate(CAL_IT + it))

    def load_state(self, state):
        """Continue from an :class:`ozgemm.lcn.solver.AnnealState` (the GpuState must have been
        built on ``d.with_coords(state.x, state.y)``): checks the recount against the stored
        counts, then sets the best drawing, T0, the energy table and the scalars."""
        cp = self.cp
        if to_numpy(self.cnt).astype(np.int64).tolist() != np.asarray(state.counts).tolist():
            raise ValueError("resume state: stored counts differ from the GPU recount of its drawing")
        self.bx[...] = cp.asarray(np.asarray(state.bx, dtype=np.int64))
        self.by[...] = cp.asarray(np.asarray(state.by, dtype=np.int64))
        self.set_weights(state.base)
        self.set_temperature(state.T0)
        st = to_numpy(self.st)
        st[_ST["IT"]], st[_ST["BEFF"]] = state.it, state.beff
        st[_ST["BEST_K"]], st[_ST["BEST_AT"]], st[_ST["BEST_TOT"]] = state.best
        st[_ST["ACCEPTED"]], st[_ST["EVALS"]] = state.accepted, state.evals
        self.st[...] = cp.asarray(st)

    def state(self, elapsed: float, initial, repaired: bool):
        """The complete annealing state (:class:`ozgemm.lcn.solver.AnnealState`) after the
        queued work (synchronises the current stream)."""
        s = self.scalars()
        return AnnealState(x=to_numpy(self.x).astype(np.int64), y=to_numpy(self.y).astype(np.int64),
                           bx=to_numpy(self.bx).astype(np.int64), by=to_numpy(self.by).astype(np.int64),
                           counts=self.counts(), it=s["IT"], beff=s["BEFF"], T0=self.T0, base=self.base,
                           best=(s["BEST_K"], s["BEST_AT"], s["BEST_TOT"]), accepted=s["ACCEPTED"],
                           evals=s["EVALS"], elapsed=float(elapsed), initial=tuple(int(v) for v in initial),
                           repaired=bool(repaired), seed=int(self.seed), device="gpu", params=asdict(self.p),
                           edges_sha=edges_fingerprint(self.d))

    def _alloc(self, B):
        cp = self.cp
        self.B = B
        self.out_v = cp.zeros(B, dtype=cp.int32)
        self.out_x = cp.zeros(B, dtype=cp.int64)
        self.out_y = cp.zeros(B, dtype=cp.int64)
        self.out_de = cp.zeros(B, dtype=cp.int64)
        self.out_max = cp.zeros(B, dtype=cp.int32)
        self.out_ok = cp.zeros(B, dtype=cp.int32)
        self.dummy_i = cp.zeros(1, dtype=cp.int32)
        self.dummy_l = cp.zeros(1, dtype=cp.int64)

    def _eval_args(self, use, cv, cx, cy):
        return (self.ip, self.dp, self.st, self.x, self.y, self.eu, self.ev, self.off, self.inc, self.cnt,
                self.W, np.int32(use), cv, cx, cy, self.out_v, self.out_x, self.out_y, self.out_de,
                self.out_max, self.out_ok)

    def launch_eval(self, B):
        """Evaluate the generated candidates 0..min(B, st[BEFF])-1 of the current iteration (asynchronous)."""
        _kernel("lcn_eval_moves")((B,), (256,), self._eval_args(0, self.dummy_i, self.dummy_l, self.dummy_l))

    def evaluate(self, v, nx, ny):
        """Evaluate the given moves (arrays of equal length B) in one launch; returns numpy
        arrays (dE int64, max int32, ok int32)."""
        cp = self.cp
        v = np.asarray(v, dtype=np.int32)
        B = v.size
        if B > self.B:
            self._alloc(B)
        cv = cp.asarray(v)
        cx = cp.asarray(np.asarray(nx, dtype=np.int64))
        cy = cp.asarray(np.asarray(ny, dtype=np.int64))
        _kernel("lcn_eval_moves")((B,), (256,), self._eval_args(1, cv, cx, cy))
        return to_numpy(self.out_de[:B]), to_numpy(self.out_max[:B]), to_numpy(self.out_ok[:B])

    def step(self):
        """One annealing iteration (5 asynchronous kernel launches, no host synchronisation)."""
        B, m, n = self.p.batch, self.m, self.n
        self.launch_eval(B)
        _kernel("lcn_select")((1,), (32,), (self.ip, self.dp, np.int32(B), np.int32(self.p.batch_min_eff), self.st,
                                             self.out_de, self.out_max, self.out_ok))
        _kernel("lcn_apply")(((m + 255) // 256,), (256,), (self.ip, self.dp, self.st, self.x, self.y, self.eu, self.ev,
                                                           self.off, self.inc, self.cnt, self.hist, self.dinc,
                                                           self.out_v, self.out_x, self.out_y))
        _kernel("lcn_finalize")((1,), (256,), (self.st, self.x, self.y, self.eu, self.ev, self.off, self.inc,
                                               self.cnt, self.hist, self.dinc, self.out_v, self.out_x, self.out_y,
                                               self.out_max))
        _kernel("lcn_save_best")(((n + 255) // 256,), (256,), (self.st, np.int32(n), self.x, self.y, self.bx, self.by))

    def restart_from_best(self):
        """Make the best drawing the current state again (``AnnealParams.restart``; asynchronous,
        on the current stream): coordinates, counts (full recount), histogram, k and the count
        sum. In-place updates, so captured CUDA graphs keep pointing at the same buffers.
        Mirrors the CPU restart."""
        cp = self.cp
        self.x[...] = self.bx
        self.y[...] = self.by
        self.cnt[...] = _count(cp, self.x, self.y, self.eu, self.ev, self.m)
        self.hist[...] = cp.bincount(self.cnt, minlength=self.m + 1).astype(cp.int32)
        if self.m:
            self.st[_ST["K"]] = self.cnt.max().astype(cp.int64)
            self.st[_ST["SUMC"]] = self.cnt.sum(dtype=cp.int64)

    def set_iteration(self, it: int, beff: int):
        """Set the iteration counter and the adaptive batch size (for tests and benchmarks)."""
        st = to_numpy(self.st)
        st[_ST["IT"]], st[_ST["BEFF"]] = it, beff
        if beff > self.B:
            self._alloc(beff)
        self.st[...] = self.cp.asarray(st)

    def capture(self, nsteps: int):
        """Capture ``nsteps`` iterations into a CUDA graph; returns (stream, graph) or None.

        The graph replays the same kernels with the same arguments; all changing state
        (iteration counter, counts, coordinates) is in device memory, so replaying it is the
        same as calling :meth:`step` ``nsteps`` times. Returns None when capture fails
        (older CuPy/driver); callers then launch the kernels one by one.
        """
        cp = self.cp
        try:
            stream = cp.cuda.Stream(non_blocking=True)
            with stream:
                stream.begin_capture()
                try:
                    for _ in range(nsteps):
                        self.step()
                finally:
                    graph = stream.end_capture()
            return stream, graph
        except Exception:  # capture unsupported: fall back to plain launches
            cp.cuda.Device().synchronize()
            return None

    def scalars(self) -> dict:
        s = to_numpy(self.st)
        return {name: int(s[i]) for name, i in _ST.items()}

    def calibrate(self, cal_it: int | None = None):
        """T0 from the calibration batch of iteration ``cal_it`` (default ``CAL_IT``; same
        candidates as the CPU path) on the current drawing. Synchronises the current stream."""
        st = to_numpy(self.st)
        s2 = st.copy()
        s2[_ST["IT"]], s2[_ST["BEFF"]] = CAL_IT if cal_it is None else cal_it, CAL_BATCH
        self.st[...] = self.cp.asarray(s2)
        self.launch_eval(CAL_BATCH)
        de, ok = to_numpy(self.out_de[:CAL_BATCH]), to_numpy(self.out_ok[:CAL_BATCH])
        self.st[...] = self.cp.asarray(st)
        return _t0_from(de[(ok == 1) & (de > 0)].tolist(), self.p)

    def drawing(self, best=True) -> Drawing:
        x, y = (self.bx, self.by) if best else (self.x, self.y)
        return self.d.with_coords(to_numpy(x), to_numpy(y))

    def counts(self):
        return to_numpy(self.cnt).astype(np.int64)


GRAPH_STEPS = 32


def _boundary_ops(p) -> bool:
    return bool(p.restart or p.recal or p.hinge > 0)


def _new_state(d: Drawing, p, seed: int, resume):
    """GpuState for a fresh run (calibrated) or for a resumed one (state loaded)."""
    if resume is None:
        S = GpuState(d, p, seed)
        S.set_temperature(S.calibrate())
    else:
        S = GpuState(d.with_coords(resume.x, resume.y), p, seed, base=resume.base)
        S.load_state(resume)
    return S


def anneal_gpu(d: Drawing, repaired: bool, p, seed: int, seconds, iterations, progress, report_every,
               use_graph: bool = True, resume=None):
    """GPU implementation of :func:`ozgemm.lcn.anneal` (same algorithm; see solver.py).

    Iterations are replayed from a CUDA graph of ``GRAPH_STEPS`` iterations when capture
    works (fewer host launches), else launched kernel by kernel; the result is identical.
    ``resume``: an AnnealState to continue from (see :func:`ozgemm.lcn.anneal`).
    """
    cp = _cp()
    S = _new_state(d, p, seed, resume)
    T0 = S.T0
    t_prev = resume.elapsed if resume is not None else 0.0
    initial = S.initial if resume is None else None
    init_obj = S.initial.objective if resume is None else resume.initial
    cp.cuda.Device().synchronize()
    cap = S.capture(GRAPH_STEPS) if use_graph else None
    hist = []
    chunk = 16
    last_boundary = -1
    t_start = time.perf_counter()
    next_report = 0.0
    while True:
        s = S.scalars()  # synchronises
        now = time.perf_counter() - t_start
        done = (iterations is not None and s["IT"] >= iterations) or (seconds is not None and now >= seconds)
        if now >= next_report or done:
            k = s["K"]
            at_k = int(to_numpy(S.hist[k:k + 1])[0])
            rec = dict(seconds=round(t_prev + now, 3), iteration=s["IT"], k=k, at_k=at_k, total=s["SUMC"] // 2,
                       best_k=s["BEST_K"], best_at_k=s["BEST_AT"], best_total=s["BEST_TOT"],
                       accepted=s["ACCEPTED"], evaluations=s["EVALS"])
            hist.append(rec)
            if progress:
                progress(rec)
            next_report = now + report_every
        if done:
            break
        todo = chunk if iterations is None else min(chunk, iterations - s["IT"])
        if _boundary_ops(p):  # stop at each cycle boundary (restart / hinge / recal, as the CPU)
            if s["IT"] > 0 and s["IT"] % p.cycle == 0 and s["IT"] != last_boundary:
                S.cycle_boundary(s["IT"])  # on the null stream: finish it before the graph's stream runs
                cp.cuda.Device().synchronize()
                last_boundary = s["IT"]
            todo = min(todo, p.cycle - s["IT"] % p.cycle)
        t0 = time.perf_counter()
        if cap is not None and todo >= GRAPH_STEPS:
            stream, graph = cap
            for _ in range(todo // GRAPH_STEPS):
                graph.launch(stream)
            stream.synchronize()
        else:
            for _ in range(todo):
                S.step()
            cp.cuda.Device().synchronize()
        dt = time.perf_counter() - t0
        # aim at ~0.1 s between read-backs
        chunk = int(min(max(1, chunk * (0.1 / max(dt, 1e-4))), 4 * chunk + 1, 1_000_000))
    elapsed = time.perf_counter() - t_start
    s = S.scalars()
    out = S.drawing(best=True)
    final = crossings(out)  # independent exact recount on the CPU
    best = (s["BEST_K"], s["BEST_AT"], s["BEST_TOT"])
    if final.objective != best:
        raise AssertionError(f"device objective {best} disagrees with the CPU recount {final.objective}")
    state = S.state(t_prev + elapsed, init_obj, repaired)
    return AnnealResult(out, final, initial, repaired, hist, s["IT"], s["ACCEPTED"], s["EVALS"], t_prev + elapsed,
                        "gpu", seed, asdict(p) | {"T0": S.T0, "T0_start": T0, "cuda_graph": cap is not None}, state)


def anneal_many_gpu(drawings, *, seconds: float | None = None, seeds=None, params=None, checkpoints=(),
                    refill: int = 4, progress=None, resume=None, iterations: int | None = None):
    """Anneal several drawings concurrently on one GPU, one CUDA stream (and graph) each.

    Each drawing follows exactly the trajectory :func:`ozgemm.lcn.anneal` with
    ``device="gpu"`` gives it (same seed and parameters); the streams only share the GPU.
    The host keeps at most ``refill`` graph replays (of ``GRAPH_STEPS`` iterations) queued
    per stream and polls events, so a large instance does not slow down a small one beyond
    sharing the SMs.

    seconds : wall-time limit of this call; iterations : stop every run at this iteration
    (a multiple of ``GRAPH_STEPS``; counted over the whole run when resuming); at least one.
    checkpoints : times (s, counted from the start of the whole run when resuming) at which
    every run's best objective and best drawing are read back (each run's stream is
    synchronised at that moment).
    resume : list of AnnealState (one per drawing; from a previous call's results) or None.
    Work at cycle boundaries (restart / hinge / recal) needs ``cycle`` to be a multiple of
    ``GRAPH_STEPS``, and a resumed state's iteration too.

    Returns a list of (AnnealResult, {checkpoint_seconds: (seconds_read, objective, Drawing)});
    ``AnnealResult.state`` resumes the run.
    """
    if seconds is None and iterations is None:
        raise ValueError("give seconds= or iterations=")
    if iterations is not None and iterations % GRAPH_STEPS:
        raise ValueError(f"iterations must be a multiple of {GRAPH_STEPS}")
    cp = _cp()
    n = len(drawings)
    seeds = list(seeds) if seeds is not None else [0] * n
    params = list(params) if params is not None else [AnnealParams()] * n
    resume = list(resume) if resume is not None else [None] * n
    jobs = []
    for d, seed, p, rs in zip(drawings, seeds, params, resume):
        if rs is None:
            start, repaired = _prepare(d, True, seed)
            p = p.resolved(start, "gpu")
        else:
            start, repaired = d, rs.repaired
            p = p.resolved(start, "gpu")
            _check_resume(d, rs, p, int(seed), "gpu")
            if rs.it % GRAPH_STEPS:
                raise ValueError(f"resume state at iteration {rs.it}, not a multiple of {GRAPH_STEPS}")
        if _boundary_ops(p) and p.cycle % GRAPH_STEPS:
            raise ValueError(f"restart/hinge/recal need cycle to be a multiple of {GRAPH_STEPS} in anneal_many_gpu")
        S = _new_state(start, p, int(seed), rs)
        cp.cuda.Device().synchronize()
        cap = S.capture(GRAPH_STEPS)
        if cap is None:  # no graphs: plain launches on a stream of our own
            cap = (cp.cuda.Stream(non_blocking=True), None)
        it0 = rs.it if rs is not None else 0
        jobs.append(dict(S=S, p=p, seed=int(seed), T0=S.T0, repaired=repaired, stream=cap[0], graph=cap[1],
                         events=[], hist=[], cps={}, it=it0, t_prev=rs.elapsed if rs is not None else 0.0,
                         initial=S.initial if rs is None else None,
                         init_obj=S.initial.objective if rs is None else rs.initial))

    def launch(J):
        it = J["it"]  # iteration at which this graph replay starts
        if _boundary_ops(J["p"]) and it > 0 and it % J["p"].cycle == 0:
            with J["stream"]:
                J["S"].cycle_boundary(it)
        J["it"] += GRAPH_STEPS
        if J["graph"] is not None:
            J["graph"].launch(J["stream"])
        else:
            with J["stream"]:
                for _ in range(GRAPH_STEPS):
                    J["S"].step()

    def read(J, now):
        with J["stream"]:
            s = J["S"].scalars()
            k = s["K"]
            at_k = int(to_numpy(J["S"].hist[k:k + 1])[0])
        rec = dict(seconds=round(J["t_prev"] + now, 3), iteration=s["IT"], k=k, at_k=at_k, total=s["SUMC"] // 2,
                   best_k=s["BEST_K"], best_at_k=s["BEST_AT"], best_total=s["BEST_TOT"],
                   accepted=s["ACCEPTED"], evaluations=s["EVALS"])
        J["hist"].append(rec)
        if progress:
            progress(jobs.index(J), rec)
        return s

    t_start = time.perf_counter()
    t_prev = max((J["t_prev"] for J in jobs), default=0.0)
    pending = sorted((float(c) - t_prev, float(c)) for c in checkpoints if float(c) > t_prev)
    next_report = 0.0
    while True:
        now = time.perf_counter() - t_start
        if seconds is not None and now >= seconds:
            break
        busy = False
        for J in jobs:
            J["events"] = [e for e in J["events"] if not e.done]
            while len(J["events"]) < refill and (iterations is None or J["it"] < iterations):
                launch(J)
                J["events"].append(J["stream"].record())
            busy |= bool(J["events"])
        if not busy:
            break
        if pending and now >= pending[0][0]:
            c = pending.pop(0)[1]
            for J in jobs:
                s = read(J, time.perf_counter() - t_start)
                with J["stream"]:
                    dr = J["S"].drawing(best=True)
                J["cps"][c] = (J["hist"][-1]["seconds"], (s["BEST_K"], s["BEST_AT"], s["BEST_TOT"]), dr)
        elif now >= next_report:
            for J in jobs:
                read(J, time.perf_counter() - t_start)
            next_report = now + 5.0
        time.sleep(0.0002)
    out = []
    for J in jobs:
        J["stream"].synchronize()
    elapsed = time.perf_counter() - t_start
    for J in jobs:
        S = J["S"]
        s = read(J, elapsed)
        dr = S.drawing(best=True)
        final = crossings(dr)
        best = (s["BEST_K"], s["BEST_AT"], s["BEST_TOT"])
        if final.objective != best:
            raise AssertionError(f"device objective {best} disagrees with the CPU recount {final.objective}")
        with J["stream"]:
            state = S.state(J["t_prev"] + elapsed, J["init_obj"], J["repaired"])
        res = AnnealResult(dr, final, J["initial"], J["repaired"], J["hist"], s["IT"], s["ACCEPTED"], s["EVALS"],
                           J["t_prev"] + elapsed, "gpu", J["seed"],
                           asdict(J["p"]) | {"T0": S.T0, "T0_start": J["T0"], "cuda_graph": J["graph"] is not None,
                                             "concurrent_runs": n}, state)
        out.append((res, J["cps"]))
    return out

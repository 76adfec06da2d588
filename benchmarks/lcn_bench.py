"""Benchmarks for ozgemm.lcn (figures and their context: docs/performance.md, section LCN).

    python benchmarks/lcn_bench.py score [--data DIR] [--json OUT]
        k, edges at k, total and validity of the nine GD 2025 instances (CPU, and the GPU
        recount compared with == when a GPU is present), with wall times.
    python benchmarks/lcn_bench.py evaluator [--instance 8] [--batch 4096] [--reps 20] [--cpu-moves 300]
        Move-delta evaluations per second: GPU batched kernel (device-generated candidates of
        the annealer, CUDA-event timing, median of reps, after warm-up) vs the CPU NumPy
        MoveEvaluator on the first --cpu-moves of the same candidates; checks equality.
    python benchmarks/lcn_bench.py solve --instance I --time S [--device gpu] [--checkpoints 60,600]
        One annealing run; prints best k at each checkpoint and writes the solution/history.
    python benchmarks/lcn_bench.py solve-all --time S [--params JSON] [--state-dir DIR] [--resume DIR]
        All nine instances concurrently on one GPU (one CUDA stream each); exact resume from
        saved states (e.g. a 600 s run as two commands of 300 s).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from ozgemm import lcn  # noqa: E402
from ozgemm._xp import gpu_available  # noqa: E402

DATA = os.environ.get("OZGEMM_LCN_DATA", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "lcn", "gd2025"))


def env():
    info = dict(python=platform.python_version(), numpy=np.__version__, cpu=platform.processor() or platform.machine(),
                cores=os.cpu_count())
    if gpu_available():
        import cupy as cp
        props = cp.cuda.runtime.getDeviceProperties(0)
        info.update(gpu=props["name"].decode(), cupy=cp.__version__, cuda_runtime=cp.cuda.runtime.runtimeGetVersion(),
                    driver=cp.cuda.runtime.driverGetVersion())
    return info


def path(data, i):
    return os.path.join(data, f"automatic-{i}.json")


def cmd_score(a):
    rows = []
    for i in range(1, 10):
        d = lcn.load(path(a.data, i))
        t = time.perf_counter()
        c = lcn.crossings(d)
        t_cpu = time.perf_counter() - t
        t = time.perf_counter()
        viol = lcn.validate(d)
        t_val = time.perf_counter() - t
        kinds = {}
        for v in viol:
            kinds[v.kind] = kinds.get(v.kind, 0) + 1
        row = dict(instance=i, n=d.n, m=d.m, grid=f"{d.width}x{d.height}", k=c.k, at_k=c.at_k, total=c.total,
                   valid=not viol, violations=kinds, cpu_count_s=round(t_cpu, 3), cpu_validate_s=round(t_val, 3))
        if gpu_available():
            import cupy as cp
            from ozgemm.lcn.gpu import crossings_gpu
            crossings_gpu(d)  # warm-up / compile
            ts = []
            for _ in range(5):
                cp.cuda.Device().synchronize()
                t = time.perf_counter()
                g = crossings_gpu(d)
                ts.append(time.perf_counter() - t)
            row.update(gpu_count_s=round(float(np.median(ts)), 4), gpu_equal=g.per_edge.tolist() == c.per_edge.tolist())
        rows.append(row)
        print(row, flush=True)
    print("\n| inst | n | m | grid | k | edges at k | total | valid | violations | CPU count s | GPU count s | GPU==CPU |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['instance']} | {r['n']} | {r['m']} | {r['grid']} | {r['k']} | {r['at_k']} | {r['total']} | "
              f"{'yes' if r['valid'] else 'no'} | {r['violations'] or '-'} | {r['cpu_count_s']} | "
              f"{r.get('gpu_count_s', '-')} | {r.get('gpu_equal', '-')} |")
    return dict(env=env(), rows=rows)


def cmd_evaluator(a):
    from ozgemm.lcn.exact import _Inc
    from ozgemm.lcn.solver import AnnealParams, _candidate, _evaluate_cpu, _radius, hinge_base, weights
    d = lcn.repair(lcn.load(path(a.data, a.instance)))
    c = lcn.crossings(d).per_edge
    p = AnnealParams(batch=a.batch).resolved(d, "gpu")
    W = weights(d.m, p.power, hinge_base(p, int(c.max(initial=0))))  # the table GpuState builds
    it = 1000
    inc = _Inc(d)
    # the candidates of iteration `it` (device-generated on the GPU; same on the CPU)
    cands = [_candidate(a.seed, it, j, p, d, c, d.x, d.y, _radius(p, it), inc) for j in range(a.batch)]
    ev = lcn.MoveEvaluator(d)
    cpu = []
    t = time.perf_counter()
    n_cpu = 0
    for v, nx, ny, triv in cands[:a.cpu_moves]:
        if triv:
            cpu.append(None)
            continue
        ok, de, mx, _ = _evaluate_cpu(ev, c, W, v, nx, ny)
        cpu.append((int(ok), de, mx))
        n_cpu += 1
    t_cpu = time.perf_counter() - t
    out = dict(env=env(), instance=a.instance, n=d.n, m=d.m, batch=a.batch, cpu_moves=n_cpu, cpu_s=t_cpu,
               cpu_evals_per_s=n_cpu / t_cpu)
    print(f"CPU: {n_cpu} evaluations in {t_cpu:.3f} s -> {n_cpu / t_cpu:.1f} evals/s", flush=True)
    if gpu_available():
        import cupy as cp
        from ozgemm.lcn.gpu import GpuState
        S = GpuState(d, p, a.seed)
        S.set_iteration(it, a.batch)
        S.launch_eval(a.batch)  # warm-up + compile
        cp.cuda.Device().synchronize()
        ok = S.out_ok.get()
        n_nontriv = int((ok >= 0).sum())
        de, mx = S.out_de.get(), S.out_max.get()
        equal = True
        for j, r in enumerate(cpu):
            if r is None:
                equal &= bool(ok[j] == -1)
            else:
                cok, cde, cmx = r
                equal &= bool(ok[j] == cok and (not cok or (de[j] == cde and mx[j] == cmx)))
        times = []
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        for _ in range(a.reps):
            e0.record()
            S.launch_eval(a.batch)
            e1.record()
            e1.synchronize()
            times.append(cp.cuda.get_elapsed_time(e0, e1) / 1e3)
        t_gpu = float(np.median(times))
        out.update(gpu_batch_s=t_gpu, gpu_nontrivial=n_nontriv, gpu_evals_per_s=n_nontriv / t_gpu,
                   gpu_equal_cpu_on_first=len(cpu), gpu_equal=bool(equal),
                   speedup=(n_nontriv / t_gpu) / (n_cpu / t_cpu))
        print(f"GPU: {n_nontriv} evaluations per batch in {t_gpu * 1e3:.3f} ms (median of {a.reps}) -> "
              f"{n_nontriv / t_gpu:.1f} evals/s; equal to CPU on first {len(cpu)}: {equal}; "
              f"speedup {out['speedup']:.1f}x", flush=True)
    return out


def cmd_solve(a):
    from ozgemm.lcn.layout import layout
    d = lcn.load(path(a.data, a.instance))
    c0 = lcn.crossings(d)
    t0 = time.perf_counter()  # the start layout's time counts against --time and the checkpoints
    start = layout(d, a.init, seed=a.seed) if a.init != "given" else d
    lay_s = time.perf_counter() - t0
    res = lcn.anneal(start, seconds=a.time - lay_s, seed=a.seed, device=a.device, report_every=a.report_every,
                     params=_params(a))
    cps = [float(x) for x in a.checkpoints.split(",")] if a.checkpoints else []
    at = {}
    for cp_ in cps:
        recs = [h for h in res.history if lay_s + h["seconds"] <= cp_ + 1e-9]
        if recs and lay_s + res.seconds + 1e-6 >= cp_ - a.report_every:
            h = recs[-1]
            at[str(cp_)] = dict(seconds=lay_s + h["seconds"], best=[h["best_k"], h["best_at_k"], h["best_total"]])
    out = dict(env=env(), instance=a.instance, device=res.device, seed=a.seed, seconds=lay_s + res.seconds,
               init=a.init, layout_seconds=lay_s, anneal_seconds=res.seconds,
               input=list(c0.objective), input_valid=lcn.is_valid(d), start=list(res.initial.objective),
               repaired=res.repaired, final=list(res.crossings.objective), final_valid=lcn.is_valid(res.drawing),
               iterations=res.iterations, accepted=res.accepted, evaluations=res.evaluations, checkpoints=at,
               params=res.params, history=res.history)
    if a.out_drawing:
        lcn.save(res.drawing, a.out_drawing)
    print(json.dumps({k: v for k, v in out.items() if k not in ("history", "env")}), flush=True)
    return out


def _params(a):
    return lcn.AnnealParams(**json.loads(a.params)) if a.params else lcn.AnnealParams()


def cmd_solve_all(a):
    """All listed instances concurrently on one GPU (one stream each), checkpoints read back.

    --state-dir DIR writes each run's complete annealing state (DIR/automatic-I.state.npz) at
    the end; --resume DIR continues from such states (exact resume: same trajectory as one
    uninterrupted run); --time is the length of this segment, checkpoints count from the
    start of the whole run."""
    import tarfile
    from ozgemm.lcn.gpu import anneal_many_gpu
    from ozgemm.lcn.solver import AnnealState
    inst = [int(x) for x in a.instances.split(",")]
    ds = [lcn.load(path(a.data, i)) for i in inst]
    cps = [float(x) for x in a.checkpoints.split(",")] if a.checkpoints else []
    p = _params(a)
    resume = None
    if a.resume:
        resume = [AnnealState.load(os.path.join(a.resume, f"automatic-{i}.state.npz")) for i in inst]
        if a.until is not None:
            a.time = a.until - max(s.elapsed for s in resume)
            print(f"resuming at {max(s.elapsed for s in resume):.1f} s for {a.time:.1f} s", flush=True)
    t = time.perf_counter()
    res = anneal_many_gpu(ds, seconds=a.time, seeds=[a.seed] * len(ds), params=[p] * len(ds), checkpoints=cps,
                          resume=resume,
                          progress=lambda j, r: print(f"[{inst[j]}] {r}", flush=True) if r["seconds"] % 30 < 5 else None)
    wall = time.perf_counter() - t
    rows = []
    outdir = a.out_dir or "."
    os.makedirs(outdir, exist_ok=True)
    if a.state_dir:
        os.makedirs(a.state_dir, exist_ok=True)
    names = []
    for i, d, (r, cpd) in zip(inst, ds, res):
        c0 = lcn.crossings(d)
        row = dict(instance=i, input=list(c0.objective), input_valid=lcn.is_valid(d), start=list(r.state.initial),
                   repaired=r.repaired, final=list(r.crossings.objective), final_valid=lcn.is_valid(r.drawing),
                   seconds=r.seconds, iterations=r.iterations, accepted=r.accepted, evaluations=r.evaluations,
                   T0=r.params["T0"], T0_start=r.params["T0_start"], resumed=resume is not None, checkpoints={})
        for c, (sec, obj, dr) in cpd.items():
            cc = lcn.crossings(dr)
            row["checkpoints"][str(c)] = dict(seconds=sec, best=list(obj), recount=list(cc.objective),
                                              valid=lcn.is_valid(dr))
            fn = os.path.join(outdir, f"automatic-{i}.k{cc.k}.t{int(c)}.json")
            lcn.save(dr, fn)
            names.append(fn)
        fn = os.path.join(outdir, f"automatic-{i}.k{r.crossings.k}.t{int(round(r.seconds))}.final.json")
        lcn.save(r.drawing, fn)
        names.append(fn)
        if a.state_dir:
            r.state.save(os.path.join(a.state_dir, f"automatic-{i}.state.npz"))
        row["history"] = r.history
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "history"}), flush=True)
    if a.tar:
        with tarfile.open(a.tar, "w:gz") as tf:
            for fn in names:
                tf.add(fn, arcname=os.path.basename(fn))
    print("\n| inst | input k (valid) | start k | best k @ checkpoints | final (k, at k, total) @ s | valid | iterations |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        cp_s = ", ".join(f"{v['best'][0]} @ {v['seconds']:.0f}s" for v in r["checkpoints"].values())
        print(f"| {r['instance']} | {r['input'][0]} ({'yes' if r['input_valid'] else 'no'}) | {r['start'][0]} | {cp_s} | "
              f"{tuple(r['final'])} @ {r['seconds']:.0f} | {r['final_valid']} | {r['iterations']} |")
    return dict(env=env(), wall=wall, concurrent=len(ds), seed=a.seed, params=a.params, rows=rows)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("score", "evaluator", "solve", "solve-all"))
    ap.add_argument("--params", default=None, help="AnnealParams as JSON (solve, solve-all)")
    ap.add_argument("--init", default="given", choices=("given", "kamada-kawai", "spring"),
                    help="solve: start layout (ozgemm.lcn.layout); its time counts against --time")
    ap.add_argument("--state-dir", default=None, help="solve-all: write the final annealing states here")
    ap.add_argument("--resume", default=None, help="solve-all: resume from the states in this folder")
    ap.add_argument("--until", type=float, default=None,
                    help="solve-all --resume: run until this total annealing time (sets --time)")
    ap.add_argument("--instances", default="1,2,3,4,5,6,7,8,9")
    ap.add_argument("--out-dir", default=None)
    ap.add_argument("--tar", default=None)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--json", default=None)
    ap.add_argument("--instance", type=int, default=8)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--cpu-moves", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--time", type=float, default=60.0)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--checkpoints", default="60")
    ap.add_argument("--report-every", type=float, default=2.0)
    ap.add_argument("--out-drawing", default=None)
    a = ap.parse_args(argv)
    out = dict(score=cmd_score, evaluator=cmd_evaluator, solve=cmd_solve,
               **{"solve-all": cmd_solve_all})[a.mode](a)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=1, default=str)


if __name__ == "__main__":
    main()

"""GPU benchmark (``ozgemm bench --device gpu``): every figure with its hardware, input, baseline and timing scope.

Side by side in one run, on the same device-generated inputs
A, B = (rand - 0.5) exp(phi randn) (cupy's generator, seeded): native cuBLAS DGEMM / SGEMM
through ``cupy.matmul``, cuBLAS's own FP64 emulation forced on (CUBLAS_EMULATE_DOUBLE_PRECISION=1,
CUBLAS_EMULATION_STRATEGY=EAGER, in a subprocess: the variables are read at cuBLAS start-up),
and ozgemm. Timing: CUDA events around the whole call (planning, bound GEMM, residues, INT8
GEMMs, reconstruction/rounding, specials check), median of ``--reps`` after a warm-up that
also compiles the kernels; no host<->device transfers inside. TFLOPS = 2 n^3 / time (8 n^3 for
``--complex``, as ZGEMM is counted). A phase
breakdown comes from one extra run with a synchronisation between phases. Accuracy in the
same run: max / median error in units of u (|A||B|)_ij and the share correctly rounded on the
top-left ``--block`` x ``--block`` block, against the exact product (python-flint / gmpy2).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from ozgemm._cliargs import fmt_num, reason, unmeasured, unmeasured_line, unmeasured_reason, unmeasured_row
from ozgemm.verify.inputs import complex_operands, phi_operands

__all__ = ["run_gpu_bench", "gpu_context", "full_max_errors"]

# the child imports the inputs from this very ozgemm: its parent directory (the last argument)
# goes first on the child's sys.path
_EMU_SCRIPT = r"""
import json, sys, cupy as cp
sys.path.insert(0, sys.argv[5])
from ozgemm.verify.inputs import complex_operands, phi_operands
sizes = json.loads(sys.argv[1]); phi = float(sys.argv[2]); seed = int(sys.argv[3]); reps = int(sys.argv[4])
out = {}
for n in sizes:
    a, b = phi_operands(cp.random.RandomState(seed), n, n, n, phi)
    cp.matmul(a, b); cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record(); c = cp.matmul(a, b); e1.record(); e1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(e0, e1) / 1e3)
    ts.sort()
    c = cp.matmul(a, b)
    out[n] = {"s": ts[len(ts) // 2], "block": cp.asnumpy(c[:BLOCK, :BLOCK]).tolist()}
print("JSON" + json.dumps(out))
"""
_PKG_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def gpu_context() -> dict:
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(0)
    try:
        from cupy_backends.cuda.libs import cublas

        cublas_v = cublas.getVersion(cp.cuda.device.get_cublas_handle())
    except Exception:
        cublas_v = None
    return {"gpu": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
            "sms": props["multiProcessorCount"], "driver": cp.cuda.runtime.driverGetVersion(),
            "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(), "cublas": cublas_v,
            "cupy": cp.__version__, "numpy": np.__version__, "python": sys.version.split()[0]}


def _inputs(n, phi, seed, dtype, complex_=False):
    import cupy as cp

    a, b = phi_operands(cp.random.RandomState(seed), n, n, n, phi, dtype)
    if complex_:
        a, b = complex_operands(a, b, *phi_operands(cp.random.RandomState(seed + 1), n, n, n, phi, dtype))
    return a, b


def _event_seconds(fn) -> float:
    """Seconds of one call of ``fn`` between two CUDA events on the current stream."""
    import cupy as cp

    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    e0.record()
    fn()
    e1.record()
    e1.synchronize()
    return cp.cuda.get_elapsed_time(e0, e1) / 1e3


def _time(fn, reps):
    import cupy as cp

    fn()
    cp.cuda.Device().synchronize()
    return statistics.median([_event_seconds(fn) for _ in range(reps)])


def _int8_gemm_times(eng, plan, a, b, reps) -> dict:
    """Median seconds of the plan's INT8 GEMMs alone: all residue GEMMs (one k-block, as
    the CRT pipeline runs them untiled) and the componentwise bound GEMM (0 if none)."""
    import cupy as cp

    from ..kernels.cuda import backend as kc

    m, k, n = plan.shape
    N = plan.n_moduli
    mp, np_, kp = kc._ceil(m, kc._PAD), kc._ceil(n, kc._PAD), kc._ceil(k, kc._PAD)
    if kp > kc.KBLOCK_INT32 or a.ndim != 2:
        return {}
    sa, sb = plan.stats
    ra = eng.residues(a, sa, plan.s, N)
    rb = eng.residues(b.T, sb, plan.t, N)
    c = cp.empty((N, mp, np_), dtype=cp.int32)
    t_res = _time(lambda: eng._gemm_batched_i32(ra, rb, c), reps)
    del ra, rb, c
    t_bound = 0.0
    if plan.contract.bound_kind == "componentwise" and sa.q is not None and sb.q is not None:
        t_bound = _time(lambda: eng.gemm_exact(sa.q, sb.q), reps)
    return {"residue": t_res, "bound": t_bound}


def full_max_errors(a, b, results, u) -> list:
    """Max error over the whole output of each result, in units of u (|A||B|)_ij (complex: per
    real and imaginary part, against |Ar||Br| + |Ai||Bi| and |Ar||Bi| + |Ai||Br|), against
    ozgemm's dd result (a proven bound far below binary64's u) of the real products forming
    each part; |A||B| by a float64 GEMM (a normaliser; its rounding is far below the digits
    shown)."""
    import cupy as cp

    from ..api import matmul

    f64 = cp.float64
    if a.dtype.kind == "c":
        ar, ai, br, bi = (x.astype(f64) for x in (a.real, a.imag, b.real, b.imag))
        parts = [(cp.concatenate([ar, -ai], 1), cp.concatenate([br, bi], 0), cp.real),
                 (cp.concatenate([ar, ai], 1), cp.concatenate([bi, br], 0), cp.imag)]
        del ar, ai, br, bi
    else:
        parts = [(a.astype(f64), b.astype(f64), lambda c: c)]
    worst = [0.0] * len(results)
    while parts:
        x, y, part = parts.pop(0)
        ref = matmul(x, y, contract="dd")
        g = cp.abs(x) @ cp.abs(y)
        for i, c in enumerate(results):
            e = cp.abs((part(c).astype(f64) - ref.hi) - ref.lo) / (u * g)
            worst[i] = max(worst[i], float(cp.where(g == 0, 0.0, e).max()))
            del e
        del ref, g, x, y
        cp.get_default_memory_pool().free_all_blocks()
    return worst


def _peer_rows(peer, a, b, contract, row, ref, args, configs, flop) -> list:
    """GEMMul8's rows (module :mod:`ozgemm.cli.peers`) for the inputs of ``row``: the same
    timing, the same block reference and whole-output measure; its figures go in the table's
    "oz" columns, its name in the contract column."""
    import cupy as cp

    from ..verify.audit import sampled_accuracy

    n = a.shape[0]
    out = []
    keys = {k: row[k] for k in ("n", "phi", "seed", "complex", "dtype", "native_s", "native_tflops", "nat_max_err_u",
                                "nat_med_err_u", "nat_cr", "nat_full_max_err_u")}
    for cfg in configs:
        head = {**keys, "contract": f"GEMMul8 {cfg}", "peer": "GEMMul8", "config": cfg, "moduli": int(cfg[1:])}
        try:
            fn = peer.runner(a, b, cfg)
            t = _time(fn, args.reps)
            c = fn()
            acc = sampled_accuracy(a, b, c, contract, args.block, ref)
        except MemoryError as exc:  # this configuration did not fit; the others go on
            out.append({**head, "failed": reason(exc)})
            print(f"  GEMMul8 {cfg} n={n}: {unmeasured_reason(out[-1])}", file=sys.stderr)
            fn = c = None
            cp.get_default_memory_pool().free_all_blocks()
            continue
        full, full_failed = _full_errors(args, a, b, [c], contract)
        out.append({**head, "beta": None, "ozgemm_s": t, "ozgemm_tflops": flop * n**3 / t / 1e12,
                    "speedup": row["native_s"] / t, "phases": {}, "gemm_share": float("nan"),
                    "oz_max_err_u": acc["max_err_u"], "oz_med_err_u": acc["median_err_u"],
                    "oz_cr": acc["correctly_rounded"], "oz_breaches": None, "oz_full_max_err_u": full[0],
                    **full_failed})
        print(f"  GEMMul8 {cfg} n={n}: {t * 1e3:.2f} ms", file=sys.stderr)
        del fn, c
        cp.get_default_memory_pool().free_all_blocks()
    return out


def _full_errors(args, a, b, results, contract):
    """(:func:`full_max_errors` of ``results`` or Nones without ``--full``, {}), or, where the
    dd reference does not fit (MemoryError), (Nones, {"full_not_measured": reason}): the row
    keeps its timings and block errors."""
    import cupy as cp

    if not getattr(args, "full", False):
        return [None] * len(results), {}
    try:
        return full_max_errors(a, b, results, 2.0 ** -contract.fmt.p), {}
    except MemoryError as exc:
        cp.get_default_memory_pool().free_all_blocks()
        print(f"  whole-output errors n={a.shape[0]}: not measured ({exc})", file=sys.stderr)
        return [None] * len(results), {"full_not_measured": reason(exc)}


def front(rows) -> list:
    """For each GEMMul8 row, the fastest ozgemm row of the same size, φ and operand dtype
    (``dtype``: float64, float32, complex128, ...) at least as fast with no larger error: the whole-output
    max error where both rows have it, else the top-left block's. Returns one dict per peer
    row: ``n``, ``phi``, ``config``, ``peer_s``, ``peer_err``, ``contract`` (None: no ozgemm
    row qualifies), ``ozgemm_s``, ``ozgemm_err``."""
    def err(r, full):
        return r["oz_full_max_err_u"] if full else r["oz_max_err_u"]

    out = []
    for g in (r for r in rows if r.get("peer") == "GEMMul8" and not unmeasured(r)):
        key = (g["n"], g["phi"], g.get("dtype"))
        own = [r for r in rows if r.get("peer") is None and not unmeasured(r)
               and (r["n"], r["phi"], r.get("dtype")) == key]
        full = g.get("oz_full_max_err_u") is not None and all(r.get("oz_full_max_err_u") is not None for r in own)
        ok = [r for r in own if r["ozgemm_s"] <= g["ozgemm_s"] and err(r, full) <= err(g, full)]
        best = min(ok, key=lambda r: r["ozgemm_s"]) if ok else None
        out.append({"n": g["n"], "phi": g["phi"], "config": g["config"], "peer_s": g["ozgemm_s"],
                    "peer_err": err(g, full), "whole_output": full,
                    "contract": best and best["contract"], "ozgemm_s": best and best["ozgemm_s"],
                    "ozgemm_err": best and err(best, full)})
    return out


def _emulation(sizes, phi, seed, reps, block):
    env = dict(os.environ, CUBLAS_EMULATE_DOUBLE_PRECISION="1", CUBLAS_EMULATION_STRATEGY="EAGER")
    try:
        r = subprocess.run([sys.executable, "-c", _EMU_SCRIPT.replace("BLOCK", str(block)), json.dumps(sizes),
                            str(phi), str(seed), str(reps), _PKG_PARENT], env=env, capture_output=True, text=True, timeout=900)
        line = next(ln for ln in r.stdout.splitlines() if ln.startswith("JSON"))
        return {int(k): v for k, v in json.loads(line[4:]).items()}
    except Exception as exc:  # report, do not hide
        print(f"cuBLAS emulation run failed: {exc}", file=sys.stderr)
        return {}


def run_gpu_bench(args) -> int:
    import cupy as cp

    from ..api import matmul
    from ..verify.audit import block_reference, sampled_accuracy
    from ..contracts.contract import ContractError, as_contract
    from ..kernels import get_backend
    from ..methods import execute, execute_complex, plan_product

    from .peers import DEFAULT_CONFIGS, GEMMul8

    ctx = gpu_context()
    eng = get_backend("cuda")
    rows = []
    try:
        peer = GEMMul8(args.gemmul8) if getattr(args, "gemmul8", None) else None
    except ValueError as exc:
        print(f"ozgemm bench: {exc}", file=sys.stderr)
        return 2
    peer_done = set()
    phis = [args.phi] + ([2.0] if args.phi != 2.0 else [])
    emu = {}
    cplx = getattr(args, "complex", False)
    flop = 8 if cplx else 2  # complex: 8 n^3 real operations, as ZGEMM is counted
    if not cplx and any(as_contract(c).fmt.name == "binary64" for c in args.contracts):
        emu = _emulation(args.sizes, args.phi, args.seed, args.reps, args.block)

    def measure(contract, dt, n, phi):
        """The rows of one product: its own and, where the peer runs, GEMMul8's. ContractError:
        refused; MemoryError: the product itself did not fit (where only the dd reference of the
        whole-output errors, or one GEMMul8 configuration, does not fit, the row says so and the
        others are kept)."""
        a, b = _inputs(n, phi, args.seed, dt, cplx)
        c, plans = matmul(a, b, contract=contract, return_plan=True)  # ContractError: refused
        t_oz = _time(lambda: matmul(a, b, contract=contract), args.reps)
        t_nat = _time(lambda: cp.matmul(a, b), args.reps)
        # phase breakdown (one synchronised run)
        tm = {}
        eng.synchronize()
        t0 = time.perf_counter()
        if cplx:  # the real embedding's plan, then the split or three-product form
            from ..api import _complex_plan

            _, _, ae, be, _, _, p = _complex_plan(a, b, contract, eng)
            eng.synchronize()
            tm["plan"] = time.perf_counter() - t0
            execute_complex(p, eng, ae, be, tm)
            del ae, be
            gemm_ms = {}
        else:
            p = plan_product(contract, a, b, eng)
            eng.synchronize()
            tm["plan"] = time.perf_counter() - t0
            execute(p, eng, a, b, tm)
            gemm_ms = _int8_gemm_times(eng, p, a, b, args.reps) if contract.method == "crt" else {}
        ref = block_reference(a, b, contract, args.block)
        acc_oz = sampled_accuracy(a, b, c, contract, args.block, ref)
        acc_nat = sampled_accuracy(a, b, cp.matmul(a, b), contract, args.block, ref)
        n_moduli, beta = plans[0].n_moduli, plans[0].beta
        del p, plans
        cp.get_default_memory_pool().free_all_blocks()  # the reference below takes the room
        full, full_failed = _full_errors(args, a, b, [c, cp.matmul(a, b)], contract)
        row = {"contract": contract.name, "n": n, "phi": phi, "seed": args.seed, "dtype": str(a.dtype),
               "moduli": n_moduli,
               "beta": beta, "ozgemm_s": t_oz, "native_s": t_nat,
               "complex": cplx,
               "ozgemm_tflops": flop * n**3 / t_oz / 1e12, "native_tflops": flop * n**3 / t_nat / 1e12,
               "speedup": t_nat / t_oz, "phases": tm,
               "gemm_share": tm.get("gemms", 0) / sum(tm.values()),
               # INT8 GEMM time (median CUDA-event timings of the residue GEMMs and of the
               # bound GEMM, each alone on the same operands) over the whole-call median
               **({"int8_gemm_s": gemm_ms["residue"], "bound_gemm_s": gemm_ms["bound"],
                   "int8_share": (gemm_ms["residue"] + gemm_ms["bound"]) / t_oz} if gemm_ms else {}),
               "oz_max_err_u": acc_oz["max_err_u"], "oz_med_err_u": acc_oz["median_err_u"],
               "oz_cr": acc_oz["correctly_rounded"], "oz_breaches": acc_oz["breaches"],
               "nat_max_err_u": acc_nat["max_err_u"], "nat_med_err_u": acc_nat["median_err_u"],
               "nat_cr": acc_nat["correctly_rounded"],
               "oz_full_max_err_u": full[0], "nat_full_max_err_u": full[1], **full_failed}
        if dt == np.float64 and phi == args.phi and n in emu:
            e = emu[n]
            row["emu_s"] = e["s"]
            row["emu_tflops"] = 2 * n**3 / e["s"] / 1e12
            blk = np.asarray(e["block"])
            acc_e = sampled_accuracy(a, b, blk, contract, args.block, ref) if blk.size else None
            row["emu_max_err_u"] = acc_e["max_err_u"] if acc_e else None
        out = [row]
        key = (str(a.dtype), n, phi)
        if peer is not None and peer.supports(a.dtype) and key not in peer_done:
            out += _peer_rows(peer, a, b, contract, row, ref, args,
                              args.gemmul8_configs or DEFAULT_CONFIGS[str(a.dtype)], flop)
            peer_done.add(key)
        print(f"  {contract.name} n={n} phi={phi}: ozgemm {t_oz * 1e3:.2f} ms ({row['ozgemm_tflops']:.1f} TF), "
              f"native {t_nat * 1e3:.2f} ms ({row['native_tflops']:.1f} TF)", file=sys.stderr)
        return out

    for name in args.contracts:
        contract = as_contract(name)
        dt = contract.fmt.dtype
        for n in args.sizes:
            for phi in (phis if n == max(args.sizes) else [args.phi]):
                try:
                    rows += measure(contract, dt, n, phi)
                except (ContractError, MemoryError) as exc:  # this row refused or not measured; the others go on
                    dtype = np.result_type(dt, np.complex64) if cplx else np.dtype(dt)
                    rows.append({**unmeasured_row(contract, n, phi, args.seed, exc), "dtype": str(dtype)})
                    print(f"  {contract.name} n={n} phi={phi}: {unmeasured_reason(rows[-1])}", file=sys.stderr)
                cp.get_default_memory_pool().free_all_blocks()
    print(f"\nozgemm bench (GPU) — {ctx['gpu']} ({ctx['sms']} SMs), driver {ctx['driver']}, CUDA runtime "
          f"{ctx['cuda_runtime']}, cuBLAS {ctx['cublas']}, CuPy {ctx['cupy']}, NumPy {ctx['numpy']}")
    kind = (" + i (rand-0.5)*exp(phi*randn) (seed + 1): complex, native = ZGEMM/CGEMM, TFLOPS = 8 n^3 / time, "
            "errors per real/imaginary part") if cplx else ""
    print(f"input: (rand-0.5)*exp(phi*randn) generated on the device{kind}, seed {args.seed}, square n; timing: CUDA events, "
          f"whole call, median of {args.reps} after warm-up; accuracy on the top-left {args.block}x{args.block} block vs "
          "the exact product, err in u*(|A||B|)_ij (u of the output format); full: max over the whole output "
          "against ozgemm's dd result (--full)" + (f"; GEMMul8 rows ({peer.path}): its figures in the oz columns"
                                                    if peer is not None else ""))
    print(f"{'contract':12} {'n':>6} {'phi':>4} {'mod':>3} {'oz ms':>9} {'oz TF':>6} {'nat TF':>6} {'x nat':>5} "
          f"{'emu TF':>6} {'gemm%':>5} {'oz max':>8} {'oz CR%':>6} {'nat max':>8} {'emu max':>8} {'oz full':>8} "
          f"{'nat full':>8}  phases ms (plan/res/gemm/rec)"
          "  INT8 GEMMs alone ms (residue + bound) and share of the call")
    for r in rows:
        if unmeasured(r):
            print(unmeasured_line(r, 12))
            continue
        ph = r["phases"]
        print(f"{r['contract']:12} {r['n']:>6} {r['phi']:>4} {r['moduli']:>3} {r['ozgemm_s'] * 1e3:>9.2f} "
              f"{r['ozgemm_tflops']:>6.1f} {r['native_tflops']:>6.1f} {r['speedup']:>5.2f} "
              f"{(r.get('emu_tflops') or float('nan')):>6.1f} {100 * r['gemm_share']:>5.1f} {fmt_num(r['oz_max_err_u']):>8} "
              f"{100 * r['oz_cr']:>6.2f} {fmt_num(r['nat_max_err_u']):>8} {fmt_num(r.get('emu_max_err_u')):>8} "
              f"{fmt_num(r['oz_full_max_err_u']):>8} {fmt_num(r['nat_full_max_err_u']):>8}  "
              + (f"{ph.get('plan', 0) * 1e3:.1f}/{ph.get('residues', 0) * 1e3:.1f}/{ph.get('gemms', 0) * 1e3:.1f}/"
                 f"{ph.get('reconstruction', 0) * 1e3:.1f}" if ph else "-")
              + (f"  {r['int8_gemm_s'] * 1e3:.1f} + {r['bound_gemm_s'] * 1e3:.1f} = {100 * r['int8_share']:.1f} %"
                 if "int8_share" in r else ""))
    fr = front(rows)
    if fr:
        print("\nfront: for each GEMMul8 row, the fastest ozgemm contract of this run at least as fast with no larger "
              "max error (whole output where measured, else the block's), same n and phi")
        for f in fr:
            mine = (f"{f['contract']} {f['ozgemm_s'] * 1e3:.2f} ms ({fmt_num(f['ozgemm_err'])})" if f["contract"]
                    else "none")
            print(f"  n={f['n']:>6} phi={f['phi']:<4} GEMMul8 {f['config']:<4} {f['peer_s'] * 1e3:>9.2f} ms "
                  f"({fmt_num(f['peer_err'])}) -> {mine}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"context": ctx, "rows": rows, "front": fr}, f, indent=2)
    return 4 if any("failed" in r for r in rows) else 3 if any("refused" in r for r in rows) else 0


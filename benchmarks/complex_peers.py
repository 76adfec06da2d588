"""Complex products on the GPU side by side in one process: native cuBLAS ZGEMM (CGEMM for
complex64), ozgemm, and GEMMul8's ZGEMM when its shim is given.

Input: Ar, Br, Ai, Bi = (rand - 0.5) exp(phi randn), drawn in that order from
cupy.random.RandomState(seed), n x n. Timing: CUDA events around the whole call, median of
--reps after two warm-up calls; TFLOPS = 8 n^3 / time (as ZGEMM is counted); "x native" =
native time / time, same arrays. Error: max over the whole output, per real and imaginary
part, in units of u (|Ar||Br| + |Ai||Bi|) and u (|Ar||Bi| + |Ai||Br|), against ozgemm's dd
result of the real products forming each part (``ozgemm.cli.bench_gpu.full_max_errors``).

GEMMul8 (../shared/peers/gemmul8 of the project's workspace, or any build of its ``gmshim.cu``
exposing ``gm_worksize`` and ``gm_zgemm``): ``--gemmul8 path/to/gmshim.so`` and configurations
``gm:fN`` (fast mode, N moduli) / ``gm:aN`` (accurate mode).

    python benchmarks/complex_peers.py --sizes 4096 8192 16384 --configs native oz:fp64 \\
        gm:f16 gm:f17 gm:a16 gm:a17 --gemmul8 .peers/gemmul8/gmshim.so
"""
import argparse
import json
import sys

import cupy as cp

import ozgemm
from ozgemm.cli.bench_gpu import full_max_errors, gpu_context
from ozgemm.cli.peers import GEMMul8


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[4096])
    p.add_argument("--phi", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--dtype", choices=["complex128", "complex64"], default="complex128")
    p.add_argument("--configs", nargs="+", default=["native", "oz:fp64"])
    p.add_argument("--gemmul8", metavar="SO", help="GEMMul8 shim library (gm:* configurations)")
    p.add_argument("--json", metavar="PATH")
    a = p.parse_args(argv)
    shim = None
    if any(c.startswith("gm:") for c in a.configs):
        if not a.gemmul8 or a.dtype != "complex128":
            p.error("gm:* configurations need --gemmul8 SO and complex128 (GEMMul8's ZGEMM)")
        shim = GEMMul8(a.gemmul8)
    u = 2.0 ** -53 if a.dtype == "complex128" else 2.0 ** -24
    ctx = gpu_context()
    print(f"{ctx['gpu']}, CUDA runtime {ctx['cuda_runtime']}, cuBLAS {ctx['cublas']}, CuPy {ctx['cupy']}; "
          f"{a.dtype}, phi {a.phi}, seed {a.seed}, median of {a.reps}", file=sys.stderr)
    rows = []
    for n in a.sizes:
        rs = cp.random.RandomState(a.seed)
        draw = lambda: (rs.random_sample((n, n)) - 0.5) * cp.exp(a.phi * rs.standard_normal((n, n)))  # noqa: E731
        ar, br = draw(), draw()
        A, B = (ar + 1j * draw()).astype(a.dtype), (br + 1j * draw()).astype(a.dtype)
        del ar, br
        base = None
        for cfg in a.configs:
            kind, _, opt = cfg.partition(":")
            if kind == "native":
                fn = lambda: A @ B  # noqa: E731
            elif kind == "oz":
                fn = lambda opt=opt: ozgemm.matmul(A, B, contract=opt)  # noqa: E731
            elif kind == "gm":
                fn = shim.runner(A, B, opt)
            else:
                p.error(f"unknown configuration {cfg!r}")
            fn()
            fn()
            cp.cuda.Device().synchronize()
            ts = []
            for _ in range(a.reps):
                e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                e0.record()
                fn()
                e1.record()
                e1.synchronize()
                ts.append(cp.cuda.get_elapsed_time(e0, e1) / 1e3)
            t = sorted(ts)[a.reps // 2]
            base = t if kind == "native" else base
            err = full_max_errors(A, B, [fn()], u)[0]
            row = {"n": n, "config": cfg, "ms": t * 1e3, "tflops": 8.0 * n**3 / t / 1e12,
                   "x_native": base / t if base else None, "max_err_u": err}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
            del fn
            cp.get_default_memory_pool().free_all_blocks()
    print(f"{'n':>6} {'config':>10} {'ms':>9} {'TFLOPS':>7} {'x native':>8} {'max err (u)':>11}")
    for r in rows:
        x = f"{r['x_native']:.2f}" if r["x_native"] else "-"
        print(f"{r['n']:>6} {r['config']:>10} {r['ms']:>9.2f} {r['tflops']:>7.1f} {x:>8} {r['max_err_u']:>11.3g}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"context": ctx, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()

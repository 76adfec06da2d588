"""The CRT residue kernels of two versions of the package side by side on the GPU: the
package at a git revision (``--base``) or in a directory (``--base-dir``), and the working
tree's, each compiled by NVRTC from its own sources in one process. Prints its context and a
table last; the two versions' residues are checked byte for byte on every case.

Input: one n x n float64 operand (rand - 0.5) exp(phi randn) from
``cupy.random.RandomState(seed)``; row shifts beta - E_i from its row maxima (the column
kernel: from its column maxima), for each case ``N:beta`` (N moduli, width beta).
Kernels: ``rows`` (crt.cu ``scaled_residues``, the rows of A) and ``cols``
(``scaled_residues_cols``, the rows of B^T read through B's columns).
Timing: kernels alone, CUDA events around each launch, the median of ``--reps`` launches per
version; the versions alternate over ``--rounds`` rounds and the table gives the median round.

Run from the repository root:
    PYTHONPATH=. python benchmarks/residue_kernels.py --base REV --cases 17:61 18:65 [--n 16384]
"""
import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", help="git revision of the package to compare against")
    ap.add_argument("--base-dir", type=Path, help="or: a directory holding that version's ozgemm package")
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--phi", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cases", nargs="+", default=["17:61", "18:65"], metavar="N:BETA")
    ap.add_argument("--kernels", nargs="+", choices=("rows", "cols"), default=["rows", "cols"])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    if (args.base is None) == (args.base_dir is None):
        ap.error("give one of --base REV or --base-dir DIR")
    cases = []
    for c in args.cases:
        try:
            N, beta = (int(v) for v in c.split(":"))
        except ValueError:
            ap.error(f"--cases {c!r}: expected N:BETA, e.g. 17:61")
        cases.append((N, beta))

    import cupy as cp

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from side_by_side import base_package  # noqa: E402

    from ozgemm.cli.bench_gpu import _event_seconds
    from ozgemm.kernels.cuda import backend as kb
    from ozgemm.kernels.cuda import source as work_source

    root = Path(__file__).resolve().parent.parent
    tmp = tempfile.TemporaryDirectory()
    base = base_package(args.base, root, Path(tmp.name), args.base_dir)
    import importlib

    base_source = importlib.import_module(base.__name__ + ".kernels.cuda.source")
    versions = {"base": base_source, "work": work_source}

    modules = {}

    def function(tag, N, name):
        if (tag, N) not in modules:  # as the engine compiles them (backend._module)
            src = versions[tag].kernel_source(N).replace("__device__ __constant__ const", "__device__ const")
            modules[(tag, N)] = cp.RawModule(code=src, options=("-std=c++17",))
        return modules[(tag, N)].get_function(name)

    def median_ms(run):
        return 1e3 * statistics.median(_event_seconds(run) for _ in range(args.reps))

    n = args.n
    rs = cp.random.RandomState(args.seed)
    x = (rs.random_sample((n, n)) - 0.5) * cp.exp(args.phi * rs.standard_normal((n, n)))
    e_rows = cp.frexp(cp.abs(x).max(axis=1))[1].astype(cp.int64)
    e_cols = cp.frexp(cp.abs(x).max(axis=0))[1].astype(cp.int64)
    table = []
    for N, beta in cases:
        tab = kb._pow2_table(N, cp.cuda.runtime.getDevice())
        for kernel in args.kernels:
            launches = {}
            for tag in versions:
                out = cp.empty((N, n, n), dtype=cp.int8)
                if kernel == "rows":
                    f = function(tag, N, "scaled_residues")
                    grid, block = kb._grid2d(n // 8, n)
                    fargs = (x, np.int64(n), (beta - e_rows).astype(cp.int64), np.int32(n), np.int32(n),
                             np.int32(n), np.int32(n), tab, np.int32(tab.shape[1]), np.int32(1), out)
                else:
                    f = function(tag, N, "scaled_residues_cols")
                    grid, block = (-(-n // 16), min(-(-n // 128), 65535)), (16, 16)
                    fargs = (x, np.int64(n), (beta - e_cols).astype(cp.int64), np.int32(n), np.int32(n),
                             np.int32(n), np.int32(n), tab, np.int32(tab.shape[1]), out)
                launches[tag] = (out, lambda f=f, grid=grid, block=block, fargs=fargs: f(grid, block, fargs))
                launches[tag][1]()
            cp.cuda.Device().synchronize()
            same = bool(cp.array_equal(launches["base"][0], launches["work"][0]))
            rounds = {tag: [] for tag in versions}
            for _ in range(args.rounds):
                for tag in versions:
                    rounds[tag].append(median_ms(launches[tag][1]))
            table.append((kernel, N, beta, statistics.median(rounds["base"]), statistics.median(rounds["work"]), same))
            print(f"  {kernel} N={N} beta={beta}: base {table[-1][3]:.3f} ms, work {table[-1][4]:.3f} ms, "
                  f"identical {same}", file=sys.stderr)
            del launches
            cp.get_default_memory_pool().free_all_blocks()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.runtime.getDevice())
    print(f"\nresidue kernels side by side — {props['name'].decode()}, CUDA runtime "
          f"{cp.cuda.runtime.runtimeGetVersion()}, CuPy {cp.__version__}; base: {args.base or args.base_dir}")
    print(f"input: {n}x{n} float64 (rand-0.5)*exp({args.phi}*randn), seed {args.seed}; shifts beta - E from the row "
          f"(column) maxima; timing: kernels alone, CUDA events, median of {args.reps} per version, median of "
          f"{args.rounds} alternating rounds")
    print(f"{'kernel':6} {'N':>3} {'beta':>4} {'base ms':>9} {'work ms':>9} identical")
    for kernel, N, beta, tb, tw, same in table:
        print(f"{kernel:6} {N:>3} {beta:>4} {tb:>9.3f} {tw:>9.3f} {same}")
    return 0 if all(r[5] for r in table) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Whole ozgemm.matmul calls of two versions of the package side by side in one process: the
package at a git revision (``--base``, imported as ``ozgemm_base`` from ``git archive``) and the
one importable as ``ozgemm`` (the working tree with ``PYTHONPATH=.``), their calls
alternating, with the native matmul on the same arrays. Prints its context and a table last;
the two versions' results are checked bit-identical on every input.

Input: A, B = (rand - 0.5) exp(phi randn), square n (or the stacks of ``--stacks``), drawn in that order from
``cupy.random.RandomState(seed)`` on the GPU (``numpy.random.RandomState(seed)`` on the CPU);
with ``--complex``, complex64 (fp32 contracts) or complex128 operands whose real parts are
those and whose imaginary parts are drawn the same way after them.
Timing: each round times ``--reps`` calls of one version (CUDA events around each whole call,
or ``time.perf_counter``) and keeps their median; the versions alternate over ``--rounds``
rounds and the table gives the median round (after a warm-up of 4 calls each, so that graph
replays and speculative plans are in their steady state).

Run from the repository root:
    PYTHONPATH=. python benchmarks/side_by_side.py --base REV --device gpu --sizes 1024 4096 \\
        --contracts fp32 fp64-dgemm [--phi 0.5] [--reps 7] [--rounds 5]
    PYTHONPATH=. python benchmarks/side_by_side.py --base REV --device gpu --sizes \
        --stacks 64x512x512@64x512x512 10000x10x10@1x10x10 --contracts fp64
(``--base-dir DIR`` instead of ``--base REV``: that version's ``ozgemm`` package directory,
where the repository's history is not at hand.)
"""
import argparse
import importlib
import io
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np


def base_package(rev: str, root: Path, into: Path, src: Path | None = None):
    """The ``ozgemm`` package of ``rev`` (or the package directory ``src``) copied under
    ``into`` as ``ozgemm_base`` and imported (its kernel sources read from its own copy)."""
    pkg = into / "ozgemm_base"
    if src is not None:
        shutil.copytree(src, pkg)
    else:
        blob = subprocess.run(["git", "-C", str(root), "archive", rev, "ozgemm"], check=True,
                              capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
            tar.extractall(into, filter="data")
        (into / "ozgemm").rename(pkg)
    for f in pkg.rglob("*.py"):  # resources named by the package's own name
        text = f.read_text()
        if 'files("ozgemm.' in text:
            f.write_text(text.replace('files("ozgemm.', 'files("ozgemm_base.'))
    sys.path.insert(0, str(into))
    return importlib.import_module("ozgemm_base")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help="git revision of the package to compare against")
    ap.add_argument("--base-dir", type=Path, help="or: a directory holding that version's ozgemm package")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="gpu")
    ap.add_argument("--sizes", type=int, nargs="*", default=[1024, 2048, 4096])
    ap.add_argument("--stacks", nargs="*", default=[], metavar="AxBxC@DxExF",
                    help="stacked products: the shapes of a and b, e.g. 64x512x512@64x512x512")
    ap.add_argument("--contracts", nargs="+", default=["fp64", "fp32"])
    ap.add_argument("--complex", action="store_true", help="complex operands (complex64 for fp32 contracts)")
    ap.add_argument("--phi", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    cases = [(str(n), (n, n), (n, n)) for n in args.sizes]
    for spec in args.stacks:
        try:
            sa, sb = (tuple(int(v) for v in part.split("x")) for part in spec.split("@"))
        except ValueError:
            ap.error(f"--stacks {spec}: expected two shapes such as 64x512x512@64x512x512")
        cases.append((spec, sa, sb))
    if not cases:
        ap.error("nothing to run: give --sizes and/or --stacks")
    import ozgemm

    root = Path(__file__).resolve().parent.parent
    if (args.base is None) == (args.base_dir is None):
        ap.error("give one of --base REV and --base-dir DIR")
    if args.base_dir is not None:
        if not (args.base_dir / "__init__.py").is_file():
            ap.error(f"--base-dir {args.base_dir}: no package there (no __init__.py)")
        rev = str(args.base_dir)
    else:
        got = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", args.base + "^{commit}"],
                             capture_output=True, text=True)
        if got.returncode:
            ap.error(f"--base {args.base}: not a revision of the repository at {root} ({got.stderr.strip()}); "
                     "fetch it, or pass that version's package directory with --base-dir")
        rev = got.stdout.strip()
    tmp = tempfile.TemporaryDirectory()
    base = base_package(args.base, root, Path(tmp.name), args.base_dir)
    if args.device == "gpu":
        import cupy as xp

        def timed(f):
            e0, e1 = xp.cuda.Event(), xp.cuda.Event()
            e0.record()
            f()
            e1.record()
            e1.synchronize()
            return xp.cuda.get_elapsed_time(e0, e1)

        props = xp.cuda.runtime.getDeviceProperties(0)
        where = (f"{props['name'].decode()}, CUDA runtime {xp.cuda.runtime.runtimeGetVersion()}, "
                 f"CuPy {xp.__version__}")
    else:
        xp = np

        def timed(f):
            t = time.perf_counter()
            f()
            return 1e3 * (time.perf_counter() - t)

        where = f"{platform.processor() or platform.machine()} CPU"
    print(f"side by side: ozgemm {rev} (base) and ozgemm from {Path(ozgemm.__file__).parent} (work); {where}, "
          f"NumPy {np.__version__}, Python {platform.python_version()}")
    print(f"input: {'complex, parts ' if args.complex else ''}(rand-0.5)*exp({args.phi}*randn), seed {args.seed}; whole calls, median of {args.reps} "
          f"per round, {args.rounds} alternating rounds, median round; native = matmul on the same arrays")
    rows = []
    for n, sa, sb in cases:
        for c in args.contracts:
            dt = xp.float32 if c.startswith("fp32") else xp.float64
            rs = xp.random.RandomState(args.seed)
            a, b = (((rs.rand(*s_) - 0.5) * xp.exp(args.phi * rs.randn(*s_))).astype(dt) for s_ in (sa, sb))
            if args.complex:
                ai, bi = (((rs.rand(*s_) - 0.5) * xp.exp(args.phi * rs.randn(*s_))).astype(dt) for s_ in (sa, sb))
                a, b = a + 1j * ai, b + 1j * bi  # complex64 from float32 parts
                del ai, bi
            for mod in (base, ozgemm):
                for _ in range(4):
                    mod.matmul(a, b, contract=c)
            same = bool((base.matmul(a, b, contract=c) == ozgemm.matmul(a, b, contract=c)).all())
            if not same:
                raise SystemExit(f"n={n} {c}: the two versions give different results")
            med = {"base": [], "work": []}
            for _ in range(args.rounds):
                for name, mod in (("base", base), ("work", ozgemm)):
                    med[name].append(statistics.median(timed(lambda: mod.matmul(a, b, contract=c))
                                                       for _ in range(args.reps)))
            nat = statistics.median(timed(lambda: xp.matmul(a, b)) for _ in range(args.reps))
            rows.append((n, c, statistics.median(med["base"]), statistics.median(med["work"]), nat))
            print(f"  n={n} {c}: base rounds {['%.3f' % x for x in med['base']]}, work rounds "
                  f"{['%.3f' % x for x in med['work']]}", flush=True)
    w = max(6, *(len(n) for n, *_ in rows))
    print(f"{'n':>{w}} {'contract':<16} {'base ms':>9} {'work ms':>9} {'native ms':>10}")
    for n, c, tb, tw, tn in rows:
        print(f"{n:>{w}} {c:<16} {tb:>9.3f} {tw:>9.3f} {tn:>10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

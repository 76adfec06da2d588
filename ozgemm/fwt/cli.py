"""``ozgemm fwt`` sub-commands: transform a .npy file, or run the GPU benchmark."""
from __future__ import annotations

import argparse
import sys

import numpy as np

__all__ = ["register"]


def register(subparsers) -> None:
    """Add ``fwt`` (with ``transform`` and ``bench``) to an argparse sub-parser set."""
    p = subparsers.add_parser("fwt", help="fast Walsh-Hadamard transform",
                              description="Fast Walsh-Hadamard transform (ozgemm.fwt).")
    sub = p.add_subparsers(dest="fwt_command", metavar="FWT_COMMAND")
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])

    t = sub.add_parser("transform", help="transform an array stored in a .npy file")
    t.add_argument("input", help="input .npy (power-of-two length along --axis)")
    t.add_argument("output", help="output .npy")
    t.add_argument("--axis", type=int, default=-1)
    t.add_argument("--norm", choices=["backward", "ortho", "forward"], default="backward")
    t.add_argument("--order", choices=["natural", "sequency"], default="natural")
    t.add_argument("--inverse", action="store_true", help="inverse transform (ifwht)")
    t.add_argument("--gpu", action="store_true", help="compute on the GPU with CuPy")
    t.set_defaults(func=_cmd_transform)

    b = sub.add_parser("bench", help="GPU bandwidth/accuracy benchmark (needs CuPy + GPU)")
    b.add_argument("--dtypes", default="float16,float32,float64")
    b.add_argument("--lmin", type=int, default=8)
    b.add_argument("--lmax", type=int, default=22)
    b.add_argument("--mbytes", type=int, default=128, help="bytes per array (MiB), >= 64")
    b.add_argument("--reps", type=int, default=20)
    b.add_argument("--json", default=None, help="write the results as JSON to this path")
    b.set_defaults(func=_cmd_bench)


def _cmd_transform(args) -> int:
    """Exit 0, or 1 with one ``ozgemm fwt: ...`` line (unreadable input, unwritable output,
    a transform error, no CuPy for --gpu)."""
    from ._core import fwht, ifwht

    try:
        x = np.load(args.input, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        print(f"ozgemm fwt: cannot read {args.input}: {exc}", file=sys.stderr)
        return 1
    if not isinstance(x, np.ndarray):  # an .npz archive
        print(f"ozgemm fwt: {args.input} holds several arrays (.npz); give one .npy array", file=sys.stderr)
        return 1
    f = ifwht if args.inverse else fwht
    try:
        if args.gpu:
            try:
                import cupy
            except ImportError as exc:
                print(f"ozgemm fwt: --gpu needs CuPy ({exc})", file=sys.stderr)
                return 1
            y = cupy.asnumpy(f(cupy.asarray(x), axis=args.axis, norm=args.norm, order=args.order))
        else:
            y = f(x, axis=args.axis, norm=args.norm, order=args.order)
    except (ValueError, TypeError, OverflowError) as exc:
        print(f"ozgemm fwt: {exc}", file=sys.stderr)
        return 1
    try:
        np.save(args.output, y)
    except OSError as exc:
        print(f"ozgemm fwt: cannot write {args.output}: {exc}", file=sys.stderr)
        return 1
    return 0


def _cmd_bench(args) -> int:
    from .._xp import gpu_available
    from .bench import main as bench_main

    if args.mbytes < 64:
        print(f"ozgemm fwt bench: --mbytes must be >= 64 (arrays larger than the L2 cache), got {args.mbytes}",
              file=sys.stderr)
        return 2
    if not gpu_available():
        print("ozgemm fwt bench: needs CuPy and a CUDA GPU (none found)", file=sys.stderr)
        return 1

    return bench_main(dtypes=args.dtypes.split(","), lmin=args.lmin, lmax=args.lmax,
                      mbytes=args.mbytes, reps=args.reps, json_path=args.json)

"""``ozgemm lcn score | solve | draw`` (registered by ozgemm/cli.py)."""
from __future__ import annotations

import json
import sys
import time

__all__ = ["register"]


def _score(args) -> int:
    from .drawing import load
    from .exact import crossings, validate

    rows = []
    for path in args.files:
        d = load(path)
        c = crossings(d)
        viol = validate(d)
        kinds = {}
        for v in viol:
            kinds[v.kind] = kinds.get(v.kind, 0) + 1
        rows.append(dict(file=path, n=d.n, m=d.m, width=d.width, height=d.height, k=c.k, at_k=c.at_k,
                         total=c.total, valid=not viol, violations=kinds))
        if not args.json:
            vs = "yes" if not viol else "no (" + ", ".join(f"{k}: {n}" for k, n in kinds.items()) + ")"
            print(f"{path}: n={d.n} m={d.m} grid={d.width}x{d.height} k={c.k} at_k={c.at_k} "
                  f"total={c.total} valid={vs}")
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


def _solve(args) -> int:
    from .drawing import load, save
    from .exact import crossings
    from .layout import best_start, layout
    from .solver import AnnealParams, anneal, check_anneal_args

    from .._cliargs import unwritable_folder

    d = load(args.input)
    for opt, path in (("-o/--output", args.output), ("--history", args.history)):
        folder = unwritable_folder(path) if path else None  # before any work: a run is not lost
        if folder:
            raise OSError(f"cannot write {opt} {path}: folder {folder} missing or not writable")
    if args.time is None and args.iterations is None:
        args.time = 60.0
    params = AnnealParams(**json.loads(args.params)) if args.params else None
    check_anneal_args(d, seconds=args.time, iterations=args.iterations, seed=args.seed, device=args.device,
                      params=params)  # before spending time on the layout
    t0 = time.perf_counter()
    if args.init == "best":
        start, method, table = best_start(d, seed=args.seed)
        lay = ", ".join(f"{m} k={o[0]}" if o else f"{m} failed" for m, o in table.items())
    else:
        start, method = layout(d, args.init, seed=args.seed), args.init
        lay = method
    lay_s = time.perf_counter() - t0
    if not args.quiet:
        print(f"start layout: {method} ({lay}; {lay_s:.1f} s)", file=sys.stderr)
    if args.time is not None:  # the layout's time counts against --time
        args.time = max(args.time - lay_s, 0.0)
    bar = None
    if not args.quiet:
        try:  # an optional dependency (the ``[lcn]`` extra), imported on first use
            from tqdm import tqdm
        except ImportError as exc:
            raise ImportError("ozgemm lcn solve's progress bar needs tqdm: pip install 'ozgemm[lcn]' "
                              "(or pass --quiet)") from exc

        total = args.iterations if args.time is None else args.time
        bar = tqdm(total=total, unit="it" if args.time is None else "s", file=sys.stderr,
                   bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} {unit} {postfix}")

    def progress(rec):
        if bar is None:
            return
        bar.n = rec["iteration"] if args.time is None else min(rec["seconds"], args.time)
        bar.set_postfix_str(f"k={rec['k']} best=({rec['best_k']},{rec['best_at_k']},{rec['best_total']}) "
                            f"total={rec['total']} it={rec['iteration']}")

    res = anneal(start, seconds=args.time, iterations=args.iterations, seed=args.seed, device=args.device,
                 params=params, progress=progress, report_every=args.report_every)
    if bar is not None:
        bar.close()
    save(res.drawing, args.output)
    c, c0 = res.crossings, crossings(d)
    print(f"{args.input}: k {c0.k} -> {c.k} (at_k {c.at_k}), total {c0.total} -> {c.total}, start layout {method}, "
          f"{res.iterations} iterations, {res.accepted} accepted, {res.evaluations} evaluations, "
          f"{lay_s + res.seconds:.1f} s ({lay_s:.1f} s layout) on {res.device}; "
          f"wrote {args.output}")
    if args.history:
        with open(args.history, "w") as fh:
            json.dump(dict(input=args.input, seed=res.seed, device=res.device, params=res.params,
                           initial=list(c0.objective), start_layout=method, layout_seconds=lay_s,
                           start=list(res.initial.objective), final=list(c.objective), iterations=res.iterations,
                           accepted=res.accepted, evaluations=res.evaluations, seconds=res.seconds,
                           history=res.history), fh, indent=1)
    return 0


def _draw(args) -> int:
    from .draw import plot
    from .drawing import load

    plot(load(args.file), args.output, dpi=args.dpi)
    print(f"wrote {args.output}")
    return 0


def _typed_errors(func):
    """Report bad input (typed errors) as one line on stderr and exit status 2, not a traceback."""
    def run(args) -> int:
        try:
            return func(args)
        except (ValueError, TypeError, OSError, RuntimeError, OverflowError) as e:
            print(f"ozgemm lcn: error: {type(e).__name__}: {e}", file=sys.stderr)
            return 2
    return run


def register(subparsers) -> None:
    """Add the ``lcn`` sub-command (with score / solve / draw) to an argparse subparsers object."""
    p = subparsers.add_parser("lcn", help="local crossing number of straight-line grid drawings (GD 2025)")
    sub = p.add_subparsers(dest="lcn_command", metavar="ACTION")
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])

    s = sub.add_parser("score", help="k, edges at k, total crossings and validity of drawings")
    s.add_argument("files", nargs="+", metavar="FILE")
    s.add_argument("--json", action="store_true", help="print JSON instead of text")
    s.set_defaults(func=_typed_errors(_score))

    s = sub.add_parser("solve", help="minimise k by simulated annealing (repairs invalid input first)")
    s.add_argument("input", metavar="IN")
    s.add_argument("-o", "--output", required=True, metavar="OUT")
    s.add_argument("--time", type=float, default=None, help="seconds for the start layout and the annealing (default 60 unless --iterations); "
                                                            "loading, the final recount and saving come on top")
    s.add_argument("--iterations", type=int, default=None)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--device", choices=("cpu", "gpu", "auto"), default="auto")
    s.add_argument("--init", choices=("best", "given", "kamada-kawai", "spring"), default="best",
                   help="start layout: the input's (repaired), a Kamada-Kawai or spring layout snapped to "
                        "the grid, or the better of the input and Kamada-Kawai by (k, edges at k, total) "
                        "(default 'best'; Kamada-Kawai only for n <= 3000); its time counts against --time")
    s.add_argument("--params", default=None, help='AnnealParams as JSON, e.g. \'{"batch": 256}\'')
    s.add_argument("--report-every", type=float, default=1.0, help="seconds between progress read-backs")
    s.add_argument("--history", default=None, help="write the progress history as JSON here")
    s.add_argument("--quiet", action="store_true", help="no progress display")
    s.set_defaults(func=_typed_errors(_solve))

    s = sub.add_parser("draw", help="plot a drawing, edges at k highlighted")
    s.add_argument("file", metavar="FILE")
    s.add_argument("-o", "--output", required=True)
    s.add_argument("--dpi", type=int, default=150)
    s.set_defaults(func=_typed_errors(_draw))

"""Command-line interface: ``ozgemm audit | bench | fwt | lcn``.

Each sub-command lives next to the code it drives; this module only wires them up.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# (sub-command, module providing ``register(subparsers)``)
_SUBCOMMANDS = [
    ("audit", "ozgemm.cli.audit"),
    ("bench", "ozgemm.cli.bench"),
    ("fwt", "ozgemm.fwt.cli"),
    ("lcn", "ozgemm.lcn.cli"),
]


def build_parser() -> argparse.ArgumentParser:
    from ozgemm import __version__

    p = argparse.ArgumentParser(
        prog="ozgemm",
        description="Matrix products with a proven precision contract on INT8 engines.",
    )
    p.add_argument("--version", action="version", version=f"ozgemm {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, modname in _SUBCOMMANDS:
        try:
            mod = importlib.import_module(modname)
        except ModuleNotFoundError as exc:  # module not built yet in this checkout
            if exc.name == modname:
                continue
            raise
        mod.register(sub)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    rc = args.func(args)
    return int(rc or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

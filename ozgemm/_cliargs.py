"""Helpers shared by the command-line tools (``ozgemm audit``, ``bench``, ``lcn``): argument
checks, run before any work, so that a bad option is reported at once and a long run is never
lost to an output path that cannot be written; the tables' number cells; the benchmark's rows
of refused products."""
from __future__ import annotations

import math
import os


def unwritable_folder(path) -> str | None:
    """The folder of output file ``path`` when it is missing or not writable, else None."""
    folder = os.path.dirname(os.path.abspath(path))
    return None if os.path.isdir(folder) and os.access(folder, os.W_OK) else folder


def phi_seed_problem(phis, seed) -> str | None:
    """Why the standard inputs' ``--phi`` values or ``--seed`` are unusable, else None:
    entries (rand - 0.5) exp(phi randn) need a finite phi in [0, 64] (larger ones overflow to
    Inf/NaN), and numpy's generators a non-negative seed."""
    if not 0 <= seed < 2**63:
        return f"--seed must be a non-negative integer, got {seed}"
    bad = [p for p in phis if not (math.isfinite(p) and 0 <= p <= 64)]
    if bad:
        return f"--phi values must be finite and in [0, 64], got {bad}"
    return None


def fmt_num(x, nd=3):
    """A table cell for a number: "-" for None, nd significant digits below 1e4, else
    exponent notation (errors in u units can reach 1e17; ``ozgemm audit`` and ``ozgemm bench``)."""
    if x is None:
        return "-"
    if isinstance(x, float):
        if x == 0:
            return "0"
        return f"{x:.{nd}g}" if abs(x) < 1e4 else f"{x:.2e}"
    return str(x)


def reason(exc) -> str:
    """An exception's message, or its type's name where it has none."""
    return str(exc) or type(exc).__name__


def unmeasured_row(contract, n, phi, seed, exc) -> dict:
    """The row of a product that was not measured: ``refused`` (the contract refused it,
    ContractError ``exc``) or ``failed`` (MemoryError ``exc``: it did not fit), with the reason."""
    key = "failed" if isinstance(exc, MemoryError) else "refused"
    return {"contract": contract.name, "n": n, "phi": phi, "seed": seed, key: reason(exc)}


def unmeasured(r) -> bool:
    """Whether ``r`` is an :func:`unmeasured_row`."""
    return "refused" in r or "failed" in r


def unmeasured_reason(r) -> str:
    """"refused (...)" or "not measured (...)" for an :func:`unmeasured_row`."""
    return f"refused ({r['refused']})" if "refused" in r else f"not measured ({r['failed']})"


def unmeasured_line(r, width: int = 10) -> str:
    """One table line for an :func:`unmeasured_row`: the contract (in a column of ``width``),
    n, phi and the reason."""
    return f"{r['contract']:{width}} {r['n']:>5} phi={r['phi']}: {unmeasured_reason(r)}"

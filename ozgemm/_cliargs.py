"""Argument checks shared by the command-line tools (``ozgemm audit``, ``bench``, ``lcn``):
run before any work, so that a bad option is reported at once and a long run is never lost
to an output path that cannot be written."""
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

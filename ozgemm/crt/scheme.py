"""Execution of a CRT (Ozaki scheme II) plan: residues -> INT8 GEMMs -> CRT -> one rounding.

Ozaki, Uchino, Imamura, "Ozaki Scheme II: A GEMM-oriented emulation of floating-point
matrix multiplication using an integer modular technique" (2025), Sec. 3: scale A and B to
integers, multiply residues modulo each m_q with an exact integer GEMM, reconstruct the
integer product by the CRT, scale back. Here the reconstruction is exact (multiword
integers) and the only rounding is the final correctly rounded conversion.
"""
from __future__ import annotations

from ..precision.rounding import round_limbs
from .garner import crt_reconstruct
from .residues import scaled_residues

__all__ = ["execute"]


def execute(plan, engine, a=None, b=None, timings=None):
    """Compute ``C = RN(A'B' 2**-(s_i+t_j))`` for a :class:`~ozgemm.precision.planner.Plan`.

    ``a``, ``b`` are the (finite) operands the plan was made for; an engine with fused
    kernels (``engine.execute``, the CUDA engine) works from them directly, the generic
    path below from the exact decompositions kept in the plan. ``timings``, if a dict,
    receives per-phase wall times (seconds), synchronised where the engine is asynchronous.
    """
    import time

    if hasattr(engine, "execute") and a is not None:
        return engine.execute(plan, a, b, timings)
    xp = engine.xp
    sa, sb = plan._stats
    sync = getattr(engine, "synchronize", lambda: None)

    def lap(name, t0):
        if timings is not None:
            sync()
            timings[name] = timings.get(name, 0.0) + time.perf_counter() - t0
        return time.perf_counter()

    t0 = time.perf_counter()
    ra = scaled_residues(sa.mant, sa.exp, plan.s, plan.moduli, xp)
    rb = scaled_residues(sb.mant, sb.exp, plan.t, plan.moduli, xp)
    t0 = lap("residues", t0)
    c = engine.gemm_residues(ra, rb, plan.moduli)
    del ra, rb
    t0 = lap("gemms", t0)
    mag, neg = crt_reconstruct(c, plan.n_moduli, xp)
    del c
    e = -(plan.s[:, None] + plan.t[None, :])
    out = round_limbs(mag, neg, e, plan.contract.fmt, xp)
    lap("reconstruction", t0)
    return out

"""Execution of a CRT (Ozaki scheme II) plan: residues -> INT8 GEMMs -> CRT -> one rounding.

Ozaki, Uchino, Imamura, "Ozaki Scheme II: A GEMM-oriented emulation of floating-point
matrix multiplication using an integer modular technique" (2025), Sec. 3: scale A and B to
integers, multiply residues modulo each m_q with an exact integer GEMM, reconstruct the
integer product by the CRT, scale back. Here the reconstruction is exact (multiword
integers) and the only rounding is the final correctly rounded conversion.
"""
from __future__ import annotations

from .._timing import lap_timer

from ..precision.rounding import empty_result, round_result
from .reconstruct import crt_reconstruct
from .moduli import garner_constants
from .residues import scaled_residues
from ..precision.stats import split_float

__all__ = ["execute"]


def execute(plan, engine, a=None, b=None, timings=None):
    """Compute ``C = RN(A'B' 2**-(s_i+t_j))`` for a :class:`~ozgemm.precision.planner.Plan`.

    ``a``, ``b`` are the (finite) operands the plan was made for; an engine with fused
    kernels (``engine.execute``, the CUDA engine) works from them directly, the generic
    path below from the exact decompositions kept in the plan. ``timings``, if a dict,
    receives per-phase wall times (seconds), synchronised where the engine is asynchronous.
    """
    import time

    if getattr(plan, "method", "crt") == "ozaki":  # an Ozaki scheme I plan (method "ozaki"/"auto")
        from ..ozaki.pipeline import execute as execute_ozaki

        return execute_ozaki(plan, engine, a, b, timings)
    fmt = plan.contract.fmt
    if hasattr(engine, "execute") and a is not None:  # the engine's fused kernels
        return engine.execute(plan, a, b, timings)
    xp = engine.xp
    sa, sb = plan._stats
    for st in (sa, sb):  # an engine's fused statistics keep the rows, not their decomposition
        if st.mant is None:
            st.mant, st.exp = split_float(st.src, xp)[:2]
    lap = lap_timer(engine, timings)

    m, k, n = plan.shape
    N = plan.n_moduli
    L = garner_constants(N).limbs
    # workspace per row of A: residues (N k) + their float32 copy (4 N k) + products (8 N n)
    # + Garner digits and limbs (8 (N + 2 L + 4) n); fixed: residues of B (5 N n k)
    per_row = 5 * N * k + 8 * (2 * N + 2 * L + 6) * n
    fixed = 5 * N * n * k
    budget = engine.memory_budget() if hasattr(engine, "memory_budget") else 1 << 62
    if fixed + per_row > budget:
        raise MemoryError(
            f"ozgemm: this {m}x{k}x{n} product needs at least {(fixed + per_row) / 2**30:.2f} GiB of "
            f"workspace ({N} moduli), more than the budget of {budget / 2**30:.2f} GiB; split k, or "
            "raise the engine's memory_budget_bytes")
    tm = max(1, min(m, (budget - fixed) // per_row))
    t0 = time.perf_counter()

    def res_a(i0, i1):
        rows = (Ellipsis, slice(i0, i1), slice(None))  # (r, k) or (C, r, k) decompositions
        return scaled_residues(sa.mant[rows], sa.exp[rows], plan.s[i0:i1], plan.moduli, xp)

    if xp.__name__ == "numpy" and tm >= m:  # one tile: A's and B's residues on two threads
        from concurrent.futures import ThreadPoolExecutor  # (numpy releases the GIL in its loops)

        with ThreadPoolExecutor(max_workers=1) as pool:
            fa = pool.submit(res_a, 0, m)
            rb = scaled_residues(sb.mant, sb.exp, plan.t, plan.moduli, xp)
            ra_first = fa.result()
    else:
        rb = scaled_residues(sb.mant, sb.exp, plan.t, plan.moduli, xp)
        ra_first = None
    t0 = lap("residues", t0)
    out = empty_result(m, n, fmt, xp)
    col = (slice(None),) if fmt.name == "dd" else ()
    for i0 in range(0, m, tm):
        i1 = min(m, i0 + tm)
        ra = ra_first if ra_first is not None else res_a(i0, i1)
        ra_first = None
        t0 = lap("residues", t0)
        c = engine.gemm_residues(ra, rb, plan.moduli)
        del ra
        t0 = lap("gemms", t0)
        mag, neg = crt_reconstruct(c, N, xp)
        del c
        out[col + (slice(i0, i1),)] = round_result(mag, neg, plan.out_exponent(i0, i1), fmt, xp)
        t0 = lap("reconstruction", t0)
    return out

"""Execution of an Ozaki scheme I plan: slices -> one INT8 GEMM per diagonal -> exact limbs ->
one rounding.

Ozaki, Ogita, Oishi, Rump (2012) split A and B error-free into slices whose products are
exact, and sum the products; ozIMMU (Ootomo, Ozaki, Yokota 2024) does it with INT8 slices
on Tensor Cores and adds the products in FP64. Here the products of one diagonal
``p + q = t`` are one GEMM of concatenated slices, the diagonals are added exactly in
base-2**32 limbs (:mod:`ozgemm.ozaki.accumulate`) and the only rounding is the final
correctly rounded conversion — so the full schedule gives bit for bit the CRT result at the
same width beta, and CPU and GPU give the same bits. Written once against ``xp``; the
backend provides ``gemm_exact`` and its workspace budget.
"""
from __future__ import annotations

from .._timing import lap_timer

import time

from ..precision.stats import split_float
from .accumulate import LimbAccumulator, round_to_format
from .schedule import diagonals
from .slicing import scaled_slices

__all__ = ["execute"]


def _decomposition(st, x, xp):
    """Exact (mant, exp) of the rows the statistics ``st`` describe."""
    if st.mant is not None:
        return st.mant, st.exp
    src = st.src if st.src is not None else x
    mant, exp, _ = split_float(src, xp)
    return mant, exp


def execute(plan, backend, a=None, b=None, timings=None):
    """Compute ``C = RN(kept 2**-(s_i+t_j))`` for an :class:`~ozgemm.ozaki.planner.OzakiPlan`.

    Parameters
    ----------
    plan : OzakiPlan            from :func:`ozgemm.ozaki.planner.make_ozaki_plan`
    backend : Backend           its ``gemm_exact`` (int8 (m, k') x (n, k')^T -> exact) and workspace budget
    a, b : arrays, optional     the finite operands planned (needed where the backend's fused
                                statistics kept no decomposition, i.e. on the GPU)
    timings : dict, optional    receives per-phase seconds ("slicing", "gemms",
                                "accumulation", "rounding"), synchronised on the GPU

    Returns
    -------
    (m, n) array of the contract's dtype: the correctly rounded kept sum; the error bound is
    (*) of :mod:`ozgemm.ozaki.planner` (``plan.scaling_error_bound()`` + u_f |AB|).

    Raises
    ------
    MemoryError
        When even one row of A does not fit the backend's workspace budget.
    """
    xp = backend.xp
    sa, sb = plan.stats
    m, k, n = plan.shape
    s, w = plan.slices, plan.width
    fmt = plan.contract.fmt
    diags = diagonals(s, plan.schedule)
    last = diags[-1][0]
    lap = lap_timer(backend, timings)

    L = (w * last + 64) // 32 + 2
    # bytes per row of A: its slices (s k) + a concatenated copy (s k) + limbs, products and
    # rounding temporaries (~ (3 L + 16) n int64); fixed: slices of B and one concatenated copy
    per_row = 2 * s * k + 8 * (3 * L + 16) * n
    fixed = 2 * s * n * k + 40 * n * k
    budget, hard = backend.workspace_budget()
    if fixed + per_row > hard:
        raise MemoryError(
            f"ozgemm: this {m}x{k}x{n} Ozaki-I product ({s} slices) needs at least "
            f"{(fixed + per_row) / 2**30:.2f} GiB of workspace, more than the budget of "
            f"{hard / 2**30:.2f} GiB; split k or raise the backend's memory budget")
    tm = max(1, min(m, (budget - fixed) // per_row))
    if tm < m and tm >= 64:
        tm = tm // 64 * 64
    t0 = time.perf_counter()
    mant_b, exp_b = _decomposition(sb, None if b is None else b.T, xp)
    bs = scaled_slices(mant_b, exp_b, plan.t, s, w, xp, msb_first=False)  # (n, s, k), least significant first
    del mant_b, exp_b
    t0 = lap("slicing", t0)
    out = xp.empty((m, n), dtype=fmt.dtype)
    e_base = w * (2 * s - 2 - last)  # weight of the last diagonal kept
    for i0 in range(0, m, tm):
        i1 = min(m, i0 + tm)
        r = i1 - i0
        if sa.mant is not None:
            mant_a, exp_a = sa.mant[i0:i1], sa.exp[i0:i1]
        else:
            src = sa.src if sa.src is not None else a
            mant_a, exp_a, _ = split_float(src[i0:i1], xp)
        as_ = scaled_slices(mant_a, exp_a, plan.s[i0:i1], s, w, xp, msb_first=True)  # (r, s, k)
        del mant_a, exp_a
        t0 = lap("slicing", t0)
        acc = LimbAccumulator((r, n), w * last, len(diags), xp)
        for t, p0, p1 in diags:
            j0 = s - 1 - t + p0  # B slices q = t - p, stored least significant first
            a_cat = as_[:, p0:p1, :].reshape(r, (p1 - p0) * k)
            b_cat = bs[:, j0:j0 + (p1 - p0), :].reshape(n, (p1 - p0) * k)
            d = backend.gemm_exact(a_cat, b_cat)  # exact int64: sum over the diagonal's pairs
            del a_cat, b_cat
            t0 = lap("gemms", t0)
            acc.add(d, w * (last - t))
            del d
            t0 = lap("accumulation", t0)
        del as_
        mag, neg = acc.finish()
        del acc
        e = e_base - (plan.s[i0:i1, None] + plan.t[None, :])
        out[i0:i1] = round_to_format(mag, neg, e, fmt, xp)
        del mag, neg, e
        t0 = lap("rounding", t0)
    return out

"""Stacks of products planned and computed together, without a Python loop per product.

A stack ``(..., m, k) @ (..., k, n)`` gets, product by product, exactly the plan a 2-D call
would make — the same statistics (per row and column), the same bound GEMM, the same
minimal width, moduli count, width and shifts — but every phase runs once over the whole
stack: one statistics pass over all rows, one batched bound GEMM, the planner's per-product
choices as array operations on exact integers (the moduli thresholds of
:func:`ozgemm.precision.planner.speculative_thresholds`, the same exact comparisons as
:func:`~ozgemm.precision.planner.max_beta_for`), and per moduli count one residue pass, one
batched set of exact integer GEMMs, one reconstruction and one rounding — through the
backend's own residues (``backend.scaled_residues``, ``residue_products``,
``reconstruct_exponents``: the CPU engine's primes below 2**20, as the 2-D path). Results
are bit-identical to the per-product calls (the same exact integers, rounded once by the
same code).

The stacked path covers finite float32/float64 operands under CRT contracts on the numpy
backend; anything else (NaN/Inf, dd/binary128 operands, Ozaki scheme I, widths beyond the
threshold tables, refusals, plans requested) returns None and the caller computes product
by product, where the same rules raise or handle it.
"""
from __future__ import annotations

import numpy as np

from .contracts.moduli import MODULI
from .crt.reconstruct import constants_of
from .precision.planner import (SPEC_BETA_HI, _lb_upper_max, ceil_sqrt, max_beta_for, moduli_product,
                                needs_refinement, required_beta_entries, speculative_thresholds, width_cap)

__all__ = ["stacked_product"]

_NUM_MAX = 1 << 61  # the threshold tables are exact for numerators below their 2**62 clamp


def _repeat(st, P: int):
    """Row statistics of one operand repeated for P products (views where numpy allows)."""
    import dataclasses

    def rep(x):
        return None if x is None else np.concatenate([x] * P, axis=0) if x.ndim > 1 else np.tile(x, P)

    return dataclasses.replace(st, mant=st.mant, exp=st.exp, E=rep(st.E), width=rep(st.width), norm1=rep(st.norm1),
                               q=rep(st.q), zero_row=rep(st.zero_row), n1_int=rep(st.n1_int),
                               n2_int=rep(st.n2_int), qsum=rep(st.qsum))


def _tables(k: int):
    """(49, SPEC_BETA_HI + 1, 3) int64: the exact thresholds of every moduli count."""
    return np.stack([speculative_thresholds(n, k) for n in range(1, len(MODULI) + 1)])


def _choose(contract, beta_min, nums, k):
    """Per product (moduli count, width) of a componentwise contract, or None where a product
    needs the general planner (refusals, widths beyond the tables)."""
    P = beta_min.shape[0]
    if (beta_min > width_cap(contract)).any() or (beta_min > SPEC_BETA_HI).any():
        return None
    if (nums >= _NUM_MAX).any():
        return None
    T = _tables(k)
    # the thresholds grow with the moduli count and fall with the width: per distinct width
    # (moduli count) of the stack, one sorted search per source gives the fewest moduli
    # (widest width) any source allows, as the planner's exact comparisons do
    nmod = np.full(P, len(MODULI) + 1, dtype=np.int64)
    for b_ in np.unique(beta_min).tolist():
        sel = beta_min == b_
        for s in range(3):  # fewest N with nums <= T[N - 1, b_, s]
            nmod[sel] = np.minimum(nmod[sel], np.searchsorted(T[:, b_, s], nums[sel, s], side="left") + 1)
    if (nmod > len(MODULI)).any():
        return None  # beyond the table: the general planner refuses
    if contract.moduli != "auto":
        if (nmod > contract.moduli).any():
            return None  # a fixed count too small: the general planner refuses
        nmod = np.full(P, int(contract.moduli))
    beta = np.full(P, -1, dtype=np.int64)
    for n_ in np.unique(nmod).tolist():
        sel = nmod == n_
        for s in range(3):  # widest b with nums <= T[n_ - 1, b, s] (a prefix of the widths)
            col = T[n_ - 1, ::-1, s]  # increasing
            cnt = SPEC_BETA_HI + 1 - np.searchsorted(col, nums[sel, s], side="left")
            beta[sel] = np.maximum(beta[sel], cnt - 1)
    if (beta >= SPEC_BETA_HI).any():
        return None  # the widest width may lie beyond the table
    if (beta < beta_min).any():
        return None
    return nmod, beta


def stacked_product(a, b, contract, backend, b_shared=False, a_shared=False):
    """``a`` (P, m, k) @ ``b`` (P, k, n) as one stacked computation, or None (see the module
    docstring). ``b_shared``: every product has the same B (a broadcast operand, ``b`` of
    shape (1, k, n)): its statistics are computed once and its residues once per (moduli
    count, width), each product group then one GEMM per modulus; ``a_shared`` likewise for
    one A (``a`` of shape (1, m, k)). Returns the result storage
    of the contract's format for the stack: float (P, m, n), dd (2, P, m, n), binary128
    (P, m, n, 2)."""
    xp = backend.xp
    fmt = contract.fmt
    contract = contract.for_k(a.shape[-1])  # (a constant growing with k: its form for this k)
    if xp is not np or contract.method != "crt" or not fmt.supported or contract.max_gemms is not None:
        return None  # (a cost cap: per product, each plan checked)
    m, k = a.shape[1:]
    n = b.shape[2]
    P = b.shape[0] if a_shared else a.shape[0]
    if P < 2 or not (m and n and k) or (a_shared and b_shared):
        return None
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return None
    sa = backend.row_stats(a.reshape(a.shape[0] * m, k))
    sb = backend.row_stats(b.transpose(0, 2, 1).reshape(b.shape[0] * n, k))
    if a_shared:  # one A: its per-row statistics repeated for every product
        sa = _repeat(sa, P)
    if b_shared:  # one B: its per-column statistics repeated for every product
        sb = _repeat(sb, P)
    if contract.bound_kind == "componentwise":
        qa, qb = sa.q.reshape(P, m, k), sb.q.reshape(P, n, k)
        lb = backend.gemm_exact(qa, qb)  # (P, m, n), exact
        beta_ij = required_beta_entries(sa.width.reshape(P, m, 1), sb.width.reshape(P, 1, n),
                                        sa.norm1.reshape(P, m, 1), sb.norm1.reshape(P, 1, n),
                                        lb, contract.bits, k, fmt.u, np)
        beta_min = np.maximum(beta_ij.max(axis=(1, 2)), 1)
        if needs_refinement(beta_min.max(keepdims=True), contract.bits, m * n * k):
            return None  # a product whose lower bound a 2-D plan refines: per-product plans
        n1a, n1b = sa.n1_int.reshape(P, m).max(axis=1), sb.n1_int.reshape(P, n).max(axis=1)
        n2a, n2b = sa.n2_int.reshape(P, m).max(axis=1), sb.n2_int.reshape(P, n).max(axis=1)
        ub = _lb_upper_max(lb, sa.qsum.reshape(P, m), sb.qsum.reshape(P, n), np)  # (P,)
        cs = [ceil_sqrt(x * y) for x, y in zip(n2a.tolist(), n2b.tolist())]  # exact Python integers
        if max(cs) >= _NUM_MAX:
            return None
        nums = np.stack([np.minimum(n1a, n1b), np.array(cs, dtype=np.int64), ub + k], axis=1).astype(np.int64)
        chosen = _choose(contract, beta_min.astype(np.int64), nums, k)
        if chosen is None:
            return None
        nmod, beta = chosen
    else:
        N = int(contract.moduli)
        b0 = max_beta_for(moduli_product(N), float(k), k)
        if b0 < contract.bits + 3:
            return None
        nmod, beta = np.full(P, N), np.full(P, b0)
    s = np.where(sa.zero_row.reshape(P, m), 0, beta[:, None] - sa.E.reshape(P, m)).astype(np.int64)
    t = np.where(sb.zero_row.reshape(P, n), 0, beta[:, None] - sb.E.reshape(P, n)).astype(np.int64)
    # workspace: residues and their float copies, products, reconstruction limbs (as the 2-D path)
    need = 0
    for N in np.unique(nmod).tolist():
        mods = backend.residue_moduli(N)
        L, N_ = constants_of(mods).limbs, len(mods)
        cnt = int((nmod == N).sum())
        need = max(need, cnt * (8 * N_ * (m + n) * k + 8 * (2 * N_ + 2 * L + 6) * m * n))
    if need > backend.memory_budget():
        return None
    if fmt.name == "dd":
        out = np.empty((2, P, m, n))
    elif fmt.name == "binary128":
        out = np.empty((P, m, n, 2), dtype=np.uint64)
    else:
        out = np.empty((P, m, n), dtype=fmt.dtype)
    groups = {}
    for p_, key in enumerate(zip(nmod.tolist(), beta.tolist())):
        groups.setdefault(key if (a_shared or b_shared) else (key[0], None), []).append(p_)
    for (N, bw), members in groups.items():
        idx = np.array(members)
        Q = idx.size
        moduli = backend.residue_moduli(N)  # the backend's own, as the 2-D path
        NR = len(moduli)
        if a_shared:  # one GEMM per modulus for the group: (m, k) x (k, Q n)
            ra_ = backend.scaled_residues(sa.mant[:m], sa.exp[:m], s[idx[0]], N)  # (N, m, k)
            rb_ = backend.scaled_residues(sb.mant.reshape(P, n, k)[idx].reshape(Q * n, k),
                                          sb.exp.reshape(P, n, k)[idx].reshape(Q * n, k), t[idx].reshape(-1), N)
            c = backend.residue_products(ra_, rb_, moduli).reshape(NR, m, Q, n).transpose(0, 2, 1, 3)
        else:
            ra_ = backend.scaled_residues(sa.mant.reshape(P, m, k)[idx].reshape(Q * m, k),
                                          sa.exp.reshape(P, m, k)[idx].reshape(Q * m, k), s[idx].reshape(-1), N)
            if b_shared:  # one GEMM per modulus for the group: (Q m, k) x (k, n)
                rb_ = backend.scaled_residues(sb.mant[:n], sb.exp[:n], t[idx[0]], N)  # (N, n, k)
                c = backend.residue_products(ra_, rb_, moduli).reshape(NR, Q, m, n)
            else:
                rb_ = backend.scaled_residues(sb.mant.reshape(P, n, k)[idx].reshape(Q * n, k),
                                              sb.exp.reshape(P, n, k)[idx].reshape(Q * n, k), t[idx].reshape(-1), N)
                c = backend.residue_products(ra_.reshape(NR, Q, m, k), rb_.reshape(NR, Q, n, k), moduli)
        del ra_, rb_
        e = -(s[idx][:, :, None] + t[idx][:, None, :])
        r = backend.reconstruct_exponents(c, N, e, fmt)
        del c
        if fmt.name == "dd":
            out[:, idx] = r
        else:
            out[idx] = r
    return out


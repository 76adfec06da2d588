"""Stacks of products planned and computed together, without a Python loop per product.

A stack ``(..., m, k) @ (..., k, n)`` gets, product by product, exactly the plan a 2-D call
would make — the same statistics (per row and column), the same bound GEMM, the same
minimal width, moduli count, width and shifts — but every phase runs once over the whole
stack: one statistics pass over all rows, one batched bound GEMM, the planner's per-product
choices as array operations on exact integers (the moduli thresholds of
:func:`ozgemm.precision.planner.speculative_thresholds`, the same exact comparisons as
:func:`~ozgemm.precision.planner.max_beta_for`), and per moduli count one residue pass, one
batched set of exact integer GEMMs, one reconstruction and one rounding — through the
backend's stack phases (``Backend.stack_scalars``, ``stack_residues``, ``stack_products``,
``stack_reconstruct``: on the CPU its primes up to 2965821 and stacked BLAS GEMMs, in chunks
of products that stay in cache (``Backend.stack_chunk_bytes``), on the GPU strided-batched
INT8 GEMMs and kernels with one grid row per product). Results are
bit-identical to the per-product calls (the same exact integers, rounded once by the same
code).

The stacked path covers finite float32/float64 operands under CRT contracts (on the GPU:
float results, k <= 131056); anything else (NaN/Inf, dd/binary128 operands, Ozaki scheme I,
widths beyond the threshold tables, refusals, refined lower bounds, plans requested) returns
None and the caller computes product by product, where the same rules raise or handle it.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ._xp import to_numpy
from .contracts.moduli import MODULI
from .precision.planner import (SPEC_BETA_HI, ceil_sqrt, needs_refinement, normwise_width, speculative_thresholds,
                                width_cap)
from .precision.stats import LB_BITS

__all__ = ["stacked_product"]

_NUM_MAX = 1 << 61  # the threshold tables are exact for numerators below their 2**62 clamp
_CHUNK_ROWS = 512  # the fewest rows of a chunk's GEMM against a shared operand


def _tables(k: int):
    """(49, SPEC_BETA_HI + 1, 3) int64: the exact thresholds of every moduli count."""
    return np.stack([speculative_thresholds(n, k) for n in range(1, len(MODULI) + 1)])


def _ceil_sqrt_products(x, y):
    """:func:`~ozgemm.precision.planner.ceil_sqrt` of ``x * y`` per product (int64 arrays of
    non-negative values), exactly: r0 = sqrt(x) sqrt(y) in float64 errs by less than r0 2**-48
    (five roundings of relative error 2**-53: two conversions, two roots, the product), so
    ceil(r0) is the answer wherever no integer lies within that distance of r0; the others
    (exact squares among them) and roots from 2**62 on take Python integers."""
    r0 = np.sqrt(x.astype(np.float64)) * np.sqrt(y.astype(np.float64))
    up = np.ceil(r0)
    exact = (np.minimum(r0 - np.floor(r0), up - r0) > r0 * 2.0 ** -48 + 2.0 ** -1000) & (up < 2.0 ** 62)
    out = np.where(exact, up, 0.0).astype(np.int64)
    idx = np.flatnonzero(~exact)
    if idx.size:
        out[idx] = [min(ceil_sqrt(int(a) * int(b)), _NUM_MAX) for a, b in zip(x[idx].tolist(), y[idx].tolist())]
    return out


def _choose(contract, beta_min, nums, k):
    """Per product (moduli count, width) of a CRT contract from its minimal widths and the
    numerators of its three S sources (:func:`~ozgemm.precision.planner.speculative_thresholds`),
    or None where a product needs the general planner (refusals, widths beyond the tables;
    componentwise contracts: beyond :func:`~ozgemm.precision.planner.width_cap`)."""
    P = beta_min.shape[0]
    cap = width_cap(contract) if contract.bound_kind == "componentwise" else SPEC_BETA_HI
    if (beta_min > cap).any() or (beta_min > SPEC_BETA_HI).any():
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
    if contract.method != "crt" or not fmt.supported or contract.max_gemms is not None:
        return None  # (a cost cap: per product, each plan checked)
    m, k = a.shape[1:]
    n = b.shape[2]
    P = b.shape[0] if a_shared else a.shape[0]
    if P < 2 or not (m and n and k) or (a_shared and b_shared) or not backend.stack_supports(fmt, k):
        return None
    Pa, Pb = a.shape[0], b.shape[0]
    if 8 * P * m * n + 2 * (Pa * m + Pb * n) * k > backend.workspace_budget()[0]:
        return None  # the stacked statistics and bound GEMM alone exceed the workspace: per product
    flag = xp.zeros((1,), dtype=xp.int32) if backend.flags_nonfinite else None
    if flag is None and not (xp.isfinite(a).all() and xp.isfinite(b).all()):
        return None
    shared = "a" if a_shared else ("b" if b_shared else None)
    sa = backend.row_stats(a.reshape(a.shape[0] * m, k), nonfinite=flag)
    sb = backend.row_stats(xp.ascontiguousarray(b.transpose(0, 2, 1)).reshape(b.shape[0] * n, k), nonfinite=flag)
    if contract.bound_kind == "componentwise":
        sc = backend.stack_scalars(sa, sb, (P, m, n, a_shared, b_shared), contract.bits, k, fmt.u, flag)
        if sc is None:
            return None  # NaN/Inf: per product, where the special-value rules apply
        beta_min = sc[:, 0]
        if needs_refinement(beta_min.max(keepdims=True), contract.bits, m * n * k):
            return None  # a product whose lower bound a 2-D plan refines: per-product plans
        n1a, n1b, n2a, n2b = sc[:, 1], sc[:, 2], sc[:, 3], sc[:, 4]
        third = sc[:, 5] + k  # the bound GEMM's upper bound (planner.s_bound)
    else:  # normwise: per product, the norm maxima of its rows and columns (planner._normwise_choice)
        maxima = [x.reshape(r, -1).max(axis=1) for x, r in ((sa.n1_int, Pa), (sb.n1_int, Pb), (sa.n2_int, Pa),
                                                            (sb.n2_int, Pb))]
        host = to_numpy(xp.concatenate(maxima + ([flag.astype(xp.int64)] if flag is not None else [])))
        if flag is not None and host[-1]:
            return None
        n1a, n1b, n2a, n2b = (np.broadcast_to(v, (P,)).astype(np.int64)
                              for v in np.split(host[:2 * (Pa + Pb)], np.cumsum([Pa, Pb, Pa])))
        beta_min = normwise_width(contract, n1a + n1b, k)
        third = np.full(P, k << (2 * LB_BITS))  # S <= k (no bound GEMM)
    cs = _ceil_sqrt_products(np.asarray(n2a, dtype=np.int64), np.asarray(n2b, dtype=np.int64))
    if cs.max() >= _NUM_MAX:
        return None
    nums = np.stack([np.minimum(n1a, n1b), cs, third], axis=1).astype(np.int64)
    chosen = _choose(contract, beta_min.astype(np.int64), nums, k)
    if chosen is None:
        return None
    nmod, beta = chosen
    beta_d = xp.asarray(beta)
    s = xp.where(sa.zero_row.reshape(Pa, m), 0, beta_d[:, None] - sa.E.reshape(Pa, m)).astype(xp.int64)
    t = xp.where(sb.zero_row.reshape(Pb, n), 0, beta_d[:, None] - sb.E.reshape(Pb, n)).astype(xp.int64)
    expand = shared is not None and not backend.stack_shares_operands
    need = max(backend.stack_workspace(N, int((nmod == N).sum()), m, n, k, None if expand else shared)
               for N in np.unique(nmod).tolist())
    if expand:  # the shared operand's rows copied for every product
        need += P * (m if shared == "a" else n) * k * 8
    if need > backend.workspace_budget()[0]:
        return None
    if expand:  # a backend where each group costs launches: the shared operand as P operands,
        # so that the products group by moduli count only (their shifts already per product)
        r, st = (m, sa) if shared == "a" else (n, sb)
        st = dataclasses.replace(st, src=xp.broadcast_to(st.src.reshape(1, r, k), (P, r, k)).reshape(P * r, k))
        sa, sb = (st, sb) if shared == "a" else (sa, st)
        shared = None
    # the products grouped by moduli count (and, against a shared operand, width): _choose
    # keeps -1 <= beta < SPEC_BETA_HI, so beta + 1 < SPEC_BETA_HI + 2 and the key is one-to-one
    gkey = nmod * (SPEC_BETA_HI + 2) + (beta + 1 if shared else 0)
    order = np.argsort(gkey, kind="stable")
    cuts = np.flatnonzero(np.diff(gkey[order])) + 1
    groups = np.split(order, cuts)
    chunk = backend.stack_chunk_bytes
    out = None
    for idx in groups:
        N = int(nmod[idx[0]])
        moduli = backend.residue_moduli(N)  # the backend's own, as the 2-D path
        # a shared operand: its residues once for the group (one width), its shifts those of
        # the group's first product (every product of the group has the same width)
        first = xp.asarray(idx[:1])
        ra_sh = backend.stack_residues(sa, None, s[first], N) if shared == "a" else None
        rb_sh = backend.stack_residues(sb, None, t[first], N) if shared == "b" else None
        q = len(idx)
        per = None if chunk is None else (backend.stack_workspace(N, 2, m, n, k, shared)
                                          - backend.stack_workspace(N, 1, m, n, k, shared))
        if per is not None and per <= chunk:  # chunks of products whose own workspace stays in
            # cache (none where one product alone exceeds it); against a shared operand, each
            # chunk's GEMM keeps at least _CHUNK_ROWS rows (BLAS efficiency)
            q = chunk // per
            if shared is not None:
                q = max(q, -(-_CHUNK_ROWS // (m if shared == "b" else n)))
        for c0 in range(0, len(idx), q):
            sub = idx[c0:c0 + q]
            sel = xp.asarray(sub)
            s_, t_ = s[first] if shared == "a" else s[sel], t[first] if shared == "b" else t[sel]
            ra_ = ra_sh if shared == "a" else backend.stack_residues(sa, sub, s_, N)
            rb_ = rb_sh if shared == "b" else backend.stack_residues(sb, sub, t_, N)
            c = backend.stack_products(ra_, rb_, moduli, shared)
            del ra_, rb_
            r = backend.stack_reconstruct(c, s_, t_, N, fmt, shared)
            del c
            if len(groups) == 1 and len(sub) == len(idx):  # the group's result is the stack's
                return r
            if fmt.name == "dd":
                out = xp.empty((2, P, m, n)) if out is None else out
                out[:, sel] = r
            else:
                out = xp.empty((P, m, n) + r.shape[3:], dtype=r.dtype) if out is None else out
                out[sel] = r
        del ra_sh, rb_sh
    return out

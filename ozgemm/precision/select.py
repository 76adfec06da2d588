"""The choice between the methods for ``method = "auto"``: the cheaper of two proven plans.

Both candidates keep the same promise (each proven by its own planner); the choice only
changes the cost. It is made on a cost model of the plans alone, in units of one INT8 GEMM
of the product's shape::

    cost = G + P * K_eq / k

G = INT8 GEMMs (moduli or slice products, plus the bound GEMM), P = passes over the m x n
output in 16-byte int64 words that the method's reconstruction makes, K_eq = the inner
dimension at which one such pass costs as much as one INT8 GEMM (H200: 16 B / 3.3 TB/s
against 2k / 1300 TOPS -> K_eq ~ 3000). P: CRT with the fused GPU kernels ~ 2 + N/4;
Ozaki-I ~ 8 T + 6 L + 50 (T diagonals, L limbs). The model is the same for every backend, so
"auto" picks the same method — and so the same bits — on the CPU and the GPU. The constants
are estimates from measured phase times; the model under-predicts Ozaki-I's non-GEMM cost
on the GPU about 5x, and CRT won every measured case (docs/design.md).
"""
from __future__ import annotations

import dataclasses

__all__ = ["modelled_cost", "choose"]

#: inner dimension at which one pass over the m x n output (int64 read+write) costs one INT8 GEMM
K_EQ = 3000.0


def _limbs(s, schedule, w=8):
    last = s - 1 if schedule == "triangular" else 2 * s - 2
    return (w * last + 64) // 32 + 2


def modelled_cost(plan) -> float:
    """Modelled time of executing ``plan`` (CRT or Ozaki-I), in INT8 GEMMs of its shape."""
    m, k, n = plan.shape
    if plan.method == "ozaki":
        passes = 8 * plan.n_diagonals + 6 * _limbs(plan.slices, plan.schedule, plan.width) + 50
    else:
        passes = 2 + plan.n_moduli / 4  # the fused GPU kernels
    return plan.int8_gemms + passes * K_EQ / max(k, 1)


def choose(contract, crt, ozaki, crt_error=None, ozaki_error=None):
    """The plan ``method = "auto"`` keeps, its ``widened`` report saying why.

    ``crt``: the CRT plan, or None where CRT cannot prove this contract (``crt_error`` says
    why: e.g. a fixed moduli count too small for these inputs) or
    exceeds its ``max_gemms``; ``ozaki``: the Ozaki scheme I plan, or None likewise
    (``ozaki_error``); at least one is given. Ties go to CRT."""
    if ozaki is None:
        why = f": {ozaki_error}" if ozaki_error else " within max_gemms"
        return dataclasses.replace(crt, contract=contract,
                                   widened=crt.widened + f"; auto: CRT (Ozaki-I not available{why})")
    if crt is None:
        why = f": {crt_error}" if crt_error else ""
        return dataclasses.replace(ozaki, contract=contract,
                                   widened=ozaki.widened + f"; auto: Ozaki-I (CRT not available for this contract{why})")
    c_oz, c_crt = modelled_cost(ozaki), modelled_cost(crt)
    note = (f"; auto: modelled cost CRT {c_crt:.1f} ({crt.n_moduli} moduli) vs Ozaki-I {c_oz:.1f} "
            f"({ozaki.slices} slices, {ozaki.schedule}) INT8-GEMM units")
    if c_oz < c_crt:
        return dataclasses.replace(ozaki, contract=contract, widened=ozaki.widened + note)
    return dataclasses.replace(crt, contract=contract, widened=crt.widened + note)

"""Which method runs a contract: its planner, then its pipeline.

``method = "crt"``: Ozaki scheme II (:func:`ozgemm.precision.planner.make_plan`,
:func:`ozgemm.crt.pipeline.execute`); ``"ozaki"``: Ozaki scheme I
(:func:`ozgemm.ozaki.planner.make_ozaki_plan`, :func:`ozgemm.ozaki.pipeline.execute`);
``"auto"``: both planned on the same statistics and bound GEMM, the cheaper kept
(:func:`ozgemm.precision.select.choose`; dd/binary128 operands and results: CRT).
"""
from __future__ import annotations

import dataclasses

from .contracts.contract import ContractError
from .crt import pipeline as crt_pipeline
from .ozaki import pipeline as ozaki_pipeline
from .ozaki.planner import make_ozaki_plan
from .precision.bands import plan_bands
from .precision.planner import (ModuliShortfall, WidthShortfall, check_cost, componentwise_bound, make_plan,
                                statistics)
from .precision.select import choose

__all__ = ["plan_product", "execute", "execute_complex"]


def plan_product(contract, a, b, backend, *, force: int | None = None, nonfinite_flag=None, speculate=False,
                 pa=None, pb=None, known=(None, None), src=(None, None), embedding=None, whole=None):
    """The plan of ``a @ b`` (:func:`_plan`), within the contract's ``max_gemms`` (a capped
    contract never speculates, so every plan it gets is checked here); beyond one plan's width,
    in exponent bands (:func:`ozgemm.precision.bands.plan_bands`, which takes ``src``). A
    contract whose constant grows with k is planned as its constant-growth form for this k
    (:meth:`~ozgemm.contracts.contract.Contract.for_k`). ``embedding`` (CRT contracts; the form of
    the lower bound, :func:`ozgemm.precision.planner.complex_bound_operands`): ``a``, ``b`` are a
    complex product's operands as :func:`ozgemm.precision.planner.statistics` takes them, and
    bands are planned on the whole real embedding ``whole()`` returns."""
    contract = contract.for_k(a.shape[-1])
    try:
        p = _plan(contract, a, b, backend, force=force, nonfinite_flag=nonfinite_flag, speculate=speculate,
                  pa=pa, pb=pb, known=known, embedding=embedding)
    except WidthShortfall as exc:
        if force is not None or not _bands_allowed(contract):
            raise
        if embedding:
            a, b = whole()
        # (a NaN/Inf flag was read with the planner's scalars, before its width check)
        return plan_bands(contract, a, b, backend, why=str(exc).split(": ", 1)[-1].split(". Fix:")[0], src=src)
    if force is None and p.pending is None:
        check_cost(p)
    return p


def _bands_allowed(contract) -> bool:
    """Whether a product beyond one plan's width is split into exponent bands: componentwise
    contracts whose moduli/slices follow the data (a fixed count is the user's cap)."""
    if contract.bound_kind != "componentwise":
        return False
    fixed = contract.moduli if contract.method == "crt" else contract.slices if contract.method == "ozaki" else None
    return fixed in (None, "auto")


def _plan(contract, a, b, backend, *, force: int | None = None, nonfinite_flag=None, speculate=False,
          pa=None, pb=None, known=(None, None), embedding=None):
    """The plan of ``a @ b`` (finite 2-D operands, or (C, ., .) components) under ``contract``
    on ``backend``. ``force``: that many moduli (CRT) or slices (Ozaki-I), proving nothing
    (diagnostics). Other arguments: :func:`ozgemm.precision.planner.make_plan`.

    Raises ContractError (the contract cannot be proven for these inputs; the message names
    the fix) and MemoryError as the planners do."""
    method = contract.method
    if method == "crt":
        return make_plan(contract, a, b, backend, force_moduli=force, nonfinite_flag=nonfinite_flag,
                         speculate=speculate, pa=pa, pb=pb, known=known, embedding=embedding)
    assert not embedding, "a complex product's top block row is planned by CRT contracts only"
    crt_c = contract.with_(method="crt")
    wide = a.ndim != 2 or b.ndim != 2
    if method == "ozaki" and not (wide and contract.slices == "auto" and force is None):
        return make_ozaki_plan(contract, a, b, backend, force_slices=force, known=known)
    if method == "ozaki" or contract.fmt.name not in ("binary64", "binary32") or wide:
        # Ozaki-I takes float32/float64 operands and results: the same promise through CRT
        # (an Ozaki-I contract with a fixed slice count keeps its refusal)
        p = make_plan(crt_c, a, b, backend, pa=pa, pb=pb, known=known)
        return dataclasses.replace(p, contract=contract,
                                   widened=p.widened + f"; {method}: CRT (Ozaki-I takes float32/float64 operands "
                                                       "and binary32/64 results only)")
    if force is not None:
        return make_ozaki_plan(contract, a, b, backend, force_slices=force, known=known)
    crt = oz = err_crt = err_oz = None
    if contract.bound_kind == "componentwise":
        sa, sb = statistics(a, b, backend, known=known)
        bound = componentwise_bound(crt_c, sa, sb, a.shape[1], backend, operands=(a, b))
        try:
            crt = make_plan(crt_c, a, b, backend, bound=bound)
        except ModuliShortfall as exc:  # a fixed moduli count too small: Ozaki-I may still prove it
            err_crt = exc
        try:
            oz = make_ozaki_plan(contract, a, b, backend, bound=bound)
        except ContractError as exc:  # e.g. more slice diagonals than it holds: CRT may prove it
            err_oz = exc
    else:
        try:
            oz = make_ozaki_plan(contract, a, b, backend, known=known)
        except ContractError as exc:
            err_oz = exc
        try:
            crt = make_plan(crt_c, a, b, backend, known=known)
        except ContractError as exc:
            err_crt = exc
    if crt is None and oz is None:
        raise err_crt if err_crt is not None else err_oz
    # a cost cap (max_gemms): a candidate beyond it is not available; none within: the cheaper one's refusal
    cap = contract.max_gemms

    def within(p):
        return p is not None and (cap is None or p.int8_gemms <= cap)

    if not (within(crt) or within(oz)):
        check_cost(min((p for p in (crt, oz) if p is not None), key=lambda p: p.int8_gemms))
    return choose(contract, crt if within(crt) else None, oz if within(oz) else None, err_crt, err_oz)


def execute(plan, backend, a, b, timings=None, reuse=None):
    """Run ``plan``'s pipeline on ``backend`` for the operands it was made for (``reuse``: the
    residue store of prepared operands, CRT; exponent bands recompute theirs)."""
    if plan.method == "bands":
        return crt_pipeline.execute_bands(plan, backend, a, b, timings)
    if plan.method == "ozaki":
        return ozaki_pipeline.execute(plan, backend, a, b, timings)
    return crt_pipeline.execute(plan, backend, a, b, timings, reuse)


def execute_complex(plan, backend, a, b, timings=None, out=None):
    """Run ``plan``, made for the real embedding of a complex product, giving [Re | Im]
    (m, 2n): CRT plans in the split or three-product form
    (:func:`ozgemm.crt.pipeline.execute_complex`, which takes ``out`` = (re, im) to write the
    parts into, e.g. the real and imaginary views of a complex array) on the finite operands
    they were planned from
    (:func:`ozgemm.precision.operands.complex_operands`: ``a`` (m, 2k) with interleaved parts,
    ``b`` = [Br | Bi] (k, 2n); or, for a plan of the whole embedding, its blocks); Ozaki-I and
    banded plans as the product of the finite embedding ``a`` (m, 2k), ``b`` (2k, 2n)
    (:func:`ozgemm.precision.operands.complex_embedding`)."""
    if plan.method == "bands":
        return crt_pipeline.execute_bands(plan, backend, a, b, timings)
    if plan.method == "crt":
        k, n = a.shape[1] // 2, b.shape[1] // 2
        if b.shape[0] == 2 * k:  # the whole embedding (a CRT plan chosen by method "auto")
            return crt_pipeline.execute_complex(plan, backend, (a[:, :k], a[:, k:]), (b[:k, :n], b[:k, n:]),
                                                timings, out)
        return crt_pipeline.execute_complex(plan, backend, (a[:, 0::2], a[:, 1::2]), (b[:, :n], b[:, n:]),
                                            timings, out)
    return ozaki_pipeline.execute(plan, backend, a, b, timings)

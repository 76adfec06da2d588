"""Planning Ozaki scheme I, and the choice between the methods (``method = "auto"``).

The scaling is the CRT planner's (:mod:`ozgemm.precision.planner`): row i of A is scaled by
``2**s_i``, ``s_i = beta - E_i``, and rounded to integers ``|A'_il| <= 2**beta`` (columns of
B likewise), with the proven scaling error ``delta_ij`` (in units of ``2**(E_i+F_j)``) of
that module. Ozaki scheme I then writes A', B' in s balanced INT8 slices (``beta <= 8s - 2``,
:mod:`ozgemm.ozaki.slicing`) and forms the slice products of a schedule
(:mod:`ozgemm.ozaki.schedule`), exactly; the kept integer differs from A'B' by at most the
truncation term ``tau = (1 + 2**-7)(s-1) k 2**(8s-2-2 beta)`` (triangular schedule; 0 for the
full schedule). The final correct rounding adds ``u_f |kept 2**..|``, so

    |C - AB|_ij <= u_f |AB|_ij + (1 + u_f)(delta_ij + tau) 2**(E_i+F_j).          (*)

Componentwise contracts. With the lower bound ``LB_ij <= (|A||B|)_ij`` of the CRT planner
(one exact INT8 GEMM of 7-bit quantisations), the contract holds if
``(1+u_f)(1+2**-40)(delta_ij + tau) <= 2**-(bits-1) LB_ij`` for every entry (the 2**-40
covers the float64 evaluation of the left side, a few correctly rounded operations on
normal numbers). For given s the planner takes ``beta = 8s - 2`` (the widest the slices
hold: delta decreases with beta, and so does tau at fixed s):

* full schedule: ``s = ceil((beta_min + 2) / 8)`` where beta_min is the CRT planner's
  smallest width proving the bound (:func:`ozgemm.precision.planner.required_beta`);
* triangular: the smallest ``s >= that`` for which the inequality holds at every entry,
  checked elementwise (entries with ``LB_ij = 0`` can only be proven with ``tau = 0``, i.e.
  the full schedule — this happens for widely spread inputs, e.g. phi = 3);
* ``schedule = "auto"``: the one with fewer products (full wins when triangular needs
  s_t(s_t+1)/2 >= s_f**2).

Normwise contracts. With ``na_i, nb_j <= k`` and ``2**E_i <= 2 max|A_i,:|``,
``|C - AB|_ij <= k max|A_i,:| max|B_:,j| (u_f + (1+u_f) 2**(2-beta) (1 + 2**(-beta-2) + g))``
with ``g = (1 + 2**-7)(s-1)`` (triangular, beta = 8s-2) or 0 (full); the planner takes the
fewest slices for which the bracket is <= 2**-(bits-1) (exact rational check), independent of
the data (no device->host read).

Method "auto". The planner builds the CRT plan and the Ozaki plan for the same statistics and
keeps the one with the smaller modelled cost, in units of one INT8 GEMM of the product's
shape (:func:`modelled_cost`)::

    cost = G + P * K_eq / k

G = INT8 GEMMs (moduli or slice products, plus the bound GEMM), P = passes over the m x n
output in 16-byte int64 words that the method's reconstruction makes, K_eq = the inner
dimension at which one such pass costs as much as one INT8 GEMM on the engine
(H200: 16 B / 3.3 TB/s against 2k / 1300 TOPS -> K_eq ~ 3000). P: CRT with the fused GPU
kernels ~ 2 + N/4; Ozaki ~ 8 T + 6 L + 50 (T diagonals, L limbs). The H200 model is used on
every engine, so that "auto" picks the same method — and so the same bits — on the CPU and
the GPU (DESIGN invariant 3). The constants are estimates from the phase times in
benchmarks/RESULTS.md; benchmarks/NOTES.md compares the model with the measurement (the
model under-predicts Ozaki-I's non-GEMM cost on the GPU about 5x; CRT won every measured case).

Sources: Ozaki, Ogita, Oishi, Rump, Numer. Algorithms 59 (2012) (error-free splitting,
slice products); Ootomo, Ozaki, Yokota, IJHPCA (2024) (ozIMMU: INT8 slices, triangular
schedule, k-dependent slice width); Uchino, Ozaki, Imamura (2024/25) (INT8 Ozaki-I
performance/accuracy); the scaling and LB: :mod:`ozgemm.precision.planner`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction

from ..contracts.contract import Contract, ContractError
from ..precision.planner import Plan, _delta_norm, make_plan, required_beta
from ..precision.stats import LB_BITS, row_stats
from .schedule import SCHEDULES, diagonals, n_products, truncation_norm, truncation_norm_exact
from .slicing import max_width_for, slice_width, slices_for_width

__all__ = ["OzakiPlan", "make_ozaki_plan", "modelled_cost"]

_BETA_CAP = 1000
#: inner dimension at which one pass over the m x n output (int64 read+write) costs one INT8 GEMM
K_EQ = {"cuda": 3000.0, "cpu": 150.0, "cpu-int64": 20.0}


@dataclass
class OzakiPlan(Plan):
    """A :class:`~ozgemm.precision.planner.Plan` for Ozaki scheme I.

    Extra attributes
    ----------------
    slices : int       s, INT8 slices per scaled row of A / column of B
    width : int        value bits per slice (8)
    schedule : str     "triangular" (s(s+1)/2 products) or "full" (s**2)
    trunc : float      proven bound on the dropped slice products, units of 2**(E_i+F_j)

    ``delta_norm`` / ``scaling_error_bound()`` include the truncation term: they bound
    ``|kept 2**-(s_i+t_j) - AB|``.
    """

    slices: int = 0
    width: int = 8
    schedule: str = "triangular"
    trunc: float = 0.0

    method = "ozaki"

    @property
    def n_products(self) -> int:
        return n_products(self.slices, self.schedule)

    @property
    def n_diagonals(self) -> int:
        return len(diagonals(self.slices, self.schedule))

    @property
    def int8_gemms(self) -> int:
        """INT8 GEMM equivalents: slice products, plus one for the componentwise bound."""
        return self.n_products + (1 if self.contract.bound_kind == "componentwise" else 0)

    @property
    def delta_norm(self):
        return super().delta_norm + self.trunc

    def info(self) -> dict:
        d = super().info()
        d.update({"method": "ozaki", "n_moduli": None, "log2_M": None, "slices": self.slices,
                  "slice_bits": self.width, "schedule": self.schedule, "products": self.n_products,
                  "diagonal_gemm_calls": self.n_diagonals, "int8_gemms": self.int8_gemms,
                  "truncation_norm": self.trunc})
        return d


def _limbs(s, schedule, w=8):
    last = s - 1 if schedule == "triangular" else 2 * s - 2
    return (w * last + 64) // 32 + 2


def modelled_cost(plan, engine) -> float:
    """Modelled time of executing ``plan`` on ``engine``, in INT8 GEMMs of its shape (see the
    module docstring)."""
    m, k, n = plan.shape
    # one model for every engine (the H200's constants): "auto" must choose the same method on
    # the CPU and the GPU, or the two engines would give different bits (DESIGN invariant 3)
    keq = K_EQ["cuda"]
    if getattr(plan, "method", "crt") == "ozaki":
        passes = 8 * plan.n_diagonals + 6 * _limbs(plan.slices, plan.schedule, plan.width) + 50
    else:
        N = plan.n_moduli
        passes = 2 + N / 4  # the fused GPU kernels
    return plan.int8_gemms + passes * keq / max(k, 1)


def _where(c: Contract) -> str:
    return f"contract {c.name!r} ({c.source})"


def _stats(engine, a, b, xp):
    hook = getattr(engine, "row_stats", None)
    st = hook or (lambda x: row_stats(x, xp))
    return st(a), st(b.T)


_MAX_DIAGONALS = 41  # ozaki.accumulate.LimbAccumulator: int64 limb sums stay exact up to 41 terms


def _finish(contract, shape, beta, s, schedule, w, sa, sb, xp, widened):
    m, k, n = shape
    beta = int(beta)
    if len(diagonals(int(s), schedule)) > _MAX_DIAGONALS:
        raise ContractError(f"{_where(contract)}: {s} slices with the {schedule} schedule need "
                            f"{len(diagonals(int(s), schedule))} diagonals; at most {_MAX_DIAGONALS} are "
                            "accumulated exactly. Fix: fewer slices, the triangular schedule, or method = \"crt\"")
    sh_a = xp.where(sa.zero_row, 0, beta - sa.E).astype(xp.int64)
    sh_b = xp.where(sb.zero_row, 0, beta - sb.E).astype(xp.int64)
    return OzakiPlan(contract=contract, shape=shape, beta=beta, moduli=(), s=sh_a, t=sh_b, E=sa.E, F=sb.E,
                     widened=widened, _stats=(sa, sb), slices=int(s), width=w, schedule=schedule,
                     trunc=truncation_norm(s, beta, k, schedule, w))


def _beta_for(s, w):
    return min(max_width_for(s, w), _BETA_CAP)


def _componentwise(contract, a, b, engine, xp, sa, sb, m, k, n, w):
    """(plan, None) or (None, reason) for a componentwise contract."""
    fmt = contract.fmt
    u = fmt.u
    lb = engine.gemm_exact(sa.q, sb.q)
    rbeta = getattr(engine, "required_beta", None) or required_beta
    beta_min = int(rbeta(sa, sb, lb, contract.bits, k, u, xp))
    # (the CRT planner has already refused widths beyond exponent_range)
    s_full = slices_for_width(beta_min, w)
    fixed = contract.slices if contract.slices != "auto" else None
    want = contract.schedule
    options = []
    if want in ("full", "auto"):
        s = s_full if fixed is None else fixed
        if s < s_full:
            if want == "full":
                raise ContractError(f"{_where(contract)}: these inputs need {s_full} slices (width {beta_min} bits) "
                                    f"to prove the componentwise bound with the full schedule; the contract fixes "
                                    f"{fixed}. Fix: slices = {s_full} or \"auto\".")
        else:
            options.append((n_products(s, "full"), s, "full"))
    if want in ("triangular", "auto"):
        fac = (1.0 + u) * (1.0 + 2.0 ** -40)
        R = xp.ldexp(lb.astype(xp.float64), -(contract.bits - 1) - 2 * LB_BITS)
        has_zero = bool((R <= 0).any()) if R.size else False
        limit = min(options[0][0], 10**9) if options else 10**9
        cands = [fixed] if fixed is not None else range(max(s_full, 1), s_full + 12)
        for s in cands:
            if s < s_full:
                continue
            if n_products(s, "triangular") >= limit:
                break  # the full schedule is no dearer
            if s > 1 and has_zero:
                break  # tau > 0 cannot be proven against LB_ij = 0
            beta = _beta_for(s, w)
            tau = truncation_norm(s, beta, k, "triangular", w)
            dn = _delta_norm(beta, sa, sb, k, xp)
            if bool((fac * (dn + tau) <= R).all()) if R.size else True:
                options.append((n_products(s, "triangular"), s, "triangular"))
                break
        if want == "triangular" and not any(o[2] == "triangular" for o in options):
            why = ("some entries have a zero lower bound LB_ij (widely spread inputs), where only the full "
                   "schedule (no truncation) proves the bound" if has_zero else
                   f"the truncation term (s-1) k 2^-beta stays above the bound up to {s_full + 11} slices"
                   if fixed is None else f"with the fixed {fixed} slices the truncation term is too large")
            raise ContractError(f"{_where(contract)}: the triangular schedule cannot prove the componentwise bound "
                                f"2^-{contract.bits - 1}|A||B| for these inputs: {why}. Fix: schedule = \"full\" "
                                "or \"auto\".")
    if not options:
        raise ContractError(f"{_where(contract)}: the fixed {fixed} slices cannot prove the componentwise bound "
                            f"(needs {s_full} slices for the full schedule). Fix: slices = \"auto\".")
    g, s, sched = min(options)
    beta = _beta_for(s, w)
    how = "fixed" if fixed is not None else "auto"
    widened = (f"{how}: {s} slices x {w} bits, {sched} schedule ({g} products) prove the bound "
               f"(minimal width {beta_min}, used {beta})")
    return _finish(contract, (m, k, n), beta, s, sched, w, sa, sb, xp, widened)


def _normwise_ok(s, sched, bits, p, w):
    beta = _beta_for(s, w)
    g = Fraction(129, 128) * (s - 1) if sched == "triangular" else Fraction(0)
    u = Fraction(1, 2**p)
    val = u + (1 + u) * Fraction(4, 2**beta) * (1 + Fraction(1, 2 ** (beta + 2)) + g)
    return val <= Fraction(2, 2**bits)


def _normwise(contract, a, b, engine, xp, sa, sb, m, k, n, w):
    p = contract.fmt.p
    fixed = contract.slices if contract.slices != "auto" else None
    scheds = SCHEDULES if contract.schedule == "auto" else (contract.schedule,)
    options = []
    for sched in scheds:
        for s in ([fixed] if fixed is not None else range(1, 126)):
            if _normwise_ok(s, sched, contract.bits, p, w):
                options.append((n_products(s, sched), s, sched))
                break
    if not options:
        raise ContractError(f"{_where(contract)}: the normwise bound 2^-{contract.bits - 1} k max|A| max|B| needs more "
                            f"than the fixed {fixed} slices ({contract.schedule} schedule). Fix: slices = \"auto\".")
    g, s, sched = min(options)
    widened = f"{'fixed' if fixed else 'auto'}: {s} slices x {w} bits, {sched} schedule ({g} products), normwise"
    return _finish(contract, (m, k, n), _beta_for(s, w), s, sched, w, sa, sb, xp, widened)


def make_ozaki_plan(contract: Contract, a, b, engine, force_slices: int | None = None) -> Plan:
    """Plan an Ozaki scheme I product (``method = "ozaki"``), or the cheaper of CRT and
    Ozaki-I (``method = "auto"``), of finite 2-D arrays ``a`` (m x k), ``b`` (k x n).

    Called by :func:`ozgemm.precision.planner.make_plan` for methods other than "crt".
    ``force_slices`` (diagnostics, e.g. the error-vs-slices figure of ``ozgemm audit``) uses
    that many slices, the widest beta they hold and the contract's schedule ("auto" ->
    triangular), proving nothing.

    Returns an :class:`OzakiPlan` (or a CRT :class:`~ozgemm.precision.planner.Plan` when
    "auto" finds it cheaper; its ``widened`` says why).

    Error bound: (*) of the module docstring; the contract's promise is proven before any
    slice GEMM runs.

    Raises
    ------
    ContractError
        Formats other than binary64/binary32; exponent spread beyond the contract's
        ``exponent_range`` (same rule as CRT); fixed slices too few; triangular schedule
        unprovable (the message names the fix).
    """
    xp = engine.xp
    fmt = contract.fmt
    if contract.method == "auto" and (fmt.name not in ("binary64", "binary32") or a.ndim != 2 or b.ndim != 2):
        # Ozaki-I has no path for wide formats/operands: "auto" is CRT here
        p = make_plan(contract.with_(method="crt"), a, b, engine)
        p = dataclasses.replace(p, contract=contract, widened=p.widened + "; auto: CRT (Ozaki-I takes binary32/64 only)")
        return p
    if fmt.name not in ("binary64", "binary32"):
        raise ContractError(f"{_where(contract)}: method {contract.method!r} supports binary64 and binary32 "
                            f"results in this release, not {fmt.name}; use method = \"crt\"")
    if a.ndim != 2 or b.ndim != 2:
        raise ContractError(f"{_where(contract)}: method {contract.method!r} takes float32/float64 operands in this "
                            "release (dd/binary128 operands: use method = \"crt\")")
    m, k = a.shape
    n = b.shape[1]
    w = slice_width(k)
    if force_slices is not None:
        sa, sb = _stats(engine, a, b, xp)
        sched = contract.schedule if contract.schedule != "auto" else "triangular"
        s = int(force_slices)
        return _finish(contract, (m, k, n), _beta_for(s, w), s, sched, w, sa, sb, xp,
                       f"forced: {s} slices, {sched} schedule, no bound proven")
    crt_plan = None
    crt_err = None
    if contract.bound_kind == "componentwise":
        # the CRT planner refuses spreads beyond exponent_range (the same rule for both methods)
        # and gives the statistics; for "auto" it is the CRT candidate as well
        base_c = contract.with_(method="crt", moduli="auto" if contract.method == "ozaki" else contract.moduli)
        try:
            crt_plan = make_plan(base_c, a, b, engine)
        except ContractError as exc:
            if contract.method == "ozaki" or "moduli" not in str(exc):
                raise
            crt_err = exc  # "auto": a fixed moduli count too small; Ozaki-I may still prove it
            crt_plan = make_plan(base_c.with_(moduli="auto"), a, b, engine)
            crt_plan_ok = False
        else:
            crt_plan_ok = True
        sa, sb = crt_plan._stats
        oz = _componentwise(contract, a, b, engine, xp, sa, sb, m, k, n, w)
    else:
        sa, sb = _stats(engine, a, b, xp)
        oz = _normwise(contract, a, b, engine, xp, sa, sb, m, k, n, w)
        crt_plan_ok = False
        if contract.method == "auto" and contract.moduli != "auto":
            try:
                crt_plan = make_plan(contract.with_(method="crt"), a, b, engine)
                crt_plan_ok = True
            except ContractError as exc:
                crt_err = exc
    if contract.method == "ozaki" or not crt_plan_ok:
        if contract.method == "auto":
            oz.widened += "; auto: Ozaki-I (CRT not available for this contract" + (f": {crt_err}" if crt_err else "") + ")"
        return oz
    c_oz, c_crt = modelled_cost(oz, engine), modelled_cost(crt_plan, engine)
    note = (f"; auto: modelled cost CRT {c_crt:.1f} ({crt_plan.n_moduli} moduli) vs Ozaki-I {c_oz:.1f} "
            f"({oz.slices} slices, {oz.schedule}) INT8-GEMM units")
    if c_oz < c_crt:
        oz.widened += note
        return oz
    return dataclasses.replace(crt_plan, contract=contract, widened=crt_plan.widened + note)

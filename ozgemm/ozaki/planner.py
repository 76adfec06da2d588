"""Planning Ozaki scheme I.

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

Method "auto" (both planners, the cheaper plan kept) is decided by
:mod:`ozgemm.precision.select`.

Sources: Ozaki, Ogita, Oishi, Rump, Numer. Algorithms 59 (2012) (error-free splitting,
slice products); Ootomo, Ozaki, Yokota, IJHPCA (2024) (ozIMMU: INT8 slices, triangular
schedule, k-dependent slice width); Uchino, Ozaki, Imamura (2024/25) (INT8 Ozaki-I
performance/accuracy); the scaling and LB: :mod:`ozgemm.precision.planner`.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from ..contracts.contract import Contract, ContractError
from ..precision.planner import Bound, Plan, WidthShortfall, componentwise_bound, statistics
from ..precision.stats import LB_BITS
from .schedule import SCHEDULES, diagonals, n_products, truncation_norm
from .slicing import max_width_for, slice_width, slices_for_width

__all__ = ["OzakiPlan", "make_ozaki_plan"]

_BETA_CAP = 1000
@dataclass(frozen=True)
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

    method: ClassVar[str] = "ozaki"

    @property
    def n_products(self) -> int:
        return n_products(self.slices, self.schedule)

    @property
    def n_diagonals(self) -> int:
        return len(diagonals(self.slices, self.schedule))

    @property
    def int8_gemms(self) -> int:
        """INT8 GEMM equivalents: slice products, plus one for the componentwise bound."""
        return self.n_products + (self.bound_gemms if self.contract.bound_kind == "componentwise" else 0)

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


def _where(c: Contract) -> str:
    return f"contract {c.name!r} ({c.source})"


_MAX_DIAGONALS = 41  # ozaki.accumulate.LimbAccumulator: int64 limb sums stay exact up to 41 terms


def _finish(contract, shape, beta, s, schedule, w, sa, sb, xp, widened):
    m, k, n = shape
    beta = int(beta)
    if len(diagonals(int(s), schedule)) > _MAX_DIAGONALS:
        raise WidthShortfall(f"{_where(contract)}: {s} slices with the {schedule} schedule need "
                            f"{len(diagonals(int(s), schedule))} diagonals; at most {_MAX_DIAGONALS} are "
                            "accumulated exactly. Fix: fewer slices, the triangular schedule, or method = \"crt\"")
    sh_a = xp.where(sa.zero_row, 0, beta - sa.E).astype(xp.int64)
    sh_b = xp.where(sb.zero_row, 0, beta - sb.E).astype(xp.int64)
    return OzakiPlan(contract=contract, shape=shape, beta=beta, moduli=(), s=sh_a, t=sh_b, E=sa.E, F=sb.E,
                     widened=widened, stats=(sa, sb), slices=int(s), width=w, schedule=schedule,
                     trunc=truncation_norm(s, beta, k, schedule, w))


def _beta_for(s, w):
    return min(max_width_for(s, w), _BETA_CAP)


def _componentwise(contract, bound: Bound, xp, m, k, n, w):
    """The componentwise Ozaki-I plan from the bound GEMM and the planner's scalars."""
    fmt = contract.fmt
    u = fmt.u
    sa, sb = bound.stats
    beta_min = bound.minimal_width(contract, k)  # the same exponent-range rule as CRT
    lb, lb_shift = bound.finest()  # (the refined lower bound where the planner refined it)
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
        R = xp.ldexp(lb.astype(xp.float64), -(contract.bits - 1) - 2 * LB_BITS - lb_shift)
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
            dn = bound.delta_norm(beta, k)
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
               f"(minimal width {beta_min}, used {beta}){bound.note}")
    return _finish(contract, (m, k, n), beta, s, sched, w, sa, sb, xp, widened).evolve(bound_gemms=bound.gemms)


def _normwise_ok(s, sched, bits, p, w):
    beta = _beta_for(s, w)
    g = Fraction(129, 128) * (s - 1) if sched == "triangular" else Fraction(0)
    u = Fraction(1, 2**p)
    val = u + (1 + u) * Fraction(4, 2**beta) * (1 + Fraction(1, 2 ** (beta + 2)) + g)
    return val <= Fraction(2, 2**bits)


def _normwise(contract, xp, sa, sb, m, k, n, w):
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


def make_ozaki_plan(contract: Contract, a, b, backend, force_slices: int | None = None, bound=None,
                    known=(None, None)) -> Plan:
    """Plan an Ozaki scheme I product of finite 2-D float32/float64 arrays ``a`` (m x k),
    ``b`` (k x n) under ``contract`` (its method "ozaki"; schedule and slices its keys).

    ``force_slices`` (diagnostics, e.g. the error-vs-slices figure of ``ozgemm audit``) uses
    that many slices, the widest beta they hold and the contract's schedule ("auto" ->
    triangular), proving nothing. ``bound``: the statistics and bound GEMM already computed
    (:func:`ozgemm.precision.planner.componentwise_bound`, shared with the CRT candidate
    when the method is chosen).

    Returns an :class:`OzakiPlan`. Error bound: (*) of the module docstring; the contract's
    promise is proven before any slice GEMM runs.

    Raises
    ------
    ContractError
        Formats other than binary64/binary32, dd/binary128 operands; exponent spread beyond
        the contract's ``exponent_range`` (same rule as CRT); fixed slices too few;
        triangular schedule unprovable (the message names the fix).
    """
    xp = backend.xp
    fmt = contract.fmt
    if fmt.name not in ("binary64", "binary32"):
        raise ContractError(f"{_where(contract)}: method {contract.method!r} supports binary64 and binary32 "
                            f"results in this release, not {fmt.name}; use method = \"crt\"")
    if a.ndim != 2 or b.ndim != 2:
        raise ContractError(f"{_where(contract)}: method {contract.method!r} takes float32/float64 operands in this "
                            "release (dd/binary128 operands: use method = \"crt\")")
    m, k = a.shape
    n = b.shape[1]
    w = slice_width(k)
    if bound is not None:
        sa, sb = bound.stats
    else:
        sa, sb = statistics(a, b, backend, known=known)
    if force_slices is not None:
        sched = contract.schedule if contract.schedule != "auto" else "triangular"
        s = int(force_slices)
        return _finish(contract, (m, k, n), _beta_for(s, w), s, sched, w, sa, sb, xp,
                       f"forced: {s} slices, {sched} schedule, no bound proven")
    if contract.bound_kind == "componentwise":
        if bound is None:
            bound = componentwise_bound(contract, sa, sb, k, backend, operands=(a, b))
        return _componentwise(contract, bound, xp, m, k, n, w)
    return _normwise(contract, xp, sa, sb, m, k, n, w)

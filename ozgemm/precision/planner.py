"""The planner: (contract, A, B) -> :class:`Plan` with shifts, width, moduli and bound.

Method (Ozaki scheme II, Ozaki-Uchino-Imamura 2025, Sec. 3, with an a-priori bound of our own):

Scaling. Row i of A is scaled by 2**s_i, s_i = beta - E_i (|a_il| < 2**E_i), and rounded
to the nearest integer A'_il, so |A'_il| <= 2**beta and |a_il - A'_il 2**-s_i| <= 2**(-s_i-1),
with equality to zero where a_il * 2**s_i is already an integer (always, once
beta >= width_i). Columns of B likewise with t_j = beta - F_j.

Exactness. C' = A'B' is an integer matrix with
|C'_ij| <= 2**(2 beta) S + 2**beta k + k =: Cmax, where S bounds sum_l |a~_il||b~_lj|
(a~ = a 2**-E, b~ = b 2**-F) by min(max_i na_i, max_j nb_j, max_i |a~_i|_2 max_j |b~_j|_2),
na_i = sum_l |a~_il|, nb_j = sum_l |b~_lj| (dd/binary128 components under normwise contracts use S = k). It is recovered exactly from its
residues modulo m_1..m_N when M = prod m_q > 2 Cmax.

Scaling error. With x_i = [row i inexact at width beta], y_j likewise,
|A'B' 2**-(s_i+t_j) - AB|_ij <= 2**(E_i+F_j-beta-1) (x_i nb_j + y_j (na_i + k 2**(-beta-1)))
=: delta_ij (the k 2**(-beta-1) term only where row i is inexact). The final rounding adds u_f |A'B'2**..| <= u_f (|AB| + delta), so
|C - AB| <= u_f |AB| + (1 + u_f) delta.

Componentwise contracts. A lower bound LB_ij <= (|A||B|)_ij comes from one exact INT8 GEMM
of 7-bit round-down quantisations of |A| and |B| (q of :mod:`ozgemm.precision.stats`). The
planner takes the smallest beta with (1+u_f)(1+2**-40) delta_ij <= 2**-(bits-1) LB_ij for
every entry (a sufficient condition, solved per entry in closed form by
:func:`required_beta`; the 2**-40 covers the float64 evaluation), then the fewest moduli with M > 2 Cmax(beta), then the largest
beta those moduli still allow (more accuracy at no cost).

Normwise contracts. Since 2**E_i <= 2 max|a_i,:| and |AB|_ij <= k max|A_i,:| max|B_:,j|,
|C - AB|_ij <= (u_f k + (1+u_f) 2**(1-beta) (na + nb + k 2**(-beta-1))) max|A_i,:| max|B_:,j|
with na >= max_i na_i, nb >= max_j nb_j; the smallest beta that makes this at most
2**-(bits-1) k max|A_i,:| max|B_:,j| (:func:`normwise_width`, from the norm maxima of
:func:`normwise_scalars`, which a speculative plan keeps on the device) is at most bits + 3
(na = nb = k) for one-component operands. Moduli "auto": the fewest with
M > 2 Cmax(that beta); a fixed count must hold it; either way beta is then the largest
with M > 2 Cmax(beta) (:func:`_normwise_choice`). dd and
binary128 operands (components, each entry's scaling error <= c/2 units, c = 2 or 4; for dd
2**E_i <= 2 (1 + 2**-52) max|a_i,:|, E_i from hi = RN(hi + lo)): the scaling error grows to
k 2**(E_i+F_j) c 2**-beta (1 + c 2**(-beta-2)), within the same bound whenever
beta >= bits + 3 + log2 c (the factor 2 of slack covers the (1 + 2**-51) and (1 + u_f)), and
Cmax takes c k 2**beta + c**2 k.
"""
from __future__ import annotations

import functools
import math
from math import prod
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import ClassVar
from fractions import Fraction

import numpy as np

from .._xp import to_numpy
from ..contracts.moduli import GAUSSIAN_MODULI, MODULI
from ..contracts.contract import Contract, ContractError
from .specials import NonFiniteInputs
from .stats import LB_BITS, NORM_BITS, RowStats, take_rows, twice

__all__ = ["Plan", "Bound", "plan_header", "ModuliShortfall", "WidthShortfall", "RefineBound", "REFINE_GAP", "REFINE_MIN_WORK",
           "second_window", "needs_refinement", "moduli_product", "moduli_exceeding", "moduli_for_bits", "cmax",
           "max_beta_for", "min_moduli_for", "s_bound", "ceil_sqrt", "make_plan", "confirm_plan", "statistics", "componentwise_bound", "complex_pairs", "complex_bound_operands", "complex_bound_form", "normwise_width", "normwise_thresholds", "normwise_scalars",
           "check_width", "delta_norm", "required_beta", "width_constants", "plan_scalars", "KBLOCK_INT32"]

#: k-block for exact int32 accumulation of int8 products: residues lie in [-128, 127], so
#: |sum| <= k * 2**14 and k <= (2**31 - 1) // 2**14 = 131071 keeps every partial sum in int32.
KBLOCK_INT32 = (2**31 - 1) // (128 * 128)
_BETA_CAP = 1000  # keeps 2**-beta a normal float64 in the bound check


@dataclass(frozen=True)
class Plan:
    """What the planner derived for one 2-D product ``A (m x k) @ B (k x n)``.

    Attributes
    ----------
    contract : Contract
    shape : (m, k, n)
    beta : int                  integer width of the scaled rows of A / columns of B
    moduli : tuple[int, ...]    the moduli used (Ozaki scheme II)
    s, t : int64 arrays (m,), (n,)   row shifts of A, column shifts of B
    E, F : int64 arrays         row max exponents of A, column max exponents of B
    kblock : int                k-block keeping int32 accumulation exact
    delta_norm : float64 (m, n) proven bound on the scaling error, in units of 2**(E_i+F_j) (lazy)
    exact_inputs : bool         True when every input entry was scaled exactly (lazy)
    widened : str               report of how the moduli count was chosen
    stats : (RowStats, RowStats) the statistics of A's rows and B's columns the plan was made from
    pa, pb : (m,), (n,) int64   binary128 operands: rows of A / columns of B were rescaled by
                                2**-pa / 2**-pb before planning (None otherwise)
    pending : speculative plans only: the backend's handle on the planner's scalars, read by
                                :func:`confirm_plan` (beta is 0 and the moduli a guess until then)

    A plan is frozen: it depends on the contract and the data only, never on the backend.
    """

    contract: Contract
    shape: tuple
    beta: int
    moduli: tuple
    s: object
    t: object
    E: object
    F: object
    kblock: int = KBLOCK_INT32
    widened: str = ""
    stats: tuple = field(default=None, repr=False)
    pa: object = None
    pb: object = None
    pending: object = field(default=None, repr=False)
    key: tuple = field(default=None, repr=False)  # the speculation table's key
    bound_gemms: int = 1  # INT8 GEMMs of the componentwise lower bound (2: refined, see Bound)

    method: ClassVar[str] = "crt"  # the pipeline that runs it (OzakiPlan: "ozaki")

    def evolve(self, **changes):
        """A new plan with ``changes`` (this one is frozen): a field copy, cheaper than
        ``dataclasses.replace`` on the per-call path."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    def out_exponent(self, i0=0, i1=None):
        """Exponent of the integer product's unit for rows i0:i1: ``-(s_i + t_j) (+ pa_i + pb_j)``."""
        e = -(self.s[i0:i1, None] + self.t[None, :])
        if self.pa is not None:
            e = e + self.pa[i0:i1, None]
        if self.pb is not None:
            e = e + self.pb[None, :]
        return e

    @property
    def delta_norm(self):
        """Proven bound on the scaling error of each entry, in units of 2**(E_i+F_j), (m, n)."""
        sa, sb = self.stats
        return delta_norm(self.beta, sa, sb, self.shape[1], _xp_of(sa.width))

    @property
    def exact_inputs(self) -> bool:
        """True when every input entry was scaled exactly (no scaling error at all)."""
        sa, sb = self.stats
        xp = _xp_of(sa.width)
        return bool(xp.all(sa.width <= self.beta)) and bool(xp.all(sb.width <= self.beta))

    @property
    def n_moduli(self) -> int:
        return len(self.moduli)

    @property
    def log2_M(self) -> float:
        return float(np.log2(np.array(self.moduli, dtype=np.float64)).sum())

    @property
    def int8_gemms(self) -> int:
        """INT8 GEMMs per product (one per modulus, one more for the componentwise bound)."""
        return self.n_moduli + (self.bound_gemms if self.contract.bound_kind == "componentwise" else 0)

    def scaling_error_bound(self):
        """Proven entrywise bound on ``|A'B' 2**-(s_i+t_j) - AB|`` as float64 (rounded up)."""
        xp = _xp_of(self.delta_norm)
        e = self.E[:, None] + self.F[None, :]
        if self.pa is not None:
            e = e + self.pa[:, None]
        if self.pb is not None:
            e = e + self.pb[None, :]
        e = e.astype(xp.int32)
        b = xp.ldexp(self.delta_norm, e)
        return xp.nextafter(b, xp.inf)

    def info(self) -> dict:
        """A JSON-friendly summary: method, moduli count, bits, width, bound."""
        return {
            **plan_header(self.contract, self.shape, "crt"),
            "beta": self.beta,
            "n_moduli": self.n_moduli,
            "log2_M": round(self.log2_M, 3),
            "int8_gemms": self.int8_gemms,
            "kblock": self.kblock,
            "exact_inputs": bool(self.exact_inputs),
            "widened": self.widened,
        }


def plan_header(contract: Contract, shape, method: str) -> dict:
    """The fields every plan's ``info()`` starts with: contract, method, format, bits, bound
    kind, promise and shape (m, k, n)."""
    return {
        "contract": contract.name,
        "method": method,
        "format": contract.format,
        "bits": contract.bits,
        "bound_kind": contract.bound_kind,
        "promise": contract.promise(),
        "shape": [int(v) for v in shape],
    }


# -- the moduli arithmetic: exact Python integers over the table -----------------------
def moduli_product(n: int, table: tuple = MODULI) -> int:
    """Exact product M of the first ``n`` moduli of ``table`` (a Python int)."""
    if not 1 <= n <= len(table):
        raise ValueError(f"moduli count must be in [1, {len(table)}], got {n}")
    return prod(table[:n])


def moduli_exceeding(bound, table: tuple = MODULI) -> int | None:
    """Fewest moduli of ``table`` whose product M exceeds ``bound`` (int, Fraction or float),
    exactly; None if the whole table is too short."""
    acc = 1
    for i, m in enumerate(table):
        acc *= m
        if acc > bound:
            return i + 1
    return None


def moduli_for_bits(bits_needed: float) -> int | None:
    """Fewest moduli whose product exceeds ``2**bits_needed``; None if the table is too short."""
    return moduli_exceeding(2 ** bits_needed)


def _xp_of(x):
    from .._xp import array_namespace

    return array_namespace(x)


def cmax(beta: int, S, k: int, cpow: int = 1) -> Fraction:
    """Upper bound on max |A'B'| at width beta: 2**(2 beta) S + c 2**beta k + c**2 k, where S
    bounds sum_l |a~_il||b~_lj| (row/column-max-normalised) for every (i, j) and c/2 bounds
    the per-entry rounding error of the scaled integers (c = 1 for one component)."""
    return Fraction(S) * 2 ** (2 * beta) + Fraction(cpow * k) * Fraction(2) ** beta + cpow * cpow * k


def _two_cmax_den(beta: int, num: int, den: int, k: int, cpow: int = 1) -> int:
    """2 Cmax(beta) den as an exact integer, for S = num/den (:func:`cmax` without Fractions:
    the searches below compare it with M den, a few integer operations per beta)."""
    return 2 * ((num << (2 * beta)) + den * (cpow * k * (1 << beta) + cpow * cpow * k))


def _num_den(S) -> tuple[int, int]:
    """S (int, float or Fraction) as exact integers num/den."""
    f = S if isinstance(S, Fraction) else Fraction(S)
    return f.numerator, f.denominator


def max_beta_for(M: int, S, k: int, lo: int = 1, cpow: int = 1) -> int:
    """Largest beta >= lo with M > 2 Cmax(beta), searched up to max(lo, _BETA_CAP); 0 if
    beta = lo itself fails. (Cmax grows with beta, so the ok betas form a prefix.) Exact
    integer comparisons M den > 2 Cmax(beta) den (S = num/den)."""
    num, den = _num_den(S)
    Md = M * den

    def ok(beta):
        return Md > _two_cmax_den(beta, num, den, k, cpow)

    b = max(lo, 1)
    if not ok(b):
        return 0
    # galloping from lo (the answer is usually a few bits above it), then bisection
    step, hi = 1, None
    while b + step <= _BETA_CAP:
        if ok(b + step):
            b, step = b + step, 2 * step
        else:
            hi = b + step
            break
    if hi is None:  # every beta up to b is ok; beyond the cap counts as not ok
        hi = _BETA_CAP + 1
    while b + 1 < hi:  # invariant: ok(b), not ok(hi)
        mid = (b + hi) // 2
        if ok(mid):
            b = mid
        else:
            hi = mid
    return b


def min_moduli_for(beta: int, S, k: int, cpow: int = 1, table: tuple = MODULI) -> int | None:
    """Fewest moduli of ``table`` that recover A'B' exactly at width beta (M > 2 Cmax(beta));
    with 2 Cmax = X/den, an integer product exceeds it exactly when it exceeds floor(X/den)."""
    num, den = _num_den(S)
    return moduli_exceeding(_two_cmax_den(beta, num, den, k, cpow) // den, table)


def _cpow(sa: RowStats, sb: RowStats) -> int:
    """c: the per-entry scaling error of either operand is <= c/2 units of 2**-s_i.
    One component: 1; dd (2 components rounded separately): 2; binary128 pieces (3
    components, the lowest possibly rounded by ldexp, see precision/operands.py): 4."""
    return {1: 1, 2: 2, 3: 4}[max(sa.ncomp, sb.ncomp)]


def delta_norm(beta, sa: RowStats, sb: RowStats, k, xp):
    """Proven bound on the scaling error of every entry at width ``beta``, in units of
    ``2**(E_i+F_j)``: ``c 2**(-beta-1) (x_i nb_j + y_j (na_i + x_i c k 2**(-beta-1)))``
    (module docstring; c/2 bounds the per-entry rounding error, :func:`_cpow`)."""
    c = float(_cpow(sa, sb))
    x = (sa.width > beta).astype(xp.float64)
    y = (sb.width > beta).astype(xp.float64)
    h = 2.0 ** (-beta - 1)
    return c * h * (x[:, None] * sb.norm1[None, :] + y[None, :] * (sa.norm1 + x * (c * k * h))[:, None])


def _lb_upper_max(lb, ra, cb, xp):
    """max_ij (LB_ij + ra_i + cb_j) as an int64 scalar array, ra_i = sum_l qa_il, cb_j = sum_l qb_jl
    (the ``qsum`` of :class:`~ozgemm.precision.stats.RowStats`).

    qa = floor(|a~| 2**7) (so |a~| 2**7 < qa + 1), likewise qb, and LB = qa qb^T, hence
    sum_l |a~_il||b~_lj| < sum_l (qa_il + 1)(qb_jl + 1) 2**-14 = (LB_ij + ra_i + cb_j + k) 2**-14:
    an upper bound of every entry of |A~||B~| from the lower-bound GEMM already computed
    (exact integers; padding columns of q are zero and add nothing)."""
    rowmax = (lb.astype(xp.int64) + cb[..., None, :]).max(axis=-1)
    return (rowmax + ra).max(axis=-1)  # a scalar array; per product for stacked (P, m, n) inputs


def plan_scalars(sa: RowStats, sb: RowStats, lb, bits: int, k: int, u: float, xp, flag=None, lb_shift: int = 0,
                 widths=None):
    """The six integers the componentwise planner reads from the device, as one int64 array:
    [minimal width (:func:`required_beta`), max_i n1_i(A), max_j n1_j(B), max_i n2_i(A),
    max_j n2_j(B), max_ij (LB_ij + ra_i + cb_j) (:func:`_lb_upper_max`)]; 0 for an empty side;
    with ``flag`` (a (1,) int32 array, the NaN/Inf flag) a seventh entry: flag[0].
    ``lb_shift``: ``lb`` is in units of 2**-(14 + lb_shift) (the refined bound of
    :class:`Bound`; the sixth entry then means nothing). A backend may fuse them into one
    kernel (``Backend.plan_scalars``: the CUDA backend), or pass ``widths`` = (max_ij beta_ij,
    max_ij (LB_ij + ra_i + cb_j)) from its own pass over ``lb`` (m n > 0; the constants of
    that pass: :func:`width_constants`)."""
    m, n = lb.shape
    z = xp.zeros((1,), dtype=xp.int64)
    if widths is None:
        beta = required_beta(sa, sb, lb, bits, k, u, xp, lb_shift)
        ub = _lb_upper_max(lb, sa.qsum, sb.qsum, xp) if m and n else z
    else:
        beta, ub = xp.maximum(xp.asarray(widths[0], dtype=xp.int64), 1), xp.asarray(widths[1], dtype=xp.int64)
    parts = [xp.asarray(beta, dtype=xp.int64).reshape(1),
             sa.n1_int.max(keepdims=True) if m else z, sb.n1_int.max(keepdims=True) if n else z,
             sa.n2_int.max(keepdims=True) if m else z, sb.n2_int.max(keepdims=True) if n else z,
             xp.asarray(ub, dtype=xp.int64).reshape(1)]
    if flag is not None:
        parts.append(flag.astype(xp.int64).reshape(1))
    return xp.concatenate(parts)


def stack_plan_scalars(sa: RowStats, sb: RowStats, lb, bits: int, k: int, u: float, xp, widths=None):
    """:func:`plan_scalars` of every product of a stack at once: ``lb`` (P, m, n) the stacked
    bound GEMM, ``sa`` / ``sb`` the statistics of the P m rows of A and P n columns of B
    (products after one another), or of one product's m rows (n columns) where every product
    shares that operand. ``widths`` (P, 2): (max beta_ij, max (LB_ij + ra_i + cb_j)) per
    product from a backend's own pass over ``lb`` (as :func:`plan_scalars`' ``widths``).
    Returns int64 (P, 6), row p the six scalars of product p."""
    P, m, n = lb.shape
    Pa, Pb = sa.width.shape[0] // m, sb.width.shape[0] // n  # 1: the operand every product shares
    if widths is None:
        beta = required_beta_entries(sa.width.reshape(Pa, m, 1), sb.width.reshape(Pb, 1, n),
                                     sa.norm1.reshape(Pa, m, 1), sb.norm1.reshape(Pb, 1, n), lb, bits, k, u,
                                     xp).max(axis=(1, 2))
        ub = _lb_upper_max(lb, sa.qsum.reshape(Pa, m), sb.qsum.reshape(Pb, n), xp)
    else:
        beta, ub = widths[:, 0], widths[:, 1]
    maxima = [xp.broadcast_to(x.reshape(r, -1).max(axis=1), (P,))
              for x, r in ((sa.n1_int, Pa), (sb.n1_int, Pb), (sa.n2_int, Pa), (sb.n2_int, Pb))]
    return xp.stack([xp.maximum(beta, 1)] + maxima + [ub], axis=1).astype(xp.int64)


def _ceil_log2_ratio(z, r, xp):
    """ceil(log2(z / r)) for positive float64 arrays, exactly (frexp and one comparison)."""
    fz, ez = xp.frexp(z)
    fr, er = xp.frexp(r)
    return ez.astype(xp.int64) - er.astype(xp.int64) + (fz > fr).astype(xp.int64)


def required_beta(sa: RowStats, sb: RowStats, lb, bits: int, k: int, u: float, xp, lb_shift: int = 0):
    """Smallest integer width beta that proves the componentwise bound, per entry, then max.

    For entry (i, j) let G(beta) = x_i nb_j + y_j (na_i + x_i K), K = k 2**(1-bits) (valid
    because any beta that can hold with x_i = 1 is >= bits - 2, since LB_ij <= nb_j);
    delta_ij <= 2**(E_i+F_j-beta-1) G(beta) and the condition is
    2**(-beta-1) G(beta) (1+u)(1+2**-40) <= R_ij = 2**(-(bits-1)-14) LB_ij.
    G only loses terms as beta passes w_i (row exact) or v_j (column exact), so the smallest
    beta is found regime by regime in closed form with :func:`_ceil_log2_ratio` — exact
    integer/frexp arithmetic, identical on every backend, no search.

    Returns the int64 scalar array max_ij beta_ij (>= 1).
    """
    m, n = lb.shape
    if not m * n:
        return xp.asarray(1)
    best = None
    rows = max(1, (1 << 14) // max(n, 1))  # blocks of rows: the per-entry passes stay in cache
    for i0 in range(0, m, rows):
        i1 = min(m, i0 + rows)
        bij = required_beta_entries(sa.width[i0:i1, None], sb.width[None, :], sa.norm1[i0:i1, None],
                                    sb.norm1[None, :], lb[i0:i1], bits, k, u, xp, lb_shift).max()
        best = bij if best is None else xp.maximum(best, bij)
    return xp.maximum(best, 1)


def width_constants(bits: int, k: int, u: float, lb_shift: int = 0):
    """(scale, fac, K) of :func:`required_beta_entries`: R = lb 2**scale (the bound GEMM in units
    of 2**-(bits-1) |A||B|), the factor (1 + u)(1 + 2**-40) of its condition and
    K = k 2**(1-bits)."""
    return -(bits - 1) - 2 * LB_BITS - lb_shift, (1.0 + u) * (1.0 + 2.0 ** -40), k * 2.0 ** (1 - bits)


def required_beta_entries(w, v, na, nb, lb, bits: int, k: int, u: float, xp, lb_shift: int = 0):
    """The per-entry smallest widths of :func:`required_beta` (before the maximum), from the
    row widths ``w`` and 1-norm bounds ``na`` of A and the column ones ``v``, ``nb`` of B,
    broadcast against ``lb`` (an (m, n) or a stacked (P, m, n) bound GEMM, in units of
    2**-(14 + lb_shift))."""
    big = xp.int64(1 << 40)
    scale, fac, K = width_constants(bits, k, u, lb_shift)
    R = xp.ldexp(lb.astype(xp.float64), scale)
    pos = R > 0
    Rs = xp.where(pos, R, 1.0)

    def need(z, Rs, pos):
        # smallest beta with 2**(-beta-1) z fac <= R; z == 0 needs nothing; R == 0 needs G == 0
        zz = z * fac
        n = _ceil_log2_ratio(xp.where(zz > 0, zz, 1.0), Rs, xp) - 1
        n = xp.where(zz > 0, n, -big)
        return xp.where(pos | (zz == 0), n, big)

    t_d = need((nb + na) + K, Rs, pos)
    lo = xp.minimum(w, v)
    late = t_d >= lo  # entries whose width reaches a row's or column's exact regime (few, usually)
    if not bool(late.any()):
        return t_d
    shape = t_d.shape
    w_, v_, na_, nb_ = (xp.broadcast_to(x, shape)[late] for x in (w, v, na, nb))
    Rs_, pos_ = Rs[late], pos[late]
    t_b = xp.minimum(xp.maximum(w_, need(na_, Rs_, pos_)), v_)  # regime w <= beta < v
    t_c = xp.minimum(xp.maximum(v_, need(nb_, Rs_, pos_)), w_)  # regime v <= beta < w
    out = t_d.copy()
    out[late] = xp.where(w_ < v_, t_b, xp.where(v_ < w_, t_c, w_))
    return out


class RefineBound(Exception):
    """A speculative plan whose inputs need the refined lower bound (:class:`Bound`): the
    caller plans again without speculating."""


class ModuliShortfall(ContractError):
    """A contract's fixed moduli count is too small for these inputs (a larger count, or
    another method, may prove the bound)."""


class WidthShortfall(ContractError):
    """One product plan cannot prove a componentwise bound for these inputs: the width they
    need is beyond the contract's :func:`width_cap` or the moduli table (or the slices one
    Ozaki-I plan accumulates). :mod:`ozgemm.precision.bands` then splits the operands into
    exponent bands; the message is what a user sees where that is not allowed."""


def width_cap(contract: Contract) -> int:
    """The largest integer width a componentwise contract accepts: ``p + exponent_range`` of
    its format's precision p (not of ``bits``: the minimal width never grows as the promise
    weakens, so a contract with fewer bits never refuses what the same format with more bits
    keeps), and at most 1000."""
    return min(contract.fmt.p + contract.exponent_range, _BETA_CAP)


def check_width(contract: Contract, host, sa: RowStats, sb: RowStats, k: int, cpow: int) -> None:
    """Refuse, with a ContractError naming the shortfall and the fix, when the minimal width
    proving the componentwise bound (``host[0]``, :func:`required_beta`) exceeds the
    contract's :func:`width_cap` — the same rule for every method."""
    m, n = sa.E.shape[0], sb.E.shape[0]
    where = f"contract {contract.name!r} ({contract.source})"
    beta_max = width_cap(contract)
    beta_min = int(host[0])
    if beta_min > beta_max:
        S = s_bound(host, k)
        need = int(max(int(sa.width.max()) if m else 0, int(sb.width.max()) if n else 0))
        cap = max_beta_for(moduli_product(len(MODULI)), S, k, cpow=cpow)
        if beta_min <= cap:
            fix = f"exponent_range >= {beta_min - contract.fmt.p} gives one plan"
        else:
            fix = f"width {beta_min} exceeds the {cap} bits the {len(MODULI)}-moduli table holds at k = {k}"
        raise WidthShortfall(
            f"{where}: one plan cannot prove the componentwise bound 2^-{contract.bits - 1}|A||B| "
            f"within exponent_range={contract.exponent_range} (integer width <= {beta_max} bits; "
            f"these inputs need {beta_min}: their rows/columns span up to {need} bits, exponent "
            f"spread plus precision, and small entries meet large ones; {fix}). Fix: a contract whose "
            "moduli (slices) follow the data (\"auto\") splits such products into exponent bands; or use a "
            "normwise contract (e.g. 'fp64-fast').")


def _log2_int(x: int) -> float:
    """log2 of a positive integer of any size (a float conversion overflows beyond 2**1024)."""
    x = int(x)
    sh = max(0, x.bit_length() - 60)
    return float(np.log2(float(x >> sh))) + sh


def _componentwise_choice(contract: Contract, host, sa: RowStats, sb: RowStats, k: int, cpow: int,
                          table: tuple = MODULI):
    """(moduli count, width, report) of a componentwise contract from the planner's scalars
    ``host`` = [minimal width, max n1 A, max n1 B, max n2 A, max n2 B, max (LB + ra + cb)]
    (:func:`plan_scalars`): the fewest moduli of ``table`` with M > 2 Cmax(minimal width), then
    the widest beta they allow. Raises ContractError as :func:`make_plan` documents."""
    where = f"contract {contract.name!r} ({contract.source})"
    check_width(contract, host, sa, sb, k, cpow)
    beta_min = int(host[0])
    S = s_bound(host, k)
    nmod = min_moduli_for(beta_min, S, k, cpow, table)
    if nmod is None:
        raise WidthShortfall(
            f"{where}: one plan cannot prove a componentwise bound for these inputs: width {beta_min} "
            f"bits needs a moduli product above 2^{_log2_int(2 * cmax(beta_min, S, k, cpow)):.1f}, "
            f"beyond the table's {len(table)} moduli (2^{np.log2(np.array(table, float)).sum():.1f}). "
            "Fix: a contract whose moduli (slices) follow the data (\"auto\") splits such products into "
            "exponent bands; or reduce k, or use a normwise contract (e.g. 'fp64-fast').")
    if contract.moduli == "auto":
        widened = f"auto: {nmod} moduli prove the bound (minimal width {beta_min})"
    else:
        if nmod > contract.moduli:
            raise ModuliShortfall(
                f"{where}: these inputs need {nmod} moduli to prove the componentwise bound; the "
                f"contract fixes {contract.moduli}. Fix: moduli = {nmod} or \"auto\".")
        nmod = contract.moduli
        widened = f"fixed: {nmod} moduli"
    return nmod, max_beta_for(moduli_product(nmod, table), S, k, beta_min, cpow), widened


@functools.lru_cache(maxsize=256)
def normwise_thresholds(contract: Contract, k: int):
    """The normwise contract's width rule as exact integer thresholds: an int64 array
    (SPEC_BETA_HI + 1,) whose entry beta is the largest N for which width beta proves the
    bound on one-component operands with row and column 1-norm bounds summing to
    N 2**-30 (N = max_i n1_int(A) + max_j n1_int(B), :mod:`~ozgemm.precision.stats`), or -1.

    Width beta proves |C - AB|_ij <= 2**-(bits-1) k max|A_i,:| max|B_:,j| when

        u_f k + (1 + u_f) 2**(1-beta) (na + nb + k 2**(-beta-1)) <= 2**-(bits-1) k,

    na, nb the norm bounds: delta_ij <= 2**(E_i+F_j-beta-1) (nb_j + na_i + k 2**(-beta-1))
    (module docstring), 2**E_i <= 2 max_l |a_il|, 2**F_j <= 2 max_l |b_lj|, and
    |C - AB| <= u_f |AB| + (1 + u_f) delta with |AB|_ij <= k max|A_i,:| max|B_:,j|. With
    u_f = 1/U (U = 2**p) it reads (U + 1)(N 2**(beta+1) + k 2**30) <= k (2**(p+1-bits) - 1)
    2**30 2**(2 beta), exact in integers; the thresholds grow with beta, and na = nb = k
    (any data) gives beta = bits + 3. Raises ContractError where the promise is below the
    format's own rounding (bits > p)."""
    u = Fraction(contract.fmt.u)
    U, p, bits = u.denominator, contract.fmt.p, contract.bits
    if u.numerator != 1 or U != 1 << p or bits > p:
        raise ContractError(f"contract {contract.name!r} ({contract.source}): a normwise bound "
                            f"2^-{bits - 1} k max|A| max|B| needs bits <= {p}, the format's precision")
    head = k * ((1 << (p + 1 - bits)) - 1) << NORM_BITS
    T = np.empty((SPEC_BETA_HI + 1,), dtype=np.int64)
    for beta in range(SPEC_BETA_HI + 1):
        R = (head << (2 * beta)) - (U + 1) * (k << NORM_BITS)
        T[beta] = -1 if R < 0 else min(R // ((U + 1) << (beta + 1)), _SPEC_CLAMP)
    T.setflags(write=False)
    return T


def normwise_width(contract: Contract, N, k: int):
    """The smallest width beta >= 1 proving a normwise contract for norm bounds summing to
    N 2**-30 (:func:`normwise_thresholds`; at most bits + 3): an int, or an int64 array for
    an array ``N`` (the products of a stack)."""
    if k == 0:
        return np.ones_like(N) if np.ndim(N) else 1
    w = _width_from_table(normwise_thresholds(contract, k), np.asarray(N, dtype=np.int64), np)
    return w if np.ndim(N) else int(w)


def _width_from_table(table, N, xp):
    """max(1, #{beta : table[beta] < N}) for every entry of ``N`` (``table`` grows with beta,
    so this is the first beta >= 1 whose threshold reaches N)."""
    return xp.maximum((table < N[..., None]).sum(axis=-1), 1).astype(xp.int64)


def normwise_scalars(sa: RowStats, sb: RowStats, table, k: int, xp, flag=None):
    """A normwise plan's data in the layout of :func:`plan_scalars`, as an int64 array on the
    backend (no host read): (6,) or, with ``flag``, (7,) = [minimal width, max n1_int(A),
    max n1_int(B), max n2_int(A), max n2_int(B), k 2**14 - k (, NaN/Inf flag)]. The width is
    :func:`normwise_width` of the 1-norm maxima, taken from ``table`` (:func:`normwise_thresholds`
    of the contract and k, as an array of ``xp``); the last entry makes S's third source S <= k
    (no bound GEMM), so :func:`s_bound` and the device's speculative width
    (:func:`speculative_thresholds`) read it as they read a componentwise plan's.
    One-component operands with m n k > 0."""
    mx = xp.stack([sa.n1_int.max(), sb.n1_int.max(), sa.n2_int.max(), sb.n2_int.max()]).astype(xp.int64)
    width = _width_from_table(table, mx[0] + mx[1], xp)
    parts = [width.reshape(1), mx, xp.full((1,), (k << (2 * LB_BITS)) - k, dtype=xp.int64)]
    if flag is not None:
        parts.append(flag.reshape(1).astype(xp.int64))
    return xp.concatenate(parts)


def _normwise_choice(contract: Contract, host, k: int, cpow: int, table: tuple = MODULI):
    """(moduli count, width, report) of a normwise contract. ``host``: one-component operands,
    the host values of :func:`normwise_scalars` (the row and column norm maxima give S, the
    smaller of the 1-norm and Cauchy-Schwarz bounds as :func:`s_bound`, and the minimal
    width, :func:`normwise_width`); None for components (dd/binary128 operands: S = k and
    width bits + 3 + log2 c, module docstring) and empty products. Moduli "auto" takes the
    fewest moduli of ``table`` with M > 2 Cmax(width), a fixed count checks that its product holds that
    width; then the widest beta the moduli allow. Raises ModuliShortfall (a fixed count too
    small) and WidthShortfall (beyond the table)."""
    where = f"contract {contract.name!r} ({contract.source})"
    S = Fraction(k)
    floor_ = contract.bits + 3 + (cpow.bit_length() - 1)  # components: c/2-unit scaling errors
    how = "k max|A| max|B|"
    if host is not None:
        floor_, S = int(host[0]), s_bound(host, k)
        how = "the row and column norms"
    if contract.moduli == "auto":
        nmod = min_moduli_for(floor_, S, k, cpow, table)
        if nmod is None:
            raise WidthShortfall(
                f"{where}: width {floor_} bits at k = {k} needs a moduli product beyond the table's "
                f"{len(table)} moduli. Fix: split k.")
        widened = f"auto: {nmod} moduli prove the normwise bound (minimal width {floor_} from {how})"
    else:
        nmod = contract.moduli  # within the table (Contract checks it)
        widened = f"fixed: {nmod} moduli"
    beta = max_beta_for(moduli_product(nmod, table), S, k, cpow=cpow)
    if beta < floor_:
        need = min_moduli_for(floor_, S, k, cpow, table)
        raise ModuliShortfall(
            f"{where}: with {nmod} moduli and k = {k} the integer width is {beta} bits, below the "
            f"{floor_} the normwise bound needs. Fix: moduli = {need} (or split k).")
    return nmod, beta, widened


def ceil_sqrt(x: int) -> int:
    """ceil(sqrt(x)) of a non-negative Python integer, exactly (the Cauchy-Schwarz source of
    :func:`s_bound`)."""
    c = math.isqrt(x)
    return c + (c * c < x)


def s_bound(host, k: int) -> Fraction:
    """S >= sum_l |a~_il||b~_lj| for every (i, j) from the planner's scalars: the smallest of
    min(max 1-norm), the Cauchy-Schwarz bound and the bound GEMM's own upper bound
    max_ij (LB_ij + sum_l qa_il + sum_l qb_lj + k) 2**-14 (:func:`s_sources`)."""
    n1a, n1b, n2a, n2b, ub = (int(v) for v in host[1:6])
    return s_sources(n1a, n1b, n2a, n2b, ub + k)


def s_sources(n1a: int, n1b: int, n2a: int, n2b: int, third: int) -> Fraction:
    """The smallest of S's three sources: the 1-norm maxima n1a, n1b and the Cauchy-Schwarz
    bound ceil(sqrt(n2a n2b)), both in units of 2**-30, and ``third`` in units of 2**-14 (the
    bound GEMM's upper bound, or k 2**14 where there is none)."""
    return min(Fraction(min(n1a, n1b), 2**NORM_BITS), Fraction(ceil_sqrt(n2a * n2b), 2**NORM_BITS),
               Fraction(third, 2 ** (2 * LB_BITS)))


#: table rows 0..SPEC_BETA_HI of speculative_thresholds (widths beyond: no speculation)
SPEC_BETA_HI = 160
_SPEC_CLAMP = 1 << 62
_GUESSES: OrderedDict = OrderedDict()  # (contract, shapes, dtypes) -> (moduli, width) of the last plan
_GUESSES_MAX = 256
_GUESSES_LOCK = threading.Lock()


def guess_key(contract: Contract, a, b):
    """The speculation table's key of a product: the contract (every field), shapes and dtypes."""
    return (contract, a.shape, b.shape, a.dtype, b.dtype)


def speculation_guess(contract: Contract, key):
    """Moduli count to speculate on for a CRT plan: the contract's fixed count, or the
    count the last plan of the same contract, shapes and dtypes needed; None: no guess, and
    also when that plan's width lay beyond the device's table or its lower bound was refined
    (the device could not confirm it, every call would run twice)."""
    with _GUESSES_LOCK:
        last = _GUESSES.get(key)
    if last is not None and (last[1] >= SPEC_BETA_HI or not last[2]):
        return None
    if contract.moduli != "auto":
        return int(contract.moduli)
    return None if last is None else last[0]


def guess_for(key):
    """(moduli count, width) of the last plan recorded for ``key``, or None."""
    with _GUESSES_LOCK:
        last = _GUESSES.get(key)
    return None if last is None else last[:2]


def set_guess(key, nmod: int | None, beta: int = 0):
    """Record (moduli count, width) for ``key`` as if the last plan had needed it (None: forget)."""
    if nmod is None:
        with _GUESSES_LOCK:
            _GUESSES.pop(key, None)
    else:
        _remember(key, nmod, beta)


def _remember(key, nmod: int, beta: int, speculable: bool = True):
    with _GUESSES_LOCK:
        _GUESSES[key] = (int(nmod), int(beta), bool(speculable))
        _GUESSES.move_to_end(key)
        while len(_GUESSES) > _GUESSES_MAX:
            _GUESSES.popitem(last=False)


def forget_guess(plan: Plan):
    """Drop the guess a speculative plan was made from (its product failed before confirmation)."""
    with _GUESSES_LOCK:
        _GUESSES.pop(plan.key, None)


@functools.lru_cache(maxsize=1024)
def speculative_thresholds(nmod: int, k: int, cpow: int = 1):
    """Exact integer thresholds of ``nmod`` moduli for widths b = 0..SPEC_BETA_HI: an int64
    array (hi + 1, 3) with M > 2 Cmax(b) (:func:`cmax`, S = num/den) exactly when
    num <= L[b][s] for one of the three sources s of :func:`s_bound` (den 2**30, 2**30, 2**14;
    num = min(n1a, n1b), ceil(sqrt(n2a n2b)), ub + k). From M den > 2 (num 2**(2b) + den c(b)),
    c(b) = cpow k 2**b + cpow**2 k: num 2**(2b+1) < X = M den - 2 den c(b), so L = (X - 1) //
    2**(2b+1), or -1 when X <= 0; clamped to 2**62 (every num is smaller). The device
    (``plan_shifts``, stats.cu) takes the largest valid b >= beta_min from it."""
    M = moduli_product(nmod)
    L = np.empty((SPEC_BETA_HI + 1, 3), dtype=np.int64)
    for b in range(SPEC_BETA_HI + 1):
        c = cpow * k * (1 << b) + cpow * cpow * k
        for col, den in enumerate((1 << NORM_BITS, 1 << NORM_BITS, 1 << (2 * LB_BITS))):
            X = M * den - 2 * den * c
            L[b, col] = -1 if X <= 0 else min((X - 1) >> (2 * b + 1), _SPEC_CLAMP)
    L.setflags(write=False)
    return L


def check_cost(plan) -> None:
    """Raise ContractError when ``plan`` (CRT or Ozaki-I, not speculative) needs more INT8
    GEMMs than its contract's ``max_gemms``, naming the count and what it is made of."""
    cap = plan.contract.max_gemms
    if cap is None or plan.int8_gemms <= cap:
        return
    c = plan.contract
    bound = c.bound_kind == "componentwise"
    if plan.method == "ozaki":
        what = f"{plan.int8_gemms - bound} slice products of {plan.slices} slices"
    else:
        what = f"{plan.n_moduli} modul{'us' if plan.n_moduli == 1 else 'i'}"
    data = bound and (plan.method == "ozaki" or c.moduli == "auto")  # the count follows the data
    raise ContractError(
        f"contract {c.name!r} ({c.source}): these inputs need {plan.int8_gemms} INT8 GEMMs of "
        f"{plan.shape[0]}x{plan.shape[1]}x{plan.shape[2]} ({what}{' and the bound GEMM' if bound else ''}) to "
        f"prove the bound; the contract caps them at max_gemms = {cap}. Fix: raise max_gemms"
        + (", or narrow the exponent spread of the rows/columns" if data else "") + ".")


def confirm_plan(plan: Plan, backend):
    """Settle a speculative plan (``plan.pending``, made by :func:`make_plan` with
    ``speculate=True``) after its product was queued: one host read of the planner's scalars
    and of the width the device used. Returns ``(ok, plan)``: the plan the host derives from
    them (the non-speculative plan's moduli count and width, exactly), and whether it is the
    one that ran (else the caller runs it again). Raises ContractError or NonFiniteInputs as
    :func:`make_plan` would have, and :class:`RefineBound` where the plan made without a
    guess refines its lower bound."""
    host = plan.pending.read()  # [6 scalars (, NaN/Inf flag), width used]
    if len(host) == 8 and host[6]:
        raise NonFiniteInputs()
    m_, k_, n_ = plan.shape
    sa, sb = plan.stats
    if plan.contract.bound_kind != "componentwise":  # the norm maxima (normwise_scalars)
        nmod, beta, widened = _normwise_choice(plan.contract, host[:6], k_, 1)
    else:
        if needs_refinement(host[:6], plan.contract.bits, m_ * n_ * k_):  # the unguessed plan refines its bound
            forget_guess(plan)
            raise RefineBound()
        nmod, beta, widened = _componentwise_choice(plan.contract, host[:6], sa, sb, k_, 1)
    _remember(plan.key, nmod, beta)
    ok = nmod == plan.n_moduli and beta == int(host[-1])
    if ok:
        return ok, plan.evolve(beta=int(beta), widened=widened, pending=None)
    s, t = backend.shifts(beta, sa, sb)
    return ok, plan.evolve(beta=int(beta), widened=widened, pending=None, moduli=MODULI[:nmod], s=s, t=t)


#: bits beyond the promise (``bits``) from which the minimal width is worth a second window
#: of the lower bound (:class:`Bound`): the refinement costs one INT8 GEMM and can save
#: several moduli; below this gap the 7-bit bound is close to exact (design.md)
REFINE_GAP = 12
#: products of at least this many multiply-adds (m n k) refine: below it the refinement's
#: fixed cost (a second read of the scalars, two passes, a GEMM) exceeds what the moduli it
#: saves cost (H200: break-even at 4096^3, design.md)
REFINE_MIN_WORK = 2**37


def second_window(x, E, xp):
    """q1 = floor(|x| 2**(14 - E_i)) where that is below 2**7, else 0, as int8 (r, k): the
    magnitudes of the entries below 2**-7 of their row's 2**E_i (those the 7-bit q of
    :mod:`ozgemm.precision.stats` leaves at 0), in units of 2**-14 (exact: a power-of-two
    scaling, and any rounding of a tiny result stays below 1)."""
    from .._xp import as_float64, ignore_fp_errors

    with ignore_fp_errors(xp):
        y = xp.floor(xp.ldexp(xp.abs(as_float64(x)), (2 * LB_BITS - E[:, None]).astype(xp.int32)))
    return xp.where(y < (1 << LB_BITS), y, 0.0).astype(xp.int8)


@dataclass(frozen=True)
class Bound:
    """The componentwise planner's data-dependent part, shared by both methods: the
    statistics, the bound GEMM ``lb`` = qa qb^T (an exact lower bound of |A~||B~| in units of
    2**-14) and the planner's scalars (:func:`plan_scalars`) as a backend array.

    Refinement (``refine`` = (a (m, k), b^T (n, k), backend, contract): one-component
    operands). q = floor(|a~| 2**7) is 0 for every entry below 2**-7 of its row's maximum;
    where no term of an entry has both factors above that, LB_ij = 0 and the entry forces its
    row and column to be scaled exactly (beta = their width). When the minimal width read
    from the scalars is at least ``bits + REFINE_GAP`` in a product of at least
    ``REFINE_MIN_WORK`` multiply-adds (:func:`needs_refinement`), :meth:`host` computes the second
    window q1 (:func:`second_window`) and LB2 = 2**14 LB + q1a q1b^T (units 2**-28, one more
    exact INT8 GEMM): a lower bound too, since for each term either both factors are in the
    first window (q0a q0b 2**-14 <= |a~||b~|), or both in the second (q1a q1b 2**-28 <=
    |a~||b~|), or the term adds 0 to both; and the minimal width from LB2 replaces host[0]. The
    decision reads only exact scalars, so every engine makes it alike."""

    stats: tuple
    lb: object
    scalars: object
    refine: tuple = field(default=None, repr=False)
    cache: dict = field(default_factory=dict, repr=False, compare=False)
    #: a complex product's form of the bound (:func:`complex_bound_operands`): "half" (``lb``
    #: (m, n), a lower bound of both halves of the embedding's |A||B|), "full", "a_real",
    #: "b_real" (``lb`` the embedding's own (m, 2n) bound); None for a real product
    embedding: str | None = None

    def host(self):
        """The planner's scalars on the host (the one device->host read of a componentwise
        plan; a refined minimal width in host[0] where :attr:`refined`)."""
        if "host" not in self.cache:
            h = to_numpy(self.scalars)
            self.cache["refined"] = False
            if self.refine is not None:
                a, bt, backend, contract = self.refine
                m, k = a.shape
                n = bt.shape[1] if self.embedding else bt.shape[0]  # (a complex product's bt: (k/2, n))
                if needs_refinement(h, contract.bits, m * n * k):
                    h = h.copy()
                    h[0] = min(int(h[0]), self._refined_width(a, bt, backend, contract))
            self.cache["host"] = h
        return self.cache["host"]

    def _refined_width(self, a, bt, backend, contract) -> int:
        """The minimal width from LB2 (class docstring); keeps LB2 for :meth:`finest`."""
        xp = backend.xp
        sa, sb = self.stats
        k = a.shape[1]
        if self.embedding:  # a: interleaved parts (m, 2k'); bt: [Br | Bi] (k', 2n')
            from .._xp import as_float64

            n = bt.shape[1] // 2
            sbh = take_rows(sb, slice(n))
            ax, bx = xp.abs(as_float64(a)), xp.abs(as_float64(bt))
            parts = ax[:, 0::2], ax[:, 1::2], bx[:, :n].T, bx[:, n:].T
            if self.embedding == "half":  # the second window of U, u and v, V themselves
                sb = sbh
                a, bt = complex_pairs(*parts, xp)
                q1 = backend.gemm_exact(backend.second_window(a, sa.E), backend.second_window(bt, sb.E))
            else:  # the second window of each part, then the same GEMM as the first window's
                w = [backend.second_window(x, e) for x, e in zip(parts, (sa.E, sa.E, sbh.E, sbh.E))]
                left, right, join = complex_bound_operands(self.embedding, *w, xp)
                q1 = join(backend.gemm_exact(left, right))
        else:
            q1 = backend.gemm_exact(backend.second_window(a, sa.E), backend.second_window(bt, sb.E))
        lb2 = self.lb.astype(xp.int64) * (1 << (2 * LB_BITS)) + q1
        self.cache.update(refined=True, lb2=lb2)
        return int(to_numpy(backend.plan_scalars(sa, sb, lb2, contract.bits, k, contract.fmt.u,
                                                 lb_shift=2 * LB_BITS))[0])

    @property
    def refined(self) -> bool:
        """Whether :meth:`host` refined the lower bound (one more INT8 GEMM)."""
        self.host()
        return self.cache["refined"]

    @property
    def gemms(self) -> int:
        """The INT8 GEMMs of this bound: 1, or 2 where :attr:`refined`."""
        return 1 + self.refined

    @property
    def note(self) -> str:
        """What a plan's report adds for this bound ("" unless :attr:`refined`)."""
        return "; lower bound refined by a second 7-bit window (one more INT8 GEMM)" if self.refined else ""

    def finest(self):
        """(lower bound, lb_shift): the refined LB2 (units 2**-28, shift 14) where
        :attr:`refined`, else the 7-bit ``lb`` (units 2**-14, shift 0); (m, n) for a full
        bound (an embedding's half form is (m, n / 2))."""
        return (self.cache["lb2"], 2 * LB_BITS) if self.refined else (self.lb, 0)

    def minimal_width(self, contract: Contract, k: int) -> int:
        """The smallest width proving the contract's componentwise bound (:func:`required_beta`)
        for one-component operands, refused with a ContractError beyond
        :func:`width_cap` (:func:`check_width`)."""
        host = self.host()
        sa, sb = self.stats
        check_width(contract, host, sa, sb, k, 1)
        return int(host[0])

    def delta_norm(self, beta: int, k: int):
        """:func:`delta_norm` of these statistics at width ``beta``."""
        sa, sb = self.stats
        return delta_norm(beta, sa, sb, k, _xp_of(sa.width))


def statistics(a, b, backend, nonfinite_flag=None, known=(None, None), embedding: str | None = None):
    """Row statistics of ``a`` (m, k) and column statistics of ``b`` (k, n) (or (C, ., .)
    components) on the backend: (sa, sb). ``nonfinite_flag``: set where the backend's
    statistics see NaN/Inf (backends with ``flags_nonfinite``). ``known``: statistics already
    computed for these very operands (a prepared operand, :func:`ozgemm.prepare`), or None.

    ``embedding``: ``a`` (m, 2k) and ``b`` (k, 2n) C-contiguous are A's rows with the parts
    interleaved and B's top block row [Br | Bi] of a complex product
    (:func:`~ozgemm.precision.operands.complex_operands`); sa are the statistics of the real
    embedding's rows (the same values as ``a``'s), sb those of its 2n columns, computed once
    from the columns of the (2k, n) view of ``b`` (rows Br_0, Bi_0, Br_1, ...: column j holds the
    magnitudes of the embedding's columns j and n + j) and taken twice
    (:func:`~ozgemm.precision.stats.twice`; q of the first n only). Both q interleave the parts
    (entry 2l real, 2l + 1 imaginary)."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    backend.check_planning_memory(m, k, n)
    flag = nonfinite_flag if backend.flags_nonfinite else None
    sa = known[0] if known[0] is not None else backend.row_stats(a, nonfinite=flag)
    if embedding:
        return sa, twice(backend.row_stats(b.reshape(k, n // 2).T, nonfinite=flag))
    sb = known[1] if known[1] is not None else backend.row_stats(b.T if b.ndim == 2 else b.transpose(0, 2, 1),
                                                                  nonfinite=flag)
    return sa, sb


def needs_refinement(host, bits: int, work: int) -> bool:
    """Whether a product of ``work`` = m n k multiply-adds whose minimal width is ``host[0]``
    (no NaN/Inf flagged) takes the second lower-bound window (:class:`Bound`): a decision from
    the shape and exact scalars only, the same on every engine."""
    return (work >= REFINE_MIN_WORK and int(host[0]) >= bits + REFINE_GAP
            and not (len(host) == 7 and host[6]))


def componentwise_bound(contract: Contract, sa: RowStats, sb: RowStats, k: int, backend, nonfinite_flag=None,
                        operands=None, embedding: str | None = None) -> Bound:
    """The bound GEMM and the planner's scalars for a componentwise contract (no host read).
    ``operands`` = (a (m, k), b (k, n)) of one component: the bound may be refined
    (:class:`Bound`) when its scalars are read. ``embedding``: a complex product's statistics
    and operands as :func:`statistics` takes them, and the form of its lower bound
    (:func:`complex_bound_operands`: "half", chosen between "half" and "full" by
    :func:`_half_or_full`; "a_real", "b_real")."""
    cpow = _cpow(sa, sb)
    lg = cpow.bit_length() - 1
    sbh = sb
    if embedding:  # the statistics of B's column pairs: the first n of the embedding's 2n columns
        pairs = take_rows(sb, slice(sb.E.shape[0] // 2))
    if embedding == "half":
        embedding = _half_or_full(contract, sa, sb, pairs, k, cpow, backend)
    if embedding:
        # the bound from the interleaved 7-bit magnitudes of A's rows and of B's column pairs
        lb = backend.gemm_complex_bound(sa.q, pairs.q, k // 2, embedding)
        if embedding == "half":  # one (m, n) bound of both parts: the first n columns' statistics
            sbh = pairs
    else:
        lb = backend.gemm_exact(sa.q, sb.q)  # exact: 127^2 k < 2^53
    # c/2-unit scaling errors (cpow = 2**lg): the same closed form with bits + lg and
    # k c**2 (R/c and K c, both exact powers of two; see _cpow and required_beta)
    dev = backend.plan_scalars(sa, sbh, lb, contract.bits + lg, k * cpow * cpow, contract.fmt.u, flag=nonfinite_flag)
    if embedding == "half":
        # the half form's LB + ra + cb + k bounds the pairing it sums, not the larger one: S
        # takes the 1-norm and Cauchy-Schwarz sources (k 2**14: no third source)
        dev[5] = (k << (2 * LB_BITS)) - k
    refine = None
    if operands is not None and cpow == 1 and operands[0].ndim == 2:
        refine = (operands[0], operands[1] if embedding else operands[1].T, backend, contract)
    return Bound(stats=(sa, sb), lb=lb, scalars=dev, refine=refine, embedding=embedding)


def complex_pairs(ar, ai, br, bi, xp):
    """The half-form operands of a complex product's lower bound: from the magnitudes of the
    real and imaginary parts ``ar``, ``ai`` (m, k) of A's rows and ``br``, ``bi`` (n, k) of B's
    columns (in the same units per row or column, any non-negative dtype, any layout) returns
    [U | u] (m, 2k) and [v | V] (n, 2k) with U = max(ar, ai), u = min, V = max(br, bi), v = min
    entrywise, so that ``[U | u] @ [v | V]^T`` = sum_l (U v + u V).

    Why it bounds both parts: per term l the real part's |Ar||Br| + |Ai||Bi| and the imaginary
    part's |Ar||Bi| + |Ai||Br| are the two pairings of {U, u} with {V, v}, and U v + u V is the
    smaller one (rearrangement inequality: (U - u)(V - v) >= 0). A floor quantisation with one
    scale per row (column) commutes with max and min, so on 7-bit q the sum is an exact lower
    bound of the integer bound GEMM of both halves of the embedding, from one GEMM of
    m x 2k x n instead of m x 2k x 2n."""
    k = ar.shape[1]
    left = xp.empty((ar.shape[0], 2 * k), dtype=ar.dtype)
    right = xp.empty((br.shape[0], 2 * k), dtype=br.dtype)
    xp.maximum(ar, ai, out=left[:, :k])
    xp.minimum(ar, ai, out=left[:, k:])
    xp.minimum(br, bi, out=right[:, :k])
    xp.maximum(br, bi, out=right[:, k:])
    return left, right


#: rows of A on which both bounds of two complex operands are computed to choose between them
#: (:func:`_half_or_full`); products of at most this many rows take the full bound
COMPLEX_SAMPLE_ROWS = 64
#: the half form is kept where its minimal width on the sampled rows exceeds the full bound's
#: by at most this many bits (design.md, "Complex products")
COMPLEX_HALF_SLACK = 2
#: embeddings of fewer multiply-adds (m 2k 2n) take the full bound without the sampled choice,
#: whose host read and launches cost more than the half form can save there (H200: ~1 ms at
#: 4096), and which keeps the plans of inputs that defeat the half form (entries each purely
#: real or purely imaginary)
COMPLEX_SAMPLE_MIN_WORK = 2**40


def _half_or_full(contract: Contract, sa: RowStats, sb: RowStats, pairs: RowStats, k: int, cpow: int,
                  backend) -> str:
    """The lower bound of two complex operands: "half" (one GEMM of m x 2k x n, weaker) or
    "full" (the embedding's own, m x 2k x 2n; ``pairs``: the statistics of the first n of
    ``sb``'s 2n columns), from the minimal widths both give on
    :data:`COMPLEX_SAMPLE_ROWS` evenly spaced rows of A (one host read of two exact integers:
    the same choice on every engine). The half form saves 2 mkn multiply-adds of the bound
    and can cost moduli (3 mkn each): it is kept where its sampled width is within
    :data:`COMPLEX_HALF_SLACK` bits of the full one's. Products of at most
    :data:`COMPLEX_SAMPLE_ROWS` rows and embeddings below :data:`COMPLEX_SAMPLE_MIN_WORK`
    multiply-adds take the full bound (no sampling)."""
    xp = backend.xp
    m = sa.E.shape[0]
    if m <= COMPLEX_SAMPLE_ROWS:
        return "full"
    if m * k * sb.E.shape[0] < COMPLEX_SAMPLE_MIN_WORK:
        return "full"
    lg = cpow.bit_length() - 1
    ss = take_rows(sa, xp.asarray((np.arange(COMPLEX_SAMPLE_ROWS) * m) // COMPLEX_SAMPLE_ROWS))
    widths = [backend.plan_scalars(ss, st, backend.gemm_complex_bound(ss.q, pairs.q, k // 2, form),
                                   contract.bits + lg, k * cpow * cpow, contract.fmt.u)[:1]
              for form, st in (("full", sb), ("half", pairs))]
    full, half = (int(v) for v in to_numpy(xp.concatenate(widths)))
    return "half" if half - full <= COMPLEX_HALF_SLACK else "full"


def complex_bound_form(a, b) -> str:
    """The form of the lower bound of the complex product ``a @ b`` (one operand at least
    complex): "half" where both are complex, else the real operand's form."""
    return "a_real" if a.dtype.kind != "c" else "b_real" if b.dtype.kind != "c" else "half"


def complex_bound_operands(form, ar, ai, br, bi, xp):
    """(left, right, join) of a complex product's lower bound: ``join(left @ right^T)`` is the
    bound, from the magnitudes of the parts ``ar``, ``ai`` (m, k) of A's rows and ``br``,
    ``bi`` (n, k) of B's columns (same units per row or column).

    * "half" (both operands complex): :func:`complex_pairs`, one (m, n) lower bound of both
      parts, m x 2k x n;
    * "full" (both complex): the embedding's own (m, 2n) bound, [ar | ai] against
      [[br | bi]; [bi | br]], m x 2k x 2n;
    * "a_real" (ai = 0): ar against [br; bi], the embedding's own (m, 2n) bound
      [ar br^T | ar bi^T], m x k x 2n;
    * "b_real" (bi = 0): [ar; ai] against br, joined into the embedding's own bound
      [ar br^T | ai br^T], 2m x k x n.

    The two real-operand forms are exact for the embedding (its other terms are zero) at the
    half form's cost."""
    if form == "half":
        left, right = complex_pairs(ar, ai, br, bi, xp)
        return left, right, lambda g: g
    if form == "full":
        return (xp.concatenate([ar, ai], axis=1),
                xp.concatenate([xp.concatenate([br, bi], axis=1), xp.concatenate([bi, br], axis=1)]), lambda g: g)
    m = ar.shape[0]
    if form == "a_real":
        return ar, xp.concatenate([br, bi]), lambda g: g
    return xp.concatenate([ar, ai]), br, lambda g: xp.concatenate([g[:m], g[m:]], axis=1)


def _complex_table(contract: Contract, host, sa: RowStats, sb: RowStats, k: int, cpow: int, real, extra: int = 0):
    """(table, moduli count, width, report) of a complex product's plan (moduli "auto"), given
    ``real`` = (count, width, report) of :data:`MODULI`: :data:`GAUSSIAN_MODULI` where its
    count, at two INT8 GEMMs per modulus (:func:`ozgemm.crt.pipeline.execute_complex`), takes
    fewer GEMMs than the three of the three-product form per modulus of :data:`MODULI` and,
    under a ``max_gemms`` cap, its count plus the ``extra`` bound GEMMs (the plan's
    :attr:`Plan.int8_gemms`, the cap's units) is within the cap; the same proof (M > 2 Cmax at
    the chosen width) over the other table."""
    try:
        if contract.bound_kind == "componentwise":
            g = _componentwise_choice(contract, host, sa, sb, k, cpow, GAUSSIAN_MODULI)
        else:
            g = _normwise_choice(contract, host, k, cpow, GAUSSIAN_MODULI)
    except ContractError:  # beyond the smaller table
        return (MODULI,) + tuple(real)
    cap = contract.max_gemms
    if 2 * g[0] >= 3 * real[0] or (cap is not None and g[0] + extra > cap):
        return (MODULI,) + tuple(real)
    return (GAUSSIAN_MODULI, g[0], g[1], g[2] + f"; complex: {g[0]} moduli with a square root of -1, 2 INT8 "
                                             f"GEMMs per modulus (the three-product form: {real[0]} moduli, 3 per modulus)")


def make_plan(contract: Contract, a, b, backend, force_moduli: int | None = None, nonfinite_flag=None,
              speculate: bool = False, pa=None, pb=None, bound: Bound | None = None, known=(None, None),
              embedding: str | None = None) -> Plan:
    """Plan the Ozaki scheme II (CRT) product of finite 2-D arrays ``a`` (m x k) and ``b`` (k x n)
    (or (C, m, k) / (C, k, n) components of dd/binary128 operands, rescaled by ``2**-pa`` /
    ``2**-pb``) under ``contract``, whose method is CRT.

    ``speculate`` (CRT contracts, backends that speculate, one-component operands): when
    the moduli count can be guessed (the contract's fixed count, or the count the last plan
    of the same contract, shapes and dtypes needed), return without the host read: the
    plan's shifts use the width the device derives for the guess (from the bound's scalars,
    or a normwise plan's :func:`normwise_scalars`), ``plan.pending`` is set, and the caller
    must run :func:`confirm_plan` after queuing the product (which also raises the errors
    below, and NonFiniteInputs, in that case).

    ``force_moduli`` (diagnostics only, e.g. the error-vs-moduli plot of ``ozgemm audit``)
    uses that many moduli and the widest beta they allow, proving nothing.
    ``nonfinite_flag``: a (1,) int32 device array, non-zero when ``a``/``b`` were not checked
    and hold NaN/Inf (set by the backend's statistics, ``flags_nonfinite``); it is read with
    the planner's own scalars (no extra host synchronisation) and
    :class:`~ozgemm.precision.specials.NonFiniteInputs` is raised when set.
    ``bound``: the statistics and bound GEMM already computed (:func:`componentwise_bound`);
    ``known``: statistics of a prepared operand (:func:`statistics`). ``embedding``: ``a``, ``b``
    are a complex product's operands as :func:`statistics` takes them and the form of its
    lower bound (:func:`complex_bound_operands`); the plan is the real embedding's.

    Raises
    ------
    ContractError
        When the contract cannot be proven for these inputs (exponent spread beyond
        ``exponent_range``, moduli beyond the table); :class:`ModuliShortfall` beyond a fixed
        count. The message names the contract, the shortfall and the fix.
    MemoryError
        The statistics do not fit the backend's budget.
    """
    fmt = contract.fmt
    if not fmt.supported:
        raise ContractError(f"contract {contract.name!r} ({contract.source}): format {fmt.name} has no engine "
                            "path in this release (binary64 and binary32 have)")
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if bound is not None:
        sa, sb = bound.stats
    else:
        sa, sb = statistics(a, b, backend, nonfinite_flag, known, embedding)
    cpow = _cpow(sa, sb)
    one = cpow == 1 and m * n * k > 0  # one-component operands: plans read the data's scalars
    if nonfinite_flag is not None and (force_moduli is not None or not one):
        if int(nonfinite_flag.reshape(-1)[0]):  # plans without a host read of their own: read it now
            raise NonFiniteInputs()
        nonfinite_flag = None
    # Cmax uses S >= sum_l |a~_il||b~_lj|: forced plans take S = k, the others read the norm
    # sums (componentwise: with the bound's scalars; normwise: _normwise_choice).
    S = float(k)
    bound_gemms = 1
    key = None
    table = MODULI
    if force_moduli is not None:
        nmod = int(force_moduli)
        M = moduli_product(nmod)
        beta = max_beta_for(M, S, k, cpow=cpow)
        if beta < 1:
            raise ContractError(f"{nmod} moduli cannot hold even a 1-bit scaling for k = {k}")
        widened = f"forced: {nmod} moduli, no bound proven"
    else:
        componentwise = contract.bound_kind == "componentwise"
        if componentwise:
            if bound is None:
                bound = componentwise_bound(contract, sa, sb, k, backend, nonfinite_flag, operands=(a, b),
                                            embedding=embedding)
            scalars = bound.scalars
        else:  # normwise: the norm maxima (one-component operands), no bound GEMM
            scalars = backend.normwise_scalars(sa, sb, normwise_thresholds(contract, k), k,
                                               nonfinite_flag) if one else None
        key = guess_key(contract, a, b)
        guess = (speculation_guess(contract, key) if speculate and backend.speculates and one
                 and contract.max_gemms is None else None)  # (a capped plan is checked before it runs)
        if guess is not None:
            # no host read here: the shifts take the width the device derives for `guess` moduli
            # (the same exact comparisons as max_beta_for); confirm_plan checks it after the
            # caller has queued the product
            s, t, pending = backend.speculative_shifts(scalars, speculative_thresholds(guess, k), sa, sb, k)
            return Plan(contract=contract, shape=(m, k, n), beta=0, moduli=MODULI[:guess], s=s, t=t, E=sa.E,
                        F=sb.E, widened="speculative (unconfirmed)", stats=(sa, sb), pa=pa, pb=pb, pending=pending,
                        key=key)
        host = bound.host() if componentwise else None if scalars is None else to_numpy(scalars)
        if nonfinite_flag is not None and host[-1]:
            raise NonFiniteInputs()
        if componentwise:
            nmod, beta, widened = _componentwise_choice(contract, host, sa, sb, k, cpow)
        else:
            nmod, beta, widened = _normwise_choice(contract, host, k, cpow)
        if embedding is not None and contract.moduli == "auto":
            extra = bound.gemms if componentwise else 0
            table, nmod, beta, widened = _complex_table(contract, host, sa, sb, k, cpow, (nmod, beta, widened), extra)
        if componentwise:
            bound_gemms, widened = bound.gemms, widened + bound.note
        # a refined bound is read on the host: such products are not speculated on
        _remember(key, nmod, beta, speculable=not (componentwise and bound.refined))

    s, t = backend.shifts(beta, sa, sb)
    return Plan(contract=contract, shape=(m, k, n), beta=int(beta), moduli=table[:nmod], s=s, t=t,
                E=sa.E, F=sb.E, widened=widened, stats=(sa, sb), pa=pa, pb=pb, key=key, bound_gemms=bound_gemms)

"""Exponent bands: the plan of a product whose spread no single plan can hold.

A componentwise plan scales each row of A and column of B to integers of one width β; an
entry of (|A||B|)_ij far below 2**(E_i + F_j) (rows and columns spanning many binades, small
entries meeting large ones) needs β beyond what the moduli table holds (the planner raises
:class:`~ozgemm.precision.planner.WidthShortfall`). Then the operands are split by exponent:

    A = sum_r A^(r),  B = sum_s B^(s),  AB = sum_(r,s) A^(r) B^(s),

where A^(r) holds the entries (each component of a dd/binary128 entry on its own) of row i
whose binary exponent e (|x| in [2**(e-1), 2**e)) lies in (E_i - (r+1) W, E_i - r W], E_i the
row's largest, W = :data:`BAND_BITS`; B^(s) likewise by columns. Every entry sits in exactly
one band, so the split is exact and (|A||B|) = sum (|A^(r)||B^(s)|). A band's rows span at
most W + 53 bits, which one plan always holds, so each band pair (r, s) is an ordinary CRT
plan (:func:`ozgemm.precision.planner.make_plan`), made for the contract with one more bit.
binary128 operands are banded from their exact integer pieces
(:class:`~ozgemm.precision.operands.QuadPieces`) and each pair rescales its rows by its own
power of two 2**-(E_i - r W), so no piece leaves float64's range, whatever the spread.

Which pairs. A pair can only matter to entry (i, j) where row i of A^(r) and column j of
B^(s) are non-empty, and it is at most
    |A^(r) B^(s)|_ij <= C_A C_B k 2**(E_i + F_j - (r + s) W)
(C the components per entry). A lower bound LB_ij of (|A||B|)_ij comes from exact float64 GEMMs of
power-of-two roundings of |A| and |B| in windows of :data:`LB_WINDOW` binades
(:func:`band_lower_bound`: exact, so the same on every backend; nearest windows first, the
rest only on the rows and columns of entries still without a bound; one GEMM for most
inputs). Entries without any nonzero term are exactly 0 and need no pair at all. A pair is left out for entry (i, j) when

    C_A C_B k 2**(E_i + F_j - (r + s) W) <= 2**-(bits + 2 + ceil(log2 P)) LB_ij,

P the number of band pairs. The rows and columns of each pair's product are those with some
entry not left out (a superset: computing more is always allowed).

The bound. Let S be the exact sum of the computed pairs' integer products (each at its own
scale; :class:`~ozgemm.crt.reconstruct.ExactSum`), rounded once: C = RN(S). A computed pair
keeps (1 + u_f) delta_rs <= 2**-bits (|A^(r)||B^(s)|) (its plan proves the contract with
bits + 1), and the pairs left out for an entry sum to at most 2**-(bits + 2) LB_ij. With
Delta = |S - AB| <= sum delta_rs + sum_left |A^(r) B^(s)|,
    |C - AB| <= u_f |AB| + (1 + u_f) Delta <= u_f |AB| + 2**-(bits - 1) (|A||B|)_ij,
the contract's componentwise promise (with the same subnormal and overflow allowances as one
plan: the only rounding is the last one).

Cost. Per computed pair one plan (statistics, the bound GEMM and its moduli); spreads up to W
bits beyond what one plan holds give a few pairs; random entries over 10**(+-300) a few dozen
(fewer as k grows: every entry's largest term lies closer to 2**(E_i + F_j)); adversarial
inputs (huge spreads whose small entries only meet small ones) up to (spread / W)**2 pairs on
the rows and columns that need them. ``plan.info()`` reports the bands,
the pairs and the INT8 GEMMs; a contract's ``max_gemms`` caps the total.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np

from .._xp import as_float64
from ..contracts.contract import Contract, ContractError

__all__ = ["BAND_BITS", "LB_WINDOW", "LB_CHUNK", "BandPair", "BandedPlan", "band_index", "band_lower_bound", "band_operands", "plan_bands"]

#: exponent width of one band: a band's rows span at most BAND_BITS + 53 bits, i.e. a width
#: of at most 117 bits, which the moduli table holds for any k below 2**100
BAND_BITS = 64
#: binades per window of the lower-bound GEMMs: products of two windows' powers of two lie in
#: [2**-40, 1), and sums of up to LB_CHUNK of them are exact in float64 (2**-40 ulp below 2**13)
LB_WINDOW = 20
#: k-chunk of the lower-bound GEMMs
LB_CHUNK = 2**14


@dataclass(frozen=True)
class BandPair:
    """One computed band pair: bands ``r`` of A and ``s`` of B on rows ``rows`` of A and
    columns ``cols`` of B (int64 index arrays), planned as ``plan``."""

    r: int
    s: int
    rows: object
    cols: object
    plan: object


@dataclass(frozen=True)
class BandedPlan:
    """The plan of a product split into exponent bands (module docstring).

    Attributes: ``contract``; ``shape`` (m, k, n); ``bands`` (bands of A, bands of B);
    ``pairs`` the computed :class:`BandPair`; ``band_a`` / ``band_b`` the band index of every
    entry (int16, -1 for zeros; (C, r, k) for components, B's transposed); ``left_out`` the
    pairs left out entirely; ``src``
    the binary128 operands' :class:`~ozgemm.precision.operands.QuadPieces` (A's rows, B's
    columns; None for other formats).
    """

    contract: Contract
    shape: tuple
    bands: tuple
    pairs: tuple
    band_a: object = field(repr=False)
    band_b: object = field(repr=False)
    left_out: int = 0
    widened: str = ""
    src: tuple = field(default=(None, None), repr=False)
    pending: ClassVar[object] = None

    method: ClassVar[str] = "bands"

    def evolve(self, **changes):
        """A new plan with ``changes`` (this one is frozen)."""
        return replace(self, **changes)

    @property
    def int8_gemms(self) -> int:
        """INT8 GEMMs of all computed pairs (each with its bound GEMM)."""
        return sum(p.plan.int8_gemms for p in self.pairs)

    @property
    def n_moduli(self) -> int:
        """The largest moduli count of a pair (0 without pairs)."""
        return max((p.plan.n_moduli for p in self.pairs), default=0)

    @property
    def beta(self) -> int:
        """The largest width of a pair (0 without pairs)."""
        return max((p.plan.beta for p in self.pairs), default=0)

    @property
    def moduli(self) -> tuple:
        return max((p.plan.moduli for p in self.pairs), key=len, default=())

    def info(self) -> dict:
        """A JSON-friendly summary: the bands, the computed pairs (rows x columns, moduli) and
        the INT8 GEMMs in all."""
        from .planner import plan_header

        return {
            **plan_header(self.contract, self.shape, "bands"),
            "band_bits": BAND_BITS,
            "bands": list(self.bands),
            "pairs": [{"bands": [p.r, p.s], "rows": int(p.rows.shape[0]), "cols": int(p.cols.shape[0]),
                       "n_moduli": p.plan.n_moduli, "beta": p.plan.beta} for p in self.pairs],
            "pairs_left_out": self.left_out,
            "beta": self.beta,
            "n_moduli": self.n_moduli,
            "int8_gemms": self.int8_gemms,
            "widened": self.widened,
        }


def _exponents(x, src, xp):
    """Binary exponents e (|x| in [2**(e-1), 2**e)) of every entry (component) of ``x`` and
    the nonzero mask; of the pieces of ``src`` (binary128, exact integers) where given."""
    if src is not None:
        return src.exponents(xp)
    x = as_float64(x)
    return xp.frexp(x)[1].astype(xp.int64), x != 0


def band_index(x, xp, src=None):
    """Band of every entry of ``x`` (r, k) or components (C, r, k), by rows: int16, -1 for
    zeros; and the rows' largest exponents E (r,) int64 (0 for zero rows). ``src``: the
    binary128 operand's :class:`~ozgemm.precision.operands.QuadPieces` (its pieces, exactly,
    whatever their scale; ``x`` is then not read)."""
    e, nz = _exponents(x, src, xp)
    lo = np.iinfo(np.int64).min
    em = xp.where(nz, e, lo)
    E = em.max(axis=-1) if e.ndim == 2 else em.max(axis=(0, 2))
    E = xp.where(E == lo, 0, E)
    idx = (E[:, None] - e) // BAND_BITS
    return xp.where(nz, idx, -1).astype(xp.int16), E


def _lb_terms(x, src, E, xp):
    """Per entry of ``x`` (r, k) or components (C, r, k): (t, has, nonzero) with |x| >=
    2**(E_i + t - 1) where ``has``; ``nonzero`` the entries that are not 0. Float entries:
    their own exponent; components: half the largest where the others sum to at most a
    quarter of it; binary128 (``src``): its leading bit."""
    if src is not None:
        return src.top - E[:, None], src.nz, src.nz
    if x.ndim == 2:
        p = xp.abs(as_float64(x))
        nonzero = p > 0
    else:
        ax = xp.abs(x)
        mx = ax.max(axis=0)
        p = xp.where(ax.sum(axis=0) <= 1.25 * mx, 0.5 * mx, 0.0)
        nonzero = (x != 0).any(axis=0)
    return xp.frexp(p)[1].astype(xp.int64) - E[:, None], p > 0, nonzero


def band_lower_bound(a, b, Ea, Fb, xp, src=(None, None)):
    """g (m, n) int64 with (|A||B|)_ij >= 2**(Ea_i + Fb_j + g_ij - 2); g = -2**40 where none
    was found, and g = +2**40 where the entry has no nonzero term (it is exactly 0, and no band
    pair needs to be computed for it).

    Exact and order-free, so the same on every backend: each entry's magnitude (a lower bound
    for components and binary128, :func:`_lb_terms`) is rounded down to a power of two 2**(t - 1) relative to
    its row's 2**E_i, and the powers are grouped in windows of :data:`LB_WINDOW` binades,
    window x scaled up by 2**(LB_WINDOW x) into [2**-LB_WINDOW, 1). A float64 GEMM of two
    windows then sums powers of two in [2**-2 LB_WINDOW, 1) over k-chunks of at most
    :data:`LB_CHUNK`: every partial sum is a multiple of 2**-2 LB_WINDOW below 2**13, exact in
    any order; the largest chunk sum G = f 2**g (f in [1/2, 1)) gives (|A||B|)_ij >= 2**(E_i +
    F_j + g - 1 - LB_WINDOW (x + y)). Window pairs go nearest first, each on the rows and
    columns with an entry still unbounded, until every entry with a nonzero term (counted by
    one exact GEMM of the nonzero patterns) has a bound. ``src``: the binary128 operands'
    pieces (A's rows, B's columns), as :func:`band_index` takes them."""
    ta, ha, nza = _lb_terms(a, src[0], Ea, xp)  # t <= 0 where nonzero
    tb, hb, nzb = (t.T for t in _lb_terms(b.T if b.ndim == 2 else b.transpose(0, 2, 1), src[1], Fb, xp))
    none = -(1 << 40)
    m, n = ta.shape[0], tb.shape[1]
    g = xp.full((m, n), none, dtype=xp.int64)
    if m * n == 0 or ta.shape[1] == 0:
        return g
    one_a = xp.ones(ta.shape, dtype=xp.float64)  # float64 powers (a Python 1.0 may give float32 on cupy)
    one_b = xp.ones(tb.shape, dtype=xp.float64)
    wa = xp.where(ha, (-ta) // LB_WINDOW, -1)
    wb = xp.where(hb, (-tb) // LB_WINDOW, -1)
    # entries with no nonzero term at all need no bound (an exact GEMM of 0/1 patterns)
    nzl = _chunked_max(nza.astype(xp.float64), nzb.astype(xp.float64), xp)
    open_ = nzl > 0
    g = xp.where(open_, g, 1 << 40)  # exactly 0: every band pair adds exactly 0 there
    xs = [int(x) for x in xp.unique(wa[wa >= 0]).tolist()] if bool((wa >= 0).any()) else []
    ys = [int(y) for y in xp.unique(wb[wb >= 0]).tolist()] if bool((wb >= 0).any()) else []
    for d in sorted({x + y for x in xs for y in ys}):
        if not bool(open_.any()):
            break
        rows = xp.nonzero(open_.any(axis=1))[0]
        cols = xp.nonzero(open_.any(axis=0))[0]
        best = xp.full((rows.shape[0], cols.shape[0]), none, dtype=xp.int64)
        for x in xs:
            y = d - x
            if y not in ys:
                continue
            qa = _window(one_a[rows], ta[rows], wa[rows] == x, x, xp)
            qb = _window(one_b[:, cols], tb[:, cols], wb[:, cols] == y, y, xp)
            G = _chunked_max(qa, qb, xp)
            gx = xp.frexp(G)[1].astype(xp.int64) + 1 - LB_WINDOW * d
            best = xp.where((G > 0) & (gx > best), gx, best)
        sub = (rows[:, None], cols[None, :])
        found = best > none
        g[sub] = xp.where(found & (best > g[sub]), best, g[sub])
        open_[sub] = open_[sub] & ~found
    return g


def _window(one, t, sel, x, xp):
    """2**(t - 1 + LB_WINDOW x) where ``sel`` (in [2**-LB_WINDOW, 1)), else 0."""
    return xp.where(sel, xp.ldexp(one, xp.where(sel, t - 1 + LB_WINDOW * x, 0).astype(xp.int32)), 0.0)


def _chunked_max(x, y, xp):
    """max over k-chunks of at most :data:`LB_CHUNK` of the float64 products x @ y."""
    k = x.shape[1]
    out = None
    for k0 in range(0, k, LB_CHUNK):
        G = x[:, k0:k0 + LB_CHUNK] @ y[k0:k0 + LB_CHUNK]
        out = G if out is None else xp.maximum(out, G)
    return out


def _sub_contract(contract: Contract) -> Contract:
    """The contract each band pair is planned with: one more bit, CRT, moduli from the data,
    the default exponent range (a band's width is always within it), no cost cap (the
    banded plan's total is checked)."""
    return contract.with_(method="crt", moduli="auto", exponent_range=max(contract.exponent_range, 256),
                          max_gemms=None).sharpened(1)


def plan_bands(contract: Contract, a, b, backend, why: str = "", src=(None, None)) -> BandedPlan:
    """Plan ``a`` (m, k) @ ``b`` (k, n) (finite; or (C, ., .) components) under the
    componentwise ``contract`` in exponent bands (module docstring). ``why``: the single
    plan's refusal, kept in the report. ``src``: binary128 operands'
    :class:`~ozgemm.precision.operands.QuadPieces` (A's rows, B's columns; None otherwise):
    their bands are taken from the exact pieces (not from ``a`` / ``b``, their components
    rescaled for one plan) and each pair scales its band's pieces by its own power of two, so
    no piece leaves float64's range however wide the row.

    Raises ContractError when the contract's ``max_gemms`` is below the plan's INT8 GEMMs
    (naming them); MemoryError as the planner does."""
    from .planner import make_plan

    xp = backend.xp
    m, k = a.shape[-2:]
    n = b.shape[-1]
    bt = b.T if b.ndim == 2 else b.transpose(0, 2, 1)
    band_a, Ea = band_index(a, xp, src[0])
    band_b, Fb = band_index(bt, xp, src[1])
    ca = 1 if a.ndim == 2 else a.shape[0]
    cb = 1 if b.ndim == 2 else b.shape[0]
    na = int(band_a.max()) + 1 if band_a.size else 0
    nb = int(band_b.max()) + 1 if band_b.size else 0
    P = max(na * nb, 1)
    g = band_lower_bound(a, b, Ea, Fb, xp, src)
    # pair (r, s) is needed at (i, j) iff (r + s) W < H_ij
    H = (math.ceil(math.log2(ca * cb * max(k, 1))) + contract.bits + 4 + math.ceil(math.log2(P))) - g
    h_row = H.max(axis=1) if n else xp.zeros(m, dtype=xp.int64)
    h_col = H.max(axis=0) if m else xp.zeros(n, dtype=xp.int64)
    ne_a = xp.stack([(band_a == r).any(axis=-1) if a.ndim == 2 else (band_a == r).any(axis=(0, 2))
                     for r in range(na)]) if na else None
    ne_b = xp.stack([(band_b == s).any(axis=-1) if b.ndim == 2 else (band_b == s).any(axis=(0, 2))
                     for s in range(nb)]) if nb else None
    sub = _sub_contract(contract)
    pairs, left_out = [], 0
    for d in range(na + nb - 1):
        for r in range(max(0, d - nb + 1), min(na, d + 1)):
            s = d - r
            rows = xp.nonzero(ne_a[r] & (d * BAND_BITS < h_row))[0]
            cols = xp.nonzero(ne_b[s] & (d * BAND_BITS < h_col))[0]
            if rows.shape[0] == 0 or cols.shape[0] == 0:
                left_out += 1
                continue
            pre_a = _pair_pre(src[0], Ea, rows, r)
            pre_b = _pair_pre(src[1], Fb, cols, s)
            ar, bs = _pair_operands(a, bt, band_a, band_b, r, s, rows, cols, xp, src, pre_a, pre_b)
            p = make_plan(sub, ar, bs, backend, pa=pre_a, pb=pre_b)
            pairs.append(BandPair(r=r, s=s, rows=rows, cols=cols, plan=p))
    total = sum(p.plan.int8_gemms for p in pairs)
    widened = (f"exponent bands of {BAND_BITS} bits: A {na}, B {nb}; {len(pairs)} of {na * nb} band pairs "
               f"computed ({total} INT8 GEMMs, float64 lower-bound GEMMs), each with "
               f"bits = {sub.bits}" + (f" (one plan: {why})" if why else ""))
    plan = BandedPlan(contract=contract, shape=(m, k, n), bands=(na, nb), pairs=tuple(pairs), band_a=band_a,
                      band_b=band_b, left_out=left_out, widened=widened, src=tuple(src))
    cap = contract.max_gemms
    if cap is not None and total > cap:
        raise ContractError(
            f"contract {contract.name!r} ({contract.source}): these inputs span more binades than one plan "
            f"holds; in exponent bands they need {total} INT8 GEMMs ({len(pairs)} band pairs of {BAND_BITS}-bit "
            f"bands, each with its bound GEMM); the contract caps them at max_gemms = "
            f"{cap}. Fix: raise max_gemms, or narrow the exponent spread of the rows/columns.")
    return plan


def _pair_pre(src, E, rows, r):
    """The power of two a pair's rows are rescaled by: a binary128 band's own, E_i - r W (its
    pieces then lie in [2**-(W + 53), 1): exact in float64); None for other operands."""
    return None if src is None else E[rows] - r * BAND_BITS


def _band_part(x, band, r, rows, xp, src=None, pre=None):
    """Rows ``rows`` of ``x`` with the entries outside band ``r`` set to 0 (an exact split);
    binary128 (``src``): its pieces in band ``r`` times ``2**-pre``."""
    if src is not None:
        return src.scaled(pre, xp, rows=rows, keep=band[:, rows] == r)
    if x.ndim == 2:  # selected by bit pattern (cupy flushes float32 subnormals in arithmetic)
        ui = xp.uint32 if x.dtype == xp.float32 else xp.uint64
        return xp.where(band[rows] == r, x[rows].view(ui), ui(0)).view(x.dtype)
    return xp.where(band[:, rows] == r, x[:, rows], 0.0)


def _pair_operands(a, bt, band_a, band_b, r, s, rows, cols, xp, src=(None, None), pre_a=None, pre_b=None):
    ar = _band_part(a, band_a, r, rows, xp, src[0], pre_a)
    bs = _band_part(bt, band_b, s, cols, xp, src[1], pre_b)
    return ar, (bs.T if bs.ndim == 2 else bs.transpose(0, 2, 1))


def band_operands(plan: BandedPlan, pair: BandPair, a, b, xp):
    """The operands of one computed pair: (rows of A^(r), columns of B^(s)), as planned."""
    bt = b.T if b.ndim == 2 else b.transpose(0, 2, 1)
    return _pair_operands(a, bt, plan.band_a, plan.band_b, pair.r, pair.s, pair.rows, pair.cols, xp, plan.src,
                          pair.plan.pa, pair.plan.pb)

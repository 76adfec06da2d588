"""Ozaki scheme II as one pipeline over a backend: residues -> INT8 GEMMs -> CRT -> one rounding.

Ozaki, Uchino, Imamura, "Ozaki Scheme II: A GEMM-oriented emulation of floating-point
matrix multiplication using an integer modular technique" (2025), Sec. 3: scale A and B to
integers, multiply residues modulo each m_q with an exact integer GEMM, reconstruct the
integer product by the CRT, scale back. Here the reconstruction is exact (multiword
integers) and the only rounding is the final correctly rounded conversion.

The plan (:class:`~ozgemm.precision.planner.Plan`: shifts, width, moduli) is fixed before
this runs; every phase is a method of the backend (:class:`~ozgemm.kernels.base.Backend`),
called in the same order for every backend:

1. the row tiles of A within the backend's workspace budget;
2. residues of B (scaled columns), once;
3. per row tile of A (within the backend's workspace): residues of A's rows, the exact
   integer GEMMs for every modulus, the CRT reconstruction and the rounding into the
   tile's rows of the result.

Complex products (:func:`execute_complex`) follow the same order with two or three real
products per modulus.
"""
from __future__ import annotations

import time

from .._timing import lap_timer
from ..precision.rounding import empty_result
from .moduli import splits

__all__ = ["execute", "execute_bands", "execute_complex"]


def execute(plan, backend, a, b, timings=None, reuse=None, exact=False):
    """Compute ``C = RN(A'B' 2**-(s_i+t_j))`` for a CRT plan.

    Parameters
    ----------
    plan : Plan                 :func:`ozgemm.precision.planner.make_plan` for these operands
    backend : Backend           :class:`~ozgemm.kernels.base.Backend`
    a : (m, k) float32/64 or (C, m, k) float64 components; the (finite) operand planned
    b : (k, n) float32/64 or (C, k, n)
    timings : dict, optional    receives per-phase seconds ("residues", "gemms",
                                "reconstruction"), synchronised (tiles then run one after
                                another)
    reuse : optional            residues of prepared operands: ``reuse.residues(side,
                                compute, shift, n_moduli, i0, i1)`` returns those computed
                                before for the same shifts and moduli, else ``compute()``

    exact : bool                return the exact integer product instead of rounding it:
                                (mag (L, m, n) uint64 base-2**32 limbs of |C'|, neg (m, n)
                                bool), C' scaled by ``2**plan.out_exponent()``
                                (:meth:`Backend.reconstruct_exact`; the band pipeline)

    Returns
    -------
    The result storage of the contract's format (:func:`~ozgemm.precision.rounding.empty_result`).
    """
    fmt = plan.contract.fmt
    m, k, n = plan.shape
    N = plan.n_moduli
    sa, sb = plan.stats
    lap = lap_timer(backend, timings)
    moduli = backend.residue_moduli(N)  # the backend's own (the CPU engine's primes up to 2965821)
    # output exponent -(s_i + t_j) + pa_i + pb_j (binary128 operands were rescaled by 2**-pa)
    s_out = plan.s - plan.pa if plan.pa is not None else plan.s
    t_out = plan.t - plan.pb if plan.pb is not None else plan.t
    lead = (slice(None),) if fmt.name == "dd" else ()
    # the tiling is decided first: MemoryError before any workspace is allocated
    with backend.row_tiles(plan, a.shape[0] if a.ndim == 3 else 1, concurrent=timings is None) as tiles:
        t0 = time.perf_counter()
        bt = b.T if b.ndim == 2 else b.transpose(0, 2, 1)  # the rows B is scaled along
        if reuse is None:
            rb = backend.residues(bt, sb, plan.t, N)
        else:
            rb = reuse.residues("b", lambda: backend.residues(bt, sb, plan.t, N), plan.t, N, 0, n)
        t0 = lap("residues", t0)
        out = empty_result(m, n, fmt, backend.xp) if not exact else []
        for tile in tiles:
            with tile:
                i0, i1 = tile.i0, tile.i1
                t0 = time.perf_counter()
                if reuse is None:
                    ra = backend.residues(a, sa, plan.s, N, i0, i1)
                else:
                    ra = reuse.residues("a", lambda: backend.residues(a, sa, plan.s, N, i0, i1), plan.s, N, i0, i1)
                t0 = lap("residues", t0)
                c = backend.residue_products(ra, rb, moduli)
                del ra
                t0 = lap("gemms", t0)
                whole = i0 == 0 and i1 == m  # (views cost host time: only for a tile)
                if exact:
                    out.append(backend.reconstruct_exact(c, N, i1 - i0, n))
                    del c
                    lap("reconstruction", t0)
                    continue
                backend.reconstruct_round(c, s_out if whole else s_out[i0:i1], t_out, N, fmt,
                                          out if whole else out[lead + (slice(i0, i1),)])
                del c
                lap("reconstruction", t0)
    if exact:  # every tile has the same moduli, hence the same limb count
        xp = backend.xp
        return xp.concatenate([mg for mg, _ in out], axis=1), xp.concatenate([ng for _, ng in out], axis=0)
    return out


def execute_bands(plan, backend, a, b, timings=None):
    """A banded plan (:class:`~ozgemm.precision.bands.BandedPlan`): every computed band pair
    through :func:`execute` to its exact integer product, all summed exactly at their scales
    (:class:`~ozgemm.crt.reconstruct.ExactSum`) and rounded once to the contract's format.
    ``a``, ``b``: the finite operands the plan was made for; ``timings`` as :func:`execute`
    (summed over the pairs)."""
    from ..precision.bands import band_operands
    from .reconstruct import ExactSum, constants_of

    xp = backend.xp
    m, k, n = plan.shape
    lo = xp.full((m, n), 1 << 62, dtype=xp.int64)
    top = xp.full((m, n), -(1 << 62), dtype=xp.int64)
    exps, term_limbs = [], 1
    for pair in plan.pairs:  # the accumulator's unit and length: below / above every term
        p = pair.plan
        e = p.out_exponent()
        gc = constants_of(backend.residue_moduli(p.n_moduli))
        term_limbs = max(term_limbs, gc.limbs)
        sub = (pair.rows[:, None], pair.cols[None, :])
        lo[sub] = xp.minimum(lo[sub], e)
        top[sub] = xp.maximum(top[sub], e)
        exps.append(e)
    covered = lo < (1 << 62)
    e0 = xp.where(covered, lo, 0)
    span = int(xp.max(xp.where(covered, top - lo, 0))) if m * n else 0
    # a term at q = (e - e0) // 32 limbs fills limbs q .. q + L; the sum of all terms is below
    # 2**32 times the largest (fewer than 2**32 pairs): three limbs spare keep the sign
    limbs = span // 32 + term_limbs + 3
    acc = ExactSum(e0, limbs, xp)
    for pair, e in zip(plan.pairs, exps):
        ar, bs = band_operands(plan, pair, a, b, xp)
        mag, neg = execute(pair.plan, backend, ar, bs, timings, exact=True)
        acc.add(mag, neg, e, pair.rows, pair.cols)
        del mag, neg
    return acc.round(plan.contract.fmt)


def execute_complex(plan, backend, a_parts, b_parts, timings=None, out=None):
    """A complex product from exact real integer products, in one of two forms.

    ``plan`` is the CRT plan of the real embedding of the product
    (:func:`ozgemm.precision.operands.complex_embedding`: A = [Ar | Ai] (m, 2k),
    B = [[Br, Bi], [-Bi, Br]] (2k, 2n)); its shifts s (rows of A) and t (columns of B, equal
    for columns j and n + j) scale the parts to integers Ar', Ai', Br', Bi', and the
    embedding's integer product is [Re' | Im'] = [Ar'Br' - Ai'Bi' | Ar'Bi' + Ai'Br'].

    * **Split form** (the plan's moduli each have a square root t_q of -1,
      :data:`~ozgemm.contracts.moduli.GAUSSIAN_MODULI`): modulo m_q, x + iy -> (x + t_q y,
      x - t_q y) maps the Gaussian integers onto pairs of residues and products onto
      products, so with X+ = Ar' + t Ai', Y+ = Br' + t Bi' (X-, Y- with -t)

          P+ = X+ Y+ = Re' + t Im',   P- = X- Y- = Re' - t Im'   (mod m_q),

      Re' = (P+ + P-)/2 and Im' = (P+ - P-)/(2t) mod m_q: two INT8 GEMMs per modulus
      (:meth:`Backend.residues_split`, :meth:`Backend.reconstruct_round_split`).
    * **Three-product form** (other moduli): P1 = Ar'Br', P2 = Ai'Bi', P3 = (Ar' + Ai')(Br' +
      Bi'), Re' = P1 - P2, Im' = P3 - P1 - P2: three INT8 GEMMs per modulus
      (:meth:`Backend.residues_3m`, :meth:`Backend.reconstruct_round_3m`).

    Every product is exact, so neither identity loses anything (unlike floating-point 3M), and
    the operands of both forms are residues in the symmetric range of m_q (int8), reduced once
    from those of the parts: the reconstruction needs no more than the moduli the plan chose
    for the embedding's integers (|Re'|, |Im'| are bounded by its |A'||B'|). The result —
    [Re | Im] (m, 2n) in the contract's format — is that of :func:`execute` on the embedding
    up to ties of the scaling (the embedding rounds -Bi 2**t half up, these forms negate the
    rounded Bi; the plan's proof covers both: |scaling error| <= 1/2 per entry).

    ``a_parts`` = (Ar, Ai) (m, k), ``b_parts`` = (Br, Bi) (k, n): finite float32/float64
    (views of the embedding are fine). ``timings`` as :func:`execute`. ``out`` = (re, im):
    (m, n) float views (any strides, e.g. the real and imaginary words of a complex array)
    that receive the parts instead of a new [Re | Im] array; returns ``out`` then. The row
    tiles are those of a real (m, k, n) product with two or three residue and product
    buffers.
    """
    fmt = plan.contract.fmt
    m, k2, n2 = plan.shape
    k, n = k2 // 2, n2 // 2
    split = splits(plan.moduli)
    spec = plan.moduli if split else plan.n_moduli  # (kernels of a real plan's count are shared)
    residues = backend.residues_split if split else backend.residues_3m
    forms = 2 if split else 3
    ar, ai = a_parts
    br, bi = b_parts
    lap = lap_timer(backend, timings)
    moduli = backend.residue_moduli(spec)
    tb = plan.t[:n]  # == plan.t[n:] (equal column statistics)
    lead = (slice(None),) if fmt.name == "dd" else ()
    with backend.row_tiles(plan.evolve(shape=(m, k, n)), 1, concurrent=timings is None, products=forms) as tiles:
        t0 = time.perf_counter()
        rb = residues(br.T, bi.T, tb, spec)
        t0 = lap("residues", t0)
        if out is None:
            res = empty_result(m, n2, fmt, backend.xp)
            out_re, out_im = res[lead + (slice(None), slice(0, n))], res[lead + (slice(None), slice(n, n2))]
        else:
            res = out_re, out_im = out
        for tile in tiles:
            with tile:
                i0, i1 = tile.i0, tile.i1
                t0 = time.perf_counter()
                ra = list(residues(ar, ai, plan.s, spec, i0, i1))
                t0 = lap("residues", t0)
                p = []
                for f in range(forms):  # each operand's residues freed once used
                    p.append(backend.residue_products(ra[f], rb[f], moduli))
                    ra[f] = None
                t0 = lap("gemms", t0)
                rows = lead + (slice(i0, i1),)
                if split:
                    backend.reconstruct_round_split(p[0], p[1], plan.s[i0:i1], plan.t[:n], plan.t[n:], spec, fmt,
                                                    out_re[rows], out_im[rows], k)
                else:
                    backend.reconstruct_round_3m(p[0], p[1], p[2], plan.s[i0:i1], plan.t[:n], plan.t[n:], spec,
                                                 fmt, out_re[rows], out_im[rows], k)
                del p
                lap("reconstruction", t0)
    return res

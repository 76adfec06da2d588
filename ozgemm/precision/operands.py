"""Operands in the wide formats as exact sums of float64 components, row by row.

The CRT pipeline scales each row of A (column of B) by a power of two and rounds it to
integers. A float32/float64 entry is one component. Wider entries are held as an exact,
unevaluated sum of C float64 components, each scaled and rounded separately (so the
per-entry scaling error is at most C/2 units instead of 1/2; the planner accounts for it,
see :mod:`ozgemm.precision.planner`):

* dd ``hi + lo`` (C = 2): renormalised exactly with TwoSum (Knuth, TAOCP vol. 2, 4.2.2),
  so ``hi = RN(hi + lo)``.
* binary128 (C = 3): the 113-bit significand is cut into 53 + 53 + 7 bits, three pieces of
  the same sign (truncation, not rounding: ``|x| >= |piece_0|``). Each row is first
  rescaled by ``2**-P_i``, P_i the row's largest exponent, so pieces fit binary64's range
  whatever the binary128 exponent; a piece below 2**-1074 relative to its row max may
  round in ``ldexp`` (error <= 2**-1074 2**P_i; a piece that would vanish is kept as
  2**-1074, so the row's width — and hence its "inexact" flag — stays truthful), which the
  planner covers by taking C = 4 for these operands (per-entry error <= 3/2 + 3 * 2**-74
  <= 2 units, because the integer width never exceeds 1000 bits). The output exponent adds
  P_i back. The pieces are also kept exactly as integers (:class:`QuadPieces`), from which
  exponent bands (:mod:`ozgemm.precision.bands`) scale each band by its own power of two, so
  rows wider than float64's range are computed, not refused.

Non-finite entries are reported through a float64 "proxy" array of the same IEEE classes
(NaN, +-Inf, +-0, +-1 for finite non-zero values) for the separate specials pass.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._xp import as_float64, ignore_fp_errors
from ..contracts.formats import DD, Binary128, is_quad_array, quad_to_bits

__all__ = ["QuadPieces", "QUAD_OFFSETS", "Rows", "ieee_classes", "arrays", "as_wide", "is_wide", "operand_rows", "transpose", "complex_embedding", "complex_operands"]


def is_wide(x) -> bool:
    """True for the wide-format containers :class:`DD` and :class:`Binary128`."""
    return isinstance(x, (DD, Binary128))


def as_wide(x):
    """numpy QuadPrecDType arrays become :class:`Binary128`; other inputs are returned as is."""
    if is_quad_array(x):
        return Binary128(quad_to_bits(x))
    return x


def arrays(x):
    """The arrays an operand holds (``[hi, lo]``, ``[bits]`` or ``[x]``): for array-library
    and device dispatch, and for overlap checks."""
    if isinstance(x, DD):
        return [x.hi, x.lo]
    if isinstance(x, Binary128):
        return [x.bits]
    return [x]


def transpose(x):
    """Transpose of a 2-D operand (float array, DD or Binary128), a view."""
    if isinstance(x, DD):
        return DD(x.hi.T, x.lo.T)
    if isinstance(x, Binary128):
        return Binary128(x.bits.transpose(1, 0, 2))
    return x.T


@dataclass
class Rows:
    """A 2-D operand prepared for row scaling.

    comps  : (r, k) float array (one component) or (C, r, k) float64
    pre    : (r,) int64 power-of-two rescaling P_i already applied (x = comps_sum * 2**P_i), or None
    proxy  : (r, k) float array with each entry's IEEE class (for the specials pass)
    cpow   : power of two >= the per-entry scaling error in half units (1, 2 or 4)
    source : the binary128 operand's :class:`QuadPieces` (None for other formats), from
             which exponent bands take their pieces at their own scale
    """

    comps: object
    pre: object
    proxy: object
    cpow: int = 1
    source: object = None


def ieee_classes(x, xp):
    """The IEEE classes of a 2-D operand's entries, any orientation, as a float64 array of its
    shape: a float operand widened exactly, a dd/binary128 one as its :class:`Rows` proxy (the
    class of hi + lo; NaN, +-Inf, +-0, +-1) — what the specials pass reads."""
    return operand_rows(x, xp).proxy if is_wide(x) else as_float64(x)


def operand_rows(x, xp) -> Rows:
    """Decompose a 2-D operand (rows = the scaled direction) into :class:`Rows`."""
    if isinstance(x, DD):
        hi, lo = xp.ascontiguousarray(x.hi), xp.ascontiguousarray(x.lo)  # one copy of a transposed view
        with ignore_fp_errors(xp):
            s = hi + lo  # TwoSum: s + err == hi + lo exactly (no overflow)
            bb = s - hi
            err = (hi - (s - bb)) + (lo - bb)
        # a pair is a finite double-double where TwoSum succeeds; elsewhere its class is that of
        # the float64 sum hi + lo (a NaN/Inf part, or a finite pair whose sum overflows: +-Inf)
        fin = xp.isfinite(s) & xp.isfinite(err)
        hi2 = xp.where(fin, s, 0.0)
        lo2 = xp.where(fin, err, 0.0)
        with ignore_fp_errors(xp):
            proxy = xp.where(fin, hi2, hi + lo)  # the IEEE class of hi + lo
        comps = xp.stack([hi2, lo2])
        return Rows(comps=comps, pre=None, proxy=proxy, cpow=2)
    if isinstance(x, Binary128):
        return _quad_rows(xp.ascontiguousarray(x.bits), xp)
    return Rows(comps=x, pre=None, proxy=x, cpow=1)


#: bit offsets of the three pieces of a binary128 significand (53 + 53 + 7 bits)
QUAD_OFFSETS = (60, 7, 0)


@dataclass
class QuadPieces:
    """A binary128 operand (r, k) held exactly as integers: entry x = sgn * sum_c v_c *
    2**(e_lsb + QUAD_OFFSETS[c]), v (3, r, k) uint64 < 2**53 (the pieces share x's sign;
    truncation, so |x| >= each piece). ``nz``: finite nonzero entries (the others count as
    0); ``top``: |x| in [2**(top - 1), 2**top) where ``nz``."""

    neg: object
    v: object
    e_lsb: object
    nz: object
    top: object

    def without_rows(self, bad):
        """The operand with rows ``bad`` ((r,) bool, or None) set to zero."""
        if bad is None:
            return self
        return QuadPieces(self.neg, self.v, self.e_lsb, self.nz & ~bad[:, None], self.top)

    def exponents(self, xp):
        """Binary exponents e (|piece| in [2**(e-1), 2**e)) of the pieces (3, r, k) int64 and
        their nonzero mask."""
        e = xp.stack([self.e_lsb + off + _bitlen64(self.v[c], xp) for c, off in enumerate(QUAD_OFFSETS)])
        return e, (self.v != 0) & self.nz[None]

    def scaled(self, pre, xp, rows=None, keep=None, standin=False):
        """The pieces as float64 (3, r, k) times ``2**-pre`` ((r,) int64), on ``rows`` (index
        array or None: all) and where ``keep`` ((3, r', k) bool or None: all). Exact where a
        scaled piece is at least 2**-1022 (its lowest bit then lies within float64's range);
        ``standin``: a nonzero piece that ``ldexp`` flushes to zero is kept as 2**-1074."""
        sel = (lambda t: t) if rows is None else (lambda t: t[rows])
        sh = sel(self.e_lsb) - pre[:, None]
        neg, nz = sel(self.neg), sel(self.nz)
        sgn = xp.where(neg, -1.0, 1.0)
        out = []
        for c, off in enumerate(QUAD_OFFSETS):
            v = self.v[c] if rows is None else self.v[c][rows]
            with ignore_fp_errors(xp):
                y = xp.ldexp(v.astype(xp.float64), xp.clip(sh + off, -2000, 2000).astype(xp.int32))  # v < 2**53
            if standin:
                y = xp.where((v != 0) & (y == 0), 2.0 ** -1074, y)
            ok = nz if keep is None else nz & keep[c]
            out.append(xp.where(ok, sgn * y, 0.0))
        return xp.stack(out)


def _quad_rows(bits, xp) -> Rows:
    u = xp.uint64
    lo = bits[..., 0]
    hi = bits[..., 1]
    neg = (hi >> u(63)) == 1
    be = ((hi >> u(48)) & u(0x7FFF)).astype(xp.int64)
    frac_hi = hi & u((1 << 48) - 1)
    special = be == 0x7FFF
    nan = special & ((frac_hi != 0) | (lo != 0))
    normal = be != 0
    h49 = frac_hi | (normal.astype(u) << u(48))
    e_lsb = xp.maximum(be, 1) - 16383 - 112  # exponent of the significand's last bit
    v = xp.stack([(h49 << u(4)) | (lo >> u(60)),  # significand bits 60..112 (<= 53 bits)
                  (lo >> u(7)) & u((1 << 53) - 1),  # bits 7..59
                  lo & u(127)])  # bits 0..6
    nz = ((h49 | lo) != 0) & ~special
    # top exponent: |x| < 2**top
    bl = xp.where(h49 != 0, 64 + _bitlen64(h49, xp), _bitlen64(lo, xp))
    top = e_lsb + bl
    src = QuadPieces(neg=neg, v=v, e_lsb=e_lsb, nz=nz, top=top)
    big = xp.iinfo(xp.int64).min
    P = xp.where(nz, top, big).max(axis=1) if bits.shape[1] else xp.zeros((bits.shape[0],), dtype=xp.int64)
    P = xp.where(P == big, 0, P).astype(xp.int64)
    # a non-zero piece that ldexp flushed to zero stays visible as 2**-1074: the row's width
    # then exceeds every admissible beta (<= 1000), so the row counts as inexact and its
    # scaling error is covered (|sentinel - piece| <= 2**-1074, 2**-74 units); such rows
    # (spanning ~960 binades or more) go to exponent bands, which scale pieces from ``source``
    comps = src.scaled(P, xp, standin=True)
    one = xp.where(neg, -1.0, 1.0)
    proxy = xp.where(nz, one, xp.where(neg, -0.0, 0.0))
    proxy = xp.where(special, xp.where(nan, xp.nan, one * xp.inf), proxy)
    return Rows(comps=comps, pre=P, proxy=proxy, cpow=4, source=src)


def _bitlen64(v, xp):
    """Bit length of uint64 values (0 for 0), exactly (two 32-bit halves through frexp)."""
    u = xp.uint64
    h = (v >> u(32)).astype(xp.float64)
    l_ = (v & u(0xFFFFFFFF)).astype(xp.float64)
    bh = xp.frexp(h)[1].astype(xp.int64)
    bl = xp.frexp(l_)[1].astype(xp.int64)
    return xp.where(h > 0, 32 + bh, xp.where(l_ > 0, bl, 0))


def complex_embedding(a, b, xp):
    """The real product whose result holds ``a @ b`` of complex operands.

    ``a`` (m, k), ``b`` (k, n) complex64/complex128 (a real operand is taken with a zero
    imaginary part, as numpy promotes it). Returns (A, B), A = [Ar | Ai] (m, 2k) and
    B = [[Br, Bi], [-Bi, Br]] (2k, 2n), float32 for complex64 else float64, C-contiguous, so
    that ``A @ B = [Re(ab) | Im(ab)]`` term by term:

    * column j:     sum_l Ar_il Br_lj - Ai_il Bi_lj = Re(ab)_ij,
    * column n + j: sum_l Ar_il Bi_lj + Ai_il Br_lj = Im(ab)_ij,

    and ``|A||B|`` is (|Ar||Br| + |Ai||Bi|, |Ar||Bi| + |Ai||Br|): the magnitudes the real and
    imaginary parts of a complex product are bounded against. Every term of the real product
    is a term of numpy's complex product, so the IEEE classes of non-finite inputs are the
    same as well. Column j and column n + j of B hold the same values up to sign and order,
    so their statistics (largest exponent, zero) and hence their shifts are equal.
    """
    dt, part = _complex_parts(a, b, xp)
    m, k = a.shape
    n = b.shape[1]
    A = xp.empty((m, 2 * k), dtype=dt)
    A[:, :k] = part(a.real)
    A[:, k:] = part(a.imag) if a.dtype.kind == "c" else 0
    B = xp.empty((2 * k, 2 * n), dtype=dt)
    _top_block_row(b, B[:k], part)
    B[k:, n:] = B[:k, :n]
    B[k:, :n] = _negated(B[:k, n:], xp) if b.dtype.kind == "c" else 0
    return A, B


def _complex_parts(a, b, xp):
    """(dtype, part) of a complex product's real operands: float32 where both operands are
    complex64/float32, else float64, and ``part`` turning a real or imaginary part into it
    (float32 parts widened exactly: a cupy cast would flush subnormals)."""
    dt = xp.float32 if a.dtype in (xp.complex64, xp.float32) and b.dtype in (xp.complex64, xp.float32) \
        else xp.float64

    def part(x):
        return as_float64(x) if dt == xp.float64 else x

    return dt, part


def _top_block_row(b, out, part):
    """``out`` (k, 2n) <- [Br | Bi], B's top block row of the real embedding."""
    n = b.shape[1]
    out[:, :n] = part(b.real)
    out[:, n:] = part(b.imag) if b.dtype.kind == "c" else 0


def complex_operands(a, b, xp):
    """What the complex forms (split, three-product) and their planner read of a product ``a @ b``
    (:func:`complex_embedding`'s shapes and dtypes): A's rows with the parts interleaved,
    (m, 2k) with entries 2l, 2l + 1 = Ar_il, Ai_il (the float view of a C-contiguous complex
    ``a`` of that precision itself, no copy), and B's top block row [Br | Bi] (k, 2n), which
    determines the rest of the embedding (:func:`ozgemm.precision.planner.statistics`)."""
    dt, part = _complex_parts(a, b, xp)
    m, k = a.shape
    n = b.shape[1]
    if a.dtype == (xp.complex64 if dt == xp.float32 else xp.complex128) and a.flags.c_contiguous:
        A = a.view(dt).reshape(m, 2 * k)
    else:
        A = xp.empty((m, 2 * k), dtype=dt)
        A[:, 0::2] = part(a.real)
        A[:, 1::2] = part(a.imag) if a.dtype.kind == "c" else 0
    B = xp.empty((k, 2 * n), dtype=dt)
    _top_block_row(b, B, part)
    return A, B


def _negated(x, xp):
    """-x exactly: the sign bit flipped as an integer (a cupy float32 negation is compiled with
    flush-to-zero and would turn subnormals into zeros)."""
    if xp is np or x.dtype != xp.float32:
        return -x
    return (xp.ascontiguousarray(x).view(xp.uint32) ^ xp.uint32(0x80000000)).view(xp.float32)

"""The slice-pair schedule of Ozaki scheme I: which products A_p B_q are computed.

With ``X = sum_p A_p 2**(w (s-1-p))`` (p = 0 the most significant slice) and likewise
``Y = sum_q B_q 2**(w (s-1-q))``, the exact product is
``X Y = sum_{p,q} A_p B_q 2**(w (2s-2-p-q))``. Products on one anti-diagonal ``t = p + q``
share the weight ``2**(w (2s-2-t))``, so their sum is **one** integer GEMM of the slices
concatenated along k: ``[A_p0 .. A_p1] @ [B_{t-p0} ; .. ; B_{t-p1}]`` (same multiply-adds as
the separate products, one output per diagonal; exact by the engine's k-blocking).

* ``"full"``: all s**2 pairs (diagonals t = 0 .. 2s-2). ``X Y`` exactly: no truncation.
* ``"triangular"``: the s(s+1)/2 pairs with p + q <= s-1 (Ozaki et al. 2012; ozIMMU). The
  dropped part is ``sum_{p=1}^{s-1} A_p 2**(w(s-1-p)) T_{s-p}(Y)`` with ``T_j(Y)`` the tail of
  Y from slice j on (the lowest w(s-j) bits, balanced): ``|A_p| <= 2**(w-1)`` and
  ``|T_j(Y)| <= H(w(s-j)) < (1 + 1/255) 2**(w(s-j)-1) <= (1 + 2**-7) 2**(w(s-j)-1)``
  (H(m) = 2**(w-1)(2**m-1)/(2**w-1) bounds the balanced range [-H, 2**m - 1 - H], w = 8), so each of the s-1 terms is at most
  ``(1 + 2**-7) 2**(w s - 2)`` per l and, summed over l,

      |X Y - kept|_ij <= (1 + 2**-7) (s - 1) k 2**(w s - 2)              (integer units).

  In units of ``2**(E_i + F_j)`` (i.e. after the scaling back by ``2**-(s_i + t_j)``,
  ``s_i = beta - E_i``) this is :func:`truncation_norm` = ``(1 + 2**-7)(s-1) k 2**(w s - 2 - 2 beta)``.
"""
from __future__ import annotations

from fractions import Fraction

__all__ = ["SCHEDULES", "n_products", "diagonals", "truncation_norm", "truncation_norm_exact"]

SCHEDULES = ("triangular", "full")


def n_products(s: int, schedule: str) -> int:
    """Slice-pair products (INT8 GEMM equivalents): s(s+1)/2 triangular, s**2 full."""
    return s * (s + 1) // 2 if schedule == "triangular" else s * s


def diagonals(s: int, schedule: str):
    """List of ``(t, p0, p1)``: diagonal t = p + q takes the A slices p0 <= p < p1 (most
    significant first) with the B slices q = t - p. Triangular: t = 0 .. s-1; full: 0 .. 2s-2."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; known: {SCHEDULES}")
    last = s - 1 if schedule == "triangular" else 2 * s - 2
    return [(t, max(0, t - s + 1), min(t, s - 1) + 1) for t in range(last + 1)]


def truncation_norm_exact(s: int, beta: int, k: int, schedule: str, w: int = 8) -> Fraction:
    """Proven bound on the dropped slice products in units of ``2**(E_i+F_j)``, exactly."""
    if schedule == "full" or s <= 1:
        return Fraction(0)
    return Fraction(129, 128) * (s - 1) * k * Fraction(2) ** (w * s - 2 - 2 * beta)


def truncation_norm(s: int, beta: int, k: int, schedule: str, w: int = 8) -> float:
    """:func:`truncation_norm_exact` as a float64 rounded up (0.0 for the full schedule)."""
    import math

    v = truncation_norm_exact(s, beta, k, schedule, w)
    try:
        f = float(v)
    except OverflowError:  # beyond float64 (hundreds of slices): no bound any plan can meet
        return math.inf
    return f if Fraction(f) >= v else math.nextafter(f, math.inf)

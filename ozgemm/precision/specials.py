"""Non-finite inputs: a small separate pass that never enters the integer path.

Every entry of a row of A (column of B) holding NaN or +-Inf is itself NaN or +-Inf in
IEEE arithmetic (x * NaN = NaN, Inf * 0 = NaN, Inf * y = +-Inf, and any sum holding such a
term is non-finite). So: rows/columns with non-finite values are zeroed for the integer
path, and the class of each of their entries is decided exactly from the terms' classes
(order-independent, identical on every backend). It equals numpy's class except where
numpy's float evaluation overflows a finite product or partial sum (docs/semantics.md).
"""
from __future__ import annotations

from ..contracts.contract import ContractError

__all__ = ["split_nonfinite", "patch_nonfinite", "NonFiniteInputs"]


class NonFiniteInputs(Exception):
    """Internal signal: a plan made on unchecked operands found (in its one device->host read)
    that they hold NaN/Inf; the caller sets those rows/columns aside and plans again."""


def split_nonfinite(a, b, contract, backend):
    """Return (a0, b0, bad_rows, bad_cols); a0/b0 are copies with non-finite rows/cols zeroed
    (the operands themselves, and None, None, when all are finite). The rows/columns come
    from the backend's non-finite pass (:meth:`~ozgemm.kernels.base.Backend.nonfinite_rows_cols`).

    Raises ContractError for non-finite input under ``specials = "raise"``.
    """
    xp = backend.xp
    bad_rows, bad_cols, any_bad = backend.nonfinite_rows_cols(a, b)
    if not any_bad:
        return a, b, None, None
    nbr, nbc = int(bad_rows.sum()), int(bad_cols.sum())
    if contract.specials == "raise":
        raise ContractError(
            f"contract {contract.name!r} has specials = \"raise\" and the operands hold non-finite "
            f"values ({nbr} row(s) of A, {nbc} column(s) of B)")
    a0 = xp.where(bad_rows[:, None], 0, a)
    b0 = xp.where(bad_cols[None, :], 0, b)
    return a0, b0, bad_rows, bad_cols


def _special_block(a, b, xp):
    """Exact IEEE class of every entry of ``a @ b`` where each entry has a non-finite term.

    A term a_l b_l is NaN if either factor is NaN or it is Inf * 0; it is +-Inf if a factor
    is infinite and the other is non-zero (sign = product of signs); finite terms, however
    large, never produce an infinity (the sum is exact). Entry = NaN if some term is NaN or
    +Inf and -Inf terms meet; else the infinity's sign. Counts come from float64 products of
    0/1 indicator matrices: every partial sum is an integer <= k < 2**53, hence exact.
    """
    f = xp.float64
    nan_a, nan_b = xp.isnan(a), xp.isnan(b)
    inf_a, inf_b = xp.isinf(a), xp.isinf(b)
    pos_a, neg_a = a > 0, a < 0  # infinities included, NaN excluded
    pos_b, neg_b = b > 0, b < 0
    zero_a, zero_b = a == 0, b == 0
    ones_a = xp.ones(a.shape, dtype=f)
    ones_b = xp.ones(b.shape, dtype=f)

    def mm(x, y):
        return xp.matmul(x.astype(f), y.astype(f))

    n_nan = mm(nan_a, ones_b) + mm(ones_a, nan_b) + mm(inf_a, zero_b) + mm(zero_a, inf_b)
    n_pos = (mm(inf_a & pos_a, pos_b) + mm(inf_a & neg_a, neg_b)
             + mm(pos_a & ~inf_a, inf_b & pos_b) + mm(neg_a & ~inf_a, inf_b & neg_b))
    n_neg = (mm(inf_a & pos_a, neg_b) + mm(inf_a & neg_a, pos_b)
             + mm(pos_a & ~inf_a, inf_b & neg_b) + mm(neg_a & ~inf_a, inf_b & pos_b))
    nan = (n_nan > 0) | ((n_pos > 0) & (n_neg > 0))
    return xp.where(nan, xp.nan, xp.where(n_pos > 0, xp.inf, -xp.inf))


def patch_nonfinite(c, a, b, bad_rows, bad_cols, xp):
    """Overwrite the rows/columns of ``c`` fed by non-finite operands with their IEEE class
    (NaN / +Inf / -Inf, see :func:`_special_block`)."""
    if bad_rows is None:
        return c
    if bool(bad_rows.any()):
        idx = xp.nonzero(bad_rows)[0]
        c[idx, :] = _special_block(a[idx, :], b, xp).astype(c.dtype)
    if bool(bad_cols.any()):
        idx = xp.nonzero(bad_cols)[0]
        c[:, idx] = _special_block(a, b[:, idx], xp).astype(c.dtype)
    return c

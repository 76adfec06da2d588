"""Non-finite inputs: a small separate pass that never enters the integer path.

Every entry of a row of A (column of B) holding NaN or +-Inf is itself NaN or +-Inf in
IEEE arithmetic (x * NaN = NaN, Inf * 0 = NaN, Inf * y = +-Inf, and any sum holding such a
term is non-finite). So: rows/columns with non-finite values are zeroed for the integer
path, and their result entries are recomputed in floating point on those rows/columns
alone, which yields exactly numpy's classes (NaN vs +Inf vs -Inf).
"""
from __future__ import annotations

from .contract import ContractError

__all__ = ["split_nonfinite", "patch_nonfinite"]


def split_nonfinite(a, b, contract, xp):
    """Return (a0, b0, bad_rows, bad_cols); a0/b0 are copies with non-finite rows/cols zeroed.

    Raises ContractError for non-finite input under ``specials = "raise"``.
    """
    fa = xp.isfinite(a)
    fb = xp.isfinite(b)
    bad_rows = ~fa.all(axis=1) if a.shape[1] else xp.zeros((a.shape[0],), dtype=bool)
    bad_cols = ~fb.all(axis=0) if b.shape[0] else xp.zeros((b.shape[1],), dtype=bool)
    nbr, nbc = int(bad_rows.sum()), int(bad_cols.sum())
    if nbr == 0 and nbc == 0:
        return a, b, None, None
    if contract.specials == "raise":
        raise ContractError(
            f"contract {contract.name!r} has specials = \"raise\" and the operands hold non-finite "
            f"values ({nbr} row(s) of A, {nbc} column(s) of B)")
    a0 = xp.where(bad_rows[:, None], 0, a)
    b0 = xp.where(bad_cols[None, :], 0, b)
    return a0, b0, bad_rows, bad_cols


def patch_nonfinite(c, a, b, bad_rows, bad_cols, xp):
    """Overwrite the non-finite rows/columns of ``c`` with their IEEE (NaN/Inf) values."""
    if bad_rows is None:
        return c
    with xp.errstate(invalid="ignore", over="ignore") if hasattr(xp, "errstate") else _null():
        if bool(bad_rows.any()):
            idx = xp.nonzero(bad_rows)[0]
            c[idx, :] = xp.matmul(a[idx, :], b).astype(c.dtype)
        if bool(bad_cols.any()):
            idx = xp.nonzero(bad_cols)[0]
            c[:, idx] = xp.matmul(a, b[:, idx]).astype(c.dtype)
    return c


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False

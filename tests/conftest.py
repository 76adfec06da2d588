import numpy as np
import pytest

from ozgemm.verify.inputs import phi_operands


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def stacked(monkeypatch):
    """Records whether each stacked computation (ozgemm.stacks) ran as one pass (True) or
    fell back to the per-product path (False)."""
    import ozgemm.stacks

    seen = []
    real = ozgemm.stacks.stacked_product

    def spy(*args, **kw):
        out = real(*args, **kw)
        seen.append(out is not None)
        return out

    monkeypatch.setattr(ozgemm.stacks, "stacked_product", spy)
    return seen


def phi_pair(rng, m, k, n, phi, dtype=np.float64):
    return phi_operands(rng, m, k, n, phi, dtype)


def assert_contract_kept(a, b, name):
    """ozgemm.matmul(a, b) under contract ``name`` (or a Contract) keeps its promise on every entry, checked
    exactly (ozgemm.verify: exact product, and term-by-term classes for NaN/Inf entries).
    Neither a refusal (ContractError) nor a breach is allowed."""
    import ozgemm
    from ozgemm.contracts.contract import as_contract
    from ozgemm.verify.audit import measure_any

    with np.errstate(all="ignore"):
        c = ozgemm.matmul(a, b, contract=name)
    s = measure_any(c, a, b, as_contract(name))
    assert s["breaches"] == 0, (a, b, c, s)


def _quad_word(neg: bool, sig: int, unit: int):
    """The binary128 encoding (lo, hi words) of (-1)**neg * sig * 2**unit, which must be exact
    in binary128 (test helper, written from IEEE 754's layout, independent of ozgemm)."""
    if sig == 0:
        return 0, int(neg) << 63
    nb = sig.bit_length()
    top = unit + nb  # the value lies in [2**(top-1), 2**top)
    if top - 1 >= -16382:  # normal: 113-bit significand, biased exponent top - 1 + 16383
        s, be = sig << (113 - nb), top - 1 + 16383
        assert 1 <= be <= 32766
    else:  # subnormal: units of 2**-16494
        assert unit >= -16494
        s, be = sig << (unit + 16494), 0
    return s & ((1 << 64) - 1), (int(neg) << 63) | (be << 48) | ((s >> 64) & ((1 << 48) - 1))


def binary128_of(rows):
    """ozgemm.Binary128 of nested lists of (neg, sig, unit) entries (:func:`_quad_word`)."""
    import ozgemm

    w = np.zeros((len(rows), len(rows[0]), 2), dtype=np.uint64)
    for i, row in enumerate(rows):
        for j, e in enumerate(row):
            w[i, j] = _quad_word(*e)
    return ozgemm.Binary128(w)

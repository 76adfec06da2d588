"""Stacks computed in one pass (ozgemm.stacks): bit-identical to the product-by-product
calls, for every shipped CRT contract, broadcast and shared operands, spreads that change
the moduli count between products, and the cases that take the per-product path."""
import numpy as np
import pytest

import ozgemm
import ozgemm.stacks
from ozgemm.verify.inputs import phi_matrix


def _bits(x):
    if isinstance(x, ozgemm.DD):
        return np.stack([x.hi, x.lo]).tobytes()
    if "Quad" in str(getattr(x, "dtype", "")):
        return ozgemm.quad_to_bits(x).tobytes()
    return np.asarray(x).tobytes() + str(np.asarray(x).dtype).encode()


def _loop(a, b, contract):
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    A = np.broadcast_to(a, shape + a.shape[-2:])
    B = np.broadcast_to(b, shape + b.shape[-2:])
    return [ozgemm.matmul(A[i], B[i], contract=contract) for i in np.ndindex(shape)]


@pytest.mark.parametrize("contract", ["fp64", "fp32", "dd", "fp128", "fp64-fast"])
@pytest.mark.parametrize("bshape", [(1, 9, 4), (9, 4), (12, 9, 4)])
@pytest.mark.parametrize("ashape", [(12, 5, 9), (1, 5, 9), (5, 9)])
def test_stack_equals_product_by_product(contract, bshape, ashape, stacked):
    if contract == "fp128":
        pytest.importorskip("numpy_quaddtype")
    rng = np.random.default_rng(len(bshape))
    dt = np.float32 if contract == "fp32" else np.float64
    a = phi_matrix(rng, (12, 5, 9), 0.5, dt)
    a[3] *= np.float32(2.0 ** 20) if dt == np.float32 else 2.0 ** 60  # a product needing more width
    a[5, 0] = 0.0  # a zero row
    a = a if len(ashape) == 3 and ashape[0] == 12 else a[3].reshape(ashape)  # or one (shared) A
    b = phi_matrix(rng, bshape, 2.0, dt)
    if b.ndim == 3 and b.shape[0] == 12:
        b[7] *= np.float32(2.0 ** -30) if dt == np.float32 else 2.0 ** -200  # products of other widths
    if a.shape[0] != 12 and b.shape[0] != 12:
        b = np.stack([b.reshape(9, 4)] * 12)  # a stack from the shared A
    got = ozgemm.matmul(a, b, contract=contract)
    assert stacked == [True]  # one pass, not the per-product fallback
    want = _loop(a, b, contract)
    for i, w in enumerate(want):
        assert _bits(got[i]) == _bits(w), i


def test_stack_with_nonfinite_or_wide_operands_takes_the_per_product_path():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((4, 3, 5)), rng.standard_normal((5, 2))
    a[1, 0, 0] = np.nan
    got = ozgemm.matmul(a, b)
    assert all(np.array_equal(got[i], ozgemm.matmul(a[i], b), equal_nan=True) for i in range(4))
    d = ozgemm.DD(rng.standard_normal((4, 3, 5)))
    got = ozgemm.matmul(d, b, contract="dd")
    assert all(np.array_equal(got.hi[i], ozgemm.matmul(d[i], b, contract="dd").hi) for i in range(4))


def test_stack_beyond_the_workspace_runs_product_by_product(stacked, monkeypatch):
    """A stack whose statistics and bound GEMM alone exceed the backend's workspace is not
    stacked (no allocation of them): the per-product path computes it, with the same bits."""
    from ozgemm.kernels import get_backend

    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((50, 40, 2)), rng.standard_normal((50, 2, 40))  # many outputs, short k
    want = ozgemm.matmul(a, b)
    assert stacked == [True]
    monkeypatch.setattr(get_backend("cpu"), "memory_budget_bytes", 100_000)  # one product fits, 8 P m n not
    got = ozgemm.matmul(a, b)
    assert stacked == [True, False]
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_stack_cauchy_schwarz_roots_are_exact():
    """The stack planner's roots ceil(sqrt(x y)) against math.isqrt on Python integers:
    random sizes up to 2**62 per factor, exact squares and their neighbours (where the float
    estimate is ambiguous), zeros, and roots at the table clamp."""
    import math
    import random

    from ozgemm.stacks import _NUM_MAX, _ceil_sqrt_products
    rng = random.Random(7)
    x = [rng.randrange(0, 1 << rng.randrange(1, 63)) for _ in range(30000)]
    y = [rng.randrange(0, 1 << rng.randrange(1, 63)) for _ in range(30000)]
    for r in list(range(0, 300)) + [2**26 + 1, 2**31 - 1, 2**40 + 3, 3037000499, 2**52 + 1, 2**61 - 1]:
        for d in (-1, 0, 1):
            if 0 <= r * r + d < 2**63:
                x.append(r * r + d)
                y.append(1)
        x.append(r)
        y.append(r)
    got = _ceil_sqrt_products(np.array(x, dtype=np.int64), np.array(y, dtype=np.int64))
    want = [min(math.isqrt(a * b - 1) + 1 if a * b else 0, _NUM_MAX) for a, b in zip(x, y)]
    assert got.dtype == np.int64 and got.tolist() == want


@pytest.mark.parametrize("contract", ["fp64", "dd", "fp32"])
@pytest.mark.parametrize("shapes", [((30, 5, 9), (1, 9, 4)), ((30, 5, 9), (30, 9, 4)), ((1, 5, 9), (30, 9, 4))])
def test_stack_in_chunks_equals_product_by_product(contract, shapes, stacked, monkeypatch):
    """Groups cut into chunks of a few products (a small Backend.stack_chunk_bytes), products of
    several widths and moduli counts among them: every product bit-identical to its 2-D call."""
    from ozgemm.kernels import get_backend

    rng = np.random.default_rng(11)
    dt = np.float32 if contract == "fp32" else np.float64
    a, b = phi_matrix(rng, shapes[0], 1.0, dt), phi_matrix(rng, shapes[1], 1.0, dt)
    if a.shape[0] > 1:
        a[::7] *= dt(2.0 ** 20)  # other widths (and moduli counts) every seventh product
    else:
        b[::7] *= dt(2.0 ** -20)
    be = get_backend("cpu")
    monkeypatch.setattr(be, "stack_chunk_bytes", 1)  # one product per chunk: each product's
    monkeypatch.setattr(type(be), "stack_workspace", lambda self, N, Q, m, n, k, shared=None: Q)  # 1 byte
    monkeypatch.setattr(ozgemm.stacks, "_CHUNK_ROWS", 1)
    got = ozgemm.matmul(a, b, contract=contract)
    assert stacked == [True]
    for i, w in enumerate(_loop(a, b, contract)):
        assert _bits(got[i]) == _bits(w), i


@pytest.mark.parametrize("shared", ["a", "b"])
def test_a_shared_operands_residues_are_computed_once_per_group_not_per_chunk(shared, monkeypatch):
    """With groups cut into many chunks, the shared operand's residues are computed once per
    group (a call of stack_residues without products), the other operand's once per chunk;
    results bit-identical to the 2-D calls."""
    from ozgemm.kernels import get_backend

    be = get_backend("cpu")
    rng = np.random.default_rng(12)
    scale = np.ldexp(1.0, np.arange(24) * 3)[:, None, None]  # one plan for all: a group of 24 products
    a = phi_matrix(rng, (1, 6, 40), 0.5) * (1.0 if shared == "a" else scale)
    b = phi_matrix(rng, (1, 40, 5), 0.5) * (1.0 if shared == "b" else scale)
    calls = []
    real = type(be).stack_residues
    monkeypatch.setattr(type(be), "stack_residues", lambda self, st, sel, *r: calls.append(sel is None) or
                        real(self, st, sel, *r))
    monkeypatch.setattr(be, "stack_chunk_bytes", 1)  # one product per chunk: each product's
    monkeypatch.setattr(type(be), "stack_workspace", lambda self, N, Q, m, n, k, shared=None: Q)  # 1 byte
    monkeypatch.setattr(ozgemm.stacks, "_CHUNK_ROWS", 1)
    got = ozgemm.matmul(a, b)
    assert calls.count(True) == 1 and calls.count(False) == 24  # once for the group; once per chunk
    for i, w in enumerate(_loop(a, b, "fp64")):
        assert _bits(got[i]) == _bits(w), i


def test_a_group_whose_products_each_exceed_the_chunk_runs_whole(monkeypatch):
    """Products whose own workspace exceeds stack_chunk_bytes gain nothing from chunks of one:
    the group runs as one set of calls (one residue pass per operand), bit-identical."""
    from ozgemm.kernels import get_backend

    be = get_backend("cpu")
    rng = np.random.default_rng(13)
    scale = np.ldexp(1.0, np.arange(6) * 5)[:, None, None]  # one plan for all
    a, b = phi_matrix(rng, (1, 7, 30), 0.5) * scale, phi_matrix(rng, (1, 30, 9), 0.5) * scale
    calls = []
    real = type(be).stack_residues
    monkeypatch.setattr(type(be), "stack_residues", lambda self, *r: calls.append(1) or real(self, *r))
    monkeypatch.setattr(be, "stack_chunk_bytes", 100)  # below one product's workspace
    got = ozgemm.matmul(a, b)
    assert len(calls) == 2
    for i, w in enumerate(_loop(a, b, "fp64")):
        assert _bits(got[i]) == _bits(w), i

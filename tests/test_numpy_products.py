"""dot, vdot, inner, tensordot and two-operand einsum: numpy's shapes and axes, each entry
one contract-kept dot product (the same bits as the equivalent 2-D matmul)."""
import numpy as np
import pytest

import ozgemm
from ozgemm.verify.reference import exact_product, measure


@pytest.fixture
def rng():
    return np.random.default_rng(11)


def _same(x, y):
    return np.asarray(x).shape == np.asarray(y).shape and np.array_equal(np.asarray(x), np.asarray(y))


def test_shapes_follow_numpy(rng):
    a, b, c = rng.standard_normal((3, 4, 5)), rng.standard_normal((5, 6)), rng.standard_normal((2, 5, 7))
    d = rng.standard_normal((2, 5))
    cases = [
        (ozgemm.dot(a, c), np.dot(a, c)), (ozgemm.dot(a[0], b), np.dot(a[0], b)),
        (ozgemm.dot(a, b[:, 0]), np.dot(a, b[:, 0])), (ozgemm.inner(a, d), np.inner(a, d)),
        (ozgemm.tensordot(a, b, 1), np.tensordot(a, b, 1)),
        (ozgemm.tensordot(a, a, axes=([1, 2], [1, 2])), np.tensordot(a, a, axes=([1, 2], [1, 2]))),
        (ozgemm.tensordot(a, c, axes=(2, 1)), np.tensordot(a, c, axes=(2, 1))),
        (ozgemm.einsum("bij,jk->bik", a, b), np.einsum("bij,jk->bik", a, b)),
        (ozgemm.einsum("bij,bjk->bki", a[:2], c), np.einsum("bij,bjk->bki", a[:2], c)),
        (ozgemm.einsum("ij,kj", a[0], d), np.einsum("ij,kj", a[0], d)),
        (ozgemm.vdot(a, a), np.vdot(a, a)),
    ]
    for got, want in cases:
        got, want = np.asarray(got), np.asarray(want)
        assert got.shape == want.shape
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12)


def test_entries_are_the_2d_products(rng):
    """tensordot's entries are the bits of the matmul of the reshaped operands; that product
    keeps the fp64 promise against the exact reference."""
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((4, 5, 6))
    got = ozgemm.tensordot(a, b, axes=2)
    a2, b2 = a.reshape(3, 20), b.reshape(20, 6)
    assert _same(got, ozgemm.matmul(a2, b2))
    assert measure(got, exact_product(a2, b2), ozgemm.load_contract("fp64")).breaches == 0
    e = ozgemm.einsum("bij,bjk->bik", a[:, :, :4], rng.standard_normal((3, 4, 2)))
    assert e.shape == (3, 4, 2)


def test_unsupported_forms_are_typed_errors(rng):
    a = rng.standard_normal((4, 4))
    with pytest.raises(ValueError, match="repeated"):
        ozgemm.einsum("ii,ij->j", a, a)
    with pytest.raises(ValueError, match="ellipses"):
        ozgemm.einsum("...i,ij->...j", a, a)
    with pytest.raises(ValueError, match="one operand only"):
        ozgemm.einsum("ij,jk->k", a, a)
    with pytest.raises(ValueError, match="shape mismatch"):
        ozgemm.tensordot(a, rng.standard_normal((3, 4)), axes=([1], [0]))
    with pytest.raises(ValueError, match="elements"):
        ozgemm.vdot(a, a[:2])
    with pytest.raises(TypeError, match="tensor forms"):
        ozgemm.tensordot(ozgemm.DD(a), a)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_axes_empty_sums_and_result_types_like_numpy(rng):
    a = rng.standard_normal((3, 3))
    with pytest.raises(IndexError):
        ozgemm.tensordot(a, a, ([2], [0]))
    with pytest.raises(IndexError):
        ozgemm.tensordot(a, a, ([0], [3]))
    with pytest.raises(IndexError):
        ozgemm.tensordot(np.ones(3), np.ones(3), 2)
    assert ozgemm.inner(np.ones(0), np.ones(0)) == np.inner(np.ones(0), np.ones(0)) == 0.0
    assert isinstance(ozgemm.inner(np.ones(3), np.ones(3)), np.float64)
    assert np.array_equal(ozgemm.tensordot(np.ones((3, 0)), np.ones((0, 2)), 1), np.zeros((3, 2)))
    assert type(ozgemm.dot(np.matrix(a), a)) is np.matrix
    with pytest.raises(ValueError, match="letters"):
        ozgemm.einsum("i1,1k->ik", a, a)
    with pytest.raises(TypeError, match="string"):
        ozgemm.einsum(3, a, a)

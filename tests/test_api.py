"""numpy.matmul semantics, dtypes, out=, bad input, specials, plans."""
import numpy as np
import pytest

import ozgemm
from ozgemm import ContractError


def ro(x):
    x = x.copy()
    x.setflags(write=False)
    return x


@pytest.mark.parametrize("sa,sb", [
    ((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)), ((2, 4, 5), (5, 3)), ((4, 5), (3, 5, 2)),
    ((2, 1, 4, 5), (3, 5, 2)), ((1, 4, 5), (2, 5, 3)), ((4, 0), (0, 3)), ((0, 5), (5, 3)),
])
def test_shapes_follow_numpy(rng, sa, sb):
    a = ro(rng.standard_normal(sa))
    b = ro(rng.standard_normal(sb))
    a0, b0 = a.copy(), b.copy()
    c = ozgemm.matmul(a, b)
    want = np.matmul(a, b)
    assert c.shape == want.shape and c.dtype == np.float64
    # values: each batch entry equals the 2-D product computed alone (bit-identical)
    assert np.allclose(c, want, rtol=1e-13, atol=1e-13)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)  # inputs never modified


def test_batch_equals_separate_products_bitwise(rng):
    a = rng.standard_normal((3, 6, 7))
    b = rng.standard_normal((7, 5))
    c = ozgemm.matmul(a, b)
    for i in range(3):
        assert np.array_equal(c[i], ozgemm.matmul(a[i], b))


def test_k_zero_gives_zeros():
    c = ozgemm.matmul(np.zeros((3, 0)), np.zeros((0, 2)))
    assert c.shape == (3, 2) and not c.any()


def test_transposed_and_noncontiguous_views(rng):
    a = rng.standard_normal((9, 12))
    b = rng.standard_normal((12, 7))
    base = ozgemm.matmul(a, b)
    assert np.array_equal(ozgemm.matmul(np.asfortranarray(a), b), base)
    assert np.array_equal(ozgemm.matmul(a.T.copy().T, b.T.copy().T), base)
    big = np.zeros((18, 24))
    big[::2, ::2] = a
    assert np.array_equal(ozgemm.matmul(big[::2, ::2], b), base)
    assert np.array_equal(ozgemm.matmul(a[::-1], b)[::-1], base)


def test_out(rng):
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((5, 3))
    out = np.empty((4, 3))
    r = ozgemm.matmul(a, b, out=out)
    assert r is out and np.array_equal(out, ozgemm.matmul(a, b))
    with pytest.raises(ValueError, match="shape"):
        ozgemm.matmul(a, b, out=np.empty((3, 4)))
    # out positional, as numpy takes it
    out2 = np.empty((4, 3))
    assert ozgemm.matmul(a, b, out2) is out2 and np.array_equal(out2, out)


def test_out_casting_like_numpy(rng):
    """numpy's same_kind rule: a float64 result into a float32 out is cast (RN, as numpy
    casts); into an int32 out it is a TypeError, as numpy raises."""
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((5, 3))
    o32 = np.empty((4, 3), dtype=np.float32)
    assert ozgemm.matmul(a, b, out=o32) is o32
    assert np.array_equal(o32, ozgemm.matmul(a, b).astype(np.float32))
    np.matmul(a, b, out=np.empty((4, 3), dtype=np.float32))  # numpy accepts it too
    with pytest.raises(TypeError):
        np.matmul(a, b, out=np.empty((4, 3), dtype=np.int32))
    with pytest.raises(TypeError, match="same_kind"):
        ozgemm.matmul(a, b, out=np.empty((4, 3), dtype=np.int32))


def test_out_may_overlap_an_operand(rng):
    """``a @= b`` works: the product is computed first, then written."""
    sq = rng.standard_normal((4, 4))
    other = rng.standard_normal((4, 4))
    want = ozgemm.matmul(sq, other)
    x = sq.copy()
    assert ozgemm.matmul(x, other, out=x) is x and np.array_equal(x, want)
    y = sq.copy()
    ozgemm.matmul(y, y, out=y)
    assert np.array_equal(y, ozgemm.matmul(sq, sq))


def test_vector_out_shapes_like_numpy():
    """1-D @ 1-D into a 0-d out, or into a (1, 1) out as numpy allows."""
    v = np.array([1.0, 2.0, 3.0])
    for shape in ((), (1, 1)):
        o = np.empty(shape)
        want = np.empty(shape)
        np.matmul(v, v, out=want)
        assert ozgemm.matmul(v, v, out=o) is o and np.array_equal(o, want)


def test_dtypes(rng):
    """Without a contract the operands' precision decides and the result dtype is numpy's:
    float32 @ float32 -> fp32 (float32), float32 @ float64 -> fp64 (float64)."""
    a32 = rng.standard_normal((4, 5)).astype(np.float32)
    b32 = rng.standard_normal((5, 3)).astype(np.float32)
    c = ozgemm.matmul(a32, b32)
    assert c.dtype == np.matmul(a32, b32).dtype == np.float32
    assert np.array_equal(c, ozgemm.matmul(a32, b32, contract="fp32"))
    mixed = ozgemm.matmul(a32, b32.astype(np.float64))
    assert mixed.dtype == np.matmul(a32, b32.astype(np.float64)).dtype == np.float64
    # an explicit binary64 contract on float32 operands (exact in binary64) returns float64
    c = ozgemm.matmul(a32, b32, contract="fp64")
    assert c.dtype == np.float64
    assert np.array_equal(c, ozgemm.matmul(a32.astype(np.float64), b32.astype(np.float64)))
    with pytest.raises(TypeError, match="float32"):
        ozgemm.matmul(a32.astype(np.float64), b32, contract="fp32")
    assert ozgemm.default_contract(ozgemm.DD(np.ones(2)), np.ones(2)) == "dd"
    assert ozgemm.default_contract(a32, b32) == "fp32"
    assert ozgemm.default_contract(a32, b32.astype(np.float64)) == "fp64"


@pytest.mark.parametrize("bad", [
    np.ones((2, 2), dtype=np.clongdouble), np.ones((2, 2), dtype=np.int64), np.ones((2, 2), dtype=object),
    np.ones((2, 2), dtype=bool), np.ones((2, 2), dtype=np.float16),
])
def test_unsupported_dtypes(bad):
    with pytest.raises(TypeError, match="dtype"):
        ozgemm.matmul(bad, np.ones((2, 2)))


def test_bad_inputs():
    # array-likes are read as numpy reads them; scalars are a ValueError, as in numpy
    assert np.array_equal(ozgemm.matmul([[1.0, 2.0]], np.ones((2, 1))), np.matmul([[1.0, 2.0]], np.ones((2, 1))))
    assert np.array_equal(ozgemm.matmul(((1.0, 2.0),), [3.0, 4.0]), np.matmul(((1.0, 2.0),), [3.0, 4.0]))
    with pytest.raises(ValueError):
        np.matmul(np.ones((2, 2)), 3.0)
    with pytest.raises(ValueError, match="0-dimensional"):
        ozgemm.matmul(np.ones((2, 2)), 3.0)
    with pytest.raises(TypeError, match="dtype int64"):
        ozgemm.matmul([[1, 2]], np.ones((2, 1)))  # integers: a contract takes floats
    with pytest.raises(TypeError, match="cannot be read as an array"):
        ozgemm.matmul([[1.0, 2.0], [3.0]], np.ones((2, 1)))
    with pytest.raises(ValueError, match="inner dimensions"):
        ozgemm.matmul(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="0-dimensional"):
        ozgemm.matmul(np.array(1.0), np.ones((1, 1)))
    with pytest.raises(ValueError, match="broadcast"):
        ozgemm.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 2)))
    with pytest.raises(ContractError, match="unknown contract"):
        ozgemm.matmul(np.ones((2, 2)), np.ones((2, 2)), contract="fp65")
    with pytest.raises(TypeError):
        ozgemm.matmul(np.ones((2, 2)), np.ones((2, 2)), contract=3)


def test_specials_classes_like_numpy():
    inf, nan = np.inf, np.nan
    a = np.array([[1.0, 2.0], [inf, 1.0], [nan, 0.0], [inf, 0.0], [1.0, 1.0]])
    b = np.array([[1.0, 0.0, -inf], [1.0, 1.0, 1.0]])
    with np.errstate(invalid="ignore"):
        want = a @ b
    got = ozgemm.matmul(a, b)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    fin = ~np.isnan(want)
    assert np.array_equal(got[fin], want[fin])  # finite entries exact here, +-inf classes match
    with pytest.raises(ContractError, match="non-finite"):
        ozgemm.matmul(a, b, contract=ozgemm.load_contract("fp64").with_(specials="raise"))


def test_overflow_to_inf_and_underflow():
    big = np.array([[1e308, 1e308]])
    assert ozgemm.matmul(big, np.array([[1.0], [1.0]]))[0, 0] == np.inf
    assert ozgemm.matmul(-big, np.array([[1.0], [1.0]]))[0, 0] == -np.inf
    tiny = np.array([[2.0 ** -1074]])
    assert ozgemm.matmul(tiny, np.array([[0.5]]))[0, 0] == 0.0  # tie to even
    assert ozgemm.matmul(tiny, np.array([[0.75]]))[0, 0] == 2.0 ** -1074


def test_plan_info(rng):
    a, b = rng.standard_normal((8, 9)), rng.standard_normal((9, 4))
    p = ozgemm.plan(a, b)
    info = p.info()
    assert info["n_moduli"] == len(p.moduli) and info["bits"] == 53
    assert p.scaling_error_bound().shape == (8, 4)
    f = ozgemm.plan(a, b, "fp64-fast")
    assert f.n_moduli <= 17 and f.info()["widened"].startswith("auto:") and f.int8_gemms == f.n_moduli
    with pytest.raises(ValueError):
        ozgemm.plan(np.ones((2, 2, 2)), np.ones((2, 2)))


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_numpy_semantics_details(rng):
    x = rng.standard_normal((2, 3))
    assert np.array_equal(ozgemm.matmul(x.astype(">f8"), x.T), ozgemm.matmul(x, x.T))  # big-endian
    s = ozgemm.matmul(np.ones(3), np.ones(3))
    assert isinstance(s, np.float64) and s == 3.0  # scalar like numpy
    assert np.array_equal(ozgemm.matmul(np.matrix(x), x.T), ozgemm.matmul(x, x.T))
    assert type(ozgemm.matmul(np.matrix(x), x.T)) is type(np.matmul(np.matrix(x), x.T)) is np.matrix

    class Sub(np.ndarray):
        pass

    assert type(ozgemm.matmul(x.view(Sub), x.T)) is type(np.matmul(x.view(Sub), x.T)) is Sub
    assert type(ozgemm.matmul(x, x.T.view(Sub))) is Sub
    with pytest.raises(TypeError, match="masked"):
        ozgemm.matmul(np.ma.masked_array(x), x.T)
    with pytest.raises(TypeError, match="out must be"):
        ozgemm.matmul(x, x.T, out=[0.0])
    ro_out = np.empty((2, 2))
    ro_out.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        ozgemm.matmul(x, x.T, out=ro_out)


def test_overflow_threshold_allowance():
    """Near the overflow threshold the result may be +-inf although RN(AB) is finite, when
    |AB| + bound reaches the threshold (README); the audit accepts exactly that."""
    from ozgemm.verify.reference import exact_product, measure

    mx = np.finfo(float).max
    a = np.array([[mx, 2.0 ** 970, -(2.0 ** 900)]])
    b = np.ones((3, 1))
    c = ozgemm.matmul(a, b)
    assert measure(c, exact_product(a, b), ozgemm.load_contract("fp64")).breaches == 0


def test_pytorch_operands_come_back_as_tensors(rng):
    """Operands from PyTorch (CPU tensors: read through numpy's array protocols) give a
    tensor of numpy's result dtype with the bits of the numpy call."""
    torch = pytest.importorskip("torch")
    a, b = rng.standard_normal((5, 7)), rng.standard_normal((7, 3))
    c = ozgemm.matmul(torch.from_numpy(a), torch.from_numpy(b))
    assert isinstance(c, torch.Tensor) and c.dtype == torch.float64
    assert np.array_equal(c.numpy(), ozgemm.matmul(a, b))
    c32 = ozgemm.matmul(torch.from_numpy(a.astype(np.float32)), b.astype(np.float32))
    assert isinstance(c32, torch.Tensor) and c32.dtype == torch.float32
    assert np.array_equal(c32.numpy(), ozgemm.matmul(a.astype(np.float32), b.astype(np.float32)))


@pytest.mark.parametrize("sa,sb,so", [
    ((3,), (3,), ()), ((3,), (3,), (1, 1)), ((3,), (3,), (2,)), ((3, 3), (3,), (3, 1)), ((3, 3), (3,), (1, 3)),
    ((3, 3), (3,), (3, 3)), ((3,), (3, 3), (3, 3)), ((2, 3, 3), (3, 3), (1, 2, 3, 3)), ((3, 3), (3, 3), (2, 3, 3)),
    ((3, 3), (3, 3), (3, 2)),
])
def test_out_shapes_accepted_as_numpy_accepts_them(sa, sb, so):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    try:
        want = np.zeros(so)
        np.matmul(a, b, out=want)
    except ValueError:
        with pytest.raises(ValueError):
            ozgemm.matmul(a, b, out=np.zeros(so))
        return
    got = np.zeros(so)
    assert ozgemm.matmul(a, b, out=got) is got
    assert np.allclose(got, want, rtol=1e-14, atol=1e-14)


def test_pytorch_wide_results_and_vector_dot():
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(np.random.default_rng(1).standard_normal((3, 3)))
    assert isinstance(ozgemm.matmul(t, t, contract="dd"), ozgemm.DD)
    r = ozgemm.matmul(t[0], t[0])
    assert isinstance(r, torch.Tensor) and r.ndim == 0
    with pytest.raises(TypeError, match="detach"):
        ozgemm.matmul(t.clone().requires_grad_(), t)

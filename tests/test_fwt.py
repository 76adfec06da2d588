"""CPU tests of ozgemm.fwt against independent references.

References are built without the code under test: integer products with
``scipy.linalg.hadamard`` (natural order), Hadamard rows sorted by their number of sign
changes (sequency order), sympy's ``fwht`` and the documented MATLAB/sympy examples,
Python-int / Fraction arithmetic, and a direct O(4**n) Walsh sum for Boolean functions.
"""
from __future__ import annotations

import argparse
from fractions import Fraction

import numpy as np
import pytest
import scipy.linalg

from ozgemm.fwt import fwht, ifwht, sequency_permutation, walsh_spectrum

POW2 = [1 << k for k in range(13)]  # n = 1 .. 2**12


def _hadamard(n):
    return scipy.linalg.hadamard(n, dtype=np.int64) if n > 1 else np.ones((1, 1), np.int64)


def _sequency_matrix(H):
    """Rows of H sorted by number of sign changes (independent of the code under test)."""
    changes = (np.diff(H, axis=1) != 0).sum(axis=1)
    assert sorted(changes.tolist()) == list(range(H.shape[0]))  # one row per sequency
    return H[np.argsort(changes)]


def _ro(a):
    a = np.array(a)
    a.setflags(write=False)
    return a


# ------------------------------------------------------------------ conventions, exact
@pytest.mark.parametrize("n", POW2)
def test_natural_order_is_scipy_hadamard_exact(n):
    rng = np.random.default_rng(n)
    x = _ro(rng.integers(-1000, 1000, size=(2, n)))
    H = _hadamard(n)
    want = x @ H.T  # |entries| <= 1000 * 4096: exact in int64
    got = fwht(x)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
    # inverse: sympy/numpy "backward" convention divides by n (exact in float64 here)
    back = ifwht(got)
    assert back.dtype == np.float64
    np.testing.assert_array_equal(back, x.astype(np.float64))


@pytest.mark.parametrize("n", POW2)
def test_sequency_order_matches_sign_change_sorting(n):
    rng = np.random.default_rng(100 + n)
    x = _ro(rng.integers(-1000, 1000, size=(3, n)))
    Wseq = _sequency_matrix(_hadamard(n))
    np.testing.assert_array_equal(fwht(x, order="sequency"), x @ Wseq.T)
    np.testing.assert_array_equal(sequency_permutation(n), np.argsort((np.diff(_hadamard(n), axis=1) != 0).sum(1)))
    # MATLAB: fwht(x) = Wseq x / N (sequency, divide by N); ifwht(y) = Wseq^T y (unscaled)
    y = fwht(x, order="sequency", norm="forward")
    num = x @ Wseq.T
    exp = np.array([[float(Fraction(int(v), n)) for v in row] for row in num])
    np.testing.assert_array_equal(y, exp)
    inv = ifwht(num, order="sequency", norm="forward")
    np.testing.assert_array_equal(inv, num @ Wseq)  # Wseq^T y, row-wise
    np.testing.assert_array_equal(inv, n * x)


def test_matlab_documented_example():
    # MATLAB documentation, fwht: x = [19 -1 11 -9 -7 13 -15 5]; y = fwht(x) -> [2 3 0 4 0 0 10 0]
    x = _ro([19, -1, 11, -9, -7, 13, -15, 5])
    np.testing.assert_array_equal(fwht(x, order="sequency", norm="forward"), [2, 3, 0, 4, 0, 0, 10, 0])
    np.testing.assert_array_equal(ifwht(_ro([2, 3, 0, 4, 0, 0, 10, 0]), order="sequency", norm="forward"), x)


def test_sympy_documented_examples():
    # sympy.discrete.transforms docstrings: fwht([4,2,2,0,0,2,-2,0]) = [8,0,8,0,8,8,0,0];
    # ifwht([19,-1,11,-9,-7,13,-15,5]) = [2,0,4,0,3,10,0,0]
    np.testing.assert_array_equal(fwht(_ro([4, 2, 2, 0, 0, 2, -2, 0])), [8, 0, 8, 0, 8, 8, 0, 0])
    np.testing.assert_array_equal(ifwht(_ro([19, -1, 11, -9, -7, 13, -15, 5])), [2, 0, 4, 0, 3, 10, 0, 0])


@pytest.mark.parametrize("n", POW2)
def test_against_sympy_fwht(n):
    sympy_tr = pytest.importorskip("sympy.discrete.transforms")
    rng = np.random.default_rng(7 * n + 1)
    x = rng.integers(-50, 50, size=n)
    want = [int(v) for v in sympy_tr.fwht([int(v) for v in x])]
    assert fwht(_ro(x)).tolist() == want
    winv = sympy_tr.ifwht([int(v) for v in x])
    assert ifwht(_ro(x)).tolist() == [float(Fraction(int(v.p), int(v.q))) for v in winv]


# ------------------------------------------------------------------ norms, inverse
@pytest.mark.parametrize("order", ["natural", "sequency"])
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_roundtrip_and_scaling(norm, order):
    rng = np.random.default_rng(3)
    for L in (0, 1, 4, 9):
        n = 1 << L
        x = _ro(rng.integers(-100, 100, size=(4, n)))
        base = x @ (_hadamard(n) if order == "natural" else _sequency_matrix(_hadamard(n))).T
        c = {"backward": 1.0, "ortho": n**-0.5, "forward": 1.0 / n}[norm]
        y = fwht(x.astype(np.float64), norm=norm, order=order)
        np.testing.assert_allclose(y, base * c, rtol=1e-15, atol=0)
        np.testing.assert_allclose(ifwht(y, norm=norm, order=order), x, rtol=0, atol=1e-12 * 100)
        # integers: exact sums, scaled once in float64
        yi = fwht(x, norm=norm, order=order)
        np.testing.assert_array_equal(yi, base if c == 1.0 else base.astype(np.float64) * c)


def test_ortho_scale_correctly_rounded():
    for L in range(0, 17):
        x = np.ones(1 << L, dtype=np.float64)
        x[1:] = 0  # y = c * [1, 1, ..., 1]
        c = fwht(x, norm="ortho")[0]
        want = float(Fraction(1) / Fraction(2) ** (L // 2)) if L % 2 == 0 else None
        if want is not None:
            assert c == want
        else:  # correctly rounded 2**(-L/2): check the two neighbours are worse
            exact_sq = Fraction(1, 2**L)
            err = abs(Fraction(c) ** 2 - exact_sq)
            for nb in (np.nextafter(c, 0), np.nextafter(c, 1)):
                assert abs(Fraction(float(nb)) ** 2 - exact_sq) >= err


# ------------------------------------------------------------------ dtypes, exactness
@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64])
def test_integer_dtypes_exact(dt):
    info = np.iinfo(dt)
    rng = np.random.default_rng(5)
    n = 256
    x = _ro(rng.integers(max(info.min, -(2**40)), min(info.max, 2**40), size=(3, n), dtype=dt, endpoint=True))
    x_py = [[int(v) for v in row] for row in x]
    H = _hadamard(n).tolist()
    want = [[sum(h * v for h, v in zip(Hr, row)) for Hr in H] for row in x_py]  # Python ints
    got = fwht(x)
    assert got.dtype == np.int64
    assert got.tolist() == want


def test_int64_overflow_raises_and_object_is_exact():
    x = np.full(4, 2**62, dtype=np.int64)  # y[0] = 2**64 does not fit
    with pytest.raises(OverflowError, match="int64"):
        fwht(x)
    y = fwht(x.astype(object))
    assert y.tolist() == [2**64, 0, 0, 0]
    # large entries but small row L1 norm: allowed and exact
    x = np.array([2**62, 0, 0, 0], dtype=np.int64)
    assert fwht(x).tolist() == [2**62] * 4
    x = np.array([2**60] * 4, dtype=np.int64)
    assert fwht(x).tolist() == [2**62, 0, 0, 0]
    with pytest.raises(OverflowError):
        fwht(np.array([2**64 - 1, 0], dtype=np.uint64))


def test_int64_min_not_misread():
    x = np.array([np.iinfo(np.int64).min, 0], dtype=np.int64)  # |x| = 2**63: y cannot fit
    with pytest.raises(OverflowError):
        fwht(x)


@pytest.mark.parametrize("dt,u,kbits", [(np.float32, 2.0**-24, 20), (np.float16, 2.0**-24, 10), (np.float64, 2.0**-53, 40)])
def test_float_error_within_apriori_bound(dt, u, kbits):
    # inputs x = k * 2**-kbits with |k| < 2**kbits: exact in dt; the exact transform is the
    # int64 product (k @ H^T) * 2**-kbits (|.| < 2**53: exact in float64)
    rng = np.random.default_rng(11)
    for L in (1, 5, 10, 12):
        n = 1 << L
        k = rng.integers(-(2**kbits) + 1, 2**kbits, size=(8, n))
        x = _ro((k * 2.0**-kbits).astype(dt))
        assert np.array_equal(x.astype(np.float64), k * 2.0**-kbits)
        ref = (k @ _hadamard(n).T) * 2.0**-kbits
        y = fwht(x)
        assert y.dtype == dt
        l1 = np.abs(x.astype(np.float64)).sum(axis=1, keepdims=True)
        gamma = L * u / (1 - L * u)
        extra = np.abs(ref) * (2.0**-11 if dt == np.float16 else 0.0)  # final float16 rounding
        err = np.abs(y.astype(np.float64) - ref)
        assert np.all(err <= gamma * l1 + extra)
        if dt == np.float32 and L >= 10:
            assert err.max() > 0  # the test data do exercise rounding


def test_float16_is_one_rounding_of_float32_sums():
    # integer-valued float16 inputs: float32 sums are exact (< 2**24), so the result is
    # the exact integer rounded once to float16
    rng = np.random.default_rng(2)
    n = 4096
    x = rng.integers(-64, 64, size=(2, n))
    got = fwht(_ro(x.astype(np.float16)))
    want = (x @ _hadamard(n).T).astype(np.float16)
    np.testing.assert_array_equal(got, want)


def test_axis_and_batch_shapes():
    rng = np.random.default_rng(9)
    x = _ro(rng.integers(-9, 9, size=(4, 8, 16)))
    for axis, n in ((0, 4), (1, 8), (2, 16), (-1, 16), (-2, 8)):
        H = _hadamard(n)
        want = np.moveaxis(np.moveaxis(x, axis, -1) @ H.T, -1, axis)
        np.testing.assert_array_equal(fwht(x, axis=axis), want)
    assert fwht(np.zeros((0, 8))).shape == (0, 8)


def test_input_not_modified_and_out():
    rng = np.random.default_rng(1)
    for dt in (np.float16, np.float32, np.float64, np.int32, np.int64):
        x = _ro(rng.integers(-5, 5, size=(3, 32)).astype(dt))
        keep = x.copy()
        y = fwht(x, norm="backward")
        np.testing.assert_array_equal(x, keep)
        rdt = dt if np.dtype(dt).kind == "f" else np.int64
        out = np.empty((3, 32), dtype=rdt)
        r = fwht(x, out=out)
        assert r is out
        np.testing.assert_array_equal(out, y)
    a = np.arange(8.0)
    fwht(a, out=a)  # out may alias the input
    np.testing.assert_array_equal(a, np.arange(8.0) @ _hadamard(8).T)
    with pytest.raises(TypeError, match="dtype"):
        fwht(np.zeros(8), out=np.zeros(8, np.float32))
    with pytest.raises(ValueError, match="shape"):
        fwht(np.zeros(8), out=np.zeros(4))


def test_errors():
    with pytest.raises(ValueError, match="power of two.*pad"):
        fwht(np.zeros(12))
    with pytest.raises(ValueError, match="power of two"):
        fwht(np.zeros((3, 0)))
    with pytest.raises(ValueError, match="norm"):
        fwht(np.zeros(4), norm="unitary")
    with pytest.raises(ValueError, match="order"):
        fwht(np.zeros(4), order="dyadic")
    with pytest.raises(ValueError, match="axis"):
        fwht(np.zeros(4), axis=1)
    with pytest.raises(TypeError, match="axis"):
        fwht(np.zeros(4), axis=0.0)
    with pytest.raises(ValueError, match="0-d"):
        fwht(np.float64(3.0))
    with pytest.raises(TypeError, match="boolean"):
        fwht(np.zeros(4, bool))
    with pytest.raises(TypeError, match="complex"):
        fwht(np.zeros(4, complex))
    with pytest.raises(TypeError, match="dtype"):
        fwht(np.array(["a", "b"]))


def test_list_input():
    assert fwht([1, 2, 3, 4]).tolist() == [10, -2, -4, 0]


# ------------------------------------------------------------------ Boolean functions
def _walsh_direct(tt):
    n = len(tt).bit_length() - 1
    return [sum((-1) ** ((tt[x] + bin(a & x).count("1")) % 2) for x in range(1 << n)) for a in range(1 << n)]


@pytest.mark.parametrize("n", [2, 4, 6, 8])
def test_bent_inner_product_function(n):
    # f(u, v) = u . v (Maiorana-McFarland with identity permutation) is bent for even n
    h = n // 2
    xs = np.arange(1 << n)
    u, v = xs & ((1 << h) - 1), xs >> h
    tt = np.array([bin(int(a) & int(b)).count("1") % 2 for a, b in zip(u, v)], dtype=np.uint8)
    W = walsh_spectrum(_ro(tt))
    assert W.dtype == np.int64
    assert np.all(np.abs(W) == 2 ** h)
    assert int((W.astype(object) ** 2).sum()) == 4**n  # Parseval
    assert W.tolist() == _walsh_direct(tt.tolist())


def test_bent_x1x2_x3x4_and_random_batch():
    tt = [(x & 1) * ((x >> 1) & 1) ^ ((x >> 2) & 1) * ((x >> 3) & 1) for x in range(16)]
    W = walsh_spectrum(np.array(tt, dtype=bool))
    assert np.all(np.abs(W) == 4)
    rng = np.random.default_rng(4)
    tts = _ro(rng.integers(0, 2, size=(3, 64)))
    W = walsh_spectrum(tts)
    for row, w in zip(tts.tolist(), W.tolist()):
        assert w == _walsh_direct(row)
    # balanced function -> W(0) = 0; affine x0 -> single peak at a = 1
    assert walsh_spectrum(np.array([0, 1] * 8)).tolist() == [0, 16] + [0] * 14


def test_walsh_errors():
    with pytest.raises(ValueError, match="0 or 1"):
        walsh_spectrum(np.array([0, 2, 1, 0]))
    with pytest.raises(TypeError, match="dtype"):
        walsh_spectrum(np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="power of two"):
        walsh_spectrum(np.array([0, 1, 1]))


# ------------------------------------------------------------------ CLI
def test_cli_transform(tmp_path):
    from ozgemm.fwt import cli

    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command")
    cli.register(sub)
    x = np.arange(16, dtype=np.int32).reshape(2, 8)
    src, dst = tmp_path / "x.npy", tmp_path / "y.npy"
    np.save(src, x)
    args = p.parse_args(["fwt", "transform", str(src), str(dst), "--order", "sequency", "--norm", "forward"])
    assert args.func(args) == 0
    want = x @ _sequency_matrix(_hadamard(8)).T / 8.0
    np.testing.assert_array_equal(np.load(dst), want)


# --- ortho factor bounds, input checks, byte order, CLI errors ---------------------------------
def _exact_ortho(x, L):
    """fwht(x, norm="ortho") of a 1-D float row, exactly (mpmath, 80 digits): H x / 2**(L/2)."""
    import mpmath

    mpmath.mp.dps = 80
    H = _hadamard(1 << L)
    s = [sum(int(h) * mpmath.mpf(Fraction(float(v)).numerator) / Fraction(float(v)).denominator
             for h, v in zip(row, x)) for row in H]
    return [v / mpmath.sqrt(2) ** L for v in s]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("L", [1, 3, 5])
def test_ortho_odd_length_bound_includes_the_rounded_factor(dtype, L):
    """For odd L the ortho factor 2**(-L/2) is rounded and multiplies once more: the error
    stays within gamma_(L+2) c ||x||_1 (the documented bound), against an exact reference;
    some case exceeds gamma_L c ||x||_1, so the added terms are needed."""
    import mpmath

    u = {np.float32: 2.0**-24, np.float64: 2.0**-53}[dtype]
    gamma = lambda m: m * u / (1 - m * u)  # noqa: E731
    rng = np.random.default_rng(L)
    worst = 0.0
    for trial in range(60):
        x = (rng.integers(-9, 10, 1 << L) if trial % 2 else rng.standard_normal(1 << L)).astype(dtype)
        if trial == 0:
            x[:] = 0
            x[0] = 3
        y = fwht(x, norm="ortho")
        ex = _exact_ortho(x, L)
        c_norm = mpmath.mpf(float(np.abs(x.astype(np.float64)).sum())) / mpmath.sqrt(2) ** L
        if c_norm == 0:
            continue
        err = max(abs(mpmath.mpf(float(v)) - e) for v, e in zip(y, ex))
        assert err <= gamma(L + 2) * c_norm, (trial, float(err / c_norm))
        worst = max(worst, float(err / c_norm))
    assert worst > gamma(L) or L > 1  # L = 1: some row exceeds gamma_1 (in float64 already [3, 0])


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52, reason="longdouble is float64 here")
def test_longdouble_ortho_factor_in_longdouble_precision():
    """The ortho factor of odd L is 2**(-L/2) correctly rounded in longdouble (not a float64
    value widened): fwht([1, 0]) = 1/sqrt(2) to longdouble accuracy, and the ortho round trip
    is accurate to a few longdouble ulps."""
    import mpmath

    mpmath.mp.dps = 50
    eps = float(np.finfo(np.longdouble).eps)
    for L in (1, 3, 5):
        x = np.zeros(1 << L, np.longdouble)
        x[0] = 1
        y = fwht(x, norm="ortho")
        n, d = y[0].as_integer_ratio()
        assert abs(mpmath.mpf(n) / d - 1 / mpmath.sqrt(2) ** L) <= eps * mpmath.mpf(n) / d
    x = np.arange(8, dtype=np.longdouble) + np.longdouble(1) / 3
    r = ifwht(fwht(x, norm="ortho"), norm="ortho")
    assert float(np.abs(r - x).max() / x.max()) < 20 * eps


def test_misc_input_checks_name_the_problem():
    with pytest.raises(TypeError, match="out must be a numpy or cupy array"):
        fwht([1, 2], out=[0, 0])
    with pytest.raises(TypeError, match="fwht: object arrays must hold numbers"):
        fwht(np.array(["a", "b"], dtype=object))
    with pytest.raises(ValueError, match="walsh_spectrum: truth table length 3"):
        walsh_spectrum([0, 1, 0])
    for n in (-4, 0, 12):
        with pytest.raises(ValueError, match="sequency_permutation: n must be a power of two"):
            sequency_permutation(n)
    # row L1 norm 2**63 - 1 fits, but the conservative checks cannot guarantee it: the
    # message says so instead of claiming the norm reaches 2**63
    with pytest.raises(OverflowError, match="cannot be guaranteed") as e:
        fwht(np.array([2**62, 2**62 - 1], np.int64))
    assert ">= 2**63" not in str(e.value)


def test_non_native_byte_order_gives_native_results():
    x = np.arange(8, dtype=">f8")
    y = fwht(x)
    assert y.dtype == np.float64 and y.dtype.isnative
    assert np.array_equal(y, fwht(x.astype(np.float64)))
    out = np.empty(8)
    assert fwht(x, out=out) is out and np.array_equal(out, y)


def test_cli_transform_file_errors(tmp_path, capsys):
    """Unreadable input, unwritable output and --gpu without CuPy: one 'ozgemm fwt:' line,
    exit 1, no traceback."""
    from ozgemm.cli import main

    good = tmp_path / "x.npy"
    np.save(good, np.arange(8.0))
    (tmp_path / "junk.npy").write_bytes(b"not a numpy file")
    np.save(tmp_path / "obj.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    cases = [[str(tmp_path / "missing.npy"), str(tmp_path / "y.npy")],
             [str(tmp_path / "junk.npy"), str(tmp_path / "y.npy")],
             [str(tmp_path / "obj.npy"), str(tmp_path / "y.npy")],
             [str(good), str(tmp_path / "no_such_dir" / "y.npy")]]
    try:
        import cupy  # noqa: F401
    except ImportError:
        cases.append([str(good), str(tmp_path / "y.npy"), "--gpu"])
    for argv in cases:
        capsys.readouterr()
        rc = main(["fwt", "transform", *argv])
        err = capsys.readouterr().err
        assert rc == 1 and err.startswith("ozgemm fwt: ") and "Traceback" not in err, (argv, rc, err)
    assert main(["fwt", "transform", str(good), str(tmp_path / "y.npy")]) == 0
    assert np.array_equal(np.load(tmp_path / "y.npy"), fwht(np.arange(8.0)))


def test_cli_bench_rejects_small_arrays(capsys):
    from ozgemm.cli import main

    assert main(["fwt", "bench", "--mbytes", "10"]) == 2
    assert "--mbytes must be >= 64" in capsys.readouterr().err

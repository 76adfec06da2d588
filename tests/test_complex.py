"""Complex products: the promise per real and imaginary part, checked against exact rational
arithmetic (Fractions, written here independently of ozgemm), numpy's calling rules and
IEEE classes, and bit-identity between engines and between the three- and four-product forms."""
from fractions import Fraction

import numpy as np
import pytest

import ozgemm
from ozgemm.contracts.contract import ContractError

COMPONENTWISE = ["fp64", "fp32", "fp64-ozaki", "fp32-ozaki"]


def _operands(rng, m, k, n, phi, dtype=np.complex128):
    def mat(r, c):
        re = (rng.random((r, c)) - 0.5) * np.exp(phi * rng.standard_normal((r, c)))
        im = (rng.random((r, c)) - 0.5) * np.exp(phi * rng.standard_normal((r, c)))
        return (re + 1j * im).astype(dtype)
    return mat(m, k), mat(k, n)


def _exact(a, b):
    """Exact Re, Im of a @ b and the magnitudes each part is bounded against, as Fractions:
    Re_ij = sum ar br - ai bi, |.| sum |ar br| + |ai bi|; Im_ij = sum ar bi + ai br."""
    A = [[(Fraction(float(v.real)), Fraction(float(v.imag))) for v in row] for row in np.asarray(a, dtype=complex)]
    B = [[(Fraction(float(v.real)), Fraction(float(v.imag))) for v in row] for row in np.asarray(b, dtype=complex)]
    m, k, n = len(A), len(B), len(B[0]) if B else 0
    out = {}
    for i in range(m):
        for j in range(n):
            re = im = gre = gim = Fraction(0)
            for l in range(k):
                (xr, xi), (yr, yi) = A[i][l], B[l][j]
                re += xr * yr - xi * yi
                im += xr * yi + xi * yr
                gre += abs(xr * yr) + abs(xi * yi)
                gim += abs(xr * yi) + abs(xi * yr)
            out[i, j] = (re, im, gre, gim)
    return out


def _check_componentwise(c, a, b, contract):
    """|part(C) - part(AB)| <= u_f |part(AB)| + 2**-(bits-1) G_part for every entry and part."""
    con = ozgemm.load_contract(contract)
    u = Fraction(1, 2 ** con.fmt.p)
    eps = Fraction(1, 2 ** (con.bits - 1))
    for (i, j), (re, im, gre, gim) in _exact(a, b).items():
        for got, want, g in ((c[i, j].real, re, gre), (c[i, j].imag, im, gim)):
            err = abs(Fraction(float(got)) - want)
            assert err <= u * abs(want) + eps * g, (contract, i, j, float(got), float(want))


@pytest.mark.parametrize("contract", COMPONENTWISE)
@pytest.mark.parametrize("phi", [0.5, 3])
@pytest.mark.parametrize("shape", [(4, 9, 5), (1, 1, 1), (6, 2, 3)])
def test_componentwise_promise_per_part(contract, phi, shape):
    rng = np.random.default_rng(hash((contract, phi, shape)) % 2**32)
    dt = np.complex64 if contract.startswith("fp32") else np.complex128
    a, b = _operands(rng, *shape, phi, dt)
    c = ozgemm.matmul(a, b, contract=contract)
    assert c.dtype == dt and c.shape == (shape[0], shape[2])
    _check_componentwise(c, a, b, contract)


def test_cancellation_within_each_part():
    """(1 + 2**-60 i)(1 + 2**-60 i) = 1 - 2**-120 + 2**-59 i: both parts exact in binary64
    (1 - 2**-120 rounds to 1), and a sum whose real parts cancel to a tiny value."""
    a = np.array([[1 + 2.0 ** -60 * 1j, 1e16 + 0j, -1e16 + 0j]])
    b = np.array([[1 + 2.0 ** -60 * 1j], [1 + 0j], [1 + 0j]])
    c = ozgemm.matmul(a, b, contract="fp64")
    assert c[0, 0].real == 1.0 and c[0, 0].imag == 2.0 ** -59
    _check_componentwise(c, a, b, "fp64")


def test_normwise_promise_with_the_doubled_inner_dimension():
    """fp64-fast: |part(C - AB)| <= 2**-(bits-1) 2k max_l |[Ar Ai]_il| max_l |[Br Bi]_lj|."""
    rng = np.random.default_rng(3)
    a, b = _operands(rng, 5, 8, 4, 2.0)
    c = ozgemm.matmul(a, b, contract="fp64-fast")
    con = ozgemm.load_contract("fp64-fast")
    eps = Fraction(1, 2 ** (con.bits - 1))
    amax = [max(max(abs(Fraction(float(v.real))), abs(Fraction(float(v.imag)))) for v in row) for row in a]
    bmax = [max(max(abs(Fraction(float(v.real))), abs(Fraction(float(v.imag)))) for v in col) for col in b.T]
    for (i, j), (re, im, _, _) in _exact(a, b).items():
        lim = eps * 2 * a.shape[1] * amax[i] * bmax[j]
        assert abs(Fraction(float(c[i, j].real)) - re) <= lim
        assert abs(Fraction(float(c[i, j].imag)) - im) <= lim


@pytest.mark.parametrize("contract", ["fp64", "fp32", "fp64-fast"])
def test_engines_bit_identical_across_k_blocks(contract):
    """CPU BLAS engine (primes < 2**20, k-blocks of 1024) == the int64 reference engine."""
    rng = np.random.default_rng(5)
    dt = np.complex64 if contract == "fp32" else np.complex128
    for shape in [(3, 1025, 4), (7, 40, 9)]:
        a, b = _operands(rng, *shape, 1.0, dt)
        c1 = ozgemm.matmul(a, b, contract=contract, engine="cpu")
        c2 = ozgemm.matmul(a, b, contract=contract, engine="cpu-int64")
        assert np.array_equal(c1, c2)


def _round_half_up(x: Fraction) -> int:
    return (2 * x.numerator + x.denominator) // (2 * x.denominator)


@pytest.mark.parametrize("seed", range(6))
def test_three_products_are_the_planned_integers_rounded_once(seed):
    """Re = RN((Ar'Br' - Ai'Bi') 2**-(s_i+t_j)), Im = RN((Ar'Bi' + Ai'Br') 2**-(s_i+t_j)) with
    X' = round-half-up(X 2**shift) of each part under the plan's shifts, in exact integers
    here (the plan's bound is checked against exact products by the tests above)."""
    rng = np.random.default_rng(seed)
    a, b = _operands(rng, 5, 9, 4, 2.0)
    c, plans = ozgemm.matmul(a, b, contract="fp64", return_plan=True)
    p = plans[0]
    n = b.shape[1]
    s, t = [int(v) for v in p.s], [int(v) for v in p.t]
    assert t[:n] == t[n:]  # Br and Bi share their column's shift

    def scaled(x, e):
        return _round_half_up(Fraction(float(x)) * Fraction(2) ** e)

    for i in range(a.shape[0]):
        for j in range(n):
            ar = [scaled(v.real, s[i]) for v in a[i]]
            ai = [scaled(v.imag, s[i]) for v in a[i]]
            br = [scaled(v.real, t[j]) for v in b[:, j]]
            bi = [scaled(v.imag, t[j]) for v in b[:, j]]
            re = sum(x * y for x, y in zip(ar, br)) - sum(x * y for x, y in zip(ai, bi))
            im = sum(x * y for x, y in zip(ar, bi)) + sum(x * y for x, y in zip(ai, br))
            scale = Fraction(2) ** -(s[i] + t[j])
            assert c[i, j].real == float(re * scale) and c[i, j].imag == float(im * scale), (i, j)


def test_mixed_real_and_complex_follow_numpy_promotion():
    rng = np.random.default_rng(9)
    a, b = _operands(rng, 4, 6, 3, 1.0)
    ar = a.real.copy()
    c = ozgemm.matmul(ar, b)
    assert c.dtype == np.result_type(ar, b) == np.complex128
    _check_componentwise(c, ar.astype(complex), b, "fp64")
    c = ozgemm.matmul(a, b.real.astype(np.float32))
    assert c.dtype == np.complex128
    c32 = ozgemm.matmul(a.astype(np.complex64), b.real.astype(np.float32))
    assert c32.dtype == np.result_type(np.complex64, np.float32) == np.complex64
    assert ozgemm.default_contract(a.astype(np.complex64), b.real.astype(np.float32)) == "fp32"


def test_numpy_rules_batches_vectors_and_out():
    rng = np.random.default_rng(10)
    a = (rng.standard_normal((2, 3, 4, 5)) + 1j * rng.standard_normal((2, 3, 4, 5)))
    b = (rng.standard_normal((3, 5, 2)) + 1j * rng.standard_normal((3, 5, 2)))
    c = ozgemm.matmul(a, b)
    assert c.shape == np.matmul(a, b).shape and c.dtype == np.complex128
    for i in range(2):
        for j in range(3):
            assert np.array_equal(c[i, j], ozgemm.matmul(a[i, j], b[j]))
    v = a[0, 0, 0]
    s = ozgemm.matmul(v, v)
    assert isinstance(s, np.complexfloating)  # numpy: a scalar for 1-D @ 1-D
    assert np.array_equal(ozgemm.matmul(v, b[0]), ozgemm.matmul(v[None], b[0])[0])
    out = np.empty((2, 3, 4, 2), dtype=np.complex128)
    r = ozgemm.matmul(a, b, out=out)
    assert r is out and np.array_equal(out, c)
    with pytest.raises(TypeError):  # numpy's same_kind rule: complex does not cast to float
        ozgemm.matmul(a, b, out=np.empty((2, 3, 4, 2)))
    m = a[0, 0].copy()
    sq = np.ascontiguousarray(m[:, :4])
    want = ozgemm.matmul(sq, sq)
    ozgemm.matmul(sq, sq, out=sq)  # out overlapping an operand: computed first, then copied
    assert np.array_equal(sq, want)
    e = ozgemm.matmul(np.zeros((0, 3), complex), np.zeros((3, 2), complex))
    assert e.shape == (0, 2) and e.dtype == np.complex128
    z = ozgemm.matmul(np.zeros((2, 0), complex), np.zeros((0, 2), complex))
    assert np.array_equal(z, np.zeros((2, 2), complex))


def test_inputs_are_not_modified():
    rng = np.random.default_rng(11)
    a, b = _operands(rng, 3, 4, 5, 1.0)
    a0, b0 = a.copy(), b.copy()
    ozgemm.matmul(a, b)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)


@pytest.mark.parametrize("case", range(7))
def test_nonfinite_classes_follow_numpy(case):
    inf, nan = np.inf, np.nan
    a, b = [
        ([[1.0 + 0j]], [[inf + 0j]]),  # (1)(inf) = inf + nan i, as numpy's complex product
        ([[inf + 1j, 1.0 + 0j]], [[1.0 + 0j], [2.0 + 0j]]),
        ([[1j, 2.0 + 0j]], [[complex(inf, 0)], [1.0 + 0j]]),
        ([[nan + 0j, 1 + 1j], [1.0 + 2j, 3j]], [[1 + 0j, 2 + 0j], [1j, 1.0 + 0j]]),
        ([[complex(-inf, 0), complex(inf, 0)]], [[1 + 0j], [1 + 0j]]),
        ([[complex(0, inf), 1.0 + 0j]], [[complex(0, -inf)], [1.0 + 0j]]),
        ([[1 + 1j, 1 + 1j], [1 + 1j, 1 + 1j]], [[complex(-inf, 0), 1 + 1j], [1 + 1j, 1 + 1j]]),
    ][case]
    a, b = np.array(a), np.array(b)
    with np.errstate(all="ignore"):
        # numpy's complex arithmetic term by term (numpy.matmul itself calls zgemm, whose final
        # alpha scaling may spread a NaN from one part into the other)
        want = np.array([[sum((a[i, l] * b[l, j] for l in range(a.shape[1])), np.complex128(0))
                          for j in range(b.shape[1])] for i in range(a.shape[0])])
    got = ozgemm.matmul(a, b)
    for part in (np.real, np.imag):
        w, g = part(want), part(got)
        assert np.array_equal(np.isnan(w), np.isnan(g)), (a, b, want, got)
        fin = ~np.isnan(w)
        assert np.array_equal(w[fin], g[fin]), (a, b, want, got)


def test_specials_raise_contract():
    con = ozgemm.load_contract("fp64").with_(specials="raise")
    with pytest.raises(ContractError):
        ozgemm.matmul(np.array([[complex(np.inf, 0)]]), np.array([[1 + 0j]]), contract=con)


def test_refusals_name_the_problem():
    a = np.ones((2, 2), complex)
    with pytest.raises(TypeError, match="no complex result type"):
        ozgemm.matmul(a, a, contract="fp128")
    with pytest.raises(TypeError, match="complex DD"):
        ozgemm.matmul(ozgemm.matmul(a, a, contract="dd"), a, contract="dd")
    with pytest.raises(TypeError, match="complex64"):
        ozgemm.matmul(a, a, contract="fp32")
    with pytest.raises(TypeError, match="DD and binary128 operands are real"):
        ozgemm.matmul(ozgemm.DD(np.ones((2, 2))), a)  # the default contract of a DD operand: dd
    with pytest.raises(TypeError, match="DD and binary128 operands are real"):
        ozgemm.matmul(ozgemm.DD(np.ones((2, 2))), a, contract="fp64")
    with pytest.raises(TypeError, match="complex64 or complex128"):
        ozgemm.matmul(np.ones((2, 2), np.clongdouble), a)


def test_audit_measures_complex_results_per_part():
    """ozgemm.verify measures a complex result per part against its exact value; a wrong
    imaginary sign is caught."""
    from ozgemm.verify.audit import measure_any

    rng = np.random.default_rng(12)
    a, b = _operands(rng, 4, 5, 3, 1.0)
    con = ozgemm.load_contract("fp64")
    c = ozgemm.matmul(a, b)
    assert measure_any(c, a, b, con)["breaches"] == 0
    assert measure_any(np.conj(c), a, b, con)["breaches"] > 0


def test_numpy_product_family_with_complex_operands():
    """dot, vdot (first operand conjugated), inner, tensordot and einsum reduce to the complex
    matmul: the bits of the equivalent matmul call, the dtype numpy gives."""
    rng = np.random.default_rng(13)
    a, b = _operands(rng, 3, 4, 5, 1.0)
    assert np.array_equal(ozgemm.dot(a, b), ozgemm.matmul(a, b))
    v, w = a[0], b[:, 0]
    got = ozgemm.vdot(v, w)
    assert got == ozgemm.matmul(np.conj(v), w) and np.result_type(got) == np.vdot(v, w).dtype
    assert np.array_equal(ozgemm.inner(a, b.T), ozgemm.matmul(a, b))
    assert np.array_equal(ozgemm.einsum("ik,kj->ij", a, b), ozgemm.matmul(a, b))
    assert np.array_equal(ozgemm.tensordot(a, b, axes=1), ozgemm.matmul(a, b))


def test_bench_and_audit_commands_take_complex_operands(tmp_path, capsys):
    from ozgemm.cli import main

    pytest.importorskip("gmpy2")
    assert main(["bench", "--complex", "--sizes", "16", "--contracts", "fp64", "fp32", "--ref-sizes",
                 "--reps", "1"]) == 0
    out = capsys.readouterr().out
    assert "complex" in out and "fp32" in out
    rng = np.random.default_rng(14)
    a, b = _operands(rng, 5, 6, 4, 1.0)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    np.save(tmp_path / "c.npy", np.conj(ozgemm.matmul(a, b)))  # a wrong result
    assert main(["audit", str(tmp_path / "a.npy"), str(tmp_path / "b.npy")]) == 0
    assert main(["audit", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--result", str(tmp_path / "c.npy")]) == 1
    assert main(["audit", "--inputs", "complex", "--size", "8", "--phi", "1", "--no-hilbert"]) == 0
    assert main(["audit", "--inputs", "complex", "--size", "8", "--phi", "1", "--no-hilbert", "--contract", "dd"]) == 0


@pytest.mark.parametrize("phi", [0.5, 3])
def test_dd_contract_gives_a_complex_double_double_per_part(phi):
    """contract "dd": hi + lo of each part within 2**-106 |part(AB)| + 2**-105 G_part of the
    exact part, and each part normalised (hi = RN(hi + lo), checked exactly)."""
    rng = np.random.default_rng(15)
    a, b = _operands(rng, 4, 7, 3, phi)
    c = ozgemm.matmul(a, b, contract="dd")
    assert isinstance(c, ozgemm.DD) and c.hi.dtype == np.complex128 and c.shape == (4, 3)
    u, eps = Fraction(1, 2**106), Fraction(1, 2**105)
    for (i, j), (re, im, gre, gim) in _exact(a, b).items():
        for hi, lo, want, g in ((c.hi[i, j].real, c.lo[i, j].real, re, gre), (c.hi[i, j].imag, c.lo[i, j].imag, im, gim)):
            got = Fraction(float(hi)) + Fraction(float(lo))
            assert abs(got - want) <= u * abs(want) + eps * g
            assert float(hi) == float(got)  # hi = RN(value)
    c2 = ozgemm.matmul(a, b, contract="dd", engine="cpu-int64")
    assert np.array_equal(c.hi, c2.hi) and np.array_equal(c.lo, c2.lo)


def test_complex_dd_value_arithmetic_part_by_part():
    rng = np.random.default_rng(16)
    a, b = _operands(rng, 3, 5, 2, 1.0)
    c = ozgemm.matmul(a, b, contract="dd")
    d = c - c
    assert d.hi.dtype == np.complex128 and not np.any(d.hi) and not np.any(d.lo)
    s = c + c
    assert np.array_equal(s.hi, 2 * c.hi) and np.array_equal(s.lo, 2 * c.lo)  # doubling is exact
    assert bool((c == c).all()) and np.array_equal(c.to_float64(), c.hi + c.lo)
    with pytest.raises(TypeError, match="no order"):
        c < c  # noqa: B015
    with pytest.raises(TypeError, match="complex binary128"):
        c.to_binary128()


def test_big_endian_complex_operands():
    rng = np.random.default_rng(17)
    a, b = _operands(rng, 3, 4, 2, 1.0)
    got = ozgemm.matmul(a.astype(">c16"), b.astype(">c16"))
    assert got.dtype == np.complex128 and np.array_equal(got, ozgemm.matmul(a, b))


def test_audit_and_bench_refuse_mismatched_complex_arguments(tmp_path, capsys):
    from ozgemm.cli import main

    pytest.importorskip("gmpy2")
    rng = np.random.default_rng(18)
    a, b = _operands(rng, 4, 3, 2, 1.0)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    np.save(tmp_path / "c.npy", ozgemm.matmul(a, b).real)  # a real result of a complex product
    assert main(["audit", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--result", str(tmp_path / "c.npy")]) == 2
    assert "both complex or both real" in capsys.readouterr().err
    assert main(["bench", "--complex", "--contracts", "fp128", "--sizes", "8", "--ref-sizes"]) == 2
    assert "no complex result type" in capsys.readouterr().err


def test_audit_plot_of_complex_inputs(tmp_path, capsys):
    from ozgemm.cli import main

    pytest.importorskip("gmpy2")
    pytest.importorskip("matplotlib")
    out = tmp_path / "err.png"
    assert main(["audit", "--inputs", "complex", "--size", "8", "--phi", "1", "--no-hilbert", "--plot", str(out)]) == 0
    assert out.exists() and "per real and imaginary part" in capsys.readouterr().out


def test_plan_of_a_complex_product_is_the_embedding_plan():
    rng = np.random.default_rng(19)
    a, b = _operands(rng, 3, 5, 2, 2.0)
    p = ozgemm.plan(a, b)
    _, (q,) = ozgemm.matmul(a, b, return_plan=True)
    assert p.shape == (3, 10, 4) and (p.n_moduli, p.beta) == (q.n_moduli, q.beta)
    assert "real embedding 3x10x4" in p.info()["widened"]


def _q7(rows):
    """floor(|x| 2**(7 - E_i)) per row of Python floats, E_i the smallest integer with every
    |x_il| < 2**E_i (0 for an all-zero row): the planner's 7-bit magnitudes, from Fractions."""
    import math

    out = []
    for row in rows:
        nz = [abs(v) for v in row if v != 0]
        E = max(math.frexp(v)[1] for v in nz) if nz else 0
        out.append([int(abs(Fraction(v)) * Fraction(2) ** (7 - E)) for v in row])
    return out


@pytest.mark.parametrize("seed", range(4))
def test_half_form_lower_bound_is_each_terms_smaller_pairing(seed, monkeypatch):
    """The half-form bound GEMM of a complex product (one GEMM of m x 2k x n on U = max(|Ar|,
    |Ai|), u = min and V, v of B) equals sum_l min(qAr qBr + qAi qBi, qAr qBi + qAi qBr) on the
    7-bit magnitudes, computed here from Fractions: at most the embedding's bound of either
    part; the full form is the embedding's own bound GEMM. Inputs with equal parts, zeros and a
    real row. (The half form forced: the sampled choice is tested below.)"""
    from ozgemm.kernels.numpy import NumpyBackend
    from ozgemm.precision import planner as P
    from ozgemm.precision.operands import complex_embedding, complex_operands

    monkeypatch.setattr(P, "COMPLEX_SAMPLE_ROWS", 1)
    monkeypatch.setattr(P, "COMPLEX_SAMPLE_MIN_WORK", 0)
    monkeypatch.setattr(P, "COMPLEX_HALF_SLACK", 10**6)

    rng = np.random.default_rng(seed)
    a, b = _operands(rng, 5, 7, 4, 2.0)
    a[0, :3] = a[0, :3].real * (1 + 1j)  # |Ar| = |Ai|
    a[1] = a[1].real  # a real row
    b[2, 1] = 0
    b[:, 3] = 1j * b[:, 3].imag
    eng = NumpyBackend()
    ai, bt = complex_operands(a, b, np)
    sa, sb = P.statistics(ai, bt, eng, embedding="half")
    bound = P.componentwise_bound(ozgemm.load_contract("fp64"), sa, sb, ai.shape[1], eng, operands=(ai, bt),
                                  embedding="half")
    k, n = a.shape[1], b.shape[1]
    qa = _q7([[float(v) for v in row] for row in np.hstack([a.real, a.imag])])
    qb = _q7([[float(v) for v in col] for col in np.vstack([b.real, b.imag]).T])
    want = [[sum(min(qa[i][l] * qb[j][l] + qa[i][k + l] * qb[j][k + l],
                     qa[i][l] * qb[j][k + l] + qa[i][k + l] * qb[j][l]) for l in range(k))
             for j in range(n)] for i in range(a.shape[0])]
    assert bound.lb.tolist() == want
    fa, fb = P.statistics(*complex_embedding(a, b, np), eng)  # the whole embedding's own bound GEMM
    assert np.array_equal(fa.E, sa.E) and np.array_equal(fb.E, sb.E) and np.array_equal(fb.norm1, sb.norm1)
    full = eng.gemm_exact(fa.q, fb.q)
    assert bound.embedding == "half"
    assert (bound.lb <= full[:, :n]).all() and (bound.lb <= full[:, n:]).all()
    assert int(np.asarray(bound.scalars)[5]) == (ai.shape[1] << 14) - ai.shape[1]  # no third source of S
    assert np.array_equal(eng.gemm_complex_bound(sa.q, sb.q[:n], k, "full"), full)


def test_refined_half_form_keeps_the_promise_per_part(monkeypatch):
    """Wide spreads refine the half-form lower bound (a second 7-bit window of U, u, V, v):
    the refined bound is at most both parts' exact |A||B| (Fractions, in its units 2**-28 of
    2**(E_i + F_j)), the plan says so, the promise holds per part, and both engines agree.
    (The size from which products refine is lowered to this test's.)"""
    import ozgemm.precision.planner as P
    from ozgemm.kernels.numpy import NumpyBackend
    from ozgemm.precision.operands import complex_operands

    monkeypatch.setattr(P, "REFINE_MIN_WORK", 0)
    monkeypatch.setattr(P, "COMPLEX_SAMPLE_ROWS", 1)  # the half form forced
    monkeypatch.setattr(P, "COMPLEX_SAMPLE_MIN_WORK", 0)
    monkeypatch.setattr(P, "COMPLEX_HALF_SLACK", 10**6)
    rng = np.random.default_rng(8)
    a, b = _operands(rng, 4, 60, 3, 4.0)
    c, (p,) = ozgemm.matmul(a, b, contract="fp64", return_plan=True)
    assert "refined" in p.widened and p.bound_gemms == 2
    _check_componentwise(c, a, b, "fp64")
    assert np.array_equal(c, ozgemm.matmul(a, b, contract="fp64", engine="cpu-int64"))
    eng = NumpyBackend()
    ai, bt = complex_operands(a, b, np)
    sa, sb = P.statistics(ai, bt, eng, embedding="half")
    bound = P.componentwise_bound(ozgemm.load_contract("fp64"), sa, sb, ai.shape[1], eng, operands=(ai, bt),
                                  embedding="half")
    assert bound.refined and bound.embedding == "half"
    lb2, shift = bound.finest()
    assert shift == 14
    for (i, j), (_, _, gre, gim) in _exact(a, b).items():
        unit = Fraction(2) ** (int(sa.E[i]) + int(sb.E[j]) - 28)
        assert lb2[i, j] * unit <= min(gre, gim), (i, j)


@pytest.mark.parametrize("dts", [(np.complex128, np.complex128), (np.complex64, np.complex64),
                                 (np.complex64, np.complex128), (np.float64, np.complex128),
                                 (np.complex128, np.float64)])
@pytest.mark.parametrize("transposed", [False, True])
def test_three_product_operands_are_the_embeddings_blocks(dts, transposed):
    """complex_operands gives A's parts interleaved (the float view of a C-contiguous ``a``,
    without a copy) and B's top block row [Br | Bi]: the same words as the embedding's blocks."""
    from ozgemm.precision.operands import complex_embedding, complex_operands

    rng = np.random.default_rng(6)
    a, b = _operands(rng, 4, 6, 3, 1.0)
    if transposed:  # (a copy built element by element)
        a = np.asfortranarray(a)
    a, b = (a.real if np.dtype(dts[0]).kind == "f" else a).astype(dts[0]), \
        (b.real if np.dtype(dts[1]).kind == "f" else b).astype(dts[1])
    A, B = complex_embedding(a, b, np)
    Ai, Bt = complex_operands(a, b, np)
    assert Ai.dtype == A.dtype and Bt.dtype == B.dtype
    assert np.array_equal(Ai[:, 0::2], A[:, :6]) and np.array_equal(Ai[:, 1::2], A[:, 6:])
    assert np.array_equal(Bt, B[:6])
    if a.dtype == {np.float32: np.complex64, np.float64: np.complex128}[A.dtype.type] and a.flags.c_contiguous:
        assert np.shares_memory(Ai, a)


@pytest.mark.parametrize("contract", ["fp64", "fp32", "dd"])
def test_method_auto_on_complex_operands(contract):
    """A contract with method "auto" plans the whole embedding; whichever method it picks runs
    on the operands that plan was made for (the promise per part, exactly; both engines)."""
    rng = np.random.default_rng(12)
    dt = np.complex64 if contract == "fp32" else np.complex128
    a, b = _operands(rng, 4, 6, 5, 1.0, dt)
    con = ozgemm.load_contract(contract).with_(method="auto")
    c, (p,) = ozgemm.matmul(a, b, contract=con, return_plan=True)
    assert p.method in ("crt", "ozaki")
    if contract == "dd":
        hi, lo = c.hi, c.lo
        for (i, j), (re, im, _, _) in _exact(a, b).items():
            for got, want in (((hi[i, j].real, lo[i, j].real), re), ((hi[i, j].imag, lo[i, j].imag), im)):
                err = abs(Fraction(float(got[0])) + Fraction(float(got[1])) - want)
                assert err <= Fraction(1, 2 ** 100) * (abs(want) + 1), (i, j)
    else:
        _check_componentwise(c, a, b, contract)  # (the same promise as the named contract's)
        assert np.array_equal(c, ozgemm.matmul(a, b, contract=con, engine="cpu-int64"))


def _three_product_table(monkeypatch):
    """Plans of complex products on the table of the three-product form only (what a plan of
    the real embedding gets), so that they compare with plans of the embedding."""
    from ozgemm.precision import planner as P

    monkeypatch.setattr(P, "_complex_table", lambda *args: (P.MODULI,) + tuple(args[6]))


@pytest.mark.parametrize("real", ["a", "b"])
@pytest.mark.parametrize("contract", ["fp64", "fp32", "fp64-dgemm"])
def test_real_operand_takes_the_embeddings_own_bound(real, contract, monkeypatch):
    """A real operand times a complex one: the bound GEMM of the real operand against the other's
    stacked parts is the whole embedding's own bound GEMM, so the plan (moduli, width) is the one
    the whole embedding gets; entries of B purely real or purely imaginary (where the half form
    of two complex operands would lose the most) included."""
    from ozgemm.contracts.contract import as_contract
    from ozgemm.kernels.numpy import NumpyBackend
    from ozgemm.precision import planner as P
    from ozgemm.precision.operands import complex_embedding

    _three_product_table(monkeypatch)
    rng = np.random.default_rng(14)
    dt = np.complex64 if contract == "fp32" else np.complex128
    a, b = _operands(rng, 24, 16, 20, 0.5, dt)
    b = np.where(rng.random(b.shape) < 0.5, b.real, 1j * b.imag).astype(dt)
    if real == "a":
        a = a.real.copy()
    else:
        a, b = b.T.copy(), a.T.real.copy()
    c, (p,) = ozgemm.matmul(a, b, contract=contract, return_plan=True)
    q = P.make_plan(as_contract(contract).for_k(2 * a.shape[1]), *complex_embedding(a, b, np), NumpyBackend())
    assert (p.n_moduli, p.beta) == (q.n_moduli, q.beta)
    _check_componentwise(c, a, b, contract)


def test_refinement_decided_on_the_embeddings_work(monkeypatch):
    """The second window is decided on the real embedding's multiply-adds m (2k) (2n), the same
    for every shape of the complex product."""
    import ozgemm.precision.planner as P

    seen = []
    real = P.needs_refinement

    def spy(host, bits, work):
        seen.append(work)
        return real(host, bits, work)

    monkeypatch.setattr(P, "needs_refinement", spy)
    rng = np.random.default_rng(2)
    for m, k, n in ((3, 2, 50), (3, 50, 2)):
        seen.clear()
        ozgemm.matmul(*_operands(rng, m, k, n, 1.0))
        assert seen == [m * (2 * k) * (2 * n)]


@pytest.mark.parametrize("real", ["a", "b"])
def test_refined_real_operand_form_keeps_the_promise(real, monkeypatch):
    """Wide spreads with a real operand refine the embedding's own bound (a second window of each
    part): below both parts' exact |A||B| per entry, the promise per part, both engines."""
    import ozgemm.precision.planner as P

    monkeypatch.setattr(P, "REFINE_MIN_WORK", 0)
    rng = np.random.default_rng(21)
    a, b = _operands(rng, 4, 60, 3, 4.0)
    if real == "a":
        a = a.real.copy()
    else:
        b = b.real.copy()
    c, (p,) = ozgemm.matmul(a, b, contract="fp64", return_plan=True)
    assert "refined" in p.widened
    _check_componentwise(c, a, b, "fp64")
    assert np.array_equal(c, ozgemm.matmul(a, b, contract="fp64", engine="cpu-int64"))


@pytest.mark.parametrize("phi", [0.5, 1.0, 2.0])
def test_bound_form_chosen_on_sampled_rows(phi, monkeypatch):
    """Two complex operands: the half form where its minimal width on the sampled rows of A is
    within COMPLEX_HALF_SLACK bits of the full bound's, computed here from the whole
    embedding's statistics (the planner's per-entry widths of both bounds on those rows); the
    full form otherwise, and for products of at most COMPLEX_SAMPLE_ROWS rows. Either way
    the promise holds per part. (Sampled from this test's size on.)"""
    from ozgemm.kernels.numpy import NumpyBackend
    from ozgemm.precision import planner as P
    from ozgemm.precision.operands import complex_embedding, complex_operands

    monkeypatch.setattr(P, "COMPLEX_SAMPLE_ROWS", 8)
    monkeypatch.setattr(P, "COMPLEX_SAMPLE_MIN_WORK", 0)
    rng = np.random.default_rng(int(10 * phi))
    con = ozgemm.load_contract("fp64")
    eng = NumpyBackend()
    for m in (8, 40):
        a, b = _operands(rng, m, 30, 12, phi)
        ai, bt = complex_operands(a, b, np)
        sa, sb = P.statistics(ai, bt, eng, embedding="half")
        bound = P.componentwise_bound(con, sa, sb, 60, eng, embedding="half")
        fa, fb = P.statistics(*complex_embedding(a, b, np), eng)
        rows = (np.arange(8) * m) // 8
        full = eng.gemm_exact(fa.q[rows], fb.q)
        half = np.minimum(full[:, :12], full[:, 12:])  # >= the half form; equal widths below check
        half_form = eng.gemm_complex_bound(sa.q[rows], sb.q[:12], 30, "half")
        assert (half_form <= half).all()
        w_full = P.required_beta_entries(fa.width[rows, None], fb.width[None, :], fa.norm1[rows, None],
                                         fb.norm1[None, :], full, con.bits, 60, con.fmt.u, np).max()
        w_half = P.required_beta_entries(fa.width[rows, None], fb.width[None, :12], fa.norm1[rows, None],
                                         fb.norm1[None, :12], half_form, con.bits, 60, con.fmt.u, np).max()
        want = "full" if m <= 8 or max(w_half, 1) - max(w_full, 1) > P.COMPLEX_HALF_SLACK else "half"
        assert bound.embedding == want, (m, w_full, w_half)
        _check_componentwise(ozgemm.matmul(a, b), a, b, "fp64")


def test_mid_size_products_take_the_full_bound_unsampled(monkeypatch):
    """Below COMPLEX_SAMPLE_MIN_WORK multiply-adds of the embedding, two complex operands of
    more than COMPLEX_SAMPLE_ROWS rows take the full bound without sampling (the plan's bound is
    the embedding's own (m, 2n) GEMM), so entries each purely real or purely imaginary (where
    the half form's bound is 0) keep the plan of the whole embedding; the promise holds per
    part."""
    from ozgemm.contracts.contract import as_contract
    from ozgemm.kernels.numpy import NumpyBackend
    from ozgemm.precision import planner as P
    from ozgemm.precision.operands import complex_embedding

    seen = []
    real = P.componentwise_bound

    def spy(*args, **kw):
        b = real(*args, **kw)
        seen.append((b.embedding, b.lb.shape))
        return b

    monkeypatch.setattr(P, "componentwise_bound", spy)
    monkeypatch.setattr(P, "COMPLEX_SAMPLE_ROWS", 8)
    _three_product_table(monkeypatch)
    rng = np.random.default_rng(5)
    a, b = _operands(rng, 20, 9, 7, 0.5)
    a = np.where(rng.random(a.shape) < 0.5, a.real, 1j * a.imag)
    b = np.where(rng.random(b.shape) < 0.5, b.real, 1j * b.imag)
    c, (p,) = ozgemm.matmul(a, b, return_plan=True)
    assert seen[0] == ("full", (20, 14))
    q = P.make_plan(as_contract("fp64").for_k(18), *complex_embedding(a, b, np), NumpyBackend())
    assert (p.n_moduli, p.beta) == (q.n_moduli, q.beta)
    _check_componentwise(c, a, b, "fp64")


def test_split_moduli_table():
    """GAUSSIAN_MODULI against a search written here: the odd m <= 255 taken greedily from the
    top, pairwise coprime, each with a t, t**2 = -1 mod m (every prime factor = 1 mod 4), and
    SQRT_MINUS_ONE the smallest such t; the CPU engine's primes for them are = 1 mod 4."""
    from math import gcd, prod

    from ozgemm.contracts.moduli import GAUSSIAN_MODULI, SQRT_MINUS_ONE
    from ozgemm.crt.moduli import WIDE_GAUSSIAN_MODULI, sqrt_minus_one, wide_moduli

    want = []
    for m in range(255, 2, -1):
        roots = [t for t in range(m) if (t * t + 1) % m == 0]
        if m % 2 and roots and all(gcd(m, g) == 1 for g in want):
            want.append(m)
    assert GAUSSIAN_MODULI == tuple(want) and GAUSSIAN_MODULI[:4] == (241, 233, 229, 221)
    assert SQRT_MINUS_ONE == tuple(min(t for t in range(m) if (t * t + 1) % m == 0) for m in want)
    for p in WIDE_GAUSSIAN_MODULI:
        assert p % 4 == 1 and all(p % d for d in range(3, int(p ** 0.5) + 1, 2))
        assert (sqrt_minus_one(p) ** 2 + 1) % p == 0
    assert prod(wide_moduli(GAUSSIAN_MODULI)) >= 4 * prod(GAUSSIAN_MODULI)


def _split_and_three_product_plans(contract, m, k, n, phi, seed, dt):
    """A complex product, its plan (split form) and the same plan over the fewest table
    moduli whose product is at least the split moduli's (three-product form; the same width and
    shifts, so the same exact integers)."""
    from math import prod

    from ozgemm.contracts.moduli import MODULI
    from ozgemm.crt.moduli import splits

    rng = np.random.default_rng(seed)
    a, b = _operands(rng, m, k, n, phi, dt)
    c, (p,) = ozgemm.matmul(a, b, contract=contract, return_plan=True)
    assert splits(p.moduli), p.info()["widened"]
    N3 = next(j for j in range(1, len(MODULI) + 1) if prod(MODULI[:j]) >= prod(p.moduli))
    return a, b, c, p, p.evolve(moduli=MODULI[:N3])


@pytest.mark.parametrize("engine", ["cpu", "cpu-int64"])
@pytest.mark.parametrize("contract,phi", [("fp64", 0.5), ("fp64", 2.0), ("fp32", 1.0), ("fp64-dgemm", 1.0),
                                          ("fp64-fast", 0.5)])
def test_split_and_three_product_forms_give_the_same_bits(engine, contract, phi):
    """Both forms compute the exact integers of one plan: the split form (two products per
    modulus) and the three-product form over table moduli holding the same width give the same
    bits, on both CPU engines and across k-blocks (k = 1100 > 1024)."""
    from ozgemm.crt.pipeline import execute_complex
    from ozgemm.kernels import get_backend
    from ozgemm.precision.operands import complex_operands

    dt = np.complex64 if contract == "fp32" else np.complex128
    for shape, seed in (((6, 11, 5), 1), ((3, 1100, 4), 2)):
        a, b, c, p, p3 = _split_and_three_product_plans(contract, *shape, phi, seed, dt)
        be = get_backend(engine, np)
        ai, bt = complex_operands(a, b, np)
        if contract != "fp32":
            ai, bt = ai.astype(np.float64), bt.astype(np.float64)
        n = b.shape[1]
        parts = (ai[:, 0::2], ai[:, 1::2]), (bt[:, :n], bt[:, n:])
        r2 = execute_complex(p, be, *parts)
        r3 = execute_complex(p3, be, *parts)
        assert np.array_equal(r2, r3)
        assert np.array_equal(r2[:, :n], c.real) and np.array_equal(r2[:, n:], c.imag)


def test_split_residues_and_parts_against_exact_integers():
    """The engines' split-form phases against Python integers: the residues of X' + t Y' and
    X' - t Y' (X', Y' the parts scaled and rounded half up), and (P+ + P-)/2, (P+ - P-)/(2t)
    modulo each modulus as the exact real and imaginary products (before reconstruction)."""
    from ozgemm.contracts.moduli import GAUSSIAN_MODULI
    from ozgemm.crt.moduli import sqrt_minus_one
    from ozgemm.kernels.numpy import NumpyBackend

    rng = np.random.default_rng(8)
    r, k = 3, 7
    x = (rng.random((r, k)) - 0.5) * np.exp(3 * rng.standard_normal((r, k)))
    y = (rng.random((r, k)) - 0.5) * np.exp(3 * rng.standard_normal((r, k)))
    shift = np.array([40, 55, 61], dtype=np.int64)
    X = [[_round_half_up(Fraction(float(v)) * 2 ** int(shift[i])) for v in x[i]] for i in range(r)]
    Y = [[_round_half_up(Fraction(float(v)) * 2 ** int(shift[i])) for v in y[i]] for i in range(r)]
    for kind in ("blas", "int64"):
        be = NumpyBackend(kind)
        spec = GAUSSIAN_MODULI[:12]
        mods = be.residue_moduli(spec)
        rp, rm = be.residues_split(x, y, shift, spec)
        for q, mq in enumerate(mods):
            t, h = sqrt_minus_one(mq), mq // 2
            for i in range(r):
                for l in range(k):
                    for got, v in ((rp, X[i][l] + t * Y[i][l]), (rm, X[i][l] - t * Y[i][l])):
                        assert int(got[q, i, l]) == (v + h) % mq - h, (kind, q, i, l)
        # the parts of the products of these rows with themselves (B = the same rows)
        pp, pm = be.residue_products(rp, rp, mods), be.residue_products(rm, rm, mods)
        for q, mq in enumerate(mods):
            t = sqrt_minus_one(mq)
            for i in range(r):
                for j in range(r):
                    re = sum(X[i][l] * X[j][l] - Y[i][l] * Y[j][l] for l in range(k))
                    im = sum(X[i][l] * Y[j][l] + Y[i][l] * X[j][l] for l in range(k))
                    P, M = int(pp[q, i, j]), int(pm[q, i, j])
                    assert (P + M) * pow(2, -1, mq) % mq == re % mq
                    assert (P - M) * pow(2 * t, -1, mq) % mq == im % mq


def test_split_form_is_chosen_by_its_gemm_count():
    """The split form's moduli where their count takes fewer INT8 GEMMs at two per modulus than
    the table's at three, also under a max_gemms cap its count (moduli plus the bound GEMM, the
    cap's units) stays within; the three-product form for a fixed moduli count, a cap only the
    table's count fits, and widths beyond the split table (dd with a wide spread), each keeping
    the promise."""
    from ozgemm.crt.moduli import splits

    rng = np.random.default_rng(21)
    a, b = _operands(rng, 5, 6, 4, 0.5)
    for contract, split in (("fp64", True), ("fp64-fast:moduli=16", False), ("fp32", True)):
        x, y = (a.astype(np.complex64), b.astype(np.complex64)) if contract == "fp32" else (a, b)
        c, (p,) = ozgemm.matmul(x, y, contract=contract, return_plan=True)
        assert splits(p.moduli) == split, contract
        assert ("run as 2 INT8 GEMMs" in p.info()["widened"]) == split
    free = ozgemm.matmul(a, b, contract="fp64", return_plan=True)[1][0]
    three = ozgemm.matmul(a, b, contract=f"fp64:moduli={free.info()['widened'].split('form: ')[1].split()[0]}",
                          return_plan=True)[1][0]
    assert splits(free.moduli) and not splits(three.moduli) and three.int8_gemms < free.int8_gemms
    for cap, split in ((free.int8_gemms, True), (three.int8_gemms, False)):
        con = ozgemm.load_contract("fp64").with_(max_gemms=cap)
        c, (p,) = ozgemm.matmul(a, b, contract=con, return_plan=True)
        assert splits(p.moduli) == split and p.int8_gemms <= cap, cap
        assert ("run as 2 INT8 GEMMs" if split else "run as 3 INT8 GEMMs") in p.info()["widened"]
        _check_componentwise(c, a, b, "fp64")
    a, b = _operands(rng, 4, 5, 3, 12.0)
    c, (p,) = ozgemm.matmul(a, b, contract="dd", return_plan=True)
    assert p.method == "bands" or not splits(p.moduli)

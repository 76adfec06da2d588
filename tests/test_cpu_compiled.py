"""The CPU engine's compiled reconstruction (ozgemm.kernels.cpu_compiled, numba: the [cpu]
extra): its rounding against an exact integer rounding written here, and whole products
bit-identical to the numpy code (OZGEMM_CPU_COMPILED=0) for every contract and layout that
reaches it. Skipped where numba is not installed."""
import math
from fractions import Fraction

import numpy as np
import pytest

import ozgemm
from ozgemm.contracts.formats import FORMATS
from ozgemm.crt.moduli import garner_constants
from ozgemm.kernels.numpy import NumpyBackend, compiled_kernels
from ozgemm.verify.inputs import phi_matrix

pytest.importorskip("numba")


def _round_exact(v: int, e: int, p: int, emin_sub: int, emax: int, dtype):
    """v 2**e rounded to nearest-even with p bits, gradual underflow at 2**emin_sub, overflow
    to inf, a zero result +0: integer arithmetic only, independent of the code under test."""
    mag = abs(v)
    if mag == 0:
        return dtype(0.0)
    top = mag.bit_length() - 1 + e  # 2**top <= |v 2**e| < 2**(top+1)
    q = max(top - (p - 1), emin_sub)  # exponent of the last kept bit
    if e >= q:
        mant = mag << (e - q)
    else:
        sh = q - e
        mant, rem = divmod(mag, 1 << sh)
        half = 1 << (sh - 1)
        if rem > half or (rem == half and mant & 1):
            mant += 1
    if mant == 0:
        return dtype(0.0)
    if mant >> p:
        mant >>= 1
        q += 1
    if mant.bit_length() + q > emax + 1:
        out = dtype(np.inf)
    else:
        out = dtype(math.ldexp(mant, q))
    return -out if v < 0 else out


def _cases(rng, n_moduli, p):
    """C' values with |C'| < M/2 + 1 (M of n_moduli table moduli) and scales: random widths,
    exact ties and near-ties at the rounding position, carries to 2**p, powers of two, the
    bound, zero."""
    M = math.prod(garner_constants(n_moduli).moduli)
    lim = M // 2
    vals = [0, 1, -1, lim, -lim, lim - 1]
    for _ in range(300):
        vals.append(int(rng.integers(1, 1 << 62)) * (1 << int(rng.integers(0, max(1, lim.bit_length() - 62)))) % lim)
    for w in range(p + 1, min(lim.bit_length(), p + 60), 7):
        base = 1 << w
        drop = w - p + 1
        for d in (-1, 0, 1):
            vals += [base + (1 << (drop - 1)) + d, (base | (1 << drop)) + (1 << (drop - 1)) + d,  # ties, odd/even
                     (1 << (w + 1)) - 1, base]  # a carry to the next power of two
    vals = [v if v < lim else lim for v in vals]
    signs = rng.choice([-1, 1], size=len(vals))
    return [int(s) * v for s, v in zip(signs, vals)]


@pytest.mark.parametrize("fmt_name", ["binary64", "binary32"])
@pytest.mark.parametrize("n_moduli", [3, 9, 16, 17, 25])
def test_rounding_matches_exact_rounding(fmt_name, n_moduli, monkeypatch):
    monkeypatch.setenv("OZGEMM_CPU_COMPILED", "1")
    fmt = FORMATS[fmt_name]
    dtype = np.float64 if fmt_name == "binary64" else np.float32
    emax = 1023 if fmt_name == "binary64" else 127
    rng = np.random.default_rng(n_moduli)
    be = NumpyBackend("blas")
    moduli = be.residue_moduli(n_moduli)
    vals = _cases(rng, n_moduli, fmt.p)
    R = len(vals)
    c = np.array([[v % p for v in vals] for p in moduli], dtype=np.float64)
    for e0 in (0, fmt.emin_sub, fmt.emin_sub - 40, emax - 60, emax + 10, -200):
        # per entry: the scale that puts its top bit near 2**e0 (normal, subnormal, zero, inf)
        e = np.array([e0 - max(abs(v).bit_length(), 1) + int(rng.integers(-3, 4)) for v in vals], dtype=np.int64)
        got = be.reconstruct_exponents(c.copy(), n_moduli, e, fmt)
        want = np.array([_round_exact(v, int(x), fmt.p, fmt.emin_sub, emax, dtype) for v, x in zip(vals, e)])
        assert got.dtype == dtype and got.shape == (R,)
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), e0


def _dd_exact(v: int, e: int):
    """The double-double [hi, lo] of v 2**e: hi = RN(v 2**e) (binary64, gradual underflow,
    overflow to inf), lo = RN(v 2**e - hi) from the exact remainder as a Fraction (its
    denominator a power of two), lo = +0 where hi is infinite; integers only."""
    hi = _round_exact(v, e, 53, -1074, 1023, np.float64)
    if not np.isfinite(hi):
        return hi, np.float64(0.0)
    rem = Fraction(v) * Fraction(2) ** e - Fraction(float(hi))
    den = rem.denominator
    assert den & (den - 1) == 0
    return hi, _round_exact(rem.numerator, -(den.bit_length() - 1), 53, -1074, 1023, np.float64)


def _dd_cases(rng, n_moduli):
    """:func:`_cases` with ties and carries at hi's rounding position (p = 53) and at p = 106,
    and values whose remainder is a tie of its own rounding (54 bits, odd or even) beside a
    hi that is exact, rounded down or rounded up (a negative remainder), at several widths."""
    lim = math.prod(garner_constants(n_moduli).moduli) // 2
    vals = _cases(rng, n_moduli, 53) + _cases(rng, n_moduli, 106)
    t54 = [(1 << 53) + 1, (1 << 53) + 3, (1 << 54) - 1, 1 << 53]
    for w in range(56, lim.bit_length() - 1, 11):
        for s in sorted({0, 1, max(0, w - 110), max(0, w - 60)}):
            for t in t54:
                if (t << s) >= (1 << (w - 53)):
                    continue  # the remainder must stay below hi's half-ulp
                vals += [(1 << w) + (t << s), (1 << w) - (t << s), ((1 << w) | (1 << (w - 52))) + (t << s),
                         (1 << (w + 1)) - (1 << (w - 52)) - (t << s)]
    signs = rng.choice([-1, 1], size=len(vals))
    return [int(sg) * min(abs(v), lim) for sg, v in zip(signs, vals)]


@pytest.mark.parametrize("n_moduli", [3, 9, 16, 21, 25, 31, 40])
def test_dd_rounding_matches_exact_rounding(n_moduli, monkeypatch):
    """The compiled dd reconstruction (hi, lo) against :func:`_dd_exact` per entry, the
    scales putting hi near 1, in binary64's subnormal range (hi subnormal, or normal with a
    subnormal lo), below it (zero results), and at and beyond the overflow threshold."""
    import ozgemm.kernels.cpu_compiled as ck

    monkeypatch.setenv("OZGEMM_CPU_COMPILED", "1")
    calls = []
    real = ck.crt_round_dd_bits
    monkeypatch.setattr(ck, "crt_round_dd_bits", lambda *a: calls.append(1) or real(*a))
    fmt = FORMATS["dd"]
    rng = np.random.default_rng(100 + n_moduli)
    be = NumpyBackend("blas")
    moduli = be.residue_moduli(n_moduli)
    vals = _dd_cases(rng, n_moduli)
    R = len(vals)
    c = np.array([[v % p for v in vals] for p in moduli], dtype=np.float64)
    for e0 in (0, -200, -969, -1000, -1021, -1060, -1074, -1074 - 40, 963, 1024, 1033):
        # per entry: the scale that puts its top bit near 2**e0
        e = np.array([e0 - max(abs(v).bit_length(), 1) + int(rng.integers(-3, 4)) for v in vals], dtype=np.int64)
        got = be.reconstruct_exponents(c.copy(), n_moduli, e, fmt)
        want = np.array([_dd_exact(v, int(x)) for v, x in zip(vals, e)]).T
        assert got.dtype == np.float64 and got.shape == (2, R)
        bad = np.flatnonzero((got.view(np.uint64) != want.view(np.uint64)).any(axis=0))
        assert bad.size == 0, (e0, [(vals[i], int(e[i]), got[:, i], want[:, i]) for i in bad[:3]])
    assert calls


@pytest.mark.parametrize("shape", [(1, 300, 40), (40, 300, 1), (64, 3, 64), (33, 1100, 17), (1, 1, 1)])
@pytest.mark.parametrize("phi", [0.5, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_dd_products_bit_identical_to_the_numpy_code(shape, phi, dtype, monkeypatch):
    """dd products (real and complex, thin ones and a k beyond one GEMM block) through the
    compiled reconstruction, bit for bit the numpy code's (OZGEMM_CPU_COMPILED=0)."""
    import ozgemm.kernels.cpu_compiled as ck

    calls = []
    real = ck.crt_round_dd_bits
    monkeypatch.setattr(ck, "crt_round_dd_bits", lambda *a: calls.append(1) or real(*a))
    m, k, n = shape
    rng = np.random.default_rng(hash((shape, phi, np.dtype(dtype).name)) % 2**32)
    a, b = phi_matrix(rng, (m, k), phi), phi_matrix(rng, (k, n), phi)
    if dtype == np.complex128:
        a = a + 1j * phi_matrix(rng, (m, k), phi)
        b = b - 1j * phi_matrix(rng, (k, n), phi)
    got, want = _both(monkeypatch, lambda: ozgemm.matmul(a, b, contract="dd"))
    assert calls and got.hi.dtype == want.hi.dtype == dtype
    assert _same(got, want)


def test_the_compiled_kernel_runs_and_can_be_switched_off(monkeypatch):
    import ozgemm.kernels.cpu_compiled as ck

    calls = []
    real = ck.crt_round_bits
    monkeypatch.setattr(ck, "crt_round_bits", lambda *a: calls.append(1) or real(*a))
    a, b = phi_matrix(np.random.default_rng(3), (20, 30), 0.5), phi_matrix(np.random.default_rng(4), (30, 10), 0.5)
    monkeypatch.setenv("OZGEMM_CPU_COMPILED", "1")
    assert compiled_kernels() is ck
    ozgemm.matmul(a, b)
    assert calls
    calls.clear()
    monkeypatch.setenv("OZGEMM_CPU_COMPILED", "0")
    assert compiled_kernels() is None
    ozgemm.matmul(a, b)
    assert not calls


def _both(monkeypatch, f):
    monkeypatch.setenv("OZGEMM_CPU_COMPILED", "0")
    want = f()
    monkeypatch.setenv("OZGEMM_CPU_COMPILED", "1")
    got = f()
    return got, want


def _same(got, want):
    if isinstance(want, ozgemm.DD):
        return np.array_equal(got.hi.view(np.uint8), want.hi.view(np.uint8)) and np.array_equal(
            got.lo.view(np.uint8), want.lo.view(np.uint8))
    return got.dtype == want.dtype and np.array_equal(np.asarray(got).view(np.uint8), np.asarray(want).view(np.uint8))


@pytest.mark.parametrize("contract,dtype", [("fp64", np.float64), ("fp32", np.float32), ("fp64-dgemm", np.float64),
                                            ("fp32-sgemm", np.float32), ("fp64-fast", np.float64),
                                            ("fp32-fast", np.float32), ("dd", np.float64)])
@pytest.mark.parametrize("shape,phi,scale", [((7, 33, 5), 0.5, 0), ((64, 1100, 48), 2, 0), ((40, 50, 30), 8, -1000),
                                             ((40, 50, 30), 8, 1000), ((1, 1, 1), 0.5, 0), ((130, 70, 129), 4, -1070)])
def test_products_bit_identical_to_the_numpy_code(contract, dtype, shape, phi, scale, monkeypatch):
    m, k, n = shape
    rng = np.random.default_rng(hash((contract, shape, phi)) % 2**32)
    a, b = phi_matrix(rng, (m, k), phi, dtype), phi_matrix(rng, (k, n), phi, dtype)
    if scale:  # toward the ends of the range (subnormal results, underflow to zero, overflow)
        s = scale if dtype == np.float64 else scale // 8
        a = a * np.ldexp(dtype(1), s // 2).astype(dtype)
        b = b * np.ldexp(dtype(1), s - s // 2).astype(dtype)
    try:
        got, want = _both(monkeypatch, lambda: ozgemm.matmul(a, b, contract=contract))
    except ozgemm.ContractError:
        pytest.skip("the contract refuses these operands (either code)")
    assert _same(got, want)


def test_stacks_complex_and_gemm_bit_identical_to_the_numpy_code(monkeypatch, stacked):
    rng = np.random.default_rng(9)
    a, b = phi_matrix(rng, (50, 6, 9), 1.0), phi_matrix(rng, (1, 9, 7), 1.0)
    got, want = _both(monkeypatch, lambda: ozgemm.matmul(a, b))
    assert _same(got, want) and all(stacked)
    za = phi_matrix(rng, (12, 20), 0.5) + 1j * phi_matrix(rng, (12, 20), 2)
    zb = (phi_matrix(rng, (20, 8), 0.5) - 1j * phi_matrix(rng, (20, 8), 0.5)).astype(np.complex64)
    for x, y in ((za, za.T[:, :5]), (za.astype(np.complex64), zb)):
        got, want = _both(monkeypatch, lambda: ozgemm.matmul(x, y))
        assert _same(got, want)
    c = phi_matrix(rng, (12, 8), 0.5)
    got, want = _both(monkeypatch, lambda: ozgemm.gemm(za.real, zb.real.astype(np.float64), c, alpha=-1.0, beta=1.0,
                                                       contract="dd"))
    assert _same(got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_statistics_and_residues_equal_the_numpy_code(dtype):
    """The compiled row statistics and scaled residues against the array code of
    ozgemm.precision.stats / ozgemm.crt.residues: zeros, signed zeros, subnormals, the ends
    of the range, rows spanning the whole range (ldexp's underflow to 0 in the 1-norm), and
    shifts that scale left (beyond int64: the power-of-two factor) and right (rounding)."""
    import ozgemm.kernels.cpu_compiled as ck
    from ozgemm.crt.moduli import wide_moduli
    from ozgemm.crt.residues import scaled_residues
    from ozgemm.precision.stats import LB_BITS, NORM_BITS, row_stats

    rng = np.random.default_rng(17)
    fi = np.finfo(dtype)
    x = phi_matrix(rng, (60, 77), 6.0, dtype)
    x[::4, ::5] = 0
    x[1, :4] = [-0.0, fi.smallest_subnormal, -fi.smallest_subnormal * 3, fi.max]  # the whole range
    x[2] = fi.smallest_subnormal * rng.integers(1, 2**20, 77)
    x[3] = 0
    x[4, :3] = [fi.max, -fi.max, fi.tiny]
    x[5, :6] = [1.0, fi.smallest_subnormal, -fi.smallest_subnormal * 5, 0.75, fi.tiny / 3, 2.0**-30]  # beside O(1)
    x[6] = fi.smallest_subnormal * rng.integers(1, 2**20, 77) + (np.arange(77) % 9 == 0)
    x[8] = -0.0  # negative zeros only: a zero row
    names = ["mant", "exp", "q", "E", "width", "n1_int", "n2_int", "qsum", "zero_row"]
    for y in (x, x[:, :0]):  # (no columns: every row a zero row)
        st = row_stats(y, np)
        got = ck.row_stats(np.ascontiguousarray(y), NORM_BITS, LB_BITS)
        for name, g in zip(names, got):
            assert np.array_equal(g, getattr(st, name)), name
    st = row_stats(x, np)
    assert st.zero_row[[3, 8]].all() and not st.zero_row[[1, 2, 4, 5, 6]].any()  # (the cases are there)
    for beta in (30, 57, 120, 400, 1200):
        shift = np.where(st.zero_row, 0, beta - st.E).astype(np.int64) + rng.integers(-2, 3, x.shape[0])
        for n_moduli in (3, 16, 30):
            mods = wide_moduli(n_moduli)
            want = scaled_residues(st.mant, st.exp, shift, mods, np, dtype=np.float64)
            out = np.empty_like(want)
            assert np.array_equal(ck.scaled_residues(st.mant, st.exp, shift, mods, out), want), (beta, n_moduli)
    y = x.astype(np.float64)
    y[7, 7] = np.inf
    assert ck.row_stats(y, NORM_BITS, LB_BITS) is None  # NaN/Inf: the numpy code's statistics


def test_subnormal_entries_beside_ordinary_ones_plan_and_round_as_the_numpy_code(monkeypatch):
    """A row whose largest entry is O(1) and whose others are subnormal: each subnormal adds
    one to the 1-norm bound (ldexp gives the smallest subnormal, its ceil 1), so the plan —
    here the width and moduli count sit right at a threshold — is the numpy code's."""
    from ozgemm.verify.reference import exact_product, measure

    s = 3000
    v, t = 0.05 + 3 * 2.0**-57, 0.6735839843750001
    a = np.array([[0.5] + [v] * 8 + [5e-324] * s])
    b = np.array([1.0] + [t] * 8 + [2.0**-20] * s)[:, None]
    got, want = _both(monkeypatch, lambda: ozgemm.matmul(a, b, return_plan=True))
    assert (got[1][0].n_moduli, got[1][0].beta) == (want[1][0].n_moduli, want[1][0].beta)
    assert _same(got[0], want[0])
    assert measure(got[0], exact_product(a, b), contract=ozgemm.load_contract("fp64")).breaches == 0


@pytest.mark.parametrize("shared", [None, "a", "b"])
def test_stacked_plan_scalars_equal_the_numpy_code(shared, monkeypatch):
    """The compiled per-product planner scalars of a stack (one pass over the bound GEMMs, a
    shared operand's statistics once) against planner.stack_plan_scalars, entry by entry,
    for products whose widths reach a row's or column's exact regime, zero rows and columns
    and a wide spread between products."""
    rng = np.random.default_rng({None: 0, "a": 1, "b": 2}[shared])
    P, m, k, n = 9, 6, 13, 5
    a = phi_matrix(rng, (1 if shared == "a" else P, m, k), 4.0)
    b = phi_matrix(rng, (1 if shared == "b" else P, k, n), 4.0)
    a[0, 1] = 0.0
    b[0, :, 2] = 0.0
    a[0, 2, 3:] = 0.0  # a row exact at a small width
    b[0, 5:, 0] = np.ldexp(1.0, 30)  # a column exact at a small width, far above the rest
    if a.shape[0] > 1:
        a[3] *= 2.0 ** 400
    # a product whose widest entry is set by B's 1-norms: an A row with one significant entry
    # against B's columns of k equal entries (exact at width 1, 1-norm k/2), unlike the other products'
    a[-1, 0] = 2.0 ** -60
    a[-1, 0, 0] = 1.0
    b[-1] = 1.0
    be = NumpyBackend("blas")
    sa = be.row_stats(a.reshape(-1, k))
    sb = be.row_stats(np.ascontiguousarray(b.transpose(0, 2, 1)).reshape(-1, k))
    shape = (P, m, n, shared == "a", shared == "b")
    for bits in (53, 24, 47):
        monkeypatch.setenv("OZGEMM_CPU_COMPILED", "0")
        want = be.stack_scalars(sa, sb, shape, bits, k, 2.0 ** -53)
        monkeypatch.setenv("OZGEMM_CPU_COMPILED", "1")
        got = be.stack_scalars(sa, sb, shape, bits, k, 2.0 ** -53)
        assert got.dtype == want.dtype == np.int64 and got.shape == (P, 6)
        assert np.array_equal(got, want), (bits, got, want)

"""Per-phase conformance of every available backend (kernels/base.py's Backend protocol).

Each phase is checked on its own against exact values from Python integers and Fractions,
computed here from the input floats (never from ozgemm's own code): the non-finite pass, the
row statistics, the exact INT8 GEMM, the planner's scalars (equal to precision/'s exact
integers), the shifts, the scaled residues, and the exact products with the CRT
reconstruction and the one rounding. numpy backends run everywhere; the CUDA backend where
CuPy and a GPU are present (the same assertions, with ``==``)."""
from math import prod
import math
from fractions import Fraction

import numpy as np
import pytest

from ozgemm._xp import gpu_available, to_numpy
from ozgemm.contracts.formats import FORMATS
from ozgemm.contracts.moduli import MODULI
from ozgemm.kernels import Backend, get_backend
from ozgemm.precision import planner as P
from ozgemm.precision.stats import row_stats

NAMES = ["cpu", "cpu-int64"] + (["cuda"] if gpu_available() else [])


@pytest.fixture(params=NAMES)
def backend(request):
    return get_backend(request.param)


def _dev(backend, x):
    return backend.xp.asarray(x)


def _rows(seed, r=6, k=37, spread=12):
    """Rows with exponent spread, signs, zeros, a zero row and exact integers."""
    rng = np.random.default_rng(seed)
    x = (rng.random((r, k)) - 0.5) * np.exp2(rng.integers(-spread, spread, (r, k)))
    x[1] = 0.0
    x[2, ::4] = 0.0
    x[3, :5] = [3.0, -7.0, 1.0, 0.5, -0.25]
    return x


def _exp_top(v: float) -> int:
    """|v| < 2**top, |v| >= 2**(top-1)."""
    return math.frexp(v)[1]


def _lsb(v: float) -> int:
    m, e = math.frexp(v)
    f = Fraction(v)
    j = e - 60
    while Fraction(2) ** (j + 1) <= abs(f) and (f / Fraction(2) ** (j + 1)).denominator == 1:
        j += 1
    return j


def test_protocol_is_implemented(backend):
    assert isinstance(backend, Backend)
    for attr in ("name", "xp", "speculates", "flags_nonfinite"):
        assert hasattr(backend, attr)


def test_nonfinite_pass(backend):
    a = np.array([[1.0, np.nan, 2.0], [3.0, 4.0, 5.0], [np.inf, 0.0, 0.0]])
    b = np.array([[1.0, 2.0], [-np.inf, 0.0], [1.0, 1.0]])
    rows, cols, anyb = backend.nonfinite_rows_cols(_dev(backend, a), _dev(backend, b))
    assert to_numpy(rows).tolist() == [not all(map(math.isfinite, r)) for r in a.tolist()]
    assert to_numpy(cols).tolist() == [not all(map(math.isfinite, c)) for c in b.T.tolist()]
    assert anyb is True
    rows, cols, anyb = backend.nonfinite_rows_cols(_dev(backend, a[1:2]), _dev(backend, b[:, 1:]))
    assert anyb is False


@pytest.mark.parametrize("seed", [0, 1])
def test_row_statistics_exact(backend, seed):
    x = _rows(seed)
    st = backend.row_stats(_dev(backend, x))
    for i, row in enumerate(x.tolist()):
        nz = [v for v in row if v != 0]
        if not nz:
            assert bool(to_numpy(st.zero_row)[i]) and int(to_numpy(st.E)[i]) == 0
            continue
        E = max(_exp_top(v) for v in nz)
        width = E - min(_lsb(v) for v in nz)
        q = [math.floor(abs(Fraction(v)) * Fraction(2) ** (7 - E)) for v in row]
        n1 = sum(math.ceil(abs(Fraction(v)) * Fraction(2) ** (30 - E)) for v in row)
        n2 = sum(math.ceil(abs(Fraction(v)) * Fraction(2) ** (15 - E)) ** 2 for v in row)
        assert int(to_numpy(st.E)[i]) == E
        assert int(to_numpy(st.width)[i]) == width
        assert to_numpy(st.q)[i].tolist() == q
        assert int(to_numpy(st.qsum)[i]) == sum(q)
        assert int(to_numpy(st.n1_int)[i]) == n1
        assert int(to_numpy(st.n2_int)[i]) == n2
        assert not bool(to_numpy(st.zero_row)[i])


@pytest.mark.parametrize("k", [1, 5, 1023, 1024, 1025, 2100])
def test_exact_int8_gemm(backend, k):
    rng = np.random.default_rng(k)
    a = rng.integers(-128, 128, size=(7, k), dtype=np.int8)
    bt = rng.integers(-128, 128, size=(5, k), dtype=np.int8)
    a[0] = -128
    bt[0] = -128  # the largest sums: 2**14 k
    want = [[sum(int(x) * int(y) for x, y in zip(r, c)) for c in bt.tolist()] for r in a.tolist()]
    got = to_numpy(backend.gemm_exact(_dev(backend, a), _dev(backend, bt)))
    assert got.astype(np.int64).tolist() == want


def test_planner_scalars_equal_precision(backend):
    """The backend's planner scalars equal precision/'s exact integers on the same data."""
    x, y = _rows(3, 6, 40), _rows(4, 5, 40).T.copy()
    sa_np, sb_np = row_stats(x, np), row_stats(y.T, np)
    lb_np = get_backend("cpu").gemm_exact(sa_np.q, sb_np.q)
    sa, sb = backend.row_stats(_dev(backend, x)), backend.row_stats(_dev(backend, y).T)
    lb = backend.gemm_exact(sa.q, sb.q)
    for bits, k in ((53, 40), (24, 40), (106, 160)):
        want = P.plan_scalars(sa_np, sb_np, lb_np, bits, k, 2.0 ** -bits, np)
        got = to_numpy(backend.plan_scalars(sa, sb, lb, bits, k, 2.0 ** -bits))
        assert got.tolist() == want.tolist(), bits


def test_shifts(backend):
    x, y = _rows(5), _rows(6).T.copy()
    sa, sb = backend.row_stats(_dev(backend, x)), backend.row_stats(_dev(backend, y).T)
    s, t = backend.shifts(60, sa, sb)
    for st, sh in ((sa, s), (sb, t)):
        E, z = to_numpy(st.E).tolist(), to_numpy(st.zero_row).tolist()
        assert to_numpy(sh).tolist() == [0 if zz else 60 - e for e, zz in zip(E, z)]


def _scaled(v: float, s: int) -> int:
    """round(v 2**s), halves up (the scaling's rounding)."""
    return math.floor(Fraction(v) * Fraction(2) ** s + Fraction(1, 2))


@pytest.mark.parametrize("n_moduli", [1, 8, 17])
def test_residues(backend, n_moduli):
    x = _rows(7)
    st = backend.row_stats(_dev(backend, x))
    shift = np.array([40, 0, 3, 12, 70, 25], dtype=np.int64)
    got = to_numpy(backend.residues(_dev(backend, x), st, _dev(backend, shift), n_moduli))
    r, k = x.shape
    moduli = backend.residue_moduli(n_moduli)  # the backend's own (CPU: primes below 2**20)
    assert prod(moduli) >= prod(MODULI[:n_moduli])
    if backend.name != "cpu":
        assert tuple(moduli) == tuple(MODULI[:n_moduli])
    for q, m in enumerate(moduli):
        for i in range(r):
            want = [(_scaled(v, int(shift[i])) + m // 2) % m - m // 2 for v in x[i].tolist()]
            assert got[q, i, :k].tolist() == want, (q, i)
    # a tile of rows gives the same residues as the whole
    part = to_numpy(backend.residues(_dev(backend, x), st, _dev(backend, shift), n_moduli, 2, 5))
    assert np.array_equal(part[:, :3, :k], got[:, 2:5, :k])


@pytest.mark.parametrize("fmt", ["binary64", "dd"])
def test_products_reconstruction_rounding(backend, fmt):
    """Residue GEMMs, CRT reconstruction and one rounding: the correctly rounded value of the
    exact integer product of the scaled rows times 2**-(s_i + t_j)."""
    x, y = _rows(8, 5, 30, 6), _rows(9, 4, 30, 6).T.copy()
    s = np.array([50, 0, 51, 49, 52], dtype=np.int64)
    t = np.array([48, 50, 0, 47], dtype=np.int64)
    N = 17
    sa, sb = backend.row_stats(_dev(backend, x)), backend.row_stats(_dev(backend, y).T)
    ra = backend.residues(_dev(backend, x), sa, _dev(backend, s), N)
    rb = backend.residues(_dev(backend, y).T, sb, _dev(backend, t), N)
    c = backend.residue_products(ra, rb, backend.residue_moduli(N))
    m, n = x.shape[0], y.shape[1]
    out = np.empty((2, m, n)) if fmt == "dd" else np.empty((m, n))
    out = _dev(backend, out)
    backend.reconstruct_round(c, _dev(backend, s), _dev(backend, t), N, FORMATS[fmt], out)
    out = to_numpy(out)
    for i in range(m):
        for j in range(n):
            X = sum(_scaled(a, int(s[i])) * _scaled(b, int(t[j])) for a, b in zip(x[i].tolist(), y[:, j].tolist()))
            v = Fraction(X) * Fraction(2) ** -(int(s[i]) + int(t[j]))
            hi = float(v)  # correctly rounded (round to nearest even)
            if fmt == "dd":
                assert (out[0, i, j], out[1, i, j]) == (hi, float(v - Fraction(hi))), (i, j)
            else:
                assert out[i, j] == hi, (i, j)


def test_row_tiles_cover_the_rows_once(backend):
    import ozgemm

    a, b = _rows(10, 40, 30), _rows(11, 30, 20)
    p = ozgemm.plan(_dev(backend, a), _dev(backend, b), engine=backend)
    with backend.row_tiles(p) as tiles:
        spans = [(t.i0, t.i1) for t in tiles]
    assert spans[0][0] == 0 and spans[-1][1] == 40
    assert all(x[1] == y[0] and x[0] < x[1] for x, y in zip(spans, spans[1:]))


def test_available_memory_is_read_once_per_interval(monkeypatch):
    """The CPU backend's MemAvailable reading serves the calls of MEMINFO_TTL seconds, then is
    read again (and the value read is the one /proc/meminfo gives, in bytes)."""
    import builtins
    import io

    import ozgemm.kernels.numpy as K

    clock = [1000.0]
    reads = []

    def fake_open(path, *a, **k):
        assert path == "/proc/meminfo"
        reads.append(path)
        return io.StringIO(f"MemTotal: 99 kB\nMemAvailable: {len(reads)} kB\n")

    monkeypatch.setattr(K.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(K, "_meminfo", [float("-inf"), 0])
    assert K.available_memory() == 1024 and len(reads) == 1
    clock[0] += K.MEMINFO_TTL / 2
    assert K.available_memory() == 1024 and len(reads) == 1
    clock[0] += K.MEMINFO_TTL
    assert K.available_memory() == 2048 and len(reads) == 2

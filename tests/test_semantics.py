"""The IEEE semantics table of docs/semantics.md, row by row, on the CPU engine.

Each row: operands, numpy's float64/float32 result (computed here), and the expected ozgemm
result. All rows agree with numpy except row 10 (numpy overflows in an intermediate sum; the
exact product is finite and ozgemm returns it correctly rounded).
"""
import numpy as np
import pytest

import ozgemm
from ozgemm import ContractError

inf, nan = np.inf, np.nan


def rows(dt):
    big = float(np.finfo(dt).max)
    tiny = float(np.finfo(dt).smallest_subnormal)
    half_big = big / 2
    return [
        # (id, A, B, expected ozgemm value or "numpy")
        (1, [[nan, 1.0]], [[1.0], [1.0]], "numpy"),
        (2, [[1.0, 1.0]], [[nan], [1.0]], "numpy"),
        (3, [[inf, 1.0]], [[0.0], [1.0]], "numpy"),
        (4, [[inf, -inf]], [[1.0], [1.0]], "numpy"),
        (5, [[inf, 1.0]], [[2.0], [1.0]], "numpy"),
        (6, [[inf, 1.0]], [[-2.0], [1.0]], "numpy"),
        (7, [[-inf, 1.0]], [[-2.0], [1.0]], "numpy"),
        (8, [[inf, 1.0], [1.0, 2.0]], [[1.0, -1.0, 0.0], [1.0, 1.0, 1.0]], "numpy"),
        (9, [[half_big, half_big, half_big]], [[1.0], [1.0], [1.0]], "numpy"),
        (10, [[big, big, -big]], [[1.0], [1.0], [1.0]], big),
        (11, [[1.0, -1.0]], [[1.0], [1.0]], "numpy"),
        (12, [[-0.0, -0.0]], [[1.0], [1.0]], "numpy"),
        (13, [[-tiny ** 0.5 if dt == np.float64 else -1e-30]], [[tiny ** 0.5 if dt == np.float64 else 1e-30]], "numpy"),
        (14, [[tiny]], [[3.0]], "numpy"),
        (15, [[tiny]], [[0.75]], "numpy"),
        (16, [[tiny]], [[0.5]], "numpy"),
        (17, np.zeros((2, 0)), np.zeros((0, 3)), "numpy"),
        (18, [[inf, -big]], [[1.0], [big]], inf),
    ]


CONTRACTS = [("fp64", np.float64), ("fp64-fast", np.float64), ("fp32", np.float32), ("fp32-fast", np.float32)]


@pytest.mark.parametrize("contract,dt", CONTRACTS)
def test_semantics_table(contract, dt):
    for rid, A, B, expect in rows(dt):
        a = np.array(A, dtype=dt)
        b = np.array(B, dtype=dt)
        with np.errstate(all="ignore"):
            want = np.matmul(a, b)
        got = ozgemm.matmul(a, b, contract=contract)
        assert got.shape == want.shape, rid
        if expect == "numpy":
            assert np.array_equal(np.isnan(got), np.isnan(want)), (rid, got, want)
            fin = ~np.isnan(want)
            assert np.array_equal(got[fin], want[fin]), (rid, got, want)
            assert np.array_equal(np.signbit(got[fin]), np.signbit(want[fin])), (rid, got, want)
        else:
            # numpy float64 overflows in an intermediate sum (inf); the exact value is finite.
            # ozgemm returns it, or +inf where the overflow allowance of the contract applies
            # (|AB| + bound reaches the threshold): the audit must count no breach either way.
            from ozgemm.verify.reference import exact_product, measure

            if rid == 18:  # an Inf term and a finite term beyond the range: the sum is +Inf
                assert got[0, 0] == np.inf, (got, want)  # numpy: NaN or +Inf, by BLAS path
                continue
            assert got[0, 0] in (dt(expect), np.inf), (rid, got)
            assert measure(got, exact_product(a, b), ozgemm.load_contract(contract)).breaches == 0
            if dt == np.float64:
                assert np.all(np.isinf(want)), rid
                if contract == "fp64":
                    assert got[0, 0] == expect


def test_regression_overflowing_finite_term_next_to_inf():
    """A case from the property tests: numpy's class depends on its BLAS path (FMA or not) when a
    finite product overflows next to an Inf term; ozgemm decides the class exactly."""
    from ozgemm.verify.audit import measure_any

    a = np.array([[5.8e-3, inf, -8.76, 5.49, 5e-324, -6.8, 3.4e-3]])
    b = np.array([[3.2e-3], [7.2], [1e308], [-53.6], [-0.56], [0.6], [72.3]])
    c = ozgemm.matmul(a, b, contract="fp64-fast")
    assert c[0, 0] == inf
    assert measure_any(c, a, b, ozgemm.load_contract("fp64-fast"))["breaches"] == 0


def test_specials_raise():
    c = ozgemm.load_contract("fp64").with_(specials="raise", name="strict")
    with pytest.raises(ContractError, match="non-finite"):
        ozgemm.matmul(np.array([[nan, 1.0]]), np.ones((2, 1)), contract=c)
    with pytest.raises(ContractError, match="non-finite"):
        ozgemm.matmul(np.ones((1, 2)), np.array([[inf], [1.0]]), contract=c)
    assert ozgemm.matmul(np.ones((1, 2)), np.ones((2, 1)), contract=c)[0, 0] == 2.0


def test_overflow_allowance_is_sided():
    """An infinity is allowed on the side the bound reaches (AB + bound >= Omega for +inf,
    AB - bound <= -Omega for -inf): both sides where |A||B| is beyond the range, as for this
    exactly-zero float32 product; a wrong-signed infinity where the bound is small is a breach."""
    from ozgemm.verify.audit import measure_any

    a = np.array([[-3.9954113e36, 3.9954113e36]], np.float32)
    b = np.array([[-5.4484526e14], [-5.4484526e14]], np.float32)
    con = ozgemm.load_contract("fp32")
    for v in (np.float32(np.inf), np.float32(-np.inf), ozgemm.matmul(a, b, contract="fp32")[0, 0]):
        assert measure_any(np.array([[v]], np.float32), a, b, con)["breaches"] == 0
    big = np.array([[3e38, 3e38]], np.float32)  # AB = 6e38 overflows; the bound is small
    one = np.array([[1.0], [1.0]], np.float32)
    assert measure_any(np.array([[np.inf]], np.float32), big, one, con)["breaches"] == 0
    assert measure_any(np.array([[-np.inf]], np.float32), big, one, con)["breaches"] == 1
    assert measure_any(np.array([[np.nan]], np.float32), a, b, con)["breaches"] == 1

"""ozgemm.prepare: an operand's statistics and residues computed once and reused, with results
bit-identical to the unprepared products (compared with ==) and typed errors."""
import numpy as np
import pytest

import ozgemm
from ozgemm.verify.inputs import phi_operands


def _same(x, y):
    if isinstance(x, ozgemm.DD):
        return np.array_equal(x.hi, y.hi) and np.array_equal(x.lo, y.lo)
    return x.dtype == y.dtype and np.array_equal(x.view(np.uint8), y.view(np.uint8))


@pytest.mark.parametrize("contract", ["fp64", "fp32", "dd", "fp64-fast", "fp64-ozaki", "fp128"])
@pytest.mark.parametrize("phi", [0.5, 2.0])
def test_prepared_products_are_bit_identical(contract, phi):
    if contract == "fp128":
        pytest.importorskip("numpy_quaddtype")
    rng = np.random.default_rng(int(phi * 10))
    dt = np.float32 if contract == "fp32" else np.float64
    a, b = phi_operands(rng, 40, 60, 7, phi, dt)
    pa = ozgemm.prepare(a, contract, side="left")
    pb = ozgemm.prepare(b, contract, side="right")
    want = ozgemm.matmul(a, b, contract=contract)
    for _ in range(2):  # the second call reuses the stored residues
        got = ozgemm.matmul(pa, b)
        if contract == "fp128":
            assert np.array_equal(ozgemm.quad_to_bits(got), ozgemm.quad_to_bits(want))
        else:
            assert _same(got, want)
        got = ozgemm.matmul(a, pb)
        assert contract == "fp128" or _same(got, want)
    # a new right-hand side each time (iterative refinement), also one whose spread changes
    # the plan (width, moduli, shifts of A): still the unprepared bits
    wide = (b * np.exp2(np.arange(b.shape[1]) * 9.0)[None, :] * np.exp2(np.arange(b.shape[0]) % 5)[:, None]).astype(dt)
    for i, b2 in enumerate((b * 1.25, b * 3.0, wide)):
        got, want = ozgemm.matmul(pa, b2), ozgemm.matmul(a, b2, contract=contract)
        assert contract == "fp128" or _same(got, want)


def test_prepared_operand_owns_its_values_and_specials_in_the_other_operand():
    rng = np.random.default_rng(1)
    a, b = phi_operands(rng, 20, 30, 5, 1.0)
    p = ozgemm.prepare(a)
    want = ozgemm.matmul(a, b)
    a[0, 0] = 1e300  # the caller's array changes; the prepared copy does not
    assert _same(ozgemm.matmul(p, b), want)
    bn = b.copy()
    bn[3, 2] = np.nan
    bn[4, 4] = np.inf
    a0 = p.array
    assert np.array_equal(ozgemm.matmul(p, bn), ozgemm.matmul(a0, bn), equal_nan=True)


def test_prepare_errors_are_typed():
    a = np.ones((3, 3))
    with pytest.raises(ValueError, match="side"):
        ozgemm.prepare(a, side="top")
    with pytest.raises(ValueError, match="2-D"):
        ozgemm.prepare(np.ones(3))
    with pytest.raises(ValueError, match="NaN or Inf"):
        ozgemm.prepare(np.array([[1.0, np.nan]]))
    with pytest.raises(TypeError, match="DD"):
        ozgemm.prepare(ozgemm.DD(a))
    with pytest.raises(TypeError, match="dtype"):
        ozgemm.prepare(np.ones((2, 2), dtype=np.int64))
    p = ozgemm.prepare(a, "fp64")
    with pytest.raises(ValueError, match="other side"):
        ozgemm.matmul(a, p)
    with pytest.raises(ValueError, match="prepared for contract"):
        ozgemm.matmul(p, a, contract="dd")
    with pytest.raises(ValueError, match="no stacks"):
        ozgemm.matmul(p, np.ones((2, 3, 3)))
    v = np.array([1.0, 2.0, 3.0])  # a vector on the other side: numpy's 1-D rules
    assert _same(ozgemm.matmul(p, v), ozgemm.matmul(a, v, contract="fp64"))

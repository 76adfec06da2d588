"""CPU engines: the BLAS-backed one is bit-identical to exact int64 products, at the bounds."""
import numpy as np
import pytest

from ozgemm.kernels import get_backend
from ozgemm.kernels.numpy import SGEMM_EXACT_K
from ozgemm.precision.planner import KBLOCK_INT32


def int64_ref(a, bt):
    return a.astype(np.int64) @ bt.astype(np.int64).T


def test_block_constants():
    assert SGEMM_EXACT_K == 1024 and 1024 * 128 * 128 == 2**24
    assert KBLOCK_INT32 * 128 * 128 <= 2**31 - 1 < (KBLOCK_INT32 + 1) * 128 * 128


@pytest.mark.parametrize("k", [1, 7, 1023, 1024, 1025, 3000])
def test_blas_engine_exact_at_float32_boundary(k):
    blas = get_backend("cpu")
    # worst case: every product is (-128)(-128) = 2^14, partial sums reach k*2^14
    a = np.full((3, k), -128, dtype=np.int8)
    bt = np.full((2, k), -128, dtype=np.int8)
    a[1] = 127
    got = blas.gemm_exact(a, bt)
    assert np.array_equal(got, int64_ref(a, bt))
    assert got[0, 0] == k * 2**14


def test_blas_equals_int64_engine_random(rng):
    blas, i64 = get_backend("cpu"), get_backend("cpu-int64")
    a = rng.integers(-128, 128, size=(4, 9, 2100), dtype=np.int8)
    bt = rng.integers(-128, 128, size=(4, 11, 2100), dtype=np.int8)
    moduli = (256, 255, 253, 251)
    assert np.array_equal(blas.residue_products(a, bt, moduli), i64.residue_products(a, bt, moduli))
    want = np.stack([int64_ref(a[q], bt[q]) % m for q, m in enumerate(moduli)])
    assert np.array_equal(blas.residue_products(a, bt, moduli), want)


def test_engine_namespace_mismatch():
    with pytest.raises(ValueError):
        get_backend("nope")

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def phi_pair(rng, m, k, n, phi, dtype=np.float64):
    a = (rng.random((m, k)) - 0.5) * np.exp(phi * rng.standard_normal((m, k)))
    b = (rng.random((k, n)) - 0.5) * np.exp(phi * rng.standard_normal((k, n)))
    return a.astype(dtype), b.astype(dtype)

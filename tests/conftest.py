import numpy as np
import pytest

from ozgemm.verify.inputs import phi_operands


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def phi_pair(rng, m, k, n, phi, dtype=np.float64):
    return phi_operands(rng, m, k, n, phi, dtype)


def assert_contract_kept(a, b, name):
    """ozgemm.matmul(a, b) under contract ``name`` (or a Contract) keeps its promise on every entry, checked
    exactly (ozgemm.verify: exact product, and term-by-term classes for NaN/Inf entries).
    Neither a refusal (ContractError) nor a breach is allowed."""
    import ozgemm
    from ozgemm.contracts.contract import as_contract
    from ozgemm.verify.audit import measure_any

    with np.errstate(all="ignore"):
        c = ozgemm.matmul(a, b, contract=name)
    s = measure_any(c, a, b, as_contract(name))
    assert s["breaches"] == 0, (a, b, c, s)

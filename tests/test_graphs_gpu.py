"""Small products replayed from CUDA graphs (ozgemm.kernels.cuda.graphs): every replay gives the
CPU engine's bits for its own operands — new values, a wrong moduli guess, NaN/Inf, other
streams, memory churn between replays — and keeps the contract against the exact product.
Skipped cleanly where CuPy or a CUDA GPU is missing."""
import gc

import numpy as np
import pytest

import ozgemm
from ozgemm._xp import gpu_available
from ozgemm.verify.inputs import phi_matrix

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA GPU")]

if gpu_available():
    import cupy as cp

    from ozgemm.kernels.cuda import graphs


@pytest.fixture
def replays(monkeypatch):
    """Counts graph replays and recordings; a fresh recorder state per test."""
    from ozgemm.kernels import get_backend

    eng = get_backend("cuda")
    eng._recorder._local.__dict__.clear()
    seen = {"replays": 0, "recorded": 0}
    replay, init = graphs._Graph.replay, graphs._Graph.__init__

    def spy_replay(self, a, b):
        seen["replays"] += 1
        return replay(self, a, b)

    def spy_init(self, *args):
        init(self, *args)
        seen["recorded"] += 1

    monkeypatch.setattr(graphs._Graph, "replay", spy_replay)
    monkeypatch.setattr(graphs._Graph, "__init__", spy_init)
    yield seen
    eng._recorder._local.__dict__.clear()


def _same_bits(got, want):
    return got.dtype == want.dtype and np.array_equal(cp.asnumpy(got).view(np.uint8), want.view(np.uint8))


def _variant(rng, x, i):
    """New values with the magnitudes' pattern of ``x`` (random signs, scaled by 2**(5 i)): the
    same moduli count is planned, so every call of a kind replays."""
    return (x * rng.choice(np.array([-1.0, 1.0], dtype=x.dtype), size=x.shape) * x.dtype.type(2.0 ** (5 * i)))


@pytest.mark.parametrize("contract,dtype,shape", [("fp64", np.float64, (96, 130, 70)),
                                                  ("fp64-dgemm", np.float64, (64, 300, 64)),
                                                  ("fp32", np.float32, (100, 64, 37)),
                                                  ("fp32-sgemm", np.float32, (48, 48, 48)),
                                                  ("fp64", np.float32, (33, 65, 17)),
                                                  ("fp64-fast", np.float64, (96, 130, 70)),
                                                  ("fp32-fast", np.float32, (100, 64, 37))])
def test_replays_give_the_cpu_engines_bits(contract, dtype, shape, replays):
    m, k, n = shape
    rng = np.random.default_rng(m + k + n)
    a0, b0 = phi_matrix(rng, (m, k), 0.5, dtype), phi_matrix(rng, (k, n), 0.5, dtype)
    for i in range(5):
        a, b = _variant(rng, a0, i), _variant(rng, b0, -i)
        got = ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract=contract)
        want = ozgemm.matmul(a, b, contract=contract)
        assert _same_bits(got, want), (i, replays)
    assert replays["recorded"] == 1 and replays["replays"] == 3, replays


def test_a_wrong_guess_on_replay_runs_the_confirmed_plan(replays):
    rng = np.random.default_rng(5)
    m = k = n = 64
    for phi in (0.5, 0.5, 0.5, 4.0, 4.0, 0.5):  # the wide spread needs more moduli than recorded
        a, b = phi_matrix(rng, (m, k), phi), phi_matrix(rng, (k, n), phi)
        got = ozgemm.matmul(cp.asarray(a), cp.asarray(b))
        assert _same_bits(got, ozgemm.matmul(a, b)), (phi, replays)
    assert replays["replays"] >= 2, replays


def test_nonfinite_inputs_on_replay_follow_numpy(replays):
    rng = np.random.default_rng(9)
    a0, b0 = phi_matrix(rng, (40, 50), 0.5), phi_matrix(rng, (50, 30), 0.5)
    for i in range(4):
        a, b = _variant(rng, a0, i), _variant(rng, b0, i)
        if i == 3:
            a[3, 7], b[11, 2], b[0, 5] = np.nan, np.inf, -np.inf
        got = ozgemm.matmul(cp.asarray(a), cp.asarray(b))
        want = ozgemm.matmul(a, b)
        assert _same_bits(got, want), (i, replays)
    with np.errstate(invalid="ignore"):
        ref = a @ b
    assert np.array_equal(np.isnan(cp.asnumpy(got)), np.isnan(ref))
    assert replays["replays"] == 2, replays


def test_replays_survive_memory_churn_and_other_streams(replays):
    rng = np.random.default_rng(11)
    a0, b0 = phi_matrix(rng, (128, 256), 1.0), phi_matrix(rng, (256, 96), 1.0)
    for i in range(6):
        a, b = _variant(rng, a0, i), _variant(rng, b0, 1 - i)
        junk = [cp.random.random((1 << 16,)) for _ in range(20)] + [np.random.rand(4096) for _ in range(50)]
        del junk
        gc.collect()
        cp.get_default_memory_pool().free_all_blocks()
        stream = cp.cuda.Stream(non_blocking=True) if i % 2 else cp.cuda.Stream.null
        with stream:
            got = ozgemm.matmul(cp.asarray(a), cp.asarray(b))
            stream.synchronize()
        assert _same_bits(got, ozgemm.matmul(a, b)), (i, replays)
    assert replays["replays"] == 4, replays


def test_replayed_result_keeps_the_contract_against_the_exact_product(replays):
    from ozgemm.verify.reference import exact_product, measure

    rng = np.random.default_rng(13)
    a0, b0 = phi_matrix(rng, (24, 200), 2.0), phi_matrix(rng, (200, 24), 2.0)
    for i in range(3):
        a, b = _variant(rng, a0, i), _variant(rng, b0, i)
        c = cp.asnumpy(ozgemm.matmul(cp.asarray(a), cp.asarray(b), contract="fp64-dgemm"))
        assert measure(c, exact_product(a, b), ozgemm.load_contract("fp64-dgemm")).breaches == 0
    assert replays["replays"] == 1, replays


def test_no_recording_where_it_would_not_replay_the_same_work(replays):
    """Non-contiguous operands, mixed dtypes, a plan asked for, products beyond the size bound:
    eager every time (and still the CPU engine's bits)."""
    rng = np.random.default_rng(17)
    a, b = phi_matrix(rng, (50, 40), 0.5), phi_matrix(rng, (40, 30), 0.5)
    want = ozgemm.matmul(a, b)
    for _ in range(3):
        assert _same_bits(ozgemm.matmul(cp.asfortranarray(cp.asarray(a)), cp.asarray(b)), want)
        c, plans = ozgemm.matmul(cp.asarray(a), cp.asarray(b), return_plan=True)
        assert _same_bits(c, want) and plans[0].pending is None
        ozgemm.matmul(cp.asarray(a, dtype=cp.float32), cp.asarray(b))
    assert replays == {"replays": 0, "recorded": 0}


def _busy():
    """Queue a few milliseconds of work on the current stream (the replay after it then starts
    late, so a host that did not wait for the replay's own values would read old ones)."""
    x = cp.random.random((4096, 4096))
    for _ in range(3):
        x = x @ x
        x /= cp.abs(x).max()
    return x


def test_a_replay_reads_its_own_launchs_values_behind_queued_work(replays):
    rng = np.random.default_rng(23)
    m = k = n = 64
    a0, b0 = phi_matrix(rng, (m, k), 0.5), phi_matrix(rng, (k, n), 0.5)
    wide = phi_matrix(rng, (m, k), 4.0), phi_matrix(rng, (k, n), 4.0)  # more moduli than a0 @ b0
    # the first three products share a0 @ b0's moduli count (recorded at the second, replayed
    # at the third); the fourth replays that guess with values that need more: read behind
    # the queued work, only this launch's own scalars show the guess wrong
    for i in range(4):
        a, b = wide if i == 3 else (_variant(rng, a0, i), _variant(rng, b0, -i))
        busy = _busy()
        got = ozgemm.matmul(cp.asarray(a), cp.asarray(b))
        assert _same_bits(got, ozgemm.matmul(a, b)), (i, replays)
        del busy
        if i >= 2:
            assert replays["replays"] == i - 1, (i, replays)
    assert replays["recorded"] == 1, replays


def test_replays_without_the_drivers_event_node_wait_for_the_whole_graph(replays, monkeypatch):
    from ozgemm.kernels.cuda import backend

    monkeypatch.setattr(backend, "_event_record_external", lambda: None)
    rng = np.random.default_rng(29)
    a0, b0 = phi_matrix(rng, (72, 90), 0.5), phi_matrix(rng, (90, 40), 0.5)
    for i in range(4):
        a, b = _variant(rng, a0, i), _variant(rng, b0, -i)
        busy = _busy()
        got = ozgemm.matmul(cp.asarray(a), cp.asarray(b))
        assert _same_bits(got, ozgemm.matmul(a, b)), (i, replays)
        del busy
    assert replays["recorded"] == 1 and replays["replays"] == 2, replays


def test_graphs_dropped_while_their_last_replay_runs(replays):
    from ozgemm.kernels import get_backend

    rec = get_backend("cuda")._recorder
    keep = rec.max_graphs
    rec.max_graphs = 1  # two kinds alternating: each recording drops the other's graph
    try:
        rng = np.random.default_rng(31)
        shapes = [((48, 80), (80, 56)), ((40, 64), (64, 72))]
        base = [(phi_matrix(rng, sa, 0.5), phi_matrix(rng, sb, 0.5)) for sa, sb in shapes]
        for i in range(8):
            a0, b0 = base[(i // 3) % 2]
            a, b = _variant(rng, a0, i), _variant(rng, b0, i)
            got = ozgemm.matmul(cp.asarray(a), cp.asarray(b))
            busy = _busy()  # queued behind the replay: a dropped graph's memory must wait for both
            assert _same_bits(got, ozgemm.matmul(a, b)), (i, replays)
            del busy
            gc.collect()
    finally:
        rec.max_graphs = keep
    assert replays["replays"] >= 2, replays

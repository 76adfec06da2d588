"""Tests for ozgemm.lcn (CPU). Expected values come from the plain Python reference
(ozgemm.lcn.reference: Python integers, written out pair by pair), never from the code under
test."""
from __future__ import annotations

import io
import json
import os
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ozgemm import lcn
from ozgemm.lcn.drawing import from_arrays
from ozgemm.lcn.reference import plain, ref_counts, ref_intersect, ref_valid

DATA = os.environ.get("OZGEMM_LCN_DATA", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "lcn", "gd2025"))
INSTANCES = [os.path.join(DATA, f"automatic-{i}.json") for i in range(1, 10)]
have_data = pytest.mark.skipif(not os.path.exists(INSTANCES[0]), reason="GD 2025 instances not available")


# ----------------------------------------------------------------------------------------
def random_drawing(rng, n, m, side):
    x = rng.integers(0, side + 1, n)
    y = rng.integers(0, side + 1, n)
    pairs = set()
    while len(pairs) < m:
        a, b = rng.integers(0, n, 2)
        if a != b:
            pairs.add((int(min(a, b)), int(max(a, b))))
    return from_arrays(x, y, sorted(pairs), side, side)


drawings = st.builds(
    lambda seed, n, dens, side: random_drawing(np.random.default_rng(seed), n,
                                               max(1, min(n * (n - 1) // 2, int(dens * n))), side),
    st.integers(0, 2**32 - 1), st.integers(2, 12), st.floats(0.5, 3.0), st.integers(1, 9))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawings)
def test_crossings_match_reference_on_small_degenerate_drawings(d):
    pts, edges = plain(d)
    ref = ref_counts(pts, edges)
    got = lcn.crossings(d)
    assert got.per_edge.tolist() == [ref[i] for i in range(len(edges))]
    assert got.total * 2 == sum(ref.values())
    assert got.k == max(ref.values())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawings)
def test_validate_matches_reference(d):
    pts, edges = plain(d)
    assert lcn.is_valid(d) == ref_valid(pts, edges, d.width, d.height)


def test_violation_kinds():
    # 0:(0,0) 1:(4,0) 2:(2,0) lies on edge 0-1; 3 coincides with 1; 4 outside; 5-6 duplicate
    d = from_arrays([0, 4, 2, 4, 9, 1, 1], [0, 0, 0, 0, 1, 3, 4], [(0, 1), (5, 6), (6, 5), (2, 2)], 5, 5)
    kinds = sorted((v.kind, v.a, v.b) for v in lcn.validate(d))
    assert ("coincident", 1, 3) in kinds
    assert ("on_edge", 2, 0) in kinds
    assert ("out_of_grid", 4, -1) in kinds
    assert ("duplicate_edge", 1, 2) in kinds
    assert ("self_loop", 3, -1) in kinds
    assert all(str(v) for v in lcn.validate(d))


def test_simple_crossing_values():
    # an X, a T-touch (vertex on edge: counted), adjacent edges (not counted), collinear overlap
    d = from_arrays([0, 2, 0, 2, 1, 1, 5, 7, 6, 9], [0, 2, 2, 0, 1, 3, 5, 5, 5, 5],
                    [(0, 1), (2, 3), (4, 5), (0, 2), (6, 7), (8, 9)], 10, 10)
    got = lcn.crossings(d)
    # (0,1)x(2,3) proper; (4,5) starts at (1,1) = centre of the X: touches both; (0,2) is adjacent
    # to (0,1) and (2,3); collinear overlap (6,7)-(8,9) counts
    assert got.per_edge.tolist() == [2, 2, 2, 0, 1, 1]
    assert (got.k, got.total) == (2, 4)


def test_int64_bound_and_wide_coordinates():
    assert lcn.int64_exact([0, 2**31 - 1], [0, 2**31 - 1])
    assert not lcn.int64_exact([0, 2**31], [0, 2**31])
    assert lcn.int64_exact([0, 2**62 - 1], [0, 1])
    # coordinates whose orientation determinant overflows int64: the object path is exact
    big = 3 * 2**40
    pts = [(0, 0), (big, big + 1), (0, big), (big, 0), (big // 2, big // 2 + 1), (big // 2 + 7, big // 2 - 3)]
    edges = [(0, 1), (2, 3), (4, 5)]
    d = from_arrays([p[0] for p in pts], [p[1] for p in pts], edges, big + 1, big + 1)
    assert not lcn.int64_exact(d.x, d.y)
    ref = ref_counts(pts, edges)
    assert lcn.crossings(d).per_edge.tolist() == [ref[i] for i in range(3)]
    delta = lcn.move_delta(d, 4, big // 2 - 5, big // 2 + 9)
    moved = list(pts)
    moved[4] = (big // 2 - 5, big // 2 + 9)
    ref2 = ref_counts(moved, edges)
    assert (np.array([ref[i] for i in range(3)]) + delta).tolist() == [ref2[i] for i in range(3)]


def test_load_save_roundtrip_keeps_unknown_fields(tmp_path):
    doc = {"nodes": [{"id": "a", "x": 0, "y": 0, "color": "red"}, {"id": "b", "x": 3, "y": 1},
                     {"id": "c", "x": 1, "y": 3}],
           "edges": [{"source": "a", "target": "b", "w": 2}, {"source": "b", "target": "c"}],
           "width": 4, "height": 4, "comment": "kept"}
    p = tmp_path / "g.json"
    p.write_text(json.dumps(doc))
    d = lcn.load(str(p))
    assert d.x.tolist() == [0, 3, 1] and d.edges.tolist() == [[0, 1], [1, 2]]
    d2 = d.with_coords([4, 3, 1], [4, 1, 3])
    buf = io.StringIO()
    lcn.save(d2, buf)
    out = json.loads(buf.getvalue())
    assert out["comment"] == "kept" and out["nodes"][0]["color"] == "red" and out["edges"][0]["w"] == 2
    assert out["nodes"][0]["x"] == 4 and out["nodes"][0]["id"] == "a"
    assert doc["nodes"][0]["x"] == 0  # source untouched
    assert d.x.tolist() == [0, 3, 1]


def test_bad_input_errors(tmp_path):
    with pytest.raises(lcn.DrawingFormatError):
        lcn.drawing.from_document({"nodes": [], "edges": []})
    with pytest.raises(lcn.DrawingFormatError):
        lcn.drawing.from_document({"nodes": [{"id": 0, "x": 0.5, "y": 0}], "edges": [], "width": 1, "height": 1})
    with pytest.raises(lcn.DrawingFormatError):
        lcn.drawing.from_document({"nodes": [{"id": 0, "x": 0, "y": 0}], "edges": [{"source": 0, "target": 7}],
                                   "width": 1, "height": 1})
    with pytest.raises(lcn.DrawingFormatError):
        from_arrays([0, 1], [0], [], 1, 1)
    d = from_arrays([0, 1], [0, 1], [(0, 1)], 1, 1)
    with pytest.raises(IndexError):
        lcn.move_delta(d, 5, 0, 0)
    with pytest.raises(ValueError):
        lcn.anneal(d, seed=0)
    assert d.x.flags.writeable is False


def test_incremental_matches_full_recount_after_many_random_moves():
    rng = np.random.default_rng(7)
    d = random_drawing(rng, 30, 70, 12)
    ev = lcn.MoveEvaluator(d)
    c = lcn.crossings(d).per_edge.copy()
    for step in range(300):
        v = int(rng.integers(0, d.n))
        nx, ny = (int(t) for t in rng.integers(0, 13, 2))
        delta = ev.delta(v, nx, ny)
        ev.apply(v, nx, ny)
        c = c + delta
        if step % 50 == 49:
            pts, edges = plain(ev.drawing())
            ref = ref_counts(pts, edges)
            assert c.tolist() == [ref[i] for i in range(d.m)]
    assert c.tolist() == lcn.crossings(ev.drawing()).per_edge.tolist()
    assert d.x.tolist() == random_drawing(np.random.default_rng(7), 30, 70, 12).x.tolist()  # input intact


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawings, st.integers(0, 2**32 - 1))
def test_move_delta_and_validity_against_reference(d, seed):
    r = random.Random(seed)
    pts, edges = plain(d)
    before = ref_counts(pts, edges)
    ev = lcn.MoveEvaluator(d)
    for _ in range(5):
        v = r.randrange(d.n)
        nx, ny = r.randint(0, d.width), r.randint(0, d.height)
        moved = list(pts)
        moved[v] = (nx, ny)
        after = ref_counts(moved, edges)
        assert ev.delta(v, nx, ny).tolist() == [after[i] - before[i] for i in range(d.m)]
        if ref_valid(pts, edges, d.width, d.height):
            assert ev.valid(v, nx, ny) == ref_valid(moved, edges, d.width, d.height)


@have_data
@pytest.mark.parametrize("i", range(1, 10))
def test_instances_subsample_against_reference(i):
    d = lcn.load(INSTANCES[i - 1])
    got = lcn.crossings(d)
    pts, edges = plain(d)
    rng = random.Random(i)
    sample = rng.sample(range(d.m), 12 if d.m > 5000 else 25)
    ref = ref_counts(pts, edges, sample)
    assert [got.per_edge[e] for e in sample] == [ref[e] for e in sample]
    assert got.per_edge.sum() == 2 * got.total


@have_data
def test_instance1_full_reference_and_validity():
    d = lcn.load(INSTANCES[0])
    pts, edges = plain(d)
    ref = ref_counts(pts, edges)
    got = lcn.crossings(d)
    assert got.per_edge.tolist() == [ref[i] for i in range(d.m)]
    assert (got.k, got.total) == (max(ref.values()), sum(ref.values()) // 2)
    assert lcn.is_valid(d) == ref_valid(pts, edges, d.width, d.height) == False  # noqa: E712
    r = lcn.repair(d)
    rp, _ = plain(r)
    assert ref_valid(rp, edges, d.width, d.height)
    assert d.x.tolist() == [p[0] for p in pts]


@have_data
def test_repair_instances_valid():
    for i in (2, 4, 7):
        d = lcn.load(INSTANCES[i - 1])
        assert lcn.validate(d)
        r = lcn.repair(d, seed=1)
        assert lcn.validate(r) == []
        pts, edges = plain(r)
        if i != 7:
            assert ref_valid(pts, edges, r.width, r.height)


def test_anneal_cpu_reproducible_valid_and_exact():
    rng = np.random.default_rng(3)
    d = random_drawing(rng, 25, 60, 20)
    d = lcn.repair(d)
    p = lcn.AnnealParams(batch=4, cycle=200)
    a = lcn.anneal(d, iterations=400, seed=11, device="cpu", params=p)
    b = lcn.anneal(d, iterations=400, seed=11, device="cpu", params=p)
    assert a.drawing.x.tolist() == b.drawing.x.tolist() and a.drawing.y.tolist() == b.drawing.y.tolist()
    pts, edges = plain(a.drawing)
    assert ref_valid(pts, edges, d.width, d.height)
    ref = ref_counts(pts, edges)
    assert a.crossings.per_edge.tolist() == [ref[i] for i in range(d.m)]
    assert a.crossings.objective <= a.initial.objective
    assert a.iterations == 400


@have_data
def test_cli_score_solve_draw(tmp_path, capsys):
    from ozgemm.cli import main
    assert main(["lcn", "score", INSTANCES[0]]) == 0
    out = capsys.readouterr().out
    pts, edges = plain(lcn.load(INSTANCES[0]))
    ref = ref_counts(pts, edges)
    assert f"k={max(ref.values())}" in out and "valid=no" in out
    o = tmp_path / "out.json"
    assert main(["lcn", "solve", INSTANCES[0], "-o", str(o), "--iterations", "300", "--seed", "2",
                 "--device", "cpu", "--quiet"]) == 0
    r = lcn.load(str(o))
    rp, _ = plain(r)
    assert ref_valid(rp, edges, r.width, r.height)
    png = tmp_path / "out.png"
    assert main(["lcn", "draw", str(o), "-o", str(png)]) == 0
    assert png.stat().st_size > 1000


def test_hot_edge_shortening_candidates_stay_near_the_edge():
    """p_short = 1: every tournament-selected candidate lies within the radius r of the
    segment from v to one of its neighbours (the other endpoint of the hot edge)."""
    from ozgemm.lcn.exact import _Inc
    from ozgemm.lcn.solver import _candidate, _radius
    rng = np.random.default_rng(5)
    d = lcn.repair(random_drawing(rng, 30, 70, 60))
    p = lcn.AnnealParams(p_uniform=0.0, p_global=0.0, p_short=1.0, r_max=3, r_min=1, cycle=10).resolved(d, "cpu")
    c = lcn.crossings(d).per_edge
    inc = _Inc(d)
    for it in range(40):
        r = _radius(p, it)
        for j in range(8):
            v, nx, ny, _ = _candidate(7, it, j, p, d, c, d.x, d.y, r, inc)
            ok = False
            for e in inc.of(v).tolist():
                w = int(d.edges[e, 0] + d.edges[e, 1] - v)
                lx, hx = sorted((int(d.x[v]), int(d.x[w])))
                ly, hy = sorted((int(d.y[v]), int(d.y[w])))
                ok |= lx - r <= nx <= hx + r and ly - r <= ny <= hy + r
            assert ok, (it, j, v, nx, ny)
    # p_short = 0 candidates do not depend on slack_best / restart / recal / hinge
    p0 = lcn.AnnealParams(p_bary=0.2, p_short=0.0, slack_best=False, restart=False, recal=False,
                          hinge=0.0).resolved(d, "gpu")
    p1 = lcn.AnnealParams(p_bary=0.2, p_short=0.0, slack_best=True, restart=True).resolved(d, "cpu")
    for j in range(50):
        assert _candidate(3, 9, j, p0, d, c, d.x, d.y, 2, inc) == _candidate(3, 9, j, p1, d, c, d.x, d.y, 2, inc)
    # defaults: the same algorithm on both devices (restarts + re-calibration + hinge, docs/design.md)
    for dev, cyc in (("cpu", 4000), ("gpu", 32000)):
        pc = lcn.AnnealParams().resolved(d, dev)
        assert (pc.p_short, pc.slack_best, pc.restart, pc.recal, pc.hinge, pc.reheat, pc.cycle) == \
            (0.3, True, True, True, 0.5, 1.0, cyc)


@pytest.mark.parametrize("kw", [dict(slack_best=True, slack=1, restart=False),
                                dict(slack_best=True, p_short=0.3, p_bary=0.1, restart=True),
                                dict(slack_best=False, p_short=0.5, restart=True),
                                dict(slack_best=True, p_short=0.3, restart=True, recal=True, reheat=1.0, hinge=0.5),
                                dict(power=3, recal=True, hinge=0.25)])
def test_anneal_new_moves_reproducible_valid_exact(kw):
    rng = np.random.default_rng(4)
    d = lcn.repair(random_drawing(rng, 25, 60, 20))
    p = lcn.AnnealParams(batch=4, cycle=150, **kw)
    a = lcn.anneal(d, iterations=300, seed=5, device="cpu", params=p, report_every=0.0)
    b = lcn.anneal(d, iterations=300, seed=5, device="cpu", params=p)
    assert a.drawing.x.tolist() == b.drawing.x.tolist() and a.drawing.y.tolist() == b.drawing.y.tolist()
    assert a.accepted == b.accepted and a.crossings.objective == b.crossings.objective
    pts, edges = plain(a.drawing)
    assert ref_valid(pts, edges, d.width, d.height)
    ref = ref_counts(pts, edges)
    assert a.crossings.per_edge.tolist() == [ref[i] for i in range(d.m)]  # incremental == recount
    if kw.get("slack_best"):
        # the current k never leaves best k + slack (history has one record per iteration)
        assert len(a.history) >= 300
        assert all(h["k"] <= h["best_k"] + p.slack for h in a.history)


def test_energy_weights_plain_and_hinge():
    from ozgemm.lcn.solver import hinge_base, weights
    assert weights(5, 2).tolist() == [0, 1, 4, 9, 16, 25]
    assert weights(5, 3).tolist() == [0, 1, 8, 27, 64, 125]
    # hinge at 2: max(0, c - 2)**2 + c
    assert weights(5, 2, 2).tolist() == [0, 1, 2, 4, 8, 14]
    assert weights(4, 3, 0).tolist() == [0, 2, 10, 30, 68]
    p = lcn.AnnealParams(hinge=0.5)
    assert hinge_base(p, 41) == 20 and hinge_base(p, 40) == 20
    assert hinge_base(lcn.AnnealParams(hinge=0.75), 9) == 6  # floor(6.75)
    assert hinge_base(lcn.AnnealParams(hinge=0.0), 41) == -1
    with pytest.raises(OverflowError):
        weights(2**21, 3)
    with pytest.raises(ValueError):
        lcn.AnnealParams(hinge=1.0).resolved(lcn.repair(random_drawing(np.random.default_rng(1), 5, 6, 9)), "cpu")


RESUME_KW = [dict(slack_best=False, p_short=0.0, restart=False, recal=False, hinge=0.0, reheat=0.5),
             dict(slack_best=True, p_short=0.3, restart=True, recal=True, reheat=1.0, hinge=0.5)]


def _same_state(a, b):
    """Two AnnealStates hold the same drawings, counts, counters and schedule (also used by
    test_lcn_gpu.py)."""
    for f in ("x", "y", "bx", "by", "counts"):
        assert getattr(a, f).tolist() == getattr(b, f).tolist(), f
    for f in ("it", "beff", "T0", "base", "best", "accepted", "evals", "initial"):
        assert getattr(a, f) == getattr(b, f), f


@pytest.mark.parametrize("kw", RESUME_KW)
@pytest.mark.parametrize("split", [200, 250])
def test_anneal_cpu_resume_equals_uninterrupted(kw, split, tmp_path):
    """iterations=N, saved, loaded and resumed to 2N (or N' > N) is the run of 2N iterations:
    same current and best drawing, counts, counters, T0, energy hinge and adaptive batch."""
    from ozgemm.lcn.solver import AnnealState
    rng = np.random.default_rng(8)
    d = lcn.repair(random_drawing(rng, 25, 60, 20))
    p = lcn.AnnealParams(batch=4, cycle=100, **kw)
    full = lcn.anneal(d, iterations=400, seed=7, device="cpu", params=p)
    part = lcn.anneal(d, iterations=split, seed=7, device="cpu", params=p)
    assert part.state.it == split
    part.state.save(tmp_path / "s.npz")
    st = AnnealState.load(tmp_path / "s.npz")
    res = lcn.anneal(d, iterations=400, seed=7, device="cpu", params=p, resume=st)
    a = res.state
    _same_state(a, full.state)
    assert res.drawing.x.tolist() == full.drawing.x.tolist() and res.drawing.y.tolist() == full.drawing.y.tolist()
    assert (res.iterations, res.accepted, res.evaluations) == (full.iterations, full.accepted, full.evaluations)
    # the current drawing's stored counts are the exact counts (plain-Python recount)
    pts, edges = plain(d.with_coords(a.x, a.y))
    ref = ref_counts(pts, edges)
    assert a.counts.tolist() == [ref[i] for i in range(d.m)]
    if kw.get("recal"):  # re-calibrated at the cycle boundaries
        assert a.T0 != lcn.anneal(d, iterations=0, seed=7, device="cpu", params=p).state.T0
    # a state is only accepted with its own instance, seed and parameters
    with pytest.raises(ValueError):
        lcn.anneal(d, iterations=400, seed=8, device="cpu", params=p, resume=st)
    with pytest.raises(ValueError):
        lcn.anneal(d, iterations=400, seed=7, device="cpu", params=lcn.AnnealParams(batch=8, cycle=100, **kw),
                   resume=st)


# --- start layouts (ozgemm.lcn.layout) ---------------------------------------------------

def _objective_ref(d):
    pts, edges = plain(d)
    c = ref_counts(pts, edges)
    k = max(c.values())
    return (k, sum(1 for v in c.values() if v == k), sum(c.values()) // 2)


@have_data
@pytest.mark.parametrize("method", ["kamada-kawai", "spring", "given"])
def test_layouts_are_valid_drawings_of_the_same_graph(method):
    from ozgemm.lcn.layout import layout
    d = lcn.load(INSTANCES[0])
    before = (d.x.copy(), d.y.copy())
    s = layout(d, method, seed=3)
    assert np.array_equal(d.x, before[0]) and np.array_equal(d.y, before[1])  # input untouched
    assert s.edges.tolist() == d.edges.tolist() and (s.width, s.height) == (d.width, d.height)
    pts, edges = plain(s)
    assert ref_valid(pts, edges, s.width, s.height)
    assert lcn.crossings(s).objective == _objective_ref(s)
    again = layout(d, method, seed=3)
    assert np.array_equal(again.x, s.x) and np.array_equal(again.y, s.y)  # deterministic


@have_data
def test_best_start_picks_the_smallest_objective():
    """Instance 2: the given layout (k = 173 after repair) loses to a stress layout; the
    returned table and choice agree with plain-Python recounts of every candidate."""
    from ozgemm.lcn.layout import best_start, layout
    d = lcn.load(INSTANCES[1])
    s, method, table = best_start(d, methods=["given", "kamada-kawai", "spring"], seed=0)
    refs = {m: _objective_ref(layout(d, m, seed=0)) for m in ("given", "kamada-kawai", "spring")}
    assert table == refs
    assert method == min(refs, key=lambda m: (refs[m], ["given", "kamada-kawai", "spring"].index(m)))
    assert method != "given" and refs[method][0] < refs["given"][0]
    assert _objective_ref(s) == refs[method]
    s2, method2, table2 = best_start(d, seed=0)  # default: given and Kamada-Kawai
    assert table2 == {m: refs[m] for m in ("given", "kamada-kawai")}


def test_layout_errors():
    from ozgemm.lcn.layout import KK_MAX_N, layout
    d = lcn.repair(random_drawing(np.random.default_rng(0), 6, 7, 20))
    with pytest.raises(ValueError, match="layout method"):
        layout(d, "circular")
    n = KK_MAX_N + 1
    big = lcn.from_arrays(np.arange(n), np.zeros(n, dtype=np.int64), [(i, i + 1) for i in range(n - 1)], n, 10)
    with pytest.raises(ValueError, match="kamada-kawai"):
        layout(big, "kamada-kawai")



def test_best_start_skips_a_layout_that_cannot_be_repaired(tmp_path, capsys):
    """A valid path on a 2 x 0 grid: the snapped Kamada-Kawai layout has no valid repair
    (three collinear points; the middle one must be the shared vertex), so best_start keeps
    the given drawing instead of failing, and so does the CLI's default --init best."""
    from ozgemm.cli import main
    from ozgemm.lcn.layout import best_start
    d = lcn.from_arrays([1, 2, 0], [0, 0, 0], [(0, 1), (0, 2)], 2, 0)
    assert lcn.validate(d) == []
    s, method, table = best_start(d)
    assert method == "given" and table["kamada-kawai"] is None
    assert (s.x.tolist(), s.y.tolist()) == ([1, 2, 0], [0, 0, 0])
    f = tmp_path / "p.json"
    lcn.save(d, str(f))
    assert main(["lcn", "solve", str(f), "-o", str(tmp_path / "o.json"), "--iterations", "5", "--device", "cpu",
                 "--quiet"]) == 0
    assert "start layout given" in capsys.readouterr().out


def test_layout_and_best_start_argument_errors():
    from ozgemm.lcn.layout import best_start, layout
    d = lcn.repair(random_drawing(np.random.default_rng(0), 6, 7, 20))
    for bad in (-1, 1.5, None, True):
        with pytest.raises(ValueError, match="seed"):
            layout(d, "spring", seed=bad)
    with pytest.raises(TypeError, match="list or tuple"):
        best_start(d, methods="spring")
    with pytest.raises(ValueError, match="non-empty"):
        best_start(d, methods=[])
    huge = lcn.from_arrays(d.x, d.y, d.edges, 2**60, 2**60)
    with pytest.raises(ValueError, match="2\\*\\*52"):
        layout(huge, "spring")


@have_data
def test_cli_solve_bad_arguments_exit_2_before_any_layout(tmp_path, capsys):
    from ozgemm.cli import main
    out = str(tmp_path / "o.json")
    cases = [(["--seed", "-1"], "seed"), (["--params", '{"batchx": 1}'], "batchx"),
             (["--params", '{"hinge": 1.5}'], "hinge"), (["--time", "-3"], "seconds"),
             (["--iterations", "-1"], "iterations")]
    for extra, word in cases:
        assert main(["lcn", "solve", INSTANCES[8], "-o", out, "--device", "cpu", "--quiet"] + extra) == 2
        err = capsys.readouterr().err
        assert err.startswith("ozgemm lcn: error:") and word in err, (extra, err)
        assert not os.path.exists(out)
    assert main(["lcn", "score", str(tmp_path / "missing.json")]) == 2
    assert "FileNotFoundError" in capsys.readouterr().err


def test_resume_refuses_wrong_types_and_invalid_states(tmp_path):
    from ozgemm.lcn.solver import AnnealState
    d = lcn.repair(random_drawing(np.random.default_rng(4), 12, 20, 30))
    r = lcn.anneal(d, iterations=50, seed=1, device="cpu")
    with pytest.raises(TypeError, match="AnnealState"):
        lcn.anneal(d, iterations=100, seed=1, device="cpu", resume={"it": 50})
    path = str(tmp_path / "state")
    r.state.save(path)
    st = AnnealState.load(path)  # .npz appended on save is found on load
    assert lcn.anneal(d, iterations=100, seed=1, device="cpu", resume=st).iterations == \
        lcn.anneal(d, iterations=100, seed=1, device="cpu").iterations
    import dataclasses
    bad = dataclasses.replace(st, x=np.zeros_like(st.x), y=np.zeros_like(st.y))
    with pytest.raises(ValueError, match="not valid"):
        lcn.anneal(d, iterations=100, seed=1, device="cpu", resume=bad)


def _ref_counts_loops(pts, edges):
    """Per-edge counts by the documented definition for any graph: two edges cross iff they
    share no endpoint and their closed segments share a point (a self-loop is the point of
    its vertex), plain Python integers."""
    out = []
    for i, (a, b) in enumerate(edges):
        out.append(sum(1 for j, (u, v) in enumerate(edges)
                       if j != i and not {a, b} & {u, v} and ref_intersect(pts[a], pts[b], pts[u], pts[v])))
    return out


def test_move_delta_self_loops_and_far_points_against_reference():
    """move_delta on invalid drawings (its documented domain): self-loops at the moved vertex
    (the loop moves with it), and vertices and targets far outside the grid (beyond what
    int64 orientation tests hold together), against the plain-integer reference."""
    r = random.Random(5)
    checked = 0
    for trial in range(400):
        n = r.randint(3, 7)
        big = r.choice([0, 2**40, 2**58, 2**61])
        pts = [(r.randint(-3, 6), r.randint(-3, 6)) for _ in range(n)]
        if big and r.random() < 0.5:
            pts[r.randrange(n)] = (r.randint(-3, 6), r.choice([-1, 1]) * big)
        edges = [(r.randrange(n), r.randrange(n)) for _ in range(r.randint(1, 6))]
        d = from_arrays([p[0] for p in pts], [p[1] for p in pts], edges, 5, 5)
        v = r.randrange(n)
        nx = r.choice([r.randint(-3, 6), -big, big]) if big else r.randint(-3, 6)
        ny = r.randint(-3, 6)
        moved = list(pts)
        moved[v] = (nx, ny)
        before, after = _ref_counts_loops(pts, edges), _ref_counts_loops(moved, edges)
        assert lcn.crossings(d).per_edge.tolist() == before
        assert lcn.move_delta(d, v, nx, ny).tolist() == [a - b for a, b in zip(after, before)], \
            (pts, edges, v, nx, ny)
        checked += any(a == b for a, b in edges) or big > 2**41
    assert checked > 100


def test_repair_hopeless_case_ends_in_bounded_work():
    """A triangle on a one-row grid has no valid drawing: repair raises ValueError after at
    most max_tries candidates per vertex, even on a 2**32-wide grid (a scan of every ring
    would be quadratic in the grid side)."""
    for w in (50, 2**32 - 2):
        d = from_arrays([0, 1, 2], [0, 0, 0], [(0, 1), (1, 2), (0, 2)], w, 0)
        with pytest.raises(ValueError, match="no valid position"):
            lcn.repair(d, max_tries=2000)
    # a ring costs O(its grid points), not O(r): radius 10**12 on a one-row grid is 2 points
    # (an O(r) ring would not return)
    from ozgemm.lcn.exact import _ring

    r = 10**12
    assert _ring(5 * r, 0, r, 10 * r, 0) == [(4 * r, 0), (6 * r, 0)]


def test_anneal_parameters_out_of_range_are_typed_errors(tmp_path, capsys):
    from ozgemm.cli import main
    from ozgemm.lcn.solver import AnnealParams, check_anneal_args

    d = from_arrays([0, 3, 5, 1], [0, 4, 1, 5], [(0, 1), (1, 2), (2, 3)], 10, 10)
    for kw, err in ((dict(t_ratio=0), ValueError), (dict(reheat=0, t_floor=0), ValueError),
                    (dict(t_ratio=-1), ValueError), (dict(r_min=-3), ValueError), (dict(r_max=-5), ValueError),
                    (dict(p_global=0.8, p_bary=0.5), ValueError), (dict(batch=2.5), TypeError),
                    (dict(cycle=10.0), TypeError), (dict(t_hi=float("nan")), ValueError)):
        with pytest.raises(err, match="annealing parameter"):
            check_anneal_args(d, iterations=5, device="cpu", params=AnnealParams(**kw))
    check_anneal_args(d, iterations=5, device="cpu", params=AnnealParams())
    src = tmp_path / "d.json"
    lcn.save(d, src)
    capsys.readouterr()
    rc = main(["lcn", "solve", str(src), "-o", str(tmp_path / "o.json"), "--iterations", "5", "--quiet",
               "--device", "cpu", "--params", '{"t_ratio": 0}'])
    err = capsys.readouterr().err
    assert rc == 2 and "t_ratio" in err and "Traceback" not in err
    # an unwritable output path is reported before any work
    rc = main(["lcn", "solve", str(src), "-o", str(tmp_path / "missing" / "o.json"), "--iterations", "5",
               "--quiet", "--device", "cpu"])
    assert rc == 2 and "cannot write -o/--output" in capsys.readouterr().err


def test_from_arrays_rejects_what_it_would_change():
    """Fractional or non-finite coordinates, strings, bools and values beyond int64 are
    refused, never truncated, wrapped or cast; integral floats are accepted."""
    bad = [dict(x=[0.5, 2.7]), dict(x=np.array([np.nan, 1.0])), dict(x=["3", 0]), dict(x=[2**63, 0]),
           dict(x=np.array([True, False])), dict(edges=[(0, 1.5)]), dict(width=5.7), dict(height=True)]
    for kw in bad:
        args = dict(x=[0, 2], y=[0, 1], edges=[(0, 1)], width=5, height=5) | kw
        with pytest.raises(lcn.DrawingFormatError):
            from_arrays(**args)
    d = from_arrays(np.array([0.0, 2.0]), [0, 1], np.array([[0, 1]], dtype=np.uint8), 5.0, 5)
    assert d.x.tolist() == [0, 2] and d.width == 5 and d.edges.tolist() == [[0, 1]]


def test_load_shapes_and_ids_give_format_errors(tmp_path):
    """Wrong-shaped documents are DrawingFormatError (not TypeError), and node ids true and 1
    are different ids (JSON boolean and number)."""
    from ozgemm.lcn.drawing import from_document

    base = {"width": 5, "height": 5, "nodes": [{"id": 0, "x": 0, "y": 0}, {"id": 1, "x": 1, "y": 2}],
            "edges": [{"source": 0, "target": 1}]}
    docs = [[], "x", base | {"nodes": 3}, base | {"nodes": {"a": 1}}, base | {"nodes": [[0, 0, 0]]},
            base | {"edges": None}, base | {"edges": [[0, 1]]},
            base | {"nodes": [{"id": [1], "x": 0, "y": 0}]},
            base | {"edges": [{"source": {"a": 1}, "target": 1}]}]
    for doc in docs:
        with pytest.raises(lcn.DrawingFormatError):
            from_document(doc)
    d = from_document(base | {"nodes": [{"id": 1, "x": 0, "y": 0}, {"id": True, "x": 1, "y": 2}],
                                  "edges": [{"source": True, "target": 1}]})
    assert d.n == 2 and d.edges.tolist() == [[1, 0]]
    with pytest.raises(lcn.DrawingFormatError) as e:
        from_document(base | {"nodes": [{"id": 0, "x": 1e300, "y": 0}, {"id": 1, "x": 1, "y": 2}]})
    assert "1.000e+300" in str(e.value) and len(str(e.value)) < 200

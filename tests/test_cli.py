from pathlib import Path

import json

import numpy as np

import ozgemm
from ozgemm.cli import main


def test_audit_default_small(capsys, tmp_path):
    js = tmp_path / "r.json"
    rc = main(["audit", "--size", "24", "--phi", "0.5", "3", "--json", str(js)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "contract fp64 kept" in out and "phi=3" in out and "hilbert" in out and "numpy.matmul" in out
    data = json.loads(js.read_text())
    assert data["contract"] == "fp64" and any(r["who"] == "ozgemm" for r in data["rows"])


def test_audit_fp32_and_plot(capsys, tmp_path):
    png = tmp_path / "f.png"
    rc = main(["audit", "--contract", "fp32", "--shape", "9", "13", "5", "--phi", "1", "--no-hilbert", "--plot", str(png)])
    assert rc == 0
    assert png.stat().st_size > 1000


def test_audit_user_files(capsys, tmp_path):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((6, 7)), rng.standard_normal((7, 5))
    np.save(tmp_path / "A.npy", a)
    np.save(tmp_path / "B.npy", b)
    assert main(["audit", str(tmp_path / "A.npy"), str(tmp_path / "B.npy")]) == 0
    # a good result passes, a perturbed one breaks the contract (exit 1)
    from ozgemm import matmul
    np.save(tmp_path / "C.npy", matmul(a, b))
    assert main(["audit", str(tmp_path / "A.npy"), str(tmp_path / "B.npy"), "--result", str(tmp_path / "C.npy")]) == 0
    bad = matmul(a, b)
    bad[2, 3] *= 1 + 1e-6
    np.save(tmp_path / "Cbad.npy", bad)
    capsys.readouterr()
    rc = main(["audit", str(tmp_path / "A.npy"), str(tmp_path / "B.npy"), "--result", str(tmp_path / "Cbad.npy")])
    assert rc == 1 and "CONTRACT BROKEN" in capsys.readouterr().out


def test_audit_bad_args(capsys, tmp_path):
    assert main(["audit", "--contract", "nope"]) == 2
    np.save(tmp_path / "A.npy", np.ones((2, 3)))
    np.save(tmp_path / "B.npy", np.ones((2, 3)))
    assert main(["audit", str(tmp_path / "A.npy"), str(tmp_path / "B.npy")]) == 2


def test_audit_nonfinite_and_refusal(capsys, tmp_path):
    a = np.array([[1.0, np.nan], [2.0, 3.0]])
    b = np.array([[1.0, np.inf], [0.5, 2.0]])
    np.save(tmp_path / "A.npy", a)
    np.save(tmp_path / "B.npy", b)
    assert main(["audit", str(tmp_path / "A.npy"), str(tmp_path / "B.npy")]) == 0
    # a spread beyond one plan is computed in exponent bands and kept (exit 0); a refusal
    # (ContractError: here the contract's max_gemms below what the bands cost) is exit 3
    np.save(tmp_path / "W.npy", np.array([[1.0, 1e-45]]))
    np.save(tmp_path / "I.npy", np.eye(2))
    assert main(["audit", str(tmp_path / "W.npy"), str(tmp_path / "I.npy")]) == 0
    (tmp_path / "capped.toml").write_text((Path(ozgemm.__file__).parent / "contracts" / "fp64.toml").read_text()
                                          + "max_gemms = 10\n")
    capsys.readouterr()
    rc = main(["audit", "--contract", str(tmp_path / "capped.toml"), str(tmp_path / "W.npy"), str(tmp_path / "I.npy")])
    out = capsys.readouterr().out
    assert rc == 3 and "REFUSED" in out and "BROKEN" not in out and "max_gemms" in out
    assert main(["audit", "--size", "0"]) == 2
    assert main(["audit", "--json", str(tmp_path / "missing" / "x.json")]) == 2


def test_audit_bad_options_exit_2_not_1(capsys):
    """Options no audit can run with are bad arguments (exit 2), never 'contract broken' (1)."""
    for argv in (["--engine", "gpu"], ["--seed", "-1"], ["--phi", "nan"], ["--phi", "0.5", "inf"],
                 ["--phi", "1e6"]):
        capsys.readouterr()
        rc = main(["audit", "--size", "4", *argv])
        err = capsys.readouterr().err
        assert rc == 2, (argv, rc, err)
        assert "ozgemm audit:" in err and "Traceback" not in err


def test_audit_failure_is_exit_4_not_1(capsys, monkeypatch):
    """A failure of the audit itself (here: out of memory) gives no verdict: exit 4."""
    import ozgemm.verify.audit as audit

    def boom(*a, **k):
        raise MemoryError("cannot allocate")

    monkeypatch.setattr(audit, "audit_case", boom)
    rc = main(["audit", "--size", "4", "--no-hilbert", "--phi", "1"])
    err = capsys.readouterr().err
    assert rc == 4 and "could not run to the end" in err and "MemoryError" in err


def test_audit_result_measured_in_the_contract_format(capsys, tmp_path):
    """A float32 result audited against fp64 is measured in binary64 units (u = 2^-53): its
    error is ~2^29 times larger than in binary32 units, and the entries are not correctly
    rounded binary64 values."""
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((8, 9)), rng.standard_normal((9, 7))
    np.save(tmp_path / "A.npy", a)
    np.save(tmp_path / "B.npy", b)
    np.save(tmp_path / "C32.npy", (a @ b).astype(np.float32))
    js = tmp_path / "r.json"
    capsys.readouterr()
    rc = main(["audit", str(tmp_path / "A.npy"), str(tmp_path / "B.npy"), "--result", str(tmp_path / "C32.npy"),
               "--json", str(js)])
    assert rc == 1
    s = json.loads(js.read_text())["rows"][0]["summary"]
    # rounding to float32 leaves relative errors up to 2^-24 = 2^29 u (u = 2^-53): in binary64
    # units the largest of 56 such errors is far above 1e6 (in binary32 units it would be < 1)
    assert s["max_err_u"] > 1e6 and s["correctly_rounded"] < 0.2
    assert s["breaches"] == 56


def test_audit_nonfinite_result_entry_reported(capsys, tmp_path):
    """A NaN (or a wrong-sign infinity) in a given result shows as an infinite max error and
    max/bound, not as 0 or 1 beside a breach."""
    from ozgemm import matmul

    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((5, 6)), rng.standard_normal((6, 4))
    np.save(tmp_path / "A.npy", a)
    np.save(tmp_path / "B.npy", b)
    c = matmul(a, b)
    c[1, 2] = np.nan
    np.save(tmp_path / "C.npy", c)
    js = tmp_path / "r.json"
    rc = main(["audit", str(tmp_path / "A.npy"), str(tmp_path / "B.npy"), "--result", str(tmp_path / "C.npy"),
               "--json", str(js)])
    assert rc == 1
    text = js.read_text()
    s = json.loads(text)["rows"][0]["summary"]
    assert s["breaches"] == 1 and s["max_err_u"] == "inf" and s["max_bound_ratio"] == "inf"
    assert s["max_ulps"] == "inf"
    assert s["median_err_u"] < 1.0  # the other 19 entries are within ozgemm's bound


def test_bench_cpu_small_run_and_json(capsys, tmp_path):
    """`ozgemm bench` on the CPU: every shipped format (dd and binary128 results sampled
    correctly), the Ozaki contract's slice count, strict exit 0, and its JSON."""
    js = tmp_path / "b.json"
    rc = main(["bench", "--sizes", "8", "--contracts", "fp64", "fp64-ozaki", "dd", "fp128", "--reps", "1",
               "--ref-sizes", "8", "--block", "100", "--json", str(js)])
    out = capsys.readouterr().out
    assert rc == 0, out
    data = json.loads(js.read_text())
    rows = {r["contract"]: r for r in data["rows"]}
    assert set(rows) == {"fp64", "fp64-ozaki", "dd", "fp128"}
    assert rows["fp64-ozaki"]["count"].endswith("sl") and rows["fp64"]["count"] == str(rows["fp64"]["moduli"])
    assert all(r["ozgemm_breaches"] == 0 and r["block"] == 8 for r in data["rows"])
    assert "min(100, n)" in out


def test_bench_and_audit_take_contract_overrides(capsys, tmp_path):
    """`--contract(s) name:key=value`: the derived contract runs under its whole name (its
    fixed moduli count in the row, no breach); a bad override exits 2 naming the key."""
    js = tmp_path / "b.json"
    rc = main(["bench", "--sizes", "24", "--contracts", "fp64-fast:moduli=17", "fp32-fast", "--reps", "1",
               "--ref-sizes", "24", "--json", str(js)])
    assert rc == 0, capsys.readouterr()
    rows = {r["contract"]: r for r in json.loads(js.read_text())["rows"]}
    assert set(rows) == {"fp64-fast:moduli=17", "fp32-fast"}
    assert rows["fp64-fast:moduli=17"]["moduli"] == 17
    assert all(r["ozgemm_breaches"] == 0 for r in rows.values())
    capsys.readouterr()
    rc = main(["audit", "--contract", "fp32-fast:bits=23", "--size", "16", "--no-hilbert"])
    assert rc == 0 and "contract fp32-fast:bits=23 kept" in capsys.readouterr().out
    rc = main(["bench", "--sizes", "8", "--reps", "1", "--contracts", "fp64:colour=1"])
    err = capsys.readouterr().err
    assert rc == 2 and "colour" in err and "Traceback" not in err, err


def test_bench_bad_arguments_and_refusals(capsys, tmp_path, monkeypatch):
    """Bad options exit 2 before any work, a contract refused for the inputs exits 3, a
    failure of the run itself 4: one 'ozgemm bench:' line each, no traceback."""
    bad = [["--sizes", "0"], ["--sizes", "-5"], ["--ref-sizes", "-3"], ["--reps", "0"], ["--seed", "-1"],
           ["--block", "0"], ["--phi", "nan"], ["--contracts", "nosuch"], ["--json", ""],
           ["--json", str(tmp_path)], ["--json", str(tmp_path / "missing" / "x.json")]]
    for argv in bad:
        capsys.readouterr()
        rc = main(["bench", "--sizes", "8", "--ref-sizes", "8", "--reps", "1", *argv])
        err = capsys.readouterr().err
        assert rc == 2 and err.startswith("ozgemm bench: ") and "Traceback" not in err, (argv, rc, err)
    capsys.readouterr()
    capped = tmp_path / "capped.toml"  # a cost cap below what these spreads need
    capped.write_text((Path(ozgemm.__file__).parent / "contracts" / "fp64.toml").read_text() + "max_gemms = 10\n")
    out_json = tmp_path / "rows.json"
    rc = main(["bench", "--sizes", "8", "--ref-sizes", "--reps", "1", "--phi", "40", "--contracts", str(capped),
               "fp64", "--json", str(out_json)])
    cap = capsys.readouterr()
    # the refused row names its reason; the other contract's row is still measured and reported
    assert rc == 3 and "refused" in cap.err and "Traceback" not in cap.err, cap.err
    lines = cap.out.splitlines()
    assert any(ln.startswith("capped") and "refused" in ln and "max_gemms" in ln for ln in lines), cap.out
    assert any(ln.split()[:2] == ["fp64", "8"] for ln in lines), cap.out
    rows = json.loads(out_json.read_text())["rows"]
    assert [("refused" in r, r["contract"]) for r in rows] == [(True, "capped"), (False, "fp64")], rows
    assert rows[1]["ozgemm_max_err_u"] <= 3.0  # fp64: u|AB| + 2u|A||B|, in units of u|A||B|
    # a binary128 contract without numpy-quaddtype: exit 2 before any product is measured
    import ozgemm.contracts.formats as formats

    def no_quad():
        raise ImportError("binary128 operands need numpy-quaddtype: pip install 'ozgemm[fp128]'")

    with monkeypatch.context() as mp:
        mp.setattr(formats, "quad_dtype", no_quad)
        rc = main(["bench", "--sizes", "8", "--ref-sizes", "--reps", "1", "--contracts", "fp64", "fp128"])
    err = capsys.readouterr().err
    assert rc == 2 and "numpy-quaddtype" in err and "fp64 n=8" not in err, err
    import ozgemm.cli.bench as bench

    import ozgemm.verify.audit as audit

    # a product that does not fit: its row says so, the other sizes are still measured, exit 4
    real = audit.phi_matrices

    def big_fails(m, k, n, *a, **kw):
        if n == 16:
            raise MemoryError("ozgemm: planning a 16x16x16 product needs about 9.00 GiB")
        return real(m, k, n, *a, **kw)

    monkeypatch.setattr(audit, "phi_matrices", big_fails)
    out_json = tmp_path / "oom.json"
    rc = main(["bench", "--sizes", "8", "16", "12", "--ref-sizes", "--reps", "1", "--json", str(out_json)])
    cap = capsys.readouterr()
    assert rc == 4 and "Traceback" not in cap.err, (rc, cap.err)
    lines = cap.out.splitlines()
    assert any(ln.split()[:2] == ["fp64", "16"] and "not measured" in ln and "9.00 GiB" in ln for ln in lines), cap.out
    assert [ln.split()[1] for ln in lines if ln.startswith("fp64 ") and "not measured" not in ln] == ["8", "12"], cap.out
    rows = json.loads(out_json.read_text())["rows"]
    assert [("failed" in r, r["n"]) for r in rows] == [(False, 8), (True, 16), (False, 12)], rows

    import ozgemm.cli.bench as bench_mod

    real_time = bench_mod.median_time
    calls = []

    def timing_fails(fn, reps):  # the first row's product fits, its timing does not
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError("timing workspace")
        return real_time(fn, reps)

    monkeypatch.setattr(bench_mod, "median_time", timing_fails)
    rc = main(["bench", "--sizes", "8", "12", "--ref-sizes", "--reps", "1"])
    cap = capsys.readouterr()
    assert rc == 4 and "not measured (timing workspace)" in cap.out, cap.out
    assert any(ln.split()[:2] == ["fp64", "12"] and "not measured" not in ln for ln in cap.out.splitlines()), cap.out

    def boom(*a, **k):  # a failure other than memory ends the run: no table, exit 4
        raise RuntimeError("no reference")

    monkeypatch.setattr(bench, "median_time", boom)
    rc = main(["bench", "--sizes", "8", "--ref-sizes", "--reps", "1"])
    assert rc == 4 and "could not run to the end" in capsys.readouterr().err
    from ozgemm._xp import gpu_available

    if not gpu_available():
        rc = main(["bench", "--device", "gpu", "--sizes", "8"])
        assert rc == 1 and "needs CuPy and a CUDA GPU" in capsys.readouterr().err


def test_fmt_num_table_cells():
    # audit and GPU bench tables: short cells for small values, exponent notation for the
    # u-unit errors of a float64 matmul measured against a dd contract (~1e16-1e17)
    from ozgemm._cliargs import fmt_num

    assert fmt_num(None) == "-"
    assert fmt_num(0.0) == "0"
    assert fmt_num(0.17512) == "0.175"
    assert fmt_num(4.5234, 4) == "4.523"
    assert fmt_num(29185908173352096.0) == "2.92e+16"
    assert fmt_num(float("inf")) == "inf" and fmt_num(float("nan")) == "nan"
    assert fmt_num(7) == "7"


def test_gemmul8_options_checked_before_any_work(capsys, tmp_path):
    """--gemmul8 needs the GPU and a loadable shim; configurations are fN / aN: exit 2 with one
    line each (GEMMul8 itself is never part of ozgemm)."""
    from ozgemm.cli.peers import GEMMul8, parse_config

    assert parse_config("f15") == (15, True) and parse_config("a7") == (7, False)
    for bad in ("f", "x15", "f1", "a21", "f15x"):
        try:
            parse_config(bad)
        except ValueError as exc:
            assert bad in str(exc)
        else:
            raise AssertionError(bad)
    missing = tmp_path / "no_such_shim.so"
    try:
        GEMMul8(str(missing))
    except ValueError as exc:
        assert str(missing) in str(exc)
    else:
        raise AssertionError("a missing shim loaded")
    for argv in (["--gemmul8", str(missing)], ["--device", "gpu", "--gemmul8-configs", "f15", "q9"]):
        rc = main(["bench", "--sizes", "8", "--reps", "1", *argv])
        err = capsys.readouterr().err
        assert rc == 2 and err.startswith("ozgemm bench: ") and "Traceback" not in err, (argv, err)


def test_bench_front_pairs_each_peer_row_with_the_fastest_qualifying_contract():
    """The GPU bench's front summary, from rows alone: per GEMMul8 row, the fastest ozgemm row of
    the same n, phi and dtype at least as fast with no larger error (whole-output errors where
    every row has one, else the block's); none where no row qualifies."""
    from ozgemm.cli.bench_gpu import front

    def oz(c, n, t, e, full=None, dt="float64", phi=0.5):
        return {"contract": c, "n": n, "phi": phi, "dtype": dt, "ozgemm_s": t, "oz_max_err_u": e,
                "oz_full_max_err_u": full}

    def gm(cfg, n, t, e, full=None, dt="float64", phi=0.5):
        return {**oz(f"GEMMul8 {cfg}", n, t, e, full, dt, phi), "peer": "GEMMul8", "config": cfg}

    rows = [oz("fp64", 8, 1.0, 0.1, 0.2), oz("fp64-fast", 8, 0.8, 0.5, 0.9), oz("slow", 8, 3.0, 0.0, 0.0),
            oz("fp32", 8, 0.1, 0.1, 0.1, dt="float32"), oz("fp64", 8, 0.5, 0.1, 0.1, phi=2.0),
            gm("f14", 8, 0.9, 50.0, 60.0), gm("f16", 8, 1.2, 0.1, 0.3), gm("a16", 8, 2.0, 0.1, 0.1),
            gm("f8", 8, 0.2, 0.05, 0.05, dt="float32")]
    got = {f["config"]: (f["contract"], f["whole_output"]) for f in front(rows)}
    assert got == {"f14": ("fp64-fast", True), "f16": ("fp64", True), "a16": (None, True), "f8": (None, True)}
    rows = [oz("fp64", 8, 1.0, 0.1), gm("f15", 8, 1.5, 0.2, 0.3)]  # an ozgemm row without a whole-output error
    (f,) = front(rows)
    assert f["contract"] == "fp64" and f["whole_output"] is False and f["peer_err"] == 0.2
    assert front([oz("fp64", 8, 1.0, 0.1)]) == []
    # a refused row (no time, no error) neither qualifies nor keeps whole-output errors from use
    refused = {"contract": "fp64-fast:moduli=13", "n": 8, "phi": 0.5, "dtype": "float64", "refused": "width"}
    (f,) = front([refused, oz("fp64", 8, 1.0, 0.1, 0.2), gm("f16", 8, 1.2, 0.1, 0.3)])
    assert f["contract"] == "fp64" and f["whole_output"] is True

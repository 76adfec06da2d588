import json

import numpy as np

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
    # a refusal (ContractError) is exit 3, not a breach
    np.save(tmp_path / "W.npy", np.array([[1.0, 1e-45]]))
    np.save(tmp_path / "I.npy", np.eye(2))
    capsys.readouterr()
    rc = main(["audit", str(tmp_path / "W.npy"), str(tmp_path / "I.npy")])
    out = capsys.readouterr().out
    assert rc == 3 and "REFUSED" in out and "BROKEN" not in out
    assert main(["audit", "--size", "0"]) == 2
    assert main(["audit", "--json", str(tmp_path / "missing" / "x.json")]) == 2

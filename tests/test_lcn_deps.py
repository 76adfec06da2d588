"""ozgemm.fwt and ozgemm.lcn import with numpy alone; a missing optional dependency is named."""
import subprocess
import sys
import textwrap

_BLOCK = "import sys\nfor m in ('cupy', 'scipy', 'networkx', 'matplotlib', 'tqdm'):\n    sys.modules[m] = None\n"


def _run(code):
    return subprocess.run([sys.executable, "-c", _BLOCK + textwrap.dedent(code)], capture_output=True, text=True)


def test_import_with_numpy_alone():
    r = _run("import ozgemm.fwt, ozgemm.lcn\nimport numpy as np\nprint(ozgemm.fwt.fwht(np.ones(4)).tolist())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[4.0, 0.0, 0.0, 0.0]"


def test_missing_optional_dependency_names_the_extra():
    r = _run("""
        import numpy as np
        from ozgemm.lcn import from_arrays
        from ozgemm.lcn.draw import plot
        from ozgemm.lcn.layout import _networkx
        for f in (lambda: _networkx(), lambda: plot(None, "x.png")):
            try:
                f()
            except ImportError as e:
                print(e)
        """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 2 and all("ozgemm[lcn]" in ln for ln in lines)
    assert "networkx" in lines[0] and "matplotlib" in lines[1]

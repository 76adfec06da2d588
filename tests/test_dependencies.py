"""The core install is numpy alone: every optional package is imported on first use, and a
missing one raises ImportError naming the extra that provides it (pip install 'ozgemm[...]')."""
import os
import subprocess
import sys
import textwrap

_OPTIONAL = ("numpy_quaddtype", "scipy", "mpmath", "gmpy2", "flint", "tqdm", "matplotlib", "networkx",
             "sympy", "cupy", "cupy_backends", "threadpoolctl")
_BLOCK = f"import sys\nfor m in {_OPTIONAL!r}:\n    sys.modules[m] = None\n"
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code, *args):
    env = dict(os.environ, PYTHONPATH=_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", _BLOCK + textwrap.dedent(code), *args],
                          capture_output=True, text=True, env=env, timeout=120)


def test_core_with_numpy_alone():
    r = _run("""
        import numpy as np
        import ozgemm
        for m in {mods!r}:
            assert sys.modules[m] is None, m  # still blocked: nothing imported them for real
        e = np.eye(2)
        assert (ozgemm.matmul(e, e, contract="fp64") == e).all()
        c = ozgemm.matmul(e.astype(np.float32), e.astype(np.float32), contract="fp32")
        assert c.dtype == np.float32 and (c == e).all()
        d = ozgemm.matmul(e, e, contract="dd")
        assert isinstance(d, ozgemm.DD) and (d.hi == e).all() and (d.lo == 0).all()
        ozgemm.load_contract("fp128")
        assert not ozgemm.contracts.formats.is_quad_array(e)
        try:
            ozgemm.matmul(e, e, contract="fp128")  # a binary128 result needs numpy-quaddtype
        except ImportError as exc:
            assert "ozgemm[fp128]" in str(exc), exc
        else:
            raise AssertionError("fp128 result without numpy-quaddtype")
        import ozgemm.verify.reference as ref
        ex = ref.exact_product(e, e)  # python ints without gmpy2 / python-flint
        assert ex.X == [[1, 0], [0, 1]] and not ref.have_flint()
        try:
            ref.correctly_rounded(ex)
        except ImportError as exc:
            assert "ozgemm[audit]" in str(exc), exc
        else:
            raise AssertionError("correct rounding without gmpy2")
        print("ok")
        """.replace("{mods!r}", repr(_OPTIONAL)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_cli_with_numpy_alone():
    cli = "from ozgemm.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    r = _run(cli, "--help")
    assert r.returncode == 0, r.stderr
    assert "audit" in r.stdout
    for cmd in ("audit", "bench"):
        r = _run(cli, cmd)
        assert r.returncode == 2, (cmd, r.stdout, r.stderr)
        err = r.stderr.strip()
        assert "ozgemm[audit]" in err and "Traceback" not in err and len(err.splitlines()) == 1, err


def test_python_m_ozgemm_help():  # python -m ozgemm --help, the optional packages blocked
    r = _run("import runpy\nsys.argv[0] = 'ozgemm'\nrunpy.run_module('ozgemm', run_name='__main__', alter_sys=True)\n",
             "--help")
    assert r.returncode == 0, r.stderr
    assert "audit" in r.stdout

"""The CUDA engine's kernel sources compile with nvcc (where installed: no GPU needed) and
define every kernel name that ozgemm/kernels/cuda/backend.py launches.

NVRTC compiles these sources at run time on the GPU; a kernel name lost in an edit would
otherwise only show there, on a machine with a GPU."""
import re
import shutil
import subprocess
from importlib import resources

import pytest

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


def _entries(src: str, tmp_path, name: str) -> set:
    f = tmp_path / f"{name}.cu"
    f.write_text(src)
    p = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", "-Xptxas", "-v", "-o",
                        str(tmp_path / f"{name}.cubin"), str(f)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-3000:]
    return set(re.findall(r"Compiling entry function '(\w+)'", p.stderr))


def _launched() -> set:
    """Kernel names in the engine's _fn(...) calls: every string literal in the call, and each
    with the "_f32" suffix where a suffix variable is appended (names held in variables are
    listed in the test)."""
    text = (resources.files("ozgemm.kernels") / "cuda" / "backend.py").read_text()
    names = set()
    for call in re.findall(r"_fn\(([^()]*)\)", text):
        lits = re.findall(r'"(\w+)"', call)
        names.update(lits)
        if "sfx" in call:
            names.update(n + "_f32" for n in lits)
    # the residue launch helpers take the kernel's name first (a literal, or "a" if ... else "b")
    for first in re.findall(r'_residues_(?:rows|cols)\(\s*("\w+"(?:\s+if\s[^"]*else\s+"\w+")?)', text):
        names.update(re.findall(r'"(\w+)"', first))
    return names


@pytest.mark.parametrize("n_moduli", [9, 16, 40, "split 17"])
def test_kernel_sources_define_every_launched_name(tmp_path, n_moduli):
    """Real plans' sources (a count of the table) define every launched kernel but those of the
    split form, which a complex plan's source over moduli with a square root of -1 defines."""
    from ozgemm.contracts.moduli import GAUSSIAN_MODULI
    from ozgemm.kernels.cuda.source import common_source, kernel_source

    split = isinstance(n_moduli, str)
    spec = GAUSSIAN_MODULI[:int(n_moduli.split()[1])] if split else n_moduli
    crt = kernel_source(spec).replace("__device__ __constant__ const", "__device__ const")  # as _module
    stats = common_source() + (resources.files("ozgemm.kernels") / "cuda" / "stats.cu").read_text()
    defined = _entries(crt, tmp_path, "crt") | _entries(stats, tmp_path, "stats")
    # names the engine builds in variables (row_stats / crt_round_*, the two-part residue
    # kernels of each form), and the literal ones
    parts = {f"scaled_residues_{form}{il}{sfx}" for form in ("pair", "split") for il in ("", "_il")
             for sfx in ("", "_f32")} | {"scaled_residues_cols_pair", "scaled_residues_cols_split"}
    launched = _launched() | parts | {"row_stats", "row_stats_long", "row_stats_f32_long", "crt_round_f64",
                                      "crt_round_f32"}
    assert {"scaled_residues", "scaled_residues_f32", "scaled_residues_cols", "row_extent", "col_sums",
            "plan_shifts", "crt_round_split_f64", "crt_round_3m_f64"} <= launched
    if not split:
        launched = {f for f in launched if "split" not in f}
    assert launched <= defined, sorted(launched - defined)

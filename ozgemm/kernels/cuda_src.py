"""CUDA source generation for the CRT kernels (no CuPy needed: usable for nvcc checks)."""
from __future__ import annotations

from importlib import resources

from ..crt.moduli import garner_constants

__all__ = ["kernel_source"]


def _header(n: int) -> str:
    gc = garner_constants(n)
    lines = [f"#define NMOD {n}", f"#define NLIMB {gc.limbs}",
             "__device__ __constant__ const int MOD[NMOD] = {" + ", ".join(map(str, gc.moduli)) + "};",
             "__device__ __constant__ const int INV[NMOD] = {" + ", ".join(str(int(v)) for v in gc.inv) + "};",
             "__device__ __constant__ const int W[NMOD][NMOD] = {" + ", ".join(
                 "{" + ", ".join(str(int(v)) for v in row) + "}" for row in gc.w) + "};",
             "__device__ __constant__ const unsigned int MLIMB[NLIMB] = {" + ", ".join(
                 f"{int(v)}u" for v in gc.M_limbs) + "};",
             "__device__ __constant__ const int P31[NMOD] = {" + ", ".join(str((1 << 31) % m) for m in gc.moduli) + "};"]
    return "\n".join(lines) + "\n"


def kernel_source(n: int) -> str:
    """Full CUDA source for ``n`` moduli (header + crt.cu); also used for nvcc checks."""
    body = (resources.files("ozgemm.kernels") / "cuda" / "crt.cu").read_text()
    return _header(n) + body

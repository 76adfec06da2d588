"""The standard test input of the field: ``A = (rand - 0.5) * exp(phi * randn)``.

Each entry is a uniform number in [-0.5, 0.5) times ``exp(phi * g)`` with ``g`` standard
normal, so ``phi`` sets how widely the exponents spread: phi = 0.5 gives HPL-like matrices
(magnitudes within a few binades), and every larger phi spreads the exponents further
(phi = 3 spans tens of binades), which is what makes a product hard for slice- or
modulus-based emulation. This is the input family of the Ozaki-scheme literature (e.g.
Ozaki, Uchino, Imamura 2025, "Ozaki Scheme II: a GEMM-oriented emulation of floating-point
matrix multiplication using an integer modular technique", Sec. 5), used here by the
audit, the tests and the benchmarks through this one implementation.

The values depend only on the generator's stream: for each matrix, one block of uniforms
(``rng.random``, or ``random_sample`` for a ``cupy.random.RandomState``), then one block of
standard normals, both float64 and of the matrix's shape, in that order; a pair draws A
completely before B. A given seed and generator therefore always give the same bits, and
a ``dtype`` is applied by one cast at the end (binary32 operands are rounded float64 ones).
"""
from __future__ import annotations

from .._xp import array_namespace

__all__ = ["phi_matrix", "phi_operands", "complex_operands"]


def phi_matrix(rng, shape, phi, dtype=None):
    """``(rng.random(shape) - 0.5) * exp(phi * rng.standard_normal(shape))``, cast to ``dtype`` if given.

    ``rng`` is a ``numpy.random.Generator`` (numpy result) or a ``cupy.random.RandomState`` /
    ``cupy.random.Generator`` (cupy result, drawn on the device). The uniforms are drawn
    first, then the normals; ``exp`` is that of the drawn array's library.
    """
    uniform = rng.random_sample if hasattr(rng, "random_sample") else rng.random
    u = uniform(shape)
    xp = array_namespace(u)
    x = (u - 0.5) * xp.exp(phi * rng.standard_normal(shape))
    return x if dtype is None else x.astype(dtype)


def phi_operands(rng, m, k, n, phi, dtype=None):
    """Operands ``(A, B)`` of shapes (m, k) and (k, n) from :func:`phi_matrix`, A drawn first."""
    a = phi_matrix(rng, (m, k), phi, dtype)
    b = phi_matrix(rng, (k, n), phi, dtype)
    return a, b


def complex_operands(a, b, a2, b2):
    """Complex operands ``a + i a2``, ``b + i b2`` from real parts of one precision (complex64
    from float32 parts, complex128 from float64)."""
    return a + 1j * a2, b + 1j * b2

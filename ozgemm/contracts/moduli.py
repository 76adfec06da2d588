"""The moduli table of Ozaki scheme II (a contract's ``moduli`` count counts its entries).

``MODULI`` is the greedy sequence of pairwise-coprime integers <= 256 taken in decreasing
order (256, 255, 253, 251, 247, ...). Its first 20 entries are the table of GEMMul8
(Ozaki, Uchino, Imamura, "Ozaki Scheme II: A GEMM-oriented emulation of floating-point
matrix multiplication using an integer modular technique", 2025, Sec. 3); the rest extend
it to 49 moduli (product ~ 2**341.9) for wide contracts. Symmetric residues modulo
m <= 256 lie in [-128, 127], so each fits int8.

Everything here is exact integer data computed once at import.
"""
from __future__ import annotations



__all__ = ["MODULI"]

MODULI: tuple[int, ...] = (
    256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197, 193, 191,
    181, 179, 173, 167, 163, 157, 151, 149, 139, 137, 131, 127, 113, 109, 107, 103, 101,
    97, 89, 83, 79, 73, 71, 67, 61, 59, 53, 47, 43, 41, 37, 29,
)

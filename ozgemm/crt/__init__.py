"""Ozaki scheme II: moduli table, scaled residues, Garner/CRT reconstruction."""
from .moduli import MODULI, moduli_product

__all__ = ["MODULI", "moduli_product"]

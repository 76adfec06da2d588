"""Ozaki scheme II as one pipeline: scaled residues, exact INT8 GEMMs per modulus, exact CRT
reconstruction, one rounding (:mod:`ozgemm.crt.pipeline`)."""

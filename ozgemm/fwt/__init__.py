"""ozgemm.fwt — fast Walsh–Hadamard transform, exact for integers, at memory speed on GPUs.

Public API:

* :func:`fwht`, :func:`ifwht` — transform along an axis (numpy or cupy arrays);
* :func:`sequency_permutation` — natural → sequency index map;
* :func:`walsh_spectrum` — exact Walsh spectrum of a Boolean function's truth table.

See docs/fwt.md for the conventions (natural/sequency order, norms, sympy/MATLAB
equivalents), accuracy bounds and GPU kernel design.
"""
from ._core import fwht, ifwht, sequency_permutation
from .boolean import walsh_spectrum

__all__ = ["fwht", "ifwht", "sequency_permutation", "walsh_spectrum"]

"""ozgemm: matrix products with a proven precision contract, from exact INT8 products.

Public API: :func:`matmul`, :func:`plan`, :class:`Contract`, :func:`load_contract`,
:class:`ContractError`, the wide-format carriers :class:`DD` (double-double) and
:class:`Binary128` (raw IEEE binary128 encodings, the GPU carrier) with
:func:`quad_to_bits` / :func:`quad_from_bits`, :data:`__version__`.
"""
__version__ = "0.1.0"

from .api import Prepared, default_contract, dot, einsum, gemm, inner, matmul, plan, prepare, tensordot, vdot
from .contracts.contract import Contract, ContractError, load_contract, named_contracts
from .contracts.formats import DD, Binary128, quad_from_bits, quad_to_bits

__all__ = ["matmul", "gemm", "plan", "dot", "vdot", "inner", "tensordot", "einsum", "prepare", "Prepared", "default_contract", "Contract", "ContractError", "load_contract", "named_contracts", "DD", "Binary128",
           "quad_from_bits", "quad_to_bits", "__version__"]

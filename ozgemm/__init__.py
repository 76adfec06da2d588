"""ozgemm: matrix products with a proven precision contract, from exact INT8 products.

Public API: :func:`matmul`, :func:`plan`, :class:`Contract`, :func:`load_contract`,
:class:`ContractError`.
"""
__version__ = "0.1.0"

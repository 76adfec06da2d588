"""Contracts and value types: what a product promises, and the formats it speaks of.

:class:`Contract` (named TOML files shipped here: ``fp64``, ``fp64-fast``, ``fp32``, ``dd``,
``fp128``, ``fp64-ozaki``, ``fp32-ozaki``), the output formats, the double-double
(:class:`DD`) and binary128 (:class:`Binary128`) value types, and the moduli table a
contract's ``moduli`` count refers to. The bottom layer of the package: it imports nothing
else of ozgemm but the array-namespace helpers.
"""
from .contract import Contract, ContractError, as_contract, load_contract, named_contracts
from .formats import DD, FORMATS, Binary128, Format, quad_from_bits, quad_to_bits

__all__ = ["Contract", "ContractError", "as_contract", "load_contract", "named_contracts", "DD", "Binary128",
           "Format", "FORMATS", "quad_from_bits", "quad_to_bits"]

"""Precision contracts: what a product promises, loaded from TOML.

A :class:`Contract` names an output format, a number of bits, an exponent range, a method
and a moduli policy; the planner (:mod:`ozgemm.precision.planner`) derives from it and the
actual inputs the scaling, the moduli and an a-priori entrywise error bound. Named
contracts ship as TOML files in ``ozgemm/contracts/``.

The promises (u_f = 2**-p is the unit roundoff of the output format, p its precision):

``bound_kind = "componentwise"`` (contracts ``fp64``, ``fp32``)
    for all finite inputs, every entry satisfies
    ``|C - AB|_ij <= u_f * |AB|_ij + 2**-(bits-1) * (|A||B|)_ij``
    (plus half the smallest subnormal where the result underflows; see the README for the
    overflow threshold). With bits = p this is at most 3u (|A||B|)_ij, never worse than the
    classic DGEMM/SGEMM bound ``gamma_k (|A||B|)_ij``, gamma_k = ku/(1-ku), for any k >= 3
    (for k = 2 it can exceed gamma_2 ~ 2u by up to u |AB|).
``bound_kind = "componentwise"`` with ``growth = "sqrt_k"`` (contracts ``fp64-dgemm``, ``fp32-sgemm``)
    ``|C - AB|_ij <= u_f * |AB|_ij + sqrt(k) * 2**-bits * (|A||B|)_ij``, k the inner dimension
    of the product planned (the number of real products summed per entry: 2k for a complex
    product's real embedding, k + columns of C for the fused update). With bits = p this is
    the error a conventional DGEMM/SGEMM stays within with high probability (Higham and Mary,
    "A new approach to probabilistic rounding error analysis", SIAM J. Sci. Comput. 41(5),
    2019: lambda sqrt(k) u), made deterministic and proven per entry; it is always stronger than
    the worst case gamma_k (|A||B|) for k >= 2. Planned as the constant-growth contract with
    ``bits + 1 - floor(log2(k) / 2)`` bits (:meth:`Contract.for_k`).
``bound_kind = "normwise"`` (contracts ``fp64-fast``, ``fp32-fast``)
    ``|C - AB|_ij <= 2**-(bits-1) * k * max_l |A_il| * max_l |B_lj|`` (same underflow note).

A name or path followed by ``:key=value,...`` is that contract with those keys changed
(:func:`load_contract`), e.g. ``"fp64-fast:moduli=16"``.
"""
from __future__ import annotations

import functools
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from pathlib import Path

import numpy as np

from .moduli import MODULI
from .formats import Format, get_format

__all__ = ["Contract", "ContractError", "load_contract", "named_contracts", "as_contract"]

_METHODS = ("crt", "ozaki", "auto")
_BOUND_KINDS = ("componentwise", "normwise")
_SPECIALS = ("ieee", "raise")
_SCHEDULES = ("triangular", "full", "auto")
_GROWTHS = ("constant", "sqrt_k")


class ContractError(ValueError):
    """A contract is malformed, or cannot be met for the given inputs.

    The message names the contract, the shortfall and the fix.
    """


@dataclass(frozen=True)
class Contract:
    """A precision contract.

    Parameters
    ----------
    name : str
        Name used in reports.
    format : str
        Output (and input) format: ``"binary64"`` or ``"binary32"`` in this release.
    bits : int, optional
        Promised bits, ``2 <= bits <= p`` of the format (default: p). The bound constant is
        ``2**-(bits-1)``.
    exponent_range : int
        Componentwise contracts: how many bits beyond the format's precision p the integer
        width of the scaled rows/columns may grow to cover the exponent spread of the data
        (``beta <= p + exponent_range``, whatever ``bits``: fewer promised bits never refuse
        more inputs). Data needing more raise :class:`ContractError`; the shipped contracts
        set it above what the moduli table holds, so only the table limits them.
    method : str
        ``"crt"`` (Ozaki scheme II, Chinese remaindering), ``"ozaki"`` (Ozaki scheme I,
        error-free INT8 slicing, :mod:`ozgemm.ozaki`) or ``"auto"`` (the planner builds both
        plans and keeps the one with the smaller modelled cost; same promise either way).
    moduli : int or "auto"
        Number of moduli. ``"auto"``: the planner picks the fewest moduli that prove the
        bound for these inputs (widening up to the table or the exponent range). An int
        fixes the count; a componentwise contract whose bound cannot be proven with it
        raises :class:`ContractError`.
    bound_kind : str
        ``"componentwise"`` or ``"normwise"`` (see the module docstring for the promise).
    specials : str
        ``"ieee"``: NaN/Inf follow numpy float64 matmul semantics; ``"raise"``: non-finite
        input raises :class:`ContractError`.
    description : str
        Free text.
    slices : int or "auto"
        Ozaki scheme I: INT8 slices per scaled row/column. ``"auto"``: the fewest that prove
        the bound; an int fixes the count (:class:`ContractError` if it cannot prove it).
    schedule : str
        Ozaki scheme I slice-pair schedule: ``"triangular"`` (s(s+1)/2 products, a proven
        truncation term enters the bound), ``"full"`` (s**2 products, no truncation) or
        ``"auto"`` (whichever proves the bound with fewer products).
    growth : str
        How the componentwise constant grows with the inner dimension k: ``"constant"``
        (2**-(bits-1), the default) or ``"sqrt_k"`` (sqrt(k) 2**-bits: the DGEMM-grade tiers;
        see the module docstring).
    max_gemms : int, optional
        A cap on the cost: the most INT8 GEMMs of the planned product's shape (moduli or slice
        products, plus the bound GEMM; a complex product counts those of its real embedding) a
        product may take. A plan needing more raises :class:`ContractError` with its count.
        Absent: no cap (the cost follows the data).
    """

    name: str
    format: str = "binary64"
    bits: int | None = None
    exponent_range: int = 256
    method: str = "crt"
    moduli: int | str = "auto"
    bound_kind: str = "componentwise"
    specials: str = "ieee"
    description: str = ""
    slices: int | str = "auto"
    schedule: str = "auto"
    max_gemms: int | None = None
    growth: str = "constant"
    source: str = field(default="<object>", compare=False)

    def __post_init__(self):
        where = f"contract {self.name!r} ({self.source})"
        try:
            fmt = get_format(self.format)
        except ValueError as exc:
            raise ContractError(f"{where}: key 'format': {exc}") from None
        object.__setattr__(self, "format", fmt.name)
        if not isinstance(self.name, str) or not self.name:
            raise ContractError(f"{where}: key 'name' must be a non-empty string, got {self.name!r}")
        if self.bits is None:
            object.__setattr__(self, "bits", fmt.p)
        if not isinstance(self.bits, int) or isinstance(self.bits, bool) or not 2 <= self.bits <= fmt.p:
            raise ContractError(f"{where}: key 'bits' must be an integer in [2, {fmt.p}] for {fmt.name}, got {self.bits!r}")
        if not isinstance(self.exponent_range, int) or isinstance(self.exponent_range, bool) or not 0 <= self.exponent_range <= 4096:
            raise ContractError(f"{where}: key 'exponent_range' must be an integer in [0, 4096], got {self.exponent_range!r}")
        if self.method not in _METHODS:
            raise ContractError(f"{where}: key 'method' must be one of {_METHODS}, got {self.method!r}")
        nmax = len(MODULI)
        if self.moduli != "auto" and (not isinstance(self.moduli, int) or isinstance(self.moduli, bool)
                                      or not 1 <= self.moduli <= nmax):
            raise ContractError(f"{where}: key 'moduli' must be an integer in [1, {nmax}] (the moduli table) or "
                                f"\"auto\", got {self.moduli!r}")
        if self.bound_kind not in _BOUND_KINDS:
            raise ContractError(f"{where}: key 'bound_kind' must be one of {_BOUND_KINDS}, got {self.bound_kind!r}")
        if self.specials not in _SPECIALS:
            raise ContractError(f"{where}: key 'specials' must be one of {_SPECIALS}, got {self.specials!r}")
        if self.slices != "auto" and (not isinstance(self.slices, int) or isinstance(self.slices, bool) or self.slices < 1):
            raise ContractError(f"{where}: key 'slices' must be a positive integer or \"auto\", got {self.slices!r}")
        if isinstance(self.max_gemms, np.integer):
            object.__setattr__(self, "max_gemms", int(self.max_gemms))
        least = 2 if self.bound_kind == "componentwise" else 1  # one modulus or slice (+ the bound GEMM)
        if self.bound_kind == "normwise" and self.method == "crt" and isinstance(self.moduli, int):
            least = self.moduli
        if self.max_gemms is not None and (not isinstance(self.max_gemms, int) or isinstance(self.max_gemms, bool)
                                           or self.max_gemms < least):
            raise ContractError(f"{where}: key 'max_gemms' must be an integer >= {least} (no {self.bound_kind} "
                                f"plan takes fewer INT8 GEMMs), or absent (no cap); got {self.max_gemms!r}")
        if self.growth not in _GROWTHS:
            raise ContractError(f"{where}: key 'growth' must be one of {_GROWTHS}, got {self.growth!r}")
        if self.growth != "constant" and self.bound_kind != "componentwise":
            raise ContractError(f"{where}: key 'growth' = {self.growth!r} needs bound_kind = \"componentwise\"")
        if self.schedule not in _SCHEDULES:
            raise ContractError(f"{where}: key 'schedule' must be one of {_SCHEDULES}, got {self.schedule!r}")

    @property
    def fmt(self) -> Format:
        """The output :class:`~ozgemm.contracts.formats.Format`."""
        return get_format(self.format)

    def promise(self) -> str:
        """The promised bound as a one-line formula."""
        c = f"2^-{self.bits - 1}"
        if self.growth == "sqrt_k":
            return f"|C-AB| <= 2^-{self.fmt.p}*|AB| + sqrt(k)*2^-{self.bits}*(|A||B|)"
        if self.bound_kind == "componentwise":
            return f"|C-AB| <= 2^-{self.fmt.p}*|AB| + {c}*(|A||B|)"
        return f"|C-AB|_ij <= {c}*k*max|A_i,:|*max|B_:,j|"

    def with_(self, **changes) -> "Contract":
        """A copy with some keys changed (validated again)."""
        src = self.source if self.source.startswith("derived from ") else f"derived from {self.source}"
        changes.setdefault("source", src)
        extra = 0
        if "bits" not in changes and self.bits > self.fmt.p:  # a sharpened contract stays sharpened
            extra, changes["bits"] = self.bits - self.fmt.p, self.fmt.p
        c = replace(self, **changes)
        return c.sharpened(extra) if extra else c

    def for_k(self, k: int) -> "Contract":
        """The contract the planners prove for inner dimension ``k``: itself, or for growth
        ``"sqrt_k"`` the constant-growth contract with b = bits + 1 - floor(log2(k) / 2) bits,
        whose constant 2**-(b-1) = 2**-bits 2**floor(log2(k)/2) <= sqrt(k) 2**-bits (b above
        the format's precision for k < 4 is kept, as :meth:`sharpened` does; at least 2)."""
        if self.growth == "constant":
            return self
        return _constant_growth(self, (max(int(k), 1).bit_length() - 1) // 2)  # h = floor(log2(k) / 2)

    def sharpened(self, extra_bits: int) -> "Contract":
        """The same contract promising ``extra_bits`` more (bits may then exceed the format's
        precision): what the exponent-band planner proves for each band pair, so that the pairs
        and the parts left out share the promise (:mod:`ozgemm.precision.bands`). Internal:
        only the planners read it; it is never a user's contract."""
        c = self.with_(bits=self.fmt.p)  # validated, then the bits set past the format's check
        object.__setattr__(c, "bits", self.bits + int(extra_bits))
        return c


_KEYS = {f.name for f in fields(Contract)} - {"source"}


def named_contracts() -> list[str]:
    """Names of the contracts shipped in ``ozgemm/contracts/``."""
    root = resources.files("ozgemm.contracts")
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def _from_mapping(data: dict, source: str, default_name: str) -> Contract:
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ContractError(f"contract file {source}: unknown key(s) {unknown}; known keys: {sorted(_KEYS)}")
    data = dict(data)
    data.setdefault("name", default_name)
    return Contract(**data, source=source)


def load_contract(name_or_path) -> Contract:
    """Load a contract by shipped name (``"fp64"``, ``"fp64-fast"``, ``"fp32"``) or TOML path,
    optionally followed by ``:key=value,key=value`` overrides (values in TOML syntax, bare
    words as strings; one line, no comments, no ``:`` or ``,`` inside a value; each key once
    per group, groups may follow each other): ``"fp64-fast:moduli=17"`` is
    ``load_contract("fp64-fast").with_(moduli=17)`` named ``fp64-fast:moduli=17`` — the form
    the command-line tools take for ``--contract(s)``.

    Raises
    ------
    ContractError
        Unknown name, unreadable file, TOML syntax error, unknown key or invalid value;
        the message names the file and the key.
    """
    s = str(name_or_path)
    base, sep, spec = s.rpartition(":")
    if sep and base and "=" in spec and not _is_file(s):
        if _names_a_file(base):  # a user's file: read every time
            return _with_overrides(load_contract(base), spec, s)
        return _overridden(s)
    if s.endswith(".toml") or _is_file(s):  # a user's file: read every time (it may change)
        p = Path(s)
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ContractError(f"contract file {s} is not UTF-8 text: {exc}") from None
        except OSError as exc:
            raise ContractError(f"cannot read contract file {s}: {exc}") from None
        return _parse(text, str(p), p.stem)
    return _shipped(s)


def _is_file(s: str) -> bool:
    """Whether ``s`` names an existing file (False where the OS refuses the name, e.g. too
    long: ``os.path.isfile`` answers False for those itself)."""
    return os.path.isfile(s)


def _names_a_file(s: str) -> bool:
    """Whether ``s``, its overrides stripped, names a TOML path (a user's file, never cached)."""
    while True:
        if s.endswith(".toml") or _is_file(s):
            return True
        base, sep, spec = s.rpartition(":")
        if not (sep and base and "=" in spec):
            return False
        s = base


@functools.lru_cache(maxsize=None)
def _shipped(s: str) -> Contract:
    """A shipped contract, parsed once per process (package data; Contract is frozen). Parsing
    it on every ``matmul`` call cost ~0.6 ms of host time, measured on the GPU machine."""
    ok = s and not s.startswith(".") and not any(ch in s for ch in "/\\\0") and len(s) <= 200
    f = resources.files("ozgemm.contracts") / f"{s}.toml" if ok else None  # only the package's own files
    if f is None or not f.is_file():
        raise ContractError(f"unknown contract {s!r}; shipped contracts: {named_contracts()} (or pass a .toml path)")
    return _parse(f.read_text(), f"ozgemm/contracts/{s}.toml", s)


@functools.lru_cache(maxsize=256)
def _overridden(full: str) -> Contract:
    """The contract ``name:key=value,...`` names for a shipped name (parsed once per process,
    as :func:`_shipped`)."""
    base, _, spec = full.rpartition(":")
    return _with_overrides(load_contract(base), spec, full)


def _with_overrides(c: Contract, spec: str, full: str) -> Contract:
    """``c`` with the keys of ``spec`` (``key=value,...``) changed, named ``full``."""
    changes = {}
    for item in spec.split(","):
        key, eq, text = (t.strip() for t in item.partition("="))
        if not eq or not key:
            raise ContractError(f"contract {full!r}: override {item!r} is not key=value")
        if key not in _KEYS or key == "name":
            raise ContractError(f"contract {full!r}: unknown or fixed key {key!r}; keys: {sorted(_KEYS - {'name'})}")
        if key in changes:
            raise ContractError(f"contract {full!r}: key {key!r} is given twice")
        if any(ch in text for ch in "\n\r#"):
            raise ContractError(f"contract {full!r}: the value of {key!r} must be one TOML value on one line, "
                                f"without comments; got {text!r}")
        try:
            data = tomllib.loads(f"v = {text}")
        except tomllib.TOMLDecodeError:
            data = {"v": text}  # a bare word: a string value
        changes[key] = data["v"]
    return c.with_(name=full, **changes)


def _parse(text: str, source: str, default: str) -> Contract:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ContractError(f"contract file {source}: malformed TOML: {exc}") from None
    return _from_mapping(data, source, default)


def as_contract(c) -> Contract:
    """Accept a :class:`Contract`, a shipped name or a TOML path."""
    if isinstance(c, Contract):
        return c
    if isinstance(c, (str, Path)):
        return load_contract(c)
    raise TypeError(f"contract must be a Contract, a name or a .toml path, got {type(c).__name__}")


@functools.lru_cache(maxsize=256)
def _constant_growth(c: Contract, h: int) -> Contract:
    """:meth:`Contract.for_k` of a contract of growth "sqrt_k" at h = floor(log2(k) / 2),
    derived once per (contract, h): every product of one kind asks for the same."""
    b = max(2, c.bits + 1 - h)
    p = c.fmt.p
    d = c.with_(growth="constant", bits=min(b, p), source=c.source)
    return d.sharpened(b - p) if b > p else d

"""A recorded corpus of products whose results and plans must stay byte-identical.

Each case is ``(name, a, b, contract)``; :func:`digest` runs
``ozgemm.matmul(a, b, contract=contract, return_plan=True)`` on the CPU engine and returns
``{"result": sha256, "plan": sha256}`` of the result's bytes (with dtype and shape) and of a
canonical description of the plans (method-defined numbers only: width, moduli, slices,
schedule, shifts), or ``{"error": exception class name}`` when the call raises.
``tests/data/corpus_hashes.json`` holds the digests recorded from the code as it is;
``tests/test_corpus.py`` checks that every case still gives exactly its recorded digest, so
a restructuring of the package (modules moved, pipelines split, backends behind an
interface) is proven not to change a single bit of any result or plan.

Only the public API is used here (``ozgemm.matmul``, ``ozgemm.DD``, ``ozgemm.load_contract``,
``Contract.with_``, ``ozgemm.quad_to_bits``, the plans' ``info()``, ``moduli``, ``beta``,
``s``, ``t``), so the corpus survives module moves.

Inputs are deterministic: every data family draws from ``numpy.random.default_rng`` seeded
with a CRC-32 of the family's label, so a case does not depend on which other cases exist
or on their order.

Record the digests (only when a change of results or plans is intended)::

    python tests/corpus.py --record
"""
from __future__ import annotations

import hashlib
import json
import sys
import warnings
import zlib
from pathlib import Path

import numpy as np

import ozgemm
from ozgemm.verify.inputs import phi_matrix

__all__ = ["cases", "digest", "compute_all", "HASHES"]

HASHES = Path(__file__).resolve().parent / "data" / "corpus_hashes.json"

# --------------------------------------------------------------------------------------------
# contracts
# --------------------------------------------------------------------------------------------

SHIPPED = ("fp64", "fp64-fast", "fp32", "dd", "fp128", "fp64-ozaki", "fp32-ozaki", "fp64-dgemm", "fp32-sgemm")


def _contracts():
    """label -> contract (a shipped name, or a Contract derived with ``with_``)."""
    fp64 = ozgemm.load_contract("fp64")
    c = {name: name for name in SHIPPED}
    c["fp64+ozaki"] = fp64.with_(method="ozaki")
    c["fp64+auto"] = fp64.with_(method="auto")
    c["fp64+moduli20"] = fp64.with_(moduli=20)
    c["fp64-ozaki+full"] = ozgemm.load_contract("fp64-ozaki").with_(schedule="full")
    c["fp64-ozaki+triangular"] = ozgemm.load_contract("fp64-ozaki").with_(schedule="triangular")
    c["fp64-ozaki+slices9"] = ozgemm.load_contract("fp64-ozaki").with_(slices=9)
    c["fp64-fast+ozaki"] = ozgemm.load_contract("fp64-fast").with_(method="ozaki")
    c["fp32+auto"] = ozgemm.load_contract("fp32").with_(method="auto")
    c["fp64+bits40"] = fp64.with_(bits=40)
    c["fp64+raise"] = fp64.with_(specials="raise")
    c["dd+auto"] = ozgemm.load_contract("dd").with_(method="auto")
    return c


def _is_fp32(label: str) -> bool:
    return label.startswith("fp32")


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------

def _rng(label: str):
    return np.random.default_rng(zlib.crc32(label.encode()))


def _phi(rng, shape, phi):
    """The test family ``(rand - 0.5) * exp(phi * randn)`` (ozgemm.verify.inputs.phi_matrix)."""
    return phi_matrix(rng, shape, phi)


def _pair(label, m, k, n, phi=1.0):
    rng = _rng(label)
    return _phi(rng, (m, k), phi), _phi(rng, (k, n), phi)


def _cast(x, dtype):
    with np.errstate(all="ignore"):
        return x.astype(dtype)


def _dd(x, label):
    """A genuine double-double operand: hi = x, lo a random tail below half an ulp of hi."""
    rng = _rng("dd-tail/" + label)
    with np.errstate(all="ignore"):
        lo = x * (rng.random(x.shape) - 0.5) * 2.0 ** -53
    return ozgemm.DD(x, np.where(np.isfinite(x), lo, 0.0))


def _quad(x, label):
    """A binary128 (numpy-quaddtype) operand with bits beyond float64: x + tail, tail ~ 2**-60 x."""
    import numpy_quaddtype

    q = numpy_quaddtype.QuadPrecDType()
    rng = _rng("quad-tail/" + label)
    with np.errstate(all="ignore"):
        tail = np.where(np.isfinite(x), x * (rng.random(x.shape) - 0.5) * 2.0 ** -60, 0.0)
        return x.astype(q) + tail.astype(q)


PHI_SHAPES = ((33, 100, 17), (8, 300, 5), (70, 600, 50))
PHIS = ((0.5, "phi0.5"), (2.0, "phi2"), (3.0, "phi3"))


def _edge_shapes():
    """label -> (a, b) float64 of numpy.matmul's edge shapes (phi = 1)."""
    def mat(label, shape):
        return _phi(_rng(label), shape, 1.0)

    e = {}
    e["1x1x1"] = _pair("edge/1x1x1", 1, 1, 1)
    e["7x68x61"] = _pair("edge/7x68x61", 7, 68, 61)
    e["1x257x1"] = _pair("edge/1x257x1", 1, 257, 1)
    e["64x3x64"] = _pair("edge/64x3x64", 64, 3, 64)
    e["vec40@40x6"] = (mat("edge/vec@mat/a", (40,)), mat("edge/vec@mat/b", (40, 6)))
    e["6x40@vec40"] = (mat("edge/mat@vec/a", (6, 40)), mat("edge/mat@vec/b", (40,)))
    e["vec40@vec40"] = (mat("edge/vec@vec/a", (40,)), mat("edge/vec@vec/b", (40,)))
    e["5x0x4"] = (np.zeros((5, 0)), np.zeros((0, 4)))
    e["0x9x4"] = (np.zeros((0, 9)), mat("edge/m0/b", (9, 4)))
    e["5x9x0"] = (mat("edge/n0/a", (5, 9)), np.zeros((9, 0)))
    e["b2x5x9@9x4"] = (mat("edge/batch/a", (2, 5, 9)), mat("edge/batch/b", (9, 4)))
    e["b1x5x9@b3x9x4"] = (mat("edge/bcast/a", (1, 5, 9)), mat("edge/bcast/b", (3, 9, 4)))
    e["b2x1x3x7@b4x7x2"] = (mat("edge/bcast4/a", (2, 1, 3, 7)), mat("edge/bcast4/b", (4, 7, 2)))
    e["b0x3x7@7x2"] = (np.zeros((0, 3, 7)), mat("edge/batch0/b", (7, 2)))
    e["vec7@b3x7x2"] = (mat("edge/vec@batch/a", (7,)), mat("edge/vec@batch/b", (3, 7, 2)))
    e["fortran-7x68x61"] = tuple(np.asfortranarray(x) for x in _pair("edge/fortran", 7, 68, 61))
    e["strided-6x10x5"] = (mat("edge/strided/a", (12, 20))[::2, ::2], mat("edge/strided/b", (10, 15))[:, ::3])
    return e


def _specials(dtype):
    """label -> (a, b) of one dtype with NaN/Inf, signed zeros, subnormals, zero rows, values
    near overflow and beyond the exponent range."""
    fi = np.finfo(dtype)
    big = float(fi.max)
    tiny = float(fi.smallest_subnormal)
    half_exp = int(np.log2(big)) // 2  # products of two such values near overflow
    sub_exp = int(np.log2(float(fi.smallest_normal))) // 2 - 4  # products land in the subnormals

    def base(label, m=6, k=9, n=5):
        a, b = _pair("special/" + label, m, k, n)
        return _cast(a, dtype), _cast(b, dtype)

    s = {}
    a, b = base("nan")
    a[2, 3] = np.nan
    s["nan-a"] = (a, b)
    a, b = base("inf")
    b[4, 1] = np.inf
    s["inf-b"] = (a, b)
    a, b = base("inf-minus-inf")
    a[0, 0], a[0, 1] = np.inf, 1.0
    b[0, 0], b[1, 0] = 1.0, -np.inf
    s["inf-minus-inf"] = (a, b)
    a, b = base("inf-times-zero")
    a[1, 2] = -np.inf
    b[2, :] = 0.0
    b[2, 3] = -0.0
    s["inf-times-zero"] = (a, b)
    a, b = base("nan-and-inf")
    a[3, :] = np.nan
    b[:, 2] = np.inf
    a[5, 0] = -np.inf
    s["nan-row-inf-col"] = (a, b)
    a, b = base("signed-zeros")
    a[:] = -0.0
    s["negzero-a"] = (a, b)
    a, b = base("signed-zeros-mixed")
    a[0, :] = -0.0
    b[:, 0] = 0.0
    b[:, 1] = -0.0
    a[1, :] = 0.0
    s["signed-zeros-mixed"] = (a, b)
    a, b = base("zero-rows")
    a[1, :] = 0.0
    a[4, :] = 0.0
    b[:, 2] = 0.0
    s["zero-rows-cols"] = (a, b)
    a, b = base("all-zero")
    s["all-zero"] = (np.zeros_like(a), b)
    a, b = base("subnormal-in")
    a = _cast(a * tiny * 2.0 ** 20, dtype)
    a[0, 0] = tiny
    a[1, 1] = -tiny
    s["subnormal-a"] = (a, b)
    a, b = base("subnormal-out")
    s["subnormal-result"] = (_cast(a * 2.0 ** sub_exp, dtype), _cast(b * 2.0 ** sub_exp, dtype))
    a, b = base("near-overflow")
    s["near-overflow"] = (_cast(a * 2.0 ** (half_exp - 2), dtype), _cast(b * 2.0 ** (half_exp - 2), dtype))
    a, b = base("overflow")
    s["overflow"] = (_cast(np.abs(a) * 2.0 ** half_exp * 8, dtype), _cast(np.abs(b) * 2.0 ** half_exp * 8, dtype))
    a, b = base("max-finite")
    a[0, 0], a[2, 0] = big, -big
    b[0, :] = 1.0
    s["max-finite"] = (a, b)
    a, b = base("wide-spread")
    a[0, 0] *= 2.0 ** (half_exp - 4)
    a[0, 1] *= 2.0 ** -(half_exp - 4)
    s["row-spread"] = (a, b)
    a, b = base("cancel")
    b = np.concatenate([b, b], axis=0)
    a = np.concatenate([a, -a], axis=1)
    s["exact-cancellation"] = (a, b)
    return s


# --------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------

def cases():
    """Yield ``(name, a, b, contract)``, deterministic, names unique and stable."""
    con = _contracts()

    # 1. the phi family on every contract (float32 operands for the binary32 contracts)
    for label, c in con.items():
        dt = np.float32 if _is_fp32(label) else np.float64
        for phi, pl in PHIS:
            for m, k, n in PHI_SHAPES:
                a, b = _pair(f"{pl}/{m}x{k}x{n}", m, k, n, phi)
                yield f"{label}/{pl}/{m}x{k}x{n}", _cast(a, dt), _cast(b, dt), c

    # 2. edge shapes
    edge = _edge_shapes()
    for label in ("fp64", "fp64-fast", "fp32", "dd", "fp128", "fp64-ozaki", "fp32-ozaki", "fp64+auto",
                  "fp64-ozaki+full"):
        dt = np.float32 if _is_fp32(label) else np.float64
        for sl, (a, b) in edge.items():
            yield f"{label}/edge/{sl}", _cast(a, dt), _cast(b, dt), con[label]

    # 3. specials
    for label in ("fp64", "fp64-fast", "fp32", "dd", "fp128", "fp64-ozaki", "fp32-ozaki", "fp64+auto",
                  "fp64+raise", "fp64-fast+ozaki"):
        dt = np.float32 if _is_fp32(label) else np.float64
        for sl, (a, b) in _specials(dt).items():
            yield f"{label}/special/{sl}", a, b, con[label]

    # 4. float32 operands under binary64 / wide contracts, mixed float32 @ float64
    a, b = _pair("f32-operands/20x50x9", 20, 50, 9, 2.0)
    a32, b32 = _cast(a, np.float32), _cast(b, np.float32)
    for label in ("fp64", "fp64-fast", "dd", "fp128", "fp64-ozaki", "fp64+auto"):
        yield f"{label}/f32-operands/20x50x9", a32, b32, con[label]
        yield f"{label}/f32@f64-operands/20x50x9", a32, b, con[label]
    for sl, (x, y) in _specials(np.float32).items():
        if sl in ("nan-a", "subnormal-a", "near-overflow", "signed-zeros-mixed"):
            yield f"fp64/f32-operands/special/{sl}", x, y, "fp64"

    # 5. dd and binary128 operands (and what float32 / Ozaki-I contracts say to them)
    for kind, make in (("dd", _dd), ("quad", _quad)):
        for phi, pl in PHIS:
            a, b = _pair(f"{kind}-operands/{pl}/12x40x7", 12, 40, 7, phi)
            wa, wb = make(a, f"{pl}/a"), make(b, f"{pl}/b")
            for label in ("fp64", "dd", "fp128", "dd+auto", "fp64+auto"):
                yield f"{label}/{kind}@{kind}/{pl}/12x40x7", wa, wb, con[label]
            if pl == "phi2":
                for label in ("fp64", "dd", "fp128"):
                    yield f"{label}/{kind}@f64/{pl}/12x40x7", wa, b, con[label]
                    yield f"{label}/f32@{kind}/{pl}/12x40x7", _cast(a, np.float32), wb, con[label]
                for label in ("fp32", "fp64-ozaki", "fp64-fast", "fp32-ozaki"):
                    x = wa
                    y = _cast(b, np.float32) if _is_fp32(label) else b
                    yield f"{label}/{kind}@f64/{pl}/12x40x7", x, y, con[label]
        a, b = _pair(f"{kind}-operands/shapes", 6, 11, 4)
        for sl, (x, y) in {"vec11@vec11": (a[0], b[:, 0]), "6x11@vec11": (a, b[:, 0]),
                           "vec11@11x4": (a[0], b), "b2x6x11@11x4": (np.stack([a, -a]), b)}.items():
            for label in ("dd", "fp128", "fp64"):
                yield f"{label}/{kind}@{kind}/{sl}", make(x, sl + "/a"), make(y, sl + "/b"), con[label]
        for sl in ("nan-row-inf-col", "max-finite", "subnormal-a"):
            a, b = _specials(np.float64)[sl]
            wa, wb = make(a, sl + "/a"), make(b, sl + "/b")
            for label in ("dd", "fp128", "fp64"):
                yield f"{label}/{kind}@{kind}/special/{sl}", wa, wb, con[label]

    # 6. refusals: the error class is part of the behaviour
    a, b = _pair("errors/4x6x3", 4, 6, 3)
    yield "fp64/error/int64-operand", a.astype(np.int64), b, "fp64"
    yield "fp64/error/clongdouble-operand", a.astype(np.clongdouble), b, "fp64"
    yield "fp128/error/complex-operand", a.astype(np.complex128), b, "fp128"
    yield "fp64/error/float16-operand", a.astype(np.float16), b, "fp64"
    yield "fp32/error/f64-operands", a, b, "fp32"
    yield "fp32/error/f32@f64-operands", _cast(a, np.float32), b, "fp32"
    yield "fp64/error/inner-mismatch", a, b[:5], "fp64"
    yield "fp64/error/batch-mismatch", np.stack([a, a]), np.stack([b, b, b]), "fp64"
    yield "fp64/error/0d-operand", np.array(2.0), b, "fp64"
    yield "fp64/error/numpy-scalar-operand", np.float64(2.0), b, "fp64"
    yield "fp64/error/masked-operand", np.ma.masked_array(a, mask=a > 0.3), b, "fp64"
    yield "fp64/list-operand", a.tolist(), b, "fp64"
    yield "fp64/error/unknown-contract", a, b, "no-such-contract"
    yield "fp64+moduli4/error/too-few-moduli", a, b, ozgemm.load_contract("fp64").with_(moduli=4)
    yield "fp64+raise/error/nan", *_specials(np.float64)["nan-a"], con["fp64+raise"]
    yield "fp64-ozaki+slices2/error/too-few-slices", a, b, ozgemm.load_contract("fp64-ozaki").with_(slices=2)

    # 7. complex operands (three-product form; real/complex mixes as numpy promotes)
    x, y = _pair("complex/re", 9, 20, 7, 2.0)
    u, v = _pair("complex/im", 9, 20, 7, 2.0)
    za, zb = x + 1j * u, y + 1j * v
    for label in ("fp64", "fp64-fast", "fp64-ozaki", "dd"):
        yield f"{label}/complex128", za, zb, label
    yield "fp64/complex128@float64", za, y, "fp64"
    yield "fp64/float64@complex128", x, zb, "fp64"
    for label in ("fp32", "fp32-ozaki"):
        yield f"{label}/complex64", za.astype(np.complex64), zb.astype(np.complex64), label
    zs = za.copy()
    zs[2, 3] = complex(np.inf, 1.0)
    yield "fp64/complex128/special/inf-row", zs, zb, "fp64"


# --------------------------------------------------------------------------------------------
# digests
# --------------------------------------------------------------------------------------------

def _sha(parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, str):
            p = p.encode()
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    return h.hexdigest()


def _array_parts(tag, x):
    x = np.asarray(x)
    if "QuadPrec" in type(x.dtype).__name__:
        words = ozgemm.quad_to_bits(x.reshape(-1))  # uint64 (..., 2): [low, high]
        return [tag, "binary128", repr(x.shape), np.ascontiguousarray(words, dtype="<u8").tobytes()]
    return [tag, x.dtype.str, repr(x.shape), np.ascontiguousarray(x).tobytes()]


def result_parts(res) -> list:
    """The bytes of a result: float arrays/scalars, ozgemm.DD (hi, lo) or binary128 arrays."""
    if isinstance(res, ozgemm.DD):
        return ["DD"] + _array_parts("hi", res.hi) + _array_parts("lo", res.lo)
    if isinstance(res, (np.ndarray, np.generic)) or "QuadPrec" in type(res).__name__:
        return ["array"] + _array_parts("c", res)
    raise TypeError(f"unexpected result type {type(res).__name__}")


#: ``plan.info()`` keys that are numbers (or names) defined by the method; the free-text
#: ``widened`` report, the ``promise`` formula text and the derived ``log2_M`` are left out
INFO_KEYS = ("method", "format", "bits", "bound_kind", "shape", "beta", "n_moduli", "int8_gemms", "kblock",
             "exact_inputs", "slices", "slice_bits", "schedule", "products", "diagonal_gemm_calls",
             "truncation_norm")


def _canon(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v).hex()
    if isinstance(v, (list, tuple)):
        return [_canon(x) for x in v]
    return v if v is None else str(v)


def plan_description(p) -> dict:
    """A canonical, JSON-able description of one plan."""
    info = p.info()
    d = {key: _canon(info.get(key)) for key in INFO_KEYS}
    d["beta"] = _canon(p.beta)
    d["moduli"] = [int(q) for q in p.moduli]
    for name in ("s", "t"):
        x = getattr(p, name, None)
        if x is None:
            d[name] = None
        else:
            x = np.asarray(x)
            d[name] = [x.dtype.str, list(x.shape), hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()]
    return d


def digest(case) -> dict:
    """``{"result": sha256, "plan": sha256}`` of one case, or ``{"error": class name}``."""
    _, a, b, contract = case
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            res, plans = ozgemm.matmul(a, b, contract=contract, return_plan=True)
        except Exception as exc:  # noqa: BLE001 - the class of a refusal is recorded
            return {"error": _public_class(exc)}
        desc = json.dumps([plan_description(p) for p in plans], sort_keys=True, separators=(",", ":"))
        return {"result": _sha(result_parts(res)), "plan": hashlib.sha256(desc.encode()).hexdigest()}


def compute_all() -> dict:
    """name -> digest for every case (raises on a duplicate name)."""
    out = {}
    for case in cases():
        if case[0] in out:
            raise ValueError(f"duplicate case name {case[0]!r}")
        out[case[0]] = digest(case)
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv != ["--record"]:
        print("usage: python tests/corpus.py --record   (writes tests/data/corpus_hashes.json)")
        return 2
    d = compute_all()
    HASHES.parent.mkdir(parents=True, exist_ok=True)
    HASHES.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
    errors = sum("error" in v for v in d.values())
    print(f"recorded {len(d)} cases ({errors} refusals) to {HASHES}")
    return 0


def _public_class(exc) -> str:
    """The name of the exception's most specific public class (ozgemm's exported errors or a
    builtin): internal subclasses of ``ozgemm.ContractError`` record as ``ContractError``."""
    import builtins

    for cls in type(exc).__mro__:
        if getattr(ozgemm, cls.__name__, None) is cls or getattr(builtins, cls.__name__, None) is cls:
            return cls.__name__
    return type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())

"""``ozgemm.matmul`` and ``ozgemm.plan``: numpy.matmul semantics with a precision contract."""
from __future__ import annotations

import itertools
import math

import numpy as np

from ._xp import array_namespace, as_float64, ignore_fp_errors, is_cupy_array
from .kernels import get_backend
from .methods import execute, execute_complex, plan_product
from .contracts.contract import Contract, as_contract
from .crt.moduli import splits
from .contracts.formats import DD, Binary128, quad_from_bits
from .precision.operands import arrays, as_wide, ieee_classes, is_wide, operand_rows, transpose
from .precision.planner import (Plan, RefineBound, WidthShortfall, complex_bound_form, confirm_plan, forget_guess,
                                guess_key, speculation_guess)
from .precision.rounding import empty_result
from .precision.specials import NonFiniteInputs, patch_nonfinite, split_nonfinite

__all__ = ["matmul", "gemm", "plan", "default_contract", "prepare", "Prepared", "dot", "vdot", "inner", "tensordot",
           "einsum"]


def _stacked(a2, b2, batch, contract, backend, xp):
    """A stack as one computation (:mod:`ozgemm.stacks`) in the result storage of
    :func:`matmul`'s loop, or None where it computes product by product."""
    from .stacks import stacked_product

    m, k = a2.shape[-2:]
    n = b2.shape[-1]
    P = int(np.prod(batch, dtype=np.int64))
    shared = b2.ndim == 2 or all(d == 1 for d in b2.shape[:-2])  # one B for every product
    a_shared = not shared and (a2.ndim == 2 or all(d == 1 for d in a2.shape[:-2]))  # one A
    A = a2.reshape(1, m, k) if a_shared else xp.broadcast_to(a2, tuple(batch) + (m, k)).reshape(P, m, k)
    B = b2.reshape(1, k, n) if shared else xp.broadcast_to(b2, tuple(batch) + (k, n)).reshape(P, k, n)
    if contract.fmt.name != "binary32":
        A, B = as_float64(A), as_float64(B)
    out = stacked_product(A, B, contract, backend, b_shared=shared, a_shared=a_shared)
    if out is None:
        return None
    if contract.fmt.name == "dd":
        return out.reshape((2,) + tuple(batch) + (m, n))
    if contract.fmt.name == "binary128":
        return out.reshape(tuple(batch) + (m, n, 2))
    return out.reshape(tuple(batch) + (m, n))


def _check_operand(x, name):
    """The operand as an array ozgemm computes on: numpy and cupy arrays as they are (an
    ndarray subclass as its base class; the result is wrapped back, :func:`_wrap`), other
    array-likes (lists, tuples, scalars) coerced as numpy coerces them."""
    x = as_wide(x)  # numpy binary128 (numpy-quaddtype) arrays travel as their encodings
    if is_wide(x):
        if x.ndim == 0:
            raise ValueError(f"matmul: {name} is 0-dimensional; it needs at least 1 dimension")
        return x
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{name} is a masked array; masks are not supported: pass x.filled(...) or x.data")
    if not (isinstance(x, np.ndarray) or is_cupy_array(x)):
        x = _foreign_array(x, name)
    if x.ndim == 0:
        raise ValueError(f"matmul: {name} is 0-dimensional; it needs at least 1 dimension")
    if isinstance(x, np.ndarray) and type(x) is not np.ndarray:  # np.matrix and other subclasses
        x = np.asarray(x)
    if x.dtype.kind in "fc" and not x.dtype.isnative:  # big-endian data: same values, native order
        x = x.astype(x.dtype.newbyteorder("="))
    return x


_KDLCUDA = (2, 13)  # DLPack device types of CUDA memory (kDLCUDA, kDLCUDAManaged)


def _foreign_array(x, name):
    """An operand from another library: CUDA memory (``__cuda_array_interface__`` or a DLPack
    CUDA device) as a cupy array, without a copy; anything else (PyTorch and JAX CPU arrays,
    lists, tuples, scalars) as numpy reads it (``__array__``, the buffer protocol, DLPack)."""
    if hasattr(x, "__cuda_array_interface__") or (
            hasattr(x, "__dlpack_device__") and x.__dlpack_device__()[0] in _KDLCUDA):
        try:
            import cupy
        except ImportError:
            raise TypeError(f"{name} lives in GPU memory; install CuPy to compute on it: "
                            "pip install 'ozgemm[cuda13]' or 'ozgemm[cuda12]'") from None
        return cupy.asarray(x) if hasattr(x, "__cuda_array_interface__") else cupy.from_dlpack(x)
    try:
        return np.asarray(x)
    except Exception as exc:  # ragged lists, tensors numpy cannot read (bfloat16, requiring grad), ...
        try:
            if hasattr(x, "__dlpack__"):
                return np.from_dlpack(x)
        except Exception:
            pass
        hint = " (a tensor that requires grad: pass x.detach())" if getattr(x, "requires_grad", False) else ""
        raise TypeError(f"{name} ({type(x).__name__}) cannot be read as an array{hint}: {exc}") from None


def _caller_type(res, a, b):
    """A result in the caller's array type where an operand came from PyTorch or JAX (through
    DLPack: no copy where the library shares the memory); numpy and cupy results as they are."""
    if not (isinstance(res, (np.ndarray, np.generic)) or is_cupy_array(res)) or "Quad" in str(res.dtype):
        return res  # DD, binary128: ozgemm's own types
    for x in (a, b):
        lib = _library(x)
        if lib == "torch":
            import torch

            r = np.asarray(res) if isinstance(res, np.generic) else res
            return torch.from_dlpack(r if r.flags.c_contiguous else r.copy())
        if lib == "jax":
            import jax.numpy as jnp

            return jnp.asarray(res)
    return res


def _out_shape_ok(out_shape, final, nbatch) -> bool:
    """numpy's rule for a gufunc output: the core dimensions of the result last, before them
    a loop shape that the operands' batch shape broadcasts to."""
    core = final[nbatch:]
    if len(out_shape) < len(core) or out_shape[len(out_shape) - len(core):] != core:
        return False
    loop = out_shape[:len(out_shape) - len(core)]
    try:
        return np.broadcast_shapes(final[:nbatch], loop) == loop
    except ValueError:
        return False


def _library(x):
    """"torch" or "jax" for an operand of those libraries (its result comes back in their
    type), else None."""
    mod = type(x).__module__.split(".")[0]
    return "torch" if mod == "torch" else "jax" if mod in ("jax", "jaxlib") else None


def _foreign(a, b) -> bool:
    return any(_library(x) is not None for x in (a, b))


def default_contract(a, b) -> str:
    """The contract a product takes when none is given: the operands' own precision, as numpy's
    result dtype would be — binary128 operands "fp128", else double-double "dd", else two
    float32/complex64 operands "fp32", else "fp64"."""
    kinds = [x for x in (as_wide(a), as_wide(b))]
    if any(isinstance(x, Binary128) for x in kinds):
        return "fp128"
    if any(isinstance(x, DD) for x in kinds):
        return "dd"
    if all(getattr(x, "dtype", None) in (np.float32, np.complex64) for x in kinds):
        return "fp32"
    return "fp64"


def _wrap(res, a, b):
    """numpy's wrapping of an ndarray result: the type of the input subclass with the highest
    ``__array_priority__`` (``a`` first on ties), like ``numpy.matmul``."""
    if not isinstance(res, np.ndarray) or type(res) is not np.ndarray:
        return res
    subs = [x for x in (a, b) if isinstance(x, np.ndarray) and type(x) is not np.ndarray
            and not isinstance(x, np.ma.MaskedArray)]
    if not subs:
        return res
    best = max(subs, key=lambda x: getattr(x, "__array_priority__", 0.0))
    return res.view(type(best))


_WIDE_OK = ("binary64", "dd", "binary128")  # output formats that take dd/binary128 operands


def _check_dtype(x, name, contract: Contract):
    fmt = contract.fmt
    if is_wide(x):
        kind = "dd" if isinstance(x, DD) else "binary128"
        if kind == "dd" and x.hi.dtype.kind == "c":
            raise TypeError(f"{name} is a complex DD; matmul takes real DD operands (multiply the parts: "
                            "x.hi and x.lo are complex arrays)")
        if fmt.name not in _WIDE_OK:
            raise TypeError(f"{name} is a {kind} operand; contract {contract.name!r} ({fmt.name}) takes float32 "
                            "operands only: use contract 'fp64', 'dd' or 'fp128'")
        return
    dt = x.dtype
    if dt.kind == "c":
        if fmt.name not in ("binary64", "binary32", "dd"):
            raise TypeError(f"{name} is complex ({dt}); contract {contract.name!r} ({fmt.name}) has no complex "
                            "result type (numpy has no complex binary128): complex products take the binary64, "
                            "binary32 and dd contracts ('fp64', 'fp64-fast', 'fp64-ozaki', 'fp32', 'fp32-ozaki', "
                            "'dd')")
        if fmt.name == "binary32" and dt != np.complex64:
            raise TypeError(f"{name} has dtype {dt}; contract {contract.name!r} (binary32) takes complex64 "
                            "operands only: cast with .astype(numpy.complex64) or use contract='fp64'")
        if dt not in (np.complex64, np.complex128):
            raise TypeError(f"{name} has dtype {dt}; complex operands are complex64 or complex128")
        return
    if dt.kind != "f":
        kind = {"c": "complex", "i": "integer", "u": "unsigned integer", "b": "boolean", "O": "object"}.get(dt.kind, str(dt))
        takes = ("float32 operands" if fmt.name == "binary32" else
                 "float32 or float64, ozgemm.DD or binary128 (numpy-quaddtype) operands")
        raise TypeError(f"{name} has dtype {dt} ({kind}); contract {contract.name!r} takes {takes}")
    if fmt.name in _WIDE_OK and dt not in (np.float32, np.float64):
        raise TypeError(f"{name} has dtype {dt}; contract {contract.name!r} takes float32 or float64"
                        + ("" if fmt.name == "binary32" else ", ozgemm.DD or binary128 (numpy-quaddtype) operands"))
    if fmt.name == "binary32" and dt != np.float32:
        raise TypeError(f"{name} has dtype {dt}; contract {contract.name!r} (binary32) takes float32 "
                        "operands only: cast with .astype(numpy.float32) or use contract='fp64'")


def _is_complex(x) -> bool:
    return not is_wide(x) and x.dtype.kind == "c"


def _prepare(a, b, contract):
    a = _check_operand(a, "a")
    b = _check_operand(b, "b")
    xp = array_namespace(*arrays(a), *arrays(b))
    contract = as_contract(default_contract(a, b) if contract is None else contract)
    _check_dtype(a, "a", contract)
    _check_dtype(b, "b", contract)
    if _is_complex(a) or _is_complex(b):
        if is_wide(a) or is_wide(b):
            raise TypeError("a complex product takes float or complex operands; DD and binary128 operands are real")
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(f"matmul: inner dimensions differ: a has shape {a.shape} (k={a2.shape[-1]}), "
                         f"b has shape {b.shape} (k={b2.shape[-2]})")
    try:
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise ValueError(f"matmul: batch dimensions {a.shape[:-2]} and {b.shape[:-2]} do not broadcast") from None
    m, n = a2.shape[-2], b2.shape[-1]
    full = batch + (m, n)
    final = full
    if a.ndim == 1:
        final = final[:-2] + final[-1:]
    if b.ndim == 1:
        final = final[:-1]
    return xp, contract, a, b, a2, b2, batch, full, final


class Prepared:
    """An operand prepared for several products (:func:`prepare`): its row (``side="left"``)
    or column (``side="right"``) statistics and, per plan, its scaled residues, computed once
    and reused by every :func:`matmul` it enters — bit-identical to the unprepared product
    (the same exact integers, computed once). It owns a copy of the operand, so later
    changes to the caller's array do not reach it."""

    def __init__(self, array, side, contract, backend):
        self.array, self.side, self.contract, self.backend = array, side, contract, backend
        self._stats = {}
        self._residues = {}  # (backend, moduli count, shift bytes, rows) -> residues

    @property
    def shape(self):
        return self.array.shape

    @property
    def dtype(self):
        return self.array.dtype

    @property
    def ndim(self):
        return self.array.ndim

    def __repr__(self):
        name = None if self.contract is None else self.contract.name
        return f"Prepared({self.side}, shape={tuple(self.shape)}, dtype={self.dtype}, contract={name!r})"

    def stats(self, rows, backend):
        key = (backend.name, str(rows.dtype))
        if key not in self._stats:
            self._stats[key] = backend.row_stats(rows)
        return self._stats[key]

    def residues(self, compute, shift, n_moduli, i0, i1, backend):
        from ._xp import to_numpy

        key = (backend.name, n_moduli, to_numpy(shift).tobytes(), i0, i1)
        r = self._residues.get(key)
        if r is None:
            r = compute()
            if len(self._residues) >= 4:  # keep the latest few plans' residues
                self._residues.pop(next(iter(self._residues)))
            self._residues[key] = r
        return r


class _Reuse:
    """The residue store the CRT pipeline consults for the prepared side(s) of one product."""

    def __init__(self, left, right, backend):
        self.sides = {"a": left, "b": right}
        self.backend = backend

    def residues(self, side, compute, shift, n_moduli, i0, i1):
        prep = self.sides[side]
        if prep is None:
            return compute()
        return prep.residues(compute, shift, n_moduli, i0, i1, self.backend)


def prepare(x, contract=None, *, side="left", engine=None) -> Prepared:
    """Prepare an operand for several products: ``matmul(P, b)`` (``side="left"``) or
    ``matmul(a, P)`` (``side="right"``) reuse its statistics and scaled residues.

    Parameters
    ----------
    x : 2-D float32/float64 array (numpy or cupy; array-likes as :func:`matmul` reads them),
        finite
    contract : the contract of the products it will enter (default: as :func:`matmul`
        chooses from the operands); a product under another contract raises ValueError
    side : "left" (x is A) or "right" (x is B)
    engine : the backend (default: the one of x's library)

    Returns
    -------
    Prepared: accepted by :func:`matmul` in place of x. Results are bit-identical to those
    without it; the promise is the contract's. (GEMMul8's reuse of a scaled operand, made
    safe: the prepared object owns its copy and the residues are reused only for the same
    shifts and moduli.)

    Raises
    ------
    TypeError: not a float32/float64 array (DD and binary128 operands are not prepared in this
    release); ValueError: not 2-D, NaN/Inf entries, an unknown side.
    """
    if side not in ("left", "right"):
        raise ValueError(f"prepare: side must be 'left' or 'right', got {side!r}")
    x = _check_operand(x, "x")
    if is_wide(x):
        raise TypeError("prepare takes float32/float64 operands in this release (not DD or binary128)")
    if x.ndim != 2:
        raise ValueError(f"prepare takes a 2-D operand, got shape {tuple(x.shape)}")
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"prepare: x has dtype {x.dtype}; float32 or float64 is needed")
    xp = array_namespace(x)
    if not bool(xp.isfinite(x).all()):
        raise ValueError("prepare: x holds NaN or Inf; products with non-finite operands are not prepared")
    con = None if contract is None else as_contract(contract)
    backend = get_backend(engine, xp)
    return Prepared(x.copy(), side, con, backend)


def _unprepare(a, b, contract):
    """(a, b, left, right, contract) with prepared operands replaced by their arrays."""
    left = a if isinstance(a, Prepared) else None
    right = b if isinstance(b, Prepared) else None
    if isinstance(a, Prepared) and a.side != "left" or isinstance(b, Prepared) and b.side != "right":
        raise ValueError("matmul: a prepared operand is used on the other side than it was prepared for")
    for pr in (left, right):
        if pr is not None and pr.contract is not None:
            want = as_contract(contract) if contract is not None else pr.contract
            if want != pr.contract:
                raise ValueError(f"matmul: the operand was prepared for contract {pr.contract.name!r}, "
                                 f"the product asks for {want.name!r}")
            contract = pr.contract
    return (left.array if left else a), (right.array if right else b), left, right, contract


def _plan_2d(a, b, contract, backend, force=None, speculate=False, reuse=None):
    """Cast to the contract's working dtype, set non-finite rows/columns aside, plan.

    ``speculate``: on the NaN/Inf-flag path, a speculative plan (planner.make_plan) may come
    back (``plan.pending`` set); the caller runs :func:`~ozgemm.precision.planner.confirm_plan`.

    Returns (a, b, a0, b0, bad_rows, bad_cols, plan) with a0/b0 the finite operands planned
    and a/b float arrays of the operands' IEEE classes for the specials pass (the operands
    themselves for float32/float64). dd/binary128 operands become (C, r, k) components
    (precision/operands.py)."""
    xp = backend.xp
    if not (is_wide(a) or is_wide(b)):
        if contract.fmt.name != "binary32":
            a, b = as_float64(a), as_float64(b)
        if backend.flags_nonfinite and force is None and contract.method == "crt":
            # the NaN/Inf check rides on the backend's statistics and its flag on the planner's
            # one host read; only inputs that do hold NaN/Inf are planned again, on their
            # finite rows/columns
            try:
                return a, b, a, b, None, None, plan_product(contract, a, b, backend, speculate=speculate,
                                                            nonfinite_flag=xp.zeros((1,), dtype=xp.int32),
                                                            known=_known(reuse, a, b, backend))
            except NonFiniteInputs:
                pass
        a0, b0, bad_r, bad_c = split_nonfinite(a, b, contract, backend)
        return a, b, a0, b0, bad_r, bad_c, plan_product(contract, a0, b0, backend, force=force,
                                                        known=_known(reuse, a0, b0, backend))
    ra = operand_rows(a if is_wide(a) else as_float64(a), xp)
    rb = operand_rows(transpose(b) if is_wide(b) else as_float64(b).T, xp)
    pa, pb = ra.proxy, rb.proxy.T
    _, _, bad_r, bad_c = split_nonfinite(pa, pb, contract, backend)
    a0, b0 = ra.comps, (rb.comps.T if rb.comps.ndim == 2 else rb.comps.transpose(0, 2, 1))
    if bad_r is not None:  # zero the non-finite rows/columns for the integer path
        a0 = xp.where(bad_r[:, None], 0.0, a0)
        b0 = xp.where(bad_c[None, :], 0.0, b0)
    src = tuple(None if r.source is None else r.source.without_rows(bad) for r, bad in ((ra, bad_r), (rb, bad_c)))
    p = plan_product(contract, a0, b0, backend, force=force, pa=ra.pre, pb=rb.pre, src=src)
    return pa, pb, a0, b0, bad_r, bad_c, p


def _known(reuse, a, b, backend):
    """The prepared operands' statistics (a prepared operand is finite: with NaN/Inf in the
    other operand only the other one's rows/columns are set aside, its own values are those
    it was prepared with)."""
    if reuse is None:
        return (None, None)
    left, right = reuse.sides["a"], reuse.sides["b"]
    sa = left.stats(a, backend) if left is not None else None
    sb = right.stats(b.T, backend) if right is not None else None
    return sa, sb


class _SpeculationFailed(Exception):
    """A speculative product failed before its plan was confirmed (its guess is forgotten)."""


def _guess_holds(plan) -> bool:
    """Whether the planner would still speculate on ``plan``'s moduli count (a recorded
    product replays only then)."""
    return speculation_guess(plan.contract, plan.key) == plan.n_moduli


def _product_2d(a, b, contract, backend, speculate=True, reuse=None, record=False):
    """One 2-D product; returns (C, Plan).

    With ``speculate`` the plan may be speculative (its moduli count guessed from the last plan
    of the same shapes): the product is queued first and the plan confirmed afterwards, so the
    GPU does not wait for the host at the planner's read; a wrong guess runs the product again
    with the confirmed plan, and inputs with NaN/Inf take the non-speculative path. With
    ``record`` (the plan is not handed to the caller) the backend may replay the speculative
    product from a recording (:meth:`~ozgemm.kernels.base.Backend.recorded`)."""
    m, k = a.shape
    n = b.shape[1]
    if _is_complex(a) or _is_complex(b):
        return _complex_product_2d(a, b, contract, backend)
    a_in, b_in = a, b
    xp = backend.xp
    fmt = contract.fmt

    def run(x, y):
        x, y, x0, y0, br, bc, q = _plan_2d(x, y, contract, backend, speculate=speculate, reuse=reuse)
        if k == 0 or m == 0 or n == 0:
            c = empty_result(m, n, fmt, xp)
            c[...] = 0
            return q, c, (x, y, x0, y0, br, bc)
        try:
            return q, execute(q, backend, x0, y0, reuse=reuse), (x, y, x0, y0, br, bc)
        except Exception:
            if q.pending is None:
                raise
            # e.g. out of memory with a guess of more moduli than needed: forget the guess
            forget_guess(q)
            raise _SpeculationFailed() from None

    try:
        if record and speculate and reuse is None and not (is_wide(a) or is_wide(b)):
            p, c, (a, b, a0, b0, bad_r, bad_c) = backend.recorded(guess_key(contract, a, b), run, a, b, _guess_holds)
        else:
            p, c, (a, b, a0, b0, bad_r, bad_c) = run(a, b)
    except _SpeculationFailed:  # plan as without a guess
        return _product_2d(a_in, b_in, contract, backend, speculate=False, reuse=reuse)
    if p.pending is not None:
        try:
            ok, p = confirm_plan(p, backend)
        except (NonFiniteInputs, WidthShortfall, RefineBound):  # NaN/Inf, bands, a refined bound
            return _product_2d(a_in, b_in, contract, backend, speculate=False, reuse=reuse)
        if not ok:
            c = execute(p, backend, a0, b0, reuse=reuse)  # the guess was wrong: the confirmed plan
    return _patch_specials(c, fmt, a, b, bad_r, bad_c, xp), p


def _patch_specials(c, fmt, a, b, bad_r, bad_c, xp):
    """The result storage ``c`` of ``a @ b`` with the entries fed by non-finite rows/columns
    set to their IEEE classes (float results directly; wide results through the class pass on
    float64, then encoded)."""
    if fmt.name in ("binary32", "binary64"):
        return patch_nonfinite(c, a, b, bad_r, bad_c, xp)
    if bad_r is None:
        return c
    cls = patch_nonfinite(xp.zeros((a.shape[0], b.shape[1])), a, b, bad_r, bad_c, xp)
    hit = bad_r[:, None] | bad_c[None, :]
    if fmt.name == "dd":
        c[0] = xp.where(hit, cls, c[0])
        c[1] = xp.where(hit, xp.where(xp.isnan(cls), xp.nan, 0.0), c[1])
    else:
        u = xp.uint64
        hi = xp.where(xp.isnan(cls), u(0x7FFF8) << u(44), u(0x7FFF) << u(48))
        hi = hi | ((cls < 0).astype(u) << u(63))
        c[..., 1] = xp.where(hit, hi, c[..., 1])
        c[..., 0] = xp.where(hit, u(0), c[..., 0])
    return c


def _complex_plan(a, b, contract, backend):
    """The plan of a complex product, made for its real embedding (the plan's report says so);
    returns (A, B, A0, B0, bad_rows, bad_cols, plan): A0, B0 the finite operands to run it on
    (:func:`~ozgemm.methods.execute_complex`), A, B the embedding for the specials pass (where
    bad_rows is not None).

    CRT contracts plan from A's interleaved rows and B's top block row
    (:func:`~ozgemm.precision.operands.complex_operands`; the planner's ``embedding``: the
    half-form bound, B's statistics once per column pair, the rest of the embedding never
    built); NaN/Inf rows and columns are found in the whole embedding and set aside there and in
    those operands; beyond one plan's width, exponent bands of the whole embedding. Other
    methods plan the whole embedding."""
    m, k = a.shape
    n = b.shape[1]
    xp = backend.xp

    def cast(x, y):
        return (x, y) if contract.fmt.name == "binary32" else (as_float64(x), as_float64(y))

    if contract.method == "crt":
        ai, bt = cast(*backend.complex_operands(a, b))
        form = complex_bound_form(a, b)
        built = []

        def whole():  # (built once)
            if not built:
                built.append(cast(*backend.complex_embedding(a, b)))
            return built[0]

        if backend.flags_nonfinite:
            try:
                p = plan_product(contract, ai, bt, backend, nonfinite_flag=xp.zeros((1,), dtype=xp.int32),
                                 embedding=form, whole=whole)
                a0, b0 = whole() if p.method == "bands" else (ai, bt)
                return a0, b0, a0, b0, None, None, _complex_note(p, m, k, n)
            except NonFiniteInputs:
                pass
        ae, be = whole()
        a0, b0, bad_r, bad_c = split_nonfinite(ae, be, contract, backend)
        if bad_r is not None:  # the same rows and columns zeroed in the operands planned
            ai = xp.where(bad_r[:, None], 0, ai)
            bt = xp.where(bad_c[None, :], 0, bt)
        p = plan_product(contract, ai, bt, backend, embedding=form, whole=lambda: (a0, b0))
        if p.method != "bands":
            a0, b0 = ai, bt
        return ae, be, a0, b0, bad_r, bad_c, _complex_note(p, m, k, n)
    ae, be = backend.complex_embedding(a, b)
    ae, be, a0, b0, bad_r, bad_c, p = _plan_2d(ae, be, contract, backend)
    return ae, be, a0, b0, bad_r, bad_c, _complex_note(p, m, k, n)


def _complex_note(p, m, k, n):
    """``p`` with its report naming the complex product it was made for."""
    return p.evolve(widened=f"{p.widened}; complex {m}x{k}x{n}: planned as its real embedding "
                            f"{m}x{2 * k}x{2 * n}" + (f", run as {2 if splits(p.moduli) else 3} INT8 GEMMs of "
                                                      f"{m}x{k}x{n} per modulus" if p.method == "crt" else ""))


def _complex_product_2d(a, b, contract, backend):
    """One 2-D product with a complex operand; returns (C, Plan).

    Planned as the real embedding (:func:`~ozgemm.precision.operands.complex_embedding`,
    non-finite rows/columns set aside there, so NaN/Inf follow numpy's complex arithmetic term by
    term, docs/semantics.md) and
    computed by :func:`~ozgemm.methods.execute_complex` (CRT: the split or three-product form)."""
    xp = backend.xp
    fmt = contract.fmt
    m, n = a.shape[0], b.shape[1]
    k = a.shape[1]
    try:
        ae, be, a0, b0, bad_r, bad_c, p = _complex_plan(a, b, contract, backend)
        if k == 0 or m == 0 or n == 0:
            c = empty_result(m, 2 * n, fmt, xp)
            c[...] = 0
        elif p.method == "crt" and bad_r is None and fmt.name in ("binary64", "binary32"):
            # the parts rounded straight into the complex result's interleaved real and imaginary
            # words (no [Re | Im] array, no copy into the complex result)
            out = xp.empty((m, n), dtype=xp.complex64 if fmt.name == "binary32" else xp.complex128)
            parts = out.view(fmt.dtype).reshape(m, n, 2)
            execute_complex(p, backend, a0, b0, out=(parts[:, :, 0], parts[:, :, 1]))
            return out, p
        else:
            c = execute_complex(p, backend, a0, b0)
    except MemoryError as exc:
        raise MemoryError(f"complex {m}x{k}x{n} product (planned as its real embedding {m}x{2 * k}x{2 * n}): "
                          f"{exc}") from None
    c = _patch_specials(c, fmt, ae, be, bad_r, bad_c, xp)
    if fmt.name == "dd":  # (2, m, n) complex128: hi and lo, each part RN / RN of the rest
        out = xp.empty((2, m, n), dtype=xp.complex128)
        out.real = c[:, :, :n]
        out.imag = c[:, :, n:]
        return out, p
    out = xp.empty((m, n), dtype=xp.complex64 if fmt.name == "binary32" else xp.complex128)
    out.real = c[:, :n]
    out.imag = c[:, n:]
    return out, p


def matmul(a, b, out=None, *, contract=None, engine=None, return_plan=False):
    """Matrix product with a precision contract, computed from exact INT8 products.

    Semantics follow ``numpy.matmul``: 2-D products, stacked batches with broadcasting
    over leading dimensions, 1-D operands promoted and the added axis removed afterwards.

    Parameters
    ----------
    a : array_like, shape (..., m, k) or (k,)
        numpy or cupy float32/float64, :class:`~ozgemm.DD` (double-double), or binary128
        (a numpy-quaddtype array; :class:`~ozgemm.Binary128` on the GPU); lists and other
        array-likes are read as numpy reads them; PyTorch and JAX arrays are accepted (CPU
        memory through numpy's protocols, CUDA memory as cupy arrays through
        ``__cuda_array_interface__`` / DLPack) and the result comes back in their type.
    b : array_like, shape (..., k, n) or (k,); the same array library as ``a``
    out : array, optional (positional or keyword)
        float32/float64 and complex64/complex128 results only: written and returned. Its shape is the result's (for
        1-D operands also with the removed axes kept, as numpy allows); its dtype any the
        result casts to under numpy's ``same_kind`` rule; it may overlap ``a`` or ``b`` (the
        product is computed first, then copied).
    contract : str, path or Contract, optional
        A shipped contract — ``"fp64"``, ``"fp64-fast"``, ``"fp64-dgemm"``, ``"fp32"``,
        ``"fp32-fast"``, ``"fp32-sgemm"``, ``"dd"``, ``"fp128"``, ``"fp64-ozaki"``,
        ``"fp32-ozaki"`` (``ozgemm.named_contracts()``) — a TOML file or a
        :class:`~ozgemm.Contract`; a name or file may be followed by ``:key=value,...``
        overrides (``"fp64-fast:moduli=16"``, :func:`~ozgemm.load_contract`). Default: the operands' precision (:func:`default_contract`:
        two float32 operands ``"fp32"``, a DD operand ``"dd"``, a binary128 operand
        ``"fp128"``, else ``"fp64"``), so the result dtype is numpy's.
    engine : str or Backend, optional
        ``"cpu"`` (default for numpy), ``"cpu-int64"``, ``"cuda"`` (default for cupy), or a
        :class:`~ozgemm.kernels.base.Backend` object.
    return_plan : bool
        Also return the list of plans (one per 2-D product; ``plan.info()`` summarises each).

    Returns
    -------
    C, shape (..., m, n) (numpy.matmul's; an ndarray subclass operand's type, as numpy wraps): binary64 contracts (``fp64``, ``fp64-fast``,
    ``fp64-ozaki``) give float64; ``fp32``/``fp32-ozaki`` float32; ``dd`` an
    :class:`~ozgemm.DD` of float64 arrays (hi = RN(x), lo = RN(x - hi)); ``fp128`` a numpy
    binary128 array (a :class:`~ozgemm.Binary128` on the GPU). Complex operands (complex64,
    complex128; binary64, binary32 and dd contracts): complex128 / complex64 as numpy, a DD of
    complex128 arrays under ``dd``, each real and imaginary part keeping the promise below
    against the magnitudes of the real products forming it (README, "Complex products"). numpy gives a scalar for
    1-D @ 1-D. With ``return_plan``: ``(C, plans)``.

    Error bound
    -----------
    For finite inputs, every entry (u_f = 2**-p of the output format; ``bits`` the contract's):
    componentwise contracts (fp64, fp32, dd, fp128 and the Ozaki-I ones):
    ``|C - AB| <= u_f |AB| + 2**-(bits-1) (|A||B|)``; normwise (fp64-fast):
    ``|C - AB|_ij <= 2**-(bits-1) k max|A_i,:| max|B_:,j|``. A result in the subnormal range
    may in addition be off by half the smallest subnormal; near the overflow threshold an
    entry may be +-inf where |AB| + bound reaches it; exact results beyond the range are
    +-inf. Inputs holding NaN/Inf give numpy's NaN/Inf classes in the affected rows and
    columns (or raise, ``specials = "raise"``). The bound is proven before any GEMM runs
    (:mod:`ozgemm.precision.planner`); where it cannot be, ContractError is raised.

    Method: Ozaki scheme II (Ozaki, Uchino, Imamura 2025, Sec. 3): scaling to integers,
    residues modulo pairwise-coprime moduli <= 256, one exact INT8 GEMM per modulus, an
    exact Chinese-remainder reconstruction (Garner's mixed radix on the GPU, the direct CRT
    formula through one exact float64 GEMM on the CPU) and one correctly rounded
    conversion; or Ozaki scheme I (Ozaki, Ogita, Oishi, Rump 2012) with exact accumulation
    of the slice products (``method = "ozaki"``).

    Raises
    ------
    TypeError
        Unsupported dtypes (integer, object, complex under ``fp128``, ...), mixed numpy/cupy operands, an
        operand kind the contract does not take, an ``out`` that is not an array or whose
        dtype the result cannot be cast to (``same_kind``).
    ValueError
        0-d operands (scalars), mismatched inner dimensions, non-broadcastable batches, an
        ``out`` of the wrong shape or read-only.
    ContractError
        The contract cannot be proven for these inputs (the message names the fix), or is
        malformed.
    MemoryError
        The product's workspace does not fit the backend's budget (the numbers are named).
    ImportError
        binary128 operands or results without numpy-quaddtype (``ozgemm[fp128]``).

    Examples
    --------
    >>> import numpy as np, ozgemm
    >>> a = np.array([[1.0, 2.0**-60], [3.0, 1.0]])
    >>> c = ozgemm.matmul(a, a)
    >>> bool(c[0, 1] == 2.0**-60 + 2.0**-60)     # a01 a11 + a00 a01, exact here
    True
    >>> c, plans = ozgemm.matmul(a, a, contract="fp64", return_plan=True)
    >>> plans[0].info()["n_moduli"] >= 1
    True
    """
    a, b, left, right, contract = _unprepare(a, b, contract)
    a_in, b_in = a, b
    xp, contract, a, b, a2, b2, batch, full, final = _prepare(a, b, contract)
    eng = get_backend(engine, xp)
    reuse = None
    if left is not None or right is not None:
        if batch:
            raise ValueError("matmul: prepared operands enter 2-D products (matrix or vector other operand, "
                             "no stacks)")
        if any(pr is not None and pr.backend is not eng for pr in (left, right)):
            raise ValueError("matmul: the operand was prepared for another engine")
        reuse = _Reuse(left, right, eng)
    fmt = contract.fmt
    dtype = fmt.dtype
    cplx = _is_complex(a) or _is_complex(b)
    if cplx:
        dtype = np.complex64 if fmt.name == "binary32" else np.complex128  # dd: complex hi and lo
        if reuse is not None:
            raise TypeError("matmul: prepared operands are real; complex products take arrays")
    if out is not None:
        if fmt.name in ("dd", "binary128"):
            raise ValueError(f"out= is not supported for {fmt.name} results (they are returned as "
                             f"{'ozgemm.DD' if fmt.name == 'dd' else 'binary128 arrays'})")
        if not (isinstance(out, np.ndarray) or is_cupy_array(out)):
            raise TypeError(f"out must be a numpy or cupy array, got {type(out).__name__}")
        if array_namespace(out) is not xp:
            raise TypeError("out must come from the same array library as the operands")
        if isinstance(out, np.ndarray) and not out.flags.writeable:
            raise ValueError("out is read-only")
        if not _out_shape_ok(tuple(out.shape), tuple(final), len(batch)):
            raise ValueError(f"out has shape {tuple(out.shape)}; the result has shape {tuple(final)} (numpy's rule: "
                             "the result's core dimensions last, after dimensions the batch broadcasts to)")
        if not np.can_cast(np.dtype(dtype), out.dtype, casting="same_kind"):
            raise TypeError(f"cannot cast the {np.dtype(dtype)} result to out's dtype {out.dtype} "
                            "(numpy's same_kind rule)")

    def result_array():
        if fmt.name == "dd":
            return xp.empty((2,) + tuple(full), dtype=xp.complex128 if cplx else xp.float64)
        if fmt.name == "binary128":
            return xp.empty(tuple(full) + (2,), dtype=xp.uint64)
        return xp.empty(full, dtype=dtype)

    res = None
    lead = (slice(None),) if fmt.name == "dd" else ()
    plans = []
    if batch and not return_plan and reuse is None and not (is_wide(a) or is_wide(b) or cplx):
        res = _stacked(a2, b2, batch, contract, eng, xp)
    for idx in (itertools.product(*[range(d) for d in batch]) if res is None else ()):
        ia = tuple(i if s != 1 else 0 for i, s in zip(idx[len(idx) - (a2.ndim - 2):], a2.shape[:-2]))
        ib = tuple(i if s != 1 else 0 for i, s in zip(idx[len(idx) - (b2.ndim - 2):], b2.shape[:-2]))
        c, p = _product_2d(a2[ia], b2[ib], contract, eng, reuse=reuse, record=not return_plan)
        if not batch and fmt.name in ("binary32", "binary64") and c.dtype == dtype and c.flags.c_contiguous:
            res = c  # one 2-D product: keep its result (no copy of m x n values)
        else:
            if res is None:
                res = result_array()
            res[lead + idx] = c
        plans.append(p)
    if res is None:  # an empty batch
        res = result_array()
    if fmt.name == "dd":
        res = res.reshape((2,) + tuple(final))
        res = DD(res[0, ...], res[1, ...])  # arrays also for 1-D @ 1-D (0-d components)
    elif fmt.name == "binary128":
        res = res.reshape(tuple(final) + (2,))
        res = quad_from_bits(res) if xp is np else Binary128(res)
    else:
        res = res.reshape(final)
    if out is not None:  # computed first, so out may overlap an operand
        out[...] = res
        res = out
    elif _foreign(a_in, b_in):
        res = _caller_type(res, a_in, b_in)  # a tensor (0-d for 1-D @ 1-D, as torch gives)
    elif fmt.name in ("binary32", "binary64", "binary128") and res.ndim == 0 and xp is np:
        res = res[()]  # numpy.matmul returns a scalar for 1-D @ 1-D
    else:
        res = _wrap(res, a_in, b_in)
    return (res, plans) if return_plan else res


def plan(a, b, contract=None, *, engine=None) -> Plan:
    """Plan a 2-D product without computing it (runs the statistics and the bound GEMM only).

    ``a`` (m, k) or (k,), ``b`` (k, n) or (k,), any operand :func:`matmul` takes; ``contract``
    as :func:`matmul` (default: from the operands). Returns the frozen
    :class:`~ozgemm.precision.planner.Plan` (or an Ozaki-I plan): moduli count, integer width,
    shifts, the proven scaling-error bound (``plan.scaling_error_bound()``, float64 (m, n))
    and ``plan.info()``. Operands with non-finite values are planned on their finite
    rows/columns. A complex product gets the plan of its real embedding (shape (m, 2k, 2n),
    [Re | Im] columns; README, "Complex products"). Bound and method: :mod:`ozgemm.precision.planner` (Ozaki, Uchino, Imamura
    2025, Sec. 3, with the a-priori componentwise bound of that module).

    Raises the same errors as :func:`matmul`; ValueError for batched (> 2-D) operands.
    """
    xp, contract, a, b, a2, b2, batch, full, final = _prepare(a, b, contract)
    if batch:
        raise ValueError("plan() takes 1-D or 2-D operands; use matmul(..., return_plan=True) for batches")
    if _is_complex(a2) or _is_complex(b2):
        return _complex_plan(a2, b2, contract, get_backend(engine, xp))[-1]
    return _plan_2d(a2, b2, contract, get_backend(engine, xp))[-1]


def _two_product(alpha: float, x, xp, what="alpha", name="a"):
    """(p, e) with p + e == alpha * x exactly (Dekker's TwoProduct with Veltkamp's split;
    Dekker 1971), where no product, split or error term overflows or underflows: checked,
    else ValueError."""
    def split(v):
        c = v * 134217729.0  # 2**27 + 1
        hi = c - (c - v)
        return hi, v - hi

    with ignore_fp_errors(xp):
        p = alpha * x
        ah, al = split(xp.asarray(alpha, dtype=xp.float64))
        xh, xl = split(x)
        e = ((ah * xh - p) + ah * xl + al * xh) + al * xl
    ax = xp.abs(x)
    fin = xp.isfinite(x)  # NaN/Inf entries keep their class (alpha * x), no error term
    e = xp.where(fin, e, 0.0)
    ok = (x == 0) | ~fin | ((ax < 2.0 ** 995 / max(abs(alpha), 1.0)) & (xp.abs(p) >= 2.0 ** -969) & xp.isfinite(p))
    if not bool(ok.all()):
        raise ValueError(f"gemm: {what} * {name} ({what} = {alpha!r}) is not exactly a double-double for some entries "
                         "(beyond 2**995 or below 2**-969 in magnitude); use a power-of-two alpha or rescale")
    return p, e


def _scaled(alpha, x, xp, what, name):
    """alpha * x exactly: x itself (alpha = 1), a float64 array (alpha a power of two and no
    overflow or underflow), or a DD (TwoProduct) — float64 x; DD x takes powers of two only."""
    alpha = float(alpha)
    if alpha == 1.0:
        return x
    m, e = np.frexp(alpha)
    pow2 = abs(m) == 0.5
    if isinstance(x, DD):
        if not pow2:
            raise ValueError(f"gemm: {name} is a DD; {what} must be a power of two (got {alpha!r})")
        hi, lo = _scaled(alpha, x.hi, xp, what, name), _scaled(alpha, x.lo, xp, what, name)
        if isinstance(hi, DD) or isinstance(lo, DD):
            raise ValueError(f"gemm: {what} * {name} leaves the binary64 range for some entries; rescale")
        return DD(hi, lo)
    if alpha == 0.0:
        return xp.zeros_like(x)
    if pow2:
        with ignore_fp_errors(xp):
            y = x * alpha
            if x.dtype == xp.float64:  # exact unless bits fell below the subnormal range (or overflow)
                fits = xp.isfinite(y) & (y / alpha == x)
            else:
                fits = xp.isfinite(y) & (xp.abs(y) >= 2.0 ** -1022)
        exact = (x == 0) | ~xp.isfinite(x) | fits
        if bool(exact.all()):
            return y
    return DD(*_two_product(alpha, x, xp, what, name))


def gemm(a, b, c=None, *, alpha=1.0, beta=0.0, contract=None, engine=None, return_plan=False):
    """``alpha * (a @ b) + beta * c`` computed exactly and rounded once (the fused update).

    ``gemm(A, x, b, alpha=-1, beta=1, contract="dd")`` is the residual b - A x of iterative
    refinement, exact then rounded once to double-double.

    Parameters
    ----------
    a : (m, k) float32/float64 or DD; b : (k, n) or (k,) float or DD; c : (m, n) or (m,) float or
        DD, optional (beta = 0 without it)
    alpha, beta : real scalars. Powers of two (and 1, -1) scale exactly; others multiply a
        float64 operand exactly into a double-double (Dekker's TwoProduct), which needs the
        entries' products between 2**-969 and 2**995 (ValueError otherwise); a DD operand
        takes power-of-two factors only.
    contract : as :func:`matmul` (default: from the operands, at least the precision of c)
    engine, return_plan : as :func:`matmul`

    Returns
    -------
    The rounded result, shape (m, n) (or (m,)), in the contract's format.

    Error bound
    -----------
    The exact value X = alpha AB + beta C is the product of the augmented operands
    ``[alpha A | beta C] @ [[B], [I]]`` (exact integer arithmetic throughout), so the
    contract's entrywise promise holds with |A||B| replaced by |alpha A||B| + |beta C|:
    componentwise ``|R - X| <= u_f |X| + 2**-(bits-1) (|alpha A||B| + |beta C|)``. The
    augmented inner dimension is k + n (k + 1 for a vector): cheap for matrix-vector
    residuals; for wide C it costs up to twice a product.

    Raises
    ------
    As :func:`matmul`; ValueError for shapes that do not fit or scale factors that are not
    exact for these operands.
    """
    if isinstance(a, Prepared) or isinstance(b, Prepared):
        raise TypeError("gemm takes arrays (prepared operands enter matmul)")
    a = _gemm_operand(a, "a")
    b = _gemm_operand(b, "b")
    if c is not None:
        c = _gemm_operand(c, "c")
    xp = array_namespace(*arrays(a), *arrays(b), *(arrays(c) if c is not None else []))
    if a.ndim != 2 or b.ndim not in (1, 2):
        raise ValueError(f"gemm: a must be 2-D and b 1-D or 2-D, got shapes {a.shape} and {b.shape}")
    vec = b.ndim == 1
    b2 = b[:, None] if vec else b
    m, n = a.shape[0], b2.shape[1]
    if a.shape[1] != b2.shape[0]:
        raise ValueError(f"gemm: inner dimensions differ: a has shape {a.shape}, b has shape {b.shape}")
    if c is not None:
        c2 = c[:, None] if c.ndim == 1 else c
        if tuple(c2.shape) != (m, n) or (c.ndim == 1) != vec:
            raise ValueError(f"gemm: c has shape {tuple(c.shape)}; the product has shape {(m,) if vec else (m, n)}")
    alpha, beta = _real_scalar(alpha, "alpha"), _real_scalar(beta, "beta")
    if contract is None:
        contract = default_contract(a, b) if c is None else _widest(default_contract(a, b), default_contract(c, c))
    contract = as_contract(contract)
    single = contract.fmt.name == "binary32"
    # every scaling in binary64 (float32 operands widen exactly first)
    terms = [_scaled(alpha, _widen(a), xp, "alpha", "a")]
    rights = [_widen(b2)]
    c_bad = None
    if c is not None and beta != 0.0:
        cw = _widen(c2)
        c_bad = ~_finite(cw, xp)
        if bool(c_bad.any()):  # NaN/Inf of C enter entry by entry (below), not through the identity
            cw = DD(xp.where(c_bad, 0.0, cw.hi), xp.where(c_bad, 0.0, cw.lo)) if isinstance(cw, DD) else \
                xp.where(c_bad, 0.0, cw)
        else:
            c_bad = None
        terms.append(_scaled(beta, cw, xp, "beta", "c"))
        rights.append(xp.eye(n, dtype=xp.float64))
    A = _concat(terms, xp, axis=1)
    B = _concat(rights, xp, axis=0)
    if single:  # a binary32 contract takes float32 operands: the scaled ones must be float32 values
        A, B = _as_float32_exactly(A, "alpha * a" + (" | beta * c" if len(terms) > 1 else "")), \
            _as_float32_exactly(B, "b")
    res = matmul(A, B, contract=contract, engine=engine, return_plan=return_plan)
    if c_bad is not None:  # alpha (AB)_ij + beta C_ij in IEEE arithmetic where C_ij is NaN/Inf
        r = res[0] if return_plan else res
        with ignore_fp_errors(xp):
            # AB's class: its finite entries enter as 0 (a finite value never changes the class
            # of a NaN/Inf C entry), its non-finite ones by the term-by-term rule; no product runs
            pa, pb = ieee_classes(a, xp), ieee_classes(b2, xp)
            bad_r, bad_c = ~xp.isfinite(pa).all(axis=1), ~xp.isfinite(pb).all(axis=0)
            ab = patch_nonfinite(xp.zeros((m, n)), pa, pb, bad_r, bad_c, xp)
            cls = alpha * ab + beta * (c2.hi + c2.lo if isinstance(c2, DD) else as_float64(c2))
        r = _patch(r, c_bad, cls, xp)
        res = (r, res[1]) if return_plan else r
    if vec:
        if return_plan:
            r, p = res
            return r[:, 0], p
        return res[:, 0]
    return res


def _finite(x, xp):
    """Finite entries of a 2-D operand, by the classes the specials pass uses (a DD's class is
    that of hi + lo, so a finite pair whose sum overflows is not finite)."""
    return xp.isfinite(ieee_classes(x, xp))


def _patch(r, where, cls, xp):
    """Entries ``where`` of a result set to the float64 values ``cls`` (their IEEE classes)."""
    if isinstance(r, DD):
        return DD(xp.where(where, cls, r.hi), xp.where(where, 0.0, r.lo))
    if "Quad" in str(getattr(r, "dtype", "")):
        q = r.copy()
        q[where] = cls[where].astype(r.dtype)
        return q
    if isinstance(r, Binary128):
        raise ValueError("gemm: NaN/Inf in c with a binary128 result on the GPU is not supported")
    r = r.copy()
    r[where] = cls[where].astype(r.dtype)
    return r


def _gemm_operand(x, name):
    """An operand of gemm: float32/float64 (numpy, cupy, array-likes as matmul reads them),
    DD or binary128 — nothing rounded on the way in."""
    x = _check_operand(x, name)
    if is_wide(x):
        return x
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"gemm: {name} has dtype {x.dtype}; float32 or float64 (or ozgemm.DD, binary128) is needed")
    return x


def _real_scalar(v, name):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"gemm: {name} must be a real scalar, got {type(v).__name__}")
    f = float(v)
    if f != v or not math.isfinite(f):
        raise ValueError(f"gemm: {name} = {v!r} is not a finite binary64 value")
    return f


def _widen(x):
    return x if is_wide(x) else as_float64(x)


def _as_float32_exactly(x, what):
    if isinstance(x, DD) or (hasattr(x, "dtype") and x.dtype == np.float64 and
                             not bool((x.astype(np.float32).astype(np.float64) == x).all())):
        raise ValueError(f"gemm: {what} is not exactly float32 for a binary32 contract; use a binary64 or dd "
                         "contract (e.g. contract='fp64')")
    return x.astype(np.float32)


def _widest(*names):
    order = ["fp32", "fp64", "dd", "fp128"]
    return max(names, key=order.index)


def _concat(parts, xp, axis):
    """Concatenate float arrays and DDs (a DD if any part is one; float parts get lo = 0)."""
    if any(isinstance(p, DD) for p in parts):
        his = [p.hi if isinstance(p, DD) else as_float64(p) for p in parts]
        los = [p.lo if isinstance(p, DD) else xp.zeros(p.shape, dtype=xp.float64) for p in parts]
        return DD(xp.concatenate(his, axis=axis), xp.concatenate(los, axis=axis))
    if any(p.dtype == xp.float64 for p in parts):
        parts = [as_float64(p) for p in parts]
    return xp.concatenate(parts, axis=axis)


# -- numpy's other two-operand products, where they reduce to matmul -----------------------

def _plain(x, name):
    x = _check_operand(x, name)
    if is_wide(x):
        raise TypeError(f"{name}: DD and binary128 operands enter matmul and gemm; the tensor forms take "
                        "float arrays in this release")
    return x


def tensordot(a, b, axes=2, *, contract=None, engine=None):
    """``numpy.tensordot`` under a precision contract: the sum over ``axes`` as one
    :func:`matmul` of the operands transposed and reshaped to 2-D (numpy's own reduction), so
    every output entry is one dot product and keeps the contract's entrywise promise.

    ``axes``: an int N (the last N axes of a with the first N of b) or a pair of axis
    sequences, as numpy. Float32/float64 or complex operands (numpy or cupy); raises as numpy for
    mismatched axes (ValueError) and as :func:`matmul` otherwise.
    """
    a, b = _plain(a, "a"), _plain(b, "b")
    xp = array_namespace(a, b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(a.ndim, b.ndim):
            raise IndexError(f"tensordot: axes={n} does not fit operands of {a.ndim} and {b.ndim} dimensions")
        ax_a, ax_b = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
        if len(ax_a) != len(ax_b):
            raise ValueError("tensordot: the axis lists differ in length")
    for ax, x, nm in ((ax_a, a, "a"), (ax_b, b, "b")):
        for i in ax:
            if not -x.ndim <= int(i) < x.ndim:
                raise IndexError(f"tensordot: axis {i} is out of range for {nm} with {x.ndim} dimensions")
    ax_a = [int(x) % a.ndim for x in ax_a]
    ax_b = [int(x) % b.ndim for x in ax_b]
    for i, j in zip(ax_a, ax_b):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"tensordot: shape mismatch for sum: axis {i} of a has {a.shape[i]}, axis {j} of b "
                             f"has {b.shape[j]}")
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [j for j in range(b.ndim) if j not in ax_b]
    k = int(np.prod([a.shape[i] for i in ax_a], dtype=np.int64))
    ma = int(np.prod([a.shape[i] for i in free_a], dtype=np.int64))
    nb = int(np.prod([b.shape[j] for j in free_b], dtype=np.int64))
    at = xp.transpose(a, free_a + ax_a).reshape(ma, k)
    bt = xp.transpose(b, ax_b + free_b).reshape(k, nb)
    c = matmul(at, bt, contract=contract, engine=engine)
    return c.reshape(tuple(a.shape[i] for i in free_a) + tuple(b.shape[j] for j in free_b))


def dot(a, b, *, contract=None, engine=None):
    """``numpy.dot`` under a precision contract: :func:`matmul` for 1-D and 2-D operands; for
    N-D operands the sum over the last axis of a and the second-to-last of b
    (:func:`tensordot`). Scalars (0-d) raise ValueError (numpy multiplies them; that is not a
    product this library computes)."""
    a0, b0 = _plain(a, "a"), _plain(b, "b")
    if a0.ndim <= 2 and b0.ndim <= 2:
        return matmul(a, b, contract=contract, engine=engine)  # numpy's wrapping of subclasses
    return tensordot(a0, b0, axes=([-1], [-2 if b0.ndim > 1 else 0]), contract=contract, engine=engine)


def inner(a, b, *, contract=None, engine=None):
    """``numpy.inner`` under a precision contract: the sum over the last axes of a and b
    (:func:`tensordot`)."""
    a0, b0 = _plain(a, "a"), _plain(b, "b")
    r = tensordot(a0, b0, axes=([-1], [-1]), contract=contract, engine=engine)
    return r[()] if isinstance(r, np.ndarray) and r.ndim == 0 else r  # a scalar, as numpy


def vdot(a, b, *, contract=None, engine=None):
    """``numpy.vdot`` under a precision contract: the dot product of the flattened arrays, the
    first conjugated when complex (one 1-D @ 1-D :func:`matmul`)."""
    a0, b0 = _plain(a, "a"), _plain(b, "b")
    if a0.size != b0.size:
        raise ValueError(f"vdot: the operands have {a0.size} and {b0.size} elements")
    if a0.dtype.kind == "c":
        a0 = a0.conj()
    return matmul(a0.reshape(-1), b0.reshape(-1), contract=contract, engine=engine)


def einsum(subscripts, a, b, *, contract=None, engine=None):
    """Two-operand ``numpy.einsum`` where it reduces to a (batched) matmul: every index
    appears at most once per operand; indices in both operands and not in the output are
    summed, indices in both and in the output are batch indices, the others are free; the
    output is any order of the batch and free indices (implicit mode: the indices that
    appear once, sorted, as numpy). Traces, repeated indices within an operand, ellipses
    and sums over an index of one operand only raise ValueError naming the unsupported form.
    """
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts must be a string, got {type(subscripts).__name__}")
    a0, b0 = _plain(a, "a"), _plain(b, "b")
    xp = array_namespace(a0, b0)
    s = subscripts.replace(" ", "")
    if any(not (ch.isascii() and ch.isalpha()) for ch in s.replace("->", "").replace(",", "").replace("...", "")):
        raise ValueError(f"einsum: subscripts {subscripts!r} may hold only letters, ',' and '->'")
    if "..." in s:
        raise ValueError("einsum: ellipses are not supported; name every axis")
    if "->" in s:
        ins, out = s.split("->")
    else:
        ins, out = s, None
    parts = ins.split(",")
    if len(parts) != 2:
        raise ValueError("einsum takes two operands here (it reduces them to one matmul)")
    sa, sb = parts
    if len(sa) != a0.ndim or len(sb) != b0.ndim:
        raise ValueError(f"einsum: '{sa}' and '{sb}' do not match operands of {a0.ndim} and {b0.ndim} dimensions")
    if len(set(sa)) != len(sa) or len(set(sb)) != len(sb):
        raise ValueError("einsum: an index repeated within an operand (a trace or diagonal) is not supported")
    if out is None:
        out = "".join(sorted(ch for ch in set(sa + sb) if (sa + sb).count(ch) == 1))
    if len(set(out)) != len(out) or any(ch not in sa + sb for ch in out):
        raise ValueError(f"einsum: output '{out}' is not a set of input indices")
    summed = [ch for ch in sa if ch in sb and ch not in out]
    batch = [ch for ch in sa if ch in sb and ch in out]
    free_a = [ch for ch in sa if ch not in sb]
    free_b = [ch for ch in sb if ch not in sa]
    if any(ch not in out for ch in free_a + free_b):
        raise ValueError("einsum: a sum over an index of one operand only is not a matmul; sum it first")
    size = {}
    for ch, d in list(zip(sa, a0.shape)) + list(zip(sb, b0.shape)):
        if size.setdefault(ch, d) != d:
            raise ValueError(f"einsum: index '{ch}' has sizes {size[ch]} and {d}")
    prod = lambda chs: int(np.prod([size[c] for c in chs], dtype=np.int64))  # noqa: E731
    at = xp.transpose(a0, [sa.index(c) for c in batch + free_a + summed])
    bt = xp.transpose(b0, [sb.index(c) for c in batch + summed + free_b])
    at = at.reshape((prod(batch), prod(free_a), prod(summed)))
    bt = bt.reshape((prod(batch), prod(summed), prod(free_b)))
    c = matmul(at, bt, contract=contract, engine=engine)
    c = c.reshape(tuple(size[ch] for ch in batch + free_a + free_b))
    order = batch + free_a + free_b
    return xp.transpose(c, [order.index(ch) for ch in out]) if out else c[()] if xp is np else c

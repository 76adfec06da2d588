"""Fast Walsh–Hadamard transform: argument checking, conventions, CPU (vectorised numpy)
implementation and dispatch to the CUDA kernels.

Conventions (proved against independent references in ``tests/test_fwt.py``):

* natural (Sylvester, "Hadamard") order: ``fwht(x) == scipy.linalg.hadamard(n) @ x``;
* sequency (Walsh) order: row ``k`` of the transform matrix has exactly ``k`` sign changes;
  ``y_seq[k] = y_nat[bitrev(gray(k))]`` with ``gray(k) = k ^ (k >> 1)``;
* ``norm`` follows ``numpy.fft``: "backward" (forward unscaled, inverse scaled by 1/n),
  "ortho" (both scaled by 1/sqrt(n)), "forward" (forward scaled by 1/n, inverse unscaled).

So sympy's ``fwht`` is ``fwht(x)`` (natural, unnormalised) and MATLAB's ``fwht`` is
``fwht(x, order="sequency", norm="forward")``.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .._xp import array_namespace, is_cupy_array
from ._cuda import try_transform

__all__ = ["fwht", "ifwht", "sequency_permutation"]

_NORMS = ("backward", "ortho", "forward")
_ORDERS = ("natural", "sequency")
_INT64_MAX = 2**63 - 1
# rows of at most this many bytes of work are processed together on the CPU (cache blocking)
_CPU_BLOCK_BYTES = 1 << 20


# --------------------------------------------------------------------------- helpers
def is_pow2(n: int) -> bool:
    """n is a power of two (1, 2, 4, ...)."""
    return n >= 1 and (n & (n - 1)) == 0


def _log2_exact(n: int, axis: int) -> int:
    if not is_pow2(n):
        nxt = 1 << max(0, (n - 1).bit_length())
        raise ValueError(
            f"fwht: length {n} along axis {axis} is not a power of two. Pad explicitly, e.g. "
            f"np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, {nxt - n})]) with axis last, to length "
            f"{nxt}; note that the padded transform is a different transform (its {nxt} "
            "coefficients are correlated and all of them are needed to invert), see docs/fwt.md"
        )
    return n.bit_length() - 1


def sequency_permutation(n: int, xp=np):
    """Index array ``p`` (int64, length ``n``) with ``y_sequency = y_natural[p]``.

    ``p[k] = bitreverse_{log2 n}(k ^ (k >> 1))``: the natural-order (Sylvester) row with
    ``k`` sign changes. ``n`` must be a power of two (ValueError otherwise).
    """
    n = operator.index(n)
    if not is_pow2(n):
        raise ValueError(f"sequency_permutation: n must be a power of two >= 1, got {n}")
    L = n.bit_length() - 1
    k = np.arange(n, dtype=np.int64)
    g = k ^ (k >> 1)
    r = np.zeros_like(g)
    for b in range(L):  # loop over log2(n) bits, vectorised over k
        r |= ((g >> b) & 1) << (L - 1 - b)
    return xp.asarray(r)


def _check_args(x, axis, norm, order, out):
    if norm not in _NORMS:
        raise ValueError(f"fwht: norm must be one of {_NORMS}, got {norm!r}")
    if order not in _ORDERS:
        raise ValueError(f"fwht: order must be one of {_ORDERS}, got {order!r}")
    if not (isinstance(x, np.ndarray) or is_cupy_array(x)):
        x = np.asarray(x)
    xp = array_namespace(x, out)
    if x.ndim == 0:
        raise ValueError("fwht: input must have at least one dimension (got a 0-d array)")
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"fwht: axis must be an integer, got {type(axis).__name__}") from None
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"fwht: axis {axis} is out of bounds for an array of dimension {x.ndim}")
    axis %= x.ndim
    dt = x.dtype
    if dt == np.bool_:
        raise TypeError("fwht: boolean input is ambiguous; convert to an integer dtype, or use "
                        "ozgemm.fwt.walsh_spectrum for a Boolean function's truth table")
    if dt.kind == "c":
        raise TypeError("fwht: complex input is not supported; transform .real and .imag separately")
    if dt.kind not in "fiuO":
        raise TypeError(f"fwht: unsupported dtype {dt}; use float16/32/64 or an integer dtype")
    if dt.kind == "O" and xp is not np:
        raise TypeError("fwht: object arrays are CPU (numpy) only")
    if dt.kind == "f" and dt.itemsize > 8 and xp is not np:
        raise TypeError(f"fwht: dtype {dt} is not supported on the GPU")
    L = _log2_exact(x.shape[axis], axis)
    return x, xp, axis, L


def _scale_for(norm: str, L: int, inverse: bool, wide=None):
    """Return ``(c, unit)``: the factor ``c`` applied to the unscaled sums, and ``unit``:
    whether this norm/direction is unscaled for every n (so integer results stay int64;
    the result dtype never depends on n). ``wide``: a numpy float type wider than float64
    (longdouble), in whose precision the "ortho" factor is then computed."""
    if norm == "ortho":
        # 2**(-L/2), correctly rounded: for odd L, sqrt(2) (rounded once) times a power of 2
        if L % 2 == 0:
            s = 2.0 ** (-(L // 2))
        elif wide is not None:
            s = np.ldexp(np.sqrt(wide(2)), -(L + 1) // 2)
        else:
            s = math.ldexp(math.sqrt(2.0), -(L + 1) // 2)
        return s, False
    scaled = (norm == "forward") != inverse  # forward+forward or inverse+backward
    if scaled:
        return 2.0**-L, False
    return 1.0, True


def _result_dtype(dt, unit_scale: bool):
    if dt.kind == "f":
        return dt
    if dt.kind == "O":
        return dt if unit_scale else np.dtype(np.float64)
    return np.dtype(np.int64) if unit_scale else np.dtype(np.float64)


def _check_out(out, xp, shape, rdt):
    if out is None:
        return
    if not (isinstance(out, np.ndarray) or is_cupy_array(out)):
        raise TypeError(f"fwht: out must be a numpy or cupy array, got {type(out).__name__}")
    if array_namespace(out) is not xp:
        raise TypeError("fwht: out must belong to the same array library as x")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"fwht: out has shape {tuple(out.shape)}, expected {tuple(shape)}")
    if out.dtype != rdt:
        raise TypeError(f"fwht: out has dtype {out.dtype}, the result dtype is {rdt}")


def _int_bound_ok(xp, x, axis, n):
    """True when every partial sum of the butterflies fits in int64.

    Every intermediate of a row is a signed sum of a subset of the row, so |.| <= ||row||_1.
    First a cheap test n * max|x| <= 2**63 - 1, then (only if that fails) a rigorous test
    with a float64 row-L1 norm enlarged by its rounding-error bound.
    """
    dt = x.dtype
    if dt.kind in "iu" and dt.itemsize <= 4 and n <= 2**31:
        return True
    if x.size == 0:
        return True
    mx, mn = int(x.max()), int(x.min())
    m = max(abs(mx), abs(mn))
    if m * n <= _INT64_MAX:
        return True
    if m > _INT64_MAX:
        return False
    l1 = float(xp.abs(x.astype(xp.float64)).sum(axis=axis).max())
    bound = l1 * (1.0 + (n + 2) * 2.0**-52) + 1.0
    return bound < 2.0**63 * (1 - 2.0**-50)


# --------------------------------------------------------------------------- CPU path
def _butterflies_xp(xp, a, L):
    """In-order radix-2 butterflies on the last axis of the contiguous 2-D array ``a``.

    Stage h = 1, 2, 4, ... pairs element i with i + h inside blocks of 2h:
    (u, v) -> (u + v, u - v). Vectorised over reshaped views; ping-pongs between two
    buffers (O(n log n) work, no Python loop over elements). Returns the result buffer.
    """
    rows, n = a.shape
    if L == 0:
        return a
    buf = xp.empty_like(a)
    src, dst = a, buf
    h = 1
    for _ in range(L):
        s4 = src.reshape(rows, n // (2 * h), 2, h)
        d4 = dst.reshape(rows, n // (2 * h), 2, h)
        u, v = s4[:, :, 0, :], s4[:, :, 1, :]
        xp.add(u, v, out=d4[:, :, 0, :])
        xp.subtract(u, v, out=d4[:, :, 1, :])
        src, dst = dst, src
        h *= 2
    return src


def _transform_rows_generic(xp, a2, L):
    """Unscaled natural-order WHT of each row of the 2-D contiguous array ``a2`` (modified)."""
    rows, n = a2.shape
    if rows == 0 or L == 0:
        return a2
    per = max(1, _CPU_BLOCK_BYTES // max(1, n * a2.itemsize)) if xp is np else rows
    if per >= rows:
        return _butterflies_xp(xp, a2, L)
    res = xp.empty_like(a2)
    for r0 in range(0, rows, per):  # cache blocking over whole rows
        res[r0:r0 + per] = _butterflies_xp(xp, a2[r0:r0 + per], L)
    return res


def _compute_dtype(dt):
    if dt.kind == "f":
        return np.dtype(np.float32) if dt.itemsize < 4 else dt
    if dt.kind == "O":
        return dt
    return np.dtype(np.int64)


def _fwht_impl(x, axis, norm, order, out, inverse):
    x, xp, axis, L = _check_args(x, axis, norm, order, out)
    if not x.dtype.isnative:  # results (and out) in native byte order, as numpy's arithmetic gives
        x = x.astype(x.dtype.newbyteorder("="))
    n = 1 << L
    dt = x.dtype
    scale, unit = _scale_for(norm, L, inverse, dt.type if dt.kind == "f" and dt.itemsize > 8 else None)
    rdt = _result_dtype(dt, unit)
    _check_out(out, xp, x.shape, rdt)

    if dt.kind in "iu":
        if dt.kind == "u" and dt.itemsize == 8 and x.size and int(x.max()) > _INT64_MAX:
            raise OverflowError("fwht: uint64 input exceeds int64; convert to dtype=object "
                                "(exact Python integers, CPU) first")
        if not _int_bound_ok(xp, x, axis, n):
            raise OverflowError(
                f"fwht: an exact int64 transform of length {n} cannot be guaranteed for this input "
                "(neither n * max|x| nor a rigorous bound on the row L1 norm is below 2**63; both "
                "checks are conservative); use x.astype(object) on the CPU for exact Python integers")

    perm = sequency_permutation(n, xp) if order == "sequency" else None
    xm = xp.moveaxis(x, axis, -1)

    y = None
    if xp is not np:
        y = try_transform(xm, L, scale, unit, dt, perm, inverse,
                          out=out if axis == x.ndim - 1 else None)
        if y is not None and y is out:
            return out
    if y is None:
        y = _generic(xp, xm, L, scale, unit, dt, rdt, perm, inverse)
    y = xp.moveaxis(y, -1, axis)
    if out is not None:
        out[...] = y
        return out
    return y


def _generic(xp, xm, L, scale, unit, dt, rdt, perm, inverse):
    """Array-namespace implementation (numpy; also the GPU fallback for odd cases)."""
    n = 1 << L
    cdt = _compute_dtype(dt)
    shape = xm.shape
    src = xm
    if perm is not None and inverse:  # undo the sequency order first: x = H P^T y / n
        inv = xp.empty_like(perm)
        inv[perm] = xp.arange(n, dtype=perm.dtype)
        src = xp.take(xm, inv, axis=-1)
    a2 = xp.array(src, dtype=cdt, order="C", copy=True).reshape(-1, n)  # input never modified
    try:
        y2 = _transform_rows_generic(xp, a2, L)
    except TypeError as exc:  # object arrays of non-numbers
        raise TypeError(f"fwht: object arrays must hold numbers (Python ints for exact results): {exc}") from None
    y = y2.reshape(shape)
    if perm is not None and not inverse:
        y = xp.take(y, perm, axis=-1)
    if dt.kind == "O":
        if unit:
            return y
        return np.asarray([float(v) for v in y.ravel()], dtype=np.float64).reshape(shape) * scale
    if not unit:
        y = y.astype(rdt if dt.kind in "iu" else cdt, copy=False)
        y = y * (rdt.type(scale) if dt.kind in "iu" else cdt.type(scale))
    return y.astype(rdt, copy=False)


# --------------------------------------------------------------------------- public API
def fwht(x, axis=-1, *, norm="backward", order="natural", out=None):
    """Fast Walsh–Hadamard transform along one axis.

    Computes ``y = c · W x`` along ``axis`` where ``W`` is the n×n Hadamard matrix in
    natural (Sylvester) order, ``W = scipy.linalg.hadamard(n)``, or its rows permuted to
    sequency order (row k has k sign changes, MATLAB's default), and ``c`` is 1
    (``norm="backward"``, default), ``1/sqrt(n)`` ("ortho") or ``1/n`` ("forward").
    ``ifwht(fwht(x, norm=m), norm=m)`` returns ``x`` for every ``m`` and ``order``.

    Parameters
    ----------
    x : numpy.ndarray or cupy.ndarray (or array-like, converted with numpy.asarray)
        Any shape; ``x.shape[axis]`` must be a power of two ``n = 2**L`` (n = 1 allowed).
        dtypes: float16, float32, float64 (numpy also longdouble), any signed/unsigned
        integer dtype, and (numpy only) ``object`` arrays of Python ints (exact, unbounded).
    axis : int
        Axis to transform (default last).
    norm : {"backward", "ortho", "forward"}
        Scaling, as in ``numpy.fft``.
    order : {"natural", "sequency"}
        Row order of the transform matrix.
    out : array, optional
        Destination with shape ``x.shape`` and exactly the result dtype; returned.

    Returns
    -------
    Array of ``x``'s library and shape. dtype: the input float dtype; for integer input
    int64 when the scaling is 1 (exact), else float64 (the exact integer sum, rounded once
    to float64, times ``c``: exact for |y| < 2**53 and ``c`` a power of two; for "ortho"
    with odd L one more rounding, ≤ 1.5 ulp). Object input with unit scale stays object.

    Accuracy
    --------
    Floating point: O(n log n) additions in radix-2 butterflies; with ``m = log2 n``
    stages in precision u every output satisfies ``|ŷ_k − y_k| ≤ γ_m · c · ||x||_1``
    (γ_m = m·u/(1 − m·u)), since every butterfly output is a signed sum of inputs; for
    "ortho" with odd m, ``c = 2**(-m/2)`` is itself rounded and multiplies once more:
    γ_(m+2) then. float16 is computed in float32 (u = 2**-24) and rounded once to float16
    (plus one float16 rounding between passes for rows longer than the single-pass size on
    the GPU), which adds ``2**-11 · |y_k|``. These bounds assume no underflow: a rounding
    into the subnormal range adds at most half the smallest subnormal of its format (the
    float16 output: 2**-25).
    Integers are exact: the int64 transform is used only after checking that no partial
    sum can reach 2**63 (|partial| ≤ row L1 norm); otherwise ``OverflowError``.

    Raises
    ------
    ValueError
        ``x.shape[axis]`` not a power of two (message shows how to pad), bad ``norm`` /
        ``order`` / ``axis``, 0-d input, ``out`` of the wrong shape.
    TypeError
        bool / complex / unsupported dtype, mixed numpy/cupy, ``out`` of the wrong dtype.
    OverflowError
        integer input whose exact transform might not fit in int64.

    Notes
    -----
    Method: Sylvester recursion H_2n = [[H_n, H_n], [H_n, −H_n]] as log2(n) butterfly
    stages (Fino & Algazi, "Unified matrix treatment of the fast Walsh–Hadamard transform",
    IEEE Trans. Computers 1976). CPU: vectorised numpy stages over reshaped views, rows
    blocked for cache. GPU (cupy): CUDA kernels in ``ozgemm/fwt/fwht.cu``, one pass through
    memory for rows up to 2**15 elements (int64: 2**14), a multi-pass (row pass + strided
    passes) scheme beyond; float16 uses tensor cores (mma) for 4 of the butterfly levels
    where measured faster; see docs/fwt.md and docs/performance.md. The input is
    never modified (``out`` may alias it).
    """
    return _fwht_impl(x, axis, norm, order, out, inverse=False)


def ifwht(x, axis=-1, *, norm="backward", order="natural", out=None):
    """Inverse fast Walsh–Hadamard transform: ``ifwht(fwht(x, ...), ...) == x``.

    Natural order: ``ifwht(y) = c' · H y`` (H is symmetric and H·H = n·I), with ``c' = 1/n``
    for ``norm="backward"`` (default), ``1/sqrt(n)`` for "ortho", 1 for "forward".
    Sequency order: ``x = c' · H Pᵀ y`` where ``P`` is the sequency row permutation.
    MATLAB's ``ifwht`` is ``ifwht(y, order="sequency", norm="forward")``; sympy's
    ``ifwht`` is ``ifwht(y)``.

    Parameters, return types, accuracy and errors as for :func:`fwht` (integer input
    with ``norm="backward"`` returns float64 because of the 1/n factor).
    """
    return _fwht_impl(x, axis, norm, order, out, inverse=True)

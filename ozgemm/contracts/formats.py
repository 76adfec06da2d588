"""Floating-point formats known to the planner and the final rounding.

A format is described by its precision ``p`` (significand bits, hidden bit included), its
exponent range and the numpy dtype that carries it. The unit roundoff is ``u = 2**-p``.
binary32 / binary64 / binary128 follow IEEE 754-2019, Table 3.5. ``dd`` (double-double) is
an unevaluated sum ``hi + lo`` of two binary64 numbers with ``|lo| <= ulp(hi)/2`` (results:
hi = RN(x), lo = RN(x - hi); see :class:`DD` for the subnormal-range tie); its precision
is taken as p = 106 with binary64's exponent range (Hida, Li, Bailey, "Algorithms for quad-double precision floating point arithmetic",
ARITH 2001, Sec. 2).

How the wide formats travel:

* dd: :class:`DD`, two arrays (numpy or cupy) of float64, ``hi`` and ``lo``, that unpack
  like a tuple: ``hi, lo = ozgemm.matmul(a, b, contract="dd")``.
* binary128 on the CPU: numpy arrays of ``numpy_quaddtype.QuadPrecDType()`` (package
  numpy-quaddtype). On the GPU (CuPy has no quad dtype): :class:`Binary128`, which holds the
  raw IEEE encodings as a ``(..., 2)`` uint64 array, little-endian words ``[low, high]`` —
  exactly the bytes of a numpy quad array. :func:`quad_to_bits` / :func:`quad_from_bits`
  convert both ways; ``Binary128.from_numpy(x, device=True)`` and ``.to_numpy()`` move them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Format", "FORMATS", "get_format", "format_of_dtype", "DD", "Binary128", "quad_dtype",
           "quad_to_bits", "quad_from_bits"]


@dataclass(frozen=True)
class Format:
    """An IEEE-style binary floating-point format.

    Attributes
    ----------
    name : str
        ``"binary32"``, ``"binary64"``, ``"dd"`` or ``"binary128"``.
    p : int
        Precision in bits (significand including the hidden bit).
    emax : int
        Largest exponent: the largest finite value is ``(2 - 2**(1-p)) * 2**emax``.
    emin : int
        Smallest normal exponent: the smallest normal value is ``2**emin``.
    dtype : numpy dtype or None
        The numpy dtype holding values of this format (None where there is none).
    supported : bool
        Whether this release can compute in this format.
    """

    name: str
    p: int
    emax: int
    emin: int
    dtype: object
    supported: bool = True

    @property
    def u(self) -> float:
        """Unit roundoff ``2**-p`` (round to nearest)."""
        return 2.0 ** (-self.p)

    @property
    def emin_sub(self) -> int:
        """Exponent of the smallest subnormal: ``emin - p + 1``."""
        return self.emin - self.p + 1


FORMATS = {
    "binary32": Format("binary32", 24, 127, -126, np.dtype(np.float32)),
    "binary64": Format("binary64", 53, 1023, -1022, np.dtype(np.float64)),
    # dd: values hi + lo; the precision 106 holds for |x| >= 2**(-1022 + 53) ("emin"); below,
    # lo is subnormal and the spacing is binary64's smallest subnormal 2**-1074 (= emin_sub).
    "dd": Format("dd", 106, 1023, -1022 + 53, None),
    "binary128": Format("binary128", 113, 16383, -16382, None),
}
_ALIASES = {"fp32": "binary32", "float32": "binary32", "single": "binary32",
            "fp64": "binary64", "float64": "binary64", "double": "binary64",
            "fp128": "binary128", "quad": "binary128", "double-double": "dd"}


def get_format(name: str) -> Format:
    """Return the :class:`Format` called ``name`` (aliases: fp32, fp64, float32, ...).

    Raises
    ------
    ValueError
        For an unknown name.
    """
    key = _ALIASES.get(str(name).lower(), str(name).lower())
    try:
        return FORMATS[key]
    except KeyError:
        raise ValueError(f"unknown floating-point format {name!r}; known: {sorted(FORMATS)}") from None


def format_of_dtype(dtype) -> Format:
    """The format carried by a numpy dtype (float32 -> binary32, float64 -> binary64)."""
    dt = np.dtype(dtype)
    for f in FORMATS.values():
        if f.dtype is not None and f.dtype == dt:
            return f
    raise TypeError(f"no floating-point format for dtype {dt}")


def quad_dtype():
    """numpy-quaddtype's ``QuadPrecDType()`` (IEEE binary128, SLEEF backend).

    Raises ImportError naming the package when numpy-quaddtype is not installed."""
    try:
        import numpy_quaddtype
    except ImportError as e:
        raise ImportError("binary128 operands need numpy-quaddtype: pip install 'ozgemm[fp128]'") from e
    return numpy_quaddtype.QuadPrecDType()


def is_quad_array(x) -> bool:
    """True for a numpy array of numpy-quaddtype's binary128 dtype."""
    return isinstance(x, np.ndarray) and "QuadPrec" in type(x.dtype).__name__


def quad_to_bits(x) -> np.ndarray:
    """Raw IEEE binary128 encodings of a numpy quad array: uint64 ``x.shape + (2,)``,
    words ``[low, high]`` (exact; a copy)."""
    if not is_quad_array(x):
        raise TypeError(f"quad_to_bits takes a numpy QuadPrecDType array, got {type(x).__name__} "
                        f"{getattr(x, 'dtype', '')}")
    return np.ascontiguousarray(x).view(np.uint64).reshape(x.shape + (2,)).copy()


def quad_from_bits(bits) -> np.ndarray:
    """numpy quad array from raw binary128 encodings ``(..., 2)`` uint64 (numpy or cupy)."""
    from .._xp import to_numpy

    b = np.ascontiguousarray(to_numpy(bits), dtype=np.uint64)
    if b.ndim < 1 or b.shape[-1] != 2:
        raise ValueError(f"binary128 encodings need a trailing axis of 2 uint64 words, got shape {b.shape}")
    return b.view(quad_dtype()).reshape(b.shape[:-1])


class DD:
    """A double-double array: the unevaluated sums ``hi + lo`` of two float64 arrays.

    ``hi`` and ``lo`` are numpy or cupy float64 arrays of one shape (float32 is widened
    exactly), or complex128 arrays for a complex double-double (real and imaginary parts each
    a double-double: ``matmul`` of complex operands under the dd contract; its ``+``, ``-``,
    ``==`` and ``to_float64()`` work part by part, ordering comparisons and
    ``to_binary128()`` raise TypeError). Results of ``ozgemm.matmul(..., contract="dd")`` are hi = RN(x), lo = RN(x - hi)
    of the exact x, so |lo| <= ulp(hi)/2 and ``hi + lo == hi`` except where lo is exactly
    half an ulp of hi (x - hi just below it rounds up to it; ``hi + lo`` then ties to even).
    Inputs need not be normalised (they are renormalised exactly, TwoSum).

    Raises TypeError for non-arrays, masked arrays and non-float dtypes, ValueError for
    different shapes.
    Unpacks like a tuple: ``hi, lo = result``. Indexing applies to both parts.

    A value type: ``+`` and ``-`` with a DD (accurate double-word addition, relative error
    <= 3u**2/(1 - 4u), u = 2**-53) or with float arrays/scalars (<= 2u**2; Joldes, Muller,
    Popescu, ACM TOMS 44 (2017), Algorithms 4 and 6), exact negation, exact comparisons
    (``<``, ``<=``, ``==``, ... on the values hi + lo, elementwise), ``to_float64()`` (RN of
    the value), ``to_binary128()``, ``DD.from_float64``, ``DD.from_binary128``. numpy
    operands defer to these operators (``b - x`` is a DD), and a DD is never converted to a
    ``(2, ...)`` array implicitly (``numpy.asarray`` raises TypeError).

    Examples
    --------
    >>> import numpy as np, ozgemm
    >>> x = ozgemm.DD(np.array([1.0, 2.0**60]), np.array([2.0**-60, -1.0]))
    >>> x.shape
    (2,)
    >>> hi, lo = x
    >>> float(hi[1]), float(lo[1])
    (1.152921504606847e+18, -1.0)
    >>> ozgemm.DD(np.array([np.inf])).lo     # lo defaults to zeros
    array([0.])
    >>> d = np.array([3.0, 1.0]) - x            # a DD: numpy defers to DD's operators
    >>> float(d.hi[0]), float(d.lo[0])
    (2.0, -8.673617379884035e-19)
    >>> (x > 1.0).tolist()
    [True, True]
    >>> a = np.array([[1.0, 2.0**-60], [3.0, 1.0]])
    >>> c = ozgemm.matmul(a, a, contract="dd")     # the exact product, rounded once to dd
    >>> float(c.hi[0, 0]), float(c.lo[0, 0]) == 3 * 2.0**-60     # 1 + 3 * 2**-60 exactly
    (1.0, True)
    """

    __slots__ = ("hi", "lo")

    def __init__(self, hi, lo=None):
        from .._xp import array_namespace

        from .._xp import is_cupy_array

        for nm, v in (("hi", hi), ("lo", lo)):
            if v is None and nm == "lo":
                continue
            if isinstance(v, np.ma.MaskedArray):
                raise TypeError(f"DD: {nm} is a masked array; masks are not supported: pass x.filled(...)")
            if not (isinstance(v, np.ndarray) or is_cupy_array(v)):
                raise TypeError(f"DD: {nm} must be a numpy or cupy array, got {type(v).__name__}; "
                                "convert with numpy.asarray(...) first")
        if lo is None:  # zeros, not hi * 0: an infinite hi keeps its class
            lo = array_namespace(hi).zeros(hi.shape, dtype=np.complex128 if hi.dtype.kind == "c" else np.float64)
        if isinstance(hi, np.ndarray) and not hi.dtype.isnative:
            hi = hi.astype(hi.dtype.newbyteorder("="))
        if isinstance(lo, np.ndarray) and not lo.dtype.isnative:
            lo = lo.astype(lo.dtype.newbyteorder("="))
        xp = array_namespace(hi, lo)
        if hi.shape != lo.shape:
            raise ValueError(f"DD: hi and lo have different shapes {hi.shape} and {lo.shape}")
        if hi.dtype.kind == "c" or lo.dtype.kind == "c":  # a complex double-double (part by part)
            for nm, v in (("hi", hi), ("lo", lo)):
                if v.dtype not in (np.complex128, np.complex64):
                    raise TypeError(f"DD: {nm} has dtype {v.dtype}; a complex DD takes complex128 (or complex64) "
                                    "hi and lo")
            self.hi, self.lo = hi.astype(np.complex128, copy=False), lo.astype(np.complex128, copy=False)
            return
        for nm, v in (("hi", hi), ("lo", lo)):
            if v.dtype not in (np.float64, np.float32):
                raise TypeError(f"DD: {nm} has dtype {v.dtype}; float64 (or float32) arrays are needed")
        from .._xp import as_float64

        self.hi = as_float64(hi) if xp is not np else np.asarray(hi, dtype=np.float64)
        self.lo = as_float64(lo) if xp is not np else np.asarray(lo, dtype=np.float64)

    def __iter__(self):
        return iter((self.hi, self.lo))

    def __len__(self):
        return 2

    @property
    def shape(self):
        return self.hi.shape

    @property
    def ndim(self):
        return self.hi.ndim

    def __getitem__(self, idx):
        return DD(self.hi[idx], self.lo[idx])

    def __repr__(self):
        return f"DD(hi={self.hi!r}, lo={self.lo!r})"

    # -- a value type: no silent conversion to a (2, ...) array ---------------------------
    __array_ufunc__ = None  # numpy defers to DD's own operators (array - DD is a DD)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a DD is not converted to an array implicitly: use .to_float64() (RN(hi + lo)), "
                        ".to_binary128(), or the parts .hi and .lo")

    def _xp(self):
        from .._xp import array_namespace

        return array_namespace(self.hi, self.lo)

    def _other(self, y):
        """(hi, lo) of an operand: a DD, or float32/float64 values (lo = None); None where the
        operand is not one (integers only where float64 holds them exactly)."""
        if isinstance(y, DD):
            return y.hi, y.lo, True
        xp = self._xp()
        if isinstance(y, (bool, complex, np.bool_)):
            return None, None, False
        if isinstance(y, (int, np.integer)):
            if float(y) != y:
                raise ValueError(f"DD arithmetic: the integer {y} is not a binary64 value")
            return xp.asarray(float(y)), None, False
        if isinstance(y, float):
            return xp.asarray(y), None, False
        dt = getattr(y, "dtype", None)
        if dt is None or not (dt.kind == "f" and dt.itemsize <= 8):
            return None, None, False
        return xp.asarray(y, dtype=xp.float64), None, False

    def normalized(self):
        """The same values with ``hi = RN(hi + lo)`` (TwoSum, exact; Knuth, TAOCP 4.2.2); a
        non-finite value keeps its class in hi (lo = 0)."""
        xp = self._xp()
        with _quiet(xp):
            s, e = _two_sum(self.hi, self.lo, xp)
            fin = xp.isfinite(s) & xp.isfinite(e)
            if not bool(fin.all()):
                s = xp.where(fin, s, self.hi + self.lo)
                e = xp.where(fin, e, 0.0)
        return _dd(xp, s, e)

    def __bool__(self):
        if self.hi.size != 1:
            raise ValueError("the truth value of a DD with more than one element is ambiguous; use .any() or "
                             ".all() of a comparison")
        return bool((self.hi + self.lo).reshape(()) != 0)

    def __neg__(self):
        return _dd(self._xp(), -self.hi, -self.lo)

    def __pos__(self):
        return self

    def __add__(self, y):
        yh, yl, _ = self._other(y)
        if yh is None:
            return NotImplemented
        xp = self._xp()
        x = self.normalized()  # the algorithms take normalised double-words
        with _quiet(xp):
            if yl is None:  # DWPlusFP: relative error <= 2u**2
                sh, sl = _two_sum(x.hi, yh, xp)
                v = x.lo + sl
                zh, zl = _fast_two_sum(sh, v)
                naive = x.hi + yh
            else:  # AccurateDWPlusDW: relative error <= 3u**2 / (1 - 4u)
                yn = _dd(xp, yh, yl).normalized()
                sh, sl = _two_sum(x.hi, yn.hi, xp)
                th, tl = _two_sum(x.lo, yn.lo, xp)
                c = sl + th
                vh, vl = _fast_two_sum(sh, c)
                w = tl + vl
                zh, zl = _fast_two_sum(vh, w)
                naive = x.hi + yn.hi
            fin = xp.isfinite(zh) & xp.isfinite(zl)
            if not bool(fin.all()):  # infinities, NaN and overflow: the class of the float sum
                zh = xp.where(fin, zh, naive)
                zl = xp.where(fin, zl, 0.0)
        return _dd(xp, zh, zl)

    __radd__ = __add__

    def __sub__(self, y):
        yh, yl, _ = self._other(y)
        if yh is None:
            return NotImplemented
        return self + (_dd(self._xp(), -yh, -yl) if yl is not None else -yh)

    def __rsub__(self, y):
        return (-self) + y

    def _ordered(self):
        if self.hi.dtype.kind == "c":
            raise TypeError("DD: complex double-doubles have no order")

    def _pair(self, y):
        """(self, y) as normalised pairs, or None where y is not an operand. Normalised pairs
        are unique (hi = RN(value), lo the exact rest), so their lexicographic order is the
        order of the values."""
        yh, yl, _ = self._other(y)
        if yh is None:
            return None
        xp = self._xp()
        return self.normalized(), _dd(xp, yh, yl if yl is not None else xp.zeros_like(yh)).normalized()

    def __lt__(self, y):
        self._ordered()
        p = self._pair(y)
        return NotImplemented if p is None else _below(*p)

    def __le__(self, y):
        self._ordered()
        p = self._pair(y)
        return NotImplemented if p is None else _below(*p) | _same(*p)

    def __gt__(self, y):
        self._ordered()
        p = self._pair(y)
        return NotImplemented if p is None else _below(p[1], p[0])

    def __ge__(self, y):
        self._ordered()
        p = self._pair(y)
        return NotImplemented if p is None else _below(p[1], p[0]) | _same(*p)

    def __eq__(self, y):
        p = self._pair(y)
        return NotImplemented if p is None else _same(*p)

    def __ne__(self, y):
        p = self._pair(y)
        return NotImplemented if p is None else ~_same(*p)

    __hash__ = None

    def to_float64(self):
        """RN(hi + lo): the correctly rounded float64 of the value (one IEEE addition)."""
        return self.hi + self.lo

    @classmethod
    def from_float64(cls, x):
        """The DD of float64 (or float32) values: ``lo = 0``."""
        return cls(x)

    def to_binary128(self):
        """RN113(hi + lo) as a numpy binary128 array (numpy-quaddtype; ``ozgemm[fp128]``)."""
        from .._xp import to_numpy

        if self.hi.dtype.kind == "c":
            raise TypeError("DD.to_binary128: numpy has no complex binary128; convert .hi.real + .lo.real "
                            "and .hi.imag + .lo.imag separately")
        Q = quad_dtype()
        return to_numpy(self.hi).astype(Q) + to_numpy(self.lo).astype(Q)

    @classmethod
    def from_binary128(cls, q):
        """hi = RN53(q), lo = RN53(q - hi) of a numpy binary128 array (``q - hi`` is exact)."""
        Q = quad_dtype()
        hi = np.asarray(q, dtype=Q).astype(np.float64)
        lo = (np.asarray(q, dtype=Q) - hi.astype(Q)).astype(np.float64)
        return cls(hi, lo)


def _quiet(xp):
    from .._xp import ignore_fp_errors

    return ignore_fp_errors(xp)


def _dd(xp, hi, lo):
    """A DD from arithmetic results (0-d results of numpy come back as scalars: arrays again)."""
    d = object.__new__(DD)
    dt = xp.complex128 if xp.asarray(hi).dtype.kind == "c" or xp.asarray(lo).dtype.kind == "c" else xp.float64
    d.hi = xp.asarray(hi, dtype=dt)
    d.lo = xp.asarray(lo, dtype=dt)
    return d


def _below(a, b):
    """a < b for normalised pairs (lexicographic on (hi, lo))."""
    return (a.hi < b.hi) | ((a.hi == b.hi) & (a.lo < b.lo))


def _same(a, b):
    return (a.hi == b.hi) & (a.lo == b.lo)


def _two_sum(a, b, xp):
    """s + e == a + b exactly, s = RN(a + b) (Knuth's TwoSum; no overflow where s is finite)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _fast_two_sum(a, b):
    """s + e == a + b exactly for |a| >= |b| (or a = 0), s = RN(a + b) (Dekker's FastTwoSum)."""
    s = a + b
    return s, b - (s - a)


class Binary128:
    """IEEE binary128 values as raw encodings: ``bits`` is a ``shape + (2,)`` uint64 array
    (numpy or cupy), words ``[low, high]`` — the GPU carrier of quad values.

    ``Binary128.from_numpy(x, device=False)`` takes a numpy QuadPrecDType array (to cupy
    with ``device=True``); ``.to_numpy()`` returns a numpy QuadPrecDType array
    (numpy-quaddtype: ``pip install 'ozgemm[fp128]'``).

    Examples
    --------
    >>> import numpy as np, ozgemm
    >>> w = np.array([[0, 0x3FFF << 48], [0, 0xC000 << 48]], dtype=np.uint64)  # 1.0 and -2.0
    >>> q = ozgemm.Binary128(w)
    >>> q.shape
    (2,)
    >>> ozgemm.Binary128(np.zeros(3, dtype=np.uint64))
    Traceback (most recent call last):
    ...
    ValueError: Binary128 needs a (..., 2) uint64 array of encodings, got uint64 (3,)
    """

    __slots__ = ("bits",)

    def __init__(self, bits):
        if bits.dtype != np.uint64 or bits.ndim < 1 or bits.shape[-1] != 2:
            raise ValueError(f"Binary128 needs a (..., 2) uint64 array of encodings, got {bits.dtype} "
                             f"{tuple(bits.shape)}")
        self.bits = bits

    @classmethod
    def from_numpy(cls, x, device=False):
        b = quad_to_bits(x)
        if device:
            import cupy

            b = cupy.asarray(b)
        return cls(b)

    def to_numpy(self):
        return quad_from_bits(self.bits)

    @property
    def shape(self):
        return tuple(self.bits.shape[:-1])

    @property
    def ndim(self):
        return self.bits.ndim - 1

    def __getitem__(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        if any(i is Ellipsis for i in idx):
            raise IndexError("Binary128: Ellipsis indexing is not supported")
        return Binary128(self.bits[idx + (slice(None),)])

    def __repr__(self):
        return f"Binary128(shape={self.shape}, bits={type(self.bits).__module__})"

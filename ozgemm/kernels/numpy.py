"""The numpy backend: every phase of :class:`~ozgemm.kernels.base.Backend` on the CPU.

The elementwise phases are the array-generic code of :mod:`ozgemm.precision` and
:mod:`ozgemm.crt` run on numpy.

``kind="blas"`` computes the plan's exact integer C' with its own, larger moduli
(:func:`~ozgemm.crt.moduli.wide_moduli`: the fewest primes p_j <= WIDE_BOUND = 2965821
(about 2**21.5) whose product P is at least 4 times the plan's M, so |C'| < M/2 + 1 <= P/4 is
determined by its residues mod P; fp64's 16 table moduli become 6) and float64 BLAS (dgemm):
symmetric residues have |r| <= h = (p-1)/2 <= 1482910 < 2**20.5, every product |.| <= h**2,
so every partial sum of a k-block of at most 1024 has |.| <= 1024 h**2 < 2**51 and is exact
whatever order BLAS adds in. Each block's sums are reduced
mod p_j exactly (see :meth:`NumpyBackend.residue_products`) and the residues added across
blocks. The reconstruction is the same direct CRT formula
(:func:`~ozgemm.crt.reconstruct.crt_reconstruct`) with the constants of these moduli.

``kind="int64"`` is the plain exact reference: the plan's 8-bit moduli, int8 residues and
numpy int64 matmul (slow, no BLAS). Tests check both bit-identical, including at the
k = 1024 block boundary.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import time
from dataclasses import dataclass
from math import prod

import numpy as np

from ..crt.moduli import WIDE_K_BLOCK, plan_moduli, split_factors, wide_moduli
from ..crt.reconstruct import constants_of, crt_reconstruct, reconstruct_round
from ..crt.residues import scaled_residues
from ..precision.planner import complex_bound_operands, normwise_scalars, plan_scalars, stack_plan_scalars, width_constants
from ..precision.operands import complex_embedding, complex_operands
from ..precision.stats import LB_BITS, NORM_BITS, RowStats, row_stats, split_float

__all__ = ["NumpyBackend", "SGEMM_EXACT_K", "DGEMM_EXACT_K", "available_memory", "compiled_kernels"]


@functools.lru_cache(maxsize=1)
def _import_compiled():
    try:
        from . import cpu_compiled
    except ImportError:  # numba not installed: the numpy code runs
        return None
    return cpu_compiled


def compiled_kernels():
    """The compiled kernels of :mod:`ozgemm.kernels.cpu_compiled` where numba is installed (the
    ``[cpu]`` extra) and the environment variable ``OZGEMM_CPU_COMPILED`` is not ``0``; else
    None. Both give the same bits."""
    if os.environ.get("OZGEMM_CPU_COMPILED", "1") == "0":
        return None
    return _import_compiled()


@functools.lru_cache(maxsize=64)
def _compiled_constants(moduli: tuple, bound: int):
    """(W, eoM, Mi) of :func:`~ozgemm.kernels.cpu_compiled.crt_round_bits` for ``moduli`` and
    |C'| < ``bound`` (4 bound <= P, the limbs of 2 bound)."""
    gc = constants_of(moduli)
    lb = ((2 * bound).bit_length() + 31) // 32
    W = np.ascontiguousarray(gc.e_limbs[:, :lb].astype(np.int64))
    eoM = np.ascontiguousarray(gc.e_over_M, dtype=np.float64)
    Mi = np.array([int(v) for v in gc.M_limbs[:lb]], dtype=np.int64)
    for a in (W, eoM, Mi):
        a.setflags(write=False)
    return W, eoM, Mi


#: how long one reading of MemAvailable serves (seconds): reading /proc/meminfo costs about
#: 23 microseconds, and a call asks twice (planning and the row tiles)
MEMINFO_TTL = 0.25
_meminfo = [float("-inf"), 0]  # [time.monotonic() of the reading, bytes]


def available_memory() -> int:
    """Bytes of memory the OS reports available (MemAvailable), or 4 GiB if unknown; one
    reading serves the calls of the next :data:`MEMINFO_TTL` seconds."""
    now = time.monotonic()
    t, value = _meminfo
    if now - t < MEMINFO_TTL:
        return value
    value = 4 << 30
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    value = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    _meminfo[:] = [now, value]
    return value


#: largest k-block for which float32 accumulation of int8 products is provably exact
SGEMM_EXACT_K = 2**24 // 2**14

#: k-block of the float64 GEMMs of residues modulo the primes of :func:`wide_moduli`
#: (|r| <= 1482910): |block sums| <= 1024 * 1482910**2 < 2**51, exact in float64, and within
#: the bound under which :meth:`NumpyBackend._reduce` is exact (crt.moduli.WIDE_BOUND)
DGEMM_EXACT_K = WIDE_K_BLOCK


@dataclass
class _Tile:
    i0: int
    i1: int

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class NumpyBackend:
    """The CPU backend (see the module docstring for the exactness proof)."""

    xp = np
    speculates = False
    flags_nonfinite = False
    stack_shares_operands = True  # a shared operand's residues once per width group
    stack_chunk_bytes = 16 << 20  # a stack's products in chunks that stay in the caches

    #: bytes of workspace one call may use; None: half of the memory the OS reports available
    memory_budget_bytes = None

    def __init__(self, kind: str = "blas"):
        if kind not in ("blas", "int64"):
            raise ValueError(f"unknown CPU backend kind {kind!r}")
        self.kind = kind
        self.name = "cpu" if kind == "blas" else "cpu-int64"

    def memory_budget(self) -> int:
        """Workspace budget in bytes (``memory_budget_bytes`` or half of MemAvailable)."""
        if self.memory_budget_bytes is not None:
            return int(self.memory_budget_bytes)
        return available_memory() // 2

    def workspace_budget(self):
        """(tile budget, hard limit) in bytes: both the memory budget."""
        b = self.memory_budget()
        return b, b

    def synchronize(self) -> None:
        pass

    # -- planning phases ---------------------------------------------------------------
    def check_planning_memory(self, m: int, k: int, n: int) -> None:
        """Statistics keep ~48 bytes per input entry: MemoryError beyond the budget."""
        need = 48 * (m * k + k * n)
        if need > self.memory_budget():
            raise MemoryError(f"ozgemm: planning a {m}x{k}x{n} product needs about {need / 2**30:.2f} GiB, more "
                              f"than the budget of {self.memory_budget() / 2**30:.2f} GiB; split the product")

    def nonfinite_rows_cols(self, a, b):
        fa = np.isfinite(a)
        fb = np.isfinite(b)
        bad_rows = ~fa.all(axis=1) if a.shape[1] else np.zeros((a.shape[0],), dtype=bool)
        bad_cols = ~fb.all(axis=0) if b.shape[0] else np.zeros((b.shape[1],), dtype=bool)
        return bad_rows, bad_cols, bool(bad_rows.any() or bad_cols.any())

    def row_stats(self, x, nonfinite=None):
        """:func:`ozgemm.precision.stats.row_stats` in blocks of rows (the statistics are per
        row: the same values, with the passes in cache); one-component rows through the
        compiled kernel where installed (:func:`compiled_kernels`: the same integers)."""
        r, k = x.shape[-2:]
        ck = compiled_kernels() if x.ndim == 2 else None
        if ck is not None:
            got = ck.row_stats(x, NORM_BITS, LB_BITS)
            if got is not None:
                mant, exp, q, E, width, n1, n2, qsum, zero = got
                return RowStats(mant=mant, exp=exp, E=E, width=width, norm1=np.ldexp(n1.astype(np.float64), -NORM_BITS),
                                q=q, zero_row=zero, n1_int=n1, n2_int=n2, qsum=qsum, ncomp=1)
        rows = max(1, (1 << 15) // max(k, 1))
        if r <= rows:
            return row_stats(x, np)
        parts = [row_stats(x[..., i0:i0 + rows, :], np) for i0 in range(0, r, rows)]
        first = parts[0]
        cat = {}
        for f in ("E", "width", "norm1", "zero_row", "n1_int", "n2_int", "qsum"):
            cat[f] = np.concatenate([getattr(p_, f) for p_ in parts])
        cat["q"] = np.concatenate([p_.q for p_ in parts], axis=0)
        ax = x.ndim - 2  # rows axis of mant/exp ((r, k) or (C, r, k))
        cat["mant"] = np.concatenate([p_.mant for p_ in parts], axis=ax)
        cat["exp"] = np.concatenate([p_.exp for p_ in parts], axis=ax)
        return dataclasses.replace(first, **cat)

    def plan_scalars(self, sa, sb, lb, bits, k, u, flag=None, lb_shift=0):
        """:func:`~ozgemm.precision.planner.plan_scalars`; the minimal width and the bound
        GEMM's upper bound of a 2-D product in one compiled pass where installed
        (:func:`compiled_kernels`: the same integers)."""
        ck = compiled_kernels()
        widths = None
        if ck is not None and lb.ndim == 2 and lb.size:
            widths = ck.plan_widths(lb, sa.width, sb.width, sa.norm1, sb.norm1, sa.qsum, sb.qsum,
                                    *width_constants(bits, k, u, lb_shift))
        return plan_scalars(sa, sb, lb, bits, k, u, np, flag=flag, lb_shift=lb_shift, widths=widths)

    def normwise_scalars(self, sa, sb, table, k, flag=None):
        return normwise_scalars(sa, sb, table, k, np, flag)

    def shifts(self, beta, sa, sb):
        return (np.where(sa.zero_row, 0, beta - sa.E).astype(np.int64, copy=False),
                np.where(sb.zero_row, 0, beta - sb.E).astype(np.int64, copy=False))

    def speculative_shifts(self, scalars, table, sa, sb, k):
        raise NotImplementedError("the numpy backend does not speculate (speculates = False)")

    def recorded(self, key, run, a, b, valid):
        return run(a, b)  # nothing is recorded: every call runs its phases

    # -- exact integer GEMMs -----------------------------------------------------------
    def _mm(self, a, bt, exact_float=False):
        """Exact (..., m, k) @ (..., n, k)^T of int8 values (int8 arrays, or float arrays
        holding them) -> (..., m, n) int64: float32 BLAS on k-blocks of
        :data:`SGEMM_EXACT_K` (blas kind), an int64 matmul (int64 kind). ``exact_float``: the
        blas kind's exact sums as they are, float32 for one k-block, float64 for more (every
        partial sum an integer below 2**53), for readers that take any exact dtype — the
        conversions to float64 and int64 cost more than the GEMM at small k."""
        k = a.shape[-1]
        out_shape = a.shape[:-1] + (bt.shape[-2],)
        if k == 0:
            return np.zeros(out_shape, dtype=np.int64)
        if self.kind == "int64":
            return np.matmul(a.astype(np.int64), np.swapaxes(bt, -1, -2).astype(np.int64))
        acc = None
        for k0 in range(0, k, SGEMM_EXACT_K):
            k1 = min(k, k0 + SGEMM_EXACT_K)
            blk = np.matmul(a[..., k0:k1].astype(np.float32, copy=False),
                            np.swapaxes(bt[..., k0:k1], -1, -2).astype(np.float32, copy=False))
            if exact_float and k1 == k and acc is None:
                return blk
            acc = blk.astype(np.float64) if acc is None else acc + blk
        return acc if exact_float else acc.astype(np.int64)

    def second_window(self, x, E):
        from ..precision.planner import second_window

        return np.ascontiguousarray(second_window(x, E, np))

    def gemm_exact(self, a, bt):
        """Exact ``a @ bt.T`` of int8 (m, k) and (n, k) as int64 (m, n)."""
        return self._mm(a, bt)

    def gemm_complex_bound(self, qa, qbt, k, form):
        left, right, join = complex_bound_operands(form, qa[:, 0:2 * k:2], qa[:, 1:2 * k:2], qbt[:, 0:2 * k:2],
                                                   qbt[:, 1:2 * k:2], np)
        return join(self._mm(left, right))

    # -- product phases ----------------------------------------------------------------
    @contextlib.contextmanager
    def row_tiles(self, plan, a_components: int = 1, concurrent: bool = True, products: int = 1):
        """Row tiles of A within the memory budget. Workspace per row of A, with N the
        backend's moduli: residues (float64: 8 N k; int8 for the int64 kind, counted alike) +
        products (8 N n) + reconstruction limbs (8 (N + 2 L + 4) n); fixed: the residues of
        B (8 N n k); all times ``products`` (2 or 3 for the two forms of complex products,
        whose residue passes hold one more array of residues while they run)."""
        m, k, n = plan.shape
        N = len(self.residue_moduli(plan.moduli))
        L = constants_of(self.residue_moduli(plan.moduli)).limbs
        work = products + (products > 1)  # (the complex forms' residue passes: one array more)
        per_row = 8 * N * k * work + 8 * (2 * N + 2 * L + 6) * n * products
        fixed = 8 * N * n * k * work
        budget = self.memory_budget()
        if fixed + per_row > budget:
            raise MemoryError(
                f"ozgemm: this {m}x{k}x{n} product needs at least {(fixed + per_row) / 2**30:.2f} GiB of "
                f"workspace ({N} moduli), more than the budget of {budget / 2**30:.2f} GiB; split k, or "
                "raise the backend's memory_budget_bytes")
        tm = max(1, min(m, (budget - fixed) // per_row))
        yield [_Tile(i0, min(m, i0 + tm)) for i0 in range(0, m, tm)]

    def residue_moduli(self, n_moduli) -> tuple:
        """The moduli of this backend's residues for a plan of ``n_moduli`` table moduli (or
        the plan's tuple of moduli): the blas kind's own primes up to 2965821
        (:func:`~ozgemm.crt.moduli.wide_moduli`; primes = 1 mod 4 for moduli that split), the
        int64 kind's the plan's (the plain reference)."""
        if self.kind == "blas":
            return wide_moduli(n_moduli)
        return plan_moduli(n_moduli)

    def scaled_residues(self, mant, exp, shift, n_moduli):
        """:func:`~ozgemm.crt.residues.scaled_residues` modulo :meth:`residue_moduli`, in the
        dtype :meth:`residue_products` reads (float64 for the blas kind, int8 otherwise); the
        blas kind's one-component rows through the compiled kernel where installed
        (:func:`compiled_kernels`: the same integers)."""
        moduli = self.residue_moduli(n_moduli)
        if self.kind == "blas":
            ck = compiled_kernels() if mant.ndim == 2 else None  # (one-component rows)
            if ck is not None and all(m % 2 for m in moduli):
                out = np.empty((len(moduli),) + mant.shape, dtype=np.float64)
                return ck.scaled_residues(mant, exp, shift, moduli, out)
            return scaled_residues(mant, exp, shift, moduli, np, dtype=np.float64)
        return scaled_residues(mant, exp, shift, moduli, np)

    def residues(self, rows, stats, shift, n_moduli, i0=0, i1=None):
        """Scaled symmetric residues (N, r, k) modulo :meth:`residue_moduli` of rows
        ``i0:i1`` from the exact decomposition of the statistics (computed here where the
        statistics kept none), as float64 values (what the BLAS GEMM reads: no conversion
        pass) or int8 for the int64 kind."""
        mant, exp = (None, None) if stats is None else (stats.mant, stats.exp)
        if mant is None:
            mant, exp = split_float(rows, np)[:2]
        sl = (Ellipsis, slice(i0, i1), slice(None))
        return self.scaled_residues(mant[sl], exp[sl], shift[i0:i1], n_moduli)

    def residue_products(self, ra, rb, moduli):
        """Residues (N, ..., m, n) in [0, m_q) of the exact products, ``moduli`` those of
        :meth:`residue_moduli` (the blas kind takes any odd moduli up to
        :data:`~ozgemm.crt.moduli.WIDE_BOUND` with symmetric residues, float64 or any integer
        dtype).

        blas kind: float64 GEMMs on k-blocks of at most :data:`DGEMM_EXACT_K`, each block's
        sums c (exact integers, |c| <= 1024 ((p-1)/2)**2 < 2**51) reduced as
        r = c - p floor((c + 1/2) p^-1) in float64, then the blocks' residues added and reduced
        once more (sums below 2**53, exact). Exact: c + 1/2 is exact (|c| < 2**51), and
        (c + 1/2)/p = (2c + 1)/(2p) is never within 1/(2p) of an integer (p odd), while the
        computed quotient fl((c + 1/2) fl(1/p)) errs by at most |c + 1/2|/p (2**-52 + 2**-106),
        below 1/(2p) exactly when |c + 1/2| < 2**51 / (1 + 2**-54) — the condition that
        defines WIDE_BOUND — so the floor is right, and c - p floor(.) in [0, p) is exact
        (p floor(.) <= |c| + p < 2**53). int64 kind: int64 remainders."""
        if self.kind == "blas":
            k = ra.shape[-1]
            out_shape = ra.shape[:-1] + (rb.shape[-2],)
            if k == 0:
                return np.zeros(out_shape)
            acc = None
            for k0 in range(0, k, DGEMM_EXACT_K):
                k1 = min(k, k0 + DGEMM_EXACT_K)
                a_, b_ = (x[..., k0:k1].astype(np.float64, copy=False) for x in (ra, rb))
                if a_.ndim == 3 and b_.ndim == 3:
                    # one 2-D dgemm per modulus (B transposed by the BLAS call itself): numpy's
                    # stacked matmul over a transposed view took 157 against 140 ms at 1024 and
                    # 136 against 22 ms for thin products (k = 10)
                    blk = np.empty(out_shape)
                    for q in range(a_.shape[0]):
                        np.matmul(a_[q], b_[q].T, out=blk[q])
                else:  # stacked products: the transposed operand contiguous first (the same)
                    blk = np.matmul(a_, np.ascontiguousarray(np.swapaxes(b_, -1, -2)))
                self._reduce(blk, moduli)
                if acc is None:
                    acc = blk
                else:
                    acc += blk
            if k > DGEMM_EXACT_K:
                self._reduce(acc, moduli)
            return acc
        c = self._mm(ra, rb)
        m = np.asarray(moduli, dtype=c.dtype).reshape((-1,) + (1,) * (c.ndim - 1))
        return c % m

    def residues_3m(self, x, y, shift, n_moduli, i0=0, i1=None):
        """(rx, ry, rs): :meth:`residues` of rows ``i0:i1`` of ``x`` and ``y`` (two parts of one
        scaling) and the residues of the sum of their scaled integers (:meth:`_sum_residues`)."""
        rx = self.residues(x, None, shift, n_moduli, i0, i1)
        ry = self.residues(y, None, shift, n_moduli, i0, i1)
        return rx, ry, self._sum_residues(rx, ry, self.residue_moduli(n_moduli))

    @staticmethod
    def _sum_residues(x, y, moduli):
        """Symmetric residues of ``x + y`` (both from :meth:`residues`, same moduli): one step
        of m_q brings a sum of two symmetric residues back into the symmetric range."""
        m = np.asarray(moduli, dtype=np.int64).reshape((-1,) + (1,) * (x.ndim - 1))
        hi = (m - 1) // 2
        lo = -hi - (m % 2 == 0)
        s = x.astype(np.float64 if x.dtype == np.float64 else np.int16) + y
        s -= np.where(s > hi, m, 0).astype(s.dtype, copy=False)
        s += np.where(s < lo, m, 0).astype(s.dtype, copy=False)
        return s.astype(x.dtype, copy=False)

    def reconstruct_round_3m(self, p1, p2, p3, s, t_re, t_im, n_moduli, fmt, out_re, out_im, k):
        """The real part ``p1 - p2`` and the imaginary part ``p3 - p1 - p2`` (residues in
        [0, m_q) from :meth:`residue_products`, combined modulo each m_q in place, exactly in
        float64 or int64), each through :meth:`reconstruct_round`."""
        re, im = self._combine_3m(p1, p2, p3, self.residue_moduli(n_moduli))
        self.reconstruct_round(re, s, t_re, n_moduli, fmt, out_re)
        self.reconstruct_round(im, s, t_im, n_moduli, fmt, out_im)

    def residues_split(self, x, y, shift, moduli, i0=0, i1=None):
        """(rp, rm): symmetric residues of X' + t_q Y' and X' - t_q Y' (t_q a square root of -1
        modulo each of :meth:`residue_moduli` of the plan's ``moduli``) for rows ``i0:i1`` of
        the parts ``x``, ``y`` (one scaling), from :meth:`residues` of each: in float64 for the
        blas kind (|x +- t y| < 2**43, reduced exactly by :meth:`_reduce`), int64 for the int64
        kind."""
        rx = self.residues(x, None, shift, moduli, i0, i1)
        ry = self.residues(y, None, shift, moduli, i0, i1)
        mods = self.residue_moduli(moduli)
        col = (-1,) + (1,) * (rx.ndim - 1)
        t = np.asarray(split_factors(mods)[0], dtype=np.int64).reshape(col)
        m = np.asarray(mods, dtype=np.int64).reshape(col)
        h = (m - 1) // 2
        if rx.dtype == np.float64:  # in place: rx, ry and one more array at a time
            ry *= t.astype(np.float64)
            hf = h.astype(np.float64)
            rm = rx - ry
            rx += ry
            del ry
            for v in (rx, rm):
                v += hf
                self._reduce(v, mods)  # (v + h) mod m, then the symmetric residue
                v -= hf
            return rx, rm
        xi, ty = rx.astype(np.int64), ry.astype(np.int64) * t
        return tuple(((v + h) % m - h).astype(rx.dtype) for v in (xi + ty, xi - ty))

    def reconstruct_round_split(self, pp, pm, s, t_re, t_im, moduli, fmt, out_re, out_im, k):
        """The real part (pp + pm)/2 and the imaginary part (pp - pm)/(2 t_q) modulo each of
        :meth:`residue_moduli` (``pp``, ``pm``: residues in [0, m_q) from
        :meth:`residue_products` of :meth:`residues_split`; float64 below 2**44 before the
        exact reduction, or int64), each through :meth:`reconstruct_round`."""
        mods = self.residue_moduli(moduli)
        col = (-1,) + (1,) * (pp.ndim - 1)
        m = np.asarray(mods, dtype=np.int64).reshape(col)
        f_re, f_im = (np.asarray(f, dtype=np.int64).reshape(col) for f in split_factors(mods)[1:])
        if pp.dtype == np.float64:  # in place (the products are not needed again)
            im = pp - pm
            im += m
            im *= f_im.astype(np.float64)
            pp += pm
            del pm
            pp *= f_re.astype(np.float64)
            re = pp
            self._reduce(re, mods)
            self._reduce(im, mods)
        else:
            a, b = pp.astype(np.int64), pm.astype(np.int64)
            re = ((a + b) % m * f_re % m).astype(pp.dtype)
            im = ((a - b) % m * f_im % m).astype(pp.dtype)
            del a, b
        self.reconstruct_round(re, s, t_re, moduli, fmt, out_re)
        self.reconstruct_round(im, s, t_im, moduli, fmt, out_im)

    @staticmethod
    def _combine_3m(p1, p2, p3, moduli):
        m = np.asarray(moduli, dtype=p1.dtype).reshape((-1,) + (1,) * (p1.ndim - 1))
        p3 -= p1
        p3 -= p2
        p1 -= p2
        for c in (p1, p3, p3):  # p1 in (-m, m), p3 in (-2m, m)
            c += np.where(c < 0, m, 0).astype(c.dtype, copy=False)
        return p1, p3

    @staticmethod
    def _reduce(c, moduli):
        """c[q] <- c[q] - p_q floor((c[q] + 1/2) / p_q) in place (exact, see
        :meth:`residue_products`); per modulus, so the passes stay in cache (one compiled
        pass where installed, :func:`compiled_kernels`)."""
        ck = compiled_kernels()
        if ck is not None and c.flags.c_contiguous and c.dtype == np.float64:
            ck.reduce_residues(c, moduli)
            return
        for q, p in enumerate(moduli):
            x = c[q]
            t = x + 0.5
            t *= 1.0 / p
            np.floor(t, out=t)
            t *= -float(p)
            x += t

    def complex_embedding(self, a, b):
        """:func:`ozgemm.precision.operands.complex_embedding` (the array expressions)."""
        return complex_embedding(a, b, np)

    def complex_operands(self, a, b):
        """:func:`ozgemm.precision.operands.complex_operands` (the array expressions)."""
        return complex_operands(a, b, np)

    # -- stacks (ozgemm.stacks) ---------------------------------------------------------
    def stack_supports(self, fmt, k):
        """Every result format and k run as stacks here."""
        return True

    def stack_workspace(self, n_moduli, Q, m, n, k, shared=None):
        """Bytes a group of ``Q`` products takes: float64 residues (a ``shared`` operand's
        once), products and the reconstruction's limbs (as :meth:`row_tiles` counts a 2-D
        product)."""
        mods = self.residue_moduli(n_moduli)
        N, L = len(mods), constants_of(mods).limbs
        rows = Q * (m + n) - (Q - 1) * {"a": m, "b": n}.get(shared, 0)
        return 8 * N * rows * k + Q * 8 * (2 * N + 2 * L + 6) * m * n

    def stack_scalars(self, sa, sb, shape, bits, k, u, flag=None):
        """Per product of a stack, the planner's six scalars as int64 (P, 6)
        (:func:`~ozgemm.precision.planner.stack_plan_scalars` over one stacked bound GEMM);
        ``shape`` = (P, m, n, a_shared, b_shared): a shared operand's statistics are one
        product's, its bound GEMM one 2-D GEMM against the stacked rows of the other. The
        minimal widths and upper bounds in one compiled pass where installed
        (:func:`compiled_kernels`: the same integers)."""
        P, m, n, a_sh, b_sh = shape
        Pa, Pb = (1 if a_sh else P), (1 if b_sh else P)
        qa, qb = sa.q.reshape(Pa * m, k), sb.q.reshape(Pb * n, k)
        # (exact sums in float32 or float64: both readers of lb take any exact dtype)
        if b_sh:  # every product's rows against the one B
            lb = self._mm(qa, qb, exact_float=True).reshape(P, m, n)
        elif a_sh:
            lb = self._mm(qb, qa, exact_float=True).reshape(P, n, m).transpose(0, 2, 1)
        else:
            lb = self._mm(qa.reshape(P, m, k), qb.reshape(P, n, k), exact_float=True)
        ck = compiled_kernels()
        widths = None if ck is None else ck.stack_plan_widths(
            lb, sa.width.reshape(Pa, m), sb.width.reshape(Pb, n), sa.norm1.reshape(Pa, m), sb.norm1.reshape(Pb, n),
            sa.qsum.reshape(Pa, m), sb.qsum.reshape(Pb, n), *width_constants(bits, k, u))
        return stack_plan_scalars(sa, sb, lb, bits, k, u, np, widths=widths)

    def stack_residues(self, st, sel, shift, n_moduli):
        """Residues (N, Q, r, k) of the products ``sel`` (indices, or None: the one product of a
        shared operand) from the exact decomposition in ``st``, scaled by ``shift`` (Q, r)."""
        Q, r = shift.shape
        k = st.mant.shape[-1]
        mant, exp = st.mant.reshape(-1, r, k), st.exp.reshape(-1, r, k)
        if sel is None:
            mant, exp = mant[:1], exp[:1]
        elif not (len(sel) == mant.shape[0] and (np.diff(sel) == 1).all()):
            mant, exp = mant[sel], exp[sel]
        res = self.scaled_residues(mant.reshape(Q * r, k), exp.reshape(Q * r, k), shift.reshape(-1), n_moduli)
        return res.reshape(res.shape[0], Q, r, k)

    def stack_products(self, ra, rb, moduli, shared=None):
        """Residues (N, Q, m, n) of the products: pairwise (``shared`` None), every A against
        the one B ("b": one GEMM of Q m rows), or the one A against every B ("a")."""
        N, Qa, m, k = ra.shape
        Qb, n = rb.shape[1:3]
        if shared is None:
            return self.residue_products(ra, rb, moduli)
        if shared == "b":
            return self.residue_products(ra.reshape(N, Qa * m, k), rb.reshape(N, n, k), moduli).reshape(N, Qa, m, n)
        c = self.residue_products(ra.reshape(N, m, k), rb.reshape(N, Qb * n, k), moduli)
        return c.reshape(N, m, Qb, n).transpose(0, 2, 1, 3)

    def stack_reconstruct(self, c, s, t, n_moduli, fmt, shared=None):
        """The products' results (the storage of ``fmt`` for (Q, m, n)) scaled by
        2**-(s_zi + t_zj), ``s`` (Q or 1, m), ``t`` (Q or 1, n)."""
        return self.reconstruct_exponents(c, n_moduli, -(s[:, :, None] + t[:, None, :]), fmt)

    def reconstruct_exponents(self, c, n_moduli, e, fmt):
        """:func:`~ozgemm.crt.reconstruct.reconstruct_round` of residues ``c`` from
        :meth:`residue_products` scaled by ``2**e``: the result storage of ``fmt`` (binary64,
        binary32 and dd results of the blas kind through the compiled kernel where installed,
        :func:`compiled_kernels`: the same bits)."""
        moduli, bound = self.residue_moduli(n_moduli), self._bound(n_moduli)
        ck = compiled_kernels() if fmt.name in ("binary64", "binary32", "dd") and bound is not None else None
        if ck is not None and len(moduli) <= 31 and 4 * bound <= constants_of(moduli).M:
            W, eoM, Mi = _compiled_constants(moduli, bound)
            if W.shape[1] <= ck.LMAX:
                shape = c.shape[1:]
                cf = np.ascontiguousarray(c, dtype=np.float64).reshape(c.shape[0], -1)
                ef = np.ascontiguousarray(np.broadcast_to(e, shape), dtype=np.int64).reshape(-1)
                if fmt.name == "dd":
                    bits = ck.crt_round_dd_bits(cf, ef, W, eoM, Mi, np.empty((2, cf.shape[1]), dtype=np.uint64))
                    return bits.view(np.float64).reshape((2,) + shape)
                bits = ck.crt_round_bits(cf, ef, W, eoM, Mi, fmt.p, fmt.emin_sub, fmt.emax,  # (bias = emax)
                                         np.empty(cf.shape[1], dtype=np.uint64))
                if fmt.name == "binary64":
                    return bits.view(np.float64).reshape(shape)
                return bits.astype(np.uint32).view(np.float32).reshape(shape)
        return reconstruct_round(c, moduli, e, fmt, np, bound=bound)

    def _bound(self, n_moduli):
        """|C'| < M/2 + 1 for the plan's M: with the blas kind's P >= 4 M, the margin that lets
        :func:`~ozgemm.crt.reconstruct.crt_reconstruct` round its quotient (None: int64 kind)."""
        return prod(plan_moduli(n_moduli)) // 2 + 1 if self.kind == "blas" else None

    def reconstruct_exact(self, c, n_moduli, m, n):
        """:func:`~ozgemm.crt.reconstruct.crt_reconstruct` of the products ``c`` (N, m, n)."""
        mag, neg = crt_reconstruct(c[:, :m, :n].reshape(c.shape[0], -1), self.residue_moduli(n_moduli), np,
                                   self._bound(n_moduli))
        return mag.reshape((mag.shape[0], m, n)), neg.reshape(m, n)

    def reconstruct_round(self, c, s, t, n_moduli, fmt, out):
        out[...] = self.reconstruct_exponents(c, n_moduli, -(s[:, None] + t[None, :]), fmt)
        return out

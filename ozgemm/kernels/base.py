"""The backend interface: one method per phase of the pipelines, for one array library.

A backend computes what a plan asks for; it never decides anything a plan decides. The
plan (shifts, integer width, moduli or slices, bound) depends on the contract and the data
only, so every backend gives the same bits: the integers a backend returns are exact, and
where it computes a planning quantity itself (the CUDA backend's fused statistics and
planner scalars), those integers equal the ones of :mod:`ozgemm.precision` (tested in
``tests/test_backends.py``).

Phases, in pipeline order (Ozaki scheme II, :mod:`ozgemm.crt.pipeline`; Ozaki scheme I,
:mod:`ozgemm.ozaki.pipeline`, uses the statistics, the bound GEMM and :meth:`gemm_exact`):

1. non-finite pass          :meth:`Backend.nonfinite_rows_cols`
2. row/column statistics    :meth:`Backend.row_stats`
3. bound GEMM + scalars     :meth:`Backend.gemm_exact`, :meth:`Backend.plan_scalars`
   (normwise contracts: :meth:`Backend.normwise_scalars`, no bound GEMM)
4. shifts                   :meth:`Backend.shifts`, :meth:`Backend.speculative_shifts`
   (phases 2-7 of a small speculative product may be replayed: :meth:`Backend.recorded`)
5. scaling + residues       :meth:`Backend.residues`
   (complex products: :meth:`Backend.residues_split` for moduli with a square root of -1,
   :meth:`Backend.residues_3m` for the three-product form)
6. exact integer GEMMs      :meth:`Backend.residue_products`
7b. complex: both parts     :meth:`Backend.reconstruct_round_split`, :meth:`Backend.reconstruct_round_3m`
7. reconstruction + rounding :meth:`Backend.reconstruct_round`

plus the workspace tiling of the product over rows of A (:meth:`Backend.row_tiles`), and
the same phases over a whole stack of products for :mod:`ozgemm.stacks`
(:meth:`Backend.stack_scalars`, :meth:`Backend.stack_residues`,
:meth:`Backend.stack_products`, :meth:`Backend.stack_reconstruct`).
"""
from __future__ import annotations

from typing import Any, ContextManager, Iterable, Protocol, runtime_checkable

__all__ = ["Backend", "Tile"]


class Tile(Protocol):
    """Rows ``i0:i1`` of A, computed as one unit; entering it selects where its work runs
    (the CUDA backend's side streams), leaving it returns to the caller's order."""

    i0: int
    i1: int

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc) -> Any: ...


@runtime_checkable
class Backend(Protocol):
    """Exact integer GEMMs and the elementwise phases for one array library.

    Attributes
    ----------
    name : str              "cpu", "cpu-int64" or "cuda"
    xp : module             numpy or cupy
    speculates : bool       :meth:`speculative_shifts` can derive the width on the device
                            (the plan's moduli count guessed, confirmed after queuing)
    flags_nonfinite : bool  :meth:`row_stats` sets the NaN/Inf flag it is given (the
                            separate non-finite pass is then needed only when it is set)
    stack_shares_operands : bool
                            a stack's shared (broadcast) operand is kept once and its
                            residues computed once per width group (True), or copied for
                            every product so that products group by moduli count only
                            (False: where each group costs kernel launches)
    stack_chunk_bytes : int or None
                            a stack's group of products runs in chunks of about this much
                            workspace per chunk (:meth:`stack_workspace`, a shared operand's
                            residues apart: once per group), so that its residues, products
                            and reconstruction stay in cache (None: each group at once)
    """

    name: str
    xp: Any
    speculates: bool

    flags_nonfinite: bool
    stack_shares_operands: bool
    stack_chunk_bytes: int | None

    def workspace_budget(self) -> tuple:
        """(tile budget, hard limit): bytes of workspace one product may use."""

    def synchronize(self) -> None:
        """Wait for queued work (per-phase timings)."""

    # -- planning phases ---------------------------------------------------------------
    def check_planning_memory(self, m: int, k: int, n: int) -> None:
        """Raise MemoryError, naming the numbers, when the statistics of an m x k x n
        product cannot fit the budget (a backend that allocates lazily may do nothing)."""

    def nonfinite_rows_cols(self, a, b):
        """Rows of ``a`` (m, k) and columns of ``b`` (k, n) holding NaN/Inf: (bad_rows (m,)
        bool array, bad_cols (n,) bool array, any: bool)."""

    def row_stats(self, x, nonfinite=None):
        """:class:`~ozgemm.precision.stats.RowStats` of the rows of ``x``, (r, k) float32/64
        or (C, r, k) float64 components; ``nonfinite`` (a (1,) int32 array or None) is set to
        1 when ``x`` holds NaN/Inf (only backends whose statistics see it; None otherwise)."""

    def gemm_exact(self, a, bt):
        """Exact ``a @ bt.T`` of int8 arrays (m, k) and (n, k): an integer array (m, n)."""

    def gemm_complex_bound(self, qa, qbt, k: int, form: str):
        """A complex product's bound GEMM ``join(left @ right^T)`` of
        :func:`ozgemm.precision.planner.complex_bound_operands` (``form``: "half" (m, n);
        "full", "a_real", "b_real" (m, 2n)), an integer array, from the 7-bit magnitudes ``qa``
        (m, >= 2k) of A's rows and ``qbt`` (n, >= 2k) of B's columns, each interleaved: entry 2l
        the real part of term l, 2l + 1 its imaginary part
        (:func:`ozgemm.precision.planner.statistics` with ``embedding``)."""

    def second_window(self, x, E):
        """The second window of the magnitudes of ``x`` (r, k) float32/64, any layout, rows'
        exponents ``E`` (r,): int8 (r, k) C-contiguous, equal to
        :func:`ozgemm.precision.planner.second_window`."""

    def plan_scalars(self, sa, sb, lb, bits: int, k: int, u: float, flag=None, lb_shift: int = 0):
        """The planner's scalars from the statistics and the bound GEMM ``lb`` (units of
        2**-(14 + lb_shift)) as a (6,) or, with ``flag``, (7,) int64 array equal to
        :func:`ozgemm.precision.planner.plan_scalars`."""

    def normwise_scalars(self, sa, sb, table, k: int, flag=None):
        """A normwise plan's data in the layout of :meth:`plan_scalars` (no host read): equal
        to :func:`ozgemm.precision.planner.normwise_scalars` with ``table`` (the host's
        :func:`~ozgemm.precision.planner.normwise_thresholds`) on this backend."""

    def shifts(self, beta: int, sa, sb):
        """(s, t): int64 row shifts of A and column shifts of B, ``where(zero, 0, beta - E)``."""

    def speculative_shifts(self, scalars, table, sa, sb, k: int):
        """(s, t, pending) with the width derived on the device from ``scalars`` and the
        thresholds ``table`` (:func:`~ozgemm.precision.planner.speculative_thresholds`);
        ``pending.read()`` returns the host values [scalars..., width]. Only where
        :attr:`speculates`."""

    def recorded(self, key, run, a, b, valid):
        """``run(a, b)``: one speculative 2-D product (planning and pipeline queued with no
        host read; returns ``(plan, C, extra)``), or its replay from a recording of the same
        ``key`` (contract, shapes, dtypes) with ``plan.pending`` already read, bit for bit the
        same result (CUDA: graphs of small products, :mod:`ozgemm.kernels.cuda.graphs`).
        ``valid(plan)``: whether a recorded plan's guessed moduli count still holds."""

    # -- product phases ----------------------------------------------------------------
    def row_tiles(self, plan, a_components: int = 1, concurrent: bool = True,
                  products: int = 1) -> ContextManager[Iterable[Tile]]:
        """The product's row tiles within the backend's workspace budget (``products``: product
        buffers per tile: 2 for the split form of complex products, 3 for the three-product
        form): a context whose
        exit waits for every tile, giving an iterable of tiles (``concurrent=False``: tiles one
        after another, for per-phase timings). Raises MemoryError with the numbers when even
        the smallest tile does not fit — on entering (numpy: before any workspace is
        allocated) or on first iteration (CUDA: after B's residues are queued)."""

    def residue_moduli(self, n_moduli) -> tuple:
        """The moduli of the backend's residues for a plan of ``n_moduli`` table moduli, or for
        a plan's tuple of moduli (:func:`~ozgemm.crt.moduli.plan_moduli`): the plan's own, or
        the backend's own set whose product is at least theirs (e.g. the CPU engine's primes up
        to 2965821; = 1 mod 4 where the plan's moduli split,
        :func:`~ozgemm.crt.moduli.splits`): what :meth:`residues` reduces modulo, and what
        :meth:`residue_products` is given. The complex forms' methods and the reconstruction
        (:meth:`residues_3m`, :meth:`residues_split`, :meth:`reconstruct_round`,
        :meth:`reconstruct_round_3m`, :meth:`reconstruct_round_split`) take either form; the
        other methods that take ``n_moduli`` take a count."""

    def residues(self, rows, stats, shift, n_moduli: int, i0: int = 0, i1: int | None = None):
        """Symmetric residues (N, r, k) modulo :meth:`residue_moduli` (int8 for the table
        moduli) of rows ``i0:i1`` of ``rows`` (the float rows the
        statistics ``stats`` describe, (r, k) or (C, r, k); ``stats`` None: rows read as
        they are) scaled by ``2**shift`` and
        rounded (:func:`ozgemm.crt.residues.scaled_residues`); the layout (padding) is the
        backend's, for its own :meth:`residue_products`."""

    def residues_3m(self, x, y, shift, n_moduli: int, i0: int = 0, i1: int | None = None):
        """(rx, ry, rs): :meth:`residues` (``stats`` None) of rows ``i0:i1`` of ``x`` and ``y``
        (two parts of one scaling ``shift``, the same shape) and the residues of the sum of
        their scaled integers X' + Y' (the summed operands of the three-product form), all in
        the layout of :meth:`residues`."""

    def residues_split(self, x, y, shift, moduli, i0: int = 0, i1: int | None = None):
        """(rp, rm): the split form of a complex product (the plan's ``moduli`` split,
        :func:`~ozgemm.crt.moduli.splits`): the symmetric residues of X' + t_q Y' and
        X' - t_q Y' modulo each of :meth:`residue_moduli` (t_q a square root of -1 there,
        :func:`~ozgemm.crt.moduli.sqrt_minus_one`) for rows ``i0:i1`` of the parts ``x`` and
        ``y`` (one scaling ``shift``), in the layout of :meth:`residues`."""

    def reconstruct_round_split(self, pp, pm, s, t_re, t_im, moduli, fmt, out_re, out_im, k: int):
        """The split form's parts: from the products ``pp``, ``pm`` (:meth:`residue_products`
        of :meth:`residues_split`, inner dimension ``k``) the real part (pp + pm)/2 and the
        imaginary part (pp - pm)/(2 t_q) modulo each modulus, each as :meth:`reconstruct_round`
        (column shifts ``t_re``, ``t_im``) into ``out_re``, ``out_im``; may overwrite the
        products."""

    def reconstruct_round_3m(self, p1, p2, p3, s, t_re, t_im, n_moduli: int, fmt, out_re, out_im, k: int):
        """The three-product form of a complex product: from ``p1 = Ar'Br'``, ``p2 = Ai'Bi'``
        and ``p3 = (Ar' + Ai')(Br' + Bi')`` (:meth:`residue_products`, inner dimension ``k``)
        the real part ``p1 - p2`` and imaginary part ``p3 - p1 - p2``, each as
        :meth:`reconstruct_round` (column shifts ``t_re``, ``t_im``) into ``out_re``,
        ``out_im``; may overwrite the products."""

    def residue_products(self, ra, rb, moduli):
        """The exact products ``ra[q] @ rb[q].T`` for every modulus of ``moduli``
        (:meth:`residue_moduli`), in the backend's own
        representation for :meth:`reconstruct_round` (exact integers or their residues)."""

    def reconstruct_round(self, c, s, t, n_moduli: int, fmt, out):
        """The exact CRT reconstruction of ``c`` (:mod:`ozgemm.crt.reconstruct`) and one
        correctly rounded conversion to ``fmt`` of the integers times ``2**-(s_i + t_j)``
        (:mod:`ozgemm.precision.rounding`), written into ``out`` (m, n) (dd: (2, m, n);
        binary128: (m, n, 2) uint64)."""

    def reconstruct_exact(self, c, n_moduli: int, m: int, n: int):
        """The exact CRT reconstruction of the first ``m`` rows and ``n`` columns of ``c``
        (:meth:`residue_products`) without rounding: (mag (L, m, n) uint64 base-2**32 limbs
        of |C'|, neg (m, n) bool) — what the band pipeline sums
        (:func:`ozgemm.crt.pipeline.execute_bands`)."""

    def complex_embedding(self, a, b):
        """The real embedding of a complex product, equal to
        :func:`ozgemm.precision.operands.complex_embedding` (A = [Ar | Ai], B = [[Br, Bi],
        [-Bi, Br]])."""

    def complex_operands(self, a, b):
        """What the three-product form reads of a complex product, equal to
        :func:`ozgemm.precision.operands.complex_operands` (A's rows with the parts
        interleaved, B's top block row [Br | Bi])."""

    # -- stacks (ozgemm.stacks): every phase once over a stack of products -------------
    def stack_supports(self, fmt, k: int) -> bool:
        """Whether a stack with results in ``fmt`` and inner dimension ``k`` runs as one
        computation here (otherwise it is computed product by product)."""

    def stack_workspace(self, n_moduli: int, Q: int, m: int, n: int, k: int, shared=None) -> int:
        """Bytes of workspace a group of ``Q`` products of m x k x n takes; ``shared`` ("a" or
        "b"): that operand is one for the whole group, its residues counted once."""

    def stack_scalars(self, sa, sb, shape, bits: int, k: int, u: float, flag=None):
        """Per product the planner's six scalars (:meth:`plan_scalars`) as a host int64
        (P, 6) array, or None when ``flag`` (the statistics' NaN/Inf flag) is set; ``shape`` =
        (P, m, n, a_shared, b_shared), ``sa``/``sb`` the statistics of the stacked rows of A and
        columns of B (one product's when shared)."""

    def stack_residues(self, st, sel, shift, n_moduli: int):
        """Residues (N, Q, r', k') of the products ``sel`` (host indices; None: the one
        product of a shared operand) of the operand whose statistics are ``st``, scaled by
        ``shift`` (Q, r); the padding r' >= r, k' >= k is the backend's."""

    def stack_products(self, ra, rb, moduli, shared=None):
        """The exact products of :meth:`stack_residues`, pairwise per product (``shared``
        None), or against the one B ("b") or the one A ("a"), for :meth:`stack_reconstruct`."""

    def stack_reconstruct(self, c, s, t, n_moduli: int, fmt, shared=None):
        """The products' results (the storage of ``fmt`` for (Q, m, n)) from
        :meth:`stack_products`, with row shifts ``s`` (Q or 1, m) and column shifts ``t``
        (Q or 1, n): reconstructed exactly and rounded once."""

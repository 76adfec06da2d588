"""The engine interface: the only place where an array library's integer GEMM is called."""
from __future__ import annotations

__all__ = ["Engine"]


class Engine:
    """Exact integer GEMMs for one array library.

    Attributes
    ----------
    name : str
    xp : module    numpy or cupy

    Both GEMMs take their operands K-contiguous (``a`` is m x k, ``bt`` is n x k: the
    TN layout that INT8 tensor cores run fastest in) and return exact results.
    """

    name = "abstract"
    xp = None

    def gemm_exact(self, a, bt):
        """Exact ``a @ bt.T`` of int8 arrays (m, k) and (n, k) as an integer array (m, n): int64,
        or int32 where every sum fits (the CUDA engine returns its int32 GEMM output)."""
        raise NotImplementedError

    def gemm_residues(self, a, bt, moduli):
        """Residues of the exact products, one per modulus.

        Parameters
        ----------
        a : (N, m, k) int8     symmetric residues of scaled A, one slab per modulus
        bt : (N, n, k) int8    symmetric residues of scaled B^T
        moduli : tuple of N ints

        Returns
        -------
        (N, m, n) int32 or int64 with entry [q] = (a[q] @ bt[q].T) mod moduli[q], in [0, moduli[q]).
        """
        raise NotImplementedError

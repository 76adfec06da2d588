"""How close the fp64 contract is to one modulus fewer (NOTES.md GPU v7, "Why fp64 16384 needs
17 moduli"): the planner's quantities for inputs of the bench's distribution on the CPU.

For a sample of m = n rows/columns and the full k: minimal width beta_min and the bound S the
planner uses (row_stats, plan_scalars, _s_bound, _componentwise_choice), the largest S with
which nmod - 1 moduli would still hold beta_min (M > 2 Cmax exactly, Fractions), the exact-ish
max_ij sum_l |a~_il||b~_lj| (a float64 GEMM of the normalised magnitudes: relative error
~1e-12, enough to compare with the threshold), and the upper bound an 8-bit offset
quantisation in the bound GEMM would give. Inputs: numpy default_rng(seed),
(rand - 0.5) * exp(0.5 * randn) (the bench's distribution; the bench draws on the GPU).

Usage: python benchmarks/moduli_margin.py --k 16384 --m 1024 4096
"""
import argparse
import math
from fractions import Fraction

import numpy as np

import ozgemm
from ozgemm.crt.moduli import moduli_product
from ozgemm.kernels import get_engine
from ozgemm.precision.planner import _componentwise_choice, _max_beta_for, _s_bound, plan_scalars
from ozgemm.precision.stats import row_stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, nargs="+", default=[8192, 16384])
    ap.add_argument("--m", type=int, nargs="+", default=[1024])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    eng = get_engine("cpu")
    c = ozgemm.load_contract("fp64")
    for k in args.k:
        for m in args.m:
            rng = np.random.default_rng(args.seed)
            a = (rng.random((m, k)) - 0.5) * np.exp(0.5 * rng.standard_normal((m, k)))
            b = (rng.random((k, m)) - 0.5) * np.exp(0.5 * rng.standard_normal((k, m)))
            sa, sb = row_stats(a, np), row_stats(b.T, np)
            lb = eng.gemm_exact(sa.q, sb.q)
            host = plan_scalars(sa, sb, lb, c.bits, k, c.fmt.u, np)
            S = _s_bound(host, k)
            nmod, beta, _ = _componentwise_choice(c, host, sa, sb, k, 1)
            bmin = int(host[0])
            M1 = moduli_product(nmod - 1)
            s_max = (Fraction(M1, 2) - (1 << bmin) * k - k) / 2 ** (2 * bmin)  # need S < s_max
            at = np.abs(a) * np.exp2(-sa.E.astype(float))[:, None]
            bt = np.abs(b.T) * np.exp2(-sb.E.astype(float))[:, None]
            exact = float((at @ bt.T).max())
            q8a, q8b = np.floor(at * 256), np.floor(bt * 256)
            ub8 = float(((q8a @ q8b.T) + q8a.sum(1)[:, None] + q8b.sum(1)[None, :] + k).max()) / 2**16
            print(f"k={k} m=n={m}: beta_min={bmin}, S={float(S):.2f} -> {nmod} moduli (beta {beta}); "
                  f"{nmod - 1} moduli hold beta_min={bmin} iff S < {float(s_max):.3f} "
                  f"(beta <= {_max_beta_for(M1, S, k)} at this S); exact max sum|a~||b~| = {exact:.3f}; "
                  f"8-bit bound {ub8:.2f}", flush=True)


if __name__ == "__main__":
    main()

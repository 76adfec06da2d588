"""How often does the planner's width of an entry need its regime comparisons? (NOTES.md GPU v9)

For the bench's input distribution, computes on the CPU (numpy planner quantities) the
per-entry t_d = need((a_i + b_j + K) fac) of ``planner.required_beta`` and lo = min(w_i, v_j):
where t_d < lo the entry's width is t_d itself (plan_scalars_i32 v5's fast pass).

Usage: python benchmarks/plan_width_regimes.py [--m 1024] [--k 8192] [--bits 53]
"""
import argparse

import numpy as np

from ozgemm.precision import planner
from ozgemm.precision.stats import LB_BITS, row_stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=1024)
    ap.add_argument("--k", type=int, default=8192)
    ap.add_argument("--bits", type=int, default=53)
    args = ap.parse_args()
    n, k, bits = args.m, args.k, args.bits
    rng = np.random.default_rng(0)
    A = (rng.random((n, k)) - 0.5) * np.exp(0.5 * rng.standard_normal((n, k)))
    B = (rng.random((k, n)) - 0.5) * np.exp(0.5 * rng.standard_normal((k, n)))
    sa, sb = row_stats(A, np), row_stats(B.T.copy(), np)
    lb = sa.q.astype(np.int64) @ sb.q.astype(np.int64).T
    u = 2.0 ** -bits
    beta = planner.required_beta(sa, sb, lb, bits, k, u, np)
    fac = (1.0 + u) * (1.0 + 2.0 ** -40)
    R = np.ldexp(lb.astype(np.float64), -(bits - 1) - 2 * LB_BITS)
    z = (sb.norm1[None, :] + sa.norm1[:, None] + k * 2.0 ** (1 - bits)) * fac
    t_d = planner._ceil_log2_ratio(z, R, np) - 1
    lo = np.minimum(sa.width[:, None], sb.width[None, :])
    print(f"m = n = {n}, k = {k}, bits = {bits}: minimal width {int(beta)}")
    print(f"row widths {sa.width.min()}..{sa.width.max()}, column widths {sb.width.min()}..{sb.width.max()}")
    print(f"t_d {t_d.min()}..{t_d.max()}; entries with t_d >= lo (regime pass): {(t_d >= lo).mean():.6f}")


if __name__ == "__main__":
    main()

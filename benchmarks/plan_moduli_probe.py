"""How many moduli the fp64 contract's componentwise proof needs at k = 16384 (CPU planner).

    PYTHONPATH=. python3 benchmarks/plan_moduli_probe.py [m] [k] [n]

Inputs (rand - 0.5) * exp(0.5 * randn), numpy default_rng(0) (the bench's distribution; the
GPU bench draws with CuPy, so not the same numbers). Prints the plan of the shipped "fp64"
contract (moduli "auto") and the planner's answer for the same contract with 16 fixed moduli.
A 16384^3 plan needs about 24 GiB on the CPU; an m = n = 2048 sample keeps k.
"""
import dataclasses
import sys
import time

import numpy as np

import ozgemm
from ozgemm import load_contract
from ozgemm import ContractError


def main(m=2048, k=16384, n=2048):
    rs = np.random.default_rng(0)
    a = (rs.random((m, k)) - 0.5) * np.exp(0.5 * rs.standard_normal((m, k)))
    b = (rs.random((k, n)) - 0.5) * np.exp(0.5 * rs.standard_normal((k, n)))
    t = time.time()
    p = ozgemm.plan(a, b, "fp64")
    print(f"fp64 (moduli auto), {m}x{k}x{n}: {p.info()} ({time.time() - t:.1f} s)")
    c16 = dataclasses.replace(load_contract("fp64"), moduli=16, name="fp64-16")
    try:
        print("16 fixed moduli:", ozgemm.plan(a, b, c16).info())
    except ContractError as e:
        print("16 fixed moduli: ContractError:", e)


if __name__ == "__main__":
    main(*(int(x) for x in sys.argv[1:]))

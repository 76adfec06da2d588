"""CPU benchmark of the fp64 and fp32 contracts against numpy.matmul, with accuracy. Equivalent to

    ozgemm bench --device cpu --sizes 256 512 1024 --contracts fp64 fp32 --ref-sizes 512 1024

Run: python benchmarks/cpu_bench.py [--json out.json]
"""
import sys

from ozgemm.cli import main

if __name__ == "__main__":
    argv = ["bench", "--device", "cpu", "--sizes", "256", "512", "1024", "--contracts", "fp64", "fp32",
            "--ref-sizes", "512", "1024"] + sys.argv[1:]
    sys.exit(main(argv))

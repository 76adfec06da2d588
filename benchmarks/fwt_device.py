"""One-shot device run for ozgemm.fwt: (1) sweep the row-kernel configurations (each one
checked exactly, the fastest adopted), (2) GPU + CPU tests with the adopted configurations,
(3) the benchmark (table printed last).

    cd <repo>; PYTHONPATH=. PYTHONUNBUFFERED=1 python3 benchmarks/fwt_device.py [--no-tune] [--no-tests]

Writes $OUT/fwt_tuned.json, $OUT/fwt_junit.xml and $OUT/fwt_bench.json when $OUT is set.
"""
import os
import subprocess
import sys
import time

out = os.environ.get("OUT", "/tmp")
t0 = time.time()
subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total",
                "--format=csv"], check=False)
import json  # noqa: E402

from ozgemm.fwt import _cuda  # noqa: E402
from ozgemm.fwt.bench import main, tune  # noqa: E402

# 1. sweep the row-kernel configurations (each checked exactly), adopt the fastest
#    (--no-tune: keep the committed ROW_TUNED, i.e. test and benchmark the code as it is)
if "--no-tune" not in sys.argv:
    best = tune()
    _cuda.ROW_TUNED.clear()  # the sweep's table replaces the committed one (as it would be committed)
    _cuda.ROW_TUNED.update(best)
    with open(os.path.join(out, "fwt_tuned.json"), "w") as f:
        json.dump({f"{k[0]}:{k[1]}": v for k, v in best.items()}, f)
    print("ROW_TUNED =", {k: v for k, v in sorted(best.items())}, f"[{time.time() - t0:.0f} s]", flush=True)

# 2. tests, in this process so that they run with the adopted configurations
if "--no-tests" not in sys.argv:
    import pytest  # noqa: E402

    rc = pytest.main(["tests/test_fwt_gpu.py", "tests/test_fwt.py", "-q", "-p", "no:cacheprovider", "--durations=8",
                      f"--junitxml={os.path.join(out, 'fwt_junit.xml')}"])
    print("pytest exit code:", int(rc), f"[{time.time() - t0:.0f} s]", flush=True)

# 3. benchmark with the adopted configurations (table printed last)
main(dtypes=["float16", "float32", "float64"], lmin=8, lmax=22, mbytes=256, reps=20,
     json_path=os.path.join(out, "fwt_bench.json"))
print(f"total {time.time() - t0:.0f} s")

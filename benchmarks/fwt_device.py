"""One-shot device run for ozgemm.fwt: GPU tests, then the benchmark (table printed last).

    cd <repo>; PYTHONPATH=. PYTHONUNBUFFERED=1 python3 benchmarks/fwt_device.py

Writes $OUT/fwt_pytest.txt and $OUT/fwt_bench.json when $OUT is set.
"""
import os
import subprocess
import sys
import time

out = os.environ.get("OUT", "/tmp")
t0 = time.time()
subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total",
                "--format=csv"], check=False)
skip_tests = "--no-tests" in sys.argv
if not skip_tests:
    r = subprocess.run([sys.executable, "-m", "pytest", "tests/test_fwt_gpu.py", "tests/test_fwt.py", "-q",
                        "-x" if "--x" in sys.argv else "-q", "-p", "no:cacheprovider"],
                       capture_output=True, text=True)
    txt = r.stdout + r.stderr
    with open(os.path.join(out, "fwt_pytest.txt"), "w") as f:
        f.write(txt)
    lines = txt.strip().splitlines()
    fails = [l for l in lines if l.startswith(("FAILED", "ERROR"))]
    print("\n".join(fails[:40]))
    print("pytest:", lines[-1] if lines else "(no output)", f"[{time.time() - t0:.0f} s]", flush=True)

from ozgemm.fwt import _cuda  # noqa: E402
from ozgemm.fwt.bench import main  # noqa: E402

variants = ("plain", "mma")
import numpy as np  # noqa: E402

# float16 both variants; float32/float64 the default
main(dtypes=["float16"], lmin=8, lmax=22, mbytes=256, reps=20,
     json_path=os.path.join(out, "fwt_bench_f16.json"), variants=("plain", "mma"))
main(dtypes=["float32", "float64"], lmin=8, lmax=22, mbytes=256, reps=20,
     json_path=os.path.join(out, "fwt_bench.json"))
print(f"total {time.time() - t0:.0f} s")

"""One-shot device run for ozgemm.fwt: (1) sweep the row-kernel configurations (each one
checked exactly, the fastest adopted), (2) GPU + CPU tests with the adopted configurations,
(3) the benchmark (table printed last).

    cd <repo>; PYTHONPATH=. PYTHONUNBUFFERED=1 python3 benchmarks/fwt_device.py [--no-tune] [--no-tests]
        [--tune-L 12-15] [--tune-dtypes float16 float32 float64] [--tune-pipe | --tune-split | --tune-mma-only]
        [--no-full-bench]

``--tune-L A-B`` (or a comma list) restricts the sweep to these row lengths (log2): the
committed ``ROW_TUNED`` is kept for the other lengths; for a swept (dtype, L) the sweep's
fastest configuration is adopted only where it measured faster than the committed entry's
configuration in the same sweep. With a restricted sweep the benchmark of the swept lengths
is also run once with the committed table first ("before", same run). ``--tune-pipe``: time
only the pipelined-kernel candidates (PIPE > 0; float16: mma variant only) and the committed
entry's configuration (the comparison it is adopted against). ``--tune-split``: the same with
only the split kernel's candidates (CSB = 1 with PIPE > 0, both float16 variants).

Writes $OUT/fwt_tuned.json, $OUT/fwt_junit.xml, $OUT/fwt_bench.json (and
$OUT/fwt_bench_before.json) when $OUT is set.
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


def _arg(flag, default=None):
    if flag not in sys.argv:
        return default
    i = sys.argv.index(flag)
    vals = []
    for a in sys.argv[i + 1:]:
        if a.startswith("--"):
            break
        vals.append(a)
    return vals if vals else default


def _lengths(spec):
    out_ = []
    for part in ",".join(spec).split(","):
        if "-" in part:
            a, b = part.split("-")
            out_ += list(range(int(a), int(b) + 1))
        elif part:
            out_.append(int(part))
    return tuple(out_)


tune_L = _lengths(_arg("--tune-L", [])) or None
tune_dtypes = tuple(_arg("--tune-dtypes", ["float16", "float32", "float64"]))
committed = dict(_cuda.ROW_TUNED)
adopted = []


def is_committed(name, L, cfg, mma):
    """Whether (cfg, mma) is the committed ROW_TUNED entry's configuration for (name, L)."""
    old = committed.get((name, L))
    return old is not None and _cuda._cfg7(cfg) == _cuda.tuned_cfg(old) and mma == bool(old[3])


# 1. sweep the row-kernel configurations (each checked exactly), adopt the fastest
#    (--no-tune: keep the committed ROW_TUNED, i.e. test and benchmark the code as it is)
if "--no-tune" not in sys.argv:
    log = []
    select = None
    if "--tune-mma-only" in sys.argv:  # float16: only the tensor-core variant (faster in every sweep)
        def select(name, L, cfg, mma):
            return mma or name != "float16"

    def committed_or(pred):
        """Time the committed entry's configuration (the comparison a new one is adopted
        against) and the candidates with ``pred``."""
        return lambda name, L, cfg, mma: is_committed(name, L, cfg, mma) or pred(name, L, cfg, mma)

    if "--tune-split" in sys.argv:  # session 7: only the split kernel's candidates (CSB = 1, PIPE > 0)
        select = committed_or(lambda name, L, cfg, mma: bool(cfg[6]) and bool(cfg[2]))
    elif "--tune-pipe" in sys.argv:
        select = committed_or(lambda name, L, cfg, mma: bool(cfg[6]) and (mma or name != "float16"))
    best = tune(dtypes=tune_dtypes, Ls=tune_L, log=log, select=select)
    print(f"sweep done [{time.time() - t0:.0f} s]", flush=True)
    if tune_L is None:
        _cuda.ROW_TUNED.clear()  # the sweep's table replaces the committed one (as it would be committed)
        _cuda.ROW_TUNED.update(best)
        adopted = sorted(best)
    else:
        # restricted: per swept (dtype, L), the sweep's best only where it beat the committed
        # entry's configuration measured in the same sweep (else the committed entry stays)
        for name in tune_dtypes:
            for L in tune_L:
                key = (name, L)
                old = committed.get(key)
                new = best.get(key)
                t_old = min([t for (d, l, c, m, t, ok) in log if (d, l) == key and ok and is_committed(d, l, c, m)],
                            default=None)
                t_new = min([t for (d, l, c, m, t, ok) in log if (d, l) == key and ok], default=None)
                if new is not None and (old is None or (t_old is not None and t_new < t_old)):
                    _cuda.ROW_TUNED[key] = new
                    adopted.append(key)
                print(f"adopt {name} 2^{L}: committed {old} ({'%.1f us' % (t_old * 1e6) if t_old else '-'}) "
                      f"sweep best {new} ({'%.1f us' % (t_new * 1e6) if t_new else '-'}) -> "
                      f"{'NEW' if key in adopted else 'kept'}", flush=True)
    with open(os.path.join(out, "fwt_tuned.json"), "w") as f:
        json.dump({"table": {f"{k[0]}:{k[1]}": v for k, v in sorted(_cuda.ROW_TUNED.items())},
                   "adopted": [f"{k[0]}:{k[1]}" for k in adopted],
                   "sweep": [[d, l, list(c), m, t, ok] for (d, l, c, m, t, ok) in log]}, f)
    print("ROW_TUNED =", {k: v for k, v in sorted(_cuda.ROW_TUNED.items())}, f"[{time.time() - t0:.0f} s]", flush=True)

# 2. tests, in this process so that they run with the adopted configurations
if "--no-tests" not in sys.argv:
    import pytest  # noqa: E402

    tests = ["tests/test_fwt_gpu.py", "tests/test_fwt.py"]
    tests += [t for t in ("tests/test_fwt_plan.py",) if os.path.exists(t)]
    rc = pytest.main(tests + ["-q", "-p", "no:cacheprovider", "--durations=8",
                              f"--junitxml={os.path.join(out, 'fwt_junit.xml')}"])
    print("pytest exit code:", int(rc), f"[{time.time() - t0:.0f} s]", flush=True)

# 3. benchmark with the adopted configurations (table printed last); with a restricted sweep
#    first the swept lengths with the committed table ("before", same run)
if tune_L is not None and "--no-tune" not in sys.argv:
    new_table = dict(_cuda.ROW_TUNED)
    _cuda.ROW_TUNED.clear()
    _cuda.ROW_TUNED.update(committed)
    print("before (committed ROW_TUNED):", flush=True)
    main(dtypes=list(tune_dtypes), lmin=min(tune_L), lmax=max(tune_L), mbytes=256, reps=20, extra_L=(),
         json_path=os.path.join(out, "fwt_bench_before.json"))
    _cuda.ROW_TUNED.clear()
    _cuda.ROW_TUNED.update(new_table)
    print(f"after (adopted table) [{time.time() - t0:.0f} s]:", flush=True)
if "--no-full-bench" not in sys.argv:
    main(dtypes=["float16", "float32", "float64"], lmin=8, lmax=22, mbytes=256, reps=20,
         json_path=os.path.join(out, "fwt_bench.json"))
print(f"total {time.time() - t0:.0f} s")

"""Process-to-process spread of the fwt benchmark for a few (dtype, row length) cases.

    PYTHONPATH=. python3 benchmarks/fwt_repeat.py [processes] [dtype:L,...]

Runs ``ozgemm.fwt.bench.main`` (public API, 256 MiB, 20 calls, copy baseline in the same
process) once per case in each of ``processes`` fresh Python processes and prints the
% of copy per process: the process-to-process spread of the sizes nearest a bandwidth line.
"""
import json
import os
import subprocess
import sys

procs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
cases = sys.argv[2] if len(sys.argv) > 2 else "float16:15,float32:15,float64:15,float64:14"
code = """
import json, os, sys, tempfile
from ozgemm.fwt.bench import main
out = {}
tmp = os.path.join(tempfile.mkdtemp(), "rep.json")
for c in sys.argv[1].split(","):
    d, L = c.split(":")
    main(dtypes=[d], lmin=int(L), lmax=int(L), mbytes=256, reps=20, extra_L=(), json_path=tmp)
    r = json.load(open(tmp))
    rows = r["results"]
    out[c] = [round(x["pct_memcpy"], 1) for x in rows]
print("RESULT", json.dumps(out))
"""
res = []
for p in range(procs):
    o = subprocess.run([sys.executable, "-c", code, cases], capture_output=True, text=True,
                       env=dict(os.environ))
    line = [ln for ln in o.stdout.splitlines() if ln.startswith("RESULT")]
    if not line:
        print(o.stdout[-2000:], o.stderr[-2000:])
        continue
    res.append(json.loads(line[0][7:]))
    print(f"process {p + 1}: {res[-1]}", flush=True)
for c in cases.split(","):
    vals = [r[c][0] for r in res if r.get(c)]
    print(f"{c}: % of copy per process {vals}, min {min(vals) if vals else '-'}")

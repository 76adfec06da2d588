"""Compile-check ozgemm.fwt row kernels with nvcc (no GPU needed): registers, spills, shared
memory per instantiation from ``ptxas -v``.

    python3 benchmarks/fwt_ptxas.py [--arch sm_90] [--dtype float16 ...] [--L 12 13 ...] [--xs-only]
        [--name 'fwht_rows<...>' ...]

By default: every sweep candidate (``row_candidates``, float16 also the mma variant) of the
given dtypes and row lengths, and the committed ``ROW_TUNED`` entries of those lengths.
Prints one line per kernel: name, registers, spill stores/loads (bytes), and the wall time of
the compilation (a proxy for the NVRTC time of the sweep on the device).
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ozgemm.fwt import _cuda  # noqa: E402


def _instantiation(name: str) -> str:
    kern, args = name.split("<", 1)
    T = args.split(",")[0].strip()
    A = args.split(",")[1].strip()
    return (f"template __global__ void {name}(const {T}* __restrict__, {T}* __restrict__, "
            f"long long, int, {A});")


def compile_names(names, arch="sm_90"):
    src = _cuda._SRC.read_text() + "\n" + "\n".join(_instantiation(n) for n in names) + "\n"
    with tempfile.TemporaryDirectory() as d:
        cu = Path(d) / "k.cu"
        cu.write_text(src)
        t0 = time.time()
        p = subprocess.run(["nvcc", f"-arch={arch}", "-std=c++17", "-Xptxas", "-v", "-cubin",
                            "-o", str(Path(d) / "k.cubin"), str(cu)], capture_output=True, text=True)
        dt = time.time() - t0
    if p.returncode:
        raise SystemExit(p.stderr[-4000:])
    out = {}
    cur = None
    for line in p.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            cur = m.group(1)
            out[cur] = {}
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and cur:
            out[cur]["spill"] = (int(m.group(1)), int(m.group(2)))
        m = re.search(r"Used (\d+) registers", line)
        if m and cur:
            out[cur]["regs"] = int(m.group(1))
    return out, dt


def demangled(mangled):
    for tool in ("cu++filt", "c++filt"):
        try:
            p = subprocess.run([tool, mangled], capture_output=True, text=True)
        except FileNotFoundError:
            continue
        return p.stdout.strip() or mangled
    return mangled


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--dtype", nargs="+", default=["float16", "float32", "float64"])
    ap.add_argument("--L", nargs="+", type=int, default=[12, 13, 14, 15])
    ap.add_argument("--xs-only", action="store_true", help="only XS candidates (and the tuned entries)")
    ap.add_argument("--name", nargs="*", default=None, help="explicit kernel names instead")
    a = ap.parse_args(argv)
    if a.name:
        names = list(a.name)
    else:
        names = set()
        for dn in a.dtype:
            dt = np.dtype(dn)
            _, _, sc, logv, _ = _cuda._TYPES[dt]
            acc = np.dtype(sc).itemsize
            for L in a.L:
                cfgs = [c for c in _cuda.row_candidates(L, logv, acc) if c[5] or not a.xs_only]
                t = _cuda.ROW_TUNED.get((dn, L))
                if t:
                    cfgs.append(_cuda.tuned_cfg(t))
                for c in cfgs:
                    for mma in ((False, True) if dn == "float16" else (False,)):
                        if a.xs_only and dn == "float16" and not mma:
                            continue
                        names.add(_cuda._row_name(dt, L, mma=mma, cfg=c))
        names = sorted(names)
    res, dt = compile_names(names, a.arch)
    print(f"{len(names)} kernels, nvcc {dt:.1f} s ({a.arch})")
    for mangled, r in sorted(res.items(), key=lambda kv: demangled(kv[0])):
        s = r.get("spill", (0, 0))
        print(f"{r.get('regs', '?'):>4} regs  spill {s[0]:>4}/{s[1]:<4} B  {demangled(mangled)}")


if __name__ == "__main__":
    main()

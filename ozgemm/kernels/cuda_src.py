"""CUDA source generation for the CRT kernels (no CuPy needed: usable for nvcc checks)."""
from __future__ import annotations

from importlib import resources
from math import prod

from ..crt.moduli import garner_constants

__all__ = ["kernel_source", "common_source"]


def _arr(name: str, vals, ctype: str = "int") -> str:
    return f"__device__ __constant__ const {ctype} {name}[{len(vals)}] = {{" + ", ".join(str(int(v)) for v in vals) + "};"


def _arr2(name: str, rows, ctype: str = "int") -> str:
    body = ", ".join("{" + ", ".join(str(int(v)) for v in row) + "}" for row in rows)
    return f"__device__ __constant__ const {ctype} {name}[{len(rows)}][{len(rows[0])}] = {{{body}}};"


def _fastmod_ok(m: int, nmax: int) -> bool:
    """fastmod (crt.cu) gives n mod m for every 0 <= n <= nmax: e (nmax + m - 1) < 2^32."""
    fm = -(-(1 << 32) // m)
    return fm < (1 << 32) and (fm * m - (1 << 32)) * (nmax + m - 1) < (1 << 32)


def _constants(n: int) -> dict:
    """Integer constants of the v2 kernels, with every range bound they rely on checked."""
    gc = garner_constants(n)
    ms = gc.moduli
    inv = [int(v) for v in gc.inv]
    fm = [-(-(1 << 32) // m) for m in ms]
    rw = [[pow(2, 13 * j, m) for j in range(5)] for m in ms]
    rc = [(m // 2 - (1 << 62)) % m for m in ms]
    p16 = [(1 << 16) % m for m in ms]
    g = [[(-int(gc.w[p, q]) * inv[q]) % ms[q] if p < q else 0 for q in range(n)] for p in range(n)]
    kc = [(-(1 << 31) * inv[q]) % ms[q] for q in range(n)]
    groups = [list(range(i, min(i + 4, n))) for i in range(0, n, 4)]
    gr = [prod(ms[q] for q in grp) for grp in groups]
    gused = [max(1, (prod(ms[grp[0]:]) - 1).bit_length() + 31) // 32 for grp in groups]
    for q, m in enumerate(ms):
        # residues: limbs a_0..a_3 < 2^13, a_4 < 2^11 (u < 2^63); one fastmod of the limb sum
        s_max = (2**13 - 1) * (1 + sum(rw[q][1:4])) + (2**11 - 1) * rw[q][4] + rc[q]
        assert s_max < 2**23 and _fastmod_ok(m, s_max), (m, s_max)
        # d2 > 0: (r + m - h) T + h with r, T < m
        assert _fastmod_ok(m, (2 * m - 1 - m // 2) * (m - 1) + m // 2), m
        # reconstruction: (c + 2^31) = u_h 2^16 + u_l, then y INV + KC + sum_p v_p G[p][q]
        assert _fastmod_ok(m, (2**16 - 1) * p16[q] + 2**16 - 1), m
        z_max = (m - 1) * inv[q] + kc[q] + sum((ms[p] - 1) * g[p][q] for p in range(q))
        assert z_max < 2**32 and _fastmod_ok(m, z_max), (m, z_max)
    assert all(r < 2**32 for r in gr) and gused[-1] <= gc.limbs and (prod(ms) - 1).bit_length() <= 32 * gc.limbs
    return dict(fm=fm, rw=rw, rc=rc, p16=p16, g=g, kc=kc, gr=gr, gused=gused)


def _header(n: int) -> str:
    gc = garner_constants(n)
    k = _constants(n)
    lines = [f"#define NMOD {n}", f"#define NLIMB {gc.limbs}", f"#define NGRP {len(k['gr'])}",
             _arr("MOD", gc.moduli), _arr("INV", gc.inv),
             _arr("MLIMB", gc.M_limbs, "unsigned int"),
             _arr("FM", k["fm"], "unsigned int"), _arr2("RW", k["rw"], "unsigned int"),
             _arr("RC", k["rc"], "unsigned int"), _arr("P16", k["p16"], "unsigned int"),
             _arr2("G", k["g"], "unsigned int"), _arr("KC", k["kc"], "unsigned int"),
             _arr("GR", k["gr"], "unsigned int"), _arr("GUSED", k["gused"])]
    return "\n".join(lines) + "\n"


def kernel_source(n: int, defines: tuple = ()) -> str:
    """Full CUDA source for ``n`` moduli (header + crt.cu + wide.cu); also used for nvcc checks."""
    d = resources.files("ozgemm.kernels") / "cuda"
    body = (d / "crt.cu").read_text() + "\n" + (d / "wide.cu").read_text()
    return "".join(f"#define {d}\n" for d in defines) + common_source() + _header(n) + body


def common_source() -> str:
    """``cuda/common.cuh``: definitions every kernel file uses (typedefs, exact float32 widening)."""
    return (resources.files("ozgemm.kernels") / "cuda" / "common.cuh").read_text() + "\n"

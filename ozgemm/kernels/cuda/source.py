"""CUDA source generation for the CRT kernels (no CuPy needed: usable for nvcc checks)."""
from __future__ import annotations

from importlib import resources
from math import prod

from ...crt.moduli import garner_constants, split_factors, splits

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


def _pack(bytes4) -> int:
    """Four values < 256 as one 32-bit word, byte j = bytes4[j] (a ``__dp4a`` operand)."""
    assert len(bytes4) == 4 and all(0 <= int(v) < 256 for v in bytes4), bytes4
    return sum(int(v) << (8 * j) for j, v in enumerate(bytes4))


def _constants(n) -> dict:
    """Integer constants of the crt.cu kernels (byte dot products) for ``n`` moduli (a count of
    the table or a plan's tuple), with every range bound they rely on checked."""
    gc = garner_constants(n)
    ms = gc.moduli
    n = gc.n
    inv = [int(v) for v in gc.inv]
    fm = [-(-(1 << 32) // m) for m in ms]
    rc = [(m // 2 - (1 << 62)) % m for m in ms]
    # residues: u = v + 2^62 (< 2^63) as eight bytes, weights 2^(8j) mod m (RB: j < 4 / >= 4);
    # wide entries (split_wide): u = v' + 2^85 (< 2^86) as eleven bytes, j = 8..11 in RB2
    w8 = [[pow(2, 8 * j, m) for j in range(8)] for m in ms]
    rb = [[_pack(w[:4]), _pack(w[4:])] for w in w8]
    w12 = [[pow(2, 8 * j, m) for j in range(8, 12)] for m in ms]
    rb2 = [_pack(w) for w in w12]
    rc3 = [(m // 2 - (1 << 85)) % m for m in ms]
    # reconstruction: c + 2^31 as four bytes, weights 2^(8j) INV_q mod m (PI); Garner weights
    # G[p][q] = -W[p][q] INV_q mod m_q packed four digits p = 4w..4w+3 per word (0 for p >= q)
    w4 = [[w8[q][j] * inv[q] % m for j in range(4)] for q, m in enumerate(ms)]
    pi = [_pack(w) for w in w4]
    g = [[(-int(gc.w[p, q]) * inv[q]) % ms[q] if p < q else 0 for q in range(n)] for p in range(n)]
    nw = -(-n // 4)
    gp = [[_pack([g[p][q] if p < n else 0 for p in range(4 * w, 4 * w + 4)]) for w in range(nw)] for q in range(n)]
    kc = [(-(1 << 31) * inv[q]) % ms[q] for q in range(n)]
    groups = [list(range(i, min(i + 4, n))) for i in range(0, n, 4)]
    gr = [prod(ms[q] for q in grp) for grp in groups]
    gused = [max(1, (prod(ms[grp[0]:]) - 1).bit_length() + 31) // 32 for grp in groups]
    for q, m in enumerate(ms):
        # residues: one fastmod of RC + the byte dot products of u (bytes < 2^8)
        s_max = 255 * sum(w8[q]) + rc[q]
        assert s_max < 2**20 and _fastmod_ok(m, s_max), (m, s_max)
        s_max = 255 * (sum(w8[q]) + sum(w12[q])) + rc3[q]  # twelve bytes (the top word's < 2^22)
        assert s_max < 2**20 and _fastmod_ok(m, s_max), (m, s_max)
        # d2 > 0: (r + m - h) T + h with r, T < m
        assert _fastmod_ok(m, (2 * m - 1 - m // 2) * (m - 1) + m // 2), m
        # reconstruction: KC + bytes(c + 2^31) . PI + digits . G (digits v_p < m_p <= 256)
        z_max = kc[q] + 255 * sum(w4[q]) + sum((ms[p] - 1) * g[p][q] for p in range(q))
        assert z_max < 2**22 and _fastmod_ok(m, z_max), (m, z_max)
    assert all(r < 2**32 for r in gr) and gused[-1] <= gc.limbs and (prod(ms) - 1).bit_length() <= 32 * gc.limbs
    # the split form of complex products (moduli with a square root t of -1): residues
    # X' + t Y' and X' - t Y' from the byte sums sm_x = X' + h, r_y = (Y' + h) mod m:
    # sm_x + t r_y + KP and sm_x + (m - t) r_y + KM, KP = -t h, KM = t h (mod m); the parts
    # Re = (P+ + P-) / 2 and Im = (P+ - P-) / (2 t) mod m_q, the factors folded into the
    # reconstruction's byte weights and constant (PIS, KCS: set 0 Re, set 1 Im)
    sq, f_re, f_im = split_factors(ms) if splits(ms) else ((0,) * n, (1,) * n, (1,) * n)
    kp = [(-t * (m // 2)) % m for t, m in zip(sq, ms)]
    km = [(t * (m // 2)) % m for t, m in zip(sq, ms)]
    pis, kcs = [], []
    for f in (f_re, f_im):
        w = [[w4[q][j] * f[q] % m for j in range(4)] for q, m in enumerate(ms)]
        pis.append([_pack(x) for x in w])
        kcs.append([kc[q] * f[q] % m for q, m in enumerate(ms)])
        for q, m in enumerate(ms):
            z_max = kcs[-1][q] + 255 * sum(w[q]) + sum((ms[p] - 1) * g[p][q] for p in range(q))
            assert z_max < 2**22 and _fastmod_ok(m, z_max), (m, z_max)
    for q, m in enumerate(ms):
        if sq[q]:
            assert (sq[q] ** 2 + 1) % m == 0 and m % 2
            z_max = (2**20 - 1) + (m - 1) * (m - 1) + m  # sm < 2^20 (above), r_y < m, K < m
            assert z_max < 2**21 and _fastmod_ok(m, z_max), (m, z_max)
    return dict(fm=fm, rc=rc, rb=rb, rb2=rb2, rc3=rc3, pi=pi, gp=gp, kc=kc, gr=gr, gused=gused, sq=list(sq),
                kp=kp, km=km, pis=pis, kcs=kcs, split=splits(ms))


def _header(n) -> str:
    gc = garner_constants(n)
    k = _constants(n)
    lines = [f"#define NMOD {gc.n}", f"#define NLIMB {gc.limbs}", f"#define NGRP {len(k['gr'])}",
             f"#define NGW {len(k['gp'][0])}",
             _arr("MOD", gc.moduli), _arr("MLIMB", gc.M_limbs, "unsigned int"),
             _arr("FM", k["fm"], "unsigned int"), _arr2("RB", k["rb"], "unsigned int"),
             _arr("RC", k["rc"], "unsigned int"), _arr("RB2", k["rb2"], "unsigned int"),
             _arr("RC3", k["rc3"], "unsigned int"), _arr("PI", k["pi"], "unsigned int"),
             _arr2("GP", k["gp"], "unsigned int"), _arr("KC", k["kc"], "unsigned int"),
             _arr("GR", k["gr"], "unsigned int"), _arr("GUSED", k["gused"]),
             _arr("SQ", k["sq"], "unsigned int"), _arr("KP", k["kp"], "unsigned int"),
             _arr("KM", k["km"], "unsigned int"), _arr2("PIS", k["pis"], "unsigned int"),
             _arr2("KCS", k["kcs"], "unsigned int")]
    if k["split"]:
        lines.insert(0, "#define SPLIT 1")
    return "\n".join(lines) + "\n"


def kernel_source(n) -> str:
    """Full CUDA source for ``n`` moduli (a count of the table, or a plan's tuple of moduli;
    header + crt.cu + wide.cu); also used for nvcc checks."""
    d = resources.files("ozgemm.kernels") / "cuda"
    body = (d / "crt.cu").read_text() + "\n" + (d / "wide.cu").read_text()
    return common_source() + _header(n) + body


def common_source() -> str:
    """``cuda/common.cuh``: definitions every kernel file uses (typedefs, exact float32 widening)."""
    return (resources.files("ozgemm.kernels") / "cuda" / "common.cuh").read_text() + "\n"

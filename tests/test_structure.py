"""The package's structure: no import cycle, imports point down the pipeline's layers, and the
secondary modules (fwt, lcn) are separate from the GEMM core.

Every import statement is read (module level and inside functions) with ``ast``; nothing is
imported or run."""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "ozgemm"

# lowest first; a module may import its own package and any lower layer
LAYERS = [
    ("ozgemm._xp", "ozgemm._timing", "ozgemm._cliargs"),
    ("ozgemm.contracts",),
    ("ozgemm.precision",),
    ("ozgemm.crt", "ozgemm.ozaki"),
    ("ozgemm.kernels",),
    ("ozgemm.methods", "ozgemm.stacks"),
    ("ozgemm.api",),
    ("ozgemm.verify",),
    ("ozgemm.cli",),
    ("ozgemm.__main__",),
]
SECONDARY = ("ozgemm.fwt", "ozgemm.lcn")


def _modules():
    mods = {}
    for p in ROOT.rglob("*.py"):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        pkg = parts[-1] == "__init__"
        if pkg:
            parts = parts[:-1]
        mods[".".join(parts)] = (p, pkg)
    return mods


def _imports(mods):
    """{module: {imported module of the package}} (a submodule import also names its
    packages, except the importer's own ancestors)."""
    edges = {}
    for name, (p, pkg) in mods.items():
        base = name if pkg else name.rsplit(".", 1)[0]
        out = set()
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    b = base.split(".")
                    b = b[:len(b) - node.level + 1]
                    tgt = ".".join(b + ([node.module] if node.module else []))
                else:
                    tgt = node.module or ""
                cands = [tgt] + [f"{tgt}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                cands = [a.name for a in node.names]
            else:
                continue
            for c in cands:
                parts = c.split(".")
                for i in range(1, len(parts) + 1):
                    pre = ".".join(parts[:i])
                    if pre in mods and pre not in ("ozgemm", name) and not name.startswith(pre + "."):
                        out.add(pre)
        edges[name] = out
    return edges


MODS = _modules()
EDGES = _imports(MODS)


def _layer(mod):
    for i, group in enumerate(LAYERS):
        if any(mod == g or mod.startswith(g + ".") for g in group):
            return i
    return None


def _package(mod):
    return ".".join(mod.split(".")[:2])


def test_no_import_cycle():
    index, low, stack, on, cycles = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in EDGES[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in MODS:
        if v not in index:
            visit(v)
    assert cycles == []


@pytest.mark.parametrize("mod", sorted(m for m in MODS if _layer(m) is not None))
def test_imports_point_down(mod):
    """A core module imports only its own package and lower layers (nothing upward)."""
    mine = _layer(mod)
    for tgt in EDGES[mod]:
        if tgt.startswith(SECONDARY):
            assert mod.startswith("ozgemm.cli"), f"{mod} imports the secondary module {tgt}"
            continue
        theirs = _layer(tgt)
        assert theirs is not None, (mod, tgt)
        assert theirs < mine or _package(tgt) == _package(mod), f"{mod} (layer {mine}) imports {tgt} (layer {theirs})"


@pytest.mark.parametrize("mod", sorted(m for m in MODS if m.startswith(SECONDARY)))
def test_secondary_modules_are_separate(mod):
    """fwt and lcn use only the array helpers and the CLI argument helpers of the package."""
    for tgt in EDGES[mod]:
        assert tgt.startswith(_package(mod)) or tgt in ("ozgemm._xp", "ozgemm._cliargs"), (mod, tgt)


def test_every_module_is_placed():
    unplaced = [m for m in MODS if m != "ozgemm" and _layer(m) is None and not m.startswith(SECONDARY)]
    assert unplaced == []


@pytest.mark.parametrize("module", ["ozgemm.contracts.formats", "ozgemm.api"])
def test_doctests(module):
    """The examples in the public docstrings run as written."""
    import doctest
    import importlib

    res = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert res.failed == 0
    assert res.attempted > 0

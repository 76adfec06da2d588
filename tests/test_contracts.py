import numpy as np
import pytest

import ozgemm
from ozgemm import Contract, ContractError, load_contract, named_contracts


def test_named():
    assert {"fp64", "fp64-fast", "fp32"} <= set(named_contracts())
    c = load_contract("fp64")
    assert (c.format, c.bits, c.moduli, c.bound_kind, c.method) == ("binary64", 53, "auto", "componentwise", "crt")
    f = load_contract("fp64-fast")
    assert f.bound_kind == "normwise" and f.moduli == "auto" and f.method == "crt"
    assert load_contract("fp32").format == "binary32"
    f32 = load_contract("fp32-fast")
    assert (f32.format, f32.bits, f32.bound_kind, f32.moduli) == ("binary32", 24, "normwise", "auto")


def test_user_file(tmp_path):
    p = tmp_path / "mine.toml"
    p.write_text('format = "binary64"\nbits = 40\nmoduli = "auto"\n')
    c = load_contract(p)
    assert c.name == "mine" and c.bits == 40
    a = np.random.default_rng(0).standard_normal((5, 6))
    assert ozgemm.plan(a, a.T, c).n_moduli <= ozgemm.plan(a, a.T, "fp64").n_moduli


@pytest.mark.parametrize("text,key", [
    ('bits = 99\n', "bits"), ('format = "binary16"\n', "format"), ('moduli = 0\n', "moduli"),
    ('method = "magic"\n', "method"), ('bound_kind = "rowwise"\n', "bound_kind"),
    ('specials = "ignore"\n', "specials"), ('exponent_range = -1\n', "exponent_range"),
    ('colour = 3\n', "colour"), ('bits = "53"\n', "bits"),
])
def test_malformed_names_key_and_file(tmp_path, text, key):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(ContractError) as ei:
        load_contract(p)
    assert key in str(ei.value) and "bad.toml" in str(ei.value)


def test_syntax_error_and_missing(tmp_path):
    p = tmp_path / "broken.toml"
    p.write_text("bits = = 3")
    with pytest.raises(ContractError, match="malformed TOML"):
        load_contract(p)
    with pytest.raises(ContractError, match="cannot read"):
        load_contract(tmp_path / "absent.toml")


def test_spread_beyond_one_plan_is_computed_in_bands():
    """Beyond one plan's width (the contract's exponent_range, or the moduli table) the product
    is split into exponent bands and keeps the promise, checked exactly; the plan reports the
    bands; a cost cap below what the bands need, or a fixed moduli count, refuses naming it."""
    from ozgemm.verify.reference import exact_product, measure
    # entry (0,1) of |A||B| is ~2^-100 but row 0 of A spans 1 .. 2^-152 (153 bits wide):
    a = np.array([[1.0, 2.0 ** -100 * (1 + 2.0 ** -52)]])
    b = np.array([[1.0, 0.0], [1.0, 1.0 / 3]])
    narrow = load_contract("fp64").with_(exponent_range=20, name="fp64-narrow")
    c, plans = ozgemm.matmul(a, b, contract=narrow, return_plan=True)
    info = plans[0].info()
    assert info["method"] == "bands" and info["int8_gemms"] == sum(
        p.plan.int8_gemms for p in plans[0].pairs) and "exponent_range=20" in info["widened"]
    assert measure(c, exact_product(a, b), narrow).breaches == 0
    c1, plans = ozgemm.matmul(a, b, return_plan=True)  # the shipped fp64 contract allows the width
    assert plans[0].info()["method"] == "crt" and measure(c1, exact_product(a, b), load_contract("fp64")).breaches == 0
    # beyond what the moduli table holds, every contract splits into bands
    w, eye = np.array([[1.0, 1e-45]]), np.eye(2)
    for name in ("fp64", "dd", "fp128", "fp64-ozaki"):
        c, plans = ozgemm.matmul(w, eye, contract=name, return_plan=True)
        assert plans[0].method == "bands"
        assert measure(c, exact_product(w, eye), load_contract(name)).breaches == 0
    capped = load_contract("fp64").with_(max_gemms=10, name="capped")
    with pytest.raises(ContractError, match=r"need \d+ INT8 GEMMs .*max_gemms = 10"):
        ozgemm.matmul(w, eye, contract=capped)
    fixed = load_contract("fp64").with_(moduli=30, name="fixed30")
    with pytest.raises(ContractError, match="exponent bands"):
        ozgemm.matmul(w, eye, contract=fixed)


def test_fixed_moduli_too_few_raises(rng):
    a = rng.standard_normal((6, 30))
    c = load_contract("fp64").with_(moduli=5, name="five")
    with pytest.raises(ContractError, match="moduli"):
        ozgemm.matmul(a, a.T, contract=c)
    nw = load_contract("fp64-fast").with_(moduli=14, name="nw14")
    with pytest.raises(ContractError, match="moduli = "):
        ozgemm.matmul(a, a.T, contract=nw)


def test_unsupported_method_and_format():
    a = np.ones((2, 2))
    with pytest.raises(ContractError, match="method"):
        ozgemm.matmul(a, a, contract=Contract(name="oz", method="ozaki-iii"))


def test_shipped_parsed_once_user_files_reread(tmp_path):
    """Shipped contracts are parsed once per process (same frozen object); a user's TOML file
    is read on every load, so an edit between two products takes effect."""
    assert load_contract("fp64") is load_contract("fp64")
    with pytest.raises(ContractError, match="unknown contract"):
        load_contract("no-such-contract")
    f = tmp_path / "mine.toml"
    f.write_text('format = "binary64"\nbits = 40\n')
    assert load_contract(f).bits == 40
    f.write_text('format = "binary64"\nbits = 30\n')
    assert load_contract(f).bits == 30


def test_max_gemms_caps_the_cost_and_names_it(rng, tmp_path):
    """max_gemms: a plan needing more INT8 GEMMs raises ContractError with its count (CRT,
    Ozaki scheme I and stacks alike); within the cap the bits are those of the uncapped call."""
    a = rng.standard_normal((12, 40))
    b = rng.standard_normal((40, 9))
    _, (p,) = ozgemm.matmul(a, b, return_plan=True)
    need = p.int8_gemms
    for base in ("fp64", "fp64-ozaki", "fp32"):
        x, y = (a.astype(np.float32), b.astype(np.float32)) if base == "fp32" else (a, b)
        _, (q,) = ozgemm.matmul(x, y, contract=base, return_plan=True)
        tight = load_contract(base).with_(max_gemms=q.int8_gemms - 1, name="tight")
        with pytest.raises(ContractError, match=f"need {q.int8_gemms} INT8 GEMMs.*max_gemms = {q.int8_gemms - 1}"):
            ozgemm.matmul(x, y, contract=tight)
        exact_cap = load_contract(base).with_(max_gemms=q.int8_gemms, name="cap")
        assert np.array_equal(ozgemm.matmul(x, y, contract=exact_cap), ozgemm.matmul(x, y, contract=base))
    stack = np.stack([a, 2 * a])
    with pytest.raises(ContractError, match="max_gemms"):
        ozgemm.matmul(stack, b, contract=load_contract("fp64").with_(max_gemms=need - 1, name="t"))
    roomy = load_contract("fp64").with_(max_gemms=need + 5, name="r")
    assert np.array_equal(ozgemm.matmul(stack, b, contract=roomy), ozgemm.matmul(stack, b))
    f = tmp_path / "capped.toml"
    f.write_text('format = "binary64"\nmax_gemms = 3\n')
    assert load_contract(str(f)).max_gemms == 3
    for bad in (0, -1, 2.5, True, "10"):
        with pytest.raises(ContractError, match="max_gemms"):
            load_contract("fp64").with_(max_gemms=bad)


def test_auto_method_keeps_the_candidate_that_proves_and_fits():
    """method = "auto": where Ozaki scheme I cannot prove the bound (more slice diagonals than
    it accumulates exactly) the CRT plan is kept; under max_gemms the candidate within the cap
    is kept."""
    from ozgemm.verify.audit import measure_any

    x = 1.2345678901234567 * 2.0 ** -115
    a, b = np.array([[1.7654321098765432, x]]), np.array([[x], [1.3579246801357913]])
    auto = load_contract("fp64").with_(method="auto", name="auto")
    c, (p,) = ozgemm.matmul(a, b, contract=auto, return_plan=True)
    assert p.method == "crt" and measure_any(c, a, b, auto)["breaches"] == 0
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 256)), rng.standard_normal((256, 2))
    base = load_contract("fp64").with_(bits=4, name="b4")
    _, (po,) = ozgemm.matmul(a, b, contract=base.with_(method="ozaki"), return_plan=True)
    _, (pc,) = ozgemm.matmul(a, b, contract=base, return_plan=True)
    assert po.int8_gemms < pc.int8_gemms
    capped = base.with_(method="auto", max_gemms=po.int8_gemms)
    c, (p,) = ozgemm.matmul(a, b, contract=capped, return_plan=True)
    assert p.method == "ozaki" and measure_any(c, a, b, capped)["breaches"] == 0


def test_max_gemms_values():
    assert load_contract("fp64").with_(max_gemms=np.int64(5)).max_gemms == 5
    with pytest.raises(ContractError, match=">= 2"):
        load_contract("fp64").with_(max_gemms=1)  # one modulus and the bound GEMM at least
    with pytest.raises(ContractError, match=">= 17"):
        load_contract("fp64-fast").with_(moduli=17, max_gemms=16)  # 17 fixed moduli, no bound GEMM


def test_overrides_after_a_name(tmp_path):
    """``name:key=value,...`` is the named contract with those keys changed (TOML values, bare
    words as strings), named by the whole string; bad overrides name the key."""
    c = load_contract("fp64-fast:moduli=17")
    assert c.name == "fp64-fast:moduli=17"
    assert c == load_contract("fp64-fast").with_(moduli=17, name="fp64-fast:moduli=17")
    assert c is load_contract("fp64-fast:moduli=17")  # parsed once, as the shipped ones
    d = load_contract("fp32:bound_kind=normwise,exponent_range=0, method = auto")
    assert (d.bound_kind, d.exponent_range, d.method, d.format) == ("normwise", 0, "auto", "binary32")
    assert load_contract('fp64:specials="raise"').specials == "raise"
    f = tmp_path / "mine.toml"
    f.write_text('format = "binary64"\nbits = 40\n')
    assert load_contract(f"{f}:bits=30").bits == 30
    f.write_text('format = "binary64"\nbits = 40\nmoduli = 12\n')  # a file base is read again
    assert load_contract(f"{f}:bits=30").moduli == 12
    for bad, key in [("fp64:colour=3", "colour"), ("fp64:name=x", "name"), ("fp64:moduli=0", "moduli"),
                     ("fp64:moduli=x", "moduli"), ("fp64:moduli=3,bits", "bits")]:
        with pytest.raises(ContractError, match=key):
            load_contract(bad)
    with pytest.raises(ContractError, match="unknown contract 'fp65'"):
        load_contract("fp65:moduli=3")
    for bad, words in [("fp64-fast:moduli=17\nbits=40", "one line"), ("fp64-fast:moduli=17 # c", "comments"),
                       ("fp64-fast:moduli=17,moduli=16", "given twice"), ("fp64" + "x" * 300, "unknown contract"),
                       (str(f)[:-5], "unknown contract"), ("../contracts/fp64", "unknown contract")]:
        with pytest.raises(ContractError, match=words):  # (a shipped name never reads a path)
            load_contract(bad)
    assert load_contract("fp64-fast:moduli=17:bits=50").bits == 50  # overrides chain
    f.write_text('format = "binary64"\nbits = 40\nmoduli = 13\n')  # a file under a chain is read again too
    assert load_contract(f"{f}:bits=30:bits=31").moduli == 13
    f.write_text('format = "binary64"\nbits = 40\nmoduli = 14\n')
    assert load_contract(f"{f}:bits=30:bits=31").moduli == 14


def test_normwise_fixed_moduli_keeps_its_promise():
    """A normwise contract with a fixed moduli count plans that count and the widest width it
    allows (more moduli, a wider width), and keeps the normwise promise against the exact
    product; too few moduli for the promise is a ContractError."""
    from ozgemm.verify.audit import measure_any
    from ozgemm.verify.inputs import phi_operands

    a, b = phi_operands(np.random.default_rng(3), 48, 300, 40, 2.0)
    betas = []
    for m in (15, 16, 17):
        c, plans = ozgemm.matmul(a, b, contract=f"fp64-fast:moduli={m}", return_plan=True)
        assert plans[0].n_moduli == m
        betas.append(plans[0].beta)
        assert measure_any(c, a, b, load_contract(f"fp64-fast:moduli={m}"))["breaches"] == 0
    assert betas[0] < betas[1] < betas[2]
    with pytest.raises(ContractError):
        ozgemm.matmul(a, b, contract="fp64-fast:moduli=8")

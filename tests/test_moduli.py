from math import gcd, prod

import pytest

from ozgemm.contracts.moduli import MODULI
from ozgemm.precision.planner import moduli_for_bits, moduli_product
from ozgemm.crt.moduli import garner_constants


def test_table_pairwise_coprime_and_small():
    assert len(MODULI) >= 36
    assert all(2 <= m <= 256 for m in MODULI)
    for i, a in enumerate(MODULI):
        for b in MODULI[i + 1:]:
            assert gcd(a, b) == 1, (a, b)


def test_first_twenty_are_gemmul8_table():
    assert MODULI[:20] == (256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211,
                           199, 197, 193, 191, 181, 179, 173)


def test_products_cover_250_bits_and_beyond_128_bit_overflow():
    assert moduli_product(len(MODULI)).bit_length() > 250
    # product of >= 17 moduli overflows 128 bits: the reconstruction must stay exact there
    assert moduli_product(17).bit_length() > 128
    assert moduli_product(20) == prod(MODULI[:20])


@pytest.mark.parametrize("n", [1, 2, 14, 17, 20, 36, len(MODULI)])
def test_garner_constants(n):
    gc = garner_constants(n)
    for q in range(1, n):
        P = prod(MODULI[:q])
        assert (P * int(gc.inv[q])) % MODULI[q] == 1
        for p in range(q):
            assert int(gc.w[p, q]) == prod(MODULI[:p]) % MODULI[q]
    limbs = sum(int(v) << (32 * j) for j, v in enumerate(gc.M_limbs))
    assert limbs == prod(MODULI[:n])


def test_moduli_for_bits():
    for bits in (10, 100, 200):
        n = moduli_for_bits(bits)
        assert moduli_product(n) > 2**bits
        assert n == 1 or moduli_product(n - 1) <= 2**bits
    assert moduli_for_bits(10_000) is None
    with pytest.raises(ValueError):
        moduli_product(0)

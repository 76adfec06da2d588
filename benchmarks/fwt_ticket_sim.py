"""CPU model of the leftover-row tickets (fwht.cu ``draw_leftover``, session 14): every CTA of a
launch draws once with atomicInc modulo G (``old = c; c = 0 if old >= G - 1 else old + 1``), in
any order, from any starting counter value; the drawn rows qG + ticket < ntiles must be exactly
the leftover rows qG .. ntiles - 1, each once, and a counter that started below G must end where
it started. Checks every ntiles < 80, every G <= ntiles, starting values 0, 1, G - 1, G, G + 5
and 2**32 - 1, one random drawing order each.

    python3 benchmarks/fwt_ticket_sim.py
"""
import random


def draw(counter, g):
    old = counter[0]
    counter[0] = 0 if old >= g - 1 else old + 1
    return old


def main():
    rng = random.Random(14)
    bad = 0
    for ntiles in range(1, 80):
        for g in range(1, ntiles + 1):
            qg = ntiles // g * g
            for start in (0, 1, g - 1, g, g + 5, 2**32 - 1):
                c = [start]
                order = list(range(g))
                rng.shuffle(order)
                rows = [qg + v for v in (draw(c, g) for _ in order) if qg + v < ntiles]
                bad += sorted(rows) != list(range(qg, ntiles))
                bad += start < g and c[0] != start
    print("ok" if bad == 0 else f"{bad} failures")
    return bad


if __name__ == "__main__":
    raise SystemExit(main() != 0)

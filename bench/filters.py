"""How many queries each privacy filter answers, on homogeneous and mixed workloads, and how fast it decides.

    python bench/filters.py [--quick]

Valid filters (dpsql.accounting.filters: basic, zcdp, and the "adaptive" union with several
shares of delta) against the natural PLD filter (compose the exact privacy-loss distributions of
the history and stop when the budget is crossed: tighter, but not valid against an analyst who
picks each query after seeing earlier answers; shown as the yardstick, never used to decide).
Workloads send a stream of charges in order; a refused charge is skipped and the stream goes on
(an analyst who asks for something smaller next); "answered" counts the admitted ones.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpsql.accounting import filters  # noqa: E402
from dpsql.accounting.accountant import accountant  # noqa: E402
from dpsql.accounting.cost import PrivacyCost, PrivacyLoss  # noqa: E402
from dpsql.accounting.filters import Filter, History, charge_of  # noqa: E402
from dpsql.mechanisms.gaussian import GaussianSpec  # noqa: E402
from dpsql.mechanisms.gaussian import cost as gaussian_cost

Terms = tuple[PrivacyLoss, ...]


def laplace(eps: Fraction, sensitivity: int = 3) -> Terms:
    return (PrivacyLoss("discrete_laplace", "laplace", eps, Fraction(0), sensitivity=Fraction(sensitivity),
                        scale=Fraction(sensitivity) / eps),)


def gaussian(eps: Fraction, delta: Fraction = Fraction(1, 10**9)) -> Terms:
    return gaussian_cost(GaussianSpec(Fraction(3), eps, delta)).losses


def median(eps: Fraction) -> Terms:
    return (PrivacyLoss("bounded_range", "exponential-fine", eps),)


def selection(eps: Fraction, delta: Fraction = Fraction(1, 10**8)) -> Terms:
    half = eps / 2
    return (*laplace(half), PrivacyLoss("approx_dp", "partition_selection", half, delta))


def _eps(rng: random.Random, lo: float, hi: float) -> Fraction:
    return Fraction(round(math.exp(rng.uniform(math.log(lo), math.log(hi))), 4)).limit_denominator(10**4)


def workloads(n: int) -> dict[str, tuple[PrivacyCost, list[Terms]]]:
    rng = random.Random(7)
    small = PrivacyCost(1, Fraction(1, 10**6))
    demo = PrivacyCost(10, Fraction(1, 10**5))
    mixed = []
    for _ in range(n):
        kind = rng.choice(["count", "gauss", "median", "count"])
        eps = _eps(rng, 0.001, 0.1)
        mixed.append({"count": laplace, "gauss": gaussian, "median": median}[kind](eps))
    with_selection = [selection(_eps(rng, 0.01, 0.2)) if rng.random() < 0.3 else laplace(_eps(rng, 0.01, 0.2)) for _ in range(n)]
    dashboard = [rng.choice([laplace(Fraction(1, 10)), median(Fraction(1, 10)), selection(Fraction(1, 10))]) for _ in range(n)]
    return {
        "COUNT eps 0.01 repeated, budget (1, 1e-6)": (small, [laplace(Fraction(1, 100))] * n),
        "COUNT eps 0.1 repeated, budget (10, 1e-5)": (demo, [laplace(Fraction(1, 10))] * n),
        "MEDIAN eps 0.1 repeated, budget (10, 1e-5)": (demo, [median(Fraction(1, 10))] * n),
        "mixed COUNT/Gauss/MEDIAN eps 0.001-0.1, (1, 1e-6)": (small, mixed),
        "mixed, 30% partition selection, eps 0.01-0.2, (10, 1e-5)": (demo, with_selection),
        "dashboard COUNT/MEDIAN/selection at eps 0.1, (10, 1e-5)": (demo, dashboard),
        "large: eps 0.5 and 1 alternating, (3, 1e-6)": (PrivacyCost(3, Fraction(1, 10**6)),
                                                       [laplace(Fraction(1, 2)), laplace(Fraction(1))] * (n // 2)),
    }


def answered_by_filter(name: str, budget: PrivacyCost, stream: list[Terms]) -> int:
    chosen, history, n = Filter(name, budget), History(), 0  # type: ignore[arg-type]
    for terms in stream:
        after = history.add(charge_of(terms))
        if chosen.admits(after):
            history, n = after, n + 1
    return n


def answered_by_natural_pld(budget: PrivacyCost, stream: list[Terms], cap: int, seconds: float = 60) -> str:
    """The natural PLD filter's count (each decision composes the whole history: slow on mixed
    streams, so it stops after ``seconds`` and reports a floor)."""
    composition, n, deadline = accountant("pld").empty(), 0, time.monotonic() + seconds
    for terms in stream[:cap]:
        if time.monotonic() > deadline:
            return f">={n}"
        after = composition.add(terms)
        if after.fits(budget):
            composition, n = after, n + 1
    return str(n)


SHARES = {
    "adaptive 2/5 2/5 1/5 (default)": (Fraction(2, 5), Fraction(2, 5), Fraction(1, 5)),
    "adaptive 1/2 9/20 1/20": (Fraction(1, 2), Fraction(9, 20), Fraction(1, 20)),
    "adaptive 1/3 1/3 1/3": (Fraction(1, 3), Fraction(1, 3), Fraction(1, 3)),
    "adaptive 0.45 0.45 0.10": (Fraction(45, 100), Fraction(45, 100), Fraction(10, 100)),
    "adaptive 0.70 0.25 0.05": (Fraction(7, 10), Fraction(1, 4), Fraction(1, 20)),
}


def with_shares(shares: tuple[Fraction, Fraction, Fraction]) -> None:
    filters.HOMOGENEOUS_SHARE, filters.ZCDP_SHARE, filters.BASIC_SHARE = shares
    filters._classes.cache_clear()


def latency(history_size: int, repeats: int = 2000) -> dict[str, float]:
    """Microseconds per decision after a history of mixed charges (the ledger keeps the history
    incrementally: a decision adds one charge to it and asks the filter)."""
    rng = random.Random(1)
    budget = PrivacyCost(10**6, Fraction(1, 10**5))  # large: the history never exhausts it
    history = History()
    kinds = [laplace(_eps(rng, 0.001, 0.1)) for _ in range(50)] + [median(_eps(rng, 0.001, 0.1)) for _ in range(50)]
    for _ in range(history_size):
        history = history.add(charge_of(rng.choice(kinds)))
    out = {}
    for name in ("basic", "zcdp", "adaptive"):
        chosen = Filter(name, budget)  # type: ignore[arg-type]
        start = time.perf_counter()
        for i in range(repeats):
            chosen.admits(history.add(charge_of(kinds[i % len(kinds)])))
        out[name] = (time.perf_counter() - start) / repeats * 1e6
    # The refusing side: a budget the history already fills, so every class is asked.
    tight = Filter("adaptive", PrivacyCost(Fraction(1, 10), Fraction(1, 10**6)))
    start = time.perf_counter()
    for i in range(repeats):
        tight.admits(history.add(charge_of(kinds[i % len(kinds)])))
    out["adaptive (refusing)"] = (time.perf_counter() - start) / repeats * 1e6
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="shorter streams, no natural-PLD column")
    parser.add_argument("-n", type=int, default=None, help="stream length (default 4000; 1500 with --quick)")
    args = parser.parse_args()
    n = args.n or (1500 if args.quick else 4000)
    loads = workloads(n)
    designs = ["basic", "zcdp", *SHARES]
    print(f"queries answered of a stream of {n} (refused ones skipped)\n")
    header = f"{'workload':58} " + " ".join(f"{d.split(' (')[0][:16]:>16}" for d in designs) + ("" if args.quick else f" {'natural PLD*':>13}")
    print(header)
    for label, (budget, stream) in loads.items():
        cells = []
        for design in designs:
            if design in SHARES:
                with_shares(SHARES[design])
                cells.append(answered_by_filter("adaptive", budget, stream))
            else:
                cells.append(answered_by_filter(design, budget, stream))
        line = f"{label:58} " + " ".join(f"{c:>16}" for c in cells)
        if not args.quick:
            line += f" {answered_by_natural_pld(budget, stream, cap=max(cells) * 2 + 50):>13}"
        print(line)
    with_shares(SHARES["adaptive 2/5 2/5 1/5 (default)"])
    print("\n* not valid against an adaptive analyst (Regehr et al. 2026): the yardstick, never used to decide.")
    print("\nmicroseconds per decision (history of mixed charges kept incrementally):")
    for size in (0, 1000, 10_000):
        cells = latency(size)
        print(f"  history {size:>6}: " + ", ".join(f"{k} {v:.1f}" for k, v in cells.items()))


if __name__ == "__main__":
    main()

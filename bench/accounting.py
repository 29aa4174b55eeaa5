"""The accountants: queries a budget buys, and charge latency as the ledger grows.

    python bench/accounting.py [--rows 1 100 1000 10000] [--warm 50]

Run by hand, not a test (bench/README.md). Every number printed is measured in this run:

1. Queries answered (and, at the same 95% half-width, the same COUNT with discrete Gaussian noise): COUNT(*) releases (discrete Laplace, sensitivity 1) at per-query epsilon
   0.001, 0.01 and 0.1 within a total budget of (epsilon 1, delta 1e-6), under the basic, zCDP
   and PLD accountants (the largest k whose composition fits, by bisection).
2. Charge latency: a SQLite ledger file prefilled with N charges of that release (written as a
   ledger writes them, with their loss terms), then one Ledger: the first charge (cache cold:
   the composition is rebuilt from every row) and the median of --warm later charges (cache
   warm: one term composed onto it). Each charge is a whole BEGIN IMMEDIATE transaction with
   a durable COMMIT (synchronous = FULL), as in production.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpsql.accounting.accountant import ACCOUNTANTS, accountant  # noqa: E402
from dpsql.accounting.cost import PrivacyCost, PrivacyLoss  # noqa: E402
from dpsql.accounting.ledger import Ledger  # noqa: E402
from dpsql.accounting.store import CHARGE_FIELDS  # noqa: E402
from dpsql.mechanisms.gaussian import GaussianSpec  # noqa: E402
from dpsql.mechanisms.gaussian import cost as gaussian_cost  # noqa: E402
from dpsql.mechanisms.laplace import LaplaceSpec, half_width  # noqa: E402
from dpsql.planner import accuracy  # noqa: E402

BUDGET = PrivacyCost(1, Fraction(1, 10**6))
HUGE = PrivacyCost(10**9, Fraction(1, 2))


def count_release(epsilon: Fraction) -> PrivacyCost:
    return PrivacyCost.of(PrivacyLoss("discrete_laplace", "laplace", epsilon, Fraction(0),
                                      sensitivity=Fraction(1), scale=1 / epsilon))


def answered(name: str, cost: PrivacyCost) -> int:
    """The largest k with k releases within BUDGET under the accountant (bisection)."""
    def fits(k: int) -> bool:
        return accountant(name).empty().add(list(cost.losses) * k).fits(BUDGET)

    lo, hi = 0, 1
    while fits(hi):
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def gaussian_at_equal_ci(epsilon: Fraction) -> PrivacyCost:
    """The discrete Gaussian COUNT (sensitivity 1) whose 95% half-width equals the Laplace one at
    ``epsilon``: the smallest epsilon at delta 1e-9 per query (accuracy.epsilon_for) giving it."""
    target = Fraction(half_width(LaplaceSpec(Fraction(1), epsilon)))
    delta = Fraction(1, 10**9)
    eps = accuracy.epsilon_for("gaussian", Fraction(1), target, delta)
    assert eps is not None
    return gaussian_cost(GaussianSpec(Fraction(1), eps, delta))


def prefill(path: Path, rows: int, cost: PrivacyCost) -> None:
    Ledger(path).close()  # the schema
    params = json.dumps({"losses": [x.record() for x in cost.losses]}, sort_keys=True)
    eps = cost.epsilon
    row = ("alice", "bench", time.time(), "SELECT COUNT(*) FROM t", "h", "laplace", params,
           str(eps.numerator), str(eps.denominator), "0", "1")
    with sqlite3.connect(path) as raw:
        raw.executemany(f"INSERT INTO charges ({', '.join(CHARGE_FIELDS)}) VALUES ({', '.join('?' * len(CHARGE_FIELDS))})",
                        [row] * rows)


def latency(name: str, rows: int, warm: int, cost: PrivacyCost) -> tuple[float, float]:
    # The tight accountants are read against the real budget (10,000 charges at epsilon 0.001 fit
    # it only under them: the PLD or zCDP is consulted on every charge); basic against a huge one.
    budget = HUGE if name == "basic" else BUDGET
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ledger.db"
        prefill(path, rows, cost)
        params = {"losses": [x.record() for x in cost.losses]}
        with Ledger(path) as led:
            def one() -> float:
                start = time.perf_counter()
                led.charge(analyst="alice", session="bench", query="SELECT COUNT(*) FROM t", plan_hash="h",
                           mechanism="laplace", params=params, cost=cost, budget=budget, accountant=name)
                return (time.perf_counter() - start) * 1000
            cold = one()
            return cold, statistics.median(one() for _ in range(warm))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 100, 1000, 10000])
    parser.add_argument("--warm", type=int, default=50)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}")
    print("\nqueries answered within (epsilon 1, delta 1e-6), COUNT(*) = discrete Laplace, sensitivity 1:")
    print(f"{'per-query epsilon':>18} " + " ".join(f"{n:>7}" for n in ACCOUNTANTS))
    for eps in (Fraction(1, 1000), Fraction(1, 100), Fraction(1, 10)):
        counts = [answered(name, count_release(eps)) for name in ACCOUNTANTS]
        print(f"{float(eps):>18g} " + " ".join(f"{c:>7}" for c in counts))
    print("\nLaplace vs discrete Gaussian COUNT at equal 95% half-width (Gaussian: delta 1e-9 per query):")
    print(f"{'per-query epsilon':>18} {'ci95':>6} " + " ".join(f"{n + ' L':>8} {n + ' G':>8}" for n in ACCOUNTANTS))
    for eps in (Fraction(1, 1000), Fraction(1, 100), Fraction(1, 10)):
        lap, gau = count_release(eps), gaussian_at_equal_ci(eps)
        cells = [(answered(name, lap), answered(name, gau)) for name in ACCOUNTANTS]
        print(f"{float(eps):>18g} {half_width(LaplaceSpec(Fraction(1), eps)):>6} "
              + " ".join(f"{a:>8} {b:>8}" for a, b in cells))
    print(f"\ncharge latency, ms (COUNT at epsilon 0.001; SQLite file, durable commit; budget (1, 1e-6), basic: unbounded;\n"
          f"cold = first charge of a new Ledger, warm = median of {args.warm} more):")
    print(f"{'prior rows':>10} " + " ".join(f"{n + ' cold':>11} {n + ' warm':>11}" for n in ACCOUNTANTS))
    cost = count_release(Fraction(1, 1000))
    for rows in args.rows:
        cells = [latency(name, rows, args.warm, cost) for name in ACCOUNTANTS]
        print(f"{rows:>10} " + " ".join(f"{cold:>11.2f} {warm:>11.2f}" for cold, warm in cells))


if __name__ == "__main__":
    main()

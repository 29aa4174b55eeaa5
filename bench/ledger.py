"""Per-charge latency of the SQLite ledger as one analyst's history grows.

    python bench/ledger.py [--sizes 0 1000 10000 100000] [--charges 200] [--accountants pld basic]
    PYTHONPATH=/path/to/other/checkout python bench/ledger.py     # the same on another checkout

Run by hand, not a test (bench/README.md). Every number printed is measured in this run:

For each size N and accountant, a fresh ledger file is prefilled with N charges of one analyst
(a COUNT release: discrete Laplace, epsilon 1/100), written in one executemany through the
store's own INSERT statement, as a ledger writes them. Then one Ledger object charges that
analyst: the first charge (cold: the composition is rebuilt from every row), then the median
and 90th percentile of --charges later charges (warm), each a whole BEGIN IMMEDIATE transaction
with its COMMIT. The budget is huge, so no charge is refused.

Two places for the file: the temp directory (a disk: each COMMIT is fsync'ed, synchronous =
FULL, as in production) and /dev/shm when present (tmpfs: fsync costs nothing there, so what is
left is the ledger's own work, the part that grows with N when it reads the whole history).
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import dpsql
from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.accounting.ledger import Ledger
from dpsql.accounting.sqlite_ledger import _INSERT

ANALYST = "alice"
BUDGET = PrivacyCost(Fraction(10**9), Fraction(1, 2))  # never exhausted here
LOSS = PrivacyLoss("discrete_laplace", "laplace", Fraction(1, 100), Fraction(0), Fraction(1), Fraction(100))
COST = PrivacyCost(LOSS.epsilon, LOSS.delta, (LOSS,))
PARAMS = {"releases": [{"kind": "count", "column": None, "sensitivity": "1", "scale": "100", "epsilon": "1/100"}],
          "max_rows": 3, "losses": [LOSS.record()]}


def charge(led: Ledger, name: str) -> float:
    started = time.perf_counter()
    led.charge(analyst=ANALYST, session="bench", query="SELECT COUNT(*) FROM people", plan_hash="0123456789abcdef",
               mechanism="laplace", params=PARAMS, cost=COST, budget=BUDGET, accountant=name)
    return time.perf_counter() - started


def prefill(path: Path, rows: int) -> None:
    """N charges of ANALYST through the store's own INSERT (the schema comes from opening a Ledger)."""
    Ledger(path).close()
    if not rows:
        return
    import json

    row = (ANALYST, "prefill", time.time(), "SELECT COUNT(*) FROM people", "0123456789abcdef", "laplace",
           json.dumps(PARAMS, sort_keys=True, allow_nan=False), "1", "100", "0", "1")
    with sqlite3.connect(path) as raw:
        raw.executemany(_INSERT, [row] * rows)
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def measure(directory: Path, rows: int, name: str, charges: int) -> tuple[float, float, float]:
    """(first charge, median warm charge, p90 warm charge) in seconds."""
    path = directory / f"ledger-{rows}-{name}.sqlite"
    prefill(path, rows)
    try:
        with Ledger(path) as led:
            first = charge(led, name)
            warm = sorted(charge(led, name) for _ in range(charges))
        return first, statistics.median(warm), warm[int(0.9 * (len(warm) - 1))]
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def source_state() -> str:
    root = Path(dpsql.__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "dpsql"], capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"{root} (not a git checkout)"
    return f"{root} at git {commit} ({'uncommitted edits in dpsql/' if dirty else 'clean dpsql/'})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 1000, 10_000, 100_000])
    parser.add_argument("--charges", type=int, default=200, help="warm charges per median")
    parser.add_argument("--accountants", nargs="+", default=["pld", "basic"], choices=["pld", "zcdp", "basic"])
    args = parser.parse_args(argv)
    print(f"command: python {' '.join(sys.argv)}")
    print(f"dpsql: {source_state()}")
    print(f"machine: {platform.machine()} {platform.system()} {platform.release()}, os.cpu_count() = {os.cpu_count()}, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (other processes skew the timings)")
    print(f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}")
    places = [("disk", Path(tempfile.gettempdir()))] + ([("tmpfs", Path("/dev/shm"))] if Path("/dev/shm").is_dir() else [])
    print()
    print("ms per charge; warm = median (p90) of charges after the first; first = cache cold (rebuilt from every row)")
    print(f"{'file':<6} {'accountant':<10} {'rows':>8} {'first':>9} {'warm':>8} {'p90':>8}")
    for place, root in places:
        with tempfile.TemporaryDirectory(dir=root, prefix="dpsql-bench-ledger-") as tmp:
            for name in args.accountants:
                for rows in args.sizes:
                    first, median, p90 = measure(Path(tmp), rows, name, args.charges)
                    print(f"{place:<6} {name:<10} {rows:>8} {first * 1e3:>9.3f} {median * 1e3:>8.3f} {p90 * 1e3:>8.3f}",
                          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""MEDIAN, IQR and MODE: wall time, refusal rate and error at epsilon = 1, delta = 1e-6.

    python bench/robust.py                                  # 1e5, 1e6, 1e7 rows
    python bench/robust.py --rows 100000 1000000 --runs 40  # more releases per mechanism
    python bench/robust.py --mode-sweep-only                # MODE on Zipf data at n = 500 .. 10000

Run by hand, not a test (bench/README.md). Every number printed is measured in this run.

Data (cached as Parquet with its policy in --data-dir/robust-<rows>/): one row per person
(max_rows = 1, row-level privacy, the setting the PTR analysis in docs/mechanisms.md assumes), columns
  age     int in [18, 90], the demo's age distribution (flat to 60, thinning to 90);
  income  float, lognormal (median about 40,000, sigma 0.8), clipped to [0, 500000], cents;
          no `precision`: SMed ranks it on the derived grid 500 (ir.plan.median_grid);
  zipf    text, 50 labels with P(label i) proportional to i^-1.2 (top two 0.26 / 0.11).

Per size and mechanism, one dpsql connection with the real (cryptographic) noise; the bounded
relation is materialised by a first query (its time is printed apart). Each query asks one
aggregate at epsilon = 1, delta = 1e-6, so each mechanism gets the whole budget:
  time     median wall time of `cursor.execute` over the warm runs (compile cached after the first);
  P(⊥)     fraction of the --runs releases that were refused;
  error    median (and p90) absolute error of the released values against the exact answer from
           raw DuckDB (quantile_disc: the lower median; IQR = x_(ceil(3n/4)) - x_(ceil(n/4)));
           relative error for IQR; for MODE the fraction of releases that were the true mode.
The exponential mechanism (quantile_mechanism = 'exponential', bounds from the policy) is the
baseline. "raw DuckDB" times the exact quantile_disc / mode on the same in-memory table.

MODE sweep: fresh Zipf samples (labels permuted each time) at small n, one release each:
P(⊥) and P(wrong | released), the note's criterion "MODE correct whenever released from n = 2000".
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

import dpsql
from dpsql.backend.files import write_parquet

HERE = Path(__file__).resolve().parent
OPTIONS = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6"
LABELS = 50
ZIPF = 1.2

POLICY = """\
# bench/robust.py: one row per person, row-level privacy.
[budget]
epsilon = 1e9
delta = 0.5
default_query_epsilon = 1.0
default_query_delta = 1e-6

[tables.r]
privacy_unit = "pid"
max_rows = 1
max_groups = 1
source = "robust.parquet"

[tables.r.columns]
pid    = { type = "int" }
age    = { type = "int",   lower = 18, upper = 90 }
income = { type = "float", lower = 0,  upper = 500000 }
zipf   = { type = "text" }
"""


@dataclass(frozen=True)
class Case:
    label: str
    sql: str
    truth: str  # raw DuckDB SQL for the exact answer
    kind: str  # "abs", "rel" or "mode"


CASES = (
    Case("MEDIAN(age) SMed", f"{OPTIONS}) MEDIAN(age) FROM r", "SELECT quantile_disc(age, 0.5) FROM r", "abs"),
    Case("MEDIAN(age) EM", f"{OPTIONS}, quantile_mechanism = 'exponential') MEDIAN(age) FROM r",
         "SELECT quantile_disc(age, 0.5) FROM r", "abs"),
    Case("MEDIAN(income) SMed g=500", f"{OPTIONS}) MEDIAN(income) FROM r", "SELECT quantile_disc(income, 0.5) FROM r", "abs"),
    Case("MEDIAN(income, 100) PTR-Lap", f"{OPTIONS}) MEDIAN(income, 100) FROM r", "SELECT quantile_disc(income, 0.5) FROM r", "abs"),
    Case("MEDIAN(income) EM", f"{OPTIONS}, quantile_mechanism = 'exponential') MEDIAN(income) FROM r",
         "SELECT quantile_disc(income, 0.5) FROM r", "abs"),
    Case("IQR(income) Scale", f"{OPTIONS}) IQR(income) FROM r",
         "SELECT quantile_disc(income, 0.75) - quantile_disc(income, 0.25) FROM r", "rel"),
    Case("IQR(age) Scale", f"{OPTIONS}) IQR(age) FROM r",
         "SELECT quantile_disc(age, 0.75) - quantile_disc(age, 0.25) FROM r", "rel"),
    Case("MODE(zipf) A_samp", f"{OPTIONS}) MODE(zipf) FROM r", "SELECT mode(zipf) FROM r", "mode"),
)


def zipf_labels(rng: np.random.Generator, n: int, permute: bool = False) -> np.ndarray:
    weights = 1.0 / np.arange(1, LABELS + 1) ** ZIPF
    names = np.array([f"c{i:03d}" for i in range(LABELS)])
    if permute:
        names = rng.permutation(names)
    return names[np.minimum(np.searchsorted(np.cumsum(weights / weights.sum()), rng.random(n)), LABELS - 1)]


def generate(n: int, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)  # synthetic DATA, not privacy noise
    ages = np.arange(18, 91)
    weights = np.where(ages <= 60, 1.0, np.exp(-(ages - 60) / 12.0))
    age = ages[np.minimum(np.searchsorted(np.cumsum(weights / weights.sum()), rng.random(n)), len(ages) - 1)]
    income = np.round(np.clip(rng.lognormal(10.6, 0.8, n), 0, 500_000), 2)
    return pd.DataFrame({"pid": np.arange(n, dtype=np.int64), "age": age.astype(np.int64), "income": income,
                         "zipf": pd.Series(zipf_labels(rng, n), dtype="str")})


def data_dir(root: Path, rows: int) -> Path:
    directory = root / f"robust-{rows}"
    policy, parquet = directory / "policy.toml", directory / "robust.parquet"
    if not (policy.is_file() and parquet.is_file()):
        directory.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        write_parquet(generate(rows), parquet)
        policy.write_text(POLICY, encoding="utf-8")
        print(f"  wrote {rows:,} rows in {time.perf_counter() - started:.1f} s")
    return directory


def truths(directory: Path) -> tuple[dict[str, Any], dict[str, float]]:
    con = duckdb.connect()
    con.execute(f"CREATE TABLE r AS SELECT * FROM read_parquet('{directory / 'robust.parquet'}')")
    values, times = {}, {}
    for case in CASES:
        con.execute(case.truth).fetchall()  # warm
        started = time.perf_counter()
        values[case.truth] = con.execute(case.truth).fetchall()[0][0]
        times[case.truth] = time.perf_counter() - started
    con.close()
    return values, times


def error(case: Case, released: Any, truth: Any) -> float:
    if case.kind == "mode":
        return float(released == truth)
    if case.kind == "rel":
        return abs(released - truth) / truth if truth else abs(released)
    return abs(released - truth)


def run_size(rows: int, args: argparse.Namespace) -> None:
    directory = data_dir(Path(args.data_dir), rows)
    truth, raw_times = truths(directory)
    con = dpsql.connect(policy=directory / "policy.toml")
    started = time.perf_counter()
    con.cursor().execute(f"{OPTIONS}) COUNT(*) FROM r")
    print(f"\n{rows:,} rows: first query (materialises the bounded relation) {time.perf_counter() - started:.2f} s")
    print(f"  {'mechanism':30} {'time':>8} {'raw DuckDB':>10} {'P(⊥)':>6}  {'error: median (p90)':>26}  true value")
    for case in CASES:
        cur = con.cursor()
        times, errors, refused = [], [], 0
        for run in range(args.runs):
            started = time.perf_counter()
            cur.execute(case.sql)
            elapsed = time.perf_counter() - started
            if run > 0 or args.runs == 1:
                times.append(elapsed)
            value = cur.fetchall()[0][0]
            if value is None:
                refused += 1
            else:
                errors.append(error(case, value, truth[case.truth]))
        if case.kind == "mode":
            err = f"correct {statistics.fmean(errors):.2f}" if errors else "-"
        elif errors:
            errors.sort()
            p90 = errors[min(len(errors) - 1, int(0.9 * len(errors)))]
            fmt = (lambda e: f"{100 * e:.2f}%") if case.kind == "rel" else (lambda e: f"{e:.4g}")
            err = f"{fmt(statistics.median(errors))} ({fmt(p90)})"
        else:
            err = "-"
        print(f"  {case.label:30} {statistics.median(times):7.3f}s {raw_times[case.truth]:9.3f}s "
              f"{refused / args.runs:6.2f}  {err:>26}  {truth[case.truth]}")
    con.close()


def mode_sweep(args: argparse.Namespace) -> None:
    print(f"\nMODE(zipf) on fresh Zipf({ZIPF}) samples of {LABELS} labels, labels permuted, {args.sweep} data sets per n:")
    print(f"  {'n':>7} {'P(⊥)':>6} {'P(wrong | released)':>20}")
    rng = np.random.default_rng(11)
    policy = Path(args.data_dir) / "robust-sweep.toml"
    policy.parent.mkdir(parents=True, exist_ok=True)
    policy.write_text(POLICY.replace('source = "robust.parquet"\n', ""), encoding="utf-8")
    for n in (500, 1000, 2000, 5000, 10000):
        refused = wrong = 0
        for _ in range(args.sweep):
            labels = zipf_labels(rng, n, permute=True)
            frame = pd.DataFrame({"pid": np.arange(n), "age": 30, "income": 1.0, "zipf": labels})
            truth = pd.Series(labels).value_counts().idxmax()
            with dpsql.connect(policy=policy, tables={"r": frame}) as con:
                value = con.cursor().execute(f"{OPTIONS}) MODE(zipf) FROM r").fetchall()[0][0]
            refused += value is None
            wrong += value is not None and value != truth
        released = args.sweep - refused
        print(f"  {n:7,} {refused / args.sweep:6.2f} {wrong / released if released else float('nan'):20.3f}")


def describe_machine() -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "dpsql"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; Python {platform.python_version()}, "
          f"DuckDB {duckdb.__version__}, numpy {np.__version__}, pandas {pd.__version__}; "
          f"git {commit}{' (dpsql/ has uncommitted edits)' if dirty else ''}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--runs", type=int, default=21, help="releases per mechanism and size (the first is not timed)")
    parser.add_argument("--sweep", type=int, default=100, help="data sets per n in the MODE sweep")
    parser.add_argument("--data-dir", default=str(HERE / "data"))
    parser.add_argument("--mode-sweep-only", action="store_true")
    args = parser.parse_args(argv)
    describe_machine()
    print("epsilon = 1, delta = 1e-6 per query, one aggregate per query; row-level privacy (max_rows = 1)")
    if not args.mode_sweep_only:
        for rows in args.rows:
            run_size(rows, args)
    mode_sweep(args)


if __name__ == "__main__":
    main(sys.argv[1:])

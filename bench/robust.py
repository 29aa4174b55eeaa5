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
Bounded columns default to the exponential mechanism (MEDIAN) and two EM quartiles (IQR); the
PTR family (SMed, Scale) is asked for with quantile_mechanism = 'smed'. "raw DuckDB" times the
exact quantile_disc / mode on the same in-memory table.

Realistic regime (--regime): n rows in {1e4, 1e5, 1e6} with 3 rows per person (max_rows = 3),
epsilon in {0.1, 1}, delta 1e-6, the same lognormal income and age columns: per statistic the
answer rate, mean absolute error, median relative error, the coverage of the stated 95% interval
(value -+ ci95) and time per query; side by side with OpenDP's exponential-mechanism quantile (grid
50, d_in = 3) and diffprivlib's quantile (epsilon / 3 per row) when installed (the optional `bench`
extra; never needed by the tests).

MODE regime (--mode-regime): n rows in {1e4, 1e5} with 3 rows per person, epsilon in {0.1, 1},
delta 1e-6, a text column whose top value holds 30% or 10% of the rows and the rest is spread
evenly over 50 other values (1.4% / 1.8% each), or with a close second value holding 0.8 s
(24% / 8%): per mechanism (the stable-histogram mode, the
default here; A_samp with its default B, asked for with OPTIONS mode_blocks; report-noisy-max on
the same column with its 51 values declared) the answer rate, P(correct | answered), the mean
stated confidence and the share of answered releases that are wrong while claiming >= 90%.

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
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

import dpsql
from dpsql.backend.auxiliary.files import write_parquet
from dpsql.mechanisms.ptr import PTRTest
from dpsql.mechanisms.subsample import default_blocks

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


SMED = ", quantile_mechanism = 'smed'"
CASES = (
    Case("MEDIAN(age) default (EM)", f"{OPTIONS}) MEDIAN(age) FROM r", "SELECT quantile_disc(age, 0.5) FROM r", "abs"),
    Case("MEDIAN(age) SMed", f"{OPTIONS}{SMED}) MEDIAN(age) FROM r", "SELECT quantile_disc(age, 0.5) FROM r", "abs"),
    Case("MEDIAN(income) default (fine EM)", f"{OPTIONS}) MEDIAN(income) FROM r", "SELECT quantile_disc(income, 0.5) FROM r", "abs"),
    Case("MEDIAN(income) SMed g=500", f"{OPTIONS}{SMED}) MEDIAN(income) FROM r", "SELECT quantile_disc(income, 0.5) FROM r", "abs"),
    Case("MEDIAN(income, 100) PTR-Lap", f"{OPTIONS}) MEDIAN(income, 100) FROM r", "SELECT quantile_disc(income, 0.5) FROM r", "abs"),
    Case("IQR(income) default (2 fine EM)", f"{OPTIONS}) IQR(income) FROM r",
         "SELECT quantile_disc(income, 0.75) - quantile_disc(income, 0.25) FROM r", "rel"),
    Case("IQR(income) Scale", f"{OPTIONS}{SMED}) IQR(income) FROM r",
         "SELECT quantile_disc(income, 0.75) - quantile_disc(income, 0.25) FROM r", "rel"),
    Case("IQR(age) default (2 EM)", f"{OPTIONS}) IQR(age) FROM r",
         "SELECT quantile_disc(age, 0.75) - quantile_disc(age, 0.25) FROM r", "rel"),
    Case("MODE(zipf) default (histogram)", f"{OPTIONS}) MODE(zipf) FROM r", "SELECT mode(zipf) FROM r", "mode"),
    Case("MODE(zipf) A_samp", f"{OPTIONS}, mode_blocks = {default_blocks(PTRTest(Fraction(1), Fraction(1, 10**6)))}) "
         "MODE(zipf) FROM r", "SELECT mode(zipf) FROM r", "mode"),
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


# Replay off: every release of the table is a fresh draw (a repeated statement would otherwise get its kept answer).
REGIME_POLICY = (POLICY.replace("max_rows = 1", "max_rows = 3").replace('source = "robust.parquet"\n', "")
                 .replace("delta = 0.5\n", "delta = 0.5\nreplay_seconds = 0\n", 1))
REGIME = (
    ("MEDIAN(income)", "MEDIAN(income)", ("income", 0.5)),
    ("QUANTILE(income, 0.9)", "QUANTILE(income, 0.9)", ("income", 0.9)),
    ("IQR(income)", "IQR(income)", ("income", None)),
    ("MEDIAN(age)", "MEDIAN(age)", ("age", 0.5)),
    ("MIN(income)", "MIN(income)", ("income", "min")),
    ("MAX(age)", "MAX(age)", ("age", "max")),
    ("MEDIAN(income) SMed", "MEDIAN(income)", ("income", 0.5)),
    ("IQR(income) Scale", "IQR(income)", ("income", None)),
)
# The demo's query: five aggregates share the epsilon (issue 27); the robust columns' intervals are measured.
FIVE = ("MEDIAN(income), QUANTILE(income, 0.9), IQR(income), AVG(income), COUNT(*)",
        (("5-to-a-query MEDIAN", ("income", 0.5)), ("5-to-a-query QUANTILE 0.9", ("income", 0.9)),
         ("5-to-a-query IQR", ("income", None))))


def _lower_quantile(ordered: np.ndarray, p: float) -> float:
    return float(ordered[max(1, int(np.ceil(len(ordered) * p))) - 1])


@dataclass
class Cell:
    """Releases of one statistic at one (n, epsilon), pooled over the data seeds."""

    runs: int = 0
    errors: list[float] = field(default_factory=list)
    halves: list[float] = field(default_factory=list)
    covered: int = 0
    times: list[float] = field(default_factory=list)

    def add(self, value: Any, truth: float, half: Any, elapsed: float) -> None:
        self.runs += 1
        self.times.append(elapsed)
        if value is None:
            return
        self.errors.append(abs(value - truth))
        if half is not None:
            self.halves.append(float(half))
            self.covered += value - half <= truth <= value + half

    def row(self, rows: int, eps: float, label: str, truth: float) -> str:
        rate = len(self.errors) / self.runs if self.runs else 0.0
        if not self.errors:
            return f"  {rows:9,} {eps:5} {label:30} {rate:8.2f}"
        err95 = float(np.quantile(self.errors, 0.95))
        half = statistics.median(self.halves) if self.halves else float("nan")
        ratio = f"{half / err95:7.2f}" if self.halves and err95 > 0 else f"{'-':>7}"
        cover = f"{self.covered / len(self.halves):6.3f}" if self.halves else f"{'-':>6}"
        rel = f"{100 * statistics.median(self.errors) / truth:7.3f}%" if truth else f"{'-':>8}"
        return (f"  {rows:9,} {eps:5} {label:30} {rate:8.2f} {statistics.fmean(self.errors):10.4g} {rel} "
                f"{err95:10.4g} {half:10.4g} {ratio} {cover} {statistics.median(self.times):6.3f}s")


def regime(args: argparse.Namespace) -> None:  # noqa: C901 - a report: one optional column per library
    """The realistic-regime table (see the module docstring)."""
    try:
        import opendp.prelude as odp
        odp.enable_features("contrib")
    except ImportError:
        odp = None
        print("OpenDP is not installed (pip install -e '.[bench]'): its rows are left out")
    policy = Path(args.data_dir) / "robust-regime.toml"
    policy.parent.mkdir(parents=True, exist_ok=True)
    text = REGIME_POLICY
    if args.precision is not None:  # a declared precision for income: the public grid OpenDP's candidates use
        text = text.replace('income = { type = "float", lower = 0,  upper = 500000 }',
                            f'income = {{ type = "float", lower = 0,  upper = 500000, precision = {args.precision:g} }}')
    policy.write_text(text, encoding="utf-8")
    dpl_quantile = _diffprivlib_quantile()
    if dpl_quantile is None:
        print("diffprivlib is not installed (pip install -e '.[bench]'): its rows are left out")
    print(f"\nrealistic regime: 3 rows per person (max_rows = 3), delta 1e-6; {args.data_seeds} data set(s) per n "
          f"(seeds 7..), {args.regime_runs} releases each, pooled. MAE = mean |error|; rel = median relative error; "
          "err95 = 95th percentile of |error|; half = median stated 95% half-width (ci95); ratio = half / err95; "
          "cover = share of releases whose value -+ ci95 holds the true value (MIN/MAX: the r0-th value EXPLAIN names). "
          "Peers: row-level libraries at epsilon / 3 per row (diffprivlib) or d_in = 3 (OpenDP); their IQR is two "
          "quantiles at epsilon / 2 each")
    print(f"  {'n':>9} {'eps':>5} {'statistic':30} {'answered':>8} {'MAE':>10} {'rel':>8} {'err95':>10} {'half':>10} "
          f"{'ratio':>7} {'cover':>6} {'time':>7}")
    for rows in args.regime_rows:
        for eps in args.regime_eps:
            cells: dict[str, Cell] = {}
            truths: dict[str, float] = {}
            for seed in range(args.data_seeds):
                frame = generate(rows, seed=7 + seed)
                frame["pid"] = frame["pid"] // 3
                ordered = {c: np.sort(frame[c].to_numpy(dtype=float)) for c in ("income", "age")}
                with dpsql.connect(policy=policy, tables={"r": frame}) as con:
                    for label, call, (column, p) in REGIME:
                        if args.skip_ptr and ("SMed" in label or "Scale" in label):
                            continue
                        smed = "SMed" in label or "Scale" in label
                        share = "" if smed or args.interval_share is None else f", interval_share = {args.interval_share}"
                        sql = (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = {eps}, delta = 1e-6"
                               f"{SMED if smed else ''}{share}) {call} FROM r")
                        truth = _truth(con, sql, ordered[column], p)
                        truths[label] = truth
                        cell = cells.setdefault(label, Cell())
                        for _ in range(args.regime_runs):
                            cur = con.cursor()
                            started = time.perf_counter()
                            cur.execute(sql)
                            value = cur.fetchall()[0][0]
                            cell.add(value, truth, cur.noise_info[0].get("ci95"), time.perf_counter() - started)
                    share = "" if args.interval_share is None else f", interval_share = {args.interval_share}"
                    sql = f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = {eps}, delta = 1e-6{share}) {FIVE[0]} FROM r"
                    for _ in range(args.regime_runs):
                        cur = con.cursor()
                        started = time.perf_counter()
                        cur.execute(sql)
                        row = cur.fetchall()[0]
                        elapsed = time.perf_counter() - started
                        for index, (label, (column, p)) in enumerate(FIVE[1]):
                            truths[label] = _truth(con, sql, ordered[column], p)
                            cells.setdefault(label, Cell()).add(row[index], truths[label],
                                                                cur.noise_info[index].get("ci95"), elapsed)
                if odp is not None and not args.no_peers:
                    _opendp_cells(odp, eps, ordered["income"], cells, truths, args)
                if dpl_quantile is not None and not args.no_peers:
                    _diffprivlib_cells(dpl_quantile, eps, ordered["income"], cells, truths, args)
            for label, cell in cells.items():
                print(cell.row(rows, eps, label, truths[label]), flush=True)


def _truth(con: Any, sql: str, data: np.ndarray, p: Any) -> float:
    """The exact statistic a release estimates (MIN/MAX: the r0-th order statistic named by EXPLAIN)."""
    if p is None:
        return _lower_quantile(data, 0.75) - _lower_quantile(data, 0.25)
    if p in ("min", "max"):
        cur = con.cursor()
        cur.execute(f"EXPLAIN {sql}")
        line = next(row[0] for row in cur.fetchall() if "the r0 = " in row[0])
        r0 = int(line.split("the r0 = ")[1].split("-th")[0])
        half = -(-len(data) // 2)  # fewer than 2 r0 values: the median
        return float(data[min(r0, half) - 1] if p == "min" else data[max(len(data) + 1 - r0, half) - 1])
    return _lower_quantile(data, p)


def _diffprivlib_quantile() -> Any:
    """diffprivlib's quantile, or None. diffprivlib 0.6 imports its sklearn models on import and fails
    with scikit-learn >= 1.8; the quantile tool does not need them, so an empty stand-in is put first."""
    import types
    try:
        sys.modules.setdefault("diffprivlib.models", types.ModuleType("diffprivlib.models"))
        from diffprivlib.tools import quantile
    except ImportError:
        return None
    return quantile


PEER_STATS = ((0.5, "q0.5"), (0.9, "q0.9"), (None, "IQR"))


def _diffprivlib_cells(quantile: Any, eps: float, income: np.ndarray, cells: dict[str, Cell], truths: dict[str, float],
                       args: argparse.Namespace) -> None:
    # Row-level privacy (diffprivlib has no person bound): epsilon / 3 is the per-row share of 3 rows per person.
    for p, name in PEER_STATS:
        label = f"diffprivlib {name} (eps/3)"
        truths[label] = _lower_quantile(income, 0.75) - _lower_quantile(income, 0.25) if p is None else _lower_quantile(income, p)
        cell = cells.setdefault(label, Cell())
        for _ in range(args.regime_runs):
            started = time.perf_counter()
            if p is None:
                value = (quantile(income, 0.75, epsilon=eps / 6, bounds=(0, 500_000))
                         - quantile(income, 0.25, epsilon=eps / 6, bounds=(0, 500_000)))
            else:
                value = quantile(income, p, epsilon=eps / 3, bounds=(0, 500_000))
            cell.add(float(value), truths[label], None, time.perf_counter() - started)


def _opendp_cells(odp: Any, eps: float, income: np.ndarray, cells: dict[str, Cell], truths: dict[str, float],
                  args: argparse.Namespace) -> None:
    space = (odp.vector_domain(odp.atom_domain(T=float, nan=False)), odp.symmetric_distance())
    candidates = [float(c) for c in np.arange(0, 500_001, 50.0)]
    values = income.tolist()

    def measure(p: float, budget: float) -> Any:
        return odp.binary_search_chain(
            lambda s: odp.m.make_private_quantile(*space, odp.max_divergence(), candidates=candidates, alpha=p, scale=s),
            d_in=3, d_out=budget)

    runs = max(3, args.regime_runs // (4 if len(income) >= 1_000_000 else 1))
    for p, name in PEER_STATS:
        label = f"OpenDP EM {name} (grid 50)"
        truths[label] = _lower_quantile(income, 0.75) - _lower_quantile(income, 0.25) if p is None else _lower_quantile(income, p)
        cell = cells.setdefault(label, Cell())
        pair = (measure(0.75, eps / 2), measure(0.25, eps / 2)) if p is None else (measure(p, eps),)
        for _ in range(runs):
            started = time.perf_counter()
            value = pair[0](values) - pair[1](values) if p is None else pair[0](values)
            cell.add(float(value), truths[label], None, time.perf_counter() - started)


OTHERS = 50
MODE_POLICY = """
[budget]
epsilon = 40.0
delta = 0.0001
default_query_epsilon = 1
default_query_delta = 1e-6

[tables.r]
privacy_unit = "pid"
max_rows = 3
max_groups = 1

[tables.r.columns]
pid = { type = "int" }
label = { type = "text" }
declared = { type = "text", values = [%s] }
"""


def mode_frame(rows: int, share: float, rng: np.random.Generator, runner_up: float = 0.0) -> pd.DataFrame:
    """`share` of the rows on "top"; with `runner_up` > 0, "v00" holds runner_up * share (a close
    second); the rest spread evenly over the other values."""
    names = np.array(["top"] + [f"v{i:02d}" for i in range(OTHERS)])
    second = runner_up * share
    rest = (1 - share - second) / (OTHERS - 1 if second else OTHERS)
    weights = np.array([share] + ([second] if second else [rest]) + [rest] * (OTHERS - 1))
    labels = names[rng.choice(len(names), rows, p=weights)]
    return pd.DataFrame({"pid": np.arange(rows, dtype=np.int64) // 3, "label": labels, "declared": labels})


def mode_regime(args: argparse.Namespace) -> None:
    """MODE at realistic settings: the stable-histogram mode, A_samp and report-noisy-max side by side.

    One connection per cell with a budget of 40 (20 releases at epsilon <= 1 fit): the accountant's
    first headroom check is slow for very large budgets (about a minute at epsilon 1000)."""
    policy = Path(args.data_dir) / "robust-mode.toml"
    policy.parent.mkdir(parents=True, exist_ok=True)
    names = ", ".join(f'"{v}"' for v in ["top"] + [f"v{i:02d}" for i in range(OTHERS)])
    policy.write_text(MODE_POLICY % names, encoding="utf-8")
    rng = np.random.default_rng(5)  # synthetic DATA, not privacy noise
    print(f"\nMODE regime: 3 rows per person, delta 1e-6, top value share s, the rest over {OTHERS} values; "
          f"{args.regime_runs} releases each; conf = mean stated confidence; bad90 = wrong and claiming >= 90%")
    print(f"  {'n':>8} {'eps':>4} {'s':>4} {'2nd':>4} {'mechanism':18} {'answered':>8} {'correct':>8} {'conf':>6} {'bad90':>6} {'time':>7}")
    for rows in args.mode_rows:
        for share, runner_up in ((0.3, 0.0), (0.1, 0.0), (0.3, 0.8), (0.1, 0.8)):
            frame = mode_frame(rows, share, rng, runner_up)
            truth = frame["label"].value_counts().idxmax()
            for eps in (0.1, 1.0):
                blocks = default_blocks(PTRTest(Fraction(str(eps)), Fraction(1, 10**6)))
                options = f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = {eps}, delta = 1e-6"
                for label, sql in (("stable-histogram", f"{options}) MODE(label) FROM r"),
                                   (f"A_samp B={blocks}", f"{options}, mode_blocks = {blocks}) MODE(label) FROM r"),
                                   ("noisy-max (decl.)", f"{options}) MODE(declared) FROM r")):
                    answered = correct = bad = 0
                    sure, times = [], []
                    with dpsql.connect(policy=policy, tables={"r": frame}) as con:
                        for _ in range(args.regime_runs):
                            cur = con.cursor()
                            started = time.perf_counter()
                            value = cur.execute(sql).fetchall()[0][0]
                            times.append(time.perf_counter() - started)
                            if value is None:
                                continue
                            confidence = float(cur.noise_info[0]["confidence"])
                            answered += 1
                            correct += value == truth
                            bad += value != truth and confidence >= 0.9
                            sure.append(confidence)
                    rate = answered / args.regime_runs
                    right = f"{correct / answered:8.2f}" if answered else f"{'-':>8}"
                    conf = f"{statistics.fmean(sure):6.3f}" if sure else f"{'-':>6}"
                    print(f"  {rows:8,} {eps:4} {share:4} {runner_up * share:4.2f} {label:18} {rate:8.2f} {right} {conf} {bad / args.regime_runs:6.2f} "
                          f"{statistics.median(times):6.3f}s")


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
    parser.add_argument("--regime", action="store_true", help="only the realistic-regime table (3 rows per person)")
    parser.add_argument("--regime-rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--regime-runs", type=int, default=20)
    parser.add_argument("--regime-eps", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--data-seeds", type=int, default=3, help="data sets per n in the regime table (pooled)")
    parser.add_argument("--skip-ptr", action="store_true", help="regime table without the SMed / Scale rows")
    parser.add_argument("--no-peers", action="store_true", help="regime table without OpenDP and diffprivlib")
    parser.add_argument("--precision", type=float, default=None,
                        help="regime table: declare income's precision (e.g. 50, the grid of OpenDP's candidates)")
    parser.add_argument("--interval-share", type=float, default=None,
                        help="regime table: OPTIONS (interval_share = s) on dpsql's exponential-mechanism quantiles (default: none)")
    parser.add_argument("--mode-regime", action="store_true", help="only the MODE table (histogram, A_samp, noisy-max)")
    parser.add_argument("--mode-rows", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args(argv)
    describe_machine()
    if args.regime:
        regime(args)
        return
    if args.mode_regime:
        mode_regime(args)
        return
    print("epsilon = 1, delta = 1e-6 per query, one aggregate per query; row-level privacy (max_rows = 1)")
    if not args.mode_sweep_only:
        for rows in args.rows:
            run_size(rows, args)
    mode_sweep(args)


if __name__ == "__main__":
    main(sys.argv[1:])

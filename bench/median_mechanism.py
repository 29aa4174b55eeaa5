"""The Median Mechanism layer: queries answered within A vs per-query noise, and latency.

    python bench/median_mechanism.py                     # everything (tens of minutes on 2 shared cores)
    python bench/median_mechanism.py --part utility --quick   # the |X| < 10^6, K = 6,000 rows only
    python bench/median_mechanism.py --part latency --sizes 100000

Run by hand, not a test (bench/README.md). Every number printed is measured in this run.

1. Utility at one total budget (default epsilon 0.3, delta 1e-6, n = 10^6 persons, one row each,
   A = 5,000 at 95%), on latent-class data (10 classes, skewed Dirichlet(0.3) marginals) over
   |X| in {480 (9 x 5 x 7 values + NULL cells; 315 regular cells), 15,147, 10^6} and correlated
   workloads of K in {6,000, 100,000} queries (drill-downs and overlapping ranges on column pairs,
   bench/workloads.py, fixed seeds):
     laplace (basic)      per-query discrete Laplace of scale K/epsilon (basic composition);
     gaussian (zCDP/PLD)  per-query discrete Gaussian, sigma = sqrt(K / 2 rho) (what the tight
                          accountant allows for K equal releases; PLD is within a few % of it);
     layer identity       the layer forced to one noisy histogram (every query post-processing);
     layer pmw            the layer forced to private multiplicative weights with its warm start,
                          calibrated with expected_queries = K;
   "(chosen)" marks the strategy the layer picks from public facts. A layer that halts answers
   nothing more (at one total budget nothing is left for a per-query fallback): those queries
   count as not within A. Columns: queries within A, their share, the median |error|.
3. The auto decision (--part decision): the issue's layer (dept x region x age x income bins, ~257k
   cells, 10^6 persons, reservation epsilon 0.3, A = 5,000) under the old rule (c >= 100) and
   LayerPlan.decide, then the layer it turns on, run on latent-class data of that shape with K =
   1,500 correlated queries, next to per-query noise on the same reservation.
2. Latency through SQL (Session.execute, the whole path: parse, analysis, plan, mask query on the
   domain table, model, sparse vector, result) per measured, easy and hard answer at |X| = 1e3,
   1e4, 1e5 (3, 4, 5 int columns of 9 declared values + NULL, 200,000 rows), next to the ordinary
   per-query path on the same queries. Targets: easy <= 20 ms, hard <= 200 ms at 1e5.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from fractions import Fraction
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
from workloads import conj_mask, workload  # bench/ is on sys.path when run as a script

import dpsql
from dpsql.catalog.policy import MedianMechanismConfig, MMColumnDomain
from dpsql.mechanisms.median_mechanism.core import LayerCore, SecretHistogram
from dpsql.mechanisms.median_mechanism.domain import DomainIndex, QueryShape
from dpsql.mechanisms.median_mechanism.strategy import LayerPlan, plan_layer
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.mechanisms.sparse_vector import rho_from_epsilon_delta

HERE = Path(__file__).resolve().parent
DELTA = Fraction(1, 10**6)


def log(message: str = "") -> None:
    print(message, flush=True)


def header(argv: list[str]) -> None:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True, check=False).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "dpsql"], cwd=HERE.parent, capture_output=True, text=True, check=False).stdout
    except OSError:
        commit, dirty = "?", ""
    log(f"command: python bench/median_mechanism.py {' '.join(argv)}")
    log(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; commit {commit}{' (+ uncommitted dpsql edits)' if dirty else ''}")
    log(f"machine: {platform.machine()} {platform.system()}; cores = {os.cpu_count()}; load average {os.getloadavg()}")
    log(f"versions: dpsql {dpsql.__version__}, duckdb {duckdb.__version__}, numpy {np.__version__}, python {platform.python_version()}")


# --- workloads and data ----------------------------------------------------------------------


def latent_class(sizes: list[int], n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    classes = rng.choice(10, size=n, p=rng.dirichlet(np.ones(10)))
    x = np.zeros(n, dtype=np.int64)
    for size in sizes:
        cumulative = np.cumsum(rng.dirichlet(np.full(size, 0.3), size=10), axis=1)[classes]
        x = x * (size + 1) + np.minimum((rng.random(n)[:, None] > cumulative).sum(axis=1), size - 1)
    return np.bincount(x, minlength=int(np.prod([s + 1 for s in sizes]))).astype(np.int64)


def int_domain(sizes: list[int], mode: str, epsilon: Fraction, accuracy: int) -> DomainIndex:
    domains = tuple(MMColumnDomain(f"c{i}", "int", "values", values=tuple(range(s))) for i, s in enumerate(sizes))
    return DomainIndex(MedianMechanismConfig(domains=domains, epsilon=epsilon, accuracy=Fraction(accuracy), mode=mode,  # type: ignore[arg-type]
                                             delta=DELTA if mode == "zcdp" else Fraction(0)))


# --- part 1: utility -------------------------------------------------------------------------


def laplace_within(scale: float, accuracy: int) -> tuple[float, float]:
    """(P(|X| <= A), median |X|) for discrete Laplace of this scale (continuous median: b ln 2)."""
    p = math.exp(-1 / scale)
    return 1 - 2 * p ** (accuracy + 1) / (1 + p), scale * math.log(2)


def gaussian_within(sigma: float, accuracy: int) -> tuple[float, float]:
    return math.erf((accuracy + 0.5) / (sigma * math.sqrt(2))), 0.6745 * sigma


def run_layer(counts: np.ndarray, sizes: list[int], queries: list, plan: LayerPlan, accuracy: int) -> dict[str, object]:
    """The layer (LayerCore with this plan) on the workload: a halted layer answers nothing more
    (at the same total budget nothing is left for a per-query fallback)."""
    domain = int_domain(sizes, plan.calibration.mode, plan.calibration.epsilon, accuracy)
    start = time.perf_counter()
    core = LayerCore(plan, domain, SecretHistogram(counts), SeededRandomSource(1))
    setup = time.perf_counter() - start
    errors, kinds = [], {"easy": 0, "hard": 0, "repeat": 0, "measured": 0}
    times: dict[str, list[float]] = {k: [] for k in kinds}
    for sets in queries:
        # The columns the query names, as the SQL path passes them (dpsql.execution.median_layer).
        shape = QueryShape(conj_mask(sizes, sets), columns=tuple(i for i, c in enumerate(sets) if c is not None))
        start = time.perf_counter()
        release = core.answer(shape)
        elapsed = time.perf_counter() - start
        if release is None:
            break
        kinds[release.kind] += 1
        times[release.kind].append(elapsed)
        errors.append(abs(int(release.values[0]) - int(counts[shape.mask].sum())))
    errs = np.array(errors + [10**12] * (len(queries) - len(errors)))  # unanswered: not within A
    ms = {k: 1000 * float(np.median(v)) for k, v in times.items() if v}
    return {"within": int((errs <= accuracy).sum()), "median": float(np.median(errs)) if len(errors) == len(queries) else float(np.median(errs)),
            "answered": len(errors), "kinds": kinds, "cap": plan.calibration.cap, "halted": core.halted, "ms": ms,
            "setup": setup, "memory": core.model.memory_bytes()}


ROWS = {350: [9, 5, 7], 15_000: [16, 10, 8, 8], 10**6: [9, 9, 9, 9, 9, 9]}


def utility_row(label: int, count: int, epsilon: Fraction, accuracy: int, n: int,
                strategies: tuple[str, ...] = ("identity", "pmw")) -> None:
    sizes = ROWS[label]
    counts = latent_class(sizes, n, seed=7)
    pairs = [(i, i + 1) for i in range(len(sizes) - 1)] + [(0, len(sizes) - 1)]
    queries = workload(sizes, count, seed=3, pairs=pairs)
    rho = rho_from_epsilon_delta(epsilon, DELTA)
    log(f"\n|X| = {counts.size:,} ({' x '.join(str(s + 1) for s in sizes)} with NULL cells), n = {n:,}, K = {count:,} queries, "
        f"epsilon {float(epsilon):g}, delta 1e-6, A = {accuracy:,}")
    log(f"  {'mechanism':<24} {'within A':>9} {'% within':>9} {'median |err|':>13}  notes")
    within, median = laplace_within(count / float(epsilon), accuracy)
    log(f"  {'laplace (basic)':<24} {within * count:>9,.0f} {100 * within:>8.1f}% {median:>13,.0f}  scale K/epsilon (exact law)")
    sigma = math.sqrt(count / (2 * float(rho)))
    within, median = gaussian_within(sigma, accuracy)
    log(f"  {'gaussian (zCDP/PLD)':<24} {within * count:>9,.0f} {100 * within:>8.1f}% {median:>13,.0f}  sigma {sigma:,.0f} = sqrt(K / 2 rho)")
    chosen = plan_layer(mode="zcdp", epsilon=epsilon, delta=DELTA, accuracy=Fraction(accuracy), sensitivity=1,
                        sizes=tuple(s + 1 for s in sizes), expected_queries=count)
    for strategy in strategies:
        plan = plan_layer(mode="zcdp", epsilon=epsilon, delta=DELTA, accuracy=Fraction(accuracy), sensitivity=1,
                          sizes=tuple(s + 1 for s in sizes), expected_queries=count, strategy=strategy)  # type: ignore[arg-type]
        start = time.perf_counter()
        r = run_layer(counts, sizes, queries, plan, accuracy)
        label_text = f"layer {strategy}" + (" (chosen)" if strategy == chosen.strategy else "")
        ms = ", ".join(f"{k} {v:.2f} ms" for k, v in r["ms"].items())  # type: ignore[attr-defined]
        log(f"  {label_text:<24} {r['within']:>9,} {100 * r['within'] / count:>8.1f}% {r['median']:>13,.0f}  "
            f"{plan.measurement}; answered {r['answered']:,}{' then halted' if r['halted'] else ''}; kinds {r['kinds']}; "
            f"cap {r['cap']}; {ms}; setup {r['setup']:.1f} s; model {r['memory'] / 2**20:.1f} MiB; "
            f"{time.perf_counter() - start:.0f} s")


def part_utility(args: argparse.Namespace) -> None:
    log("\n== 1. Queries answered within A at one budget: per-query noise vs the layer ==")
    epsilon = Fraction(args.epsilon).limit_denominator(1000)
    for label in args.domains:
        for count in args.workloads:
            if args.quick and (label == 10**6 or count > 6000):
                continue
            utility_row(label, count, epsilon, args.accuracy, args.n, tuple(args.strategies))


# --- part 3: the auto decision on the issue's layer -----------------------------------------

ISSUE_SIZES = [8, 40, 73, 11]  # dept x region (40 declared values) x age x 11 income bins (+ NULL cells: ~257k)


def part_decision(args: argparse.Namespace) -> None:
    """The issue's layer (10^6 persons, reservation epsilon 0.3, A = 5,000): the old rule (c >= 100)
    and LayerPlan.decide, then the layer run on latent-class data of that shape with a correlated
    workload of K queries, against per-query noise on the same reservation."""
    log("\n== 3. The auto decision: dept x region x age x income bins, 10^6 persons, epsilon 0.3, A = 5,000 ==")
    sizes = ISSUE_SIZES
    epsilon, accuracy = Fraction(3, 10), 5000
    for mode in ("pure", "zcdp"):
        for expected in (None, args.decision_queries):
            plan = plan_layer(mode=mode, epsilon=epsilon, delta=DELTA if mode == "zcdp" else Fraction(0),  # type: ignore[arg-type]
                              accuracy=Fraction(accuracy), sensitivity=1, sizes=tuple(x + 1 for x in sizes),
                              expected_queries=expected)
            on, why = plan.decide()
            log(f"  {mode:5} expected_queries={expected}: {plan.strategy}, c = {plan.calibration.cap}; before (c >= 100): "
                f"{'on' if plan.calibration.cap >= 100 else 'off'}; now: {'on' if on else 'off'} ({why})")
    count = args.decision_queries
    counts = latent_class(sizes, args.n, seed=7)
    pairs = [(i, i + 1) for i in range(len(sizes) - 1)] + [(0, len(sizes) - 1)]
    queries = workload(sizes, count, seed=3, pairs=pairs)
    plan = plan_layer(mode="zcdp", epsilon=epsilon, delta=DELTA, accuracy=Fraction(accuracy), sensitivity=1,
                      sizes=tuple(x + 1 for x in sizes))
    log(f"\n  |X| = {counts.size:,}, n = {args.n:,}, K = {count:,} correlated queries, zCDP, the plan decide() turns on:")
    start = time.perf_counter()
    r = run_layer(counts, sizes, queries, plan, accuracy)
    ms = ", ".join(f"{k} {v:.2f} ms" for k, v in r["ms"].items())  # type: ignore[attr-defined]
    log(f"  {'layer (auto: on)':<26} {r['within']:>6,} of {count:,} within A, median |err| {r['median']:,.0f}; "
        f"kinds {r['kinds']}; cap {r['cap']}; {ms}; {time.perf_counter() - start:.0f} s")
    rho = rho_from_epsilon_delta(epsilon, DELTA)
    sigma = math.sqrt(count / (2 * float(rho)))
    within, median = gaussian_within(sigma, accuracy)
    log(f"  {'per-query gaussian':<26} {within * count:>6,.0f} of {count:,} within A, median |err| {median:,.0f} "
        f"(sigma {sigma:,.0f}: K answers on the same reservation)")
    within, median = laplace_within(count / float(epsilon), accuracy)
    log(f"  {'per-query laplace (basic)':<26} {within * count:>6,.0f} of {count:,} within A, median |err| {median:,.0f}")
    log("  before (the layer off): per-query noise at the policy's default query epsilon spends it on every query")


# --- part 2: latency through SQL -------------------------------------------------------------


def latency(columns: int, rows: int, count: int) -> None:
    sizes = [9] * columns
    rng = np.random.default_rng(columns)
    frame = pd.DataFrame({"pid": np.arange(rows)})
    for i in range(columns):
        frame[f"c{i}"] = np.minimum(rng.geometric(0.3, rows) - 1, 8)
    cols = "\n".join(f'c{i} = {{ type = "int", values = {list(range(9))} }}' for i in range(columns))
    base = f"""[budget]
epsilon = 1e9
delta = 0.5
default_query_epsilon = 0.1
default_query_delta = 1e-8

[tables.t]
privacy_unit = "pid"
max_rows = 1

[tables.t.columns]
pid = {{ type = "int" }}
{cols}
"""
    layer = f"""
[tables.t.median_mechanism]
columns = {[f"c{i}" for i in range(columns)]}
epsilon = 1.0
accuracy = {rows // 100}
mode = "zcdp"
delta = 1e-6
""".replace("'", '"')
    queries = workload(sizes, count, seed=columns, pairs=[(0, 1), (1, 2), (0, 2)])

    def sql(sets: list[list[int] | None]) -> str:
        parts = [f"c{i} BETWEEN {s[0]} AND {s[-1]}" if len(s) > 1 else f"c{i} = {s[0]}" for i, s in enumerate(sets) if s is not None]
        return "SELECT COUNT(*) FROM t" + (" WHERE " + " AND ".join(parts) if parts else "")

    with tempfile.TemporaryDirectory() as tmp:
        with_layer, plain = Path(tmp) / "mm.toml", Path(tmp) / "plain.toml"
        with_layer.write_text(base + layer)
        plain.write_text(base)
        con = dpsql.connect(policy=with_layer, tables={"t": frame})
        other = dpsql.connect(policy=plain, tables={"t": frame})
        cur, cur2 = con.cursor(), other.cursor()
        cur.execute("SELECT COUNT(*) FROM t")  # reservation + histogram (timed apart)
        cur2.execute("SELECT COUNT(*) FROM t")
        times: dict[str, list[float]] = {"easy": [], "hard": [], "repeat": [], "measured": [], "laplace": []}
        for sets in queries:
            text = sql(sets)
            start = time.perf_counter()
            cur.execute(text)
            elapsed = time.perf_counter() - start
            times[cur.noise_info[0].get("kind", "laplace")].append(elapsed)
            start = time.perf_counter()
            cur2.execute(text)
            times["laplace"].append(time.perf_counter() - start)
        layer_state = con.session.median_mechanism.layer("t")
        con.close()
        other.close()

    def fmt(values: list[float]) -> str:
        if not values:
            return "       -"
        return f"{1000 * np.median(values):6.1f} / {1000 * np.quantile(values, 0.9):6.1f}"

    log(f"  |X| = {10**columns:>7,}  easy {fmt(times['easy'])}  hard {fmt(times['hard'])}  measured {fmt(times['measured'])}  "
        f"repeat {fmt(times['repeat'])}  "
        f"ordinary Laplace path {fmt(times['laplace'])}   ({len(times['easy'])} easy, {len(times['hard'])} hard, "
        f"{len(times['repeat'])} repeat; cap {layer_state.calibration.cap})")


def part_latency(args: argparse.Namespace) -> None:
    log("\n== 2. Latency through SQL (Session.execute), ms p50 / p90 ==")
    for size in args.sizes:
        latency(round(math.log10(size)), args.latency_rows, args.latency_queries)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["utility", "latency", "decision", "all"], default="all")
    parser.add_argument("--decision-queries", type=int, default=1500, help="K of the decision part's workload")
    parser.add_argument("--epsilon", type=float, default=0.3, help="total epsilon of the utility comparison")
    parser.add_argument("--accuracy", type=int, default=5000, help="the target A (95%%)")
    parser.add_argument("--n", type=int, default=10**6, help="persons (one row each)")
    parser.add_argument("--domains", type=int, nargs="+", default=[350, 15_000, 10**6], choices=sorted(ROWS))
    parser.add_argument("--workloads", type=int, nargs="+", default=[6000, 100_000])
    parser.add_argument("--quick", action="store_true", help="only the rows with |X| < 10^6 and K = 6,000")
    parser.add_argument("--strategies", nargs="+", default=["identity", "pmw"], choices=["identity", "pmw"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000], help="|X| for the latency part")
    parser.add_argument("--latency-rows", type=int, default=200_000)
    parser.add_argument("--latency-queries", type=int, default=400)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    header(argv)
    if args.part in ("utility", "all"):
        part_utility(args)
    if args.part in ("latency", "all"):
        part_latency(args)
    if args.part in ("decision", "all"):
        part_decision(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""SUM(DISTINCT x), AVG(DISTINCT x) and COUNT(DISTINCT x) on neighbouring databases, through the
engine's own computation on the bounded relation: the sensitivity each release states covers
what one person moves, and the noise makes the (epsilon, 0) inequality hold.

Policy: t(pid, g in {a, b, c}, x int in [0, 100]), max_rows k = 3. D' = 300 persons with 1-3
rows, x in [0, 90] (no value above 90 anywhere). Two neighbours D = D' plus one person with k
rows: `spread` holds x = 100 in each of a, b and c (a new distinct value in every group), `one`
holds x = 100, 99, 98 all in group a (three new distinct values in one group).

1. Exact check (deterministic): the engine query of `SELECT g, SUM(DISTINCT x), AVG(DISTINCT x),
   COUNT(DISTINCT x) ... GROUP BY g` run on both bounded relations; for each release, the L1
   change over all groups must not exceed the sensitivity the plan states (grid units), and
   `spread` attains it: k * 100 for the sum, k * 50 for AVG's centred sum (centre 50), k for
   the counts. Ungrouped, `one` moves the sum by 297 <= 300.
2. DP inequality: `SUM(DISTINCT x)` of group a at epsilon 1 (scale 300) on D = D' + `one`
   (shift 297): S_hi = {out >= s_D}, S_lo = {out <= s_D'} have probability ratio e^0.99 <= e,
   checked with Clopper-Pearson bounds at family confidence 1 - 1e-6.

Negative control: a plan that drops the factor k for DISTINCT (a person "adds one distinct
value") states 100 for the sum: check 1 flags it (300 > 100), and check 2 flags it (scale 100
for a shift of 297: ratio e^2.97; `control_detected` shows 700 runs suffice at the 1e-6
quantiles).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpsql.accounting.ledger import Ledger
from dpsql.aggregates.sums import Sums
from dpsql.analysis.context import AnalysisContext
from dpsql.backend.engines.duckdb_engine import DuckDBEngine
from dpsql.backend.sql.engine_dialects import render
from dpsql.catalog.loader import load_policy
from dpsql.execution.compiled import CompiledQuery, compile_statement
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.session import Session
from tests.statistical.neighbour_checks import control_detected, violates

pytestmark = pytest.mark.statistical

POLICY = """
[budget]
epsilon = 1e12
delta = 1e-5
default_query_epsilon = 1
default_query_delta = 1e-7

[tables.t]
privacy_unit = "pid"
max_rows = 3
max_groups = 3
[tables.t.columns]
pid = { type = "int" }
g = { type = "text", values = ["a", "b", "c"] }
x = { type = "int", lower = 0, upper = 100 }
"""
NEW_ID = 10**6
GROUPED = "SELECT g, SUM(DISTINCT x), AVG(DISTINCT x), COUNT(DISTINCT x) FROM t GROUP BY g"
UNGROUPED = "SELECT SUM(DISTINCT x) FROM t"
DP_SQL = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) g, SUM(DISTINCT x) FROM t GROUP BY g"
RUNS, CONTROL_RUNS = 600, 700


def frames() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(20261128)  # synthetic data, not privacy noise
    ids = np.repeat(np.arange(1, 301), rng.integers(1, 4, 300))
    base = pd.DataFrame({"pid": ids, "g": rng.choice(["a", "b", "c"], ids.size), "x": rng.integers(0, 91, ids.size)})
    spread = pd.DataFrame({"pid": [NEW_ID] * 3, "g": ["a", "b", "c"], "x": [100, 100, 100]})
    one = pd.DataFrame({"pid": [NEW_ID] * 3, "g": ["a", "a", "a"], "x": [100, 99, 98]})
    return {"D2": base, "spread": pd.concat([base, spread], ignore_index=True), "one": pd.concat([base, one], ignore_index=True)}


@pytest.fixture(scope="module")
def policy_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("distinct") / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def engines(policy_path: Path) -> Iterator[dict[str, DuckDBEngine]]:
    policy = load_policy(policy_path)
    opened = {name: DuckDBEngine(policy, None, {"t": frame}) for name, frame in frames().items()}
    yield opened
    for engine in opened.values():
        engine.close()


def compiled(policy_path: Path, sql: str) -> CompiledQuery:
    policy = load_policy(policy_path)
    _, query = compile_statement(sql, None, AnalysisContext(policy, policy.budget.default_query))
    assert isinstance(query, CompiledQuery)
    return query


def raw_releases(engine: DuckDBEngine, query: CompiledQuery) -> dict[object, list[int]]:
    """The exact releases (grid units) per group, as the engine computes them on the bounded relation."""
    engine.ensure_bounded(query.plan.query.table, 7)  # every person has <= k rows: the seed keeps every row
    result = engine.run(render(query.engine, "duckdb"), {"seed": 7} if query.uses_seed else None)
    keys = len(query.plan.query.keys)
    return {row[:keys]: [int(v) for v in row[keys:keys + len(query.plan.releases)]] for row in result.rows}


def l1_changes(engines: dict[str, DuckDBEngine], query: CompiledQuery, neighbour: str) -> list[int]:
    d, d2 = raw_releases(engines[neighbour], query), raw_releases(engines["D2"], query)
    width = len(query.plan.releases)
    return [sum(abs(d.get(k, [0] * width)[i] - d2.get(k, [0] * width)[i]) for k in d.keys() | d2.keys()) for i in range(width)]


def stated(query: CompiledQuery) -> list[Fraction]:
    return [r.spec.sensitivity for r in query.plan.releases]


def drop_distinct_factor(monkeypatch: pytest.MonkeyPatch) -> None:
    original = Sums.needs

    def needs(self, call, query, bounding):  # type: ignore[no-untyped-def]
        found = original(self, call, query, bounding)
        if not call.distinct:
            return found
        return replace(found, releases=tuple((raw, s / bounding.max_rows) for raw, s in found.releases))

    monkeypatch.setattr(Sums, "needs", needs)


# --- 1: exact changes against the stated sensitivity ---------------------------------------------


def test_one_person_moves_each_distinct_release_by_at_most_its_stated_sensitivity(policy_path, engines) -> None:
    query = compiled(policy_path, GROUPED)
    assert [r.raw.distinct for r in query.plan.releases] == [True, True, True, False]  # sum, centred sum, count; COUNT(DISTINCT)
    for neighbour in ("spread", "one"):
        changes = l1_changes(engines, query, neighbour)
        assert all(c <= s for c, s in zip(changes, stated(query))), (neighbour, changes, stated(query))
    # `spread` attains every bound: a new distinct value in each of k groups
    assert stated(query) == [300, 150, 3, 3] and l1_changes(engines, query, "spread") == [300, 150, 3, 3]
    ungrouped = compiled(policy_path, UNGROUPED)
    assert stated(ungrouped) == [300] and l1_changes(engines, ungrouped, "one") == [297]


def test_control_distinct_sums_without_the_max_rows_factor_are_caught(policy_path, engines, monkeypatch) -> None:
    drop_distinct_factor(monkeypatch)
    query = compiled(policy_path, GROUPED)
    assert stated(query)[:3] == [100, 50, 1]
    assert l1_changes(engines, query, "spread")[:3] == [300, 150, 3]  # check 1 fails: each change above its claim


# --- 2: the DP inequality at epsilon 1 --------------------------------------------------------------



def group_a(policy_path: Path, engine: DuckDBEngine, seed: int) -> int:
    session = Session(load_policy(policy_path), engine, Ledger(None), rng=SeededRandomSource(seed))
    return next(int(row[1]) for row in session.execute(DP_SQL).rows if row[0] == "a")


def event_counts(policy_path: Path, engines: dict[str, DuckDBEngine], runs: int) -> dict[str, tuple[int, int]]:
    data = frames()
    exact = {name: int(data[name][data[name].g == "a"].x.drop_duplicates().sum()) for name in ("one", "D2")}
    assert exact["one"] - exact["D2"] == 297
    outs = {name: [group_a(policy_path, engines[name], first + s) for s in range(runs)] for name, first in (("one", 0), ("D2", 10_000))}
    return {"hi": (sum(v >= exact["one"] for v in outs["one"]), sum(v >= exact["one"] for v in outs["D2"])),
            "lo": (sum(v <= exact["D2"] for v in outs["D2"]), sum(v <= exact["D2"] for v in outs["one"]))}


def test_distinct_sum_satisfies_the_dp_inequality(policy_path, engines) -> None:
    counts = event_counts(policy_path, engines, RUNS)
    assert not violates(*counts["hi"], RUNS) and not violates(*counts["lo"], RUNS), counts
    q = math.exp(-1 / 300)  # scale 300: the sample has the intended distribution (binomial tests at 1e-6)
    for hits, p in ((counts["hi"][0], 1 / (1 + q)), (counts["hi"][1], q**297 / (1 + q))):
        assert stats.binomtest(hits, RUNS, p).pvalue > 1e-6, counts



def test_control_the_dp_check_catches_distinct_sums_without_the_factor(policy_path, engines, monkeypatch) -> None:
    assert control_detected(scale=100, shift=297, n=CONTROL_RUNS)
    drop_distinct_factor(monkeypatch)
    counts = event_counts(policy_path, engines, CONTROL_RUNS)
    assert violates(*counts["hi"], CONTROL_RUNS), counts


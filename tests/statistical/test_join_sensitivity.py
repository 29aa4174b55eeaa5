"""Joins on neighbouring databases, through the real SQL path: the sensitivity a join's plan
states covers what one person can move, and the noise makes the (epsilon, 0) inequality hold.

Databases: D' = 300 persons (1-2 `people` rows, 0-3 `visits` rows each); D = D' plus one person
with 2 `people` rows (= max_rows) in department 'hr' and 3 `visits` rows (= max_rows). The public
table `depts` has three rows named 'hr' (fan-out F = 3) and unique other names. So the new
person has 2 x 3 = 6 rows in `people JOIN depts` and 2 x 3 = 6 in `people JOIN visits`: both
joins' stated bound, 6, is attained.

1. Exact check (deterministic): at epsilon 1e6 the discrete Laplace noise of scale <= 1e-4 is 0
   except with probability < 1e-4000, so answers are the exact aggregates; for each query, the
   L1 change between D and D' over all released cells must not exceed the sensitivity EXPLAIN
   states for it.
2. DP inequality: COUNT(*) over `people JOIN depts` at epsilon 1, scale 6: the events
   S_hi = {out >= n_D} and S_lo = {out <= n_D'} have probability ratio exactly e^1 (the argument
   of tests/statistical/test_end_to_end_dp.py with shift 6 and scale 6), checked with
   Clopper-Pearson bounds at family confidence 1 - 1e-6.

Negative control: a join that drops the fan-out factor (the public fan-out read as 1) and the
bound after the join (the joined rows used as they are): its plan claims sensitivity 2, the new
person moves the count by 6; check 1 flags it, and check 2 flags it (scale 2 for a shift of 6:
ratio e^3; from 500 runs on the check fails even at the 1e-6 quantiles, see `control_detected`;
550 are run).
A control with only the fan-out dropped shows the second defence: the bound after the join
enforces whatever max_rows the plan claims, so the change stays within the claim.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sqlglot import exp

import dpsql.backend.engines.engine as engine_module
from dpsql.accounting.ledger import Ledger
from dpsql.backend.engines.duckdb_engine import DuckDBEngine
from dpsql.backend.engines.public_tables import EnginePublicFacts
from dpsql.backend.sql.bounding import Step
from dpsql.backend.sql.plan_sql import fixed_point_selects, seed_placeholder
from dpsql.catalog.loader import load_policy
from dpsql.ir.join import JoinedTable
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.session import Session
from tests.statistical.neighbour_checks import control_detected, violates

pytestmark = pytest.mark.statistical

POLICY = """
[budget]
epsilon = 1e12
delta = 1e-5
default_query_epsilon = 1e6
default_query_delta = 1e-7

[tables.people]
privacy_unit = "person_id"
max_rows = 2
[tables.people.columns]
person_id = { type = "int" }
dept = { type = "text" }

[tables.visits]
privacy_unit = "person_id"
max_rows = 3
[tables.visits.columns]
person_id = { type = "int" }
minutes = { type = "int", lower = 0, upper = 60 }

[tables.depts]
public = true
[tables.depts.columns]
name = { type = "text" }
floor = { type = "int" }
"""
NEW_ID = 10**6
EXACT_QUERIES = [
    "SELECT COUNT(*) FROM people p JOIN depts d ON p.dept = d.name",
    "SELECT SUM(d.floor) FROM people p JOIN depts d ON p.dept = d.name",
    "SELECT d.floor, COUNT(*) FROM people p JOIN depts d ON p.dept = d.name GROUP BY d.floor",
    "SELECT COUNT(*) FROM people p JOIN visits v ON p.person_id = v.person_id",
    "SELECT SUM(v.minutes) FROM people p JOIN visits v USING (person_id)",
    "SELECT COUNT(*) FROM people p LEFT JOIN visits v USING (person_id)",
    "SELECT COUNT(*) FROM people WHERE dept IN (SELECT name FROM depts WHERE floor >= 3)",
]
COUNT_SQL = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM people p JOIN depts d ON p.dept = d.name"
RUNS, CONTROL_RUNS = 600, 550


def frames() -> dict[str, dict[str, pd.DataFrame]]:
    rng = np.random.default_rng(20261125)  # synthetic data, not privacy noise
    persons = np.arange(1, 301)
    people_ids = np.repeat(persons, rng.integers(1, 3, persons.size))
    people = pd.DataFrame({"person_id": people_ids, "dept": rng.choice(["eng", "ops", "hr"], people_ids.size)})
    visit_ids = np.repeat(persons, rng.integers(0, 4, persons.size))
    visits = pd.DataFrame({"person_id": visit_ids, "minutes": rng.integers(0, 61, visit_ids.size)})
    depts = pd.DataFrame({"name": ["eng", "ops", "hr", "hr", "hr"], "floor": [1, 2, 3, 4, 5]})
    new_people = pd.DataFrame({"person_id": [NEW_ID] * 2, "dept": ["hr", "hr"]})
    new_visits = pd.DataFrame({"person_id": [NEW_ID] * 3, "minutes": [60, 60, 60]})
    d2 = {"people": people, "visits": visits, "depts": depts}
    d = {"people": pd.concat([people, new_people], ignore_index=True),
         "visits": pd.concat([visits, new_visits], ignore_index=True), "depts": depts}
    return {"D": d, "D2": d2}


@pytest.fixture(scope="module")
def policy_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("joins") / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    return path


@pytest.fixture
def engines(policy_path: Path) -> Iterator[dict[str, DuckDBEngine]]:
    policy = load_policy(policy_path)
    opened = {name: DuckDBEngine(policy, None, tables) for name, tables in frames().items()}
    yield opened
    for engine in opened.values():
        engine.close()


def session(policy_path: Path, engine: DuckDBEngine, seed: int) -> Session:
    return Session(load_policy(policy_path), engine, Ledger(None), rng=SeededRandomSource(seed))


def stated_sensitivities(policy_path: Path, engine: DuckDBEngine, sql: str) -> list[int]:
    lines = [row[0] for row in session(policy_path, engine, 0).explain(sql).rows]
    return [int(m.group(1)) for line in lines if (m := re.search(r"^  Release .*sensitivity (\d+),", line))]


def exact_cells(policy_path: Path, engine: DuckDBEngine, sql: str) -> dict[object, list[float]]:
    rows = session(policy_path, engine, 1).execute(sql).rows
    return {row[0] if len(row) > 1 else None: [float(v) for v in row[1 if len(row) > 1 else 0:]] for row in rows}


def l1_changes(policy_path: Path, engines: dict[str, DuckDBEngine], sql: str) -> list[float]:
    """Per release column: the sum over groups of |answer on D - answer on D'|."""
    d, d2 = (exact_cells(policy_path, engines[name], sql) for name in ("D", "D2"))
    width = len(next(iter(d.values())))
    return [sum(abs(d.get(k, [0.0] * width)[i] - d2.get(k, [0.0] * width)[i]) for k in d.keys() | d2.keys()) for i in range(width)]


def drop_fanout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(EnginePublicFacts, "max_fanout", lambda self, table, columns: 1)


def drop_bound_after_join(monkeypatch: pytest.MonkeyPatch) -> None:
    original = engine_module.bounding_steps

    def unbounded(table, source, bounded, heavy):  # type: ignore[no-untyped-def]
        if isinstance(table, JoinedTable):
            # every joined row kept (the seed parameter is still bound, so it must appear), with
            # the prepared fixed-point columns the bounded relation carries: one step, no bound
            kept = exp.Not(this=exp.Is(this=seed_placeholder(), expression=exp.Null()))
            select = exp.select("*", *fixed_point_selects(table)).from_(exp.to_identifier(source, quoted=True)).where(kept)
            return (Step(select, bounded, seeded=True),)
        return original(table, source, bounded, heavy)

    monkeypatch.setattr(engine_module, "bounding_steps", unbounded)


# --- 1: exact changes against the stated sensitivity ---------------------------------------------


@pytest.mark.parametrize("sql", EXACT_QUERIES)
def test_one_person_moves_a_join_query_by_at_most_its_stated_sensitivity(policy_path, engines, sql: str) -> None:
    stated = stated_sensitivities(policy_path, engines["D"], sql)
    changes = l1_changes(policy_path, engines, sql)
    assert len(stated) == len(changes) and all(c <= s + 1e-6 for c, s in zip(changes, stated)), (changes, stated)


def test_the_new_person_attains_the_join_bounds(policy_path, engines) -> None:
    # The data make the bounds tight: the fan-out and the product are really used.
    assert stated_sensitivities(policy_path, engines["D"], EXACT_QUERIES[0]) == [6]
    assert l1_changes(policy_path, engines, EXACT_QUERIES[0]) == [6.0]
    assert stated_sensitivities(policy_path, engines["D"], EXACT_QUERIES[3]) == [6]
    assert l1_changes(policy_path, engines, EXACT_QUERIES[3]) == [6.0]


def test_control_a_join_without_the_fanout_factor_is_caught(policy_path, engines, monkeypatch) -> None:
    drop_fanout(monkeypatch)
    drop_bound_after_join(monkeypatch)
    stated = stated_sensitivities(policy_path, engines["D"], EXACT_QUERIES[0])
    changes = l1_changes(policy_path, engines, EXACT_QUERIES[0])
    assert stated == [2] and changes == [6.0]  # the check above would fail: 6 > 2


def test_the_bound_after_the_join_enforces_the_stated_max_rows(policy_path, engines, monkeypatch) -> None:
    # With a wrong fan-out (1 instead of 3) but the bound after the join in place, the new
    # person keeps 2 joined rows: the claim is wrong about utility, never about privacy.
    drop_fanout(monkeypatch)
    assert stated_sensitivities(policy_path, engines["D"], EXACT_QUERIES[0]) == [2]
    assert l1_changes(policy_path, engines, EXACT_QUERIES[0]) == [2.0]


# --- 2: the DP inequality at epsilon 1 --------------------------------------------------------------


def exact_count(tables: dict[str, pd.DataFrame]) -> int:
    return int(tables["people"].merge(tables["depts"], left_on="dept", right_on="name").shape[0])


def event_counts(policy_path: Path, engines: dict[str, DuckDBEngine], runs: int) -> dict[str, tuple[int, int]]:
    data = frames()
    n_d, n_d2 = exact_count(data["D"]), exact_count(data["D2"])
    assert n_d - n_d2 == 6
    outs = {name: [session(policy_path, engines[name], first + s).execute(COUNT_SQL).rows[0][0] for s in range(runs)]
            for name, first in (("D", 0), ("D2", 10_000))}
    return {"hi": (sum(v >= n_d for v in outs["D"]), sum(v >= n_d for v in outs["D2"])),
            "lo": (sum(v <= n_d2 for v in outs["D2"]), sum(v <= n_d2 for v in outs["D"]))}



def test_join_count_satisfies_the_dp_inequality(policy_path, engines) -> None:
    counts = event_counts(policy_path, engines, RUNS)
    assert not violates(*counts["hi"], RUNS) and not violates(*counts["lo"], RUNS), counts
    q = math.exp(-1 / 6)  # scale 6: the sample has the intended distribution (binomial tests at 1e-6)
    for hits, p in ((counts["hi"][0], 1 / (1 + q)), (counts["hi"][1], q**6 / (1 + q))):
        assert stats.binomtest(hits, RUNS, p).pvalue > 1e-6, counts



def test_control_the_dp_check_catches_a_join_without_the_fanout_factor(policy_path, engines, monkeypatch) -> None:
    assert control_detected(scale=2, shift=6, n=CONTROL_RUNS)
    drop_fanout(monkeypatch)
    drop_bound_after_join(monkeypatch)
    counts = event_counts(policy_path, engines, CONTROL_RUNS)
    assert violates(*counts["hi"], CONTROL_RUNS), counts


def test_join_max_rows_caps_what_one_person_moves(tmp_path: Path) -> None:
    # visits declares join_max_rows = 4 < 2 x 3: the plan states 4, and the bound after the join
    # keeps 4 of the new person's 6 joined rows, so the count moves by exactly 4.
    text = POLICY.replace("max_rows = 3\n[tables.visits.columns]", "max_rows = 3\njoin_max_rows = 4\n[tables.visits.columns]")
    assert text != POLICY
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    policy = load_policy(path)
    capped = {name: DuckDBEngine(policy, None, tables) for name, tables in frames().items()}
    try:
        assert stated_sensitivities(path, capped["D"], EXACT_QUERIES[3]) == [4]
        assert l1_changes(path, capped, EXACT_QUERIES[3]) == [4.0]
    finally:
        for engine in capped.values():
            engine.close()

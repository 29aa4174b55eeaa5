"""A6: key leakage through GROUP BY. A key that exists only because of one person (a unique last
name, a rare region) must not be released more often than delta allows, and grouping by the
privacy unit itself is refused.

Moved here unchanged from tests/integration/test_security.py (the A6 block), plus the refusals
of grouping by the unit in its disguises. Pass criterion: the unique key is released with
probability <= delta (Clopper-Pearson at 1 - 1e-6); GROUP BY the unit is refused before the
charge (DP107). Negative control: a threshold lowered to 3 is detected.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest
from scipy import stats

import dpsql
from dpsql.accounting.ledger import Ledger
from dpsql.analysis.context import AnalysisContext
from dpsql.backend.engines.duckdb_engine import DuckDBEngine, EngineResult
from dpsql.backend.engines.engine import bounded_name
from dpsql.backend.sql.plan_sql import engine_select, key_heavy_select, keyed_select
from dpsql.catalog.loader import load_policy
from dpsql.demo.people import generate_people
from dpsql.execution.compiled import CompiledQuery, compile_statement
from dpsql.execution.release import release_rows
from dpsql.ir.query import key_name
from dpsql.mechanisms.partition import PartitionSelectionSpec
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.session import Session
from tests.conftest import make_policy_text
from tests.security.attack_support import forbid_engine, with_secret_person

# --- A6: a private-domain key held by one person is released with probability <= delta -----------
#
# Hypothesis H0 (what the partition selection claims): a GROUP BY key present only because of
# one person, who keeps 1 row, is released with probability p <= delta. With eps = 1, delta =
# 0.05 and max_groups = 2 the noise on person counts is discrete Laplace of scale 2, and the
# implementation's threshold t satisfies max_groups * P(X >= t - 1) <= delta, so the exact
# release probability of the unique key is p0 = P(X >= t - 1) = q^(t-1) / (1 + q), q = e^(-1/2).
# p0 is about 0.019, well below delta = 0.05, so N trials estimate it sharply: with N = 20,000
# the one-sided Clopper-Pearson upper bound at confidence 1 - 1e-6 lands near 0.024.
# Negative control: a threshold lowered to 3 releases the key with P(X >= 2) ~ 0.23, and the
# same check then fails (its lower bound is far above delta).

DELTA = 0.05
UNIQUE = "Zyx-Unique-Region"
SELECT_REGIONS = f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = {DELTA}) region FROM people GROUP BY region"
CONFIDENCE_ALPHA = 1e-6


def clopper_pearson(hits: int, n: int, alpha: float = CONFIDENCE_ALPHA) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds, each holding with probability >= 1 - alpha."""
    lower = 0.0 if hits == 0 else float(stats.beta.ppf(alpha, hits, n - hits + 1))
    upper = 1.0 if hits == n else float(stats.beta.ppf(1 - alpha, hits + 1, n - hits))
    return lower, upper


def upper_tail(scale: Fraction, k: int) -> float:
    """P(X >= k) for X discrete Laplace of `scale`, k >= 0: q^k / (1 + q), q = e^(-1/scale)."""
    q = math.exp(-1 / float(scale))
    return q**k / (1 + q)


@pytest.fixture(scope="module")
def selection_setup(tmp_path_factory) -> Iterator[tuple[Any, DuckDBEngine, CompiledQuery, EngineResult]]:
    path = tmp_path_factory.mktemp("selection") / "policy.toml"
    path.write_text(make_policy_text(delta=0.5))
    policy = load_policy(path)
    frame = with_secret_person(generate_people(400, seed=99), rows=1, region=UNIQUE)
    engine = DuckDBEngine(policy, None, {"people": frame})
    _, compiled = compile_statement(SELECT_REGIONS, None, AnalysisContext(policy, policy.budget.default_query))
    engine.ensure_bounded(compiled.plan.query.table, 1)
    engine.ensure_keyed(compiled.plan.query.table, compiled.keyed_columns, 1, 1)  # the session's key bounding
    raw = engine.run(compiled.engine)
    yield policy, engine, compiled, raw
    engine.close()


def unique_key_hits_by_release(compiled: CompiledQuery, raw: EngineResult, seeds: range) -> int:
    hits = 0
    for seed in seeds:
        columns, _ = release_rows(compiled, raw, SeededRandomSource(seed))
        hits += UNIQUE in columns[key_name(0)]
    return hits


def unique_key_hits_by_sql(policy: Any, engine: DuckDBEngine, seeds: range) -> int:
    hits = 0
    for seed in seeds:
        session = Session(policy, engine, Ledger(None), rng=SeededRandomSource(seed))  # a fresh budget per trial
        keys = {row[0] for row in session.execute(SELECT_REGIONS).rows}
        assert keys <= {"north", "south", "east", "west", "central", UNIQUE}
        hits += UNIQUE in keys
    return hits


def test_selection_threshold_meets_delta_and_is_tight(selection_setup) -> None:
    _, _, compiled, raw = selection_setup
    spec = compiled.plan.selection
    assert spec is not None and spec.max_groups == 2 and spec.epsilon == 1 and spec.scale == 2
    t = spec.threshold
    assert spec.max_groups * upper_tail(spec.scale, t - 1) <= DELTA < spec.max_groups * upper_tail(spec.scale, t - 2)
    # The engine's person count of the unique key is 1 and does not depend on the selection seed
    # (every person here has one region), so the release step alone decides what is released.
    units = {row[0]: row[-1] for row in raw.rows}
    assert units[UNIQUE] == 1
    table, keys = compiled.plan.query.table, compiled.keyed_columns
    engine = selection_setup[1]
    engine.backend.materialize("other_heavy", key_heavy_select(table, bounded_name(table), keys))
    engine.backend.materialize("other_keyed", keyed_select(table, bounded_name(table), keys, "other_heavy"), {"seed": 2})
    other = engine.run(engine_select(compiled.plan, "other_keyed"))
    assert sorted(other.rows) == sorted(raw.rows)


def test_unique_private_key_is_released_with_probability_at_most_delta(selection_setup) -> None:
    _, _, compiled, raw = selection_setup
    n = 20_000
    hits = unique_key_hits_by_release(compiled, raw, range(n))
    lower, upper = clopper_pearson(hits, n)
    assert upper <= DELTA, (hits, n, upper)
    # Sharper: the rate matches the exact p0 (two-sided, 2e-6 in all), so the per-key bound
    # delta / max_groups of the partition-selection analysis holds too.
    p0 = upper_tail(compiled.plan.selection.scale, compiled.plan.selection.threshold - 1)
    assert lower <= p0 <= upper, (hits, n, p0)


@pytest.mark.slow
def test_unique_private_key_through_the_sql_path_matches_the_release_step(selection_setup) -> None:
    # The whole session path (compile, charge, engine with a fresh selection seed, release, post-
    # processing): 300 trials, each a fresh Session with its own seeded source and ledger. The
    # release count must be consistent with p0 (two-sided binomial test at 1e-6) and show no
    # evidence of exceeding delta.
    policy, engine, compiled, _ = selection_setup
    n = 300
    hits = unique_key_hits_by_sql(policy, engine, range(10**6, 10**6 + n))
    p0 = upper_tail(compiled.plan.selection.scale, compiled.plan.selection.threshold - 1)
    assert stats.binomtest(hits, n, p0).pvalue > CONFIDENCE_ALPHA, (hits, n, p0)
    assert clopper_pearson(hits, n)[0] <= DELTA


@pytest.mark.slow
def test_negative_control_a_lowered_threshold_is_detected(selection_setup, monkeypatch) -> None:
    policy, engine, compiled, raw = selection_setup
    monkeypatch.setattr(PartitionSelectionSpec, "threshold", property(lambda self: 3))
    n = 2_000
    hits = unique_key_hits_by_release(compiled, raw, range(n))
    lower, upper = clopper_pearson(hits, n)
    assert upper > DELTA  # the main check above would fail
    assert lower > DELTA  # and confidently: released with probability ~0.23 > delta
    hits = unique_key_hits_by_sql(policy, engine, range(10**6, 10**6 + 150))
    assert clopper_pearson(hits, 150)[0] > DELTA  # detected through the SQL path too


GROUP_BY_UNIT = [  # (query, refusal code): DP107 names the unit; DP114 refuses any grouping expression
    ("SELECT person_id, COUNT(*) FROM people GROUP BY person_id", "DP107"),
    ("SELECT COUNT(*) FROM people GROUP BY person_id", "DP107"),
    ("SELECT person_id, COUNT(*) FROM people GROUP BY 1", "DP107"),
    ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) region, person_id, COUNT(*) FROM people "
     "GROUP BY region, person_id", "DP107"),
    ("SELECT person_id + 0 AS p, COUNT(*) FROM people GROUP BY person_id + 0", "DP114"),
    ("SELECT CAST(person_id AS TEXT) AS p, COUNT(*) FROM people GROUP BY CAST(person_id AS TEXT)", "DP114"),
]


@pytest.mark.parametrize(("sql", "code"), GROUP_BY_UNIT)
def test_a06_group_by_the_privacy_unit_is_refused_before_the_charge(connect, monkeypatch, sql: str, code: str) -> None:
    con = connect(random_seed=1)
    calls = forbid_engine(con, monkeypatch)
    with pytest.raises(dpsql.ProgrammingError) as info:
        con.execute(sql)
    assert info.value.code == code, str(info.value)
    assert con.ledger() == [] and calls == []


# --- A6, derived keys: one person's two kept values of a column must not count twice for one key ---
#
# GROUP BY upper(region) is bounded on the column it reads: a person whose rows hold 'zyx-derived'
# and 'ZYX-DERIVED' keeps both (2 tuples <= max_groups = 2) and has a flagged row for each, both
# of the key 'ZYX-DERIVED'. The key exists only because of that person, so its person count must
# be 1 (what the threshold's delta analysis assumes), not 2. Negative control: counting the
# flagged rows (the form before the fix) gives 2 on the same relation.

DERIVED_SQL = (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = {DELTA}) upper(region) AS r, COUNT(*) "
               "FROM people GROUP BY upper(region)")


@pytest.fixture(scope="module")
def derived_setup(tmp_path_factory) -> Iterator[tuple[DuckDBEngine, CompiledQuery]]:
    path = tmp_path_factory.mktemp("derived") / "policy.toml"
    path.write_text(make_policy_text(delta=0.5))
    policy = load_policy(path)
    frame = generate_people(400, seed=98)
    secret = frame.iloc[:2].copy()
    secret["person_id"] = int(frame["person_id"].max()) + 1
    secret["region"] = ["zyx-derived", "ZYX-DERIVED"]
    import pandas

    engine = DuckDBEngine(policy, None, {"people": pandas.concat([frame, secret], ignore_index=True)})
    _, compiled = compile_statement(DERIVED_SQL, None, AnalysisContext(policy, policy.budget.default_query))
    assert isinstance(compiled, CompiledQuery) and compiled.keyed_columns == ("region",)
    engine.ensure_bounded(compiled.plan.query.table, 1)
    engine.ensure_keyed(compiled.plan.query.table, compiled.keyed_columns, 1, 1)
    yield engine, compiled
    engine.close()


def test_a_derived_key_held_by_one_person_counts_one(derived_setup) -> None:
    engine, compiled = derived_setup
    units = {row[0]: row[-1] for row in engine.run(compiled.engine).rows}
    assert units["ZYX-DERIVED"] == 1


def test_negative_control_counting_flagged_rows_counts_the_person_twice(derived_setup) -> None:
    from sqlglot import exp

    engine, compiled = derived_setup
    select = compiled.engine.copy()
    select.set("expressions", [e if e.alias != "__units" else exp.alias_(exp.CountIf(this=exp.column("__unit_key", quoted=True)), "__units")
                               for e in select.expressions])
    units = {row[0]: row[-1] for row in engine.run(select).rows}
    assert units["ZYX-DERIVED"] == 2

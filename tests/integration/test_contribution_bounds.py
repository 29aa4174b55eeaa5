"""BigQuery's per-aggregate bounds, `SUM(x, contribution_bounds_per_group => (lo, hi))` and AVG
(aggregates/sums.py `narrowed`), through dpsql.connect.

What must hold: the bounds clamp each value and set the sensitivity, so the answer equals (same
seed, same noise) the query written by hand with the clamp `LEAST(GREATEST(x, lo), hi)`, whose
bounds dpsql derives; a float column is clamped per query, not read from the bounded relation's
column prepared under the policy's bounds (which would sum values beyond the stated sensitivity);
bounds beyond the policy's are refused (DP120) before the charge.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.errors import Error
from tests.conftest import make_policy_text

# The demo policy: age in [18, 90], income in [0, 500000], max_rows = 3.
BOUNDED = {
    "sum_age": ("SUM(age, contribution_bounds_per_group => (20, 60))", "SUM(LEAST(GREATEST(age, 20), 60))"),
    "avg_age": ("AVG(age, contribution_bounds_per_group => (20, 60))", "AVG(LEAST(GREATEST(age, 20), 60))"),
    "sum_income": ("SUM(income, contribution_bounds_per_group => (0, 1000))", "SUM(LEAST(GREATEST(income, 0), 1000))"),
    "filtered": ("SUM(age, contribution_bounds_per_group => (20, 60)) FILTER (WHERE age > 40)",
                 "SUM(CASE WHEN age > 40 THEN LEAST(GREATEST(age, 20), 60) END)"),
}


@pytest.fixture
def policy_path(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(make_policy_text(epsilon=100.0, delta=1e-3), encoding="utf-8")
    return path


def answer(people: pd.DataFrame, policy_path: Path, sql: str) -> list[tuple[object, ...]]:
    with dpsql.connect(tables={"people": people}, policy=policy_path, random_seed=7) as con:
        return con.execute(sql).fetchall()


@pytest.mark.parametrize("name", sorted(BOUNDED))
def test_the_bounds_answer_as_the_clamp_written_by_hand(people: pd.DataFrame, policy_path: Path, name: str) -> None:
    bounded, by_hand = BOUNDED[name]
    got = answer(people, policy_path, f"SELECT dept, {bounded} AS v FROM people GROUP BY dept ORDER BY dept")
    want = answer(people, policy_path, f"SELECT dept, {by_hand} AS v FROM people GROUP BY dept ORDER BY dept")
    assert got == want
    # Control: the policy's bounds alone (no clamp to the query's) answer otherwise.
    unclamped = bounded.replace(bounded[bounded.index(","):bounded.index(")") + 2], ")")
    assert answer(people, policy_path, f"SELECT dept, {unclamped} AS v FROM people GROUP BY dept ORDER BY dept") != got


def test_explain_states_the_narrowed_sensitivity(people: pd.DataFrame, policy_path: Path) -> None:
    with dpsql.connect(tables={"people": people}, policy=policy_path, random_seed=7) as con:
        narrowed = "\n".join(r[0] for r in con.execute(
            "EXPLAIN SELECT SUM(age, contribution_bounds_per_group => (20, 60)) FROM people").fetchall())
        policy = "\n".join(r[0] for r in con.execute("EXPLAIN SELECT SUM(age) FROM people").fetchall())
    assert "clamp(age, 20, 60)" in narrowed and "sensitivity 180" in narrowed  # 3 rows x 60
    assert "sensitivity 270" in policy  # control: the policy's 3 x 90


@pytest.mark.parametrize("aggregate", [
    "SUM(age, contribution_bounds_per_group => (0, 60))",      # below the policy's lower bound 18
    "AVG(age, contribution_bounds_per_group => (20, 100))",    # above its upper bound 90
    "SUM(income, contribution_bounds_per_group => (-1, 10))",
    "SUM(age, contribution_bounds_per_group => (60, 20))",     # lower > upper
    "SUM(age, contribution_bounds_per_group => ('a', 20))",
])
def test_bounds_beyond_the_policy_are_refused_before_the_charge(people: pd.DataFrame, policy_path: Path,
                                                                  aggregate: str) -> None:
    with dpsql.connect(tables={"people": people}, policy=policy_path, random_seed=7) as con:
        with pytest.raises(Error) as refused:
            con.execute(f"SELECT dept, {aggregate} FROM people GROUP BY dept")
        assert refused.value.code == "DP120"
        assert "contribution_bounds_per_group" in str(refused.value)
        assert con.ledger() == []


def test_another_named_argument_is_not_read_as_bounds(people: pd.DataFrame, policy_path: Path) -> None:
    with dpsql.connect(tables={"people": people}, policy=policy_path, random_seed=7) as con:
        with pytest.raises(Error) as refused:
            con.execute("SELECT SUM(age, max_contribution => (20, 60)) FROM people")
        assert refused.value.code != "DP120"
        assert con.ledger() == []

"""SELECT DISTINCT where it is another spelling of what dpsql answers (DP121).

Without aggregates, `SELECT DISTINCT a` is `GROUP BY a`: the same plan and, with the same seed,
the same released keys and cost. Over an aggregated SELECT whose keys are outputs it is a no-op.
Negative controls: a DISTINCT that would merge groups by their noisy values, and DISTINCT ON,
stay DP121 before the charge.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dpsql
from tests.conftest import make_policy_text


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(make_policy_text(), encoding="utf-8")
    return path


def _answer(people: pd.DataFrame, policy: Path, sql: str) -> tuple[list[Any], float]:
    with dpsql.connect(tables={"people": people}, policy=policy, random_seed=11) as con:
        cur = con.execute(sql)
        assert cur.result is not None
        return cur.fetchall(), float(cur.result.cost.epsilon)


@pytest.mark.parametrize(("distinct", "grouped"), [
    ("SELECT DISTINCT dept FROM people WHERE age > 30", "SELECT dept FROM people WHERE age > 30 GROUP BY dept"),
    ("SELECT DISTINCT region FROM people", "SELECT region FROM people GROUP BY region"),
    ("SELECT DISTINCT COUNT(*) AS n FROM people", "SELECT COUNT(*) AS n FROM people"),
    ("SELECT DISTINCT dept, COUNT(*) FROM people GROUP BY dept", "SELECT dept, COUNT(*) FROM people GROUP BY dept"),
])
def test_distinct_answers_as_its_group_by(people: pd.DataFrame, policy: Path, distinct: str, grouped: str) -> None:
    assert _answer(people, policy, distinct) == _answer(people, policy, grouped)


@pytest.mark.parametrize("sql", [
    "SELECT DISTINCT COUNT(*) FROM people GROUP BY dept",
    "SELECT DISTINCT ON (dept) dept, age FROM people",
])
def test_distinct_that_merges_noisy_groups_is_refused_before_the_charge(people: pd.DataFrame, policy: Path, sql: str) -> None:
    with dpsql.connect(tables={"people": people}, policy=policy) as con:
        with pytest.raises(dpsql.Error) as raised:
            con.execute(sql)
        assert raised.value.code == "DP121"
        assert con.ledger() == []

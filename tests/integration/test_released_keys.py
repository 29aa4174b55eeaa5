"""Private rows joined with released keys (analysis/released_keys.py), through dpsql.connect.

What must hold: the statement is two releases (the joined aggregate, then the outer aggregate for
every group), charged once for their sum before any data is read; its rows are the second
release's groups whose key the first released, in the analyst's order; and a join that would
change what a group holds is refused before the charge.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.errors import Error
from tests.conftest import make_policy_text

KEYS = "SELECT dept AS d, COUNT(*) AS n FROM people GROUP BY dept ORDER BY n DESC LIMIT 3"
TWO_STAGE = f"SELECT dept, SUM(income) AS s FROM people JOIN ({KEYS}) t ON people.dept = t.d GROUP BY dept ORDER BY s DESC"
# The same two releases written by hand as a post-processing query over two subqueries, in the same
# order (the keys first): the same seed draws the same noise.
BY_HAND = (f"SELECT r.dept, r.s FROM ({KEYS}) t JOIN (SELECT dept, SUM(income) AS s FROM people GROUP BY dept) r "
           "ON t.d = r.dept ORDER BY r.s DESC")
EVERY_GROUP = "SELECT dept, SUM(income) AS s FROM people GROUP BY dept"


@pytest.fixture
def policy_path(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(make_policy_text(accountant="basic"), encoding="utf-8")  # exact sums in the ledger
    return path


def connect(people: pd.DataFrame, policy: Path, seed: int = 11) -> dpsql.Connection:
    return dpsql.connect(tables={"people": people}, policy=policy, random_seed=seed)


def test_two_stage_answers_the_released_groups_of_the_released_keys(people: pd.DataFrame, policy_path: Path) -> None:
    with connect(people, policy_path) as con:
        rows = con.execute(TWO_STAGE).fetchall()
        entries = con.session.ledger_entries()
    with connect(people, policy_path) as con:
        expected = con.execute(BY_HAND).fetchall()
    with connect(people, policy_path) as con:
        keys = con.execute(KEYS).fetchall()
    assert rows == expected
    assert len(rows) == 3 and {r[0] for r in rows} == {k[0] for k in keys}  # the released keys, each once
    assert [r[1] for r in rows] == sorted((r[1] for r in rows), reverse=True)
    assert len(entries) == 1 and entries[0].cost.epsilon == Fraction(1, 5)  # 0.1 + 0.1, one entry
    assert len(entries[0].params["releases"]) == 2


def test_negative_control_the_join_filters_the_groups(people: pd.DataFrame, policy_path: Path) -> None:
    # Control: without the join the same second release has every department; the test above
    # would catch a rewrite that dropped the filter (12 rows, not 3).
    with connect(people, policy_path) as con:
        assert len(con.execute(EVERY_GROUP).fetchall()) == 12


def test_explain_cost_is_the_sum_of_both_releases(people: pd.DataFrame, policy_path: Path) -> None:
    with connect(people, policy_path) as con:
        assert con.session.cost_of(TWO_STAGE).epsilon == Fraction(1, 5)
        text = "\n".join(r[0] for r in con.execute(f"EXPLAIN {TWO_STAGE}").fetchall())
    assert "Release 2 of 2" in text and "epsilon 0.1 + 0.1" in text


@pytest.mark.parametrize("sql", [
    # the join is on a noisy value, not a released key
    "SELECT dept, COUNT(*) AS c FROM people JOIN (SELECT dept AS d, COUNT(*) AS n FROM people GROUP BY dept) t "
    "ON people.age = t.n GROUP BY dept",
    # not grouped by the joined column: the join changes what the one group holds
    f"SELECT COUNT(*) AS c FROM people JOIN ({KEYS}) t ON people.dept = t.d",
    # some of the joined aggregate's keys only: a row would meet several released rows
    "SELECT dept, COUNT(*) AS c FROM people JOIN (SELECT dept AS d, region, COUNT(*) AS n FROM people "
    "GROUP BY dept, region) t ON people.dept = t.d GROUP BY dept",
    # a released value read beside the rows
    f"SELECT dept, MAX(t.n) AS m FROM people JOIN ({KEYS}) t ON people.dept = t.d GROUP BY dept",
    # a LEFT JOIN keeps every row: not this shape
    f"SELECT dept, COUNT(*) AS c FROM people LEFT JOIN ({KEYS}) t ON people.dept = t.d GROUP BY dept",
])
def test_unsafe_neighbours_are_refused_before_the_charge(people: pd.DataFrame, policy_path: Path, sql: str) -> None:
    with connect(people, policy_path) as con:
        with pytest.raises(Error) as refused:
            con.execute(sql)
        assert refused.value.code == "DP126"
        assert con.session.ledger_entries() == []

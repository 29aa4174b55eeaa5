"""Window functions over a query's own aggregates (analysis/window_lift.py), through dpsql.connect.

What must hold: `SUM(COUNT(*)) OVER ()`, running totals, LAG and RANK over the aggregates in the
aggregated SELECT itself answer exactly what the same windows one query level up answer over the
same release (same seed, same noise), at the release's cost and no more; windows over private
rows stay refused (DP108) before the charge.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.errors import Error

SAME_LEVEL = ("SELECT dept, COUNT(*) AS n, SUM(COUNT(*)) OVER () AS total, "
              "SUM(SUM(income)) OVER (ORDER BY dept ROWS UNBOUNDED PRECEDING) AS running, "
              "LAG(SUM(income), 1) OVER (ORDER BY dept) AS prev, RANK() OVER (ORDER BY COUNT(*) DESC) AS r "
              "FROM people GROUP BY dept ORDER BY dept")
ONE_LEVEL_UP = ("SELECT dept, n, SUM(n) OVER () AS total, SUM(s) OVER (ORDER BY dept ROWS UNBOUNDED PRECEDING) AS running, "
                "LAG(s, 1) OVER (ORDER BY dept) AS prev, RANK() OVER (ORDER BY n DESC) AS r "
                "FROM (SELECT dept, COUNT(*) AS n, SUM(income) AS s FROM people GROUP BY dept) t ORDER BY dept")


def connect(people: pd.DataFrame, policy: Path, seed: int = 5) -> dpsql.Connection:
    return dpsql.connect(tables={"people": people}, policy=policy, random_seed=seed)


def test_windows_in_the_aggregated_select_equal_windows_one_level_up(people: pd.DataFrame, policy_path: Path) -> None:
    with connect(people, policy_path) as con:
        rows = con.execute(SAME_LEVEL).fetchall()
        entries = con.session.ledger_entries()
    with connect(people, policy_path) as con:
        expected = con.execute(ONE_LEVEL_UP).fetchall()
        expected_cost = con.session.ledger_entries()[-1].cost.epsilon
    assert rows == expected and len(rows) == 12
    assert len(entries) == 1 and entries[0].cost.epsilon == expected_cost == Fraction(1, 10)
    # The windows' own arithmetic over the released values: a total, a running sum, a lag.
    assert all(r[2] == sum(x[1] for x in rows) for r in rows)
    sums = [x[3] - (rows[i - 1][3] if i else 0) for i, x in enumerate(rows)]  # each group's SUM(income), from the running sum
    assert rows[0][4] is None and [r[4] for r in rows[1:]] == pytest.approx(sums[:-1], rel=1e-9, abs=1e-3)


def test_negative_control_a_different_seed_changes_the_answer(people: pd.DataFrame, policy_path: Path) -> None:
    # Control for the equality above: the two runs agree because they draw the same noise, not
    # because the values are noise-free.
    with connect(people, policy_path, seed=5) as con:
        a = con.execute(SAME_LEVEL).fetchall()
    with connect(people, policy_path, seed=6) as con:
        b = con.execute(SAME_LEVEL).fetchall()
    assert a != b


def test_explain_shows_one_release_and_its_cost(people: pd.DataFrame, policy_path: Path) -> None:
    with connect(people, policy_path) as con:
        text = "\n".join(r[0] for r in con.execute(f"EXPLAIN {SAME_LEVEL}").fetchall())
        assert con.session.cost_of(SAME_LEVEL).epsilon == Fraction(1, 10)
    assert "1 release(s)" in text and "OVER" in text.split("Outer query")[1]


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) OVER () FROM people",  # a window over private rows
    "SELECT dept, COUNT(*) AS n, SUM(age) OVER (PARTITION BY dept) AS s FROM people GROUP BY dept",  # over a row column
    "SELECT COUNT(*) AS n FROM people QUALIFY ROW_NUMBER() OVER (ORDER BY income) = 1",
    "SELECT dept, COUNT(*) AS n, RANK() OVER (ORDER BY COUNT(*)) AS r FROM people WHERE income > MAX(income) OVER () GROUP BY dept",
])
def test_windows_over_rows_are_refused_before_the_charge(people: pd.DataFrame, policy_path: Path, sql: str) -> None:
    with connect(people, policy_path) as con:
        with pytest.raises(Error) as refused:
            con.execute(sql)
        assert refused.value.code == "DP108"
        assert con.session.ledger_entries() == []

"""ORDER BY without LIMIT inside a row-level subquery is dropped (analysis/inline.py): the outer
aggregate reads the same multiset of rows, so the answer is the one without it (same seed, same
noise, same cost); ORDER BY with LIMIT picks rows and stays refused before the charge."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.errors import Error

PLAIN = "SELECT dept, COUNT(*) AS n, SUM(income) AS s FROM people GROUP BY dept"
ORDERED = "SELECT dept, COUNT(*) AS n, SUM(income) AS s FROM (SELECT * FROM people ORDER BY age DESC) AS v GROUP BY dept"


def _run(people: pd.DataFrame, policy: Path, sql: str) -> tuple[list[tuple], object]:
    with dpsql.connect(tables={"people": people}, policy=policy, random_seed=3) as con:
        rows = con.execute(sql).fetchall()
        return rows, con.session.ledger_entries()[-1].cost


def test_order_by_without_limit_answers_as_without_it(people: pd.DataFrame, policy_path: Path) -> None:
    assert _run(people, policy_path, ORDERED) == _run(people, policy_path, PLAIN)


def test_order_by_with_limit_is_refused_before_the_charge(people: pd.DataFrame, policy_path: Path) -> None:
    # The control: the same subquery with LIMIT keeps the 10 highest incomes, a selection by value.
    with dpsql.connect(tables={"people": people}, policy=policy_path, random_seed=3) as con:
        with pytest.raises(Error) as refused:
            con.execute("SELECT COUNT(*) FROM (SELECT * FROM people ORDER BY income DESC LIMIT 10) AS top")
        assert refused.value.code == "DP110"
        assert con.session.ledger_entries() == []

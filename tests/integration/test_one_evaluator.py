"""Released values are evaluated in one place: an aggregate answers the same value and interval
whether its query is answered straight from the noisy table or through post-processing SQL
(HAVING, ORDER BY, LIMIT, arithmetic in the released-values database).

Before, post-processing re-derived each estimate in SQL (a twin of the Python one): the twins
drifted (STDDEV_SAMP read sqrt(var - 1) in SQL, for n / (n - 1) rendered without parentheses).
Each aggregate is now computed once, by its module's estimate. The check: the same seeded
session answers `SELECT dept, agg FROM people GROUP BY dept` and the same with `ORDER BY dept`
(post-processing); per key, the values and the intervals agree. Negative control: a
post-processing path that re-evaluates an estimate differently (a bias on the values handed to
the released-values database) is caught by the same comparison.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dpsql
from dpsql.execution import executor
from tests.conftest import make_policy_text

AGGREGATES = ("COUNT(*)", "SUM(income)", "AVG(income)", "STDDEV(income)", "VAR_POP(age)", "MEDIAN(age)",
              "QUANTILE(income, 0.9)", "IQR(income)", "MODE(region)", "MIN(age)", "TRIMMED_MEAN(income, 0.1)")
OPTIONS = "WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 2, delta = 1e-6)"


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(make_policy_text(), encoding="utf-8")
    return path


def answers(people: pd.DataFrame, policy: Path, sql: str) -> dict[Any, tuple[Any, Any]]:
    """Per key: the aggregate's value and its cell's 95% half-width."""
    with dpsql.connect(tables={"people": people}, policy=policy, random_seed=13) as con:
        cur = con.cursor()
        cur.execute(sql)
        rows = cur.fetchall()
        cells = cur.cell_ci95
    return {row[0]: (row[1], cell[1]) for row, cell in zip(rows, cells)}


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-12 * max(abs(a), abs(b))
    return bool(a == b)


def same(first: dict[Any, tuple[Any, Any]], second: dict[Any, tuple[Any, Any]]) -> bool:
    return first.keys() == second.keys() and all(_equal(a, b) for key in first for a, b in zip(first[key], second[key]))


@pytest.mark.parametrize("aggregate", AGGREGATES)
def test_an_aggregate_is_the_same_with_or_without_post_processing(people: pd.DataFrame, policy: Path, aggregate: str) -> None:
    plain = answers(people, policy, f"SELECT {OPTIONS} dept, {aggregate} FROM people GROUP BY dept")
    ordered = answers(people, policy, f"SELECT {OPTIONS} dept, {aggregate} FROM people GROUP BY dept ORDER BY dept")
    assert same(plain, ordered), (aggregate, plain, ordered)


def test_negative_control_a_second_evaluation_that_drifts_is_caught(people: pd.DataFrame, policy: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    real = executor.released_table

    def drifted(compiled: Any, columns: Any, schema: Any) -> Any:  # the values handed to post-processing, re-evaluated a bit off
        table = real(compiled, columns, schema)
        at = table.columns.index("__a0")
        rows = [row[:at] + ((row[at] * 1.0001 if row[at] is not None else None),) + row[at + 1:] for row in table.rows]
        return type(table)(table.name, table.columns, table.types, rows)

    monkeypatch.setattr(executor, "released_table", drifted)
    plain = answers(people, policy, f"SELECT {OPTIONS} dept, STDDEV(income) FROM people GROUP BY dept")
    ordered = answers(people, policy, f"SELECT {OPTIONS} dept, STDDEV(income) FROM people GROUP BY dept ORDER BY dept")
    assert not same(plain, ordered)

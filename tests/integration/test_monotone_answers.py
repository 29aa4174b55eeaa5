"""LN/LOG/SQRT bounds and LOG keys answer what the same release written by hand answers (issue 30:
Qrlew's `SUM(... + LOG(age + 2))` and `GROUP BY LOG(CASE WHEN age < 50 THEN 50 ELSE 1 END)`).

Hypotheses (same seed, so the same noise draws): (1) `SUM(LOG(age + 2))` releases exactly what
`SUM(GREATEST(LEAST(LOG(age + 2 + 0 * id), U), L))` releases, with [L, U] the derived bounds
written as exact decimals (`0 * id` hides LOG's own bounds, so the clamp alone bounds it): the
derived interval is the clamp an analyst had to write by hand before; (2)
`GROUP BY LOG(CASE ... END)` releases exactly what `GROUP BY CASE ... THEN <log10(50)> ELSE 0.0
END` releases, keys and values. Negative controls: the hand-written clamp one grid step wider,
and the hand-written CASE with another threshold, release other values (so equality is not
vacuous). Refused neighbours: LOG of an argument reaching 0 (DP115) and a key through LOG with a
column base (DP114), each with the reason in its message.
"""

from __future__ import annotations

import decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpsql
from dpsql.analysis.value_bounds import value_bounds
from dpsql.catalog.loader import load_policy
from dpsql.frontend.parse import parse_tree

POLICY = """
[budget]
epsilon = 1000
delta = 1e-3
default_query_epsilon = 1
default_query_delta = 1e-8
[tables.census]
privacy_unit = "id"
max_rows = 1
[tables.census.columns]
id = { type = "int" }
age = { type = "int", lower = 17, upper = 90 }
education_num = { type = "int", lower = 1, upper = 16 }
"""
rng = np.random.default_rng(3)  # test data only, not noise
FRAME = pd.DataFrame({"id": np.arange(3000), "age": rng.integers(17, 91, 3000), "education_num": rng.integers(1, 17, 3000)})


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "census.toml"
    path.write_text(POLICY, encoding="utf-8")
    return path


def answer(policy: Path, sql: str) -> list[tuple[object, ...]]:
    with dpsql.connect(policy=str(policy), tables={"census": FRAME}, random_seed=11, ledger=":memory:") as con:
        return sorted(con.execute(sql).fetchall(), key=repr)


def exact(value: object) -> str:
    """A bound (a DOUBLE's exact value) as the decimal literal that is exactly it."""
    return str(decimal.Decimal(float(value)))  # type: ignore[arg-type]


def test_sum_of_log_is_the_clamp_written_by_hand(policy: Path) -> None:
    table = load_policy(policy).table("census")
    tree = parse_tree("SELECT LOG(age + 2)")
    assert table is not None and tree is not None
    bounds = value_bounds(tree.expressions[0], table)
    lower, upper = exact(bounds.lower), exact(bounds.upper)
    derived = answer(policy, "SELECT SUM(education_num * age + 4 + LOG(age + 2)) AS s FROM census WHERE age > 18")
    # `0 * id` (id has no bounds) hides LOG's own bounds: the hand-written clamp alone bounds it, as before.
    by_hand = answer(policy, f"SELECT SUM(education_num * age + 4 + GREATEST(LEAST(LOG(age + 2 + 0 * id), {upper}), {lower})) AS s "
                             "FROM census WHERE age > 18")
    wider = answer(policy, f"SELECT SUM(education_num * age + 4 + GREATEST(LEAST(LOG(age + 2 + 0 * id), {upper} + 1000), {lower})) "
                           "AS s FROM census WHERE age > 18")  # control: another interval, another sensitivity
    assert derived == by_hand
    assert wider != by_hand


def test_group_by_log_of_a_case_is_the_case_of_its_logs_written_by_hand(policy: Path) -> None:
    derived = answer(policy, "SELECT LOG(CASE WHEN age < 50 THEN 50 ELSE 1 END) AS k, SUM(education_num) AS s FROM census "
                             "WHERE age > 20 AND age < 90 GROUP BY LOG(CASE WHEN age < 50 THEN 50 ELSE 1 END)")
    by_hand = answer(policy, "SELECT CASE WHEN age < 50 THEN 1.6989700043360187 ELSE 0.0 END AS k, SUM(education_num) AS s "
                             "FROM census WHERE age > 20 AND age < 90 GROUP BY 1")
    other = answer(policy, "SELECT CASE WHEN age < 40 THEN 1.6989700043360187 ELSE 0.0 END AS k, SUM(education_num) AS s "
                           "FROM census WHERE age > 20 AND age < 90 GROUP BY 1")  # control: other groups
    assert [k for k, _ in derived] == [0.0, 1.6989700043360187]
    assert derived == by_hand
    assert other != by_hand


@pytest.mark.parametrize(("sql", "code", "why"), [
    ("SELECT SUM(LOG(age - 17)) FROM census", "DP115", "LOG needs an argument above 0, and its lower bound is 0"),
    ("SELECT SUM(SQRT(age - 20)) FROM census", "DP115", "SQRT needs an argument at or above 0"),
    ("SELECT COUNT(*) FROM census GROUP BY LOG(age, 2)", "DP114", "without a literal base or exponent"),
])
def test_refused_neighbours(policy: Path, sql: str, code: str, why: str) -> None:
    with pytest.raises(dpsql.Error) as caught:
        answer(policy, sql)
    assert caught.value.code == code and why in str(caught.value)

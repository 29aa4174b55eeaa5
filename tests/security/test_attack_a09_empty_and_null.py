"""A9: empty and NULL inputs. An empty table, a WHERE that keeps no row, a measure that is all
NULL, or rows whose privacy unit is NULL: engines answer SUM over nothing with NULL, and a system
that passes that NULL on (or raises) tells the analyst "no row matched" exactly.

Pass criterion: every noisy aggregate is a number (never NULL, never an exception) whatever the
input, and charged like any other answer; the pre-noise value of an empty aggregate is 0 (COUNT,
SUM) or the midpoint of the bounds (AVG), so the noise alone decides the output; rows whose
privacy unit is NULL are dropped (README, "Privacy semantics"), so adding them changes no
pre-noise value. Control: DuckDB itself answers SUM and AVG over no rows with NULL.
"""

from __future__ import annotations

import math

import duckdb
import pandas as pd
import pytest

from dpsql.mechanisms import laplace

QUERIES = [
    "SELECT COUNT(*), COUNT(income), SUM(income), AVG(income), SUM(age), AVG(age) FROM people{where}",
    "SELECT COUNT(DISTINCT person_id) FROM people{where}",
    "SELECT dept, COUNT(*), SUM(income), AVG(income) FROM people{where} GROUP BY dept",
]
WHERES = ["", " WHERE age > 1000", " WHERE false", " WHERE region = 'nowhere'", " WHERE person_id IS NULL"]


def empty(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.iloc[0:0].copy()


def null_income(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out["income"] = float("nan")  # read by DuckDB as NULL
    return out


def numbers_only(rows: list[tuple], keys: int) -> None:
    assert rows
    for row in rows:
        for value in row[keys:]:
            assert isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value), row


@pytest.mark.parametrize("where", WHERES)
@pytest.mark.parametrize("sql", QUERIES)
def test_a09_empty_input_answers_with_noisy_numbers(connect, people_frame, sql: str, where: str) -> None:
    con = connect(tables={"people": empty(people_frame)}, random_seed=3)
    rows = con.execute(sql.format(where=where)).fetchall()
    numbers_only(rows, 1 if "GROUP BY" in sql else 0)
    assert len(con.ledger()) == 1
    if "GROUP BY" in sql:
        assert len(rows) == 12  # every public key, empty or not


@pytest.mark.parametrize("where", WHERES[:3])
@pytest.mark.parametrize("sql", QUERIES)
def test_a09_filtered_out_and_null_measures_answer_with_noisy_numbers(connect, people_frame, sql: str, where: str) -> None:
    for frame in (people_frame, null_income(people_frame)):
        con = connect(tables={"people": frame}, random_seed=4)
        numbers_only(con.execute(sql.format(where=where)).fetchall(), 1 if "GROUP BY" in sql else 0)


def test_a09_pre_noise_values_of_an_empty_input_are_zero_and_the_midpoint(connect, people_frame, monkeypatch) -> None:
    monkeypatch.setattr(laplace.Laplace, "release", lambda self, spec, raw, rng: int(raw))  # exact: fails on a NULL raw value
    con = connect(tables={"people": empty(people_frame)}, random_seed=5)
    row = con.execute(QUERIES[0].format(where="")).fetchone()
    assert row == (0, 0, 0, 250000, 0, 54)  # AVG: the midpoint of [0, 500000] and of [18, 90]


def test_a09_rows_with_a_null_privacy_unit_are_dropped(connect, people_frame, monkeypatch) -> None:
    monkeypatch.setattr(laplace.Laplace, "release", lambda self, spec, raw, rng: int(raw))
    base = people_frame.astype({"person_id": "Int64"})
    orphans = pd.DataFrame({"person_id": pd.array([None] * 5, dtype="Int64"), "age": [90] * 5, "income": [5e5] * 5,
                            "dept": ["sales"] * 5, "region": ["north"] * 5}).astype(base.dtypes.to_dict())
    answers = []
    for frame in (base, pd.concat([base, orphans], ignore_index=True)):
        con = connect(tables={"people": frame}, random_seed=6)
        answers.append(con.execute(QUERIES[0].format(where="") + "").fetchone())
    assert answers[0] == answers[1]


def test_a09_control_the_engine_alone_answers_null_on_empty_input(people_frame) -> None:
    with duckdb.connect() as con:
        con.register("people", empty(people_frame))
        assert con.execute("SELECT SUM(income), AVG(income) FROM people").fetchone() == (None, None)

"""Aggregates over expressions and FILTER through dpsql.connect: the exact part is right (a huge
epsilon leaves the exact answer), the sensitivity is the one derived from the policy, FILTER is
the CASE it stands for, and the rows a CASE leaves out are not clamped into the sum."""

from __future__ import annotations

import math

import pandas as pd
import pytest

PRECISE = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 100000) "


def _exact_cases(df: pd.DataFrame) -> list[tuple[str, float]]:
    sales, north = df.dept == "sales", df.region == "north"
    return [
        ("SUM(1) FROM people", len(df)),
        ("COUNT(CASE WHEN age > 30 THEN 1 END) FROM people", int((df.age > 30).sum())),
        ("SUM(CASE WHEN age > 30 THEN 1 ELSE 0 END) FROM people", int((df.age > 30).sum())),
        ("COUNT(*) FILTER (WHERE age > 30) FROM people", int((df.age > 30).sum())),
        ("COUNT(income) FILTER (WHERE age > 30) FROM people", int(df.income[df.age > 30].notna().sum())),
        ("COUNT(CASE WHEN age > 30 THEN dept END) FROM people", int(df.dept[df.age > 30].notna().sum())),
        ("SUM(9.36) FROM people", 9.36 * len(df)),  # a DECIMAL literal in DuckDB: read as a DOUBLE
        # age's lower bound is 18: a row the CASE leaves out (NULL) must add nothing, not 18
        ("SUM(age) FILTER (WHERE dept = 'sales') FROM people", int(df.age[sales].sum())),
        ("SUM(CASE WHEN dept = 'sales' THEN age END) FROM people", int(df.age[sales].sum())),
        ("AVG(age * 2 + 1) FILTER (WHERE region = 'north') FROM people", float((df.age * 2 + 1)[north].mean())),
        ("AVG(income / 12) FROM people", float((df.income / 12).mean())),
    ]


def test_exact_part_of_aggregates_over_expressions(connect, policy_file, people_frame: pd.DataFrame) -> None:
    # Laplace scales at epsilon 1e5 split over at most 2 releases: max_rows * bound / 5e4, at most
    # 3 * 181 / 5e4 = 0.011 for the integer sums and 3 * 41667 / 5e4 = 2.5 for the income sum,
    # whose mean over 3000 rows moves by < 0.01; |noise| > 20 scales has probability e^-20.
    con = connect(policy_file(epsilon=1e7), random_seed=5)
    for sql, exact in _exact_cases(people_frame):
        (value,), = con.execute(PRECISE + sql).fetchall()
        tolerance = 0.5 if isinstance(exact, int) else 0.05
        assert math.isclose(value, exact, abs_tol=tolerance), (sql, value, exact)


@pytest.mark.parametrize(("sql", "sensitivity"), [
    ("SELECT SUM(1) FROM people", "3"),  # max_rows 3, value in [1, 1]
    ("SELECT SUM(CASE WHEN age > 30 THEN 1 ELSE 0 END) FROM people", "3"),
    ("SELECT SUM(age) FILTER (WHERE dept = 'sales') FROM people", "270"),  # 3 * 90
    ("SELECT SUM(90 - age) FROM people", "216"),  # 3 * 72
    ("SELECT SUM(GREATEST(LEAST(person_id, 100), 0)) FROM people", "300"),
])
def test_sensitivity_comes_from_the_derived_bounds(connect, sql: str, sensitivity: str) -> None:
    con = connect(random_seed=1)
    con.execute(sql).fetchall()
    (entry,) = con.ledger()
    assert [r["sensitivity"] for r in entry.params["releases"]] == [sensitivity]


def test_filter_is_the_case_it_stands_for(connect, policy_file) -> None:
    policy = policy_file(epsilon=100)
    filtered = connect(policy, random_seed=9).execute(
        "SELECT dept, SUM(income) FILTER (WHERE age > 40) FROM people GROUP BY dept ORDER BY dept").fetchall()
    case = connect(policy, random_seed=9).execute(
        "SELECT dept, SUM(CASE WHEN age > 40 THEN income END) FROM people GROUP BY dept ORDER BY dept").fetchall()
    unfiltered = connect(policy, random_seed=9).execute(
        "SELECT dept, SUM(income) FROM people GROUP BY dept ORDER BY dept").fetchall()
    assert filtered == case
    assert filtered != unfiltered  # negative control: the comparison sees a lost filter


def test_a_value_that_fails_on_a_row_is_null_for_that_row(connect, policy_file, people_frame: pd.DataFrame) -> None:
    # income / (age - 30) divides by zero on 30-year-olds; the clamp makes the bounds, TRY makes
    # the failing rows NULL (DuckDB's division by zero is NULL or an error depending on the type).
    con = connect(policy_file(epsilon=1e7), random_seed=2)
    (value,), = con.execute(PRECISE + "COUNT(GREATEST(LEAST(income / (age - 30), 10), -10)) FROM people").fetchall()
    assert value <= len(people_frame) + 0.5


def test_a_case_that_turns_an_aggregate_into_text_is_answered_without_an_interval(connect) -> None:  # type: ignore[no-untyped-def]
    # Found by the corpus of others' SQL: the interval of a text output subtracted strings (a
    # TypeError after the charge). Text has no half-width; the count beside it keeps its own.
    con = connect(random_seed=2)
    cur = con.execute("SELECT dept, CASE WHEN COUNT(*) > 3000 THEN 'large' ELSE 'small' END AS size, COUNT(*) AS n "
                      "FROM people GROUP BY dept")
    rows = cur.fetchall()
    assert rows and {r[1] for r in rows} <= {"large", "small"}
    assert cur.noise_info[1]["ci95"] is None and cur.noise_info[2]["ci95"] > 0

"""The clock read once at plan time (dpsql/frontend/clock.py) and the constant instants that WHERE
ranges narrow key domains with (dpsql/analysis/constant_instants.py).

Hypotheses: (1) every spelling of the clock in one statement becomes the literal of ONE instant
(UTC), a TIMESTAMP or a DATE, and a statement without a clock is left alone; (2) the instant a
constant date expression denotes is the value DuckDB computes for it (the reference engine),
checked by running each expression in DuckDB. Negative controls: a call that is not a clock
(`now(1)`, a column named `now`) is kept, and a month shift that forgets DuckDB's end-of-month
rule is caught by the same DuckDB comparison.
"""

from __future__ import annotations

import calendar
import datetime as dt

import duckdb
import pytest
from sqlglot import exp

from dpsql.analysis import constant_instants
from dpsql.analysis.constant_instants import constant_instant
from dpsql.frontend.clock import read_clock
from dpsql.frontend.parse import parse_statement, parse_tree

AT = dt.datetime(2026, 3, 31, 23, 45, 6, 789012)


@pytest.mark.parametrize(("spelling", "literal"), [
    ("now()", "CAST('2026-03-31 23:45:06.789012' AS TIMESTAMP)"),
    ("current_timestamp", "CAST('2026-03-31 23:45:06.789012' AS TIMESTAMP)"),
    ("CURRENT_TIMESTAMP()", "CAST('2026-03-31 23:45:06.789012' AS TIMESTAMP)"),
    ("current_timestamp(3)", "CAST('2026-03-31 23:45:06.789000' AS TIMESTAMP)"),
    ("current_timestamp(0)", "CAST('2026-03-31 23:45:06.000000' AS TIMESTAMP)"),
    ("get_current_timestamp()", "CAST('2026-03-31 23:45:06.789012' AS TIMESTAMP)"),
    ("transaction_timestamp()", "CAST('2026-03-31 23:45:06.789012' AS TIMESTAMP)"),
    ("localtimestamp", "CAST('2026-03-31 23:45:06.789012' AS TIMESTAMP)"),
    ("getdate()", "CAST('2026-03-31 23:45:06.789012' AS TIMESTAMP)"),
    ("current_date", "CAST('2026-03-31' AS DATE)"),
    ("today()", "CAST('2026-03-31' AS DATE)"),
    ("curdate()", "CAST('2026-03-31' AS DATE)"),
])
def test_each_clock_spelling_is_the_literal_of_the_instant(spelling: str, literal: str) -> None:
    parsed = parse_statement(f"SELECT COUNT(*) FROM people WHERE x < {spelling}", clock=AT)
    assert parsed.clock == AT
    assert parsed.tree.args["where"].this.expression.sql(dialect="duckdb") == literal


def test_one_statement_reads_one_instant() -> None:
    parsed = parse_statement("SELECT COUNT(*) FROM people WHERE a < now() AND b >= current_date AND c > now()", clock=AT)
    literals = {n.this for n in parsed.tree.find_all(exp.Literal) if n.is_string}
    assert literals == {"2026-03-31 23:45:06.789012", "2026-03-31"}


def test_the_default_clock_is_utc_wall_time() -> None:
    before = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    parsed = parse_statement("SELECT COUNT(*) FROM people WHERE a < now()")
    after = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    assert parsed.clock is not None and before <= parsed.clock <= after


def test_control_what_is_not_a_clock_is_kept() -> None:
    tree = parse_tree("SELECT COUNT(*) FROM people WHERE now(1) > 0 AND now > 2")
    assert tree is not None
    same, instant = read_clock(tree, AT)
    assert instant is None and same is tree  # untouched: not even copied
    assert parse_statement("SELECT COUNT(*) FROM people", clock=AT).clock is None
    assert parse_statement("SET dpsql.epsilon = 1", clock=AT).clock is None


# --- constant instants, against DuckDB ------------------------------------------------------------

EXPRESSIONS = [
    "TIMESTAMP '2024-03-31 10:00:00' + INTERVAL '-1 month'",
    "CAST('2024-03-31 10:00:00' AS TIMESTAMP) + (INTERVAL '-12' MONTH)",
    "DATE '2024-03-31' - INTERVAL 1 MONTH",
    "DATE '2024-01-31' + INTERVAL '1 month'",
    "DATE '2024-03-31' + INTERVAL '1 quarter'",
    "TIMESTAMP '2024-02-29 00:00:00' + INTERVAL 1 YEAR",
    "TIMESTAMP '2024-02-29 12:00:00' - INTERVAL '30 days'",
    "TIMESTAMP '2024-02-29 12:00:00' - INTERVAL 2 WEEK",
    "TIMESTAMP '2024-02-29 12:00:00' + INTERVAL 36 HOUR",
    "DATE '2024-03-31' - 365",
    "DATE '2024-03-01' + 1",
    "date_trunc('month', TIMESTAMP '2024-03-31 10:00:00' + INTERVAL '-12 month')",
    "date_trunc('week', TIMESTAMP '2024-03-31 10:00:00')",
    "date_trunc('quarter', DATE '2024-05-20')",
    "CAST(TIMESTAMP '2024-03-31 23:59:59' AS DATE)",
    "date_add(DATE '2024-01-31', INTERVAL 1 MONTH)",
    "INTERVAL 1 DAY + TIMESTAMP '2024-12-31 12:00:00'",
]


def duckdb_value(expression: str) -> dt.datetime:
    value = duckdb.connect().execute(f"SELECT {expression}").fetchone()[0]  # type: ignore[index]
    return value if isinstance(value, dt.datetime) else dt.datetime.combine(value, dt.time())


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_a_constant_instant_is_what_duckdb_computes(expression: str) -> None:
    tree = parse_tree(f"SELECT {expression}")
    assert tree is not None
    found = constant_instant(tree.expressions[0])
    assert found is not None, expression
    assert found[0] == duckdb_value(expression), expression


@pytest.mark.parametrize("expression", [
    "TIMESTAMP '2024-03-31 10:00:00' + INTERVAL '1 month 2 days'",  # two units
    "TIMESTAMP '2024-03-31 10:00:00' + INTERVAL '1.5' DAY",  # a fraction
    "TIMESTAMP '2024-03-31 10:00:00' + 1",  # an engine error, not an instant
    "'2024-03-31 10:00:00+02:00'",  # a time zone DuckDB's cast drops
    "date_trunc('millennium', DATE '2024-01-01')",
])
def test_what_is_not_evaluated_exactly_is_none(expression: str) -> None:
    tree = parse_tree(f"SELECT {expression}")
    assert tree is not None and constant_instant(tree.expressions[0]) is None


def test_control_a_month_shift_without_the_end_of_month_rule_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def naive(value: dt.datetime, count: int, unit: str) -> dt.datetime | None:
        total = value.year * 12 + value.month - 1 + count
        year, month = divmod(total, 12)
        day = value.day if value.day <= calendar.monthrange(year, month + 1)[1] else 1  # wrong: rolls to the 1st
        return value.replace(year=year, month=month + 1, day=day)

    monkeypatch.setattr(constant_instants, "_plus", naive)
    expression = "TIMESTAMP '2024-03-31 10:00:00' + INTERVAL '-1 month'"
    tree = parse_tree(f"SELECT {expression}")
    assert tree is not None
    found = constant_instant(tree.expressions[0])
    assert found is not None and found[0] != duckdb_value(expression)

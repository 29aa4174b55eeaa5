"""A constant WHERE range on a column narrows the derived key domains over that column
(analysis/group_domains.py, `narrowed`).

Hypothesis: the narrowed domain holds every key a row that passes the WHERE can produce (rows
outside the range are filtered anyway), and no key of the policy's domain outside the range. It
is checked against DuckDB itself: the engine evaluates each WHERE and each key over a dense grid
of values within the policy's bounds and at the ranges' edges; every key of a passing row must
be in the domain. Negative controls: a range on another column (or under an OR) narrows
nothing, and a domain cut one step too short is caught by the same engine check.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from dataclasses import replace
from fractions import Fraction
from typing import Any

import duckdb
import pytest
from sqlglot import exp

from dpsql.analysis.context import AnalysisContext
from dpsql.analysis.group_domains import derive_key, narrowed
from dpsql.backend.engines.duckdb_engine import render
from dpsql.backend.sql.plan_sql import key_sql
from dpsql.catalog.loader import policy_from_dict
from dpsql.catalog.policy import Policy, Table
from dpsql.execution.compiled import CompiledQuery, compile_statement
from dpsql.frontend.parse import parse_tree
from dpsql.ir.query import GroupKey

POLICY = """
[budget]
epsilon = 10.0
delta = 1e-5
default_query_epsilon = 1.0
default_query_delta = 1e-8

[tables.events]
privacy_unit = "uid"
max_rows = 4
max_groups = 2

[tables.events.columns]
uid = { type = "int" }
seen = { type = "timestamp", lower = 2021-01-01T00:00:00, upper = 2024-12-31T23:59:59 }
day = { type = "date", lower = 2021-01-01, upper = 2024-12-31 }
score = { type = "int", lower = -50, upper = 50 }
amount = { type = "float", lower = 0, upper = 100 }
"""


@pytest.fixture(scope="module")
def policy() -> Policy:
    return policy_from_dict(tomllib.loads(POLICY))


def keys_of(policy: Policy, sql: str) -> tuple[Any, ...] | None:
    _, compiled = compile_statement(sql, None, AnalysisContext(policy, policy.budget.default_query))
    assert isinstance(compiled, CompiledQuery), sql
    return compiled.plan.query.keys[0].column.values


WEEKS = "SELECT date_trunc('week', seen) AS w, COUNT(*) FROM events {} GROUP BY 1"
ALL_WEEKS = 210  # 2020-12-28 to 2024-12-30


def test_a_twelve_week_range_releases_twelve_weeks_not_210(policy: Policy) -> None:
    # Every week the four years touch (the issue saw 209 for its bounds), unless the WHERE narrows them.
    assert len(keys_of(policy, WEEKS.format("")) or ()) == ALL_WEEKS
    found = keys_of(policy, WEEKS.format("WHERE seen >= '2023-01-02' AND seen < '2023-03-27'"))
    assert found is not None and len(found) == 12
    assert found[0] == dt.datetime(2023, 1, 2) and found[-1] == dt.datetime(2023, 3, 20)


@pytest.mark.parametrize("where", [
    "WHERE '2023-01-02' <= seen AND '2023-03-27' > seen",                        # constants on the left
    "WHERE seen BETWEEN '2023-01-02T00:00:00Z' AND '2023-03-26T23:59:59Z'",       # Grafana's $__timeFilter
    "WHERE seen >= TIMESTAMP '2023-01-02 00:00:00' AND seen < TIMESTAMP '2023-03-27 00:00:00' AND amount > 3",
    "WHERE seen >= TO_TIMESTAMP('2023-01-02 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US') "   # Superset's filter
    "AND seen < TO_TIMESTAMP('2023-03-27 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')",
])
def test_every_spelling_of_the_range_narrows(policy: Policy, where: str) -> None:
    assert len(keys_of(policy, WEEKS.format(where)) or ()) == 12


@pytest.mark.parametrize("where", [
    "WHERE day >= '2023-01-02' AND day < '2023-03-27'",            # negative control: a range on ANOTHER column
    "WHERE amount BETWEEN 10 AND 20",
    "WHERE seen >= '2023-01-02' OR seen < '2023-03-27'",           # an OR is no range
    "WHERE NOT (seen BETWEEN '2023-01-02' AND '2023-03-27')",
    "WHERE seen >= '2023-01-02T00:00:00+02:00'",                   # an offset dpsql does not read
    "WHERE seen >= '2023-03-27' AND seen < '2023-01-02'",          # an empty range keeps the policy's domain
])
def test_negative_control_other_columns_and_non_ranges_do_not_narrow(policy: Policy, where: str) -> None:
    assert len(keys_of(policy, WEEKS.format(where)) or ()) == ALL_WEEKS


def test_a_range_can_give_an_unbounded_column_a_public_domain() -> None:
    policy = policy_from_dict(tomllib.loads(POLICY.replace(
        'seen = { type = "timestamp", lower = 2021-01-01T00:00:00, upper = 2024-12-31T23:59:59 }', 'seen = { type = "timestamp" }')))
    assert keys_of(policy, WEEKS.format("")) is None  # no bounds: partition selection
    assert len(keys_of(policy, WEEKS.format("WHERE seen >= '2023-01-02' AND seen < '2023-03-27'")) or ()) == 12


# --- the engine check: every key of a passing row is in the narrowed domain ---------------------------

CASES = [
    ("date_trunc('day', seen)", "seen >= '2023-05-01 06:00:00' AND seen < '2023-05-09'"),
    ("date_trunc('hour', seen)", "seen > '2023-05-01 06:00:00' AND seen <= '2023-05-01 09:00:00'"),
    ("floor(extract(epoch FROM seen) / 86400) * 86400", "seen BETWEEN '2023-05-01T00:00:00Z' AND '2023-05-07T23:59:59Z'"),
    ("date_trunc('week', day)", "day > '2023-05-03' AND day < '2023-06-01'"),
    ("date_trunc('month', day)", "day >= '2023-05-31 12:00:00' AND day <= '2023-09-01 06:00'"),  # times of day on a date
    ("date_trunc('month', day)", "day > TIMESTAMP '2023-05-31 12:00:00' AND day < TIMESTAMP '2023-09-01 06:00:00'"),
    ("score // 7", "score > -20 AND score < 13"),
    ("score % 5", "score = 12"),
    ("FLOOR(amount / 10)", "amount >= 33.5 AND amount < 50"),
    ("CAST(EXTRACT(year FROM day) AS INTEGER)", "day BETWEEN DATE '2022-12-31' AND DATE '2023-01-01'"),
]


@pytest.fixture(scope="module")
def grid() -> duckdb.DuckDBPyConnection:
    """Rows over the policy's bounds: timestamps every 37 minutes (and around the cases' edges),
    every day, every score, amounts every 0.25."""
    con = duckdb.connect()
    start = dt.datetime(2021, 1, 1)
    stamps = [start + dt.timedelta(minutes=37 * i) for i in range(4 * 366 * 24 * 60 // 37)]
    edges = [dt.datetime(2023, 5, 1, 6), dt.datetime(2023, 5, 9), dt.datetime(2023, 5, 1, 9), dt.datetime(2023, 5, 8)]
    stamps += [e + dt.timedelta(microseconds=d) for e in edges for d in (-1, 0, 1)]
    days = [dt.date(2021, 1, 1) + dt.timedelta(days=i) for i in range(1461)]
    size = len(stamps)

    def column(values: list[Any]) -> list[Any]:
        return [values[i % len(values)] for i in range(size)]

    import pandas as pd
    frame = pd.DataFrame({"seen": stamps, "day": column(days), "score": column(list(range(-50, 51))),
                          "amount": column([i * 0.25 for i in range(401)])})
    con.register("events", frame)
    return con


def engine_keys(con: duckdb.DuckDBPyConnection, key: GroupKey, where: str) -> set[Any]:
    condition = parse_tree(f"SELECT 1 FROM events WHERE {where}").args["where"].this
    sql = render(exp.select(exp.alias_(key_sql(key), "k")).distinct().from_("events").where(condition))
    return {row[0] for row in con.execute(sql).fetchall()} - {None}


def narrowed_key(table: Table, expression: str, where: str) -> GroupKey:
    tree = parse_tree(f"SELECT {expression} FROM events WHERE {where}")
    expr = tree.expressions[0]
    found = derive_key(expr, narrowed(table, tree.args["where"]))
    return GroupKey(column=found.column, expr=expr, derivation=found.derivation)


@pytest.mark.parametrize(("expression", "where"), CASES)
def test_the_narrowed_domain_holds_every_key_of_a_passing_row(policy: Policy, grid: duckdb.DuckDBPyConnection,
                                                             expression: str, where: str) -> None:
    table = policy.table("events")
    assert table is not None
    key = narrowed_key(table, expression, where)
    assert key.column.values is not None, key.derivation
    whole = derive_key(parse_tree(f"SELECT {expression} FROM events").expressions[0], table).column.values
    assert whole is None or len(key.column.values) < len(whole)  # it did narrow (or made a domain listable)
    produced = engine_keys(grid, key, where)
    assert produced, "the grid has rows in the range"
    missing = produced - set(key.column.values)
    assert not missing, f"keys of passing rows outside the narrowed domain: {sorted(missing)[:5]}"


def test_negative_control_a_domain_one_day_too_short_is_caught(policy: Policy, grid: duckdb.DuckDBPyConnection) -> None:
    table = policy.table("events")
    assert table is not None
    expression, where = CASES[0]
    tree = parse_tree(f"SELECT {expression} FROM events WHERE {where}")
    short = narrowed(table, tree.args["where"])
    seen = short.columns["seen"]
    assert seen.upper is not None
    short = replace(short, columns={**short.columns, "seen": replace(seen, upper=seen.upper - Fraction(86_400))})
    found = derive_key(tree.expressions[0], short)
    key = GroupKey(column=found.column, expr=tree.expressions[0], derivation=found.derivation)
    assert engine_keys(grid, key, where) - set(key.column.values or ()) == {dt.datetime(2023, 5, 8)}

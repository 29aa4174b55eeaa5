"""Derived GROUP BY domains (dpsql/analysis/group_domains.py) against the engine's own values.

For each key expression, DuckDB evaluates the engine's key SQL (sqlgen.key_sql: TRY, CAST to the
derived type) on every combination of values the policy allows (each int and date between its
bounds, the declared text values, both bools, a dense grid of floats and timestamps between
their bounds). Every non-NULL value the engine produces must be a key of the derived domain:
otherwise rows within the bounds would be dropped from the answer. The domain may hold more
keys than occur (a superset is released empty), never fewer. A negative control shows that the
check catches a domain derived with Python's floor division, where the engines truncate.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from typing import Any

import duckdb
import pytest
from sqlglot import exp

from dpsql.analysis.group_domains import MAX_DERIVED_KEYS, derive_key
from dpsql.backend.engines.duckdb_engine import render
from dpsql.backend.sql.plan_sql import key_sql
from dpsql.catalog.loader import policy_from_dict
from dpsql.catalog.policy import Table
from dpsql.frontend.parse import parse_tree
from dpsql.ir.query import GroupKey

POLICY = """
[budget]
epsilon = 1.0
delta = 1e-6
default_query_epsilon = 0.1
default_query_delta = 1e-8

[tables.t]
privacy_unit = "uid"
[tables.t.columns]
uid = { type = "int" }
score = { type = "int", lower = -7, upper = 7 }
day = { type = "date", lower = 2023-12-25, upper = 2024-03-05 }
ts = { type = "timestamp", lower = 2024-02-27T22:00:00, upper = 2024-03-02T03:00:00 }
amount = { type = "float", lower = -10, upper = 10 }
kind = { type = "text", values = ["View", "click", "BUY"] }
flag = { type = "bool" }
big = { type = "int", lower = 0, upper = 1000000 }
"""

EXPRESSIONS = [
    "score // 2", "score % 3", "score // 3 * 3", "-score + 1", "score * score", "score / 4", "FLOOR(score / 4)",
    "CEIL(score / 4)", "ROUND(score / 4)", "FLOOR(amount / 3)", "CEIL(amount)",
    "CASE WHEN score < 0 THEN 'neg' WHEN score = 0 THEN 'zero' END", "IF(flag, score, 0)",
    "upper(kind)", "lower(kind)", "left(kind, 2)", "right(kind, 2)", "substring(kind, 2, 2)", "length(kind)",
    "COALESCE(lower(kind), 'none')", "CAST(score AS VARCHAR)", "CAST(flag AS VARCHAR)",
    "date_trunc('month', day)", "date_trunc('week', day)", "date_trunc('quarter', day)", "date_trunc('year', day)",
    "EXTRACT(year FROM day)", "EXTRACT(month FROM day)", "EXTRACT(dow FROM day)", "EXTRACT(doy FROM day)",
    "year(day)", "month(day)", "quarter(day)", "dayofweek(day)", "dayofyear(day)", "week(day)", "day(day)",
    "date_part('month', day)", "score > 0", "kind IN ('View', 'BUY') AND NOT flag", "date_trunc('hour', ts)", "date_trunc('day', ts)", "date_trunc('week', ts)",
    "hour(ts)", "minute(ts)", "EXTRACT(day FROM ts)", "date_trunc('month', ts)",
    # BI tools' buckets (issue 30 item 6): CAST, EXTRACT(EPOCH), to_timestamp
    "CAST(EXTRACT(year FROM day) AS INTEGER)", "CAST(extract(dow FROM ts) AS integer) + 1",
    "CAST(date_trunc('month', day) AS date)", "date_trunc('month', CAST(ts AS DATE))", "CAST(ts AS DATE)",
    "date_trunc('day', CAST(day AS TIMESTAMP))", "floor(extract(epoch FROM ts) / 3600) * 3600",
    "floor(extract(epoch FROM day) / 86400)", "to_timestamp(floor(extract(epoch FROM ts) / 3600) * 3600)",
    "CAST(amount AS INTEGER)", "CAST(amount / 3 AS SMALLINT)", "CAST(score * 2.5 AS INTEGER)", "CAST(flag AS INTEGER)",
]


@pytest.fixture(scope="module")
def table() -> Table:
    policy = policy_from_dict(tomllib.loads(POLICY))
    found = policy.table("t")
    assert found is not None
    return found


@pytest.fixture(scope="module")
def engine() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    days = [dt.date(2023, 12, 25) + dt.timedelta(days=i) for i in range(72)]
    start = dt.datetime(2024, 2, 27, 22)
    stamps = [start + dt.timedelta(minutes=7 * i) for i in range(int((dt.datetime(2024, 3, 2, 3) - start).total_seconds() // 420) + 1)]
    amounts = [-10 + i * 0.125 for i in range(161)]
    # One column per input, each row one value: the engine evaluates a single-column expression on every row.
    size = max(len(days), len(stamps), len(amounts))

    def column(values: list[Any]) -> list[Any]:
        return [values[i % len(values)] for i in range(size)]

    frame = {"score": column(list(range(-7, 8))), "day": column(days), "ts": column(stamps), "amount": column(amounts),
             "kind": column(["View", "click", "BUY"]), "flag": column([True, False])}
    import pandas as pd
    con.register("t", pd.DataFrame(frame))
    return con


def engine_values(con: duckdb.DuckDBPyConnection, key: GroupKey) -> set[Any]:
    sql = render(exp.select(exp.alias_(key_sql(key), "k")).distinct().from_("t"))
    return {row[0] for row in con.execute(sql).fetchall()} - {None}


def derived(sql: str, table: Table) -> GroupKey:
    tree = parse_tree(f"SELECT {sql} FROM t")
    expr = tree.expressions[0]
    found = derive_key(expr, table)
    return GroupKey(column=found.column, expr=expr, derivation=found.derivation)


@pytest.mark.parametrize("sql", EXPRESSIONS)
def test_engine_values_lie_in_the_derived_domain(sql: str, table: Table, engine: duckdb.DuckDBPyConnection) -> None:
    key = derived(sql, table)
    assert key.column.values is not None, f"{sql}: no public domain ({key.derivation})"
    assert len(key.column.values) <= MAX_DERIVED_KEYS
    missing = engine_values(engine, key) - set(key.column.values)
    assert not missing, f"{sql}: the engine produces keys outside the derived domain: {sorted(missing)[:5]}"


def test_negative_control_python_modulo_is_caught(table: Table, engine: duckdb.DuckDBPyConnection) -> None:
    # A derivation with Python's % (the sign of the divisor) instead of the engines' (the sign of
    # the dividend) would list 0, 1, 2 for score % 3 over [-7, 7]: the check above must see the
    # engine's -1 and -2 fall outside it.
    floor_domain = {v % 3 for v in range(-7, 8)}
    missing = engine_values(engine, derived("score % 3", table)) - floor_domain
    assert missing == {-1, -2}


def test_the_domain_depends_on_the_policy_only(table: Table) -> None:
    # derive_key's only inputs are the expression and the policy's table: the same key twice.
    assert derived("score // 2", table) == derived("score // 2", table)
    assert derived("CASE WHEN score < 0 THEN 'neg' END", table).column.values == ("neg", None)


def test_too_many_keys_or_no_bounds_fall_back_to_partition_selection(table: Table) -> None:
    assert derived("date_trunc('second', ts)", table).column.values is None  # 277,201 seconds
    assert derived("amount * 1000 // 1", table).column.values is None  # a DOUBLE: engines disagree on //
    assert derived("big // 10", table).column.values is None  # 100,001 keys
    assert len(derived("big // 1000", table).column.values or ()) == 1001  # from big's interval

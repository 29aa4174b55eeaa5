"""Derived GROUP BY domains at the edges of the engine's types (issue 25: bare Python errors).

`FLOOR(age * 1e308 * 10)`, `ROUND(...)` of it, a NaN through `CEIL`, integer overflow, and
`date_trunc` over date bounds in year 9999 raised OverflowError / ValueError from
analysis/group_domains.py. Each now derives a domain (or partition selection), and the domain is
exactly what the engine computes: DuckDB evaluates the engine's key SQL (sqlgen.key_sql: TRY,
CAST to the key type) on every value the policy allows, and its non-NULL keys must equal the
derived keys (a value the engine cannot produce is not listed; one it produces is).

Negative control: the derivation with Python's own rounding (no guard for infinities) raises the
bare OverflowError again, which the first test would report.
"""

from __future__ import annotations

import datetime as dt
import math
import tomllib
from typing import Any

import duckdb
import pandas as pd
import pytest
from sqlglot import exp

import dpsql.analysis.group_domains as group_domains
from dpsql.analysis.group_domains import derive_key
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
age = { type = "int", lower = 18, upper = 90 }
late = { type = "date", lower = 9999-11-20, upper = 9999-12-31 }
stamp = { type = "timestamp", lower = 9999-12-31T21:00:00, upper = 9999-12-31T23:59:59 }
"""

OVERFLOWING = [
    "FLOOR(age * 1e308 * 10)", "ROUND(age * 1e308 * 10)", "CEIL(age * 1e308 * 10)", "CEIL(age * 1e308 * 10 - age * 1e308 * 10)",
    "CEIL(0.0 * (age * 1e308 * 10))", "FLOOR(-age * 1e308 * 10)", "CAST(FLOOR(age * 1e308 * 10) AS VARCHAR)",
    "age * 1e308 * 10", "-(age * 1e308 * 10)", "0.0 * (age * 1e308 * 10)",
    "age * 9223372036854775807", "age * 4611686018427387904 // 3", "(age * 4611686018427387904) % 7", "(age - 50) % 7",
    "CASE WHEN age > 50 THEN age * 1e308 * 10 ELSE 1.5 END", "FLOOR(age / 0)",
    "date_trunc('year', late)", "date_trunc('quarter', late)", "date_trunc('month', late)", "date_trunc('week', late)",
    "date_trunc('day', stamp)", "date_trunc('hour', stamp)", "date_trunc('month', stamp)", "EXTRACT(doy FROM late)",
    "EXTRACT(week FROM late)", "day(late)",
]


@pytest.fixture(scope="module")
def table() -> Table:
    found = policy_from_dict(tomllib.loads(POLICY)).table("t")
    assert found is not None
    return found


@pytest.fixture(scope="module")
def engine() -> duckdb.DuckDBPyConnection:
    days = [dt.date(9999, 11, 20) + dt.timedelta(days=i) for i in range(42)]
    start = dt.datetime(9999, 12, 31, 21)
    stamps = [start + dt.timedelta(minutes=5 * i) for i in range(36)] + [dt.datetime(9999, 12, 31, 23, 59, 59)]
    size = max(len(days), len(stamps), 73)

    def column(values: list[Any]) -> list[Any]:
        return [values[i % len(values)] for i in range(size)]

    con = duckdb.connect()
    con.register("t", pd.DataFrame({"age": column(list(range(18, 91))), "late": column(days), "stamp": column(stamps)}))
    return con


def derived(sql: str, table: Table) -> GroupKey:
    tree = parse_tree(f"SELECT {sql} FROM t")
    assert tree is not None
    expr = tree.expressions[0]
    found = derive_key(expr, table)  # raises nothing but NoDomain (a dpsql refusal upstream)
    return GroupKey(column=found.column, expr=expr, derivation=found.derivation)


def engine_values(con: duckdb.DuckDBPyConnection, key: GroupKey) -> set[Any]:
    sql = render(exp.select(exp.alias_(key_sql(key), "k")).distinct().from_("t"))
    return {_normal(row[0]) for row in con.execute(sql).fetchall()} - {None}


def _normal(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.time() == dt.time():
        return value  # a timestamp key stays a timestamp
    return None if isinstance(value, float) and math.isnan(value) else value


@pytest.mark.parametrize("sql", OVERFLOWING)
def test_overflowing_domains_are_derived_exactly(sql: str, table: Table, engine: duckdb.DuckDBPyConnection) -> None:
    key = derived(sql, table)
    assert key.column.values is not None, f"{sql}: {key.derivation}"
    listed = set(key.column.values) - {None}
    produced = engine_values(engine, key)
    if key.column.type == "date":
        produced = {v.date() if isinstance(v, dt.datetime) else v for v in produced}
    assert produced <= listed, f"{sql}: the engine's keys {sorted(produced - listed)[:3]} are not listed"
    assert listed <= produced, f"{sql}: listed keys the engine never produces {sorted(listed - produced, key=str)[:3]}"


def test_the_issue_examples_have_no_keys_or_their_last_representable_ones(table: Table) -> None:
    assert derived("FLOOR(age * 1e308 * 10)", table).column.values == ()
    assert derived("date_trunc('year', late)", table).column.values == (dt.date(9999, 1, 1),)
    assert derived("age * 1e308 * 10", table).column.values == (math.inf,)


def test_negative_control_python_rounding_raises_bare_errors(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(group_domains._ROUNDINGS, exp.Floor, math.floor)
    with pytest.raises(OverflowError):
        derived("FLOOR(age * 1e308 * 10)", table)

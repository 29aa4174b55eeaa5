"""The DuckDB types the analysis writes into the analyst's expressions (analysis/expression_types.py)
against DuckDB's own `typeof`, and the refusals of what no other engine computes alike (DP142).

The Spark renderings choose by these types (CAST(x AS BIGINT) rounds a DOUBLE, keeps an integer;
FLOOR of an integer is a DOUBLE), so a wrong type renders a wrong meaning: each expression is
typed by DuckDB over an empty table of the policy's types, and the two must agree. Negative
control: the same comparison flags a type written wrong on purpose.
"""

from __future__ import annotations

import tomllib

import duckdb
import pytest

import dpsql
from dpsql.analysis.context import AnalysisContext
from dpsql.analysis.expression_types import TYPE_KEY, annotate, type_of
from dpsql.catalog.loader import policy_from_dict
from dpsql.catalog.policy import Policy, Table
from dpsql.execution.compiled import compile_statement
from dpsql.frontend.parse import parse_tree

POLICY = """
[budget]
epsilon = 10.0
delta = 1e-5
default_query_epsilon = 1.0
default_query_delta = 1e-8

[tables.t]
privacy_unit = "uid"
[tables.t.columns]
uid = { type = "int" }
age = { type = "int", lower = 0, upper = 100 }
income = { type = "float", lower = 0, upper = 100 }
name = { type = "text" }
day = { type = "date" }
ts = { type = "timestamp" }
flag = { type = "bool" }
"""

EXPRESSIONS = [
    "age", "income", "name", "day", "ts", "flag", "1", "3000000000", "1.5", "1e5", "'a' || name",
    "age + 1", "age * 1.5", "income * 2", "age / 2", "age // 2", "income // 2", "age % 3", "income % 3", "-age",
    "floor(age)", "floor(income)", "floor(age * 1.5)", "ceil(income)", "round(age)", "round(income)", "trunc(income)",
    "abs(age)", "sign(income)", "sqrt(age)", "ln(income)", "log(income)", "log10(income)", "log2(income)", "exp(age)",
    "power(age, 2)", "CAST(income AS BIGINT)", "CAST(age AS INTEGER)", "CAST(age AS SMALLINT)", "CAST(income AS DECIMAL(10, 2))",
    "CAST(age AS VARCHAR)", "CAST(day AS TIMESTAMP)", "CAST(ts AS DATE)", "TRY_CAST(age AS DOUBLE)",
    "year(day)", "month(ts)", "dayofweek(day)", "week(day)", "yearweek(day)", "dayofyear(day)", "hour(ts)",
    "EXTRACT(dow FROM day)", "EXTRACT(epoch FROM ts)", "date_part('year', day)", "date_part('epoch', day)",
    "date_trunc('month', day)", "date_trunc('hour', ts)", "datediff('month', day, day)", "date_add(day, INTERVAL 1 MONTH)",
    "day + INTERVAL 1 DAY", "ts - INTERVAL 2 HOUR", "day + 1", "day - day", "ts - ts",
    "length(name)", "strlen(name)", "upper(name)", "substring(name, 1, 2)", "left(name, 2)", "strpos(name, 'a')",
    "age > 3", "name LIKE 'a%'", "isnan(income)", "isinf(income)", "isfinite(income)", "suffix(name, 'a')",
    "regexp_full_match(name, 'a.*')", "CASE WHEN flag THEN age ELSE 0 END", "CASE WHEN flag THEN age ELSE income END",
    "coalesce(age, 1)", "greatest(age, 2)", "nullif(name, 'a')", "IF(flag, 'a', 'b')", "to_timestamp(age)",
]
# DuckDB's typeof -> the families expression_types names (INTEGER stands for every integer up to 32 bits).
FAMILIES = {"TINYINT": "INTEGER", "SMALLINT": "INTEGER", "INTEGER": "INTEGER", "BIGINT": "BIGINT", "HUGEINT": "HUGEINT",
            "DOUBLE": "DOUBLE", "FLOAT": "FLOAT", "VARCHAR": "VARCHAR", "DATE": "DATE", "TIMESTAMP": "TIMESTAMP",
            "BOOLEAN": "BOOLEAN", "INTERVAL": "INTERVAL", "TIMESTAMP WITH TIME ZONE": "TIMESTAMPTZ"}
# to_timestamp: DuckDB's own is a TIMESTAMP WITH TIME ZONE; dpsql renders it as a TIMESTAMP on every
# engine (backend/sql/spark_semantics.py), and types it so.
DPSQL_OWN = {"to_timestamp(age)": "TIMESTAMP"}


@pytest.fixture(scope="module")
def policy() -> Policy:
    return policy_from_dict(tomllib.loads(POLICY))


@pytest.fixture(scope="module")
def table(policy: Policy) -> Table:
    found = policy.table("t")
    assert found is not None
    return found


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.execute("CREATE TABLE t (uid BIGINT, age BIGINT, income DOUBLE, name VARCHAR, day DATE, ts TIMESTAMP, flag BOOLEAN)")
    return connection


def duckdb_family(con: duckdb.DuckDBPyConnection, expression: str) -> str:
    kind = con.execute(f"SELECT typeof({expression}) FROM (SELECT * FROM t UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL)").fetchone()
    assert kind is not None
    name = str(kind[0])
    return "DECIMAL" if name.startswith("DECIMAL") else FAMILIES[name]


def annotated(expression: str, table: Table) -> str | None:
    node = parse_tree(f"SELECT {expression} FROM t").expressions[0]
    annotate(node, table)
    return type_of(node)


def mismatches(con: duckdb.DuckDBPyConnection, table: Table, expressions: list[str],
               typed: dict[str, str | None] | None = None) -> list[str]:
    found = []
    for expression in expressions:
        ours = (typed or {}).get(expression) or annotated(expression, table)
        theirs = DPSQL_OWN.get(expression) or duckdb_family(con, expression)
        if ours != theirs:
            found.append(f"{expression}: dpsql {ours}, DuckDB {theirs}")
    return found


def test_every_type_is_duckdbs(con: duckdb.DuckDBPyConnection, table: Table) -> None:
    assert not mismatches(con, table, EXPRESSIONS)


def test_negative_control_a_wrong_type_is_caught(con: duckdb.DuckDBPyConnection, table: Table) -> None:
    # FLOOR of a BIGINT typed as a BIGINT (Spark's type): the comparison must flag it.
    assert mismatches(con, table, ["floor(age)"], {"floor(age)": "BIGINT"}) == ["floor(age): dpsql BIGINT, DuckDB DOUBLE"]


def test_every_node_of_a_bound_query_is_typed(policy: Policy) -> None:
    _, compiled = compile_statement("SELECT CAST(age / 2 AS INTEGER) AS k, SUM(income * 2) FROM t WHERE ln(income) > 1 GROUP BY 1",
                                    None, AnalysisContext(policy, policy.budget.default_query))
    query = compiled.plan.query  # type: ignore[union-attr]
    for tree in (query.where, query.keys[0].expr, query.aggregates[0].expr):
        assert tree is not None
        assert all(TYPE_KEY in node.meta for node in tree.walk())


@pytest.mark.parametrize(("predicate", "fragment"), [
    ("CAST(income AS VARCHAR) = '1'", "a DOUBLE's text"),
    ("concat(income, 'x') = '1x'", "a DOUBLE's text"),
    ("CAST(name AS INTEGER) = 1", "read text as INTEGER"),
    ("TRY_CAST(name AS DATE) = DATE '2020-01-01'", "read text as DATE"),
    ("extract(decade FROM day) = 202", "the date part 'decade'"),
    ("datediff('decade', day, day) = 0", "date_diff in 'decade'"),
    ("day + INTERVAL (age) DAY > DATE '2020-01-01'", "an INTERVAL"),
])
def test_what_one_engine_computes_otherwise_is_refused_everywhere(policy: Policy, predicate: str, fragment: str) -> None:
    with pytest.raises(dpsql.Error) as info:
        compile_statement(f"SELECT COUNT(*) FROM t WHERE {predicate}", None, AnalysisContext(policy, policy.budget.default_query))
    assert info.value.code == "DP142" and fragment in str(info.value), str(info.value)


def test_a_literal_may_be_read_as_a_number_a_rounded_double_not_as_text(policy: Policy) -> None:
    ctx = AnalysisContext(policy, policy.budget.default_query)
    compile_statement("SELECT COUNT(*) FROM t WHERE CAST('12' AS INTEGER) = age", None, ctx)  # a constant: read alike
    with pytest.raises(dpsql.Error, match="DP142"):  # ROUND of a DOUBLE is still a DOUBLE
        compile_statement("SELECT COUNT(*) FROM t WHERE CAST(round(income) AS VARCHAR) = '1'", None, ctx)

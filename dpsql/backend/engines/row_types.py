"""The columns and types of a row-level statement, from empty tables of the policy's types.

A BI tool's column probe (RowProbe) is answered with what its statement *would* return: the
statement runs in a fresh, locked-down in-memory DuckDB over empty tables named and typed as the
policy declares them (and the policy's views over those), so the answer depends on the SQL and
the policy only. No data source is opened; DuckDB's error text can quote nothing but the SQL.
"""

from __future__ import annotations

from collections.abc import Mapping

import duckdb
from sqlglot import exp

from dpsql.backend.engines.duckdb_engine import render
from dpsql.backend.sql.plan_sql import TYPE_NAMES
from dpsql.catalog.policy import Table
from dpsql.errors import UnsupportedQueryError

_LOCKDOWN = (
    "SET threads = 1",
    "SET temp_directory = ''",
    "SET autoinstall_known_extensions = false",
    "SET autoload_known_extensions = false",
    "SET enable_external_access = false",
    "SET lock_configuration = true",
)
MEMORY = "64MB"


def describe_rows(tables: Mapping[str, Table], views: Mapping[str, exp.Select], statement: exp.Expr) -> list[tuple[str, str]]:
    """(name, DuckDB type) of each output column of `statement` over empty `tables` (by name) and
    `views` (by name, over those tables). Schema qualifiers the analysis accepted (`public.people`)
    are dropped first.

    Raises:
        UnsupportedQueryError: DP123, the engine cannot bind the statement (no data is present).
    """
    tree = _unqualified(statement.copy())
    con = duckdb.connect(":memory:", config={"memory_limit": MEMORY})
    failure = None
    try:
        for name, table in tables.items():
            columns = [exp.ColumnDef(this=exp.to_identifier(c.name, quoted=True), kind=exp.DataType.build(TYPE_NAMES[c.type]))
                       for c in table.columns.values()]
            con.execute(render(exp.Create(this=exp.Schema(this=exp.table_(name, quoted=True), expressions=columns), kind="TABLE")))
        for name, body in views.items():
            con.execute(render(exp.Create(this=exp.table_(name, quoted=True), kind="VIEW", expression=_unqualified(body.copy()))))
        for statement_text in _LOCKDOWN:
            con.execute(statement_text)
        assert isinstance(tree, exp.Query)  # a probed statement is a SELECT or a set operation
        cursor = con.execute(render(exp.select("*").from_(tree.subquery("__dpsql_probe")).limit(0)))
        return [(str(d[0]), str(d[1])) for d in cursor.description or ()]
    except duckdb.Error as error:
        failure = str(error).split("\n")[0]
    finally:
        con.close()
    raise UnsupportedQueryError(f"the engine rejects this query: {failure}", code="DP123",
                                hint="fix the expression named above; nothing was charged")


def _unqualified(tree: exp.Expr) -> exp.Expr:
    """Table and column names without the schema and catalog the analysis accepted (main, public)."""
    for node in tree.find_all(exp.Table):
        if isinstance(node.this, exp.Identifier):
            node.set("db", None)
            node.set("catalog", None)
    for column in tree.find_all(exp.Column):
        column.set("db", None)
        column.set("catalog", None)
    return tree

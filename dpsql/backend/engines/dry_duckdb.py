"""DuckDB's dry runs: a database of the process that holds empty tables and nothing else.

A dry run checks a statement before the charge by running it where no row exists. On DuckDB it
runs here, in its own in-memory database, over empty tables named exactly as the session
relations the statement reads (`__dpsql_bounded_people`, a keyed relation), each with the
schema the policy gives that relation (engine.reference_relations). So the dry run's text is
the text that runs after the charge, rendered once, and this database cannot read private data
whatever the statement names: none was ever put in it. Each session has its own schema (a
cursor that USEs it), so sessions of one process, under different policies, never see each
other's tables; closing the session drops it.

Why not the session's own connection: there the dry run must print every relation under the
name of its empty stand-in (a second rendering of each statement: about 0.3 ms for a count, 2 ms
for a quantile's three statements), and a name it forgot would read data.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping
from typing import Any

import duckdb
from sqlglot import exp

from dpsql.backend.sql.engine_dialects import render

_LOCK = threading.Lock()
_DATABASE: duckdb.DuckDBPyConnection | None = None
_SCHEMAS = itertools.count(1)


def open_database() -> duckdb.DuckDBPyConnection:
    """The process's dry-run database, opened on first use (one thread: its statements are tiny).
    Opening a DuckDB database takes 12-18 ms: the background preparations at connect and at
    server startup open it, so that the first query does not."""
    global _DATABASE
    with _LOCK:
        if _DATABASE is None:
            database = duckdb.connect(":memory:")
            database.execute("SET threads = 1")
            _DATABASE = database
        return _DATABASE


class DryDatabase:
    """One session's schema of the dry-run database, opened on first use."""

    def __init__(self) -> None:
        self._con: duckdb.DuckDBPyConnection | None = None
        self._schema = f"dpsql_dry_{next(_SCHEMAS)}"
        self._tables: set[str] = set()

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            con = open_database().cursor()
            schema = exp.to_identifier(self._schema, quoted=True)
            con.execute(render(exp.Create(this=exp.Table(db=schema), kind="SCHEMA")))
            con.execute(render(exp.Use(this=exp.Table(this=schema, db=exp.to_identifier("memory", quoted=True)))))
            self._con = con
        return self._con

    def has(self, name: str) -> bool:
        """Whether the empty table `name` exists here."""
        return name in self._tables

    def ensure(self, tables: Mapping[str, exp.Select]) -> None:
        """Create these empty tables (name -> a SELECT of no rows) where missing."""
        con = self._connection()
        for name, select in tables.items():
            if name not in self._tables:
                con.execute(render(exp.Create(this=exp.to_table(name, quoted=True), kind="TABLE", expression=select.copy())))
                self._tables.add(name)

    def check(self, sql: str, params: Mapping[str, Any] | None = None) -> None:
        """Run `sql` over the empty tables; duckdb.Error if DuckDB rejects it."""
        con = self._connection()
        result = con.execute(sql, dict(params)) if params else con.execute(sql)
        if result.description is not None:
            result.fetchall()

    def close(self) -> None:
        """Drop this session's schema and close its cursor."""
        con, self._con = self._con, None
        if con is None:
            return
        try:
            con.execute(render(exp.Drop(tables=[exp.Table(db=exp.to_identifier(self._schema, quoted=True))], kind="SCHEMA",
                                        exists=True, cascade=True)))
        except duckdb.Error:
            pass  # the process's database is closing too
        con.close()

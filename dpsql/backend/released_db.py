"""A database of released rows only: where the outer query of a post-processing query runs.

Each session has its own in-memory DuckDB for this; a statement creates its released tables
(noisy values, released keys, nothing else) in a transaction and rolls it back after the outer
query, so the database holds only that statement's released tables while the query runs. The private tables, their bounded relations and
the public tables live in other connections (the engine's), which this one cannot name: a
DuckDB connection sees only its own catalog. File, network and extension access are switched
off and the configuration locked before the analyst's outer SQL runs, so `read_csv`, `ATTACH`
or an installed extension cannot reach data either. Whatever the outer query computes, and
whether it fails, is a function of released values only: post-processing, free of charge.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Sequence

import duckdb
from sqlglot import exp

from dpsql.backend.dialects import render
from dpsql.backend.engine import ENGINE_FAILED, EngineResult, engine_reason
from dpsql.errors import EngineError, UnsupportedQueryError

# Released tables are small (public domains or selected keys); the outer query gets a bounded
# share of memory and one thread (rows keep their order where SQL leaves it open).
_CONFIG: dict[str, str | bool | int | float | list[str]] = {"enable_external_access": False, "autoinstall_known_extensions": False,
           "autoload_known_extensions": False, "threads": 1, "memory_limit": "512MB"}


@dataclass(frozen=True, slots=True)
class ReleasedTable:
    """One released table: its name, column names and engine types, and its rows."""

    name: str
    columns: tuple[str, ...]
    types: tuple[str, ...]
    rows: list[tuple[Any, ...]]


class ReleasedDatabase:
    """One session's database of released rows: an in-memory DuckDB of its own (opened on first
    use, external access off, configuration locked). Each statement creates its released
    tables inside a transaction, runs the outer query and rolls back: between statements the
    database holds nothing."""

    def __init__(self) -> None:
        self._con: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            con = duckdb.connect(":memory:", config=_CONFIG)
            con.execute("SET lock_configuration = true")
            self._con = con
        return self._con

    def _run(self, tables: Sequence[ReleasedTable], query: exp.Expr) -> EngineResult:
        """Raises duckdb.Error (callers sanitize it)."""
        with self._lock:
            con = self._connection()
            con.execute("BEGIN TRANSACTION")
            try:
                for table in tables:
                    _create(con, table)
                cursor = con.execute(render(query, "duckdb"))
                names = tuple(d[0] for d in cursor.description)
                types = tuple(str(d[1]) for d in cursor.description)
                return EngineResult(names, types, cursor.fetchall())
            finally:
                con.execute("ROLLBACK")

    def run(self, tables: Sequence[ReleasedTable], query: exp.Expr) -> EngineResult:
        """The outer query over the released tables (after the charge; failures are sanitized)."""
        result = None
        try:
            result = self._run(tables, query)
        except duckdb.Error:
            pass  # raised below, outside the except block (no __context__)
        if result is None:
            raise EngineError(ENGINE_FAILED, code="DP300")
        return result

    def check(self, tables: Sequence[ReleasedTable], query: exp.Expr) -> EngineResult:
        """The outer query over EMPTY released tables of the same schema, before the charge: a
        query the engine cannot bind is refused uncharged (DP127). No data is present, so the
        engine's reason is shown."""
        empty = [ReleasedTable(t.name, t.columns, t.types, []) for t in tables]
        reason = None
        result = None
        try:
            result = self._run(empty, query)
        except duckdb.Error as failure:
            reason = engine_reason(failure)
        if result is None:
            raise UnsupportedQueryError(f"the outer query cannot be computed from the released columns: {reason}",
                                        code="DP127", hint="check the outer query's column names, types and UNION "
                                        "branches (each branch the same number of columns); nothing was charged")
        return result

    def interrupt(self) -> None:
        """Stop the outer query running now (from another thread: the server's statement_timeout)."""
        con = self._con
        if con is not None:
            con.interrupt()

    def close(self) -> None:
        with self._lock:
            if self._con is not None:
                self._con.close()
                self._con = None


def _create(con: duckdb.DuckDBPyConnection, table: ReleasedTable) -> None:
    columns = [exp.ColumnDef(this=exp.to_identifier(name, quoted=True), kind=exp.DataType.build(kind, dialect="duckdb"))
               for name, kind in zip(table.columns, table.types)]
    con.execute(render(exp.Create(this=exp.Schema(this=exp.to_table(table.name), expressions=columns), kind="TABLE"), "duckdb"))
    if table.rows:
        values = exp.Values(expressions=[exp.Tuple(expressions=[exp.Placeholder() for _ in table.columns])])
        insert = exp.Insert(this=exp.to_table(table.name), expression=values)
        con.executemany(render(insert, "duckdb"), [list(row) for row in table.rows])

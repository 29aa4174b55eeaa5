"""A database of released rows only: where the outer query of a post-processing query runs.

Each session has its own in-memory DuckDB for this; a statement registers its released tables
(noisy values, released keys, nothing else) as Arrow frames and unregisters them after the
outer query, so the connection sees only that statement's released rows while the query runs. The private tables, their bounded relations and
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
import pyarrow
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
    use, external access off, configuration locked). Each statement registers its released
    tables, runs the outer query and unregisters them: between statements the database holds
    nothing."""

    def __init__(self) -> None:
        self._con: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            con = duckdb.connect(":memory:", config=_CONFIG)
            con.execute("SET lock_configuration = true")
            self._con = con
        return self._con

    @staticmethod
    def render(tables: Sequence[ReleasedTable], query: exp.Expr) -> str:
        """The outer query's SQL text over these released tables' schemas (rows play no part, so
        a compiled query renders it once)."""
        return render(_typed(query, tables, _frames(tables)), "duckdb")

    def _run(self, tables: Sequence[ReleasedTable], sql: str) -> EngineResult:
        """Raises duckdb.Error (callers sanitize it)."""
        with self._lock:
            con = self._connection()
            frames = _frames(tables)
            try:
                for frame, table in zip(frames, tables):
                    con.register(frame, _arrow(table))
                cursor = con.execute(sql)
                names = tuple(d[0] for d in cursor.description)
                types = tuple(str(d[1]) for d in cursor.description)
                return EngineResult(names, types, cursor.fetchall())
            finally:
                for frame in frames:
                    con.unregister(frame)

    def run(self, tables: Sequence[ReleasedTable], sql: str) -> EngineResult:
        """The outer query over the released tables (after the charge; failures are sanitized)."""
        result = None
        try:
            result = self._run(tables, sql)
        except duckdb.Error:
            pass  # raised below, outside the except block (no __context__)
        if result is None:
            raise EngineError(ENGINE_FAILED, code="DP300")
        return result

    def check(self, tables: Sequence[ReleasedTable], sql: str) -> EngineResult:
        """The outer query over EMPTY released tables of the same schema, before the charge: a
        query the engine cannot bind is refused uncharged (DP127). No data is present, so the
        engine's reason is shown."""
        empty = [ReleasedTable(t.name, t.columns, t.types, []) for t in tables]
        reason = None
        result = None
        try:
            result = self._run(empty, sql)
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


def _frames(tables: Sequence[ReleasedTable]) -> list[str]:
    return [f"__dpsql_frame_{i}" for i in range(len(tables))]


def _arrow(table: ReleasedTable) -> pyarrow.Table:
    """The released rows as an Arrow table (typed by inference; text where inference fails, the
    declared type then coming from the CAST in `_typed`)."""
    columns = {}
    for i, name in enumerate(table.columns):
        values = [row[i] for row in table.rows]
        try:
            columns[name] = pyarrow.array(values)
        except (pyarrow.ArrowException, OverflowError, TypeError, ValueError):
            columns[name] = pyarrow.array([None if v is None else str(v) for v in values], pyarrow.string())
    return pyarrow.table(columns) if columns else pyarrow.table({})


def _typed(query: exp.Expr, tables: Sequence[ReleasedTable], frames: list[str]) -> exp.Expr:
    """The outer query with each released table defined as a CTE over its registered frame, every
    column cast to the type it was released with."""
    ctes = [exp.CTE(this=exp.select(*[exp.alias_(exp.cast(exp.column(c, quoted=True), t), exp.to_identifier(c, quoted=True))
                                      for c, t in zip(table.columns, table.types)]).from_(frame),
                    alias=exp.TableAlias(this=exp.to_identifier(table.name)))
            for table, frame in zip(tables, frames)]
    typed = query.copy()
    with_ = typed.args.get("with_")
    typed.set("with_", exp.With(expressions=[*ctes, *(with_.expressions if with_ is not None else [])]))
    return typed

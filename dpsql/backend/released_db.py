"""A database of released rows only: where the outer query of a post-processing query runs.

Each session has its own in-memory DuckDB for this; a statement binds its released tables
(noisy values, released keys, nothing else) as list parameters of the outer query itself
(backend/released_lists.py), so the connection holds no table and sees only that statement's
released rows while the query runs. The private tables, their bounded relations and
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
from dpsql.backend.released_lists import list_values, unnest_select
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
    use, external access off, configuration locked). Each statement runs the outer query with its
    released tables as parameters: the database never holds a table."""

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
        return render(_typed(query, tables), "duckdb")

    def _run(self, tables: Sequence[ReleasedTable], sql: str) -> EngineResult:
        """Raises duckdb.Error (callers sanitize it)."""
        params = {p: list_values([row[j] for row in table.rows])
                  for i, table in enumerate(tables) for j, p in enumerate(_parameters(i, table))}
        with self._lock:
            cursor = self._connection().execute(sql, params)
            names = tuple(d[0] for d in cursor.description)
            types = tuple(str(d[1]) for d in cursor.description)
            return EngineResult(names, types, cursor.fetchall())

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


def _parameters(i: int, table: ReleasedTable) -> list[str]:
    """The list parameters holding released table i's columns."""
    return [f"__dpsql_frame_{i}_{j}" for j in range(len(table.columns))]


def _typed(query: exp.Expr, tables: Sequence[ReleasedTable]) -> exp.Expr:
    """The outer query with each released table defined as a CTE over its columns' list
    parameters, every column cast to the type it was released with."""
    ctes = [exp.CTE(this=exp.select(*[exp.alias_(exp.cast(exp.column(c, quoted=True), t), exp.to_identifier(c, quoted=True))
                                      for c, t in zip(table.columns, table.types)])
                    .from_(unnest_select(table.columns, _parameters(i, table)).subquery(f"__dpsql_frame_{i}")),
                    alias=exp.TableAlias(this=exp.to_identifier(table.name)))
            for i, table in enumerate(tables)]
    typed = query.copy()
    with_ = typed.args.get("with_")
    typed.set("with_", exp.With(expressions=[*ctes, *(with_.expressions if with_ is not None else [])]))
    return typed

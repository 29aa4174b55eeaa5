"""A database of released rows only: where the outer query of a post-processing query runs.

Each statement gets a fresh in-memory DuckDB that holds the released tables of that statement
(noisy values, released keys, nothing else). The private tables, their bounded relations and
the public tables live in other connections (the engine's), which this one cannot name: a
DuckDB connection sees only its own catalog. File, network and extension access are switched
off and the configuration locked before the analyst's outer SQL runs, so `read_csv`, `ATTACH`
or an installed extension cannot reach data either. Whatever the outer query computes, and
whether it fails, is a function of released values only: post-processing, free of charge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import duckdb
import pandas
from sqlglot import exp

from dpsql.backend.dialects import render
from dpsql.backend.engine import ENGINE_FAILED, EngineResult, engine_reason
from dpsql.errors import EngineError, UnsupportedQueryError

# Released tables are small (public domains or selected keys); the outer query gets a bounded
# share of memory and one thread (rows keep their order where SQL leaves it open).
_CONFIG: dict[str, str | bool | int | float | list[str]] = {"enable_external_access": False, "autoinstall_known_extensions": False,
           "autoload_known_extensions": False, "threads": 1, "memory_limit": "512MB"}
_FRAME = "__dpsql_released_frame"


@dataclass(frozen=True, slots=True)
class ReleasedTable:
    """One released table: its name, column names and engine types, and its rows."""

    name: str
    columns: tuple[str, ...]
    types: tuple[str, ...]
    rows: list[tuple[Any, ...]]


def _connect(tables: Sequence[ReleasedTable]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:", config=_CONFIG)
    for table in tables:
        frame = pandas.DataFrame({f"c{i}": pandas.Series([row[i] for row in table.rows], dtype=object)
                                  for i in range(len(table.columns))})
        typed = exp.select(*[exp.alias_(exp.cast(exp.column(f"c{i}"), t), exp.to_identifier(name, quoted=True))
                             for i, (name, t) in enumerate(zip(table.columns, table.types))]).from_(_FRAME)
        create = exp.Create(this=exp.to_table(table.name), kind="TABLE", expression=typed)
        con.register(_FRAME, frame)
        try:
            con.execute(render(create, "duckdb"))
        finally:
            con.unregister(_FRAME)
    con.execute("SET lock_configuration = true")
    return con


def run_released(tables: Sequence[ReleasedTable], query: exp.Expr) -> EngineResult:
    """The outer query over the released tables (after the charge; failures are sanitized)."""
    result = None
    try:
        con = _connect(tables)
        try:
            cursor = con.execute(render(query, "duckdb"))
            result = EngineResult(tuple(d[0] for d in cursor.description), tuple(str(d[1]) for d in cursor.description),
                                  cursor.fetchall())
        finally:
            con.close()
    except duckdb.Error:
        pass  # raised below, outside the except block (no __context__)
    if result is None:
        raise EngineError(ENGINE_FAILED, code="DP300")
    return result


def check_released(tables: Sequence[ReleasedTable], query: exp.Expr) -> EngineResult:
    """The outer query over EMPTY released tables of the same schema, before the charge: a query
    the engine cannot bind is refused uncharged (DP127). No data is present, so the engine's
    reason is shown."""
    empty = [ReleasedTable(t.name, t.columns, t.types, []) for t in tables]
    reason = None
    result = None
    try:
        con = _connect(empty)
        try:
            cursor = con.execute(render(query, "duckdb"))
            result = EngineResult(tuple(d[0] for d in cursor.description), tuple(str(d[1]) for d in cursor.description), [])
        finally:
            con.close()
    except duckdb.Error as failure:
        reason = engine_reason(failure)
    if result is None:
        raise UnsupportedQueryError(f"the outer query cannot be computed from the released columns: {reason}", code="DP127",
                                    hint="check the outer query's column names, types and UNION branches (each branch "
                                    "the same number of columns); nothing was charged")
    return result

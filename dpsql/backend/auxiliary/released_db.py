"""A database of released rows only: where every released value is post-processed.

Two kinds of statements run here: a query's own post-processing (its outputs, HAVING, ORDER BY
and LIMIT over its released aggregates: `evaluate`, SQL from backend/sql/output_sql.py) and the outer
query of a post-processing query over several releases (`check`, then `run`). The outer query
may also join PUBLIC tables' rows, read exactly beforehand (execution/public_inputs.py: public
rows are free); they come in as tables like the released ones. Private rows never do.

One in-memory DuckDB per process holds them, and each session reads it through its own DuckDB
connection (a cursor). A statement binds its released tables (noisy values, released keys,
nothing else) as list parameters of the outer query itself (backend/sql/released_lists.py), so the
database holds no table and a statement sees only its own released rows, never another
session's. The private tables, their bounded relations and the public tables live in other
databases (the engine's), which this one cannot name. File, network and extension access are
switched off and the configuration locked before any analyst SQL runs, so `read_csv`, `ATTACH`
or an installed extension cannot reach data either. Whatever the outer query computes, and
whether it fails, is a function of released values only: post-processing, free of charge.

Memory. One database for the process means one memory limit for every session's statements
(`MEMORY_LIMIT`): a database per session cost about 4 MB each even idle, and its own limit
(100 sessions x 512 MB). What DuckDB hands back is capped too: the outer query returns at most
`MAX_ROWS` rows and `MAX_BYTES` of values (a LIMIT one above the cap is added to its SQL, and the
rows are fetched in small batches, counted as they come), else it is refused (DP129) before
more is fetched. The cap is the same for every dataset; whether it is reached depends on the
released rows only (post-processing), and the refusal's text on nothing else. A query's own
post-processing is not capped: it returns at most the released rows it reads, as the query alone
would.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
from sqlglot import exp

from dpsql.backend.engines.engine import ENGINE_FAILED, EngineResult, engine_reason
from dpsql.backend.sql.engine_dialects import render
from dpsql.backend.sql.released_lists import list_values, unnest_select
from dpsql.errors import EngineError, UnsupportedQueryError

# Released tables are small (public domains or selected keys); every session's outer queries
# share one bounded memory and run on one thread each (rows keep their order where SQL leaves it
# open; each connection runs its statement in its own calling thread).
MEMORY_LIMIT = "512MB"
_CONFIG: dict[str, str | bool | int | float | list[str]] = {"enable_external_access": False, "autoinstall_known_extensions": False,
           "autoload_known_extensions": False, "threads": 1, "memory_limit": MEMORY_LIMIT}
# What one outer query may hand back to the process: rows, and bytes of values (strings by their
# length, other values at a fixed width), fetched in batches of _BATCH rows.
MAX_ROWS = 100_000
MAX_BYTES = 64 * 1024 * 1024
_BATCH = 64
_VALUE_BYTES = 16
_ROW_BYTES = 64
_PARSED_MAX = 64  # statement texts remembered per session (parsed once)

_DATABASE: duckdb.DuckDBPyConnection | None = None
_DATABASE_LOCK = threading.Lock()


def _database() -> duckdb.DuckDBPyConnection:
    """The process's database of released rows (opened on first use, configuration locked)."""
    global _DATABASE
    with _DATABASE_LOCK:
        if _DATABASE is None:
            database = duckdb.connect(":memory:", config=_CONFIG)
            database.execute("SET lock_configuration = true")
            _DATABASE = database
        return _DATABASE


@dataclass(frozen=True, slots=True)
class ReleasedTable:
    """One released table: its name, column names and engine types, and its rows."""

    name: str
    columns: tuple[str, ...]
    types: tuple[str, ...]
    rows: list[tuple[Any, ...]]


class TooLarge(Exception):
    """The outer query's result is over MAX_ROWS or MAX_BYTES."""


class ReleasedDatabase:
    """One session's connection to the process's database of released rows (opened on first
    use). Each statement runs the outer query with its released tables as parameters: the
    database never holds a table."""

    def __init__(self) -> None:
        self._con: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()
        self._statements: dict[str, Any] = {}

    def _parsed(self, con: duckdb.DuckDBPyConnection, sql: str) -> Any:
        """The statement parsed once per text (under the lock): a query's typing run over empty
        tables and its run over the released rows share the text, and DuckDB's parser is about half
        of a small statement's time."""
        statement = self._statements.get(sql)
        if statement is None:
            parsed = con.extract_statements(sql)
            if len(parsed) != 1:
                return sql
            if len(self._statements) >= _PARSED_MAX:
                self._statements.clear()
            statement = self._statements[sql] = parsed[0]
        return statement

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            self._con = _database().cursor()
        return self._con

    @staticmethod
    def render(tables: Sequence[ReleasedTable], query: exp.Expr) -> str:
        """The outer query's SQL text over these released tables' schemas (rows play no part, so
        a compiled query renders it once), with its LIMIT at most one above MAX_ROWS."""
        return render(_capped(_typed(query, tables)), "duckdb", fresh=True)

    @staticmethod
    def render_own(table: ReleasedTable, query: exp.Expr) -> str:
        """A query's own post-processing SQL over its released aggregates' schema (rendered once):
        no cap, it returns at most the released rows it reads (no join, no table function)."""
        return render(_typed(query, [table]), "duckdb", fresh=True)

    def _run(self, tables: Sequence[ReleasedTable], sql: str, capped: bool = True) -> EngineResult:
        """Raises duckdb.Error (callers sanitize it)."""
        params = {p: list_values([row[j] for row in table.rows])
                  for i, table in enumerate(tables) for j, p in enumerate(_parameters(i, table))}
        with self._lock:
            con = self._connection()
            try:
                cursor = con.execute(self._parsed(con, sql), params)
                names = tuple(d[0] for d in cursor.description)
                types = tuple(str(d[1]) for d in cursor.description)
                return EngineResult(names, types, _fetch(cursor) if capped else cursor.fetchall())
            finally:
                con.abort()  # a result refused part way (TooLarge) is dropped unread

    def run(self, tables: Sequence[ReleasedTable], sql: str) -> EngineResult:
        """The outer query over the released tables (after the charge; failures are sanitized)."""
        result = None
        too_large = False
        try:
            result = self._run(tables, sql)
        except duckdb.Error:
            pass  # raised below, outside the except block (no __context__)
        except TooLarge:
            too_large = True
        if too_large:
            raise UnsupportedQueryError(
                f"the outer query returns more than {MAX_ROWS:,} rows or {MAX_BYTES // 2**20} MiB of values; the releases "
                "were charged", code="DP129", hint=f"add LIMIT {MAX_ROWS:,} or less, filter, or aggregate in the outer "
                "query; an aggregated query on its own (without an outer query) returns all its released rows")
        if result is None:
            raise EngineError(ENGINE_FAILED, code="DP300")
        return result

    def evaluate(self, table: ReleasedTable, sql: str) -> EngineResult:
        """A query's own post-processing over its released aggregates (after the charge, or over an
        empty table before it to type its outputs; SQL from `render_own`), uncapped: it returns at
        most the rows it was given, which an aggregated query releases in full. Failures are
        sanitized (DP300)."""
        result = None
        try:
            result = self._run([table], sql, capped=False)
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
        """Close this session's connection (the process's database stays open for the others)."""
        with self._lock:
            if self._con is not None:
                self._con.close()
                self._con = None


def _fetch(cursor: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    """The result's rows, in batches, refused (TooLarge) as soon as they pass MAX_ROWS or MAX_BYTES."""
    rows: list[tuple[Any, ...]] = []
    size = 0
    while True:
        batch = cursor.fetchmany(_BATCH)
        if not batch:
            return rows
        rows.extend(batch)
        size += value_bytes(batch)
        if len(rows) > MAX_ROWS or size > MAX_BYTES:
            raise TooLarge


def value_bytes(rows: Sequence[tuple[Any, ...]]) -> int:
    """What rows weigh against MAX_BYTES: strings by their length, other values at a fixed width."""
    return sum(_ROW_BYTES + sum(len(v) if isinstance(v, (str, bytes)) else _VALUE_BYTES for v in row) for row in rows)


def _capped(typed: exp.Expr) -> exp.Expr:
    """The query with LIMIT at most MAX_ROWS + 1: DuckDB stops there (a smaller LIMIT is kept).
    `typed` is `_typed`'s fresh tree, so the limit is set in place."""
    limit = typed.args.get("limit")
    value = limit.args.get("expression") if isinstance(limit, exp.Limit) else None
    if isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit() and int(value.this) <= MAX_ROWS:
        return typed
    typed.set("limit", exp.Limit(expression=exp.Literal.number(MAX_ROWS + 1)))
    return typed


def _parameters(i: int, table: ReleasedTable) -> list[str]:
    """The list parameters holding released table i's columns."""
    return [f"__dpsql_frame_{i}_{j}" for j in range(len(table.columns))]


def _typed(query: exp.Expr, tables: Sequence[ReleasedTable]) -> exp.Expr:
    """The outer query with each released table defined as a CTE over its columns' list
    parameters, every column cast to the type it was released with."""
    # Fresh nodes throughout, built directly (the builders' defensive copies and type checks cost
    # more than the tree); a type is parsed once per name and attached as a copy.
    ctes = [exp.CTE(this=unnest_select(table.columns, _parameters(i, table), [_data_type(t).copy() for t in table.types]),
                    alias=exp.TableAlias(this=exp.to_identifier(table.name)))
            for i, table in enumerate(tables)]
    typed = query.copy()
    with_ = typed.args.get("with_")
    typed.set("with_", exp.With(expressions=[*ctes, *(with_.expressions if with_ is not None else [])]))
    return typed


@functools.lru_cache(maxsize=256)
def _data_type(name: str) -> exp.DataType:
    """A released column's type, parsed once (callers attach copies, never this one)."""
    return exp.DataType.build(name)

"""The DuckDB backend (the default engine). The privacy-relevant logic is in backend/engine.py;
the local DuckDB that every engine uses for released values is in backend/local_duckdb.py.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Mapping

import duckdb
import pandas
import pyarrow
from sqlglot import exp

from dpsql.backend.dialects import render as render_for
from dpsql.backend.engine import (
    ENGINE_FAILED,
    BackendFailure,
    Engine,
    EngineResult,
    RawRows,
    bounded_name,
    empty_name,
    key_type,
    row_type,
    source_name,
)
from dpsql.backend.local_duckdb import LocalDuckDB
from dpsql.backend.robust_sql import DUCKDB_CAPABILITIES
from dpsql.catalog.model import Policy, Table
from dpsql.errors import CatalogError

DIALECT = "duckdb"
_CACHE_SIZE = 256  # statements remembered per session (parsed, or needing Arrow)
_DB_ALIAS = "__dpsql_db"
__all__ = ["DuckDBBackend", "DuckDBEngine", "EngineResult", "LocalDuckDB", "bounded_name", "empty_name", "key_type",
           "render", "source_name", "ENGINE_FAILED"]


def render(expression: exp.Expr) -> str:
    """DuckDB SQL text for an expression (EXPLAIN shows the same text that runs)."""
    return render_for(expression, DIALECT)


def _first_line(err: Exception) -> str:
    return str(err).split("\n", 1)[0]


class DuckDBBackend:
    """One private in-memory DuckDB connection per session; the data stays inside it."""

    dialect = DIALECT
    capabilities = DUCKDB_CAPABILITIES

    def __init__(self, policy: Policy, database: str | Path | None = None,
                 frames: Mapping[str, pandas.DataFrame] | None = None) -> None:
        self._frames = {name.lower(): frame for name, frame in (frames or {}).items()}
        self.connection = duckdb.connect(":memory:")
        self.lock = threading.RLock()
        self._arrow_only: set[str] = set()  # statements whose result types need Arrow (see rows)
        self._statements: dict[str, Any] = {}  # parsed statements by text (see _parsed)
        # DuckDB 2.0 rewrites `row_number() OVER (PARTITION BY unit ...) <= k` into a per-unit
        # top-N aggregate that is 1.7-2.6x slower for contribution bounding (bench/).
        self.connection.execute("SET disabled_optimizers = 'top_n_window_elimination'")
        # The policy's resource limits ([engine]): one session cannot take the whole machine.
        # temp_directory: larger-than-memory sorts, joins and aggregates spill there instead of
        # failing at memory_limit (a 100M-row table bounded under 4GB).
        for setting, value in (("memory_limit", policy.engine.memory_limit), ("threads", policy.engine.threads),
                               ("temp_directory", policy.engine.temp_directory)):
            if value is not None:
                self.connection.execute(render(exp.Set(expressions=[exp.SetItem(this=exp.EQ(
                    this=exp.var(setting), expression=exp.Literal.string(str(value)) if isinstance(value, str) else exp.Literal.number(value)))])))
        # Under a policy memory_limit, a per-person count array of up to 2^24 entries per thread
        # could exceed it where a hash table spills: the perfect hash threshold stays as it is.
        self._materialize = {k: v for k, v in _MATERIALIZE_SETTINGS.items()
                             if not (k == "perfect_ht_threshold" and policy.engine.memory_limit is not None)}
        current = exp.select(*[exp.func("current_setting", exp.Literal.string(s)) for s in self._materialize])
        self._defaults = dict(zip(self._materialize, self.connection.execute(render(current)).fetchall()[0]))
        self._database = Path(database).expanduser().resolve() if database else None
        if self._database is not None:
            if not self._database.exists():
                raise CatalogError(f"database file not found: {self._database}", code="DP002")
            attach = exp.Attach(
                this=exp.alias_(exp.Literal.string(str(self._database)), _DB_ALIAS),
                expressions=[exp.AttachOption(this=exp.var("READ_ONLY"))],
            )
            self._setup(render(attach))
        for name in self._frames:
            if policy.table(name) is None:
                raise CatalogError(f"the DataFrame '{name}' is not a table of the policy", code="DP002")

    def _setup(self, sql: str) -> None:
        kind = None
        try:
            self.connection.execute(sql)
        except duckdb.Error as err:
            kind = type(err).__name__
        if kind is not None:  # outside the except block: the engine's error is not kept as __context__
            raise CatalogError(f"could not open the data source ({kind})", code="DP002")

    def register(self, table: Table, raw_name: str) -> None:
        """Frames are registered; files and attached tables are read through the typed view."""
        if table.name in self._frames:
            self.connection.register(raw_name, self._frames[table.name])
            return
        view = exp.Create(this=exp.to_identifier(raw_name, quoted=True), kind="VIEW",
                          expression=exp.select("*").from_(self._source_expr(table)),
                          properties=exp.Properties(expressions=[exp.TemporaryProperty()]))
        self._setup(render(view))

    def _source_expr(self, table: Table) -> exp.Expr:
        if table.source is not None:
            reader = {"parquet": "read_parquet", "csv": "read_csv"}.get(table.source_format or "")
            if reader is None:
                raise CatalogError(f"table '{table.name}': source must be a .parquet or .csv file", code="DP002")
            if table.source_is_local and not Path(table.source).exists():
                raise CatalogError(f"table '{table.name}': source file not found: {table.source}", code="DP002")
            return exp.func(reader, exp.Literal.string(str(table.source)))
        if self._database is not None:
            return exp.table_(table.engine_table or table.name, db="main", catalog=_DB_ALIAS, quoted=True) \
                if not table.engine_table or "." not in table.engine_table \
                else exp.to_table(table.engine_table, catalog=_DB_ALIAS)
        raise CatalogError(
            f"table '{table.name}' has no data: give connect(database=...), tables={{...}}, or a source in the policy",
            code="DP002",
        )

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> pyarrow.Table:
        """Run SQL; the result as Arrow. Engine errors become BackendFailure (first line only)."""
        message = None
        with self.lock:
            try:
                relation = self.connection.sql(sql, params=dict(params)) if params else self.connection.sql(sql)
                return relation.to_arrow_table() if relation is not None else pyarrow.table({})
            except duckdb.Error as err:
                message = _first_line(err)
        raise BackendFailure(message)

    def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> RawRows | pyarrow.Table:
        """Run SQL; plain rows (DB-API fetchall) when every column's type is one whose rows
        normalise exactly like its Arrow form (engine.row_type), else Arrow. The Arrow conversion
        costs about 0.3 ms a statement, as much as a small aggregate itself; a statement whose
        types need Arrow is remembered and runs through Arrow from then on."""
        if sql in self._arrow_only:
            return self.execute(sql, params)
        message = None
        with self.lock:
            try:
                statement = self._parsed(sql)
                result = self.connection.execute(statement, dict(params)) if params else self.connection.execute(statement)
                description = result.description
                if description is None:  # not a query: nothing to fetch
                    return RawRows((), (), [])
                types = tuple(str(column[1]) for column in description)
                if all(row_type(t) is not None for t in types):
                    return RawRows(tuple(column[0] for column in description), types, result.fetchall())
                result.abort()
            except duckdb.Error as err:
                message = _first_line(err)
        if message is not None:
            raise BackendFailure(message)
        if len(self._arrow_only) >= _CACHE_SIZE:
            self._arrow_only.clear()
        self._arrow_only.add(sql)
        return self.execute(sql, params)

    def _parsed(self, sql: str) -> Any:
        """The statement parsed once per text (call under the lock): a repeated plan skips DuckDB's
        parser (it is still bound and planned on every run, against the relations as they are)."""
        statement = self._statements.get(sql)
        if statement is None:
            parsed = self.connection.extract_statements(sql)
            if len(parsed) != 1:
                return sql
            if len(self._statements) >= _CACHE_SIZE:
                self._statements.clear()
            statement = self._statements[sql] = parsed[0]
        return statement

    def interrupt(self) -> None:
        """Interrupt the running statement (DuckDB allows this from another thread)."""
        self.connection.interrupt()

    def materialize(self, name: str, select: exp.Expr, params: Mapping[str, Any] | None = None, *, view: bool = False) -> None:
        """CREATE TEMPORARY TABLE (or VIEW) name AS select."""
        create = _temp_table(name, select)
        if view:
            create.set("kind", "VIEW")
        message = None
        with self.lock:
            try:
                if not view:
                    self._set(self._materialize)
                try:
                    self.connection.execute(render(create), dict(params or {}))
                finally:
                    if not view:
                        self._set(self._defaults)
                return
            except duckdb.Error as err:
                message = _first_line(err)
        raise BackendFailure(message)

    def _set(self, settings: Mapping[str, Any]) -> None:
        """SET connection settings (under the lock)."""
        for setting, value in settings.items():
            item = exp.EQ(this=exp.var(setting), expression=exp.convert(value))
            self.connection.execute(render(exp.Set(expressions=[exp.SetItem(this=item)])))

    def schema(self, name: str) -> pyarrow.Schema:
        """Column names and Arrow types of a relation (LIMIT 0: no data read)."""
        return self.execute(render(exp.select("*").from_(exp.to_identifier(name, quoted=True)).limit(0))).schema

    def refusal(self, tree: exp.Expr) -> str | None:
        """None: every predicate runs inside TRY, so no DuckDB error can depend on data."""
        return None

    def close(self) -> None:
        """Close the connection (temporary relations vanish with it)."""
        with self.lock:
            self.connection.close()

# Settings for building the session's relations (bounded, keyed), restored after each one:
# - preserve_insertion_order = false: the rows of a relation may be stored in any order (every
#   statement over them aggregates, and order-sensitive steps order by values explicitly), so
#   DuckDB inserts in parallel without re-ordering: 10-20% of the bounding pass at 10M rows.
# - perfect_ht_threshold = 24: GROUP BY a dense integer unit (ids spanning < 2^24, from the column
#   statistics) counts rows per person in an array instead of a hash table: the count per person
#   of bounding took 4x less at 10M rows. Connection-wide it would also size warm queries' tables.
# Neither changes what a statement computes, only how, so the relations and answers are the same.
_MATERIALIZE_SETTINGS: Mapping[str, Any] = {"preserve_insertion_order": False, "perfect_ht_threshold": 24}


def _temp_table(name: str, select: exp.Expr) -> exp.Create:
    """CREATE OR REPLACE TEMPORARY TABLE name AS select (the session's private relations; OR
    REPLACE: a build interrupted after some steps is rebuilt from the start by the next query)."""
    return exp.Create(
        this=exp.to_identifier(name, quoted=True),
        kind="TABLE",
        replace=True,
        expression=select,
        properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
    )


class DuckDBEngine(Engine):
    """The DuckDB engine: Engine over a DuckDBBackend, sharing its connection for released values."""

    def __init__(self, policy: Policy, database: str | Path | None = None,
                 frames: Mapping[str, pandas.DataFrame] | None = None) -> None:
        backend = DuckDBBackend(policy, database, frames)
        super().__init__(policy, backend, LocalDuckDB(backend.connection, backend.lock))

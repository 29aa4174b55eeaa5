"""The DuckDB backend (the default engine). The privacy-relevant logic is in backend/engines/engine.py;
the local DuckDB that every engine uses for released values is in backend/engines/local_duckdb.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
from sqlglot import exp

from dpsql.backend.engines.dry_duckdb import DryDatabase, open_database
from dpsql.backend.engines.engine import (
    ENGINE_FAILED,
    BackendFailure,
    Engine,
    EngineResult,
    RawRows,
    bounded_name,
    empty_keyed_name,
    empty_name,
    keyed_name,
    reference_relations,
    row_type,
    source_name,
)
from dpsql.backend.engines.local_duckdb import LocalDuckDB
from dpsql.backend.engines.shared_duckdb import (
    DB_ALIAS,
    MATERIALIZE_SETTINGS,
    SharedDuckDB,
    SharedScope,
    attach_statement,
    configure,
    current_settings,
)
from dpsql.backend.sql.engine_dialects import SESSION_PREFIX
from dpsql.backend.sql.engine_dialects import render as render_for
from dpsql.backend.sql.plan_sql import key_type
from dpsql.backend.sql.robust_sql import DUCKDB_CAPABILITIES
from dpsql.catalog.policy import Policy, Table
from dpsql.errors import CatalogError, InterfaceError
from dpsql.ir.join import JoinedTable

if TYPE_CHECKING:  # pyarrow on the first result that needs Arrow; pandas only for DataFrames given to connect
    import pandas
    import pyarrow

DIALECT = "duckdb"
_CACHE_SIZE = 256  # statements remembered per session (parsed, or needing Arrow)
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
                 frames: Mapping[str, pandas.DataFrame] | None = None, shared: SharedScope | None = None) -> None:
        self._frames = {name.lower(): frame for name, frame in (frames or {}).items()}
        resolved = Path(database).expanduser().resolve() if database else None
        if shared is not None and (self._frames or resolved != shared.database):
            # A shared relation is built from whichever session asks first: every session must read the same data.
            raise InterfaceError("a shared DuckDB database reads the policy's sources and its own database file only")
        # Its own database, or its own connection to the process's shared one (backend/engines/shared_duckdb.py).
        self.connection = duckdb.connect(":memory:") if shared is None else shared.connection()
        self.shared = shared
        self.lock = threading.RLock()
        self._arrow_only: set[str] = set()  # statements whose result types need Arrow (see rows)
        self._statements: dict[str, Any] = {}  # parsed statements by text (see _parsed)
        if shared is None:
            configure(self.connection, policy)
        # Under a policy memory_limit, a per-person count array of up to 2^24 entries per thread
        # could exceed it where a hash table spills: the perfect hash threshold stays as it is.
        self._materialize = {k: v for k, v in MATERIALIZE_SETTINGS.items()
                             if not (k == "perfect_ht_threshold" and policy.engine.memory_limit is not None)}
        # The settings are database-wide: sessions of a shared database restore the values it had
        # when it opened, never another session's build settings read mid-build.
        self._defaults = current_settings(self.connection, self._materialize) if shared is None else \
            {k: shared.defaults[k] for k in self._materialize}
        self._database = resolved
        if self._database is not None and shared is None:
            if not self._database.exists():
                raise CatalogError(f"database file not found: {self._database}", code="DP002")
            self._setup(attach_statement(self._database))
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
            return exp.table_(table.engine_table or table.name, db="main", catalog=DB_ALIAS, quoted=True) \
                if not table.engine_table or "." not in table.engine_table \
                else exp.to_table(table.engine_table, catalog=DB_ALIAS)
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
                if relation is not None:
                    return relation.to_arrow_table()
            except duckdb.Error as err:
                message = _first_line(err)
        if message is not None:
            raise BackendFailure(message)
        import pyarrow

        return pyarrow.table({})

    def check(self, sql: str, params: Mapping[str, Any] | None = None) -> None:
        """Run SQL and drop its result (dry runs on empty tables, constant probes, bounding
        steps): no Arrow conversion, so a process that never needs Arrow never imports pyarrow."""
        message = None
        with self.lock:
            try:
                result = self.connection.execute(sql, dict(params)) if params else self.connection.execute(sql)
                if result.description is not None:
                    result.fetchall()
            except duckdb.Error as err:
                message = _first_line(err)
        if message is not None:
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

    def materialize(self, name: str, select: exp.Expr, params: Mapping[str, Any] | None = None, *, view: bool = False,
                    shared: bool = False) -> None:
        """CREATE TEMPORARY TABLE (or VIEW) name AS select; `shared`: a table of the shared database
        every session reads (backend/engines/shared_duckdb.py), not a temporary one."""
        create = _temp_table(name, select)
        if shared:
            assert self.shared is not None and not view
            create.set("properties", None)  # a table of the database, in the schema its relation belongs to
            create.set("this", exp.Table(this=exp.to_identifier(name, quoted=True),
                                         db=exp.to_identifier(self.shared.target(), quoted=True)))
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
                 frames: Mapping[str, pandas.DataFrame] | None = None, shared: SharedDuckDB | SharedScope | None = None) -> None:
        # A session reads the shared database as one analyst (SharedDuckDB.scope); given the
        # database itself, as nobody's (no query-made relation is then shared with anyone).
        scope = shared.scope(None) if isinstance(shared, SharedDuckDB) else shared
        backend = DuckDBBackend(policy, database, frames, scope)
        super().__init__(policy, backend, LocalDuckDB(backend.connection, backend.lock), scope)
        self._dry = DryDatabase()  # dry runs' empty tables, in a database without data (backend/engines/dry_duckdb.py)

    def _dry_text(self, table: Table, select: exp.Expr, keys: tuple[str, ...],
                  text: str | None) -> tuple[str | None, Callable[[str, dict[str, Any]], None]]:
        """The statement's own text (the one that runs after the charge), run in the dry-run
        database over empty tables named as the session relations it reads. A statement reading
        anything else (a join's relation, a public table, a qualified name) takes the general path:
        rendered again over stand-ins on the session's connection, or refused (DP300)."""
        read = _session_relations(select)
        plain = {bounded_name(table): empty_name(table), empty_name(table): empty_name(table),
                 empty_keyed_name(table): empty_keyed_name(table)}
        if keys:
            plain[keyed_name(table, keys)] = empty_keyed_name(table)
        if isinstance(table, JoinedTable) or read is None or not read <= plain.keys():
            return super()._dry_text(table, select, keys, text)
        missing = sorted(name for name in read if not self._dry.has(name))
        if missing:  # built from the policy once per name: a variant of the table (narrowed bounds) has its schema
            stand_ins = reference_relations(table)
            self._dry.ensure({name: stand_ins[plain[name]] for name in missing})
        return (text if text is not None else self.render(select)), self._dry_check

    def prepare_dry_runs(self) -> None:
        try:
            open_database()
        except duckdb.Error:
            pass  # the first dry run opens it again, and reports its own error

    def _dry_check(self, sql: str, params: dict[str, Any]) -> None:
        message = None
        try:
            self._dry.check(sql, params)
        except duckdb.Error as err:
            message = _first_line(err)
        if message is not None:  # outside the except block: no __context__
            raise BackendFailure(message)

    def close(self) -> None:
        with self._lock:
            self._dry.close()
        super().close()


def _session_relations(select: exp.Expr) -> set[str] | None:
    """The session relations (`__dpsql_*`) a statement reads, or None if it reads a qualified
    name: the relation names render(..., relations=...) would map (FROM, JOIN, table names).
    Other unqualified names there are the statement's own CTEs."""
    read = set()
    for node in select.find_all(exp.Identifier):
        parent = node.parent
        if node.arg_key != "this" or not isinstance(parent, (exp.From, exp.Join, exp.Table)):
            continue
        if isinstance(parent, exp.Table) and (parent.args.get("db") or parent.args.get("catalog")):
            return None
        if node.name.startswith(SESSION_PREFIX):
            read.add(node.name)
    return read

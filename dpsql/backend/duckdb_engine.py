"""The DuckDB engine: registers the policy's tables, caches each table's bounded relation per
session, runs rendered plans, and maps every engine error to a sanitized dpsql error.

Why caching the bounded relation keeps privacy intact: the bounded relation keeps, for each
person, at most max_rows of their rows, chosen by a keyed hash of the row and a secret session
seed. For any fixed seed this is a stable transformation: removing one person from the data
removes at most max_rows rows from the relation and changes no other person's rows. Every
answer is a DP mechanism applied to that relation with the sensitivities the planner derives
from max_rows, so the answers of a session compose as DP answers on it for each fixed seed, and
mixing over the secret seed preserves the guarantee. Reusing the relation across queries only
makes their bounding choices agree; it never raises any query's sensitivity.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import duckdb
import numpy
import pandas
from sqlglot import exp

from dpsql.backend.sqlgen import TYPE_NAMES, bounded_select, source_select
from dpsql.catalog.model import Policy, Table
from dpsql.errors import CatalogError, EngineError, UnsupportedQueryError

DIALECT = "duckdb"
_DB_ALIAS = "__dpsql_db"
ENGINE_FAILED = (
    "the engine failed while computing this answer; the message is withheld because engine "
    "messages can quote private values, and the charge stands"
)


@dataclass(frozen=True, slots=True)
class EngineResult:
    """Rows from the engine with their column names and DuckDB type names."""

    names: tuple[str, ...]
    types: tuple[str, ...]
    rows: list[tuple[Any, ...]]


def render(expression: exp.Expr) -> str:
    """Engine SQL text for an expression (EXPLAIN shows the same text that runs)."""
    return expression.sql(dialect=DIALECT)


def source_name(table: Table) -> str:
    """The view that exposes a policy table's declared columns with their declared types."""
    return f"__dpsql_source_{table.name}"


def empty_name(table: Table) -> str:
    """An empty table with the bounded relation's schema, for dry runs before the charge."""
    return f"__dpsql_empty_{table.name}"


def bounded_name(table: Table) -> str:
    """The session's cached bounded relation of a private table."""
    return f"__dpsql_bounded_{table.name}"


class DuckDBEngine:
    """One private DuckDB connection per session; the data stays inside it."""

    dialect = DIALECT

    def __init__(self, policy: Policy, database: str | Path | None = None, frames: Mapping[str, pandas.DataFrame] | None = None) -> None:
        self._policy = policy
        self._lock = threading.RLock()
        self._frames = {name.lower(): frame for name, frame in (frames or {}).items()}
        self._con = duckdb.connect(":memory:")
        # DuckDB 2.0 rewrites `QUALIFY row_number() OVER (PARTITION BY unit ...) <= k` into a
        # per-unit top-N aggregate that is 1.7-2.6x slower for contribution bounding (bench/).
        self._con.execute("SET disabled_optimizers = 'top_n_window_elimination'")
        self._sources: set[str] = set()
        self._bounded: set[str] = set()
        self._database = Path(database).expanduser().resolve() if database else None
        if self._database is not None:
            if not self._database.exists():
                raise CatalogError(f"database file not found: {self._database}", code="DP002")
            attach = exp.Attach(
                this=exp.alias_(exp.Literal.string(str(self._database)), _DB_ALIAS),
                expressions=[exp.AttachOption(this=exp.var("READ_ONLY"))],
            )
            self._execute_setup(render(attach))
        for name in self._frames:
            if policy.table(name) is None:
                raise CatalogError(f"the DataFrame '{name}' is not a table of the policy", code="DP002")

    def _execute_setup(self, sql: str, params: Mapping[str, Any] | None = None) -> None:
        try:
            self._con.execute(sql, params or {})
            return
        except duckdb.Error as err:
            kind = type(err).__name__
        # Raised outside the except block: `from None` would still keep the engine's error as __context__.
        raise CatalogError(f"could not open the data source ({kind})", code="DP002")

    def _source_expr(self, table: Table) -> exp.Expr:
        if table.name in self._frames:
            frame_name = f"__dpsql_frame_{table.name}"
            self._con.register(frame_name, self._frames[table.name])
            return exp.to_identifier(frame_name, quoted=True)
        if table.source is not None:
            suffix = table.source.suffix.lower()
            reader = {".parquet": "read_parquet", ".csv": "read_csv", ".tsv": "read_csv"}.get(suffix)
            if reader is None:
                raise CatalogError(f"table '{table.name}': source must be a .parquet or .csv file", code="DP002")
            if not table.source.exists():
                raise CatalogError(f"table '{table.name}': source file not found: {table.source}", code="DP002")
            return exp.func(reader, exp.Literal.string(str(table.source)))
        if self._database is not None:
            return exp.table_(table.name, db="main", catalog=_DB_ALIAS, quoted=True)
        raise CatalogError(
            f"table '{table.name}' has no data: give connect(database=...), tables={{...}}, or a source in the policy",
            code="DP002",
        )

    def ensure_source(self, table: Table) -> str:
        """Create the typed source view of `table` once per session; return its name."""
        with self._lock:
            name = source_name(table)
            if name not in self._sources:
                view = exp.Create(
                    this=exp.to_identifier(name, quoted=True),
                    kind="VIEW",
                    expression=source_select(table, self._source_expr(table)),
                    properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
                )
                self._execute_setup(render(view))
                self._check_source(name, table)
                self._sources.add(name)
            return name

    def _check_source(self, name: str, table: Table) -> None:
        # Binding a LIMIT 0 query checks that every declared column exists, without reading data.
        probe = exp.select("*").from_(exp.to_identifier(name, quoted=True)).limit(0)
        try:
            self._con.execute(render(probe)).fetchall()
            return
        except duckdb.Error:
            pass  # raised below, outside the except block, so the engine's error is not kept as __context__
        raise CatalogError(f"table '{table.name}': the data source lacks a column declared in the policy", code="DP002")

    def ensure_bounded(self, table: Table, seed: int) -> str:
        """Materialise the bounded relation of a private table once per session (see module doc)."""
        with self._lock:
            name = bounded_name(table)
            if name not in self._bounded:
                # On private data: errors come back sanitized (_run), never as setup errors.
                self._run(render(_temp_table(name, bounded_select(table, self.ensure_source(table)))), {"seed": seed})
                self._bounded.add(name)
            return name

    def dry_run(self, table: Table, select: exp.Expr, params: Mapping[str, Any] | None = None) -> None:
        """Run a plan's SQL against an empty table of the same schema, before any charge.

        Errors that depend only on the query (a type mismatch, an invalid regular expression)
        surface here, with no data present, so the query is refused before it is charged (DESIGN 7).
        """
        with self._lock:
            name = empty_name(table)
            if name not in self._bounded:
                empty = exp.select("*").from_(exp.to_identifier(self.ensure_source(table), quoted=True)).limit(0)
                self._execute_setup(render(_temp_table(name, empty)))
                self._bounded.add(name)
            message = None
            try:
                self._con.execute(render(select), dict(params or {})).fetchall()
            except duckdb.Error as err:
                # No row exists in this table, so the engine's text cannot quote private data.
                message = str(err).split("\n", 1)[0]
            if message is not None:
                raise UnsupportedQueryError(f"the engine rejects this query: {message}", code="DP123",
                                            hint="fix the expression named above; nothing was charged")

    def bounded_definition(self, table: Table) -> str:
        """The bounding SQL, for EXPLAIN (the seed stays a parameter)."""
        return render(bounded_select(table, source_name(table)))

    def _run(self, sql: str, params: Mapping[str, Any] | None) -> duckdb.DuckDBPyConnection:
        try:
            return self._con.execute(sql, dict(params or {}))
        except duckdb.Error:
            pass
        # Never chain the engine's exception, not even as __context__ (which `raise ... from None` still
        # sets): its text and args can quote private values. So raise outside the except block.
        raise EngineError(ENGINE_FAILED, code="DP300")

    def run(self, select: exp.Expr | str, params: Mapping[str, Any] | None = None) -> EngineResult:
        """Run a plan's engine SQL (an expression or its rendered text); errors come back sanitized."""
        with self._lock:
            cursor = self._run(select if isinstance(select, str) else render(select), params)
            try:
                rows = cursor.fetchall()
            except duckdb.Error:
                rows = None  # raised below, outside the except block (no __context__, see _run)
            if rows is None:
                raise EngineError(ENGINE_FAILED, code="DP300")
            names = tuple(d[0] for d in cursor.description)
            types = tuple(str(d[1]) for d in cursor.description)
            return EngineResult(names, types, rows)

    def run_public(self, tree: exp.Expr, tables: tuple[Table, ...]) -> EngineResult:
        """Run a query over public tables only, exactly."""
        with self._lock:
            rewritten = tree.copy()
            for node in list(rewritten.find_all(exp.Table)):
                table = self._policy.table(node.name)
                assert table is not None and table.public
                # Keep the name the query uses (its alias, else the table name) so `b.name` still binds.
                alias = node.args.get("alias")
                alias = alias.copy() if alias is not None else exp.TableAlias(this=node.this.copy())
                node.replace(exp.Table(this=exp.to_identifier(self.ensure_source(table), quoted=True), alias=alias))
            return self.run(rewritten)

    def describe_public(self, tree: exp.Expr, tables: tuple[Table, ...]) -> EngineResult:
        """Column names and types of a public query, with no rows (LIMIT 0)."""
        return self.run_public(exp.select("*").from_(tree.subquery("__dpsql_describe")).limit(0), tables)

    def ensure_public_table(self, name: str, create: exp.Create) -> str:
        """Create a session table that holds public rows only (the Median Mechanism domain), once."""
        with self._lock:
            if name not in self._bounded:
                self._execute_setup(render(create))
                self._bounded.add(name)
            return name

    def public_arrays(self, select: exp.Expr) -> dict[str, numpy.ndarray] | None:
        """Columns of a query over public session tables as arrays; None when the engine rejects it.

        Only for queries that read no private relation (the Median Mechanism domain table), so
        a rejection depends on the query alone and can route the query elsewhere.
        """
        with self._lock:
            try:
                fetched = self._con.execute(render(select)).fetchnumpy()
            except duckdb.Error:
                return None
            return {name: numpy.asarray(values) for name, values in fetched.items()}

    def private_arrays(self, select: exp.Expr, params: Mapping[str, Any] | None = None) -> dict[str, numpy.ndarray]:
        """Columns of a query over private data as arrays; engine errors come back sanitized."""
        with self._lock:
            cursor = self._run(render(select), params)
            fetched = None
            try:
                fetched = cursor.fetchnumpy()
            except duckdb.Error:
                pass  # raised below, outside the except block (no __context__, see _run)
            if fetched is None:
                raise EngineError(ENGINE_FAILED, code="DP300")
            return {name: numpy.asarray(values) for name, values in fetched.items()}

    def postprocess(self, columns: dict[str, list[Any]], types: dict[str, str], select: exp.Select) -> EngineResult:
        """Evaluate post-processing SQL over the noisy table (released values only)."""
        with self._lock:
            frame = pandas.DataFrame({name: pandas.Series(values, dtype=object) for name, values in columns.items()})
            typed = exp.select(
                *[exp.alias_(exp.cast(exp.column(n, quoted=True), types[n]), n) for n in columns]
            ).from_(exp.to_identifier("__dpsql_noisy_frame"))
            query = select.copy()
            query.set("from_", exp.From(this=typed.subquery("__dpsql_noisy")))
            self._con.register("__dpsql_noisy_frame", frame)
            try:
                return self.run(query)
            finally:
                self._con.unregister("__dpsql_noisy_frame")

    def close(self) -> None:
        """Close the connection (temporary relations vanish with it)."""
        with self._lock:
            self._con.close()


def _temp_table(name: str, select: exp.Expr) -> exp.Create:
    """CREATE TEMPORARY TABLE name AS select (the session's private relations)."""
    return exp.Create(
        this=exp.to_identifier(name, quoted=True),
        kind="TABLE",
        expression=select,
        properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
    )


def key_type(column_type: str) -> str:
    """The engine type of a policy column type."""
    return TYPE_NAMES[column_type]

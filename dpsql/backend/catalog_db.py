"""A private in-memory DuckDB that holds metadata tables only (the pgwire catalog emulation's).

It never sees private data: the caller loads tables of public metadata (built from the policy)
and constant macro definitions. External access (files, network, extensions) is switched off and
the configuration locked before any client query runs, so a catalog probe cannot read a file.
"""

from __future__ import annotations

import threading
from typing import Any, Mapping, Sequence

import duckdb
from sqlglot import exp

from dpsql.backend.duckdb_engine import EngineResult, render
from dpsql.errors import CatalogQueryError

_LOCKDOWN = (
    "SET autoinstall_known_extensions = false",
    "SET autoload_known_extensions = false",
    "SET enable_external_access = false",
    "SET lock_configuration = true",
)


class MetadataDB:
    """Metadata tables and macros in a locked-down in-memory DuckDB, shared by connections."""

    def __init__(self) -> None:
        self._con = duckdb.connect(":memory:")
        self._lock = threading.Lock()
        self._locked = False

    def create_schema(self, name: str) -> None:
        """Create a schema for metadata tables."""
        self._setup(render(exp.Create(this=exp.Table(this=exp.to_identifier(name, quoted=True)), kind="SCHEMA")))

    def load_table(self, schema: str, name: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> None:
        """Create `schema.name` with (column, DuckDB type) columns and insert `rows`."""
        table = exp.table_(name, db=schema, quoted=True)
        schema_node = exp.Schema(
            this=table,
            expressions=[exp.ColumnDef(this=exp.to_identifier(c, quoted=True), kind=exp.DataType.build(t, dialect="duckdb")) for c, t in columns],
        )
        self._setup(render(exp.Create(this=schema_node, kind="TABLE")))
        if rows:
            insert = exp.insert(exp.values([tuple(exp.Placeholder() for _ in columns)]), table)
            with self._lock:
                self._con.executemany(render(insert), [list(r) for r in rows])

    def define(self, statements: Sequence[str]) -> None:
        """Run constant definitions (CREATE MACRO ...) written by the caller, not by clients."""
        for statement in statements:
            self._setup(statement)

    def lock(self) -> None:
        """Switch off external access and freeze the configuration; call once, after loading."""
        for statement in _LOCKDOWN:
            self._setup(statement)
        self._locked = True

    def _setup(self, sql: str) -> None:
        if self._locked:
            raise RuntimeError("the metadata database is locked")
        with self._lock:
            self._con.execute(sql)

    def query(self, tree: exp.Expr, params: Mapping[str, Any] | Sequence[Any] | None = None) -> EngineResult:
        """Run a (rewritten) catalog probe; errors come back as CatalogQueryError."""
        if not self._locked:
            raise RuntimeError("lock() the metadata database before running queries")
        sql = render(tree)
        message = None
        with self._lock:
            cursor = self._con.cursor()
        try:
            cursor.execute(sql, params if params else None)
            rows = cursor.fetchall()
            names = tuple(d[0] for d in cursor.description or ())
            types = tuple(str(d[1]) for d in cursor.description or ())
            return EngineResult(names, types, rows)
        except duckdb.Error as err:
            message = str(err).split("\n")[0]
        finally:
            cursor.close()
        raise CatalogQueryError(f"catalog query not supported by the dpsql catalog emulation: {message}", code="DP400")

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._con.close()

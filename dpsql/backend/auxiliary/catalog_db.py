"""A private in-memory DuckDB that holds metadata tables only (the pgwire catalog emulation's).

It never sees private data: the caller loads tables of public metadata (built from the policy)
and constant macro definitions. External access (files, network, extensions) is switched off and
the configuration locked before any client query runs, so a catalog probe cannot read a file.
Probes are free (no budget), so each is bounded: one thread, a memory limit, no spilling to disk,
a timeout (the cursor is interrupted) and a row cap; DuckDB's own error text never reaches the
client (it is logged).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
from sqlglot import exp

from dpsql.backend.engines.duckdb_engine import EngineResult, render
from dpsql.backend.engines.watchdog import WATCHDOG
from dpsql.errors import CatalogLimitError, CatalogQueryError

log = logging.getLogger("dpsql.server")
_LOCKDOWN = (
    "SET threads = 1",
    "SET preserve_insertion_order = false",
    "SET temp_directory = ''",
    "SET autoinstall_known_extensions = false",
    "SET autoload_known_extensions = false",
    "SET enable_external_access = false",
    "SET lock_configuration = true",
)


UNSUPPORTED = "catalog query not supported by the dpsql catalog emulation"
MAX_ANSWER_BYTES = 16 * 1024 * 1024  # text in one catalog answer (client probes get kilobytes)


class MetadataDB:
    """Metadata tables and macros in a locked-down in-memory DuckDB, shared by connections."""

    def __init__(self, *, memory_mb: int = 64, timeout: float = 10.0, max_rows: int = 100_000) -> None:
        self._con = duckdb.connect(":memory:", config={"memory_limit": f"{int(memory_mb)}MB"})
        self._lock = threading.Lock()
        self._locked = False
        self._timeout = timeout
        self._max_rows = max_rows

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
        """Run a (rewritten) catalog probe within the limits; errors come back as CatalogQueryError
        with a fixed text (DuckDB's is logged, never sent)."""
        if not self._locked:
            raise RuntimeError("lock() the metadata database before running queries")
        sql = render(tree)
        failure: duckdb.Error | None = None
        with self._lock:
            cursor = self._con.cursor()
        alarm = WATCHDOG.arm(self._timeout, cursor.interrupt)
        try:
            cursor.execute(sql, params if params else None)
            rows = cursor.fetchmany(self._max_rows + 1)
            names = tuple(d[0] for d in cursor.description or ())
            types = tuple(str(d[1]) for d in cursor.description or ())
        except duckdb.Error as err:
            failure = err
        finally:
            alarm.disarm()
            cursor.close()
        if failure is not None:
            raise self._refusal(failure)
        if len(rows) > self._max_rows:
            raise CatalogLimitError("54000", f"catalog query returns more than {self._max_rows} rows")
        if sum(_size(value) for row in rows for value in row) > MAX_ANSWER_BYTES:
            raise CatalogLimitError("54000", f"catalog query returns more than {MAX_ANSWER_BYTES // 2**20} MiB")
        return EngineResult(names, types, rows)

    def _refusal(self, failure: duckdb.Error) -> CatalogQueryError:
        """The fixed dpsql error for a DuckDB failure (built outside its except block: no __context__)."""
        if isinstance(failure, duckdb.InterruptException):
            return CatalogLimitError("57014", f"catalog query canceled: it ran longer than {self._timeout:g} s")
        if isinstance(failure, duckdb.OutOfMemoryException):
            return CatalogLimitError("53200", "catalog query canceled: it needs more memory than the catalog may use")
        log.warning("catalog probe failed in the metadata database: %.300s", str(failure).split("\n")[0])
        return CatalogQueryError(UNSUPPORTED, code="DP400")

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._con.close()


def _size(value: Any) -> int:
    """About how many bytes a fetched value takes on the wire."""
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, (list, tuple)):
        return sum(_size(item) for item in value) + 4
    if isinstance(value, dict):
        return sum(_size(k) + _size(v) for k, v in value.items())
    return 8

"""Which engine a session runs on: the one place that names the concrete engines.

DuckDB is the default; Spark (an optional dependency) is imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dpsql.backend.engines.duckdb_engine import DuckDBEngine
from dpsql.backend.engines.engine import Engine
from dpsql.backend.engines.shared_duckdb import SharedDuckDB
from dpsql.catalog.policy import Policy
from dpsql.errors import InterfaceError

ENGINES = ("duckdb", "spark")


def start_spark(master: str | None = None, remote: str | None = None) -> Any:
    """A SparkSession for engine='spark' sessions to share (the server starts one per process)."""
    from dpsql.backend.engines.spark_engine import start_spark as start  # pyspark is optional: imported on use

    return start(master, remote)


def open_shared(policy: Policy, database: str | Path | None = None) -> SharedDuckDB:
    """One DuckDB database for the DuckDB sessions of a process (the server): each private table is
    bounded once for all of them (backend/engines/shared_duckdb.py)."""
    return SharedDuckDB(policy, database)


def analyst_scope(shared: Any, analyst: str) -> Any:
    """What a session of this analyst reads the process's shared database through (its own
    schema for the relations its queries create: backend/engines/shared_duckdb.py); None stays None."""
    return shared.scope(analyst) if isinstance(shared, SharedDuckDB) else shared


def prepare_shared(shared: SharedDuckDB) -> None:
    """Start bounding, in the background, the private tables whose source the policy names (the
    server at startup): the first query of the first connection waits only for what is left."""
    engine = DuckDBEngine(shared.policy, shared.database, shared=shared)
    tables = [t for t in shared.policy.tables.values() if not t.public and t.source is not None]
    # The seed argument is unused: a shared relation has its own (SharedDuckDB.seed).
    shared.prepare(tables, lambda table: engine.ensure_bounded(table, 0), engine.interrupt)


def open_engine(policy: Policy, name: str, database: str | Path | None, tables: Mapping[str, Any] | None, spark: Any,
                master: str | None, remote: str | None, progress: Any, shared: Any = None) -> Engine:
    """The engine a session runs on: DuckDB (a database file and/or DataFrames, or the process's
    shared database) or Spark."""
    if name == "duckdb":
        if spark is not None or master is not None or remote is not None:
            raise InterfaceError("spark=, master= and remote= need engine='spark'")
        return DuckDBEngine(policy, database, tables, shared)
    if shared is not None:
        raise InterfaceError("shared= is a DuckDB database; a Spark session shares its SparkSession (spark=)")
    if name == "spark":
        if database is not None:
            raise InterfaceError("database= is a DuckDB file; with engine='spark' name Parquet paths or Spark tables in the policy")
        from dpsql.backend.engines.spark_engine import SparkEngine

        return SparkEngine(policy, spark, master=master, remote=remote, frames=tables, progress=progress)
    raise InterfaceError(f"unknown engine '{name}': use one of {', '.join(ENGINES)}")

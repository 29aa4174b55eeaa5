"""Which engine a session runs on: the one place that names the concrete engines.

DuckDB is the default; Spark (an optional dependency) is imported only when asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from dpsql.backend.duckdb_engine import DuckDBEngine
from dpsql.backend.engine import Engine
from dpsql.catalog.model import Policy
from dpsql.errors import InterfaceError

ENGINES = ("duckdb", "spark")


def start_spark(master: str | None = None, remote: str | None = None) -> Any:
    """A SparkSession for engine='spark' sessions to share (the server starts one per process)."""
    from dpsql.backend.spark_engine import start_spark as start  # pyspark is optional: imported on use

    return start(master, remote)


def open_engine(policy: Policy, name: str, database: str | Path | None, tables: Mapping[str, Any] | None, spark: Any,
                master: str | None, remote: str | None, progress: Any) -> Engine:
    """The engine a session runs on: DuckDB (a database file and/or DataFrames) or Spark."""
    if name == "duckdb":
        if spark is not None or master is not None or remote is not None:
            raise InterfaceError("spark=, master= and remote= need engine='spark'")
        return DuckDBEngine(policy, database, tables)
    if name == "spark":
        if database is not None:
            raise InterfaceError("database= is a DuckDB file; with engine='spark' name Parquet paths or Spark tables in the policy")
        from dpsql.backend.spark_engine import SparkEngine

        return SparkEngine(policy, spark, master=master, remote=remote, frames=tables, progress=progress)
    raise InterfaceError(f"unknown engine '{name}': use one of {', '.join(ENGINES)}")

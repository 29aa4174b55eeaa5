"""Write DataFrames to files through a private DuckDB connection.

SQL is built as sqlglot expressions: paths and names enter statements as quoted literals and
identifiers rendered by sqlglot, never by string formatting.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas
from sqlglot import exp

_FRAME = "dpsql_frame"  # the name the DataFrame is registered under on the private connection


def write_parquet(df: pandas.DataFrame, path: Path) -> None:
    """Write `df` to a Parquet file at `path` (replaced if it exists)."""
    copy = exp.Copy(
        this=exp.Table(this=exp.to_identifier(_FRAME, quoted=True)),
        kind=False,  # COPY ... TO
        files=[exp.Literal.string(str(path))],
        params=[exp.CopyParameter(this=exp.var("FORMAT"), expression=exp.var("PARQUET"))],
    )
    with duckdb.connect() as con:
        con.register(_FRAME, df)
        con.execute(copy.sql(dialect="duckdb"))


def write_duckdb(df: pandas.DataFrame, path: Path, table: str) -> None:
    """Write `df` as table `table` of the DuckDB database file at `path` (table replaced if present)."""
    create = exp.Create(
        this=exp.Table(this=exp.to_identifier(table, quoted=True)),
        kind="TABLE",
        replace=True,
        expression=exp.select("*").from_(exp.Table(this=exp.to_identifier(_FRAME, quoted=True))),
    )
    with duckdb.connect(str(path)) as con:
        con.register(_FRAME, df)
        con.execute(create.sql(dialect="duckdb"))

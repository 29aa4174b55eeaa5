"""Read the column names and types of a data source (a Parquet or CSV file, or the tables of a
DuckDB database file) for `dpsql policy init`. Only the schema is read, never a value, except
for the explicit opt-in `value_ranges`, which a data owner asks for on their own data.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
from sqlglot import exp

from dpsql.backend.dialects import render
from dpsql.catalog.scaffold import SourceColumn, SourceTable
from dpsql.errors import CatalogError

_READERS = {".parquet": "read_parquet", ".csv": "read_csv", ".tsv": "read_csv"}


def policy_type(engine_type: str) -> str | None:
    """The policy type for a DuckDB type name, or None when dpsql has none for it."""
    upper = engine_type.upper()
    if upper in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"):
        return "int"
    if upper in ("FLOAT", "DOUBLE", "REAL") or upper.startswith("DECIMAL"):
        return "float"
    if upper in ("VARCHAR", "TEXT", "STRING") or upper.startswith("VARCHAR") or upper == "UUID":
        return "text"
    if upper == "BOOLEAN":
        return "bool"
    if upper == "DATE":
        return "date"
    if upper.startswith("TIMESTAMP") or upper == "DATETIME":
        return "timestamp"
    return None


def _describe(connection: duckdb.DuckDBPyConnection, relation: exp.Expr) -> tuple[SourceColumn, ...]:
    sql = render(exp.Describe(this=exp.select("*").from_(relation)), "duckdb")
    rows = connection.execute(sql).fetchall()
    return tuple(SourceColumn(str(name), str(kind), policy_type(str(kind))) for name, kind, *_ in rows)


def read_source(path: str | Path) -> tuple[SourceTable, ...]:
    """The tables of a Parquet/CSV file (one) or of a DuckDB database file (each of its tables)."""
    file = Path(path).expanduser()
    if not file.exists():
        raise CatalogError(f"source not found: {file}", code="DP002")
    connection = duckdb.connect(":memory:")
    failed = None
    try:
        reader = _READERS.get(file.suffix.lower())
        if reader is not None:
            relation = exp.func(reader, exp.Literal.string(str(file)))
            return (SourceTable(file.stem.lower(), str(file.resolve()), _describe(connection, relation)),)
        connection.execute(render(exp.Attach(this=exp.alias_(exp.Literal.string(str(file)), "src"),
                                             expressions=[exp.AttachOption(this=exp.var("READ_ONLY"))]), "duckdb"))
        names = [row[0] for row in connection.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'src' AND schema_name = 'main' ORDER BY table_name"
        ).fetchall()]
        return tuple(SourceTable(name, None, _describe(connection, exp.table_(name, db="main", catalog="src", quoted=True)))
                     for name in names)
    except duckdb.Error as err:
        failed = type(err).__name__
    finally:
        connection.close()
    raise CatalogError(f"could not read the schema of {file} ({failed}): give a .parquet, .csv or DuckDB database file",
                       code="DP002")


def value_ranges(table: SourceTable, database: str | Path | None = None) -> dict[str, tuple[float, float]]:
    """min and max of each numeric column: READS DATA. Only for `policy init --suggest-bounds`, run by
    the data owner on their own data; the caller rounds the result outward and warns."""
    numeric = [c.name for c in table.columns if c.policy_type in ("int", "float")]
    if not numeric:
        return {}
    connection = duckdb.connect(":memory:")
    try:
        if table.source is None:
            connection.execute(render(exp.Attach(this=exp.alias_(exp.Literal.string(str(database)), "src"),
                                                 expressions=[exp.AttachOption(this=exp.var("READ_ONLY"))]), "duckdb"))
            relation: exp.Expr = exp.table_(table.name, db="main", catalog="src", quoted=True)
        else:
            relation = exp.func(_READERS[Path(table.source).suffix.lower()], exp.Literal.string(table.source))
        items = [agg for name in numeric for agg in (exp.Min(this=exp.column(name, quoted=True)), exp.Max(this=exp.column(name, quoted=True)))]
        row = connection.execute(render(exp.select(*items).from_(relation), "duckdb")).fetchone() or ()
    finally:
        connection.close()
    return {name: (float(row[2 * i]), float(row[2 * i + 1])) for i, name in enumerate(numeric)
            if row and row[2 * i] is not None and row[2 * i + 1] is not None}

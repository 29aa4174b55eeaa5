"""Read the column names and types of a data source (a Parquet or CSV file, or the tables of a
DuckDB database file) for `dpsql policy init`. Only the schema is read, never a value, except
for the explicit opt-in `value_ranges`, which a data owner asks for on their own data.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
from sqlglot import exp

from dpsql.backend.sql.engine_dialects import render
from dpsql.catalog.scaffold import DataFacts, SourceColumn, SourceTable
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


def _open_relation(connection: duckdb.DuckDBPyConnection, table: SourceTable, database: str | Path | None) -> exp.Expr:
    if table.source is None:
        connection.execute(render(exp.Attach(this=exp.alias_(exp.Literal.string(str(database)), "src"),
                                             expressions=[exp.AttachOption(this=exp.var("READ_ONLY"))]), "duckdb"))
        return exp.table_(table.name, db="main", catalog="src", quoted=True)
    return exp.func(_READERS[Path(table.source).suffix.lower()], exp.Literal.string(table.source))


QUANTILE = 0.99  # the share of persons whose rows a suggested max_rows keeps whole
MAX_VALUES = 20  # a column with at most this many distinct values may get a suggested `values` list
MIN_PERSONS = 10  # ... when each value is held by at least this many persons (else a rare value would name few)


def data_facts(table: SourceTable, unit: str, database: str | Path | None = None) -> DataFacts:
    """What `policy init --suggest` proposes from the data: READS DATA. The 99th percentile of
    rows per person (max_rows) and of distinct keys per person over the text columns left to
    partition selection (max_groups, at most max_rows), the share of rows that max_rows keeps,
    and the values of low-cardinality columns held by at least MIN_PERSONS persons each. Only for the data owner, on their own data;
    the caller marks every suggestion as a disclosure to review."""
    person = exp.column(unit, quoted=True)
    keys = [c.name for c in table.columns if c.name != unit and c.policy_type in ("text", "bool", "int", "date")]
    connection = duckdb.connect(":memory:")
    try:
        relation = _open_relation(connection, table, database)
        counts = (exp.select(exp.alias_(exp.Count(this=exp.Star()), "n"),
                             *[exp.alias_(exp.Count(this=exp.Distinct(expressions=[exp.column(k, quoted=True)])), f"k{i}", quoted=True)
                               for i, k in enumerate(keys)])
                  .from_(relation).where(exp.Not(this=exp.Is(this=person, expression=exp.Null()))).group_by(person))  # fmt: skip
        quantile = exp.Literal.number(QUANTILE)
        summary = exp.select(
            exp.func("quantile_disc", exp.column("n"), quantile), exp.Sum(this=exp.column("n")),
            *[exp.func("quantile_disc", exp.column(f"k{i}", quoted=True), quantile) for i in range(len(keys))],
        ).from_(counts.subquery("per_person"))
        row = connection.execute(render(summary, "duckdb")).fetchone() or ()
        max_rows = max(1, int(row[0] or 1))
        total = int(row[1] or 0)
        kept = exp.select(exp.Sum(this=exp.func("least", exp.column("n"), exp.Literal.number(max_rows)))).from_(counts.subquery("per_person"))
        kept_rows = int((connection.execute(render(kept, "duckdb")).fetchone() or (0,))[0] or 0)
        per_key = dict(zip(keys, (int(v or 1) for v in row[2:])))
        values = {}
        for key in keys:
            column = exp.column(key, quoted=True)
            distinct = exp.select(column, exp.alias_(exp.Count(this=exp.Distinct(expressions=[person])), "persons")) \
                .from_(relation).where(exp.Not(this=exp.Is(this=column, expression=exp.Null()))).group_by(column).order_by(column) \
                .limit(MAX_VALUES + 1)
            found = connection.execute(render(distinct, "duckdb")).fetchall()
            kind = next(c for c in table.columns if c.name == key).policy_type
            if kind in ("text", "int") and 0 < len(found) <= MAX_VALUES and all(persons >= MIN_PERSONS for _, persons in found):
                values[key] = tuple(v for v, _ in found)
    finally:
        connection.close()
    # Partition selection (and so max_groups) serves the text keys without a public list of values.
    private = [k for k in keys if k not in values and next(c for c in table.columns if c.name == k).policy_type == "text"]
    max_groups = min(max_rows, max((per_key[k] for k in private), default=1))
    return DataFacts(max_rows=max_rows, max_groups=max_groups, kept_share=kept_rows / total if total else 1.0, values=values)


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

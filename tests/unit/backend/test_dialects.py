"""dpsql's own plan nodes render per engine by dpsql, never by sqlglot's function mapping.

The DuckDB and Spark texts are fixed here; tests/spark runs them on both engines and checks
that they compute identical values.
"""

from __future__ import annotations

import pytest
from sqlglot import exp

from dpsql.backend.sql.engine_dialects import (
    DayNumber,
    ExactSum,
    Guarded,
    HashBits,
    IntegerSeries,
    IsFinite,
    KeyedHash,
    WideInt,
    hash_input,
    render,
)

COL = exp.column("x", quoted=True)
SEED = exp.Placeholder(this="seed")

CASES = [
    (KeyedHash(this=SEED, expressions=[COL]),
     "MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST(\"x\" AS TEXT)))",
     "MD5(CONCAT_WS(':', CAST(:seed AS STRING), CAST(`x` AS STRING)))"),
    (HashBits(this=SEED, expressions=[COL]),
     "CAST('0x' || SUBSTRING(MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST(\"x\" AS TEXT))), 1, 15) AS BIGINT)",
     "CAST(CONV(SUBSTRING(MD5(CONCAT_WS(':', CAST(:seed AS STRING), CAST(`x` AS STRING))), 1, 15), 16, 10) AS BIGINT)"),
    (IsFinite(this=COL, kind=exp.Literal.string("float")), "ISFINITE(\"x\")", "(ABS(`x`) < CAST('Infinity' AS DOUBLE))"),
    (IsFinite(this=COL, kind=exp.Literal.string("date")), "ISFINITE(\"x\")", "(NOT `x` IS NULL)"),
    (DayNumber(this=COL), "(CAST((\"x\" - CAST('0001-01-01' AS DATE)) AS BIGINT) + 1)",
     "(CAST(DATEDIFF(`x`, CAST('0001-01-01' AS DATE)) AS BIGINT) + 1)"),
    (ExactSum(this=COL), "SUM(\"x\")", "SUM(CAST(`x` AS DECIMAL(38, 0)))"),
    (WideInt(this=COL), "CAST(\"x\" AS INT128)", "CAST(`x` AS DECIMAL(38, 0))"),
    (Guarded(this=exp.GT(this=COL, expression=exp.Literal.number(1))), "TRY(\"x\" > 1)", "`x` > 1"),
    (exp.TryCast(this=COL, to=exp.DataType.build("BIGINT")), "TRY_CAST(\"x\" AS BIGINT)", "TRY_CAST(`x` AS BIGINT)"),
]


@pytest.mark.parametrize(("node", "duckdb", "spark"), CASES, ids=[type(c[0]).__name__ + str(i) for i, c in enumerate(CASES)])
def test_node_renders_per_engine(node: exp.Expr, duckdb: str, spark: str) -> None:
    assert render(node, "duckdb") == duckdb
    assert render(node, "spark") == spark


def test_integer_series_is_a_range_table_on_both() -> None:
    select = exp.select("c").from_(IntegerSeries(count=exp.Literal.number(3), alias=exp.to_identifier("r"), column=exp.to_identifier("c")))
    assert render(select, "duckdb") == "SELECT c FROM RANGE(0, 3) AS r(c)"
    assert render(select, "spark") == "SELECT c FROM RANGE(0, 3) AS r(c)"


def test_doubles_enter_hashes_as_integers() -> None:
    # '1.0E7' (Spark) and '10000000.0' (DuckDB) differ as text: a DOUBLE is hashed as floor(x * 1024).
    assert hash_input(COL, "int") is COL
    text = render(hash_input(COL, "float"), "spark")
    assert text.startswith("CAST(FLOOR(LEAST(GREATEST(`x` * 1024.0") and text.endswith("AS BIGINT)")


def test_sqlglot_alone_would_have_mapped_hash_silently() -> None:
    # The failure the nodes exist for (docs/deployment.md, Spark): DuckDB's 64-bit hash becomes Spark's
    # 32-bit Murmur3 without any error from sqlglot.
    assert exp.func("hash", COL).sql("spark") == "HASH(`x`)"

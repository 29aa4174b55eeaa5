"""DuckDB's plain-row results (DB-API fetchall, no Arrow conversion) normalise to exactly what the
Arrow path gives: the same names, type names and Python values, for every type a plan returns;
types without a known equivalence go through Arrow."""

from __future__ import annotations

import datetime

import pytest

from dpsql.backend.engines.duckdb_engine import DuckDBBackend
from dpsql.backend.engines.engine import RawRows, normalise, normalise_rows, row_type
from dpsql.catalog.loader import policy_from_dict

POLICY = policy_from_dict({
    "budget": {"epsilon": 1, "delta": 1e-6, "default_query_epsilon": 0.1, "default_query_delta": 0},
    "tables": {"t": {"privacy_unit": "pid", "max_rows": 3, "columns": {"pid": {"type": "int"}}}},
})

# Every column type a plan's statement returns (keys, exact aggregates, robust arrays), with NULLs.
TYPED = """
SELECT * FROM (VALUES
  (1::HUGEINT, 2::BIGINT, 3::INTEGER, 4::SMALLINT, 5::TINYINT, 6::UBIGINT, 1.5::DOUBLE, 'x', TRUE,
   1.25::DECIMAL(18,3), 5::DECIMAL(18,0), 7::DECIMAL(38,0), [1, NULL]::HUGEINT[], [1.5]::DOUBLE[], ['a', NULL],
   [2::DECIMAL(10,0)], 123456789012345678901234567::HUGEINT, 'nan'::DOUBLE),
  (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
) v(h, b, i, s, t, ub, d, v, bo, dec, dec0, dec38, lh, ld, lv, ldec, big, nan)
"""


@pytest.fixture()
def backend() -> DuckDBBackend:
    db = DuckDBBackend(POLICY)
    yield db
    db.close()


def test_plain_rows_normalise_like_arrow(backend: DuckDBBackend) -> None:
    raw = backend.rows(TYPED)
    assert isinstance(raw, RawRows)  # every column has a plain-row type: no Arrow
    plain, arrow = normalise_rows(raw), normalise(backend.execute(TYPED))
    assert plain.names == arrow.names and plain.types == arrow.types and plain.rows[1] == arrow.rows[1]
    assert plain.rows[0][:-1] == arrow.rows[0][:-1] and plain.rows[0][-1] != plain.rows[0][-1] != arrow.rows[0][-1]  # NaN
    assert [type(v) for v in plain.rows[0]] == [type(v) for v in arrow.rows[0]]
    assert plain.types[0] == "HUGEINT" and plain.types[11] == "HUGEINT" and plain.types[10] == "DECIMAL(18,0)"
    assert plain.rows[0][10] == 5 and type(plain.rows[0][10]) is int  # integral decimals become ints
    assert plain.rows[0][15] == [2] and type(plain.rows[0][15][0]) is int


def test_declared_types_convert_alike(backend: DuckDBBackend) -> None:
    sql = "SELECT 3::HUGEINT a, '2021-05-06' b, 2::HUGEINT c, NULL::VARCHAR d"  # a DATE declared over text
    declared = ("BIGINT", "DATE", "DOUBLE", None)
    raw = backend.rows(sql)
    assert isinstance(raw, RawRows)
    plain = normalise_rows(raw, declared)
    assert plain == normalise(backend.execute(sql), declared)
    assert plain.rows == [(3, datetime.date(2021, 5, 6), 2.0, None)] and plain.types[:3] == ("BIGINT", "DATE", "DOUBLE")


def test_other_types_go_through_arrow(backend: DuckDBBackend) -> None:
    sql = "SELECT 0.1::FLOAT f, TIMESTAMPTZ '2020-01-01 00:00:00+00' tz, {'a': 1} st, DATE '2020-01-02' d"
    first = backend.rows(sql)
    assert not isinstance(first, RawRows) and first.num_rows == 1
    assert not isinstance(backend.rows(sql), RawRows)  # remembered: Arrow directly
    assert isinstance(backend.rows("SELECT 1"), RawRows)  # only that statement
    assert row_type("FLOAT") is None and row_type("TIMESTAMP WITH TIME ZONE") is None and row_type('"NULL"') is None
    # ±infinity dates and timestamps: plain rows would give date.max, Arrow's conversion fails
    assert row_type("DATE") is None and row_type("TIMESTAMP") is None and row_type("DATE[]") is None
    with pytest.raises(ValueError):
        normalise_rows(RawRows(("f",), ("FLOAT",), [(0.5,)]))


def test_connection_stays_usable_after_a_failing_statement(backend: DuckDBBackend) -> None:
    from dpsql.backend.engines.engine import BackendFailure

    backend.connection.execute("CREATE TABLE s AS SELECT range::VARCHAR v FROM range(100000) UNION ALL SELECT 'x'")
    with pytest.raises(BackendFailure):
        backend.rows("SELECT CAST(v AS INTEGER) FROM s")
    raw = backend.rows("SELECT 41 + 1 AS n")
    assert isinstance(raw, RawRows) and raw.rows == [(42,)]

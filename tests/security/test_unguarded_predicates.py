"""Predicates dpsql runs without TRY(...) cannot fail on any value (backend/sql/safe_predicates.py).

Hypothesis: for every predicate `cannot_fail` accepts, evaluating it *bare* in DuckDB over rows of
extreme typed values (NULL, NaN, +-inf, the int64 limits, empty and odd strings, far dates)
never raises. Negative control: predicates the classifier rejects (arithmetic, casts) do raise
bare on the same rows, so the rows are adversarial enough to catch a classifier that let
them through.
"""

from __future__ import annotations

import duckdb
import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpsql.backend.sql.safe_predicates import cannot_fail
from dpsql.catalog.loader import policy_from_dict
from dpsql.frontend.privacy_dialect import Dpsql

POLICY = policy_from_dict({
    "budget": {"epsilon": 1, "delta": 1e-6, "default_query_epsilon": 0.1, "default_query_delta": 0},
    "tables": {"t": {"privacy_unit": "pid", "max_rows": 1, "columns": {
        "pid": {"type": "int"}, "i": {"type": "int"}, "j": {"type": "int"}, "f": {"type": "float"},
        "s": {"type": "text"}, "d": {"type": "date"}, "b": {"type": "bool"}}}},
})
TABLE = POLICY.table("t")

ROWS = """
CREATE TABLE t (pid BIGINT, i BIGINT, j BIGINT, f DOUBLE, s VARCHAR, d DATE, b BOOLEAN);
INSERT INTO t SELECT * FROM (VALUES
  (1, 9223372036854775807, -9223372036854775808, 'NaN'::DOUBLE, '', DATE '5877641-06-25', true),
  (2, -9223372036854775808, 9223372036854775807, 'inf'::DOUBLE, 'x%_\\', DATE '-4713-11-24', false),
  (3, 9223372036854775807, 1, '-inf'::DOUBLE, repeat('é', 1000), DATE '1970-01-01', NULL),
  (4, NULL, NULL, NULL, NULL, NULL, NULL),
  (5, 1, 0, 1.7976931348623157e308, 'abc', DATE '2024-02-29', true)
) v(pid, i, j, f, s, d, b)
"""

ints = st.sampled_from(["0", "1", "-1", "9223372036854775807", "-9223372036854775807", "42"])
numbers = st.sampled_from(["0.5", "-1e300", "1e308", "3", "-0.0"])
strings = st.sampled_from(["''", "'a'", "'x%'", "'%_%'", "'é'"])
dates = st.sampled_from(["'2020-01-01'", "'1970-01-01'", "'9999-12-31'"])
OPS = st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "IS DISTINCT FROM", "IS NOT DISTINCT FROM"])


@st.composite
def atoms(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["int", "float", "text", "date", "bool", "cols", "in", "between", "like", "is"]))
    op = draw(OPS)
    if kind == "int":
        return f"i {op} {draw(ints)}"
    if kind == "float":
        return f"f {op} {draw(st.one_of(ints, numbers))}"
    if kind == "text":
        return f"s {op} {draw(strings)}"
    if kind == "date":
        return f"d {op} {draw(dates)}"
    if kind == "bool":
        return draw(st.sampled_from(["b", "NOT b", "b = true", "b IS TRUE"]))
    if kind == "cols":
        return draw(st.sampled_from([f"i {op} j", f"i {op} f", f"f {op} j", f"s {op} s"]))
    if kind == "in":
        return f"i IN ({', '.join(draw(st.lists(ints, min_size=1, max_size=4)))})"
    if kind == "between":
        return f"f BETWEEN {draw(numbers)} AND {draw(numbers)}"
    if kind == "like":
        return f"s {draw(st.sampled_from(['LIKE', 'ILIKE', 'NOT LIKE']))} {draw(strings)}"
    return draw(st.sampled_from(["i IS NULL", "s IS NOT NULL", "d IS NULL"]))


predicates = st.recursive(atoms(), lambda inner: st.one_of(
    st.builds(lambda a, b: f"({a}) AND ({b})", inner, inner),
    st.builds(lambda a, b: f"({a}) OR ({b})", inner, inner),
    st.builds(lambda a: f"NOT ({a})", inner)), max_leaves=6)


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.execute(ROWS)
    return connection


def _where(text: str) -> sqlglot.exp.Expr:
    return sqlglot.parse_one(f"SELECT 1 FROM t WHERE {text}", read=Dpsql).args["where"].this


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=predicates)
def test_accepted_predicates_never_raise_bare(con: duckdb.DuckDBPyConnection, text: str) -> None:
    predicate = _where(text)
    assert cannot_fail(predicate, TABLE), text  # the grammar above only builds total forms
    con.execute(f"SELECT COUNT(*) FROM t WHERE COALESCE({predicate.sql('duckdb')}, FALSE)").fetchall()


@pytest.mark.parametrize("text", [
    "i + j > 0",                    # overflow on the int64 maximum
    "i * j > 0",
    "CAST(s AS INTEGER) > 0",      # a cast of a text value
    "i // j > 0",                   # division by zero on the row with j = 0
    "i > 0.5",                      # int vs decimal literal: kept guarded (a per-row conversion)
    "abs(i) > 0",                   # a function: abs of the int64 minimum overflows
])
def test_negative_control_rejected_predicates_and_the_rows_that_break_them(con: duckdb.DuckDBPyConnection, text: str) -> None:
    predicate = _where(text)
    assert not cannot_fail(predicate, TABLE)
    if text != "i > 0.5":  # the rows really are adversarial: these forms raise bare
        with pytest.raises(duckdb.Error):
            con.execute(f"SELECT COUNT(*) FROM t WHERE COALESCE({predicate.sql('duckdb')}, FALSE)").fetchall()
    assert con.execute(f"SELECT COUNT(*) FROM t WHERE COALESCE(TRY({predicate.sql('duckdb')}), FALSE)").fetchall()

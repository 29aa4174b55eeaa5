"""Errors on the Spark engine: query-only errors are refused before the charge (DP123), errors on
private data come back as the sanitized EngineError (DP300, no Spark text, no exception chain),
pyspark prints nothing to stderr, EXPLAIN shows Spark SQL without secrets, public tables run.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpsql
from dpsql.backend.engines.engine import ENGINE_FAILED
from dpsql.errors import EngineError, UnsupportedQueryError
from tests.spark.conftest import SparkData

SECRET = "secret-7f3a"  # a private value that must never show in an error or on stderr

# One private table t(pid, ...) with one row per person, read from `source`.
POLICY_HEAD = """
[budget]
epsilon = 100.0
delta = 0.5
default_query_epsilon = 1.0
default_query_delta = 1e-6

[tables.t]
privacy_unit = "pid"
max_rows = 1
max_groups = 1
source = "{source}"

[tables.t.columns]
pid = {{ type = "int" }}
"""
TINY_POLICY = POLICY_HEAD + """a = {{ type = "{a_type}" }}
b = {{ type = "text" }}
"""


@pytest.fixture(scope="module")
def con(spark: Any, spark_data: SparkData) -> Iterator[dpsql.Connection]:
    connection = dpsql.connect(policy=spark_data.policy_path, engine="spark", spark=spark, random_seed=5)
    assert connection.session.engine_name == "spark"
    yield connection
    connection.close()


def tiny_policy(directory: Path, source: str, a_type: str = "text") -> Path:
    path = directory / "policy.toml"
    path.write_text(TINY_POLICY.format(source=source, a_type=a_type), encoding="utf-8")
    return path


# --- query-only errors: refused at the dry run, uncharged ---------------------------------------------------------



@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM people WHERE active + 1 > 2",                 # BOOLEAN + INT: a type mismatch
    "SELECT SUM(age) FROM people WHERE day * 2 > 3",                    # DATE * INT
    "SELECT region, COUNT(*) FROM people WHERE active + 1 > 2 GROUP BY region",  # the seeded selection query
    "SELECT MEDIAN(score), MODE(region) FROM people WHERE day * 2 > 3",  # the robust requests' dry runs
    "SELECT COUNT(*) FROM people WHERE region + 1 > 2",                  # DuckDB (the reference) rejects it; Spark alone would answer
    # Constant patterns Spark checks only at the first row it reads: the dry run reads one row of
    # public dummy values, so they are refused uncharged too.
    "SELECT COUNT(*) FROM people WHERE strftime(day, '%U') = '01'",  # sqlglot keeps '%U' as is
    "SELECT COUNT(*) FROM people WHERE region LIKE 'ab\\'",
    "SELECT COUNT(*) FROM people WHERE regexp_matches(region, '(')",
])
def test_query_only_errors_are_refused_uncharged(con: dpsql.Connection, sql: str) -> None:
    before = con.ledger()
    with pytest.raises(UnsupportedQueryError) as info:
        con.execute(sql)
    assert info.value.code == "DP123" and "nothing was charged" in str(info.value)
    assert con.ledger() == before


@pytest.mark.parametrize("sql", [
    # Patterns and sizes that are not constants could fail on one person's value: the analysis
    # refuses them on every engine (DP125), before any engine sees the query.
    "SELECT COUNT(*) FROM people WHERE regexp_matches(region, region)",
    "SELECT COUNT(*) FROM people WHERE region LIKE region",
    "SELECT COUNT(*) FROM people WHERE repeat(region, age) = 'x'",
])
def test_non_constant_patterns_are_refused_uncharged(con: dpsql.Connection, sql: str) -> None:
    before = con.ledger()
    with pytest.raises(UnsupportedQueryError) as info:
        con.execute(sql)
    assert info.value.code == "DP125"
    assert con.ledger() == before


def test_engine_errors_on_private_data_are_sanitized(spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # A source whose second file stores `a` as text, holding a private value: Spark fails while
    # reading it (after the dry run, which reads no data), with a message about the data.
    data = tmp_path / "t.parquet"
    data.mkdir()
    pq.write_table(pa.table({"pid": list(range(50)), "a": list(range(50)), "b": ["x"] * 50}), data / "part-0.parquet")
    pq.write_table(pa.table({"pid": list(range(50, 100)), "a": [f"{SECRET}-{i}" for i in range(50)], "b": ["x"] * 50}),
                   data / "part-1.parquet")
    policy = tiny_policy(tmp_path, "t.parquet", a_type="int")
    with dpsql.connect(policy=policy, engine="spark", spark=spark, random_seed=3) as broken:
        capfd.readouterr()
        with pytest.raises(EngineError) as info:
            broken.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM t")
        err = info.value
        assert err.code == "DP300" and err.message == ENGINE_FAILED and str(err) == f"DP300: {ENGINE_FAILED}"
        assert err.__cause__ is None and err.__context__ is None  # no engine exception kept anywhere
        assert [entry.cost.epsilon for entry in broken.ledger()] == [1]  # charged before the engine ran: it stands
    captured = capfd.readouterr()
    for text in (str(err), captured.out, captured.err):
        for leak in (SECRET, "Exception", "Spark", "parquet", "Parquet", "py4j"):
            assert leak not in text, (leak, text[:500])


PATTERN_POLICY = POLICY_HEAD.format(source="t.parquet") + """
a = { type = "text" }
regex = { type = "text" }
pat = { type = "text" }
format = { type = "text" }
"""
# Row predicates whose pattern argument is read from a private column, and the value of that
# column Spark cannot evaluate (an error whatever spark.sql.ansi.enabled says).
PATTERN_QUERIES = {
    "SELECT COUNT(*) FROM t WHERE regexp_matches(a, regex)": ("regex", "(" + SECRET),             # invalid regular expression
    "SELECT COUNT(*) FROM t WHERE a LIKE pat": ("pat", SECRET + "\\"),                         # ends in the escape character
    "SELECT COUNT(*) FROM t WHERE strftime(DATE '2020-01-01', format) = 'x'": ("format", "bogus"),  # invalid datetime pattern
}
# Spark raises on these values whatever spark.sql.ansi.enabled says (its Guarded(...) is the bare
# predicate), so one person's value could decide whether the query answers: Spark refuses a
# non-constant pattern or format before the charge instead (DP125, on every engine).


def pattern_outcomes(spark: Any, directory: Path, engine: str, extra_person: bool) -> dict[str, str]:
    rows = {"pid": list(range(120)), "a": ["abc"] * 120, "regex": ["a.c", "x", "^ab"] * 40,
            "pat": ["a%", "x", "abc"] * 40, "format": ["yyyy", "MM", "dd"] * 40}
    if extra_person:  # D' = D plus one person holding the three values Spark cannot evaluate
        rows["pid"].append(120)
        rows["a"].append("abc")
        for column, value in PATTERN_QUERIES.values():
            rows[column].append(value)
    directory.mkdir()
    pq.write_table(pa.table(rows), directory / "t.parquet")
    (directory / "policy.toml").write_text(PATTERN_POLICY, encoding="utf-8")
    outcomes = {}
    with dpsql.connect(policy=directory / "policy.toml", engine=engine, spark=spark if engine == "spark" else None,
                       random_seed=1) as connection:
        for sql in PATTERN_QUERIES:
            try:
                connection.execute(sql).fetchall()
                outcomes[sql] = "answered"
            except dpsql.Error as err:
                outcomes[sql] = str(err.code)
    return outcomes


@pytest.mark.parametrize("engine", [
    "duckdb",
    "spark",  # non-constant patterns are refused before the charge (DP125, dpsql/analysis/function_arguments.py)
])
def test_values_in_private_data_cannot_make_a_query_fail(spark: Any, tmp_path: Path, engine: str) -> None:
    d = pattern_outcomes(spark, tmp_path / "D", engine, extra_person=False)
    d2 = pattern_outcomes(spark, tmp_path / "D2", engine, extra_person=True)
    assert d2 == d  # whether a query answers cannot depend on one person's value


def test_failed_queries_print_nothing_to_stderr(con: dpsql.Connection, spark: Any, capfd: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark.logger import PySparkLogger

    # pyspark's query-context loggers write to the stderr they found when created (possibly not
    # the one captured here): a handler of ours on each sees every record they would print.
    seen = io.StringIO()
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        logger = PySparkLogger.getLogger(name)
        monkeypatch.setattr(logger, "handlers", [*logger.handlers])  # restored after the test
        logger.addHandler(logging.StreamHandler(seen))
    capfd.readouterr()
    with pytest.raises(UnsupportedQueryError):
        con.execute("SELECT COUNT(*) FROM people WHERE active + 1 > 2")  # a Spark analysis error with a SQL query context
    with pytest.raises(UnsupportedQueryError):
        con.execute("SELECT COUNT(*) FROM people WHERE regexp_matches(region, '(')")  # fails on the dry run's dummy row
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == "" and seen.getvalue() == "", (captured.err + seen.getvalue())[:500]
    # Negative control: pyspark's own SQLQueryContextLogger, switched back on, does log such a failure.
    monkeypatch.setattr(PySparkLogger.getLogger("SQLQueryContextLogger"), "disabled", False)
    with pytest.raises(Exception):  # noqa: B017 - pyspark's AnalysisException
        spark.sql("SELECT COUNT(*) FROM range(3) WHERE (id > 0) + 1 > 2").collect()
    assert "DATATYPE_MISMATCH" in seen.getvalue()


def test_explain_shows_spark_sql_and_no_secret_seed(con: dpsql.Connection) -> None:
    con.execute("SELECT region, COUNT(*) FROM people GROUP BY region").fetchall()  # draws the session's bounding seed
    seed = con.session._executor.calls.seeds["people"]
    before = con.ledger()
    # SMed's windows and A_samp's hashes pinned (bounded and declared columns default to the EM and report-noisy-max)
    cur = con.execute("EXPLAIN (VERBOSE) SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (quantile_mechanism = 'smed', mode_blocks = 300) "
                      "region, MODE(dept), MEDIAN(score) FROM people GROUP BY region")
    text = "\n".join(row[0] for row in cur.fetchall())
    assert "Engine SQL (spark):" in text
    assert "CONV(" in text and "`__dpsql_bounded_people`" in text and "`pid`" in text  # Spark SQL: HashBits, backticks
    assert ":seed" in text and ":mode_seed" in text and ":tie_seed" in text  # secret seeds stay named parameters
    assert "RESERVOIR_QUANTILE" not in text.upper() and "ROW_NUMBER() OVER" in text.upper()  # Spark's exact window path
    assert str(seed) not in text and str(seed)[:12] not in text
    assert con.ledger() == before  # EXPLAIN is free


def test_public_table_queries_run_exactly(con: dpsql.Connection, spark_data: SparkData) -> None:
    sql = "SELECT dept, floor * 10 AS f FROM depts WHERE floor > 2 ORDER BY dept"
    before = con.ledger()
    spark_rows = con.execute(sql).fetchall()
    with dpsql.connect(policy=spark_data.policy_path, engine="duckdb") as duck:
        assert duck.execute(sql).fetchall() == spark_rows
    assert len(spark_rows) == 6 and spark_rows[0] == ("finance", 60)
    assert con.ledger() == before  # public tables cost nothing

"""What DuckDB's TRY(...) turns into NULL, and what it does not: the facts dpsql's privacy argument
rests on, pinned in one place so the next DuckDB release that changes them fails here, loudly.

dpsql runs the analyst's row predicate inside TRY(...): a value that makes an allowlisted
expression fail must make that row's predicate NULL (false), never fail the query, or the
answer/error distinction would reveal the value. Each case below fails *without* TRY on a value
(so the guard is what keeps it quiet) and yields NULL with it. Out-of-memory is the exception:
TRY does not catch it, which is why dpsql bounds every row-level string statically (DP125,
dpsql/analysis/function_arguments.py) instead of relying on TRY.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import duckdb
import pytest

# name -> an expression over the one-row table below that raises on that row's values
CAUGHT_BY_TRY = {
    "invalid cast": "CAST(s AS INTEGER)",
    "invalid date cast": "CAST(s AS DATE)",
    "addition overflow": "big + 1",
    "multiplication overflow": "big * 2",
    "integer division by zero": "1 // z",
    "modulo by zero": "1 % z",
    "invalid code point": "chr(cp)",
    "date out of range": "d + to_days(CAST(big // 4294967296 AS INTEGER))",
    "substring offset out of range": "substring(s, big, big)",
}


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.execute(
        "CREATE TABLE t AS SELECT * FROM (VALUES ('abc', 9223372036854775807::BIGINT, 0, DATE '2020-01-01', 2000000)) "
        "v(s, big, z, d, cp)"
    )
    return connection


@pytest.mark.parametrize("expression", CAUGHT_BY_TRY.values(), ids=CAUGHT_BY_TRY.keys())
def test_try_turns_a_value_error_into_null(con: duckdb.DuckDBPyConnection, expression: str) -> None:
    with pytest.raises(duckdb.Error):  # the control: bare, the value fails the query
        con.execute(f"SELECT {expression} FROM t").fetchall()
    assert con.execute(f"SELECT TRY({expression}) FROM t").fetchall() == [(None,)]


def test_try_turns_a_data_pattern_error_into_null(con: duckdb.DuckDBPyConnection) -> None:
    # DuckDB 2.0.1 changed this one: an invalid *constant* pattern inside TRY is NULL too, so a dry
    # run with TRY no longer finds it; dpsql probes constant patterns bare instead (DP123).
    assert con.execute("SELECT TRY(regexp_matches(s, '(')) FROM t").fetchall() == [(None,)]
    with pytest.raises(duckdb.Error):
        con.execute("SELECT regexp_matches('', '(')").fetchall()


_OOM = textwrap.dedent("""
    import resource, sys, duckdb
    con = duckdb.connect()
    con.execute("SET threads = 1")
    con.execute("CREATE TABLE t AS SELECT 'a' AS s, 0 AS z")
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))  # a 3 GiB cap, as a server would have
    try:
        con.execute("SELECT TRY(length(repeat(s, 4000000000 + z))) FROM t").fetchall()
    except duckdb.OutOfMemoryException:
        print("raised")
    else:
        print("caught")
""")


def test_try_does_not_catch_out_of_memory() -> None:
    # One row asking for a 4 GB string under a 3 GiB address-space cap: the error escapes TRY.
    out = subprocess.run([sys.executable, "-c", _OOM], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "raised", out.stdout + out.stderr

"""statement_timeout on the analyst's path, through psycopg against a real `dpsql serve` over a
table large enough that its first query runs for seconds: the statement is cancelled with 57014
and a fixed text, the charge made before the engine ran stays in the ledger (a refund would make
the timeout an oracle), and the connection goes on."""

from __future__ import annotations

import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from dpsql.accounting.ledger import Ledger
from tests.security.server_harness import start_server

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")

ROWS = 6_000_000
TIMEOUT = 0.2


def _big_people(path: Path) -> None:
    """ROWS rows of the people schema (public synthetic values), written by DuckDB in a second or two."""
    con = duckdb.connect()
    con.execute(
        "COPY (SELECT range // 2 AS person_id, 18 + range % 70 AS age, CAST(range % 500000 AS DOUBLE) AS income, "
        "['engineering', 'sales', 'support'][1 + range % 3] AS dept, ['north', 'south'][1 + range % 2] AS region "
        f"FROM range({ROWS})) TO '{path}' (FORMAT parquet)"
    )
    con.close()


@pytest.mark.slow
def test_long_statement_is_cancelled_with_57014_and_the_charge_stands(tmp_path: Path, people_frame: pd.DataFrame) -> None:
    _big_people(tmp_path / "people.parquet")  # before the server starts: it loads its sources at startup
    server = start_server(tmp_path, None, f"statement_timeout = {TIMEOUT}\n")
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as con:
            started = time.monotonic()
            with pytest.raises(psycopg.errors.QueryCanceled) as info:
                # A key without declared values: its keyed relation (one pass over the 6M rows,
                # seconds) is built by this query, never prepared at startup.
                con.execute("SELECT region, COUNT(*) AS n FROM people GROUP BY region").fetchall()
            elapsed = time.monotonic() - started
            assert info.value.diag.message_primary == "canceling statement due to statement timeout"
            assert info.value.diag.sqlstate == "57014"
            assert elapsed < 30  # interrupted, not run to the end
            assert con.execute("SELECT 1").fetchone() == (1,)  # the connection goes on
        with Ledger(tmp_path / "ledger.sqlite") as ledger:
            assert float(ledger.spent("alice").epsilon) == pytest.approx(0.1)  # charged before the engine ran; kept
    finally:
        stderr = server.stop()
    assert "Traceback" not in stderr, stderr


@pytest.mark.slow
def test_long_outer_query_over_released_rows_is_cancelled(tmp_path: Path, people_frame: pd.DataFrame) -> None:
    # Post-processing runs in the session's released-rows database, not in the engine: the
    # timeout interrupts it too (a cross product of released rows is the way to make it slow:
    # 12^9 rows, far beyond the 10 s allowed; the first query, on a loaded machine, within them).
    server = start_server(tmp_path, people_frame, "statement_timeout = 10\n")
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as con:
            con.execute("SELECT dept, COUNT(*) AS n FROM people GROUP BY dept").fetchall()  # the engine is warm
            started = time.monotonic()
            with pytest.raises(psycopg.errors.QueryCanceled) as info:
                con.execute("WITH t AS (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) SELECT SUM(a.n * b.n + c.n * d.n "
                            "- e.n * f.n + g.n * h.n + i.n) FROM t a, t b, t c, t d, t e, t f, t g, t h, t i").fetchall()
            assert time.monotonic() - started < 60
            assert info.value.diag.sqlstate == "57014"
            assert con.execute("SELECT 1").fetchone() == (1,)
    finally:
        stderr = server.stop()
    assert "Traceback" not in stderr, stderr

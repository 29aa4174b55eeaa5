"""The catalog route (free, shared metadata DuckDB) as an attacker uses it, through psycopg
against a real `dpsql serve`: recursion, size-amplifying functions, generated rows, heavy joins
and DuckDB's own error text. Each is refused with a dpsql code or stopped by a limit; none is
charged, none shows engine text, and the server keeps answering."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pandas as pd
import pytest

from dpsql.accounting.ledger import Ledger
from tests.security.server_harness import ServerProcess, start_server

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")

CATALOG_TIMEOUT = 2
# Words only DuckDB's messages use: none may reach the client.
ENGINE_WORDS = ("duckdb", "binder error", "conversion error", "interrupt", "out of memory", "catalog error:", "parser error",
                "could not convert", "int32")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, people_frame: pd.DataFrame) -> Iterator[ServerProcess]:
    directory = tmp_path_factory.mktemp("catalog_route")
    process = start_server(directory, people_frame, f"catalog_timeout = {CATALOG_TIMEOUT}\ncatalog_memory_mb = 64\n")
    yield process
    stderr = process.stop()
    assert "Traceback" not in stderr, stderr


def _spent(server: ServerProcess) -> float:
    with Ledger(server.directory / "ledger.sqlite") as ledger:
        return float(ledger.spent("alice").epsilon)


def _refusal(server: ServerProcess, sql: str) -> psycopg.Error:
    with psycopg.connect(server.dsn(), autocommit=True) as con:
        with pytest.raises(psycopg.Error) as info:
            con.execute(sql).fetchall()
        assert con.execute("SELECT 1").fetchone() == (1,)  # the connection goes on
    error = info.value
    text = " ".join(str(part) for part in (error.diag.message_primary, error.diag.message_detail, error.diag.message_hint))
    assert not any(word in text.lower() for word in ENGINE_WORDS), text
    assert error.diag.sqlstate != "XX000", text
    return error


RECURSIVE = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3000000) SELECT count(*) FROM t"


def test_recursive_cte_over_a_catalog_table_is_refused(server: ServerProcess) -> None:
    before = _spent(server)
    started = time.monotonic()
    error = _refusal(server, RECURSIVE + ", pg_catalog.pg_class")
    assert error.diag.message_primary.startswith("DP402:") and error.diag.sqlstate == "0A000"
    assert time.monotonic() - started < CATALOG_TIMEOUT  # refused before running, not stopped by the timeout
    assert _spent(server) == before


def test_recursive_cte_reading_no_catalog_table_is_not_a_catalog_probe(server: ServerProcess) -> None:
    before = _spent(server)
    error = _refusal(server, RECURSIVE)  # the Session refuses it (it reads no policy table)
    assert error.diag.message_primary.startswith("DP"), error.diag.message_primary
    assert _spent(server) == before


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT repeat(relname, 400000000) FROM pg_catalog.pg_class",
        "SELECT length(repeat('x', 50000000))",
        "SELECT lpad(relname, 2000000000, 'x') FROM pg_class",
        "SELECT rpad('x', 2000000000)",
        "SELECT replace(relname, 'p', relname) FROM pg_class",
        "SELECT count(*) FROM pg_class, generate_series(1, 1000000000)",
        "SELECT string_agg(relname, ',') FROM pg_class, generate_series(1, 100000 * 100000) g",
        "SELECT format('%2000000000s', relname) FROM pg_class",  # a width pads: bounded formats take %s, %I, %L and %% only
        "SELECT format(relname, relname) FROM pg_class",  # a format read from the catalog
    ],
)
def test_size_amplifying_functions_are_refused(server: ServerProcess, sql: str) -> None:
    error = _refusal(server, sql)
    assert error.diag.message_primary.startswith("DP402:"), error.diag.message_primary


def test_generated_rows_without_a_catalog_read_are_not_catalog_probes(server: ServerProcess) -> None:
    for sql in ("SELECT count(*) FROM pg_class, range(100000000)", "SELECT count(*) FROM generate_series(1, 100000000)"):
        error = _refusal(server, sql)  # sent to the Session, which refuses it before any engine runs
        assert error.diag.message_primary.startswith("DP"), error.diag.message_primary


def test_bounded_series_and_usual_probes_still_answer(server: ServerProcess) -> None:
    with psycopg.connect(server.dsn(), autocommit=True) as con:
        assert con.execute("SELECT count(*) FROM pg_catalog.pg_namespace, generate_series(1, 10) g").fetchone()[0] > 0
        assert con.execute("SELECT version()").fetchone()[0].startswith("PostgreSQL 15")
        assert con.execute("SELECT 1").fetchone() == (1,)
        assert con.execute("SELECT * FROM unnest(current_schemas(true))").fetchall()


def test_engine_error_text_is_never_sent(server: ServerProcess) -> None:
    # DuckDB's message would quote the value ('Could not convert string "people" to INT32').
    error = _refusal(server, "SELECT CAST(relname AS INTEGER) FROM pg_catalog.pg_class")
    assert error.diag.message_primary == "DP400: catalog query not supported by the dpsql catalog emulation"


def test_string_doubling_through_ctes_is_stopped_by_the_memory_limit(server: ServerProcess) -> None:
    # Each CTE repeats the last one's text 8 times: 7 levels make 600 MB from 300 bytes, with only
    # allowlisted concatenation. The catalog's memory limit (64 MB here) stops it.
    ctes = ["a0 AS (SELECT string_agg(typname, ',') AS s FROM pg_catalog.pg_type)"]
    ctes += [f"a{i} AS (SELECT {' || '.join(['s'] * 8)} AS s FROM a{i - 1})" for i in range(1, 8)]
    error = _refusal(server, "WITH " + ", ".join(ctes) + " SELECT length(s), s FROM a7")
    assert error.diag.message_primary.startswith("DP403:") and error.diag.sqlstate == "53200"


@pytest.mark.slow
def test_heavy_catalog_join_is_stopped_by_the_timeout(server: ServerProcess) -> None:
    started = time.monotonic()
    # 39^6 = 3.5e9 rows, each with a concatenation: minutes of work without the limit.
    error = _refusal(server, "SELECT count(*) FROM pg_type a, pg_type b, pg_type c, pg_type d, pg_type e, pg_type f "
                             "WHERE a.typname || b.typname <> c.typname || d.typname || e.typname || f.typname")
    elapsed = time.monotonic() - started
    assert error.diag.message_primary.startswith("DP403:"), error.diag.message_primary
    assert error.diag.sqlstate in ("57014", "53200")
    assert elapsed < CATALOG_TIMEOUT + 5
    with psycopg.connect(server.dsn(), autocommit=True) as con:  # and the catalog still answers
        assert con.execute("SELECT count(*) FROM pg_catalog.pg_class").fetchone()[0] > 0

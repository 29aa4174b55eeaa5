"""Post-processing cannot exhaust `dpsql serve` (issue 25, "memory exhaustion after login").

An outer query runs over released rows, free of charge; it used to be able to make the server
hold far more than the released rows: `SELECT unnest(range(3000000)) FROM (<one release>) t`
fetched three million rows into the server process (269 MB -> 1,245 MB), outside DuckDB's memory
limit, and every connection opened a released-rows DuckDB of its own (about 2.4 MB each once
used, each with its own 512 MB limit). Through a real server, read from /proc:

- the row generator is refused before the charge (DP113) and the server's resident memory grows
  by less than MAX_GROWTH_MIB; a cross product of released rows (no generator) is refused at the
  row cap (DP129) within the same bound, and the same query with a LIMIT is answered;
- CONNECTIONS connections each running an outer query grow the server by less than
  MAX_CONNECTIONS_GROWTH_MIB (one released-rows database for the process).

Negative controls: the same checks against a server started with the allowlist and the cap
removed (the generator's rows are fetched: growth far above the bound), and with a released-rows
database per session (the connections' growth above its bound).
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from tests.security.server_harness import ServerProcess, start_server

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")

pytestmark = pytest.mark.slow

GENERATED_ROWS = 1_000_000
MAX_GROWTH_MIB = 96  # a million fetched rows took ~330 MiB before; refused, the server grows by a few MiB
CONNECTIONS = 40
MAX_CONNECTIONS_GROWTH_MIB = 40  # ~2.4 MiB per connection with a database each (~96 MiB), ~0.2 MiB shared
RELEASE = "(SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.001) COUNT(*) AS n FROM people)"
GENERATOR = f"SELECT unnest(range({GENERATED_ROWS})) AS x FROM {RELEASE} t"
DEPTS = "(SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01) dept, COUNT(*) AS n FROM people GROUP BY dept)"
CROSS = f"SELECT a.n, b.n AS m FROM {DEPTS} a, {DEPTS} b, {DEPTS} c, {DEPTS} d, {DEPTS} e"  # 12^5 = 248,832 rows

# The deliberately broken builds (run inside the server process before it starts).
NO_CAPS = """
import dpsql.analysis.post_processing as post
import dpsql.backend.auxiliary.released_db as released_db
post.check_outer_functions = lambda outer, sql: None
released_db.MAX_ROWS = 10**12
released_db.MAX_BYTES = 10**15
"""
DATABASE_PER_SESSION = """
import duckdb
import dpsql.backend.auxiliary.released_db as released_db
def _own(self):
    if self._con is None:
        self._con = duckdb.connect(":memory:", config=released_db._CONFIG)
    return self._con
released_db.ReleasedDatabase._connection = _own
"""


def _mib(server: ServerProcess) -> float:
    return server.rss_kib() / 1024


def _warm(server: ServerProcess) -> tuple[object, float]:
    con = psycopg.connect(server.dsn(), autocommit=True)
    con.execute(f"SELECT n FROM {RELEASE} t").fetchall()  # engine, bounded relation, released database: warm
    time.sleep(0.5)
    return con, _mib(server)


def _generator_growth(tmp_path: Path, people: pd.DataFrame, prelude: str) -> tuple[float, str | None, int]:
    """(growth in MiB, SQLSTATE or None, rows) of the generator query through a fresh server."""
    server = start_server(tmp_path, people, prelude=prelude)
    try:
        con, before = _warm(server)
        state, rows = None, 0
        try:
            rows = len(con.execute(GENERATOR).fetchall())  # type: ignore[attr-defined]
        except psycopg.Error as err:
            state = err.sqlstate
        growth = _mib(server) - before
        con.close()  # type: ignore[attr-defined]
        assert server.alive()
    finally:
        stderr = server.stop()
    assert "Traceback" not in stderr, stderr
    return growth, state, rows


def test_row_generator_is_refused_and_the_server_stays_small(tmp_path: Path, people_frame: pd.DataFrame) -> None:
    growth, state, rows = _generator_growth(tmp_path, people_frame, prelude="")
    assert state == "0A000" and rows == 0, (state, rows)  # DP113, before the charge
    assert growth < MAX_GROWTH_MIB, growth


def test_negative_control_without_the_caps_the_generator_fills_the_server(tmp_path: Path, people_frame: pd.DataFrame) -> None:
    growth, state, rows = _generator_growth(tmp_path, people_frame, prelude=NO_CAPS)
    assert state is None and rows == GENERATED_ROWS
    assert growth > MAX_GROWTH_MIB, growth  # the check above would catch this build


def test_cross_product_of_released_rows_is_capped(tmp_path: Path, people_frame: pd.DataFrame) -> None:
    server = start_server(tmp_path, people_frame)
    try:
        con, before = _warm(server)
        with pytest.raises(psycopg.errors.FeatureNotSupported) as info:
            con.execute(CROSS).fetchall()  # type: ignore[attr-defined]
        assert "DP129" in str(info.value) and "were charged" in str(info.value)
        assert _mib(server) - before < MAX_GROWTH_MIB
        assert len(con.execute(CROSS + " LIMIT 7").fetchall()) == 7  # type: ignore[attr-defined]
        con.close()  # type: ignore[attr-defined]
    finally:
        stderr = server.stop()
    assert "Traceback" not in stderr, stderr


def _connections_growth(tmp_path: Path, people: pd.DataFrame, prelude: str) -> float:
    server = start_server(tmp_path, people, f"max_connections = {CONNECTIONS + 5}\n", prelude=prelude)
    try:
        first, before = _warm(server)
        others = [psycopg.connect(server.dsn(), autocommit=True) for _ in range(CONNECTIONS - 1)]
        for con in others:
            assert len(con.execute(f"SELECT n * 2 AS twice FROM {RELEASE} t").fetchall()) == 1
        growth = _mib(server) - before
        for con in [first, *others]:
            con.close()  # type: ignore[attr-defined]
    finally:
        stderr = server.stop()
    assert "Traceback" not in stderr, stderr
    return growth


def test_connections_share_one_released_rows_database(tmp_path: Path, people_frame: pd.DataFrame) -> None:
    growth = _connections_growth(tmp_path, people_frame, prelude="")
    assert growth < MAX_CONNECTIONS_GROWTH_MIB, growth


def test_negative_control_a_database_per_session_grows_with_the_connections(tmp_path: Path, people_frame: pd.DataFrame) -> None:
    growth = _connections_growth(tmp_path, people_frame, prelude=DATABASE_PER_SESSION)
    assert growth > MAX_CONNECTIONS_GROWTH_MIB, growth

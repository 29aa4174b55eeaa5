"""pg8000 (pure Python, extended protocol) against `dpsql serve`."""

from __future__ import annotations

import pytest

from tests.integration.server.conftest import PASSWORDS, PgServer

pg8000 = pytest.importorskip("pg8000.dbapi", reason="pg8000 is not installed (pip install -e '.[test]')")


def test_query_and_error(pg_server: PgServer) -> None:
    con = pg8000.connect(host=pg_server.host, port=pg_server.port, user="alice", password=PASSWORDS["alice"], database="anydb")
    try:
        cur = con.cursor()
        cur.execute("SELECT dept, COUNT(*) AS n FROM people WHERE age > %s GROUP BY dept", (40,))
        rows = cur.fetchall()
        assert len(rows) == 12 and isinstance(rows[0][1], int)
        with pytest.raises(pg8000.DatabaseError) as info:
            cur.execute("SELECT income FROM people")
        assert info.value.args[0]["C"] == "0A000" and info.value.args[0]["M"].startswith("DP105")
    finally:
        con.close()

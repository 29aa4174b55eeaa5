"""psycopg2 against `dpsql serve` (client-side parameter interpolation, simple query protocol)."""

from __future__ import annotations

import pytest

from tests.integration.server.conftest import PgServer

psycopg2 = pytest.importorskip("psycopg2", reason="psycopg2 is not installed (pip install -e '.[test]')")


def test_query_with_parameters(pg_server: PgServer) -> None:
    con = psycopg2.connect(pg_server.dsn())
    try:
        cur = con.cursor()
        cur.execute("SELECT dept, COUNT(*) AS n, AVG(income) AS m FROM people WHERE age > %s GROUP BY dept", [40])
        rows = cur.fetchall()
        assert len(rows) == 12
        assert [d.name for d in cur.description] == ["dept", "n", "m"]
        assert isinstance(rows[0][1], int) and isinstance(rows[0][2], float)
        con.commit()
    finally:
        con.close()


def test_refusal_sqlstate(pg_server: PgServer) -> None:
    con = psycopg2.connect(pg_server.dsn())
    try:
        with pytest.raises(psycopg2.errors.FeatureNotSupported) as info:
            con.cursor().execute("SELECT * FROM people")
        assert info.value.pgcode == "0A000" and info.value.pgerror.startswith("ERROR:  DP")
    finally:
        con.close()

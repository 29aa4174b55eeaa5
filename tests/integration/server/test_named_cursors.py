"""Named (server-side) cursors of psycopg 3 and psycopg2: DECLARE runs the query once (charged once,
released like any answer), FETCH pages through that released answer, CLOSE drops it; a backward
move is refused with a clear "not accepted" message, never a syntax error."""

from __future__ import annotations

import pytest

from tests.integration.server.conftest import QUERY, PgServer

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")


def test_psycopg_named_cursor_fetches_the_released_answer_in_pages(pg_server: PgServer) -> None:
    spent = pg_server.spent("alice")
    with psycopg.connect(pg_server.dsn()) as con:  # a transaction, as named cursors need
        with con.cursor(name="pages") as cur:
            cur.execute("SELECT dept, COUNT(*) AS n FROM people WHERE age > %s GROUP BY dept", [20])
            assert [d.name for d in cur.description] == ["dept", "n"]
            first = cur.fetchmany(5)
            rest = cur.fetchall()
        assert len(first) == 5 and len(first) + len(rest) == 12
        assert len({dept for dept, _ in first + rest}) == 12
    assert pg_server.spent("alice").epsilon - spent.epsilon == pytest.approx(0.1)  # charged once, not per FETCH


def test_psycopg2_named_cursor(pg_server: PgServer) -> None:
    psycopg2 = pytest.importorskip("psycopg2")
    con = psycopg2.connect(pg_server.dsn())
    try:
        with con.cursor(name="named") as cur:
            cur.itersize = 4
            cur.execute(QUERY)
            rows = list(cur)
            assert len(rows) == 12 and cur.description[1].name == "n"
        con.commit()
    finally:
        con.close()


def test_cursor_statements_are_refused_clearly(pg_server: PgServer) -> None:
    with psycopg.connect(pg_server.dsn(), autocommit=True) as con:
        con.execute("DECLARE c CURSOR FOR SELECT COUNT(*) AS n FROM people")
        assert len(con.execute("FETCH ALL FROM c").fetchall()) == 1
        assert con.execute("FETCH NEXT FROM c").fetchall() == []
        with pytest.raises(psycopg.errors.FeatureNotSupported, match="not accepted by dpsql: cursors move forward only"):
            con.execute("FETCH BACKWARD 1 FROM c")
        con.execute("CLOSE c")
        with pytest.raises(psycopg.errors.InvalidCursorName, match='cursor "c" does not exist'):
            con.execute("FETCH 1 FROM c")
        with pytest.raises(psycopg.errors.SyntaxError, match="not accepted by dpsql"):
            con.execute("DECLARE CURSOR")

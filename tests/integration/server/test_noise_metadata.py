"""Noise metadata over the wire: a notice per private answer (intervals, cost, remaining budget),
SHOW dpsql.*, the dpsql.last_query / dpsql.ledger / dpsql.budget views (never charged), and the
opt-in `<col>_ci95` columns; through psycopg 3, psycopg2, psql and JDBC-free raw clients."""

from __future__ import annotations

import re

import pytest

from tests.integration.server.conftest import QUERY, PgServer
from tests.integration.server.test_psql import PSQL, psql

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")

# `n ± w`, or, where some counts are clipped at 0 (small groups), how many rows are `± w` and how
# many `[low, high]` (the server's noise is not seeded: either can happen).
NOTICE = re.compile(r"dpsql: 95% intervals: n (± [0-9.e+]+|(± [0-9.e+]+( to [0-9.e+]+)? in \d+ of 12 rows, )?"
                    r"\[low, high\] in \d+ of 12 rows \(per row in dpsql\.last_query\)) \(\w+\)\n"
                    r"dpsql: cost epsilon 0\.1, delta 0; remaining budget epsilon [0-9.]+, delta [0-9.e+-]+")  # fmt: skip


def _remaining_epsilon(text: str) -> float:
    match = re.search(r"remaining epsilon ([0-9.e+-]+)", text) or re.search(r"remaining budget epsilon ([0-9.e+-]+)", text)
    assert match, text
    return float(match.group(1))


def test_psycopg_gets_one_notice_per_private_answer(pg_server: PgServer) -> None:
    notices: list[str] = []
    with psycopg.connect(pg_server.dsn(), autocommit=True) as con:
        con.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
        con.execute(QUERY).fetchall()
        con.execute("SELECT 1").fetchall()  # a catalog probe: no notice
        con.execute(QUERY).fetchall()
    assert len(notices) == 2
    assert NOTICE.match(notices[0]), notices[0]
    # The remaining budget falls by what the second answer adds to the composition: more than
    # nothing, at most its epsilon 0.1 (the default accountant composes tighter than a sum).
    assert 0 < _remaining_epsilon(notices[0]) - _remaining_epsilon(notices[1]) <= 0.1 + 1e-9
    # And how many more such queries fit, from the ledger's costs and the budget: one fewer.
    left = [int(re.search(r"; (\d+) more queries like this fit", n).group(1)) for n in notices]  # type: ignore[union-attr]
    assert left[0] - left[1] == 1


def test_notice_says_why_a_cell_is_not_released(pg_server: PgServer) -> None:
    notices: list[str] = []
    with psycopg.connect(pg_server.dsn(), autocommit=True) as con:
        con.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
        rows = con.execute("SELECT MEDIAN(income) AS m FROM people").fetchall()
    assert len(rows) == 1 and len(notices) == 1
    if rows[0][0] is None:
        assert "⊥ in m: " in notices[0]
    else:
        assert ("m ± " in notices[0] or "m within ± " in notices[0]) and "⊥" not in notices[0]


def test_show_dpsql_settings_answer_from_the_session(pg_server: PgServer) -> None:
    with psycopg.connect(pg_server.dsn("bob"), autocommit=True) as con:
        assert con.execute("SHOW dpsql.epsilon").fetchone() == ("0.1",)
        assert float(con.execute("SHOW dpsql.delta").fetchone()[0]) < 1e-6
        before = con.execute("SHOW dpsql.budget").fetchone()[0]
        # bob's budget is shared with the other files of this worker's server: the total is fixed,
        # the remainder and the "N more queries like the last" tail depend on what ran before.
        assert "(of epsilon 1, delta 1e-06)" in before, before
        con.execute(QUERY).fetchall()
        after = con.execute("SHOW dpsql.budget").fetchone()[0]
        assert _remaining_epsilon(before) - _remaining_epsilon(after) == pytest.approx(0.1, abs=1e-4)
        con.execute("SET dpsql.epsilon = 0.5")
        assert con.execute("SHOW dpsql.epsilon").fetchone() == ("0.5",)
        assert con.execute("SHOW dpsql.ci_columns").fetchone() == ("off",)
        with pytest.raises(psycopg.Error, match="unrecognized configuration parameter"):
            con.execute("SHOW dpsql.nonsense")


def test_views_of_last_query_ledger_and_budget_are_never_charged(pg_server: PgServer) -> None:
    with psycopg.connect(pg_server.dsn(), autocommit=True) as con:
        answer = con.execute(QUERY).fetchall()
        spent = pg_server.spent("alice")
        cells = con.execute("SELECT row_number, column_name, value, ci95, low, high, mechanism, refused, epsilon "
                            "FROM dpsql.last_query ORDER BY row_number").fetchall()  # fmt: skip
        assert [(c[1], c[2]) for c in cells] == [("n", float(n)) for _, n in answer]
        for _, _, value, ci95, low, high, mechanism, refused, epsilon in cells:
            # A count's interval stops at 0 (clipped where value - ci95 would be negative).
            assert ci95 > 0 and low == pytest.approx(max(value - ci95, 0)) and high == pytest.approx(value + ci95)
            assert mechanism and refused is False and epsilon == pytest.approx(0.1)
        ledger = con.execute("SELECT query, epsilon FROM dpsql.ledger ORDER BY id DESC LIMIT 1").fetchone()
        assert ledger == (QUERY, pytest.approx(0.1))
        count = con.execute("SELECT count(*) FROM dpsql.ledger WHERE epsilon > %s", [0]).fetchone()[0]
        assert count >= 1
        budget = con.execute("SELECT total_epsilon, spent_epsilon, remaining_epsilon FROM dpsql.budget").fetchone()
        assert budget[0] == 10 and budget[1] + budget[2] == pytest.approx(10)
        assert 0 < budget[1] <= float(spent.epsilon) + 1e-9  # the accountant's composition, at most the plain sum
        (left,) = con.execute("SELECT queries_left FROM dpsql.budget").fetchone()
        assert isinstance(left, int) and left > 0  # queries like this connection's last one
    with psycopg.connect(pg_server.dsn(), autocommit=True) as other:  # per analyst: a BI pool's next connection
        again = other.execute("SELECT row_number, column_name, value, ci95, low, high, mechanism, refused, epsilon "
                              "FROM dpsql.last_query ORDER BY row_number").fetchall()  # fmt: skip
        assert again == cells
        (left_there,) = other.execute("SELECT queries_left FROM dpsql.budget").fetchone()
        assert left_there == left  # from the analyst's last charge in the ledger, not this connection's (none)
    assert pg_server.spent("alice") == spent  # reading the views charged nothing


def test_views_do_not_mix_with_private_tables(pg_server: PgServer) -> None:
    with psycopg.connect(pg_server.dsn(), autocommit=True) as con:
        spent = pg_server.spent("alice")
        with pytest.raises(psycopg.Error):
            con.execute("SELECT * FROM dpsql.ledger, people").fetchall()
        assert pg_server.spent("alice") == spent


def test_ci_columns_opt_in_per_connection(pg_server: PgServer) -> None:
    with psycopg.connect(pg_server.dsn(), autocommit=True) as con:
        con.execute("SET dpsql.ci_columns = on")
        cur = con.execute(QUERY)
        assert [d.name for d in cur.description] == ["dept", "n", "n_ci95", "n_ci_low", "n_ci_high"]
        rows = cur.fetchall()
        assert len(rows) == 12 and all(isinstance(w, float) and w > 0 and 0 <= lo <= n <= hi for _, n, w, lo, hi in rows)
        last = con.execute("SELECT ci95, low, high FROM dpsql.last_query ORDER BY row_number").fetchall()
        assert [w for w, _, _ in last] == pytest.approx([w for _, _, w, _, _ in rows])
        # Prepared (Describe before Execute) agrees with the rows.
        cur = con.execute("SELECT dept, COUNT(*) AS n FROM people WHERE age > %s GROUP BY dept", [30], prepare=True)
        assert [d.name for d in cur.description] == ["dept", "n", "n_ci95", "n_ci_low", "n_ci_high"] and len(cur.fetchone()) == 5
        with pytest.raises(psycopg.Error, match="requires a Boolean value"):
            con.execute("SET dpsql.ci_columns = maybe")
    with psycopg.connect(pg_server.dsn(), autocommit=True) as con:  # a new connection: off again
        assert [d.name for d in con.execute(QUERY).description] == ["dept", "n"]


def test_psycopg2_exposes_the_notice(pg_server: PgServer) -> None:
    psycopg2 = pytest.importorskip("psycopg2")
    con = psycopg2.connect(pg_server.dsn())
    try:
        con.autocommit = True
        with con.cursor() as cur:
            cur.execute(QUERY)
            cur.fetchall()
            cur.execute("SHOW dpsql.budget")
            assert cur.fetchone()[0].startswith("remaining epsilon ")
        assert len(con.notices) == 1 and NOTICE.search(con.notices[0])
    finally:
        con.close()


@pytest.mark.skipif(PSQL is None, reason="psql is not installed")
def test_psql_shows_the_notice(pg_server: PgServer) -> None:
    result = psql(pg_server, "-c", QUERY)
    assert result.returncode == 0, result.stderr
    assert "NOTICE:  dpsql: 95% intervals: n " in result.stderr
    assert "remaining budget epsilon" in result.stderr


def test_notice_says_when_the_noise_swamps_a_value(pg_server: PgServer) -> None:
    notices: list[str] = []
    with psycopg.connect(pg_server.dsn(), autocommit=True) as con:
        con.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
        rows = con.execute("SELECT dept, COUNT(*) AS n FROM people WHERE age > 85 GROUP BY dept").fetchall()
        widths = [w for (w,) in con.execute("SELECT ci95 FROM dpsql.last_query ORDER BY row_number").fetchall()]
    swamped = sum(1 for (_, n), w in zip(rows, widths) if abs(n) <= w)
    assert swamped > 0  # small groups at epsilon 0.1: the noise dominates
    assert f"dpsql: n: the 95% interval is wider than the value in {swamped} of 12 rows" in notices[0]
    assert "a larger epsilon (SET dpsql.epsilon), coarser groups or tighter policy bounds would help" in notices[0]

"""BI tools' shapes over aggregated queries, through `dpsql serve` with psycopg: Power BI's TOP_N
wrapper, Metabase and Superset sources that aggregate, UNION ALL, ROLLUP, EXPLAIN, and a
refusal with its SQLSTATE and caret position."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from tests.integration.server.conftest import PgServer

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")

INNER = 'select "dept", count(*) as "n" from "public"."people" "$Table" group by "dept"'


@pytest.mark.parametrize("sql", [
    # Power BI (PostgreSQL connector): TOP_N over the query it folds
    f'select "rows"."dept" as "dept", "rows"."n" as "n" from ({INNER}) "rows" order by "n" desc limit 1000001',
    # Metabase: an aggregated question used as the source of another
    'SELECT "source"."dept" AS "dept", "source"."count" AS "count" FROM (SELECT "public"."people"."dept" AS "dept", '
    'COUNT(*) AS "count" FROM "public"."people" GROUP BY "public"."people"."dept" ORDER BY "public"."people"."dept" ASC) '
    'AS "source" LIMIT 2000',
    # Superset: a chart over an aggregated virtual dataset
    'SELECT dept AS dept, sum(n) AS "SUM(n)" FROM (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) AS virtual_table '
    'GROUP BY dept ORDER BY "SUM(n)" DESC LIMIT 10000',
])
def test_bi_wrappers_over_aggregates_cost_the_inner_query(pg_server: PgServer, sql: str) -> None:
    before = pg_server.spent("alice")
    with psycopg.connect(pg_server.dsn()) as con:
        rows = con.execute(sql).fetchall()
    assert len(rows) == 12 and all(isinstance(n, (int, Decimal)) for _, n in rows)  # SUM(BIGINT) is NUMERIC
    assert pg_server.spent("alice").epsilon - before.epsilon <= Fraction(1, 10)  # one release at the default epsilon


def test_union_all_and_rollup_over_the_wire(pg_server: PgServer) -> None:
    with psycopg.connect(pg_server.dsn()) as con:
        union = con.execute("SELECT 'all' AS k, COUNT(*) AS n FROM people UNION ALL "
                            "SELECT 'old', COUNT(*) FROM people WHERE age > 60").fetchall()
        rollup = con.execute("SELECT dept, COUNT(*) AS n, GROUPING(dept) AS g FROM people GROUP BY ROLLUP(dept) "
                             "ORDER BY g, dept").fetchall()
        cur = con.execute("SELECT dept, n * 2 AS twice FROM (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) t")
        names = [d.name for d in cur.description]
    assert [k for k, _ in union] == ["all", "old"]
    assert len(rollup) == 13 and rollup[-1][0] is None and rollup[-1][2] == 1
    assert names == ["dept", "twice"]


def test_explain_and_refusal_over_the_wire(pg_server: PgServer) -> None:
    before = pg_server.spent("alice")
    with psycopg.connect(pg_server.dsn(), autocommit=True) as con:
        plan = [r[0] for r in con.execute("EXPLAIN SELECT dept, COUNT(*) AS n FROM people GROUP BY ROLLUP(dept)").fetchall()]
        with pytest.raises(psycopg.errors.FeatureNotSupported) as info:
            con.execute("SELECT * FROM (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) t JOIN people p ON p.dept = t.dept")
    assert any(line.startswith("Release 2 of 2") for line in plan)
    diag = info.value.diag
    assert diag.message_primary.startswith("DP126:") and diag.statement_position == str(
        "SELECT * FROM (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) t JOIN ".__len__() + 1)
    assert pg_server.spent("alice") == before


def test_rollup_totals_add_up_over_the_wire_with_psycopg2(pg_server: PgServer) -> None:
    """A dashboard's ROLLUP through `dpsql serve` and psycopg2: the total row equals the sum of
    the department rows exactly (COUNT and SUM), and `consistent = false` (the negative control)
    leaves them apart."""
    psycopg2 = pytest.importorskip("psycopg2")
    sql = "SELECT {hint}dept, COUNT(*) AS n, SUM(income) AS s FROM people GROUP BY ROLLUP(dept) ORDER BY GROUPING(dept), dept"
    con = psycopg2.connect(pg_server.dsn())
    try:
        con.autocommit = True
        cur = con.cursor()
        cur.execute("SET dpsql.round = off")  # the exact released values (rounding is presentation only)
        cur.execute(sql.format(hint=""))
        rows = cur.fetchall()
        cur.execute(sql.format(hint="WITH DIFFERENTIAL_PRIVACY OPTIONS (consistent = false) "))
        apart = cur.fetchall()
    finally:
        con.close()
    assert len(rows) == 13 and rows[-1][0] is None
    assert sum(r[1] for r in rows[:-1]) == rows[-1][1] and sum(r[2] for r in rows[:-1]) == rows[-1][2]
    assert sum(r[1] for r in apart[:-1]) != apart[-1][1]

"""Post-processing over released results, UNION ALL and grouping sets, through dpsql.connect.

What must hold: the outer query costs nothing beyond its releases, each release is charged once
(one ledger entry for the statement), the outer query reads released rows only (and its
database cannot reach anything else), intervals pass through unchanged for copied columns and
are dropped for derived ones, and every refusal comes before the charge.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest
from sqlglot import parse_one

import dpsql
from dpsql.backend.auxiliary.released_db import ReleasedDatabase, ReleasedTable
from dpsql.errors import EngineError, Error

INNER = "SELECT dept, COUNT(*) AS n, SUM(income) AS s FROM people GROUP BY dept"


def connect(people: pd.DataFrame, policy: Path, seed: int = 7) -> dpsql.Connection:
    return dpsql.connect(tables={"people": people}, policy=policy, random_seed=seed)


def test_wrapper_releases_what_the_inner_query_releases_at_its_cost(people: pd.DataFrame, policy_path: Path) -> None:
    # Same seed, same draws: the wrapped query's rows are the inner query's rows, filtered.
    with connect(people, policy_path) as con:
        inner = con.execute(INNER).fetchall()
        inner_cost = con.session.ledger_entries()[-1].cost.epsilon
    with connect(people, policy_path) as con:
        cur = con.execute(f"SELECT * FROM ({INNER}) t WHERE n > 100 ORDER BY n DESC LIMIT 3")
        rows = cur.fetchall()
        entries = con.session.ledger_entries()
    expected = sorted([r for r in inner if r[1] > 100], key=lambda r: -r[1])[:3]
    assert rows == expected
    assert len(entries) == 1 and entries[0].cost.epsilon == inner_cost  # no extra cost, charged once


def test_intervals_pass_through_for_copied_columns_and_are_dropped_for_derived_ones(people: pd.DataFrame, policy_path: Path) -> None:
    with connect(people, policy_path) as con:
        cur = con.execute(INNER)
        inner_info = cur.noise_info[1]
    with connect(people, policy_path) as con:
        cur = con.execute(f"SELECT dept, n, n * 2 AS twice, s / n AS mean, SUM(n) OVER () AS total, "
                          f"RANK() OVER (ORDER BY n DESC) AS r FROM ({INNER}) t")
        info = cur.noise_info
        cells = cur.cell_ci95
    assert info[0] is None  # a public key: exact
    assert info[1]["ci95"] == inner_info["ci95"] and info[1]["mechanism"] == "laplace"
    for derived in info[2:]:
        assert derived["ci95"] is None and "post-processed (no interval)" in derived["mechanism"]
    assert all(c[1] == inner_info["ci95"] and c[2] is None for c in cells)


def test_union_all_charges_the_sum_in_one_entry(people: pd.DataFrame, policy_path: Path) -> None:
    sql = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.2) 'all' AS k, COUNT(*) AS n FROM people "
           "UNION ALL SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.3) 'old', COUNT(*) FROM people WHERE age > 60")
    with connect(people, policy_path) as con:
        assert con.session.cost_of(sql).epsilon == Fraction(1, 2)
        rows = con.execute(sql).fetchall()
        entries = con.session.ledger_entries()
    assert [r[0] for r in rows] == ["all", "old"]
    assert len(entries) == 1 and entries[0].cost.epsilon == Fraction(1, 2)
    assert len(entries[0].params["releases"]) == 2


def test_rollup_rows_costs_and_grouping(people: pd.DataFrame, policy_path: Path) -> None:
    sql = ("SELECT dept, region, COUNT(*) AS n, GROUPING(dept, region) AS g FROM people "
           "GROUP BY ROLLUP(dept, region) ORDER BY g, dept, region")
    with connect(people, policy_path) as con:
        cur = con.execute(sql)
        rows = cur.fetchall()
        entries = con.session.ledger_entries()
    by_g: dict[int, list[tuple[object, ...]]] = {}
    for row in rows:
        by_g.setdefault(row[3], []).append(row)
    assert set(by_g) <= {0, 1, 3} and len(by_g[1]) == 12 and len(by_g[3]) == 1
    assert all(r[1] is None for r in by_g[1]) and by_g[3][0][:2] == (None, None)
    assert entries[0].cost.epsilon == Fraction(1, 10)  # the query's epsilon, split across 3 sets


def test_a_rolled_up_key_stays_the_argument_of_its_aggregates(people: pd.DataFrame, policy_path: Path) -> None:
    # In the () set the key age is rolled up (NULL as an output), but MEDIAN(age, b) still ranks
    # every row's age, as in SQL; a bounded quantile is an anonymous call, not an AggFunc.
    sql = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-6) age, MEDIAN(age, 10) AS m, IQR(age) AS q "
           "FROM people GROUP BY ROLLUP(age)")
    with connect(people, policy_path) as con:
        lines = [row[0] for row in con.execute("EXPLAIN " + sql).fetchall()]
    total = [line for line in lines if "grouping set ()" in line or line.strip().startswith("Query: SELECT") and "GROUP BY" not in line]
    assert any("MEDIAN(age, 10)" in line and "IQR(age)" in line for line in total), total
    assert not any("MEDIAN(NULL" in line or "IQR(NULL" in line for line in lines)


def test_cube_releases_every_combination_of_public_keys(people: pd.DataFrame, policy_path: Path) -> None:
    with connect(people, policy_path) as con:
        rows = con.execute("SELECT dept, COUNT(*) AS n FROM people GROUP BY CUBE(dept)").fetchall()
    assert len(rows) == 13 and rows[-1][0] is None


@pytest.mark.parametrize("sql, code", [
    (f"SELECT * FROM ({INNER}) t JOIN people p ON p.dept = t.dept", "DP126"),
    ("SELECT age FROM people UNION ALL SELECT COUNT(*) FROM people", "DP126"),
    (f"SELECT * FROM ({INNER}) t WHERE income > 3", "DP111"),
    ("SELECT COUNT(*) FROM people UNION ALL SELECT dept, COUNT(*) FROM people GROUP BY dept", "DP127"),
    (f"SELECT * FROM ({INNER}) t WHERE dept > 3", "DP127"),
    ("SELECT dept, COUNT(*) AS n FROM people GROUP BY ROLLUP(dept) HAVING dept = 'hr'", "DP129"),
])
def test_refusals_come_before_the_charge(people: pd.DataFrame, policy_path: Path, sql: str, code: str) -> None:
    with connect(people, policy_path) as con:
        with pytest.raises(Error) as info:
            con.execute(sql)
        assert info.value.code == code, info.value
        assert con.session.ledger_entries() == []


def test_explain_and_describe_need_no_data_or_budget(people: pd.DataFrame, policy_path: Path) -> None:
    sql = f"SELECT dept, n * 2 AS twice FROM ({INNER}) t"
    with connect(people, policy_path) as con:
        lines = [r[0] for r in con.execute(f"EXPLAIN {sql}").fetchall()]
        description = con.session.describe(sql)
        assert con.session.ledger_entries() == []
    assert any(line.startswith("Release 1 of 1") for line in lines)
    assert any(line.startswith("Outer query (released rows only)") for line in lines)
    assert [c.name for c in description.columns] == ["dept", "twice"] and description.noisy == (False, True)


def test_outer_query_database_holds_released_rows_only() -> None:
    # Even a query that names a private relation or a file finds nothing there.
    db = ReleasedDatabase()
    table = ReleasedTable("__dpsql_released_0", ("n",), ("BIGINT",), [(5,)])

    def text(sql: str) -> str:
        return db.render([table], parse_one(sql, dialect="duckdb"))

    try:
        assert db.run([table], text("SELECT n FROM __dpsql_released_0")).rows == [(5,)]
        for sql in ("SELECT * FROM people", "SELECT * FROM __dpsql_bounded_people", "SELECT * FROM read_csv('/etc/passwd')",
                    "SELECT * FROM __dpsql_released_0 r, read_text('/etc/hostname') f"):
            with pytest.raises(EngineError):
                db.run([table], text(sql))
        # Between statements, the released rows are gone (their frames were unregistered).
        with pytest.raises(EngineError):
            db.run([], "SELECT * FROM __dpsql_frame_0")
        with pytest.raises(EngineError):
            db.run([], "SET enable_external_access = true")
    finally:
        db.close()


def test_rollup_of_an_expression_hints_at_a_subquery_that_is_answered(people: pd.DataFrame, policy_path: Path) -> None:
    with connect(people, policy_path) as con:
        with pytest.raises(Error) as info:
            con.execute("SELECT COUNT(*) AS n FROM people GROUP BY ROLLUP(age / 10)")
        assert info.value.code == "DP129" and "subquery" in str(info.value)
        rows = con.execute("SELECT band, COUNT(*) AS n FROM (SELECT age / 10 AS band FROM people) t "
                           "GROUP BY ROLLUP (band)").fetchall()
    assert rows and rows[-1][0] is None  # the rolled-up total row


def test_budget_figures_after_a_post_processing_statement_describe_it(people: pd.DataFrame, policy_path: Path) -> None:
    # A plain query at epsilon 0.1, then a UNION ALL of two releases (0.2 + 0.3): "queries left"
    # and SHOW dpsql.budget must count statements like the UNION ALL just charged, not like the
    # plain query before it (which is what they said when post-processing charges were not counted).
    union = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.2) COUNT(*) AS n FROM people UNION ALL "
             "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.3) COUNT(*) AS n FROM people WHERE age > 40")
    with connect(people, policy_path) as con:
        con.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) COUNT(*) FROM people").fetchall()
        after_plain = con.queries_left
        con.execute(union).fetchall()
        charged = con.ledger()[-1].cost
        assert charged.epsilon == Fraction(1, 2)
        remaining = con.session.remaining.epsilon
        assert con.queries_left == int(remaining // charged.epsilon) != int(remaining // Fraction(1, 10))
        assert after_plain == int((remaining + charged.epsilon) // Fraction(1, 10))

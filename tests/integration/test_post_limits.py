"""What the outer query of a post-processing query may make the process hold (issue 25).

- Functions: the outer query's allowlist (analysis/post_functions.py) refuses, before the charge
  (DP113), everything that builds rows or lists over released rows; the usual post-processing
  functions stay accepted. Negative control: without the allowlist, `unnest(range(N))` returns
  N rows per released row (the refusal test would fail).
- Rows and bytes: an outer query returning more than MAX_ROWS rows or MAX_BYTES of values is
  refused (DP129, after the charge, without fetching the rest); with a LIMIT it is answered.
  Negative control: with the cap lifted, the same cross product returns all its rows.
- One database: every session's outer queries run in one DuckDB of the process, each through its
  own connection, which cannot see another session's released rows.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from sqlglot import parse_one

import dpsql
import dpsql.analysis.post_processing as post
import dpsql.backend.auxiliary.released_db as released_db
from dpsql.backend.auxiliary.released_db import ReleasedDatabase, ReleasedTable
from dpsql.errors import EngineError, Error
from tests.conftest import make_policy_text

DEPTS = "(SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01) dept, COUNT(*) AS n FROM people GROUP BY dept)"
ONE = "(SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01) COUNT(*) AS n FROM people)"
CROSS = f"SELECT a.n, b.n AS m FROM {DEPTS} a, {DEPTS} b, {DEPTS} c, {DEPTS} d, {DEPTS} e"  # 12^5 = 248,832 rows


@pytest.fixture
def policy_path(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(make_policy_text(), encoding="utf-8")
    return path


def connect(people: pd.DataFrame, policy: Path) -> dpsql.Connection:
    return dpsql.connect(tables={"people": people}, policy=policy, random_seed=3)


GENERATORS = [
    f"SELECT unnest(range(1000)) AS x FROM {ONE} t",
    f"SELECT range(1000) AS x FROM {ONE} t",
    f"SELECT generate_series(1, 1000) AS x FROM {ONE} t",
    f"SELECT list_transform(range(1000), v -> v * n) AS x FROM {ONE} t",
    f"SELECT [n, n, n] AS x FROM {ONE} t",
    f"SELECT {{'a': n}} AS x FROM {ONE} t",
    f"SELECT CAST(n AS BIGINT[]) AS x FROM {ONE} t",
    f"SELECT string_agg(dept, ',') AS x FROM {DEPTS} t",
    f"SELECT list(n) AS x FROM {DEPTS} t",
    f"SELECT n FROM {DEPTS} t WHERE n IN (SELECT unnest(range(1000)))",
    f"SELECT string_split(dept, 'e') AS x FROM {DEPTS} t",
]


@pytest.mark.parametrize("sql", GENERATORS)
def test_row_and_list_builders_are_refused_before_the_charge(people: pd.DataFrame, policy_path: Path, sql: str) -> None:
    with connect(people, policy_path) as con:
        with pytest.raises(Error) as info:
            con.execute(sql)
        assert info.value.code == "DP113", info.value
        assert "outer query of a post-processing query" in info.value.message
        assert con.session.ledger_entries() == []


ORDINARY = [
    f"SELECT dept, round(n / 3.0, 1) AS third, CASE WHEN n > 100 THEN 'big' ELSE 'small' END AS size FROM {DEPTS} t",
    f"SELECT dept, row_number() OVER (ORDER BY n DESC) AS r, lag(n) OVER (ORDER BY n) AS previous FROM {DEPTS} t",
    f"SELECT SUM(n) AS total, AVG(n) AS mean, MAX(n) AS top, COUNT(*) AS k FROM {DEPTS} t",
    f"SELECT upper(dept) AS d, coalesce(n, 0) AS n, CAST(n AS VARCHAR) AS text FROM {DEPTS} t ORDER BY n LIMIT 3",
]


@pytest.mark.parametrize("sql", ORDINARY)
def test_ordinary_post_processing_functions_are_answered(people: pd.DataFrame, policy_path: Path, sql: str) -> None:
    with connect(people, policy_path) as con:
        assert con.execute(sql).fetchall()


def test_negative_control_without_the_allowlist_a_generator_multiplies_rows(people: pd.DataFrame, policy_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(post, "check_outer_functions", lambda outer, sql: None)
    with connect(people, policy_path) as con:
        assert len(con.execute(GENERATORS[0]).fetchall()) == 1000  # the refusal test would fail on this build


def test_more_rows_than_the_cap_are_refused_after_the_charge(people: pd.DataFrame, policy_path: Path) -> None:
    with connect(people, policy_path) as con:
        with pytest.raises(Error) as info:
            con.execute(CROSS)
        assert info.value.code == "DP129" and "were charged" in info.value.message, info.value
        assert f"{released_db.MAX_ROWS:,} rows" in info.value.message
        assert len(con.session.ledger_entries()) == 1  # charged: nothing is refunded
        assert len(con.execute(CROSS + " LIMIT 10").fetchall()) == 10


def test_more_bytes_than_the_cap_are_refused(people: pd.DataFrame, policy_path: Path) -> None:
    # 12^3 = 1,728 rows of 65,536-character strings: 108 MiB of values, over MAX_BYTES, under MAX_ROWS.
    sql = f"SELECT lpad(a.dept, 65536, 'x') AS s FROM {DEPTS} a, {DEPTS} b, {DEPTS} c"
    with connect(people, policy_path) as con:
        with pytest.raises(Error) as info:
            con.execute(sql)
        assert info.value.code == "DP129", info.value
        assert len(con.execute(sql + " LIMIT 100").fetchall()) == 100


def test_negative_control_with_the_cap_lifted_every_row_is_fetched(people: pd.DataFrame, policy_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(released_db, "MAX_ROWS", 10**9)
    with connect(people, policy_path) as con:
        assert len(con.execute(CROSS).fetchall()) == 12**5  # the cap test would fail on this build


def test_sessions_share_one_database_and_see_only_their_own_released_rows() -> None:
    first, second = ReleasedDatabase(), ReleasedDatabase()
    table = ReleasedTable("__dpsql_released_0", ("n",), ("BIGINT",), [(5,)])
    sql = first.render([table], parse_one("SELECT n FROM __dpsql_released_0", dialect="duckdb"))
    try:
        assert first.run([table], sql).rows == [(5,)]
        # One database: the same instance's memory limit, seen from two connections of their own.
        settings = "SELECT current_setting('memory_limit')"
        assert first.run([], settings).rows == second.run([], settings).rows
        assert first._connection() is not second._connection()
        # The first session's released rows were parameters of its statement: nothing stays for
        # the second to read, by the released table's name or any other.
        assert second.run([], "SELECT COUNT(*) FROM duckdb_tables()").rows == [(0,)]
        assert second.run([], "SELECT COUNT(*) FROM duckdb_views() WHERE NOT internal").rows == [(0,)]
        for name in ("__dpsql_released_0", "__dpsql_frame_0", "__dpsql_frame_0_0"):
            with pytest.raises(EngineError):
                second.run([], f"SELECT * FROM {name}")
    finally:
        first.close()
        second.close()

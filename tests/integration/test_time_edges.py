"""Dates and timestamps Python cannot hold (DuckDB's 'infinity', years past 9999) and unbounded
date keys.

An infinite date held by one person used to make `GROUP BY day` and `MODE(day)` fail with a
Python conversion error (an error channel: it said whether anyone holds such a date). The source
view now maps such values to NULL, so the neighbouring tables (with and without that person)
both answer. `date_trunc` of an unbounded date column keys partition selection by dates (it used
to cast them to integers, which made every key NULL)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pytest

import dpsql

POLICY = """
[budget]
epsilon = 1000000
delta = 1e-3
default_query_epsilon = 10000
default_query_delta = 1e-6
[tables.ev]
privacy_unit = "pid"
max_rows = 1
[tables.ev.columns.pid]
type = "int"
[tables.ev.columns.day]
type = "date"
[tables.ev.columns.at]
type = "timestamp"
"""

QUERIES = [
    "SELECT day, COUNT(*) FROM ev GROUP BY day",
    "SELECT date_trunc('hour', at) AS h, COUNT(*) FROM ev GROUP BY h",  # a bare timestamp is DP141
    "SELECT MODE(day) FROM ev",
    "SELECT date_trunc('month', day) AS m, COUNT(*) FROM ev GROUP BY m",
]


def _database(tmp_path: Path, extra: list[str]) -> Path:
    path = tmp_path / f"ev{len(extra)}.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE ev AS SELECT i AS pid, DATE '2020-01-01' + (i % 40)::INT AS day, "
                "TIMESTAMP '2020-01-01 00:00:00' + to_hours(i % 3) AS at FROM range(4000) t(i)")
    for row in extra:
        con.execute(f"INSERT INTO ev VALUES {row}")
    con.close()
    return path


@pytest.mark.parametrize("extra", [
    ["(99999, 'infinity'::DATE, 'infinity'::TIMESTAMP)"],
    ["(99999, '-infinity'::DATE, '-infinity'::TIMESTAMP)"],
    ["(99999, '12000-01-01'::DATE, '12000-01-01 00:00:00'::TIMESTAMP)"],
])
def test_one_person_with_an_unrepresentable_date_changes_no_answer_shape(tmp_path: Path, extra: list[str]) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    answers = []
    for rows in ([], extra):  # neighbouring tables: without and with the person
        with dpsql.connect(database=str(_database(tmp_path, rows)), policy=str(policy), random_seed=7) as con:
            answers.append([sorted(con.execute(q).fetchall(), key=repr) for q in QUERIES])
    without, with_person = answers
    for query, a, b in zip(QUERIES, without, with_person):
        assert [r[0] for r in a] == [r[0] for r in b], query  # same keys, none of them the odd date
        for row in b:
            assert row[0] is None or isinstance(row[0], (dt.date, dt.datetime)), query


def test_date_trunc_of_an_unbounded_date_keys_by_date(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    with dpsql.connect(database=str(_database(tmp_path, [])), policy=str(policy), random_seed=8) as con:
        rows = con.execute("SELECT date_trunc('month', day) AS m, COUNT(*) FROM ev GROUP BY m ORDER BY m").fetchall()
    assert [r[0] for r in rows] == [dt.date(2020, 1, 1), dt.date(2020, 2, 1)]
    assert [round(r[1], -1) for r in rows] == [3100, 900]

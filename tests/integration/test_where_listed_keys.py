"""GROUP BY a column without declared values whose keys the WHERE lists (`age BETWEEN 25 AND 30`,
`age IN (25, 27)`, `c = v`): those keys are the query's public domain (constants in the SQL, like
Tumult's KeySet), released all, empty ones too, without partition selection (no delta). The
privacy unit and identifiers stay refused; a range of more than MAX_WHERE_KEYS values keeps
partition selection."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.demo.people import generate_people, policy_text

PEOPLE = generate_people(4000)


def _connect(tmp_path: Path, text: str, seed: int = 5) -> dpsql.Connection:
    path = tmp_path / f"policy{abs(hash(text)) % 10**8}.toml"
    path.write_text(text, encoding="utf-8")
    return dpsql.connect(policy=path, tables={"people": PEOPLE}, random_seed=seed)


def _rows(con: dpsql.Connection, sql: str) -> tuple[list[tuple[object, ...]], object]:
    cur = con.cursor()
    cur.execute(sql)
    return cur.fetchall(), con.session.compile(sql).compiled.plan.cost  # type: ignore[attr-defined]


def test_a_where_range_lists_the_keys_of_an_integer_column(tmp_path: Path) -> None:
    con = _connect(tmp_path, policy_text(None))
    rows, cost = _rows(con, "SELECT age, COUNT(*) AS n FROM people WHERE age BETWEEN 25 AND 30 GROUP BY age ORDER BY age")
    assert [r[0] for r in rows] == [25, 26, 27, 28, 29, 30]
    assert cost.delta == 0  # no partition selection
    explain = "\n".join(r[0] for r in con.execute("EXPLAIN SELECT age, COUNT(*) FROM people WHERE age >= 25 AND age < 31 "
                                                   "GROUP BY age").fetchall())
    assert "PartitionSelection" not in explain and "all 6 keys the WHERE lists (constants of the query) released" in explain


def test_the_answer_is_the_release_with_those_values_declared(tmp_path: Path) -> None:
    # The same release written by hand: the policy declares the keys; same seed, same answer.
    sql = "SELECT age, COUNT(*) AS n, SUM(income) AS s FROM people WHERE age IN (25, 27, 89) GROUP BY age ORDER BY age"
    listed, _ = _rows(_connect(tmp_path, policy_text(None)), sql)
    declared_policy = policy_text(None).replace('age       = { type = "int",   lower = 18, upper = 90 }',
                                                'age       = { type = "int",   lower = 18, upper = 90, values = [25, 27, 89] }')
    assert declared_policy != policy_text(None)
    declared, _ = _rows(_connect(tmp_path, declared_policy), sql)
    assert listed == declared
    other, _ = _rows(_connect(tmp_path, declared_policy, seed=6), sql)
    assert other != listed  # control: another seed, another release (the comparison can fail)


def test_an_empty_listed_key_is_released_too(tmp_path: Path) -> None:
    frame = PEOPLE[PEOPLE["age"] != 40]
    path = tmp_path / "p.toml"
    path.write_text(policy_text(None), encoding="utf-8")
    con = dpsql.connect(policy=path, tables={"people": pd.DataFrame(frame)}, random_seed=1)
    rows = con.execute("SELECT age, COUNT(*) FROM people WHERE age BETWEEN 39 AND 41 GROUP BY age ORDER BY age").fetchall()
    assert [r[0] for r in rows] == [39, 40, 41]  # 40 has no row: released with noise, as a declared key would be


@pytest.mark.parametrize("sql, code", [
    ("SELECT person_id, COUNT(*) FROM people WHERE person_id BETWEEN 1 AND 5 GROUP BY person_id", "DP107"),
    ("SELECT person_id, COUNT(*) FROM people WHERE person_id IN (1, 2) GROUP BY person_id", "DP107"),
])
def test_the_privacy_unit_stays_refused(tmp_path: Path, sql: str, code: str) -> None:
    con = _connect(tmp_path, policy_text(None))
    with pytest.raises(dpsql.Error, match=code):
        con.execute(sql).fetchall()


def test_a_wide_range_keeps_partition_selection(tmp_path: Path) -> None:
    wide = policy_text(None).replace('income    = { type = "float"', 'score = { type = "int", lower = 0, upper = 100000 }\nincome    = { type = "float"')
    frame = PEOPLE.assign(score=PEOPLE["age"] * 1000)
    path = tmp_path / "wide.toml"
    path.write_text(wide, encoding="utf-8")
    con = dpsql.connect(policy=path, tables={"people": frame}, random_seed=1)
    narrow = con.session.compile("SELECT score, COUNT(*) FROM people WHERE score BETWEEN 30000 AND 30999 GROUP BY score")
    broad = con.session.compile("SELECT score, COUNT(*) FROM people WHERE score BETWEEN 30000 AND 31000 GROUP BY score")
    assert narrow.compiled.plan.cost.delta == 0  # type: ignore[attr-defined]  # 1,000 keys: listed
    assert broad.compiled.plan.cost.delta > 0  # type: ignore[attr-defined]  # 1,001 keys: partition selection


def test_listed_keys_crossing_past_the_group_cap_keep_partition_selection(tmp_path: Path) -> None:
    wide = policy_text(None).replace('income    = { type = "float"',
                                     'a = { type = "int", lower = 0, upper = 1000 }\nb = { type = "int", lower = 0, upper = 1000 }\n'
                                     'income    = { type = "float"')
    frame = PEOPLE.assign(a=PEOPLE["age"], b=PEOPLE["age"] * 2)
    path = tmp_path / "cross.toml"
    path.write_text(wide, encoding="utf-8")
    con = dpsql.connect(policy=path, tables={"people": frame}, random_seed=1)
    small = con.session.compile("SELECT a, b, COUNT(*) FROM people WHERE a BETWEEN 0 AND 99 AND b BETWEEN 0 AND 999 GROUP BY a, b")
    large = con.session.compile("SELECT a, b, COUNT(*) FROM people WHERE a BETWEEN 0 AND 100 AND b BETWEEN 0 AND 999 GROUP BY a, b")
    assert small.compiled.plan.cost.delta == 0  # type: ignore[attr-defined]  # 100 x 1,000 = 100,000 combinations: listed
    assert large.compiled.plan.cost.delta > 0  # type: ignore[attr-defined]  # 101,000: partition selection

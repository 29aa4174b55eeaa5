"""A LEFT JOIN's ON condition on the joined table's own rows (TPC-H Q13: `LEFT JOIN orders ON
c_custkey = o_custkey AND o_comment NOT LIKE ...`), analysis/joins.py `_own_filter`.

What must hold: the condition keeps the rows of the joined table filtered before the join, so
unmatched left rows stay (as a subquery filtering the table first, run on raw DuckDB, answers);
it is not a WHERE filter of the whole query (that answer differs); a conjunct reading a table
before the joined one, a subquery, or an unbounded pattern is refused before the charge. The
answers are compared at an epsilon so large that the discrete noise is 0 except with probability
below 1e-1000 (scale 4e-6 at sensitivity 4): the released value is then the exact one.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.errors import Error
from tests.golden.test_join_golden import POLICY, tables

JOIN = "FROM people p LEFT JOIN visits v ON p.person_id = v.person_id"
HISTOGRAM = "SELECT n, COUNT(*) AS c FROM (SELECT p.person_id, COUNT(v.site) AS n {join} GROUP BY p.person_id) t GROUP BY n ORDER BY n"
TOTALS = "SELECT COUNT(v.site) AS n, COUNT(*) AS rows {join}"
CONDITION = "v.site = 'north' AND v.site NOT LIKE '%sou%'"
EXACT_OPTIONS = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1000000) "


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY.replace("epsilon = 10.0", "epsilon = 1e9", 1), encoding="utf-8")
    return path


def released(policy: Path, sql: str) -> list[tuple[object, ...]]:
    with dpsql.connect(policy=str(policy), tables=tables(), random_seed=5) as con:
        rows = con.execute(EXACT_OPTIONS + sql.removeprefix("SELECT ")).fetchall()
    return [tuple(round(v) if isinstance(v, float) else v for v in row) for row in rows]


def exact(sql: str) -> list[tuple[object, ...]]:
    raw = duckdb.connect()
    for name, frame in tables().items():
        raw.register(name, frame)
    return [tuple(row) for row in raw.execute(sql).fetchall()]


@pytest.mark.parametrize("shape", [HISTOGRAM, TOTALS])
def test_the_condition_filters_the_joined_table_before_the_join(policy: Path, shape: str) -> None:
    answer = released(policy, shape.format(join=f"{JOIN} AND {CONDITION}"))
    by_hand = exact(shape.format(join=f"FROM people p LEFT JOIN (SELECT * FROM visits v WHERE {CONDITION}) v "
                                      "ON p.person_id = v.person_id"))
    if shape is HISTOGRAM:  # every bucket of the public domain 0..max_rows is released, empty ones as 0
        by_hand = [(n, dict(by_hand).get(n, 0)) for n, _ in answer]
    assert answer == by_hand
    # Control: the same condition in WHERE drops the persons without a matching visit.
    assert exact(shape.format(join=f"{JOIN} WHERE {CONDITION}")) != exact(shape.format(
        join=f"FROM people p LEFT JOIN (SELECT * FROM visits v WHERE {CONDITION}) v ON p.person_id = v.person_id"))


def test_explain_shows_the_filter_and_the_join_bound(policy: Path) -> None:
    with dpsql.connect(policy=str(policy), tables=tables(), random_seed=5) as con:
        lines = [r[0] for r in con.execute(f"EXPLAIN SELECT COUNT(v.site) {JOIN} AND v.site NOT LIKE '%sou%'").fetchall()]
    text = "\n".join(lines)
    assert ("Join LEFT visits AS v ON p.person_id = v.person_id AND v.site NOT LIKE '%sou%' (a filter on v's rows before "
            "the join)") in text
    assert "Release __r0 = COUNT(site): discrete Laplace, sensitivity 4" in text  # join_max_rows = 4, as without the filter
    assert "Cost: epsilon 1, delta 0" in text


@pytest.mark.parametrize(("condition", "code"), [
    ("p.age > 30", "DP135"),                                  # reads the table before the joined one
    ("v.minutes > p.age", "DP135"),                           # reads both
    ("v.site IN (SELECT dept FROM people)", "DP135"),         # a subquery
    ("v.site LIKE v.site || '%'", "DP125"),                   # a pattern built from row values
    ("random() > 0.5", "DP113"),
])
def test_conditions_on_other_tables_are_refused_before_the_charge(policy: Path, condition: str, code: str) -> None:
    with dpsql.connect(policy=str(policy), tables=tables(), random_seed=5) as con:
        with pytest.raises(Error) as refused:
            con.execute(f"SELECT COUNT(v.site) {JOIN} AND {condition}")
        assert refused.value.code == code
        assert con.ledger() == []


def test_each_filter_reads_a_joined_relation_of_its_own(policy: Path) -> None:
    # The joined relation is kept per session under a name digesting its parts: two filters must
    # not share one (the second query would read the first one's rows).
    answers = []
    with dpsql.connect(policy=str(policy), tables=tables(), random_seed=5) as con:
        for site in ("north", "south"):
            sql = TOTALS.format(join=f"{JOIN} AND v.site = '{site}'").removeprefix("SELECT ")
            answers.append([tuple(round(v) for v in row) for row in con.execute(EXACT_OPTIONS + sql).fetchall()])
    assert answers == [exact(TOTALS.format(join=f"FROM people p LEFT JOIN (SELECT * FROM visits WHERE site = '{site}') v "
                                                "ON p.person_id = v.person_id")) for site in ("north", "south")]

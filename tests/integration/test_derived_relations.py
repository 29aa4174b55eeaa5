"""BI-tool shapes through dpsql.connect: qualified names, row-level subqueries and CTEs answer as
the flat query over the base table (same plan, same charge, same noise with the same seed), and
non-row-level bodies are refused before any charge."""

from __future__ import annotations

import pandas as pd
import pytest

from dpsql import ProgrammingError

PAIRS = [
    # Superset's virtual dataset
    ("SELECT dept AS dept, COUNT(*) AS count FROM (SELECT * FROM people) AS virtual_table GROUP BY dept ORDER BY count DESC LIMIT 10000",
     "SELECT dept AS dept, COUNT(*) AS count FROM people GROUP BY dept ORDER BY count DESC LIMIT 10000"),
    # Metabase's source subquery, every name quoted and qualified
    ('SELECT "source"."dept" AS "dept", SUM("source"."income") AS "sum" FROM (SELECT "people"."dept" AS "dept", '
     '"people"."income" AS "income", "people"."age" AS "age" FROM "people") AS "source" WHERE "source"."age" > 40 '
     'GROUP BY "source"."dept" ORDER BY "source"."dept" ASC',
     "SELECT dept, SUM(income) AS sum FROM people WHERE age > 40 GROUP BY dept ORDER BY dept ASC"),
    # Tableau / pgwire clients: the schema-qualified table
    ('SELECT AVG("people"."income") AS "avg" FROM "public"."people" "people" WHERE "people"."age" >= 30',
     "SELECT AVG(income) AS avg FROM people WHERE age >= 30"),
    # a CTE with a derived column used in the outer WHERE
    ("WITH adults AS (SELECT dept, age, income / 12 AS monthly FROM people WHERE age >= 18) "
     "SELECT dept, COUNT(*) AS n, AVG(age) AS mean_age FROM adults WHERE monthly > 2000 GROUP BY dept",
     "SELECT dept, COUNT(*) AS n, AVG(age) AS mean_age FROM people WHERE age >= 18 AND income / 12 > 2000 GROUP BY dept"),
]


@pytest.mark.parametrize(("derived", "flat"), PAIRS, ids=["superset", "metabase", "tableau", "cte"])
def test_derived_form_answers_as_the_flat_query(connect, policy_file, derived: str, flat: str) -> None:
    policy = policy_file(epsilon=100)
    answers, ledgers, names = [], [], []
    for sql in (derived, flat):
        con = connect(policy, random_seed=11)
        cursor = con.execute(sql)
        answers.append(cursor.fetchall())
        names.append([d[0] for d in cursor.description])
        ledgers.append([(e.cost, e.mechanism, dict(e.params)) for e in con.ledger()])  # the plan text shows the spelling
    assert answers[0] == answers[1] and answers[0]
    assert names[0] == names[1]
    assert ledgers[0] == ledgers[1] and len(ledgers[0]) == 1


def test_the_same_seed_comparison_detects_another_filter(connect, policy_file) -> None:
    # Negative control for the test above: a query that dropped the body's WHERE answers differently.
    policy = policy_file(epsilon=100)
    derived = connect(policy, random_seed=11).execute(
        "WITH old AS (SELECT * FROM people WHERE age > 60) SELECT COUNT(*) FROM old").fetchall()
    unfiltered = connect(policy, random_seed=11).execute("SELECT COUNT(*) FROM people").fetchall()
    assert derived != unfiltered


def test_body_filters_reach_the_engine(connect, policy_file, people_frame: pd.DataFrame) -> None:
    # epsilon 1000 on a count with max_rows 3: Laplace scale 0.003, so |noise| < 0.5 except with
    # probability exp(-166); the answer is the exact count of the rows both filters keep.
    policy = policy_file(epsilon=5000)
    con = connect(policy, random_seed=3)
    sql = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1000) COUNT(*) FROM "
           "(SELECT * FROM (SELECT age, region, income / 12 AS monthly FROM main.people WHERE age > 30) AS a "
           "WHERE monthly < 3000) AS b WHERE region <> 'north'")
    (count,), = con.execute(sql).fetchall()
    frame = people_frame
    exact = int(((frame.age > 30) & (frame.income / 12 < 3000) & (frame.region != "north")).sum())
    assert abs(count - exact) < 0.5, (count, exact)
    assert exact not in (0, len(frame))


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM (SELECT * FROM people ORDER BY income DESC LIMIT 1) AS top",
    # (An aggregated CTE read by an outer query is a release: tests/integration/test_post_processing.py.)
    "WITH RECURSIVE d AS (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) SELECT COUNT(*) FROM d",
    "SELECT COUNT(*) FROM (SELECT *, rank() OVER (ORDER BY income) AS r FROM people) AS s WHERE r = 1",
    "SELECT COUNT(*) FROM (SELECT DISTINCT person_id FROM people) AS s",
])
def test_non_row_level_bodies_are_refused_before_the_charge(connect, sql: str) -> None:
    con = connect(random_seed=1)
    before = con.budget
    with pytest.raises(ProgrammingError) as info:
        con.execute(sql)
    assert info.value.code == "DP110", str(info.value)
    assert con.ledger() == [] and con.budget == before


def test_a_cte_joined_to_itself_is_refused_as_the_self_join_before_the_charge(connect) -> None:
    # A row-level CTE in a join is inlined to its table: x a JOIN x b is people joined to itself.
    con = connect(random_seed=1)
    before = con.budget
    with pytest.raises(ProgrammingError) as info:
        con.execute("WITH x AS (SELECT * FROM people) SELECT COUNT(*) FROM x a JOIN x b ON a.person_id = b.person_id")
    assert info.value.code == "DP137", str(info.value)
    assert con.ledger() == [] and con.budget == before


def test_derived_query_over_a_public_table_is_a_public_query(connect, policy_file, people_frame) -> None:
    extra = '[tables.regions]\npublic = true\n[tables.regions.columns]\nregion = { type = "text" }\nzone = { type = "int" }\n'
    policy = policy_file(extra=extra)
    regions = pd.DataFrame({"region": ["north", "south", "east"], "zone": [1, 2, 2]})
    con = connect(policy, tables={"people": people_frame, "regions": regions})
    rows = con.execute("WITH z AS (SELECT region FROM main.regions WHERE zone = 2) SELECT region FROM z ORDER BY region").fetchall()
    assert rows == [("east",), ("south",)]
    assert con.ledger() == []

"""Row-level subqueries, CTEs and qualified names bind to the same BoundQuery as the flat query."""

from __future__ import annotations

import dataclasses
import tomllib

import pytest

from dpsql.analysis.context import AnalysisContext
from dpsql.catalog.loader import policy_from_dict
from dpsql.demo.people import policy_text
from dpsql.errors import Error
from dpsql.execution.compiled import CompiledQuery, compile_statement
from dpsql.ir.query import BoundQuery

# (the query as BI tools and analysts write it, the flat query with the same meaning)
SAME = [
    ("SELECT COUNT(*) FROM main.people", "SELECT COUNT(*) FROM people"),
    ('SELECT COUNT(*) FROM "public"."people" WHERE age > 3', "SELECT COUNT(*) FROM people WHERE age > 3"),
    ("SELECT SUM(income) FROM memory.main.people AS p WHERE main.people.age > 3",
     "SELECT SUM(income) FROM people AS p WHERE people.age > 3"),
    ("SELECT dept AS dept, COUNT(*) AS count FROM (SELECT * FROM people) AS virtual_table GROUP BY dept ORDER BY count DESC LIMIT 10000",
     "SELECT dept AS dept, COUNT(*) AS count FROM people GROUP BY dept ORDER BY count DESC LIMIT 10000"),
    ('SELECT "source"."dept" AS "dept", COUNT(*) AS "count" FROM (SELECT "people"."dept" AS "dept", "people"."age" AS "age" '
     'FROM "people") AS "source" WHERE "source"."age" > 30 GROUP BY "source"."dept" ORDER BY "source"."dept" ASC',
     'SELECT dept AS "dept", COUNT(*) AS "count" FROM people WHERE age > 30 GROUP BY dept ORDER BY dept ASC'),
    ("WITH old AS (SELECT * FROM people WHERE age > 60) SELECT COUNT(*) FROM old WHERE income > 100",
     "SELECT COUNT(*) FROM people WHERE age > 60 AND income > 100"),
    ("WITH m AS (SELECT dept, income / 12 AS monthly FROM people WHERE age >= 18) SELECT dept, AVG(age) FROM m "
     "WHERE monthly > 500 GROUP BY dept", None),  # AVG(age): age is not exposed -> refused, checked below
    ("WITH m AS (SELECT dept, age, income / 12 AS monthly FROM people WHERE age >= 18) SELECT dept, AVG(age) AS a FROM m "
     "WHERE monthly > 500 GROUP BY dept",
     "SELECT dept, AVG(age) AS a FROM people WHERE age >= 18 AND income / 12 > 500 GROUP BY dept"),
    ("SELECT COUNT(*) FROM (SELECT * FROM (SELECT * FROM people WHERE age > 3 OR age < 1) a WHERE income < 5) b WHERE dept = 'x'",
     "SELECT COUNT(*) FROM people WHERE (age > 3 OR age < 1) AND income < 5 AND dept = 'x'"),
    ("WITH a AS (SELECT * FROM people WHERE age > 20), b AS (SELECT age AS years, region FROM a WHERE region <> 'x') "
     "SELECT years, COUNT(*) FROM b GROUP BY years ORDER BY years",
     'SELECT age AS "years", COUNT(*) FROM people WHERE age > 20 AND region <> \'x\' GROUP BY age ORDER BY age'),
    ('SELECT COUNT(*) FROM (SELECT "public"."people"."dept" AS "dept" FROM "public"."people") AS "source" WHERE "source"."dept" = \'x\'',
     "SELECT COUNT(*) FROM people WHERE dept = 'x'"),
    ("WITH unused AS (SELECT * FROM people WHERE age > 1) SELECT COUNT(*) FROM people", "SELECT COUNT(*) FROM people"),
]


def _context() -> AnalysisContext:
    policy = policy_from_dict(tomllib.loads(policy_text(None)))
    return AnalysisContext(policy, policy.budget.default_query)


def _bound(sql: str) -> BoundQuery:
    _, compiled = compile_statement(sql, None, _context())
    assert isinstance(compiled, CompiledQuery)
    return dataclasses.replace(compiled.plan.query, sql="")


@pytest.mark.parametrize(("derived", "flat"), [p for p in SAME if p[1] is not None], ids=lambda s: s[:50])
def test_derived_relation_binds_like_the_flat_query(derived: str, flat: str) -> None:
    assert _bound(derived) == _bound(flat)


def test_the_comparison_sees_a_dropped_filter() -> None:
    # Negative control: the inner WHERE matters, so a rewrite that lost it would fail above.
    assert _bound("WITH old AS (SELECT * FROM people WHERE age > 60) SELECT COUNT(*) FROM old") != _bound(
        "SELECT COUNT(*) FROM people")


@pytest.mark.parametrize(("sql", "code", "words"), [
    ("WITH m AS (SELECT dept, income / 12 AS monthly FROM people) SELECT dept, AVG(age) FROM m GROUP BY dept",
     "DP111", "columns it exposes: dept, monthly"),
    ("SELECT COUNT(*) AS income FROM (SELECT age FROM people) ORDER BY income", "DP111", "does not expose"),
    ("SELECT COUNT(*) FROM (SELECT age AS a, income AS a FROM people) WHERE a > 1", "DP111", "ambiguous"),
    ("SELECT COUNT(*) FROM (SELECT * FROM people) s WHERE people.age > 3", "DP111", "does not read"),
    ("SELECT COUNT(*) FROM other.main.people", "DP103", "schema main"),
    ("SELECT COUNT(*) FROM (SELECT * FROM people ORDER BY income DESC OFFSET 5) s", "DP110", "ORDER BY"),  # without LIMIT or OFFSET it is dropped
    ("SELECT COUNT(*) FROM (SELECT * FROM people OFFSET 3) s", "DP110", "OFFSET"),
    # (An aggregated subquery read by an outer query is a release: post-processing, analysis/post_processing.py.)
    ("SELECT COUNT(*) FROM (SELECT * FROM people WHERE SUM(income) > 3) t", "DP110", "aggregate (SUM)"),
    ("SELECT COUNT(*) FROM (SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) * FROM people) t", "DP110", "OPTIONS"),
    # A join inside a row-level body is judged like the flat join (analysis/joins.py): a comma list is a cross join.
    ("SELECT COUNT(*) FROM (SELECT * FROM people, people q) t", "DP137", "read twice"),
    # IN inside a body is judged as in the flat query: over the same person's rows only.
    ("SELECT COUNT(*) FROM (SELECT * FROM people WHERE age IN (SELECT age FROM people)) t", "DP138", "correlated"),
    ("SELECT COUNT(*) FROM (SELECT age > 3 AND EXISTS (SELECT 1 FROM people q) AS x FROM people) t", "DP110",
     "in WHERE only"),
    ("SELECT COUNT(*) FROM (SELECT * FROM people) t WHERE age > (SELECT 1)", "DP110", "without FROM"),
    ("SELECT COUNT(*) FROM (SELECT * FROM read_parquet('x.parquet')) t", "DP113", "read_parquet"),
    ("SELECT COUNT(*) FROM (SELECT * EXCLUDE (age) FROM people) t", "DP110", "EXCLUDE"),
    ("SELECT COUNT(*) FROM (SELECT lpad(dept, age) AS x FROM people) t", "DP125", "length"),
    ("SELECT COUNT(*) FROM (SELECT * FROM nosuch) t", "DP103", "nosuch"),
])
def test_non_row_level_bodies_and_bad_names_are_refused(sql: str, code: str, words: str) -> None:
    with pytest.raises(Error) as info:
        compile_statement(sql, None, _context())
    assert info.value.code == code, str(info.value)
    assert words in str(info.value)


# Joins inside row-level bodies (Superset's virtual datasets over a join, Metabase's nested
# questions) and row-level subqueries or CTEs as join operands: the same bound query as the flat
# join (the join golden tests' policy: people and visits private, depts and sites public).
JOIN_SAME = [
    ('SELECT "source"."floor" AS "floor", COUNT(*) AS "count" FROM (SELECT p.dept, d.floor FROM people p JOIN depts d '
     'ON p.dept = d.name) AS "source" GROUP BY "source"."floor"',
     'SELECT d.floor AS "floor", COUNT(*) AS "count" FROM people p JOIN depts d ON p.dept = d.name GROUP BY d.floor'),
    ("SELECT floor, COUNT(*) FROM (SELECT * FROM people p JOIN depts d ON p.dept = d.name WHERE age > 30) AS virtual_table "
     "WHERE floor > 1 GROUP BY floor",
     'SELECT d.floor AS "floor", COUNT(*) FROM people p JOIN depts d ON p.dept = d.name WHERE p.age > 30 AND d.floor > 1 GROUP BY d.floor'),
    ("SELECT s.city, COUNT(*) FROM (SELECT * FROM (SELECT v.person_id, s.city AS town FROM visits v JOIN sites s ON v.site = s.site) a) b "
     "JOIN sites s ON b.town = s.city GROUP BY s.city", None),  # a join of a joining subquery: refused, checked below
    ("SELECT d.floor, COUNT(*) FROM (SELECT * FROM people WHERE age > 40) AS src LEFT JOIN depts d ON src.dept = d.name GROUP BY d.floor",
     "SELECT d.floor, COUNT(*) FROM people AS src LEFT JOIN depts d ON src.dept = d.name WHERE src.age > 40 GROUP BY d.floor"),
    ("WITH s AS (SELECT * FROM people WHERE age > 40) SELECT d.floor, COUNT(*) FROM s JOIN depts d ON s.dept = d.name GROUP BY d.floor",
     "SELECT d.floor, COUNT(*) FROM people AS s JOIN depts d ON s.dept = d.name WHERE s.age > 40 GROUP BY d.floor"),
    ("SELECT d.floor, COUNT(*) FROM people p JOIN (SELECT name, floor FROM depts WHERE floor < 4) d ON p.dept = d.name GROUP BY d.floor",
     "SELECT d.floor, COUNT(*) FROM people p JOIN depts d ON p.dept = d.name WHERE d.floor < 4 GROUP BY d.floor"),
    ("WITH o AS (SELECT person_id, age * 2 AS twice FROM people) SELECT COUNT(*) AS n, SUM(v.minutes) AS m FROM o JOIN visits v "
     "ON o.person_id = v.person_id WHERE o.twice < 100",
     "SELECT COUNT(*) AS n, SUM(v.minutes) AS m FROM people AS o JOIN visits v ON o.person_id = v.person_id WHERE o.age * 2 < 100"),
    # Row-level operands inside a joining body, and Power BI's parenthesised join (issue 30, item 5).
    ("SELECT COUNT(*) AS n FROM (SELECT p.age FROM people p JOIN (SELECT * FROM visits WHERE minutes > 3) v "
     "ON p.person_id = v.person_id) t",
     "SELECT COUNT(*) AS n FROM people p JOIN visits v ON p.person_id = v.person_id WHERE v.minutes > 3"),
    ('SELECT "t1"."floor", SUM("t1"."age") AS "a0" FROM (SELECT "$Outer"."age", "$Inner"."floor" FROM ((SELECT * FROM '
     '"people" AS "$Table") AS "$Outer" INNER JOIN (SELECT * FROM "depts" AS "$Table") AS "$Inner" ON ("$Outer"."dept" = '
     '"$Inner"."name"))) AS "t1" GROUP BY "t1"."floor"',
     'SELECT "$Inner".floor AS "floor", SUM("$Outer".age) AS "a0" FROM people AS "$Outer" JOIN depts AS "$Inner" '
     'ON "$Outer".dept = "$Inner".name GROUP BY "$Inner".floor'),
    ('SELECT "t0"."dept", COUNT(*) AS "a0" FROM ((SELECT * FROM "people" AS "$Table")) AS "t0" WHERE "t0"."age" > 30 '
     'GROUP BY "t0"."dept"',
     'SELECT dept AS "dept", COUNT(*) AS "a0" FROM people WHERE age > 30 GROUP BY dept'),
    ('SELECT COUNT(*) AS n FROM (people p JOIN visits v ON p.person_id = v.person_id)',
     'SELECT COUNT(*) AS n FROM people p JOIN visits v ON p.person_id = v.person_id'),
]


@pytest.fixture(scope="module")
def join_session(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    """A session over the join golden tests' policy and data (public joins read public facts)."""
    import dpsql
    from tests.golden.test_join_golden import POLICY, tables

    path = tmp_path_factory.mktemp("inline-joins") / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    con = dpsql.connect(policy=str(path), tables=tables(), random_seed=1, prepare=False)
    yield con.session
    con.close()


def _join_bound(session, sql: str) -> BoundQuery:  # noqa: ANN001
    compiled = session.compile(sql).compiled
    assert isinstance(compiled, CompiledQuery)
    return dataclasses.replace(compiled.plan.query, sql="")


@pytest.mark.parametrize(("derived", "flat"), [p for p in JOIN_SAME if p[1] is not None], ids=lambda s: s[:60])
def test_joined_derived_relation_binds_like_the_flat_join(join_session, derived: str, flat: str) -> None:  # noqa: ANN001
    assert _join_bound(join_session, derived) == _join_bound(join_session, flat)


def test_the_join_comparison_sees_a_dropped_operand_filter(join_session) -> None:  # noqa: ANN001
    # Negative control: an operand's WHERE matters, so a rewrite that lost it would fail above.
    assert _join_bound(join_session, JOIN_SAME[4][0]) != _join_bound(
        join_session, "SELECT d.floor, COUNT(*) FROM people AS s JOIN depts d ON s.dept = d.name GROUP BY d.floor")


@pytest.mark.parametrize(("sql", "code", "words"), [
    (JOIN_SAME[2][0], "DP110", "cannot itself be joined"),
    ("WITH v AS (SELECT * FROM visits WHERE site = 'x') SELECT COUNT(*) FROM people p LEFT JOIN v ON p.person_id = v.person_id",
     "DP110", "right of a LEFT JOIN"),
    ("SELECT COUNT(*) FROM people p JOIN (SELECT * FROM visits) ON p.person_id = person_id", "DP110", "needs a name"),
    ("SELECT COUNT(*) FROM (SELECT age FROM people p JOIN visits v ON p.person_id = v.person_id) t WHERE t.site = 'x'",
     "DP111", "not a column of the subquery"),
    ("SELECT COUNT(*) FROM (SELECT person_id FROM people p JOIN visits v ON p.person_id = v.person_id) t", "DP111", "ambiguous"),
    ("WITH s AS (SELECT * FROM people WHERE age > 3) SELECT COUNT(*) FROM s JOIN visits v ON s.person_id = v.person_id "
     "WHERE person_id > 1", "DP111", "ambiguous"),
    ("SELECT COUNT(*) FROM (SELECT q.age FROM people p JOIN visits v ON p.person_id = v.person_id) t", "DP111", "does not read"),
])
def test_joined_derived_relations_refused(join_session, sql: str, code: str, words: str) -> None:  # noqa: ANN001
    with pytest.raises(Error) as info:
        join_session.compile(sql)
    assert info.value.code == code, str(info.value)
    assert words in str(info.value)

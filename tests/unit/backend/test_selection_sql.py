"""Partition selection SQL: person counts in the same aggregation as the released values, from the
session's keyed relation (key bounding once per session, table and grouping), and no key bounding
at all when a person could not touch more than max_groups keys."""

import tomllib
from collections import defaultdict

import duckdb
from sqlglot import exp

from dpsql.analysis.context import AnalysisContext
from dpsql.backend.engines.engine import keyed_name
from dpsql.backend.sql.engine_dialects import render
from dpsql.backend.sql.plan_sql import UNIT_KEY, engine_select, fixed_point_selects, key_heavy_select, keyed_select
from dpsql.catalog.loader import policy_from_dict
from dpsql.demo.people import policy_text
from dpsql.execution.compiled import compile_statement

SQL = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) region, COUNT(*) FROM people GROUP BY region"


def policy_for(max_groups: int, max_rows: int = 3):  # noqa: ANN201
    text = policy_text(None).replace("max_groups = 2", f"max_groups = {max_groups}").replace("max_rows = 3", f"max_rows = {max_rows}")
    return policy_from_dict(tomllib.loads(text))


def compiled_for(max_groups: int, sql: str = SQL):  # noqa: ANN201
    policy = policy_for(max_groups)
    _, compiled = compile_statement(sql, None, AnalysisContext(policy, policy.budget.default_query))
    return compiled


def test_key_bounding_reads_the_keyed_relation_in_one_pass() -> None:
    compiled = compiled_for(2)  # max_rows = 3 in the demo policy
    table = compiled.plan.query.table
    assert compiled.keyed_columns == ("region",)
    # One aggregation: no window, no join, no per-query seed; the counts come from the flag.
    assert compiled.engine.find(exp.Window) is None and compiled.engine.find(exp.Join) is None and not compiled.uses_seed
    assert compiled.engine.find(exp.Subquery) is None
    assert f'FROM "{keyed_name(table, ("region",))}"' in compiled.engine_sql
    assert f'CAST(COUNT_IF("{UNIT_KEY}") AS BIGINT) AS __units' in compiled.engine_sql
    assert "HAVING" in compiled.engine_sql  # a key no counted person holds is never returned
    # The key bounding itself is a seeded window in the (cached) keyed relation.
    keyed = keyed_select(table, "b", compiled.keyed_columns, "h")
    assert keyed.find(exp.Window) is not None and keyed.find(exp.Placeholder) is not None


def test_count_if_counts_the_flagged_rows_as_the_case_form_did() -> None:
    # The person count of a key: rows whose flag is TRUE; FALSE and NULL flags are not counted.
    rows = "(VALUES ('a', TRUE), ('a', FALSE), ('a', NULL), ('a', TRUE), ('b', FALSE), ('b', NULL), ('c', TRUE))"
    con = duckdb.connect()
    new = con.execute(f"SELECT k, COUNT_IF(f) FROM {rows} t(k, f) GROUP BY k ORDER BY k").fetchall()
    old = con.execute(f"SELECT k, COUNT(CASE WHEN f THEN 1 ELSE NULL END) FROM {rows} t(k, f) GROUP BY k ORDER BY k").fetchall()
    assert new == old == [("a", 2), ("b", 0), ("c", 1)]
    assert render(exp.CountIf(this=exp.column(UNIT_KEY, quoted=True)), "spark") == f"COUNT_IF(`{UNIT_KEY}`)"


def test_one_keyed_relation_per_grouping_column_set() -> None:
    table = compiled_for(2).plan.query.table
    assert keyed_name(table, ("region",)) != keyed_name(table, ("dept", "region")) != keyed_name(table, ("region", "dept"))


def test_no_key_bounding_when_max_rows_already_bounds_keys() -> None:
    compiled = compiled_for(3)
    assert compiled.keyed_columns == ()
    assert compiled.engine.find(exp.Window) is None and not compiled.uses_seed
    assert "COUNT(DISTINCT \"person_id\") AS __units" in compiled.engine_sql


def _flags(max_groups: int, seed: int) -> list[tuple[int, str, int, bool]]:
    """The keyed relation over a bounded table where each person has 6 rows over 1 to 6 regions
    (NULL is a key too): light persons (all keys kept) and heavy ones (keys ranked by the hash)."""
    table = policy_for(max_groups, max_rows=6).table("people")
    con = duckdb.connect()
    con.execute("CREATE TABLE src AS SELECT (i // 6) AS person_id, 20 + (i % 7) * 5 AS age, (i * 37 % 1000)::DOUBLE AS income, "
                "'sales' AS dept, CASE WHEN i % 11 = 0 THEN NULL ELSE 'r' || ((i * 7) % (1 + (i // 6) % 5)) END AS region "
                "FROM range(600) t(i)")
    # The bounded relation's schema: the policy's columns, then the prepared fixed-point ones.
    con.execute(f"CREATE TABLE b AS {render(exp.select('*', *fixed_point_selects(table)).from_('src'))}")
    con.execute(f"CREATE TABLE h AS {render(key_heavy_select(table, 'b', ('region',)))}")
    rows = con.execute(render(keyed_select(table, "b", ("region",), "h")), {"seed": seed}).fetchall()
    return [(r[0], r[4], r[1], r[-1]) for r in rows]  # the flag is the last column


def test_each_person_is_counted_for_at_most_max_groups_keys_whatever_the_where() -> None:
    for max_groups in (1, 2):
        rows = _flags(max_groups, seed=12345)
        assert len(rows) == 600  # every bounded row stays: released values are unchanged
        keys = defaultdict(set)
        flagged = defaultdict(list)
        for person, region, _, flag in rows:
            keys[person].add(region)
            if flag:
                flagged[person].append(region)
        for person, regions in keys.items():
            # One flagged row per kept key (distinct keys), min(#keys, max_groups) keys per person: a
            # WHERE can only drop rows, so it never lets a person count for more keys.
            assert len(flagged[person]) == len(set(flagged[person])) == min(len(regions), max_groups), person
            assert set(flagged[person]) <= regions
        assert any(len(r) > max_groups for r in keys.values())  # not vacuous: bounding did cut
        assert any(1 < len(r) <= max_groups for r in keys.values()) or max_groups == 1  # light persons with several keys


def test_the_kept_keys_depend_on_the_secret_seed() -> None:
    # Negative control: another seed keeps other keys (so the choice is the keyed hash's, not fixed).
    kept = [{(p, r) for p, r, _, flag in _flags(2, seed) if flag} for seed in (1, 2)]
    assert kept[0] != kept[1] and len(kept[0]) == len(kept[1])


def test_key_heavy_persons_are_those_with_more_than_max_groups_key_tuples() -> None:
    # key_heavy_select forms key pairs only for persons with more than max_groups rows: the same
    # persons as counting the distinct key tuples of every person (NULL keys are tuples too).
    for max_groups in (1, 2, 3):
        table = policy_for(max_groups, max_rows=6).table("people")
        con = duckdb.connect()
        con.execute("CREATE TABLE b AS SELECT (i // 6) - 20 AS person_id, 30 AS age, 1.0 AS income, "
                    "CASE WHEN i % 4 = 0 THEN NULL ELSE 'd' || (i % (1 + (i // 6) % 3)) END AS dept, "
                    "CASE WHEN i % 9 = 0 THEN NULL ELSE 'r' || ((i * 7) % (1 + (i // 6) % 5)) END AS region "
                    "FROM range(600) t(i) WHERE i % 6 < 1 + (i // 6) % 6")  # persons with 1 to 6 rows
        for keys in (("region",), ("dept", "region")):
            got = {r[0] for r in con.execute(render(key_heavy_select(table, "b", keys))).fetchall()}
            tuples = defaultdict(set)
            for row in con.execute(f"SELECT person_id, {', '.join(keys)} FROM b").fetchall():
                tuples[row[0]].add(row[1:])
            assert got == {p for p, t in tuples.items() if len(t) > max_groups}, (max_groups, keys)
            assert got or max_groups == 3  # not vacuous


def test_the_flagged_row_is_the_first_in_value_order() -> None:
    # The representative of (person, key) is the first of the person's rows with that key in the
    # order of the values, NULLs first (the partition columns, constant there, are no sort key).
    table = policy_for(5, max_rows=6).table("people")
    con = duckdb.connect()
    con.execute("CREATE TABLE b0 AS SELECT i // 6 AS person_id, CASE WHEN i % 5 = 0 THEN NULL ELSE 20 + i % 3 END AS age, "
                "(i * 37 % 7)::DOUBLE AS income, 'd' || (i % 2) AS dept, 'r' || (i // 6 % 2 + i % 2) AS region FROM range(600) t(i)")
    con.execute(f"CREATE TABLE b AS {render(exp.select('*', *fixed_point_selects(table)).from_('b0'))}")
    con.execute(f"CREATE TABLE h AS {render(key_heavy_select(table, 'b', ('region',)))}")
    assert con.execute("SELECT COUNT(*) FROM h").fetchone() == (0,)  # nobody above max_groups = 5 keys: no key ranking
    flagged = sorted((r[:5] for r in con.execute(render(keyed_select(table, "b", ("region",), "h")), {"seed": 7}).fetchall() if r[-1]), key=repr)
    groups = defaultdict(list)
    for row in con.execute("SELECT person_id, age, income, dept, region FROM b").fetchall():
        groups[(row[0], row[4])].append(row)
    first = sorted((min(rs, key=lambda r: tuple((v is not None, v) for v in r)) for rs in groups.values()), key=repr)
    assert flagged == first
    assert any(len(rs) > 1 and len({r[1] for r in rs}) > 1 for rs in groups.values())  # not vacuous: the order decides


DERIVED = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) upper(region) AS r, COUNT(*) "
           "FROM people GROUP BY upper(region)")


def _derived_counts(count_if: bool = False) -> dict[str, int]:
    """Person counts of GROUP BY upper(region) where person 1 holds 'abc' and 'ABC' (two kept key
    tuples of the column read, one key value) and person 2 holds 'abc'."""
    compiled = compiled_for(2, DERIVED)
    table = compiled.plan.query.table
    assert compiled.keyed_columns == ("region",)
    con = duckdb.connect()
    con.execute("CREATE TABLE b0 AS SELECT * FROM (VALUES (1, 30, 1.0, 'hr', 'abc'), (1, 30, 2.0, 'hr', 'ABC'), "
                "(2, 40, 3.0, 'hr', 'abc')) t(person_id, age, income, dept, region)")
    con.execute(f"CREATE TABLE b AS {render(exp.select('*', *fixed_point_selects(table)).from_('b0'))}")
    con.execute(f"CREATE TABLE h AS {render(key_heavy_select(table, 'b', compiled.keyed_columns))}")
    con.execute(f"CREATE TABLE k AS {render(keyed_select(table, 'b', compiled.keyed_columns, 'h'))}", {"seed": 3})
    select = engine_select(compiled.plan, "k")
    if count_if:  # the earlier form: count the flagged rows
        select.set("expressions", [e for e in select.expressions if e.alias != "__units"] + [
            exp.alias_(exp.CountIf(this=exp.column(UNIT_KEY, quoted=True)), "__units")])
    assert "COUNT_IF" not in render(compiled.engine) or count_if
    result = con.execute(render(select))
    names = [d[0] for d in result.description]
    return {row[names.index("__k0")]: row[names.index("__units")] for row in result.fetchall()}


def test_a_derived_key_counts_each_person_once() -> None:
    # Both of person 1's regions are kept (2 tuples <= max_groups) and flagged, and both map to
    # 'ABC': the key's person count must still be 2 (persons 1 and 2), never 3, so a key held by
    # one person counts 1, as the selection threshold assumes.
    assert _derived_counts() == {"ABC": 2}


def test_negative_control_counting_flagged_rows_counts_a_person_twice() -> None:
    assert _derived_counts(count_if=True) == {"ABC": 3}

"""Partition selection SQL: person counts in the same aggregation as the released values, from the
session's keyed relation (key bounding once per session, table and grouping), and no key bounding
at all when a person could not touch more than max_groups keys."""

import tomllib
from collections import defaultdict

import duckdb
from sqlglot import exp

from dpsql.analysis.context import AnalysisContext
from dpsql.backend.dialects import render
from dpsql.backend.engine import bounded_name, keyed_name
from dpsql.backend.sqlgen import KEPT_KEY, UNIT_KEY, bounded_select, fixed_point_selects, key_heavy_select, keyed_select
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
    assert f'COUNT(CASE WHEN "{UNIT_KEY}" THEN 1 ELSE NULL END) AS __units' in compiled.engine_sql
    assert "HAVING" in compiled.engine_sql  # a key no counted person holds is never returned
    # The key bounding itself is a seeded window in the (cached) keyed relation.
    keyed = keyed_select(table, "b", compiled.keyed_columns, "h")
    assert keyed.find(exp.Window) is not None and keyed.find(exp.Placeholder) is not None


def test_one_keyed_relation_per_grouping_column_set() -> None:
    table = compiled_for(2).plan.query.table
    assert keyed_name(table, ("region",)) != keyed_name(table, ("dept", "region")) != keyed_name(table, ("region", "dept"))


def test_no_key_bounding_when_max_rows_already_bounds_keys() -> None:
    compiled = compiled_for(3)
    assert compiled.keyed_columns == ()
    assert compiled.engine.find(exp.Window) is None and not compiled.uses_seed
    assert "COUNT(DISTINCT \"person_id\") AS __units" in compiled.engine_sql


def _flags(max_groups: int, seed: int) -> list[tuple[int, str, int, bool, bool]]:
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
    return [(r[0], r[4], r[1], r[-2], r[-1]) for r in rows]  # the flags are the last columns


def test_each_person_is_counted_for_at_most_max_groups_keys_whatever_the_where() -> None:
    for max_groups in (1, 2):
        rows = _flags(max_groups, seed=12345)
        assert len(rows) == 600  # every bounded row stays: released values are unchanged
        keys = defaultdict(set)
        flagged = defaultdict(list)
        for person, region, _, flag, _ in rows:
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
    kept = [{(p, r) for p, r, _, flag, _ in _flags(2, seed) if flag} for seed in (1, 2)]
    assert kept[0] != kept[1] and len(kept[0]) == len(kept[1])


def test_every_row_of_a_kept_key_carries_the_kept_flag() -> None:
    # KEPT_KEY marks all of a person's rows whose key is kept, and only those: the same keys as
    # the representatives' UNIT_KEY (so a WHERE query counts a person for the same keys or fewer).
    for max_groups in (1, 2):
        rows = _flags(max_groups, seed=777)
        represented = {(p, r) for p, r, _, flag, _ in rows if flag}
        for person, region, _, _, kept in rows:
            assert kept == ((person, region) in represented), (person, region)


WHERE_SQL = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) region, COUNT(*) FROM people "
             "WHERE age > 40 GROUP BY region")


def _counts(engine_sql: str, table, rows: str) -> dict[str, int]:  # noqa: ANN001
    """Run a compiled engine query over a bounded relation of `rows` and its keyed relation."""
    con = duckdb.connect()
    con.execute(f"CREATE TABLE src AS {rows}")
    con.execute(f'CREATE TABLE "{bounded_name(table)}" AS {render(bounded_select(table, "src"))}', {"seed": 1})
    keyed = keyed_name(table, ("region",))
    con.execute(f'CREATE TABLE "{keyed}_heavy" AS {render(key_heavy_select(table, bounded_name(table), ("region",)))}')
    con.execute(f'CREATE TABLE "{keyed}" AS {render(keyed_select(table, bounded_name(table), ("region",), keyed + "_heavy"))}',
                {"seed": 1})
    names = [d[0] for d in con.execute(engine_sql).description]
    return {row[0]: row[names.index("__units")] for row in con.execute(engine_sql).fetchall()}


# Person 1: two rows in north, ages 20 and 60; the representative of (1, north) is the age-20 row
# (rows ordered by their values), which `age > 40` drops. Person 2: one row in south, age 50.
# Persons 3 and 4 are heavy (3 regions each, max_groups = 2), with every row passing the WHERE.
ROWS = ("SELECT * FROM (VALUES (1, 20, 10.0, 'sales', 'north'), (1, 60, 20.0, 'sales', 'north'), (2, 50, 5.0, 'hr', 'south'), "
        "(3, 50, 1.0, 'hr', 'east'), (3, 50, 1.0, 'hr', 'west'), (3, 50, 1.0, 'hr', 'north'), "
        "(4, 70, 1.0, 'hr', 'east'), (4, 70, 1.0, 'hr', 'west'), (4, 70, 1.0, 'hr', 'south')) "
        "t(person_id, age, income, dept, region)")


def test_a_where_that_drops_the_representative_still_counts_the_person() -> None:
    compiled = compiled_for(2, WHERE_SQL)
    table = compiled.plan.query.table
    assert KEPT_KEY in compiled.engine_sql and "COUNT(DISTINCT" in compiled.engine_sql
    counts = _counts(compiled.engine_sql, table, ROWS)
    # north: person 1 (the age-60 row passes) and person 3 if north is among 3's two kept keys.
    assert counts["north"] >= 1
    # Each heavy person counts for exactly max_groups = 2 of their 3 keys.
    assert sum(counts.get(r, 0) for r in ("east", "west")) + counts.get("south", 0) + counts["north"] == 1 + 1 + 2 + 2
    # Negative control: counting representatives only (the query without a WHERE's count) loses
    # person 1 in north under this WHERE.
    representative = compiled.engine_sql.replace(
        f'COUNT(DISTINCT CASE WHEN "{KEPT_KEY}" THEN "person_id" ELSE NULL END)', f'COUNT(CASE WHEN "{UNIT_KEY}" THEN 1 ELSE NULL END)')
    assert representative != compiled.engine_sql
    assert _counts(representative, table, ROWS).get("north", 0) == counts["north"] - 1


def test_without_a_where_the_representatives_are_counted() -> None:
    compiled = compiled_for(2)
    assert f'COUNT(CASE WHEN "{UNIT_KEY}" THEN 1 ELSE NULL END) AS __units' in compiled.engine_sql
    assert "DISTINCT" not in compiled.engine_sql

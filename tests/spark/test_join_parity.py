"""Joins on Spark: the joined relation (the parts' bounded relations joined, then bounded again
after the join with the same keyed hash) and each plan's exact values are IDENTICAL on DuckDB and
Spark, and the public facts a plan depends on (fan-out, domains, ranges) read the same on both.

`people` and `visits` share the privacy unit `pid` (and one Parquet file: heavy persons have
hundreds of rows, so both the parts' bounding and the bound after the join really choose rows);
`depts` is public. Negative control: parts bounded with another seed give other joined rows.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlglot import exp

from dpsql.analysis.context import AnalysisContext
from dpsql.backend.engines.engine import EngineResult, bounded_name, source_name
from dpsql.backend.engines.public_tables import EnginePublicFacts
from dpsql.backend.sql.join_sql import joined_select
from dpsql.backend.sql.plan_sql import bounded_select, ordered
from dpsql.execution.compiled import CompiledQuery, compile_statement
from dpsql.ir.join import JoinedTable
from tests.spark.conftest import BOUND_SEED, EnginePair, SparkData
from tests.spark.test_parity import assert_identical, run_plan

JOIN_SEED = BOUND_SEED - 99  # the joined relation's own bounding seed, on both engines
QUERIES = [
    "SELECT COUNT(*), SUM(p.age) FROM people p JOIN visits v ON p.pid = v.pid",
    "SELECT v.region, COUNT(*) FROM people p JOIN visits v USING (pid) WHERE v.age > 40 GROUP BY v.region",
    "SELECT COUNT(*), AVG(p.income) FROM people p LEFT JOIN visits v ON p.pid = v.pid AND p.dept = v.region",
    "SELECT d.floor, COUNT(*), SUM(d.floor) FROM people p JOIN depts d ON p.dept = d.dept GROUP BY d.floor",
    "SELECT COUNT(*) FROM people WHERE dept IN (SELECT dept FROM depts WHERE floor > 3)",
    "SELECT COUNT(*) FROM people WHERE dept NOT IN (SELECT dept FROM depts)",
    # Comma joins and public-first joins (normalised), EXISTS / IN over the same person's rows and
    # over a public table (correlated subqueries in the joined relation's select list).
    "SELECT d.floor, COUNT(*) FROM depts d, people p WHERE p.dept = d.dept GROUP BY d.floor",
    "SELECT COUNT(*) FROM people p WHERE EXISTS (SELECT 1 FROM visits v WHERE v.pid = p.pid AND v.age > 40)",
    "SELECT COUNT(*) FROM people p WHERE NOT EXISTS (SELECT * FROM visits v WHERE v.pid = p.pid AND v.region = p.region)",
    "SELECT COUNT(*) FROM people WHERE pid IN (SELECT pid FROM visits WHERE age > 60)",
    "SELECT COUNT(*) FROM people p WHERE EXISTS (SELECT 1 FROM depts d WHERE d.dept = p.dept AND d.floor > 3)",
]


def compiled_on(engine: Any, data: SparkData, sql: str) -> CompiledQuery:
    context = AnalysisContext(data.policy, data.policy.budget.default_query, facts=EnginePublicFacts(engine))
    _, compiled = compile_statement(sql, None, context)
    assert isinstance(compiled, CompiledQuery) and isinstance(compiled.plan.query.table, JoinedTable), sql
    return compiled


def joined_rows(engine: Any, table: JoinedTable) -> EngineResult:
    name = engine.ensure_bounded(table, JOIN_SEED)  # the parts' bounded relations exist (BOUND_SEED)
    select = exp.select("*").from_(exp.to_identifier(name, quoted=True)).order_by(
        *[ordered(exp.column(c, quoted=True)) for c in table.columns])
    return engine.run(select)


def _rebound(engine: Any, table: JoinedTable, seed: int) -> str:
    name = f"{bounded_name(table)}_{seed}"
    engine.backend.materialize(name, bounded_select(table, source_name(table)), {"seed": seed})
    return name


@pytest.mark.parametrize("sql", QUERIES)
def test_join_plans_are_identical(engines: EnginePair, spark_data: SparkData, sql: str) -> None:
    duck_plan, spark_plan = (compiled_on(e, spark_data, sql) for e in engines)
    assert duck_plan.explain_lines() == spark_plan.explain_lines()  # the same public facts on both engines
    table = duck_plan.plan.query.table
    assert isinstance(table, JoinedTable)
    rows = assert_identical(*(joined_rows(e, table) for e in engines), ordered_rows=True)
    assert rows
    duck, spark = (run_plan(e, duck_plan) for e in engines)
    assert assert_identical(duck, spark)


def test_the_bound_after_the_join_really_chooses(engines: EnginePair, spark_data: SparkData) -> None:
    table = compiled_on(engines.duckdb, spark_data, QUERIES[0]).plan.query.table
    assert isinstance(table, JoinedTable) and table.max_rows == 6
    rows = assert_identical(*(joined_rows(e, table) for e in engines), ordered_rows=True)
    per_person: dict[Any, int] = {}
    for row in rows:
        per_person[row[0]] = per_person.get(row[0], 0) + 1
    assert max(per_person.values()) == 6  # heavy persons: 3 x 2 pairs of their bounded rows


def test_negative_control_other_part_seeds_change_the_joined_rows(engines: EnginePair, spark_data: SparkData) -> None:
    table = compiled_on(engines.duckdb, spark_data, QUERIES[0]).plan.query.table
    assert isinstance(table, JoinedTable)
    duck = joined_rows(engines.duckdb, table)
    parts = {p.name: f"{bounded_name(p)}_other" for p in table.private_parts}
    for part in table.private_parts:
        engines.spark.backend.materialize(parts[part.name], bounded_select(part, source_name(part)), {"seed": BOUND_SEED + 1})
    select = exp.select("*").from_(joined_select(table, parts).subquery("j")).order_by(
        *[ordered(exp.column(c, quoted=True)) for c in table.columns])
    with pytest.raises(AssertionError):
        assert_identical(duck, engines.spark.run(select), ordered_rows=True)

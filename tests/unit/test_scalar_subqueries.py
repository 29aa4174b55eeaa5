"""Scalar subqueries in the analysis (analysis/scalar_subqueries.py), compiled without data.

What must hold: the release that reads a scalar subquery's value has the plan of the same query
with a constant there (its sensitivity and noise do not depend on the value); the value's type
is fixed before it is released; each subquery is released once, before its readers; and EXISTS
inside (or beside) a row-level subquery is the same semi-join as in the flat query.
"""

from __future__ import annotations

import dataclasses
import tomllib

import pytest
from sqlglot import exp

from dpsql.analysis.context import AnalysisContext
from dpsql.analysis.scalar_subqueries import post_scalars, scalar_subqueries
from dpsql.catalog.loader import policy_from_dict
from dpsql.demo.people import policy_text
from dpsql.errors import Error
from dpsql.execution.compiled import CompiledPost, CompiledQuery, compile_statement
from dpsql.frontend.parse import parse_tree
from dpsql.ir.plan import Plan

TWO_TABLES = """
[budget]
epsilon = 10.0
delta = 1e-5
default_query_epsilon = 1.0
default_query_delta = 1e-7

[tables.people]
privacy_unit = "person_id"
max_rows = 2
[tables.people.columns]
person_id = { type = "int" }
age = { type = "int", lower = 18, upper = 90 }
dept = { type = "text", values = ["eng", "ops"] }
hired = { type = "date", lower = 2000-01-01, upper = 2020-12-31 }

[tables.visits]
privacy_unit = "person_id"
max_rows = 3
[tables.visits.columns]
person_id = { type = "int" }
minutes = { type = "float", lower = 0, upper = 60 }
"""


def _context(text: str | None = None) -> AnalysisContext:
    policy = policy_from_dict(tomllib.loads(text if text is not None else policy_text(None)))
    return AnalysisContext(policy, policy.budget.default_query)


def _compile(sql: str, text: str | None = None) -> CompiledPost | CompiledQuery:
    _, compiled = compile_statement(sql, None, _context(text))
    assert isinstance(compiled, (CompiledPost, CompiledQuery))
    return compiled


def _noise(plan: Plan) -> tuple[object, ...]:
    """What a plan's noise depends on: each release's mechanism spec (sensitivity, scale, epsilon),
    its raw aggregate's kind and bounds, and the cost."""
    return (tuple((r.spec, r.raw.kind, r.raw.grid, r.raw.lower_units, r.raw.upper_units) for r in plan.releases),
            tuple((r.spec, r.values) for r in plan.robust), plan.cost)


@pytest.mark.parametrize("reader", [
    "SELECT dept, COUNT(*), SUM(income) FROM people WHERE income > {} GROUP BY dept",
    "SELECT COUNT(*) FILTER (WHERE income > {}), AVG(age) FROM people",
    "SELECT MEDIAN(age) FROM people WHERE income < {}",
])
def test_the_reading_release_is_planned_as_with_a_constant(reader: str) -> None:
    compiled = _compile(reader.format("(SELECT AVG(income) FROM people)"))
    assert isinstance(compiled, CompiledPost) and len(compiled.inputs) == 2
    for constant in ("CAST(1.5 AS DOUBLE)", "CAST(400000 AS DOUBLE)"):
        alone = _compile(reader.format(constant))
        assert isinstance(alone, CompiledQuery)
        assert _noise(compiled.inputs[1].plan) == _noise(alone.plan)
    # Negative control: the comparison sees a plan that differs (another aggregate's noise).
    other = _compile(reader.format("CAST(1.5 AS DOUBLE)").replace("COUNT(*)", "COUNT(*), SUM(age)", 1)
                     .replace("AVG(age)", "AVG(age), SUM(age)").replace("MEDIAN(age)", "MEDIAN(age), SUM(age)"))
    assert isinstance(other, CompiledQuery) and _noise(other.plan) != _noise(compiled.inputs[1].plan)


@pytest.mark.parametrize(("subquery", "kind"), [
    ("(SELECT AVG(income) FROM people)", "DOUBLE"),
    ("(SELECT COUNT(*) / 12 FROM people)", "DOUBLE"),
    ("(SELECT ROUND(SUM(income) / COUNT(*), 2) FROM people)", "DOUBLE"),
    ("(SELECT MEDIAN(income) FROM people)", "DOUBLE"),
])
def test_the_value_is_typed_before_it_is_released(subquery: str, kind: str) -> None:
    compiled = _compile(f"SELECT COUNT(*) FROM people WHERE income > {subquery}")
    assert isinstance(compiled, CompiledPost)
    (parameter,) = compiled.query.parameters
    assert parameter.type == kind and parameter.source == 0
    assert compiled.readers(parameter.name) == [1]
    cast = next(compiled.inputs[1].plan.query.where.find_all(exp.Cast))
    assert isinstance(cast.this, exp.Placeholder) and cast.to.sql() == kind


def test_mode_and_date_medians_keep_their_column_type() -> None:
    modes = _compile("SELECT COUNT(*) FROM people WHERE dept = (SELECT MODE(dept) FROM people)", TWO_TABLES)
    dates = _compile("SELECT COUNT(*) FROM people WHERE hired > (SELECT MEDIAN(hired) FROM people)", TWO_TABLES)
    assert isinstance(modes, CompiledPost) and isinstance(dates, CompiledPost)
    assert [p.type for p in modes.query.parameters] == ["VARCHAR"]
    assert [p.type for p in dates.query.parameters] == ["DATE"]


def test_nested_subqueries_are_released_innermost_first() -> None:
    compiled = _compile("SELECT COUNT(*) FROM people WHERE income > (SELECT AVG(income) FROM people WHERE age > "
                        "(SELECT AVG(age) FROM people))")
    assert isinstance(compiled, CompiledPost)
    assert [(p.name, p.source) for p in compiled.query.parameters] == [("dpsql_scalar0", 0), ("dpsql_scalar1", 1)]
    assert compiled.readers("dpsql_scalar0") == [1] and compiled.readers("dpsql_scalar1") == [2]


@pytest.mark.parametrize(("sql", "post"), [
    ("SELECT dept, COUNT(*) FROM people WHERE income > (SELECT 1) GROUP BY dept", 0),  # WHERE meets rows
    ("SELECT SUM(CASE WHEN income > (SELECT 1) THEN 1 ELSE 0 END) FROM people", 0),  # an aggregate's argument
    ("SELECT income > (SELECT 1) AS above, COUNT(*) FROM people GROUP BY 1", 0),  # a key expression
    ("SELECT COUNT(*) - (SELECT 1) FROM people", 1),  # arithmetic over a released value
    ("SELECT (SELECT 1), COUNT(*) FROM people", 1),  # a constant output
    ("SELECT dept FROM people GROUP BY dept HAVING COUNT(*) > (SELECT 1) ORDER BY (SELECT 2)", 2),
])
def test_where_a_subquery_meets_rows_or_released_values(sql: str, post: int) -> None:
    select = parse_tree(sql)
    assert isinstance(select, exp.Select)
    assert len(post_scalars(select)) == post and len(scalar_subqueries(select)) >= post


@pytest.mark.parametrize(("derived", "flat"), [
    ("SELECT COUNT(*) FROM (SELECT dept, age FROM people p WHERE NOT EXISTS (SELECT 1 FROM visits v WHERE "
     "v.person_id = p.person_id AND v.minutes > 5)) t WHERE age > 20",
     "SELECT COUNT(*) FROM people WHERE NOT EXISTS (SELECT 1 FROM visits v WHERE v.person_id = people.person_id AND "
     "v.minutes > 5) AND age > 20"),
    ("SELECT COUNT(*) FROM (SELECT person_id AS pid, age FROM people) t WHERE EXISTS (SELECT 1 FROM visits v WHERE "
     "v.person_id = t.pid)",
     "SELECT COUNT(*) FROM people WHERE EXISTS (SELECT 1 FROM visits v WHERE v.person_id = people.person_id)"),
    ("WITH w AS (SELECT * FROM people WHERE person_id IN (SELECT person_id FROM visits WHERE minutes > 5)) "
     "SELECT dept, COUNT(*) FROM w GROUP BY dept",
     "SELECT dept, COUNT(*) FROM people WHERE person_id IN (SELECT person_id FROM visits WHERE minutes > 5) GROUP BY dept"),
])
def test_exists_inside_or_beside_a_derived_table_is_the_flat_semi_join(derived: str, flat: str) -> None:
    def bound(sql: str) -> object:
        compiled = _compile(sql, TWO_TABLES)
        assert isinstance(compiled, CompiledQuery)
        return dataclasses.replace(compiled.plan.query, sql="")

    assert bound(derived) == bound(flat)
    # Negative control: the same flat query with the predicate negated (or not) is another query.
    negated = flat.replace("NOT EXISTS", "EXISTS") if "NOT EXISTS" in flat else \
        flat.replace("EXISTS", "NOT EXISTS").replace(" IN (", " NOT IN (")
    assert bound(negated) != bound(derived)


def test_an_outer_column_is_not_captured_by_the_subquerys_own_table() -> None:
    # Unqualified inside the subquery, person_id is visits' own (SQL scopes names innermost
    # first): no correlation, refused. The inlined query above qualifies the outer column instead.
    with pytest.raises(Error) as info:
        _compile("SELECT COUNT(*) FROM people WHERE EXISTS (SELECT 1 FROM visits v WHERE v.person_id = person_id)", TWO_TABLES)
    assert info.value.code == "DP138"

"""Scalar subqueries on Spark: the release that reads a scalar subquery's value runs with it as a
typed engine parameter (`CAST(:dpsql_scalar0 AS DOUBLE)` on Spark, `$dpsql_scalar0` on DuckDB),
and its exact values are IDENTICAL on both engines for the same value, NULL included (NULL keeps
no row). Negative control: another value gives other exact values, on both.
"""

from __future__ import annotations

from typing import Any

import pytest

from dpsql.analysis.context import AnalysisContext
from dpsql.backend.engines.engine import EngineResult
from dpsql.backend.sql.engine_dialects import render
from dpsql.execution.compiled import CompiledPost, compile_statement
from tests.spark.conftest import EnginePair, SparkData
from tests.spark.test_parity import assert_identical

QUERIES = [
    "SELECT dept, COUNT(*), SUM(income) FROM people WHERE income > (SELECT AVG(income) FROM people) GROUP BY dept",
    "SELECT COUNT(*) FILTER (WHERE age > (SELECT AVG(age) FROM people)), SUM(age) FROM people",
    "SELECT COUNT(*) FROM people WHERE dept = (SELECT MODE(dept) FROM people)",
]
# Two values that keep different rows, NULL, and a value that keeps no row (each query compares
# with `>` or `=`; NaN is above every number on both engines, so nothing is above NaN): NULL
# must answer as that one.
VALUES = {"DOUBLE": [40.5, 250000.0, None, float("nan")], "VARCHAR": ["sales", "engineering", None, "nobody"]}


def reader(data: SparkData, sql: str) -> tuple[Any, str, str]:
    """The release that reads the parameter, the parameter's name and type."""
    _, compiled = compile_statement(sql, None, AnalysisContext(data.policy, data.policy.budget.default_query))
    assert isinstance(compiled, CompiledPost) and len(compiled.inputs) == 2, sql
    (parameter,) = compiled.query.parameters
    return compiled.inputs[1], parameter.name, parameter.type


def run_with(engine: Any, compiled: Any, name: str, value: Any) -> EngineResult:
    return engine.run(render(compiled.engine, engine.dialect), {name: value})


@pytest.mark.parametrize("sql", QUERIES)
def test_the_reading_release_is_identical_for_each_value(engines: EnginePair, spark_data: SparkData, sql: str) -> None:
    compiled, name, kind = reader(spark_data, sql)
    assert not compiled.uses_seed and not compiled.keyed_columns  # run as Executor._answer runs it
    answers = []
    for value in VALUES[kind]:
        duck, spark = (run_with(e, compiled, name, value) for e in engines)
        answers.append(assert_identical(duck, spark))
    assert answers[0] != answers[1]  # negative control: the value matters, on both engines
    assert answers[2] == answers[3] != answers[0]  # NULL keeps no row

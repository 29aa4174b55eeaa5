"""Golden files for the analyst's expressions on each engine: SQL -> the WHERE clause as DuckDB runs
it and as Spark runs it with DuckDB's meaning (backend/sql/spark_semantics.py, from the DuckDB types the
analysis writes into each node: analysis/expression_types.py).

Each case shows both renderings, so a change in how Spark computes an expression is a visible
diff; tests/spark/test_parity.py runs the same shapes on both engines and compares the answers.
Case file format and DPSQL_UPDATE_GOLDEN=1: see tests/golden/test_golden.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dpsql.analysis.context import AnalysisContext
from dpsql.backend.sql.engine_dialects import render
from dpsql.execution.compiled import CompiledQuery, compile_statement
from tests.golden.test_golden import Case, check_case_file
from tests.golden.test_group_domains_golden import events_policy

CASES = sorted((Path(__file__).parent / "dialects").glob("*.cases"))


def dialect_output(case: Case) -> list[str]:
    policy = events_policy()
    _, compiled = compile_statement(case.sql, case.params, AnalysisContext(policy, policy.budget.default_query))
    assert isinstance(compiled, CompiledQuery), case.sql
    where = compiled.plan.query.where
    assert where is not None, case.sql
    return [f"duckdb: {render(where, 'duckdb')}", f"spark: {render(where, 'spark')}"]


def test_there_are_dialect_cases() -> None:
    assert CASES


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_dialects(path: Path) -> None:
    check_case_file(path, dialect_output)

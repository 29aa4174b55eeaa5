"""Partition selection SQL: key bounding only when a person could touch more than max_groups keys."""

import tomllib

from sqlglot import exp

from dpsql.analysis.context import AnalysisContext
from dpsql.catalog.loader import policy_from_dict
from dpsql.demo.people import policy_text
from dpsql.execution.compiled import compile_statement

SQL = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) region, COUNT(*) FROM people GROUP BY region"


def compiled_for(max_groups: int):  # noqa: ANN201
    policy = policy_from_dict(tomllib.loads(policy_text(None).replace("max_groups = 2", f"max_groups = {max_groups}")))
    _, compiled = compile_statement(SQL, None, AnalysisContext(policy, policy.budget.default_query))
    return compiled


def test_key_bounding_window_when_max_groups_below_max_rows() -> None:
    compiled = compiled_for(2)  # max_rows = 3 in the demo policy
    assert compiled.engine.find(exp.Window) is not None and compiled.uses_seed


def test_no_window_when_max_rows_already_bounds_keys() -> None:
    compiled = compiled_for(3)
    assert compiled.engine.find(exp.Window) is None and not compiled.uses_seed
    assert "COUNT(DISTINCT \"person_id\") AS __units" in compiled.engine_sql

"""The lineage of a UNION ALL of releases, read off the tree (analysis/post_processing._union_lineage).

What must hold: for every UNION ALL whose branches are releases only, the direct lineage equals
the general path's (sqlglot's qualify, then the tracer), so intervals and noisy flags are the
same; any other shape (an outer filter, a UNION without ALL, a set-level ORDER BY) takes the
general path. Negative control: a direct lineage that reads each branch's first column only is
told apart by the same comparison.
"""

from __future__ import annotations

import tomllib

import pytest

from dpsql.analysis import post_processing
from dpsql.analysis.context import AnalysisContext
from dpsql.catalog.loader import policy_from_dict
from dpsql.demo.people import policy_text
from dpsql.execution.compiled import CompiledPost, compile_statement
from dpsql.ir.post_query import OutputLineage, released_column

UNIONS = [
    "SELECT 'all' AS k, COUNT(*) AS n FROM people UNION ALL SELECT 'older', COUNT(*) FROM people WHERE age > 40",
    "SELECT dept, COUNT(*) FROM people GROUP BY dept UNION ALL SELECT region, COUNT(*) FROM people GROUP BY region",
    "SELECT dept, AVG(income), COUNT(*) FROM people GROUP BY dept UNION ALL SELECT 'total', AVG(income), COUNT(*) FROM people "
    "UNION ALL SELECT 'old', SUM(income) / 10, COUNT(*) FROM people WHERE age > 60",
    "SELECT COUNT(*) AS n, dept FROM people GROUP BY dept UNION ALL SELECT COUNT(*), 'x' FROM people",
]
OTHER_SHAPES = [
    "SELECT k, n FROM (SELECT 'all' AS k, COUNT(*) AS n FROM people UNION ALL SELECT 'old', COUNT(*) FROM people WHERE age > 40) t",
    "SELECT dept, COUNT(*) FROM people GROUP BY dept UNION SELECT region, COUNT(*) FROM people GROUP BY region",
    "SELECT dept, COUNT(*) AS n FROM people GROUP BY dept UNION ALL SELECT region, COUNT(*) FROM people GROUP BY region ORDER BY n",
]


def _lineage(sql: str) -> tuple[OutputLineage, ...] | None:
    policy = policy_from_dict(tomllib.loads(policy_text(None)))
    _, compiled = compile_statement(sql, None, AnalysisContext(policy, policy.budget.default_query))
    assert isinstance(compiled, CompiledPost)
    return compiled.query.lineage


def _general(monkeypatch: pytest.MonkeyPatch, sql: str) -> tuple[OutputLineage, ...] | None:
    with monkeypatch.context() as patch:
        patch.setattr(post_processing, "_union_lineage", lambda *args: None)
        return _lineage(sql)


@pytest.mark.parametrize("sql", UNIONS)
def test_direct_lineage_equals_the_general_path(monkeypatch: pytest.MonkeyPatch, sql: str) -> None:
    calls = []
    direct = post_processing._union_lineage

    def counted(*args: object) -> object:
        result = direct(*args)  # type: ignore[arg-type]
        calls.append(result is not None)
        return result

    with monkeypatch.context() as patch:
        patch.setattr(post_processing, "_union_lineage", counted)
        fast = _lineage(sql)
    assert calls == [True]  # the direct path answered
    assert fast is not None and fast == _general(monkeypatch, sql)


@pytest.mark.parametrize("sql", OTHER_SHAPES)
def test_other_shapes_take_the_general_path(sql: str) -> None:
    assert _lineage(sql) is not None
    policy = policy_from_dict(tomllib.loads(policy_text(None)))
    _, compiled = compile_statement(sql, None, AnalysisContext(policy, policy.budget.default_query))
    assert isinstance(compiled, CompiledPost)
    inputs = compiled.query.inputs
    columns = {(i, released_column(j)): j for i, inp in enumerate(inputs) for j in range(len(inp.query.outputs))}
    keys = {(i, j): o.key is not None for i, inp in enumerate(inputs) for j, o in enumerate(inp.query.outputs)}
    index = {inp.name: i for i, inp in enumerate(inputs)}
    assert post_processing._union_lineage(compiled.query.outer, index, columns, keys) is None


def test_control_a_wrong_direct_lineage_is_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    sql = UNIONS[1]
    direct = post_processing._union_lineage

    def first_column_only(*args: object) -> tuple[OutputLineage, ...] | None:
        result = direct(*args)  # type: ignore[arg-type]
        return None if result is None else tuple(result[0] for _ in result)

    with monkeypatch.context() as patch:
        patch.setattr(post_processing, "_union_lineage", first_column_only)
        wrong = _lineage(sql)
    assert wrong != _general(monkeypatch, sql)

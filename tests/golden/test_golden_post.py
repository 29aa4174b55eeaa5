"""Golden files for post-processing queries: SQL -> EXPLAIN text (each release's plan, cost and
engine SQL, the outer query over the released tables, the total cost), with no data or budget.

Case files: tests/golden/post/*.plan, in the format of test_golden.py (regenerate with
DPSQL_UPDATE_GOLDEN=1 and review the diff).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dpsql.execution.compiled import CompiledPost
from tests.golden.test_golden import Case, check_case_file, compile_sql

POST_FILES = sorted((Path(__file__).parent / "post").glob("*.plan"))


def explain_output(case: Case) -> list[str]:
    compiled = compile_sql(case.sql, case.params)
    assert isinstance(compiled, CompiledPost), f"not a post-processing query: {case.sql}"
    return compiled.explain_lines()


def test_post_case_files_exist() -> None:
    assert POST_FILES


@pytest.mark.parametrize("path", POST_FILES, ids=lambda p: p.stem)
def test_post_explain(path: Path) -> None:
    check_case_file(path, explain_output)

"""Other dialects' aggregate spellings and output aliases that shadow a column, compiled against
the demo policy (dpsql's extensions beyond the normative grammar in grammar/dpsql.lark).

COUNT_BIG, VAR, STDEV, VARP and STDEVP bind as COUNT and the sample/population statistics (the
same plan as the standard spelling); `SUM(income) AS income ... ORDER BY income` reads the alias
because the column alone is neither aggregated nor grouped. Controls: an ungrouped column without
such an alias is still DP105, and the alias never hides a GROUP BY key of the same name."""

from __future__ import annotations

import tomllib

import pytest

from dpsql.analysis.context import AnalysisContext
from dpsql.catalog.loader import policy_from_dict
from dpsql.demo.people import policy_text
from dpsql.errors import UnsupportedQueryError
from dpsql.execution.compiled import compile_statement

POLICY = policy_from_dict(tomllib.loads(policy_text(None)))


def plan(sql: str):  # type: ignore[no-untyped-def]
    return compile_statement(sql, None, AnalysisContext(POLICY, POLICY.budget.default_query))[1].plan


@pytest.mark.parametrize(("other", "standard"), [
    ("COUNT_BIG(*)", "COUNT(*)"), ("COUNT_BIG(DISTINCT person_id)", "COUNT(DISTINCT person_id)"),
    ("VAR(age)", "VAR_SAMP(age)"), ("STDEV(age)", "STDDEV_SAMP(age)"), ("VARP(age)", "VAR_POP(age)"),
    ("STDEVP(age)", "STDDEV_POP(age)"),
])
def test_other_spellings_plan_as_the_standard_one(other: str, standard: str) -> None:
    a, b = plan(f"SELECT {other} AS x FROM people"), plan(f"SELECT {standard} AS x FROM people")
    assert a.releases == b.releases and a.cost == b.cost


def test_an_alias_shadowing_an_ungrouped_column_is_the_alias() -> None:
    p = plan("SELECT dept, SUM(income) AS income FROM people GROUP BY dept HAVING income > 0 ORDER BY income DESC")
    assert p.query.having is not None and len(p.query.aggregates) == 1


def test_control_an_ungrouped_column_without_alias_is_refused() -> None:
    with pytest.raises(UnsupportedQueryError) as caught:
        plan("SELECT dept, SUM(income) AS total FROM people GROUP BY dept ORDER BY income")
    assert caught.value.code == "DP105"


def test_control_a_group_key_wins_over_an_alias_of_its_name() -> None:
    p = plan("SELECT dept, COUNT(*) AS region FROM people GROUP BY dept, region ORDER BY region")
    assert p.query.order[0].expr.sql() != p.query.outputs[1].expr.sql()  # ORDER BY the key region, not COUNT(*)

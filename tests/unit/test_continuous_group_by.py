"""DP141: GROUP BY a bare continuous column (float or timestamp without declared `values` or
`precision`) is refused at compile time, before any charge, with the bucketing that answers.
The rule reads the policy's types and declarations only; the accepted neighbours (a bucket of
the same column, an int column, declared values or precision) show it refuses nothing else."""

from __future__ import annotations

import tomllib

import pytest

from dpsql.analysis.context import AnalysisContext
from dpsql.catalog.loader import policy_from_dict
from dpsql.errors import UnsupportedQueryError
from dpsql.execution.compiled import compile_statement

POLICY = policy_from_dict(tomllib.loads("""
[budget]
epsilon = 1.0
delta = 1e-6
default_query_epsilon = 0.1
default_query_delta = 1e-8

[tables.t]
privacy_unit = "uid"
[tables.t.columns]
uid = { type = "int" }
amount = { type = "float", lower = 0, upper = 1000 }
price = { type = "float", lower = 0, upper = 10, precision = 0.5 }
rate = { type = "float", values = [0.5, 1.5] }
ts = { type = "timestamp" }
score = { type = "int" }
"""))


def compile_sql(sql: str) -> object:
    return compile_statement(sql, None, AnalysisContext(POLICY, POLICY.budget.default_query))


@pytest.mark.parametrize("sql", [
    "SELECT amount, COUNT(*) FROM t GROUP BY amount",
    "SELECT amount AS a, COUNT(*) FROM t GROUP BY a",
    "SELECT amount, COUNT(*) FROM t GROUP BY 1",
    "SELECT ts, SUM(amount) FROM t GROUP BY ts",
    "SELECT score, amount, COUNT(*) FROM t GROUP BY score, amount",
])
def test_a_bare_continuous_key_is_refused_with_a_bucket_as_the_fix(sql: str) -> None:
    with pytest.raises(UnsupportedQueryError) as caught:
        compile_sql(sql)
    assert caught.value.code == "DP141"
    assert "FLOOR(" in str(caught.value.hint) or "date_trunc('day', ts)" in str(caught.value.hint)
    if "GROUP BY 1" not in sql:  # a position is resolved before binding: no caret (as for DP107)
        assert caught.value.span is not None  # a caret under the key


@pytest.mark.parametrize("sql", [
    "SELECT FLOOR(amount / 100) * 100 AS b, COUNT(*) FROM t GROUP BY b",
    "SELECT date_trunc('day', ts) AS d, COUNT(*) FROM t GROUP BY d",
    "SELECT score, COUNT(*) FROM t GROUP BY score",
    "SELECT rate, COUNT(*) FROM t GROUP BY rate",
    "SELECT price, COUNT(*) FROM t GROUP BY price",
])
def test_buckets_discrete_columns_and_declared_domains_are_accepted(sql: str) -> None:
    compile_sql(sql)  # the control: the same shapes the rule must not touch

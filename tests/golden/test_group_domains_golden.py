"""Golden files for GROUP BY expressions over dates, timestamps and numbers: SQL -> the derived
public domain (every key, as released) and the engine SQL.

The domain is derived from the policy alone (analysis/group_domains.py), narrowed by the WHERE's
constant ranges; these files show it in full, so a change in what a key's domain holds is a
visible diff, then the engine SQL for DuckDB and for Spark (the key with DuckDB's meaning). The policy below has a date and
a timestamp column (the demo has neither). Case file format and DPSQL_UPDATE_GOLDEN=1: see
tests/golden/test_golden.py.
"""

from __future__ import annotations

import tomllib
from datetime import date, datetime
from functools import cache
from pathlib import Path

import pytest

from dpsql.analysis.context import AnalysisContext
from dpsql.backend.sql.engine_dialects import render
from dpsql.catalog.loader import policy_from_dict
from dpsql.catalog.policy import Policy
from dpsql.execution.compiled import CompiledQuery, compile_statement
from tests.golden.test_golden import Case, check_case_file

CASES = sorted((Path(__file__).parent / "group_domains").glob("*.cases"))

EVENTS_POLICY = """
[budget]
epsilon = 10.0
delta = 1e-5
default_query_epsilon = 0.1
default_query_delta = 1e-8

[tables.events]
privacy_unit = "user_id"
max_rows = 4
max_groups = 2

[tables.events.columns]
user_id = { type = "int" }
day     = { type = "date", lower = 2023-11-15, upper = 2024-12-31 }
seen_at = { type = "timestamp", lower = 2024-01-01T00:00:00, upper = 2024-03-31T23:59:59 }
amount  = { type = "float", lower = 0, upper = 100 }
score   = { type = "int", lower = -5, upper = 5 }
kind    = { type = "text", values = ["view", "click", "buy"] }
flag    = { type = "bool" }
"""


@cache
def events_policy() -> Policy:
    return policy_from_dict(tomllib.loads(EVENTS_POLICY))


def domain_output(case: Case) -> list[str]:
    policy = events_policy()
    _, compiled = compile_statement(case.sql, case.params, AnalysisContext(policy, policy.budget.default_query))
    assert isinstance(compiled, CompiledQuery), case.sql
    lines = []
    for key in compiled.plan.query.keys:
        values = key.column.values
        shown = "partition selection" if values is None else "[" + ", ".join(_text(v) for v in values) + "]"
        lines.append(f"key {key.column.name} ({key.column.type}): {shown}")
    return [*lines, render(compiled.engine), "spark: " + render(compiled.engine, "spark")]


def _text(value: object) -> str:
    return value.isoformat(sep=" ") if isinstance(value, datetime) else value.isoformat() if isinstance(value, date) else repr(value)


def test_there_are_domain_cases() -> None:
    assert CASES


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_group_domains(path: Path) -> None:
    check_case_file(path, domain_output)

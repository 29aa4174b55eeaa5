"""Which queries the layer takes (measurable over X) and why it leaves the others (EXPLAIN text)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpsql.analysis.context import AnalysisContext
from dpsql.catalog.loader import load_policy
from dpsql.execution.compiled import compile_statement
from dpsql.ir.query import BoundQuery
from dpsql.planner.measurable import MMQuery, measurable
from tests.unit.mechanisms.median_mechanism.support import write_policy


@pytest.fixture
def policy(tmp_path: Path):
    path = write_policy(tmp_path, columns=["dept", "region", "age", "income"], bins={"income": [0, 1000, 50000.5, 500001]})
    return load_policy(path)


def bound(policy, sql: str) -> BoundQuery:  # type: ignore[no-untyped-def]
    _, compiled = compile_statement(sql, None, AnalysisContext(policy, policy.budget.default_query))
    return compiled.plan.query


def check(policy, sql: str) -> MMQuery | str:  # type: ignore[no-untyped-def]
    return measurable(bound(policy, sql), policy.table("people").median_mechanism)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT COUNT(*) FROM people",
        "SELECT COUNT(*) FROM people WHERE age BETWEEN 30 AND 39 AND dept IN ('sales', 'hr')",
        "SELECT COUNT(*) FROM people WHERE lower(dept) LIKE 's%' OR age % 7 = 0",  # any deterministic SQL on exact columns
        "SELECT COUNT(region) FROM people WHERE NOT region = 'north'",
        "SELECT dept, COUNT(*) FROM people GROUP BY dept",
        "SELECT dept, region, COUNT(*) AS n FROM people WHERE age > 40 GROUP BY dept, region HAVING n > 10 ORDER BY n DESC LIMIT 3",
        "SELECT 2 * COUNT(*) + 1 FROM people",
        "SELECT COUNT(*) FROM people WHERE income >= 1000 AND income < 50000.5",  # cuts on bin edges
        "SELECT COUNT(*) FROM people WHERE 1000 <= income",
        "SELECT COUNT(*) FROM people WHERE income IS NULL",
        "SELECT COUNT(*) FROM people WHERE NOT (income < 1000)",
    ],
)
def test_measurable(policy, sql: str) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(check(policy, sql), MMQuery), check(policy, sql)


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ("SELECT SUM(age) FROM people", "not a counting query"),
        ("SELECT COUNT(*), COUNT(age) FROM people", "one COUNT"),
        ("SELECT COUNT(DISTINCT person_id) FROM people", "not a counting query"),
        ("SELECT COUNT(*) FROM people WHERE person_id > 3", "'person_id'"),
        ("SELECT COUNT(person_id) FROM people", "'person_id' is not a column of the layer"),
        ("SELECT COUNT(*) FROM people WHERE income > 999", "cuts through its bins"),
        ("SELECT COUNT(*) FROM people WHERE income <= 1000", "cuts through its bins"),  # 1000 itself is in [1000, 50000.5)
        ("SELECT COUNT(*) FROM people WHERE income = 5", "cuts through its bins"),
        ("SELECT COUNT(*) FROM people WHERE income + 1 > 1000", "cuts through its bins"),
        ("SELECT COUNT(*) FROM people WHERE income BETWEEN 0 AND 999", "cuts through its bins"),
        ("SELECT age, COUNT(*) FROM people GROUP BY age", "GROUP BY age"),
    ],
)
def test_not_measurable_says_why(policy, sql: str, words: str) -> None:  # type: ignore[no-untyped-def]
    reason = check(policy, sql)
    assert isinstance(reason, str) and words in reason


def test_int_bins_accept_integer_equivalent_cuts(tmp_path: Path) -> None:
    policy = load_policy(write_policy(tmp_path, bins={"age": [18, 30, 40, 91]}))
    ok = ["age >= 30", "age > 29", "age <= 39", "age < 40", "age > 29.5", "age BETWEEN 30 AND 39", "age <> 17", "age = 95"]
    bad = ["age >= 31", "age > 30", "age = 35", "age BETWEEN 30 AND 35", "age IN (30, 31)"]
    for predicate in ok:
        assert isinstance(check(policy, f"SELECT COUNT(*) FROM people WHERE {predicate}"), MMQuery), predicate
    for predicate in bad:
        assert isinstance(check(policy, f"SELECT COUNT(*) FROM people WHERE {predicate}"), str), predicate


def test_group_by_needs_declared_values(tmp_path: Path) -> None:
    policy = load_policy(write_policy(tmp_path, columns=["dept", "age"]))
    assert "declared values" in check(policy, "SELECT age, COUNT(*) FROM people GROUP BY age")


def test_normalised_text_ignores_spelling(policy) -> None:  # type: ignore[no-untyped-def]
    a = check(policy, "SELECT COUNT(*) FROM people WHERE age>30")
    b = check(policy, "select count(*)   from PEOPLE where AGE > 30")
    assert isinstance(a, MMQuery) and isinstance(b, MMQuery) and a.text == b.text

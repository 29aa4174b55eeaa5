"""The ledger's plan identity (ir/identity.py): the digest of a canonical form of the plan, not of
its EXPLAIN text. It follows what the plan computes (epsilon, filter, bounds, mechanism), not where
the data file lies; every accepted statement of the golden corpus has one; and a ledger written
with the old EXPLAIN-text digests is read and charged as before (plan_hash is an identity column)."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import dpsql
from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import Ledger
from dpsql.analysis.context import AnalysisContext
from dpsql.catalog.loader import load_policy
from dpsql.errors import Error
from dpsql.execution.compiled import CompiledPost, CompiledQuery, compile_statement
from dpsql.ir.identity import canonical_form, plan_identity
from tests.golden.test_golden import ACCEPT, demo_policy

COUNT = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = {e}) dept, COUNT(*) FROM people WHERE age > 30 GROUP BY dept"


def identity(sql: str, policy: Any = None) -> str:
    policy = policy or demo_policy()
    _, compiled = compile_statement(sql, None, AnalysisContext(policy, policy.budget.default_query))
    assert isinstance(compiled, (CompiledQuery, CompiledPost))
    return compiled.plan_hash()


def test_the_identity_follows_what_the_plan_computes() -> None:
    base = identity(COUNT.format(e=0.5))
    assert identity(COUNT.format(e=0.5)) == base  # compiled again: the same plan
    assert len(base) == 16 and int(base, 16) >= 0  # the width the ledger has always held
    assert identity(COUNT.format(e=0.50001)) != base  # another epsilon
    assert identity(COUNT.format(e=0.5).replace("age > 30", "age > 31")) != base  # another filter
    assert identity(COUNT.format(e=0.5).replace("COUNT(*)", "COUNT(*), AVG(income)")) != base
    robust = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-7{m}) MEDIAN(income) FROM people"
    assert identity(robust.format(m="")) != identity(robust.format(m=", quantile_mechanism = 'smed'"))


def test_the_identity_ignores_where_the_data_file_lies(policy_file: Callable[..., Path]) -> None:
    here = load_policy(policy_file(name="a.toml", source="here/people.parquet"))
    there = load_policy(policy_file(name="b.toml", source="/elsewhere/people.parquet"))
    bounded = load_policy(policy_file(name="c.toml", source="here/people.parquet", max_rows=2))
    sql = COUNT.format(e=0.5)
    assert identity(sql, here) == identity(sql, there)
    assert identity(sql, bounded) != identity(sql, here)  # max_rows is part of the plan (negative control)


def test_every_accepted_statement_has_an_identity_and_distinct_plans_differ() -> None:
    forms: dict[str, str] = {}
    for path in ACCEPT:
        sql = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("--"))
        try:
            _, compiled = compile_statement(sql, None, AnalysisContext(demo_policy(), demo_policy().budget.default_query))
        except Error:
            continue  # accepted only with data (a join's public facts): covered by the joins' goldens
        if not isinstance(compiled, (CompiledQuery, CompiledPost)):
            continue
        parts = (compiled.plan,) if isinstance(compiled, CompiledQuery) else (compiled.query, tuple(c.plan for c in compiled.inputs))
        forms[canonical_form(*parts)] = compiled.plan_hash()
    assert len(forms) >= 15
    assert len(set(forms.values())) == len(forms)  # no two distinct plans share an identity


def test_a_value_without_a_canonical_form_is_refused() -> None:
    with pytest.raises(TypeError, match="no canonical form"):
        plan_identity(object())


def test_a_ledger_of_explain_text_digests_is_read_and_charged_as_before(tmp_path: Path, policy_file: Callable[..., Path],
                                                                        people_frame: Any) -> None:
    path = tmp_path / "ledger.sqlite"
    budget = PrivacyCost(Fraction(10), Fraction(1, 10**5))
    cost = PrivacyCost(Fraction(1, 10), Fraction(0))
    with Ledger(path) as ledger:  # rows as an older release wrote them: digests of EXPLAIN text
        for digest in ("9f2c4e1a7b3d5e60", "0a1b2c3d4e5f6789"):
            ledger.charge(analyst="analyst", session="old", query="SELECT COUNT(*) FROM people", plan_hash=digest,
                          mechanism="laplace", params={}, cost=cost, budget=budget, accountant="basic")
    con = dpsql.connect(policy=policy_file(accountant="basic"), tables={"people": people_frame}, ledger=str(path))
    try:
        con.execute("SELECT COUNT(*) FROM people").fetchall()
        entries = con.session.ledger_entries()
        assert [e.plan_hash for e in entries[:2]] == ["9f2c4e1a7b3d5e60", "0a1b2c3d4e5f6789"]
        assert entries[2].plan_hash == con.session.compile("SELECT COUNT(*) FROM people").compiled.plan_hash()
        assert con.session.spent.epsilon == Fraction(2, 10) + entries[2].cost.epsilon
    finally:
        con.close()

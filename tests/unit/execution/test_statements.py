"""Compiled statements are immutable values: running, describing or explaining one changes nothing
in it, two sessions compiling the same SQL share nothing mutable, and what a session derives from
a statement lives in its own state (execution/state.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlglot import exp

import dpsql
from dpsql.catalog.loader import load_policy
from dpsql.execution.compiled import CompiledPost, CompiledQuery
from dpsql.execution.statements import Explain, Public, Setting
from dpsql.ir.identity import canonical_form

QUERIES = (
    "SELECT COUNT(*) FROM people",
    "SELECT dept, COUNT(*), AVG(income) FROM people WHERE age > 30 GROUP BY dept",
    "SELECT region, SUM(income) FROM people GROUP BY region",  # partition selection, keyed relation
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-7) MEDIAN(income), IQR(age), MODE(dept) FROM people",
    "SELECT dept, COUNT(*) AS n FROM people GROUP BY dept ORDER BY n DESC LIMIT 3",  # post-processing SQL
    "SELECT * FROM (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) t WHERE n > 10",  # a CompiledPost
)


def _reachable(root: object) -> Iterator[object]:
    """Every object reachable from a compiled statement through fields, containers and sqlglot nodes."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        value = stack.pop()
        if id(value) in seen or value is None or isinstance(value, (str, int, float, bool, bytes)):
            continue
        seen.add(id(value))
        yield value
        if isinstance(value, exp.Expr):
            stack.extend(value.args.values())
            if getattr(value, "_meta", None):
                stack.append(value._meta)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            stack.extend(getattr(value, f.name) for f in dataclasses.fields(value))
        elif isinstance(value, dict) or hasattr(value, "items"):
            for key, item in value.items():
                stack.extend((key, item))
        elif isinstance(value, (list, tuple, set, frozenset)):
            stack.extend(value)


def _mutable(root: object) -> dict[int, object]:
    """The mutable objects reachable from `root` (containers a run could write into, and sqlglot nodes)."""
    return {id(v): v for v in _reachable(root) if isinstance(v, (dict, list, set, bytearray, exp.Expr))}


def _snapshot(compiled: CompiledQuery | CompiledPost) -> tuple[object, ...]:
    """What a compiled statement is: every field (by identity) and the canonical form of its whole
    value (sqlglot trees included), which any change inside it would alter."""
    fields = tuple(getattr(compiled, f.name) for f in dataclasses.fields(compiled))
    return tuple(id(f) for f in fields) + (canonical_form(*fields),)


@pytest.mark.parametrize("sql", QUERIES)
def test_running_a_compiled_statement_leaves_it_unchanged(connect: Callable[..., dpsql.Connection], sql: str) -> None:
    con = connect(random_seed=3)
    session = con.session
    statement = session.compile(sql)
    compiled = statement.compiled
    assert isinstance(compiled, (CompiledQuery, CompiledPost))
    before = _snapshot(compiled)
    for _ in range(2):  # the first run fills the session's state, the second reads it
        con.execute(sql).fetchall()
    session.describe(sql)
    session.explain(sql)
    session.cost_of(sql)
    assert session.compile(sql).compiled is compiled  # the same plan ran every time
    assert _snapshot(compiled) == before
    assert not hasattr(compiled, "__dict__")  # slots only: nothing can be remembered on it
    with pytest.raises(dataclasses.FrozenInstanceError):
        compiled.statement = compiled.statement  # type: ignore[misc]
    # The detector itself: a change inside the engine tree is seen (negative control).
    target = compiled if isinstance(compiled, CompiledQuery) else compiled.inputs[0]
    target.engine.set("distinct", exp.Distinct())
    assert _snapshot(compiled) != before


def test_two_sessions_compiling_the_same_sql_share_nothing_mutable(connect: Callable[..., dpsql.Connection],
                                                                  policy_file: Callable[..., Any]) -> None:
    policy = load_policy(policy_file())  # one Policy object for both, as the server's sessions share it
    first, second = connect(policy=policy, random_seed=1), connect(policy=policy, random_seed=1)
    for sql in QUERIES:
        a, b = first.session.compile(sql).compiled, second.session.compile(sql).compiled
        first.execute(sql).fetchall()
        shared = _mutable(a).keys() & _mutable(b).keys()
        assert not shared, [type(_mutable(a)[i]).__name__ for i in shared]
        # Each session keeps its own record: the second has run nothing yet.
        queries = a.inputs if isinstance(a, CompiledPost) else (a,)
        others = b.inputs if isinstance(b, CompiledPost) else (b,)
        for ran, fresh in zip(queries, others):
            assert first.session._executor.state.query(ran).dry_runs_passed
            assert not second.session._executor.state.query(fresh).dry_runs_passed
            assert first.session._executor.state.query(ran) is not second.session._executor.state.query(ran)
    # The detector itself: one session's statement compiled twice is one object (negative control).
    again = first.session.compile(QUERIES[0]).compiled
    assert _mutable(again).keys() & _mutable(first.session.compile(QUERIES[0]).compiled).keys()


def test_the_session_state_holds_settings_and_records(connect: Callable[..., dpsql.Connection]) -> None:
    con = connect(random_seed=2)
    session = con.session
    state = session._executor.state
    assert isinstance(session.compile("SET dpsql.epsilon = 0.25"), Setting)
    assert isinstance(session.compile("EXPLAIN SELECT COUNT(*) FROM people"), Explain)
    con.execute("SET dpsql.epsilon = 0.25")
    assert float(state.default_budget.epsilon) == 0.25 == float(session.default_query_budget.epsilon)
    con.execute(QUERIES[0]).fetchall()
    compiled = session.compile(QUERIES[0]).compiled
    record = state.query(compiled)
    assert record.dry_runs_passed and record.charge is not None
    assert record.charge.plan_hash == compiled.plan_hash() == session.ledger_entries()[-1].plan_hash
    assert record.text(compiled.engine) is record.text(compiled.engine)  # rendered once


def test_public_statements_go_through_the_same_protocol(policy_file: Callable[..., Any]) -> None:
    import pandas as pd

    extra = '\n[tables.depts]\npublic = true\n[tables.depts.columns]\nname = { type = "text" }\n'
    con = dpsql.connect(policy=policy_file(name="public.toml", extra=extra),
                        tables={"depts": pd.DataFrame({"name": ["a", "b"]})}, ledger=":memory:")
    try:
        assert isinstance(con.session.compile("SELECT COUNT(*) FROM depts"), Public)
        assert con.execute("SELECT COUNT(*) FROM depts").fetchall() == [(2,)]
        assert con.session.cost_of("SELECT COUNT(*) FROM depts").epsilon == 0
    finally:
        con.close()


def test_the_charger_reads_the_budget_the_session_holds(connect: Callable[..., dpsql.Connection], policy_file: Callable[..., Any]) -> None:
    # No closure into the Session: the Charger holds the budget as a value, and a new policy sets it.
    from dpsql.errors import BudgetExhaustedError

    con = connect(policy=policy_file(epsilon=10.0, accountant="basic"))
    session = con.session
    charger = session._executor.charger
    assert charger.total() == session.total_budget and not callable(charger.budget)
    con.execute("SELECT COUNT(*) FROM people").fetchall()  # epsilon 0.1 of 10
    smaller = load_policy(policy_file(name="smaller.toml", epsilon=0.15, accountant="basic"))
    session.policy = smaller
    assert charger.total() == smaller.budget_for(session.analyst)
    with pytest.raises(BudgetExhaustedError):  # 0.1 + 0.1 > 0.15 under the new budget
        con.execute("SELECT COUNT(*) FROM people").fetchall()

"""The session's plan cache holds only data-free, non-random compile results: a repeated query
reuses its plan but is charged again and draws fresh noise and fresh per-query seeds; a SET or
another policy gives a new plan."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import pytest

import dpsql
from dpsql.catalog.loader import load_policy
from dpsql.errors import BudgetExhaustedError
from dpsql.mechanisms.rng import SeededRandomSource

COUNT = "SELECT COUNT(*) FROM people"
MODE = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (mode_blocks = 50) MODE(region) FROM people"  # A_samp: seeded per query


class CountingSource(SeededRandomSource):
    """A seeded source that counts its draws (the noise and seeds of each query come from it)."""

    __slots__ = ("draws",)

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.draws = 0

    def randbelow(self, n: int) -> int:
        self.draws += 1
        return super().randbelow(n)


def _session_with(connect: Callable[..., dpsql.Connection], source: SeededRandomSource, policy_file: Callable[..., Any]) -> Any:
    con = connect(policy=policy_file(replay_seconds=0))  # replay off: every repeat is charged and noised anew
    session = con.session
    # The executor's noise and its engine calls' seeds read the source the session was given.
    session._executor._rng = source
    session._executor.calls._rng = source
    return con, session


def test_repeated_query_reuses_the_plan_and_draws_fresh_noise(connect: Callable[..., dpsql.Connection],
                                                               policy_file: Callable[..., Any]) -> None:
    source = CountingSource(11)
    con, session = _session_with(connect, source, policy_file)
    values, draws = [], []
    for _ in range(6):
        before = source.draws
        values.append(con.execute(COUNT).fetchone()[0])
        draws.append(source.draws - before)
    assert session.compile(COUNT).compiled is session.compile(COUNT).compiled  # the cached plan
    assert all(d > 0 for d in draws)  # every answer drew its own noise, after its own charge
    assert len(set(values)) > 1
    assert len(session.ledger_entries()) == 6


def test_repeated_query_gets_fresh_per_query_seeds(connect: Callable[..., dpsql.Connection], policy_file: Callable[..., Any]) -> None:
    con, session = _session_with(connect, CountingSource(12), policy_file)
    calls = session._executor.calls
    seen: list[Mapping[str, Any]] = []
    run = calls.run

    def recording(sql: str, params: Mapping[str, Any] | None = None) -> Any:
        if params:
            seen.append(dict(params))
        return run(sql, params)

    calls.run = recording
    con.execute(MODE).fetchall()
    con.execute(MODE).fetchall()
    seeded = [p for p in seen if "mode_seed" in p]
    assert len(seeded) == 2, seen
    assert seeded[0]["mode_seed"] != seeded[1]["mode_seed"] and seeded[0]["tie_seed"] != seeded[1]["tie_seed"]


def test_set_gives_a_new_plan_and_its_cost_is_charged(connect: Callable[..., dpsql.Connection]) -> None:
    con = connect()
    session = con.session
    before = session.compile(COUNT).compiled
    con.execute("SET dpsql.epsilon = 0.25")
    after = session.compile(COUNT).compiled
    assert after is not before and after.plan.cost.epsilon == Fraction(1, 4)
    con.execute(COUNT).fetchall()
    assert session.ledger_entries()[-1].cost.epsilon == Fraction(1, 4)
    con.execute(f"SET dpsql.epsilon = {float(before.plan.cost.epsilon)}")
    assert session.compile(COUNT).compiled.plan.cost == before.plan.cost


def test_another_policy_gives_a_new_plan(connect: Callable[..., dpsql.Connection], policy_file: Callable[..., Any]) -> None:
    con = connect(policy=policy_file(max_rows=3))
    session = con.session
    first = session.compile(COUNT).compiled
    assert first.plan.cost.losses[0].sensitivity == 3
    session.policy = load_policy(policy_file(name="other.toml", max_rows=2))
    second = session.compile(COUNT).compiled
    assert second is not first and second.plan.cost.losses[0].sensitivity == 2


def test_a_cached_plan_is_refused_in_the_same_words_and_never_charged(connect: Callable[..., dpsql.Connection],
                                                                     policy_file: Callable[..., Any]) -> None:
    # 0.123456789 prints differently under :g and .12g, so the two refusal texts would differ
    con = connect(policy=policy_file(epsilon=0.4, default_epsilon=0.123456789, accountant="basic", replay_seconds=0))
    session = con.session
    for _ in range(3):
        con.execute(COUNT).fetchall()
    assert session._executor.state.query(session.compile(COUNT).compiled).dry_runs_passed  # the repeat skips the fail-fast check
    with pytest.raises(BudgetExhaustedError) as cached:
        con.execute(COUNT)
    other = "SELECT COUNT(*) FROM people WHERE age > 1"  # a new plan: refused by the fail-fast check
    with pytest.raises(BudgetExhaustedError) as fresh:
        con.execute(other)
    assert str(cached.value) == str(fresh.value).replace(other, COUNT)
    assert cached.value.remaining == fresh.value.remaining and len(session.ledger_entries()) == 3

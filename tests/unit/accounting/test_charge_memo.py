"""The ledger's per-query shortcuts change no answer: a composition's remembered `add` equals a
fresh one, and `more` ("queries left") follows every charge, this ledger object's or another's."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

from dpsql.accounting.accountant import accountant
from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.accounting.ledger import Ledger

BUDGET = PrivacyCost(Fraction(1), Fraction(1, 10**6))
LOSS = PrivacyLoss("discrete_laplace", "laplace", Fraction(1, 10), Fraction(0), Fraction(3), Fraction(30))
COST = PrivacyCost(LOSS.epsilon, LOSS.delta, (LOSS,))


def _charge(ledger: Ledger) -> None:
    ledger.charge(analyst="a", session="s", query="q", plan_hash="h", mechanism="laplace",
                  params={"losses": [LOSS.record()]}, cost=COST, budget=BUDGET, accountant="pld")


def test_a_remembered_add_is_the_same_composition() -> None:
    for name in ("pld", "zcdp", "basic"):
        history = accountant(name).empty().add([LOSS], 3)
        first = history.add([LOSS])
        again = history.add((PrivacyLoss(*[getattr(LOSS, f) for f in LOSS.__slots__]),))  # equal terms, other objects
        fresh = accountant(name).empty().add([LOSS], 4)
        assert again is first and first.tally == fresh.tally and first.count == fresh.count == 4
        assert first.epsilon_at(BUDGET.delta) == fresh.epsilon_at(BUDGET.delta)
        other = history.add([PrivacyLoss("approx_dp", "x", Fraction(1, 5), Fraction(1, 10**8))])
        assert other is not first and other.count == 4 and other.basic_epsilon == Fraction(3, 10) + Fraction(1, 5)


def test_queries_left_follows_every_charge(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger, Ledger(path) as other:
        counts = [ledger.more("a", COST, BUDGET, "pld")]
        assert ledger.more("a", COST, BUDGET, "pld") == counts[0]  # asked again, nothing charged
        for charger in (ledger, ledger, other, ledger):
            _charge(charger)
            counts.append(ledger.more("a", COST, BUDGET, "pld"))
        assert counts == [counts[0] - i for i in range(5)]
        assert other.more("a", COST, BUDGET, "pld") == counts[-1]


def _content(con: Any) -> list[tuple[object, ...]]:
    """Each charge row but its id and time."""
    return [row[1:3] + row[4:] for row in con.session._ledger._store.rows(None)]


def test_a_repeated_query_writes_the_rows_a_fresh_render_writes(connect: Any) -> None:
    # The charge record is rendered once per compiled plan and reused: the rows must be those a
    # fresh connection (nothing memoised) writes, for a plain query and a post-processing one,
    # and a query at another epsilon (another plan, another cost) must never reuse the first's.
    queries = ["SELECT COUNT(*) FROM people", "SELECT COUNT(*) * 2 FROM people",
               "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25) COUNT(*) FROM people"]
    warm = connect(random_seed=1)
    for sql in queries * 3:
        warm.cursor().execute(sql).fetchall()
    fresh_rows = []
    for sql in queries * 3:
        fresh = connect(random_seed=1)
        fresh.cursor().execute(sql).fetchall()
        fresh_rows += _content(fresh)
    rows = _content(warm)
    session = warm.session.id
    assert [r[1] for r in rows] == [session] * 9
    assert [r[:1] + r[2:] for r in rows] == [r[:1] + r[2:] for r in fresh_rows]  # all but the session id
    costs = [(r[7], r[8]) for r in rows[:3]]
    assert costs[0] == costs[1] and costs[2] != costs[0]  # the default epsilon (plain, post-processed), then 0.25

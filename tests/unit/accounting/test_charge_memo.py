"""The ledger's per-query shortcuts change no answer: a composition's remembered `add` equals a
fresh one, and `more` ("queries left") follows every charge, this ledger object's or another's."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

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

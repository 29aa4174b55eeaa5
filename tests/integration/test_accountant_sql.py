"""Through SQL: the policy's accountant decides how many answers a budget buys, and what is shown."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from dpsql.accounting.accountant import accountant, losses_of
from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.errors import BudgetExhaustedError
from tests.unit.accounting.test_accountant import exact_epsilon_discrete_laplace

SQL = "SELECT COUNT(*) FROM people"


def answered_until_refused(con) -> int:  # type: ignore[no-untyped-def]
    n = 0
    while True:
        try:
            con.execute(SQL).fetchone()
        except BudgetExhaustedError:
            return n
        n += 1


def accountant_fits(name: str, loss: PrivacyLoss) -> int:
    budget, composition, n = PrivacyCost(1, Fraction(1, 10**6)), accountant(name).empty(), 0
    while (after := composition.add([loss])).fits(budget):
        composition, n = after, n + 1
    return n


@pytest.mark.parametrize("name", ["basic", "pld"])
def test_a_budget_of_1_and_1e_6_answers_what_the_accountant_allows(connect, policy_file, name: str) -> None:
    kwargs = {} if name == "pld" else {"accountant": name}  # pld is the default
    con = connect(policy_file(epsilon=1.0, delta=1e-6, default_epsilon=0.01, default_delta=0.0, **kwargs), random_seed=3)
    answered = answered_until_refused(con)
    entry = con.ledger()[0]
    (loss,) = losses_of(entry.params, entry.cost)
    # COUNT(*) at epsilon 0.01 over people (max_rows 3): discrete Laplace, sensitivity 3, scale 300.
    assert (loss.family, loss.sensitivity, loss.scale) == ("discrete_laplace", 3, 300)
    assert answered == accountant_fits(name, loss)
    if name == "basic":
        assert answered == 100 and con.budget == (0.0, 1e-6)
    else:
        assert answered > 300  # the exact privacy profile allows 564 (see test_accountant); basic composition 100
        # Within 1% of what the exact privacy profile of k discrete Laplace releases (sensitivity 3,
        # scale 300) allows at (1, 1e-6), and never more: the pessimistic PLD only gives up a little.
        assert exact_epsilon_discrete_laplace(3, 300, answered, 1e-6) <= 1
        assert exact_epsilon_discrete_laplace(3, 300, math.ceil(answered / 0.99), 1e-6) > 1
        remaining_epsilon, remaining_delta = con.budget
        assert 0 <= remaining_epsilon < 0.01 and remaining_delta == 1e-6
    assert len(con.ledger()) == answered

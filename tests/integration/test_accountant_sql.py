"""Through SQL: the policy's privacy filter decides how many answers a budget buys, and what is shown."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpsql.accounting import filters
from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.accounting.filters import Filter, History, charge_of
from dpsql.accounting.terms import losses_of
from dpsql.errors import BudgetExhaustedError
from tests.unit.accounting.test_accountant import exact_delta, exact_epsilon_discrete_laplace

SQL = "SELECT COUNT(*) FROM people"


def answered_until_refused(con) -> int:  # type: ignore[no-untyped-def]
    n = 0
    while True:
        try:
            con.execute(SQL).fetchone()
        except BudgetExhaustedError:
            return n
        n += 1


def filter_fits(name: str, loss: PrivacyLoss) -> int:
    chosen, history, n = Filter(name, PrivacyCost(1, Fraction(1, 10**6))), History(), 0  # type: ignore[arg-type]
    while chosen.admits(after := history.add(charge_of((loss,)))):
        history, n = after, n + 1
    return n


@pytest.mark.parametrize("name", ["basic", "adaptive"])
def test_a_budget_of_1_and_1e_6_answers_what_the_filter_allows(connect, policy_file, name: str) -> None:
    kwargs = {} if name == "adaptive" else {"accountant": name}  # adaptive is the default
    con = connect(policy_file(epsilon=1.0, delta=1e-6, default_epsilon=0.01, default_delta=0.0, **kwargs), random_seed=3)
    answered = answered_until_refused(con)
    entry = con.ledger()[0]
    (loss,) = losses_of(entry.params, entry.cost)
    # COUNT(*) at epsilon 0.01 over people (max_rows 3): discrete Laplace, sensitivity 3, scale 300.
    assert (loss.family, loss.sensitivity, loss.scale) == ("discrete_laplace", 3, 300)
    assert answered == filter_fits(name, loss)
    if name == "basic":
        assert answered == 100 and con.budget == (0.0, 1e-6)
    else:
        # A homogeneous chain: exactly what the optimal composition of pure 0.01-DP charges allows
        # at the class's share of delta, never more (the exact binomial sum).
        share = 1e-6 * float(filters.HOMOGENEOUS_SHARE)
        assert exact_delta([(0.01, answered)], [], 1.0) <= share < exact_delta([(0.01, answered + 1)], [], 1.0)
        assert answered > 500  # basic composition: 100
        assert exact_epsilon_discrete_laplace(3, 300, answered, 1e-6) <= 1
        remaining_epsilon, remaining_delta = con.budget
        assert 0 <= remaining_epsilon < 0.01 and remaining_delta == 1e-6
    assert len(con.ledger()) == answered

"""The PLD accountant's loss grid coarsens with the total loss (large budgets stay fast) and stays
pessimistic: a coarser grid never reports less spent than the fine one."""

from __future__ import annotations

from fractions import Fraction

from dpsql.accounting import accountant as acc
from dpsql.accounting.cost import PrivacyCost, PrivacyLoss

LAPLACE = PrivacyLoss("discrete_laplace", "laplace", Fraction(1), Fraction(0), Fraction(3), Fraction(3))


def test_grid_is_fine_for_ordinary_budgets_and_doubles_for_large_ones() -> None:
    assert acc.pld_grid(Fraction(100)) == acc.DISCRETISATION
    assert acc.pld_grid(Fraction(101)) == 2 * acc.DISCRETISATION
    assert acc.pld_grid(Fraction(800)) == 8 * acc.DISCRETISATION


def test_coarse_grid_is_pessimistic_and_close() -> None:
    history = acc.PldComposition().add([LAPLACE], 400)  # total 400: grid 4e-4
    coarse = history.spent(PrivacyCost(Fraction(10_000), Fraction(1, 10**6))).epsilon
    fine_pld = acc._self_composed(acc._key(LAPLACE)[:6], 400, acc.DISCRETISATION)
    fine = fine_pld.get_epsilon_for_delta(1e-6)
    assert acc.pld_grid(Fraction(400)) > acc.DISCRETISATION
    assert float(coarse) >= fine  # pessimistic
    assert float(coarse) <= fine * (1 + 400 / acc.PLD_STEPS) + 400 * acc.pld_grid(Fraction(400))  # at most one step per release

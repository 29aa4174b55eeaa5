"""The layer's zCDP reservation is charged at its true cost: its parts (discrete Gaussians and pure
sparse-vector rounds) under the PLD accountant, its rho under zCDP, its (epsilon, delta) under basic.

Negative control: the same reservation without its parts enters the PLD accountant as the
(epsilon, delta) distribution, which consumes its delta outright and spends more."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpsql.accounting.accountant import accountant, losses_of, zcdp_rho
from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.mechanisms.median_mechanism.strategy import plan_layer

DELTA = Fraction(1, 10**6)


def reservation() -> PrivacyCost:
    plan = plan_layer(mode="zcdp", epsilon=Fraction(3, 10), delta=DELTA, accuracy=Fraction(5000), sensitivity=1,
                      sizes=(10, 10, 10, 10, 10, 10))
    assert plan.strategy == "pmw" and plan.calibration.cap > 0
    return plan.calibration.cost


def test_parts_add_up_to_at_most_rho_and_round_trip_through_the_ledger_record() -> None:
    cost = reservation()
    (loss,) = cost.losses
    assert loss.family == "zcdp" and loss.parts and loss.rho is not None
    assert sum((zcdp_rho(p) for p in loss.parts), Fraction(0)) <= loss.rho
    again = losses_of({"losses": [loss.record()]}, cost)
    assert again == (loss,) and again[0].parts == loss.parts


@pytest.mark.slow
def test_pld_composes_the_parts_more_tightly_than_the_conversion() -> None:
    cost = reservation()
    (loss,) = cost.losses
    with_parts = accountant("pld").compose([cost.losses]).epsilon_at(DELTA)
    without = accountant("pld").compose([(PrivacyLoss("zcdp", "x", loss.epsilon, loss.delta, rho=loss.rho),)]).epsilon_at(DELTA)
    assert with_parts is not None and without is not None
    assert with_parts < without <= Fraction(3, 10) + Fraction(1, 10**6)
    # A later per-query release still composes tightly: the reservation left delta for it.
    later = (PrivacyLoss("discrete_laplace", "laplace", Fraction(1, 100), Fraction(0), sensitivity=Fraction(1),
                         scale=Fraction(100)),)
    after = accountant("pld").compose([cost.losses, later]).epsilon_at(DELTA)
    assert after is not None and after < with_parts + Fraction(1, 100)
    assert accountant("zcdp").compose([cost.losses]).epsilon_at(DELTA) <= Fraction(3, 10) + Fraction(1, 10**6)
    assert accountant("basic").compose([cost.losses]).epsilon_at(DELTA) == Fraction(3, 10)

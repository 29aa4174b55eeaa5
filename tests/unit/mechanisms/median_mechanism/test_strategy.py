"""When the Median Mechanism layer turns itself on (dpsql/mechanisms/median_mechanism/strategy.py):
public facts only, the issue's case on, a starved reservation off with a hint that works."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpsql.mechanisms.median_mechanism import strategy
from dpsql.mechanisms.median_mechanism.strategy import plan_layer, turn_on_hint

# dept (8) x region (40 declared values) x age (73) x 11 income bins, each with its NULL cell: ~257k cells.
ISSUE_SIZES = (9, 41, 74, 12)
DELTA = Fraction(1, 10**6)


def issue_plan(mode: str, expected: int | None = None, epsilon: Fraction = Fraction(3, 10),
               accuracy: Fraction = Fraction(5000)) -> strategy.LayerPlan:
    return plan_layer(mode=mode, epsilon=epsilon, delta=DELTA if mode == "zcdp" else Fraction(0),  # type: ignore[arg-type]
                      accuracy=accuracy, sensitivity=1, sizes=ISSUE_SIZES, expected_queries=expected)


@pytest.mark.parametrize("mode", ["pure", "zcdp"])
@pytest.mark.parametrize("expected", [None, 1500])
def test_the_issues_layer_turns_itself_on(mode: str, expected: int | None) -> None:
    # 1M persons, reservation epsilon 0.3, A = 5,000: fewer than 100 hard slots, yet on (the layer answered
    # 1,500 correlated drill-downs within A with 5 hard answers).
    plan = issue_plan(mode, expected)
    assert plan.strategy == "pmw" and 0 < plan.calibration.cap < 100
    on, why = plan.decide()
    assert on, why
    assert not plan.decide(min_hard_slots=100)[0]  # the previous default would keep it off


def test_control_the_issues_layer_is_off_at_one_hard_slot_per_hundred_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    # Negative control: with a pessimistic public hard share (1 in 3 queries hard) the same rule keeps it off.
    monkeypatch.setattr(strategy, "DEFAULT_HARD_SHARE", Fraction(1, 3))
    assert not issue_plan("zcdp").decide()[0]


def test_a_starved_reservation_is_off_and_the_hint_turns_it_on() -> None:
    plan = issue_plan("pure", epsilon=Fraction(1, 100), accuracy=Fraction(500))
    on, why = plan.decide()
    assert not on and "<" in why
    hint = turn_on_hint(mode="pure", epsilon=Fraction(1, 100), delta=Fraction(0), accuracy=Fraction(500), sensitivity=1,
                        sizes=ISSUE_SIZES)
    epsilon = Fraction(hint.split("epsilon = ")[1].split(" ")[0])
    accuracy = Fraction(hint.split("accuracy = ")[1].split(" ")[0])
    assert issue_plan("pure", epsilon=epsilon, accuracy=Fraction(500)).decide()[0]
    assert issue_plan("pure", epsilon=Fraction(1, 100), accuracy=accuracy).decide()[0]
    # ... and it is the smallest to 3 significant digits: a tenth less stays off.
    assert not issue_plan("pure", epsilon=epsilon * Fraction(9, 10), accuracy=Fraction(500)).decide()[0]


def test_identity_is_always_on_and_an_explicit_minimum_wins() -> None:
    small = plan_layer(mode="pure", epsilon=Fraction(1), delta=Fraction(0), accuracy=Fraction(1000), sensitivity=1, sizes=(10, 10))
    assert small.strategy == "identity" and small.decide(min_hard_slots=10**6)[0]
    plan = issue_plan("zcdp")
    assert plan.decide(min_hard_slots=plan.calibration.cap)[0] and not plan.decide(min_hard_slots=plan.calibration.cap + 1)[0]


def test_the_decision_reads_public_facts_only() -> None:
    # Same inputs, same decision and text (nothing else is an input: no data, no randomness).
    assert issue_plan("zcdp").decide() == issue_plan("zcdp").decide()

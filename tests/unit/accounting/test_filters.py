"""The privacy filters admit only histories their theorem covers, whatever the analyst adapts to.

Hypothesis: every history the "adaptive" filter admits meets the condition of at least one of
its classes at that class's share of delta (the union theorem in dpsql.accounting.filters and
docs/privacy-model.md), checked here by an independent computation of each condition:
- basic: exact Fraction sums;
- zCDP: the rhos summed here, the Renyi-to-DP conversion minimised over alpha by scipy;
- homogeneous: every charge within the first one's (epsilon, delta), and the exact optimal
  k-fold composition (the binomial sum of tests.unit.accounting.test_accountant) within budget.
A randomised analyst picks each charge from what it saw (admitted or refused), repeats its first
charge often (to reach the homogeneous chain's end) and mixes families (discrete Laplace,
discrete Gaussian, (epsilon, delta) terms, bounded-range terms). Negative controls: the natural
PLD filter (compose the history's exact privacy-loss distributions, stop when (E, D) is crossed)
driven by the same analyst admits histories no class covers; a basic class that ignores delta
(a shortcut that reads epsilons only) is caught the same way.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from fractions import Fraction

import pytest
from scipy.optimize import minimize_scalar

from dpsql.accounting import filters
from dpsql.accounting.accountant import accountant
from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.accounting.filters import Filter, History, charge_of
from dpsql.accounting.optimal import chain_length, composed_delta
from dpsql.accounting.zcdp import delta_of, epsilon_of
from dpsql.mechanisms.gaussian import GaussianSpec
from dpsql.mechanisms.gaussian import cost as gaussian_cost
from tests.unit.accounting.test_accountant import exact_delta

BUDGET = PrivacyCost(1, Fraction(1, 10**6))
Terms = tuple[PrivacyLoss, ...]


def laplace(epsilon: Fraction, sensitivity: int = 1) -> PrivacyLoss:
    return PrivacyLoss("discrete_laplace", "laplace", epsilon, Fraction(0), sensitivity=Fraction(sensitivity),
                       scale=Fraction(sensitivity) / epsilon)


def gauss(epsilon: Fraction, delta: Fraction) -> PrivacyLoss:
    (loss,) = gaussian_cost(GaussianSpec(Fraction(1), epsilon, delta)).losses
    return loss


# --- the independent checkers -------------------------------------------------------------
def _rho(term: PrivacyLoss) -> float:
    if term.family == "discrete_gaussian":
        assert term.sigma2 is not None and term.sensitivity is not None
        return float(term.sensitivity) ** 2 / (2 * float(term.sigma2))
    if term.family == "bounded_range":
        return float(term.epsilon) ** 2 / 8
    return float(term.epsilon) ** 2 / 2


def _zcdp_delta(rho: float, epsilon: float) -> float:
    """inf over alpha of the Renyi-to-DP conversion of rho-zCDP (scipy's bounded minimiser)."""
    if rho == 0:
        return 0.0

    def log_delta(log_a: float) -> float:
        a = 1 + math.exp(log_a)
        return (a - 1) * (a * rho - epsilon) + (a - 1) * math.log1p(-1 / a) - math.log(a)

    best = minimize_scalar(log_delta, bounds=(-20, 20), method="bounded", options={"xatol": 1e-12})
    return math.exp(min(best.fun, log_delta(0.0)))


def basic_holds(history: list[Terms], epsilon: Fraction, delta: Fraction) -> bool:
    terms = [t for charge in history for t in charge]
    return sum((t.epsilon for t in terms), Fraction(0)) <= epsilon and sum((t.delta for t in terms), Fraction(0)) <= delta


def zcdp_holds(history: list[Terms], epsilon: Fraction, delta: Fraction) -> bool:
    terms = [t for charge in history for t in charge]
    added = sum((t.delta for t in terms if t.family in ("approx_dp", "discrete_laplace", "bounded_range")), Fraction(0))
    return _zcdp_delta(sum(_rho(t) for t in terms), float(epsilon)) + float(added) <= float(delta)


def homogeneous_holds(history: list[Terms], epsilon: Fraction, delta: Fraction) -> bool:
    if not history:
        return True
    sums = [(sum((t.epsilon for t in c), Fraction(0)), sum((t.delta for t in c), Fraction(0))) for c in history]
    e0, d0 = sums[0]
    if any(e > e0 or d > d0 for e, d in sums):
        return False
    k = len(history)
    return exact_delta([(float(e0), k)], [float(d0)] * k, float(epsilon)) <= float(delta)


def adaptive_holds(history: list[Terms], budget: PrivacyCost = BUDGET) -> bool:
    e, d = budget.epsilon, budget.delta
    return (basic_holds(history, e, d * filters.BASIC_SHARE) or zcdp_holds(history, e, d * filters.ZCDP_SHARE)
            or homogeneous_holds(history, e, d * filters.HOMOGENEOUS_SHARE))


# --- a randomised adaptive analyst ----------------------------------------------------------
def _menu(rng: random.Random) -> Terms:
    family = rng.choice(["laplace", "laplace", "gauss", "approx", "bounded", "two"])
    eps = Fraction(rng.randint(1, 200), 1000)
    if family == "laplace":
        return (laplace(eps, rng.choice([1, 3])),)
    if family == "gauss":
        return (gauss(eps, Fraction(1, 10**9)),)
    if family == "approx":
        return (PrivacyLoss("approx_dp", "partition_selection", eps, Fraction(rng.randint(1, 40), 10**9)),)
    if family == "bounded":
        return (PrivacyLoss("bounded_range", "exponential", eps),)
    return (laplace(eps / 2), laplace(eps / 2, 3))


Decide = Callable[[list[Terms], Terms], bool]


def play(seed: int, decide: Decide, steps: int = 600) -> list[list[Terms]]:
    """Runs the analyst against ``decide``; returns every admitted history (as it stood when admitted)."""
    rng = random.Random(seed)
    history: list[Terms] = []
    admitted: list[list[Terms]] = []
    refused_in_a_row = 0
    first = _menu(rng)
    for _ in range(steps):
        # What it sees decides what it asks: after a refusal it tries smaller or cheaper charges,
        # and it often repeats its first charge (the homogeneous chain).
        if refused_in_a_row:
            candidate = (laplace(Fraction(1, 1000 * refused_in_a_row)),) if rng.random() < 0.5 else _menu(rng)
        else:
            candidate = first if rng.random() < 0.6 else _menu(rng)
        if decide(history, candidate):
            history = [*history, candidate]
            admitted.append(history)
            refused_in_a_row = 0
        else:
            refused_in_a_row += 1
            if refused_in_a_row > 8:
                break
    return admitted


def filter_decides(name: str, budget: PrivacyCost = BUDGET) -> Decide:
    chosen = Filter(name, budget)  # type: ignore[arg-type]

    def decide(history: list[Terms], candidate: Terms) -> bool:
        state = History()
        for charge in [*history, candidate]:
            state = state.add(charge_of(charge))
        return chosen.admits(state)

    return decide


def natural_pld_decides(history: list[Terms], candidate: Terms) -> bool:
    return accountant("pld").empty().add([t for c in [*history, candidate] for t in c]).fits(BUDGET)


def uncovered(admitted: list[list[Terms]], holds: Callable[[list[Terms]], bool]) -> list[list[Terms]]:
    return [h for h in admitted if not holds(h)]


SEEDS = range(12)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_history_the_adaptive_filter_admits_is_covered_by_a_class(seed: int) -> None:
    admitted = play(seed, filter_decides("adaptive"))
    assert admitted, "the analyst got nothing: the test would be vacuous"
    assert uncovered(admitted, adaptive_holds) == []


@pytest.mark.parametrize("name", ["zcdp", "basic"])
def test_the_single_filters_admit_only_what_their_theorem_covers(name: str) -> None:
    holds = {"zcdp": zcdp_holds, "basic": basic_holds}[name]
    for seed in range(4):
        admitted = play(seed, filter_decides(name))
        assert admitted and uncovered(admitted, lambda h: holds(h, BUDGET.epsilon, BUDGET.delta)) == []


def test_negative_control_the_natural_pld_filter_admits_what_no_class_covers() -> None:
    flagged = next((seed for seed in range(4) if uncovered(play(seed, natural_pld_decides, steps=300), adaptive_holds)), None)
    assert flagged is not None, "the checker cannot tell a natural filter from the valid one"


def test_negative_control_a_basic_shortcut_that_ignores_delta_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    ptr = (PrivacyLoss("approx_dp", "ptr", Fraction(1, 100), Fraction(1, 10**7)),)

    def admitted_run() -> list[list[Terms]]:
        # An analyst of (epsilon, delta) charges: the deltas pass the basic share long before the epsilons.
        admitted, history = [], []
        while filter_decides("adaptive")(history, ptr) and len(history) < 200:
            history = [*history, ptr]
            admitted.append(history)
        return admitted

    assert uncovered(admitted_run(), adaptive_holds) == []  # the real filter
    monkeypatch.setattr(filters.BasicClass, "admits", lambda self, h: h.epsilon <= self.budget_epsilon)
    filters._classes.cache_clear()
    try:
        assert uncovered(admitted_run(), adaptive_holds)  # the shortcut admits what no class covers
    finally:
        filters._classes.cache_clear()


# --- the decision is the history's, however it was built ------------------------------------
def test_a_history_built_one_charge_at_a_time_equals_one_built_from_groups() -> None:
    rng = random.Random(5)
    charges = [_menu(rng) for _ in range(30)]
    sequence = [charges[0]] + [rng.choice(charges) for _ in range(300)]
    stepwise = History()
    for charge in sequence:
        stepwise = stepwise.add(charge_of(charge))
    counts: dict[Terms, int] = {}
    for charge in sequence:
        counts[charge] = counts.get(charge, 0) + 1
    grouped = History().add(charge_of(sequence[0]), counts.pop(sequence[0]))
    for charge, n in sorted(counts.items(), key=lambda item: rng.random()):
        grouped = grouped.add(charge_of(charge), n)
    assert grouped == stepwise


# --- the numbers it gives -------------------------------------------------------------------
def test_a_homogeneous_workload_gets_the_optimal_composition_at_its_share() -> None:
    count = (laplace(Fraction(1, 100), 3),)  # COUNT at epsilon 0.01, max_rows 3
    chosen, history, n = Filter("adaptive", BUDGET), History(), 0
    while chosen.admits(after := history.add(charge_of(count))):
        history, n = after, n + 1
    assert n == chain_length(Fraction(1, 100), Fraction(0), BUDGET.epsilon, BUDGET.delta * filters.HOMOGENEOUS_SHARE)
    assert n >= 510  # 562 at the whole delta; the share costs about 8%
    assert homogeneous_holds([count] * n, BUDGET.epsilon, BUDGET.delta * filters.HOMOGENEOUS_SHARE)
    assert not homogeneous_holds([count] * (n + 1), BUDGET.epsilon, BUDGET.delta * filters.HOMOGENEOUS_SHARE)


def test_few_large_charges_still_get_basic_composition() -> None:
    big = (laplace(Fraction(1, 2)),)
    chosen, budget = Filter("adaptive", PrivacyCost(3, Fraction(1, 10**6))), PrivacyCost(3, Fraction(1, 10**6))
    assert chosen.more(History(), charge_of(big)) == 6
    assert chosen.admits(History().add(charge_of(big), 6)) and not chosen.admits(History().add(charge_of(big), 7))
    assert budget.epsilon == 3


def test_bounded_range_terms_cost_a_quarter_of_the_rho() -> None:
    em = (PrivacyLoss("bounded_range", "exponential", Fraction(1, 10)),)
    pure = (PrivacyLoss("approx_dp", "exponential", Fraction(1, 10)),)
    zcdp = Filter("zcdp", PrivacyCost(10, Fraction(1, 10**5)))
    assert zcdp.more(History(), charge_of(em), 10**6) > 3.9 * zcdp.more(History(), charge_of(pure), 10**6)


def test_spent_is_within_the_budget_exactly_while_the_filter_admits() -> None:
    rng = random.Random(3)
    chosen, history = Filter("adaptive", BUDGET), History()
    for _ in range(2000):
        after = history.add(charge_of(_menu(rng)))
        if not chosen.admits(after):
            assert chosen.spent(after).epsilon > BUDGET.epsilon
            continue
        assert chosen.spent(after).epsilon <= BUDGET.epsilon
        history = after


# --- the conversions it rests on --------------------------------------------------------------
@pytest.mark.parametrize("rho", [1e-6, 1e-4, 0.0243, 0.5, 3.0, 40.0])
@pytest.mark.parametrize("epsilon", [0.01, 1.0, 10.0])
def test_the_zcdp_conversion_is_sound_and_tight(rho: float, epsilon: float) -> None:
    exact = min(1.0, _zcdp_delta(rho, epsilon))
    ours = delta_of(Fraction(rho), Fraction(epsilon))
    assert ours >= exact * (1 - 1e-12)  # never below the infimum
    assert ours <= exact * (1 + 1e-6) + 1e-300  # and close to it
    if 1e-300 < exact < 0.5:
        # At the delta that is exact for epsilon, the smallest epsilon is epsilon itself.
        back = epsilon_of(Fraction(rho), exact)
        assert back is not None and epsilon * (1 - 1e-9) <= back <= epsilon * (1 + 1e-6) + 1e-9


def test_the_zcdp_conversion_agrees_with_dp_accountings_rdp_conversion() -> None:
    import numpy as np
    from dp_accounting.rdp import rdp_privacy_accountant

    orders = np.exp(np.linspace(np.log(1.001), np.log(1e4), 200_000))
    for rho in (1e-4, 0.0243, 1.5):
        theirs, _ = rdp_privacy_accountant.compute_epsilon(orders, orders * rho, 1e-6)
        ours = epsilon_of(Fraction(rho), Fraction(1, 10**6))
        assert ours is not None and theirs - 1e-6 <= ours <= theirs * (1 + 1e-7) + 1e-12


@pytest.mark.parametrize("seed", range(20))
def test_the_optimal_composition_is_an_upper_bound_of_the_exact_one(seed: int) -> None:
    rng = random.Random(seed)
    k, e0 = rng.randint(1, 400), rng.choice([0.001, 0.01, 0.05, 0.3, 1.0])
    d0, epsilon = rng.choice([0.0, 1e-9, 1e-6]), rng.uniform(0, k * e0)
    exact = exact_delta([(e0, k)], [d0] * k, epsilon)
    ours = composed_delta(k, Fraction(e0), Fraction(d0), Fraction(epsilon))
    assert exact <= ours <= exact * (1 + 1e-5) + 1e-12


@pytest.mark.parametrize("delta", [Fraction(1, 2), Fraction(9, 10), Fraction(999_999, 10**6)])
def test_spent_is_a_valid_cost_whatever_the_budgets_delta(delta: Fraction) -> None:
    # A delta close to 1 makes the zCDP conversion's formula negative (found by the grammar fuzz).
    budget = PrivacyCost(10, delta)
    history = History().add(charge_of((laplace(Fraction(1, 10**6)),)))
    spent = Filter("adaptive", budget).spent(history)
    assert 0 <= spent.epsilon <= Fraction(1, 10**6) and epsilon_of(Fraction(1, 10**12), delta) == 0.0


@pytest.mark.parametrize("epsilon", [Fraction(1, 10**9), Fraction(1, 10**6), Fraction(50), Fraction(10**5), Fraction(10**7)])
@pytest.mark.parametrize("delta", [Fraction(0), Fraction(1, 10**8), Fraction(1, 2)])
def test_extreme_charges_are_decided_and_shown_without_float_errors(epsilon: Fraction, delta: Fraction) -> None:
    # Found by the suite: e^epsilon overflowed in the optimal composition for epsilon 1e5.
    charge = charge_of((PrivacyLoss("approx_dp", "ptr", epsilon, delta),))
    for budget in (PrivacyCost(1, Fraction(1, 10**6)), PrivacyCost(10**6, Fraction(1, 10**3))):
        chosen = Filter("adaptive", budget)
        for history in (History(), History().add(charge), History().add(charge, 1000)):
            admitted = chosen.admits(history.add(charge))
            spent = chosen.spent(history.add(charge))
            assert (spent.epsilon <= budget.epsilon) == admitted
            assert 0 <= chosen.more(history, charge) <= filters.MORE_LIMIT

"""The reference accountants never under-state what a fixed history spent, and PLD is much tighter
than basic. (The ledger decides with the filters of dpsql.accounting.filters; these compositions are
what the filters are measured against.)

The reference is an exact, independent computation: a discrete Laplace release of sensitivity 1
has exactly two privacy-loss values (+-1/scale), so it is randomized response at epsilon 1/scale,
and so is the dominating pair of any pure epsilon-DP term; an (epsilon, delta) term adds an
infinite loss with probability delta. The composition's privacy profile is then a finite sum
over binomial counts (Kairouz, Oh & Viswanath 2015), inverted by bisection. The accountant's
epsilon at delta must be >= that exact value (soundness) and <= basic composition; negative
controls (an optimistic discretisation, a dropped term) are caught by the same check.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from dpsql.accounting.accountant import (
    MAX_EXACT_SENSITIVITY,
    PldComposition,
    accountant,
    losses_of,
    pld_of,
    zcdp_rho,
)
from dpsql.accounting.cost import PrivacyCost, PrivacyLoss

DELTA = Fraction(1, 10**6)


def laplace(epsilon: Fraction, sensitivity: int = 1) -> PrivacyLoss:
    return PrivacyLoss("discrete_laplace", "laplace", epsilon, Fraction(0),
                       sensitivity=Fraction(sensitivity), scale=Fraction(sensitivity) / epsilon)


def approx(epsilon: Fraction, delta: Fraction = Fraction(0)) -> PrivacyLoss:
    return PrivacyLoss("approx_dp", "ptr", epsilon, delta)


def _log_binom_pmf(n: int, m: int, log_q: float, log_p: float) -> float:
    return math.lgamma(n + 1) - math.lgamma(m + 1) - math.lgamma(n - m + 1) + m * log_q + (n - m) * log_p


def exact_delta(groups: list[tuple[float, int]], deltas: list[float], eps: float) -> float:
    """delta(eps) of composing n_j randomized responses at epsilon_j and (0, delta_i) infinities, exactly.

    Under P each RR term has loss +e_j w.p. e^e_j / (1 + e^e_j) and -e_j otherwise; the total
    loss is sum_j e_j (n_j - 2 m_j) with m_j ~ Binomial(n_j, 1 / (1 + e^e_j)).
    """
    supports = []
    for e, n in groups:
        log_q, log_p = -math.log1p(math.exp(e)), e - math.log1p(math.exp(e))
        supports.append([(e * (n - 2 * m), _log_binom_pmf(n, m, log_q, log_p)) for m in range(n + 1)])
    total = 0.0
    combos: list[tuple[float, float]] = [(0.0, 0.0)]
    for support in supports:
        combos = [(a + b, la + lb) for a, la in combos for b, lb in support]
    for loss, log_prob in combos:
        if loss > eps:
            total += math.exp(log_prob) * -math.expm1(eps - loss)
    keep = math.prod(1 - d for d in deltas)
    return 1 - keep + keep * total


def exact_epsilon(groups: list[tuple[float, int]], deltas: list[float], delta: float) -> float:
    """The smallest eps with exact_delta(eps) <= delta (bisection to 1e-12)."""
    lo, hi = 0.0, sum(e * n for e, n in groups)
    if exact_delta(groups, deltas, lo) <= delta:
        return 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if exact_delta(groups, deltas, mid) <= delta else (mid, hi)
    return hi


def assert_sound(epsilon: Fraction | float | None, exact: float, basic: Fraction) -> None:
    """Never under-stated, never above basic composition."""
    assert epsilon is not None
    assert float(epsilon) >= exact - 1e-12, f"under-stated: {float(epsilon)} < exact {exact}"
    assert Fraction(epsilon) <= basic


@pytest.mark.parametrize("k", [1, 10, 100, 300, 562])
def test_k_discrete_laplace_releases_lie_between_the_exact_value_and_k_epsilon(k: int) -> None:
    eps0 = Fraction(1, 100)
    pld = accountant("pld").empty().add([laplace(eps0)] * k)
    exact = exact_epsilon([(0.01, k)], [], 1e-6)
    spent = pld.epsilon_at(DELTA)
    assert_sound(spent, exact, k * eps0)
    assert float(spent) <= exact + k * 1e-4  # the discretisation over-states by at most one grid step per term
    if k >= 100:
        assert float(spent) < 0.6 * k * 0.01  # and is much tighter than basic composition


def test_pure_terms_at_delta_zero_cost_exactly_their_sum() -> None:
    for name in ("pld", "zcdp", "basic"):
        composition = accountant(name).empty().add([laplace(Fraction(1, 100))] * 50)
        assert composition.epsilon_at(Fraction(0)) == Fraction(1, 2)  # capped by basic, never below it
    pld = accountant("pld").empty().add([laplace(Fraction(1, 100))] * 50)
    tight = pld._tight_epsilon(Fraction(0))  # the PLD alone over-states (its truncated tails: unbounded), never under-states
    assert tight is None or tight >= Fraction(1, 2)


def _random_history(rng: random.Random) -> tuple[list[PrivacyLoss], list[tuple[float, int]], list[float]]:
    """A shuffled mix of discrete Laplace (sensitivity 1) and (epsilon, delta) terms, off the PLD grid."""
    epsilons = [Fraction(rng.randint(50, 3000), 100_000) for _ in range(rng.randint(1, 3))]
    losses, groups, deltas = [], [], []
    for eps in epsilons:
        n = rng.randint(1, 60)
        laplaces = rng.randint(0, n)
        losses += [laplace(eps)] * laplaces + [approx(eps)] * (n - laplaces)
        groups.append((float(eps), n))
    for _ in range(rng.randint(0, 3)):
        eps, delta = Fraction(rng.randint(1, 500), 10_000), Fraction(rng.randint(1, 50), 10**9)
        losses.append(approx(eps, delta))
        groups.append((float(eps), 1))
        deltas.append(float(delta))
    rng.shuffle(losses)
    return losses, groups, deltas


@pytest.mark.parametrize("seed", range(12))
def test_random_histories_are_never_under_stated(seed: int) -> None:
    losses, groups, deltas = _random_history(random.Random(seed))
    exact = exact_epsilon(groups, deltas, 1e-6)
    basic = sum((x.epsilon for x in losses), Fraction(0))
    for name in ("pld", "zcdp"):
        assert_sound(accountant(name).empty().add(losses).epsilon_at(DELTA), exact, basic)
    # One entry at a time (the ledger's incremental path) is as sound as all at once.
    stepwise = accountant("pld").empty()
    for loss in losses:
        stepwise = stepwise.add([loss])
    assert_sound(stepwise.epsilon_at(DELTA), exact, basic)


def exact_epsilon_discrete_laplace(sensitivity: int, scale: int, k: int, delta: float) -> float:
    """k-fold discrete Laplace of integer sensitivity s, exactly: the loss a(|x - s| - |x|) takes the
    values a(s - 2x) on a lattice of step a, so the k-fold loss is an integer convolution."""
    import numpy as np

    a = 1 / scale
    norm = (1 + math.exp(-a)) / (1 - math.exp(-a))
    single = np.zeros(2 * sensitivity + 1)  # index j: loss a (j - s)
    single[2 * sensitivity] = 1 / (1 - math.exp(-a)) / norm  # x <= 0
    single[0] = math.exp(-a * sensitivity) / (1 - math.exp(-a)) / norm  # x >= s
    for x in range(1, sensitivity):
        single[sensitivity - 2 * x + sensitivity] += math.exp(-a * x) / norm
    dist = np.array([1.0])
    for _ in range(k):
        dist = np.convolve(dist, single)
    losses = (np.arange(len(dist)) - sensitivity * k) * a

    def profile(eps: float) -> float:
        above = losses > eps
        return float(np.sum(dist[above] * -np.expm1(eps - losses[above])))

    lo, hi = 0.0, k * sensitivity * a
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if profile(mid) <= delta else (mid, hi)
    return hi


@pytest.mark.parametrize(("sensitivity", "k"), [(3, 564), (3, 100), (2, 250)])
def test_discrete_laplace_of_larger_sensitivity_is_never_under_stated(sensitivity: int, k: int) -> None:
    eps0 = Fraction(1, 100)  # scale = sensitivity / eps0, as COUNT(*) over max_rows = 3 is charged
    exact = exact_epsilon_discrete_laplace(sensitivity, sensitivity * 100, k, 1e-6)
    assert exact < exact_epsilon([(0.01, k)], [], 1e-6)  # tighter than randomized response at 0.01
    spent = accountant("pld").empty().add([laplace(eps0, sensitivity)] * k).epsilon_at(DELTA)
    assert_sound(spent, exact, k * eps0)
    assert float(spent) <= exact + k * 1e-4


def test_negative_control_a_dropped_term_is_caught() -> None:
    losses = [laplace(Fraction(1234, 100_000))] * 100 + [approx(Fraction(1, 2))]
    exact = exact_epsilon([(0.01234, 100), (0.5, 1)], [], 1e-6)
    dropped = accountant("pld").empty().add(losses[:-1])  # an accountant that forgets one entry
    with pytest.raises(AssertionError, match="under-stated"):
        assert_sound(dropped._tight_epsilon(DELTA), exact, Fraction(1000))
    assert_sound(accountant("pld").empty().add(losses).epsilon_at(DELTA), exact, Fraction(1000))


def test_negative_control_an_optimistic_discretisation_is_caught() -> None:
    from dp_accounting.pld import privacy_loss_distribution

    eps0 = 0.01234  # off the 1e-4 grid: optimistic rounding moves the loss down
    exact = exact_epsilon([(eps0, 300)], [], 1e-6)
    optimistic = privacy_loss_distribution.from_discrete_laplace_mechanism(eps0, pessimistic_estimate=False).self_compose(300)
    with pytest.raises(AssertionError, match="under-stated"):
        assert_sound(optimistic.get_epsilon_for_delta(1e-6), exact, Fraction(1000))
    ours = accountant("pld").empty().add([laplace(Fraction(1234, 100_000))] * 300)
    assert_sound(ours.epsilon_at(DELTA), exact, Fraction(1000))


def test_deltas_that_pass_the_budget_leave_no_finite_epsilon() -> None:
    losses = [approx(Fraction(1, 100), Fraction(6, 10**7))] * 2  # 1.2e-6 > 1e-6
    for name in ("pld", "zcdp", "basic"):
        composition = accountant(name).empty().add(losses)
        assert composition.epsilon_at(DELTA) is None
        assert not composition.fits(PrivacyCost(100, DELTA))


def test_budget_gain_at_the_issue_setting() -> None:
    """Budget (1, 1e-6), COUNT(*) at epsilon 0.01: basic answers 100, zCDP ~350, PLD ~560."""
    budget = PrivacyCost(1, DELTA)
    answered = {}
    for name in ("basic", "zcdp", "pld"):
        composition, n = accountant(name).empty(), 0
        while (after := composition.add([laplace(Fraction(1, 100))])).fits(budget):
            composition, n = after, n + 1
        answered[name] = n
    assert answered["basic"] == 100
    # zCDP: rho = n eps0^2 / 2 and rho + 2 sqrt(rho ln 1e6) <= 1 gives n <= 349.
    assert answered["zcdp"] == 349
    # PLD: the exact profile allows 563; pessimistic discretisation may give up a little, never gain.
    exact_fit = max(n for n in range(540, 600) if exact_epsilon([(0.01, n)], [], 1e-6) <= 1)
    assert 300 < answered["pld"] <= exact_fit
    assert answered["pld"] >= 0.99 * exact_fit


def test_zcdp_rho_of_each_family() -> None:
    assert zcdp_rho(laplace(Fraction(1, 10))) == Fraction(1, 200)
    gauss = PrivacyLoss("discrete_gaussian", "gaussian", Fraction(1), Fraction(1, 10**9), sensitivity=Fraction(2), sigma2=Fraction(8))
    assert zcdp_rho(gauss) == Fraction(1, 4)
    assert zcdp_rho(PrivacyLoss("zcdp", "median_mechanism", Fraction(1), Fraction(1, 10**7), rho=Fraction(1, 50))) == Fraction(1, 50)


def test_discrete_gaussian_enters_with_its_noise_and_beats_its_recorded_pair() -> None:
    gauss = PrivacyLoss("discrete_gaussian", "gaussian", Fraction(1, 2), Fraction(1, 10**6), sensitivity=Fraction(1),
                        sigma2=Fraction(100**2))
    single = PldComposition().add([gauss])
    assert float(single.epsilon_at(DELTA)) == pytest.approx(0.0337, abs=2e-3)  # continuous Gaussian at mu 0.01: 0.0337
    # Gaussian at sigma 100 is rho = 5e-5 zCDP: eps(1e-6) <= rho + 2 sqrt(rho ln 1e6), an upper bound the PLD meets.
    rho = 1 / (2 * 100**2)
    assert float(single.epsilon_at(DELTA)) <= rho + 2 * math.sqrt(rho * math.log(1e6))


def test_large_sensitivity_falls_back_to_the_pure_pld_and_stays_sound() -> None:
    big = laplace(Fraction(1, 100), sensitivity=MAX_EXACT_SENSITIVITY * 1000)
    composition = accountant("pld").empty().add([big] * 100)
    assert_sound(composition.epsilon_at(DELTA), exact_epsilon([(0.01, 100)], [], 1e-6), Fraction(1))
    assert pld_of(big) is not None


def test_ledger_entries_without_matching_terms_enter_as_their_whole_cost() -> None:
    cost = PrivacyCost.of(laplace(Fraction(1, 10)))
    records = [x.record() for x in cost.losses]
    assert losses_of({"losses": records}, cost) == cost.losses
    whole = (PrivacyLoss("approx_dp", "ledger", Fraction(1, 10), Fraction(0)),)
    assert losses_of({}, cost) == whole  # written before terms were recorded
    assert losses_of({"losses": records}, PrivacyCost(Fraction(2, 10))) == (
        PrivacyLoss("approx_dp", "ledger", Fraction(2, 10), Fraction(0)),)  # terms short of the charge
    assert losses_of({"losses": [{"family": "nonsense", "epsilon": "1"}]}, cost) == whole
    assert losses_of({"losses": "garbage"}, cost) == whole


def test_unknown_accountant_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown accountant"):
        accountant("rdp")


def test_the_pld_check_by_delta_agrees_with_epsilon_at_delta() -> None:
    """fits() compares delta(E) with D (fast); the reported epsilon(D) must tell the same story."""
    budget = PrivacyCost(1, DELTA)
    base = accountant("pld").empty().add([laplace(Fraction(1, 100))] * 550)
    for _ in range(20):
        assert base.fits(budget) == (base._tight_epsilon(DELTA) <= 1)
        base = base.add([laplace(Fraction(1, 100))])


def test_the_policy_chooses_the_filter_and_defaults_to_adaptive(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from dpsql.catalog.loader import load_policy
    from dpsql.demo.people import policy_text
    from dpsql.errors import CatalogError

    text = policy_text(None)
    (tmp_path / "a.toml").write_text(text, encoding="utf-8")
    assert load_policy(tmp_path / "a.toml").budget.accountant == "adaptive"
    # "pld" in an older policy names the valid default, never the natural PLD filter.
    (tmp_path / "p.toml").write_text(text.replace("[budget]", '[budget]\naccountant = "pld"', 1), encoding="utf-8")
    assert load_policy(tmp_path / "p.toml").budget.accountant == "adaptive"
    for name in ("zcdp", "basic"):
        (tmp_path / "b.toml").write_text(text.replace("[budget]", f'[budget]\naccountant = "{name}"', 1), encoding="utf-8")
        assert load_policy(tmp_path / "b.toml").budget.accountant == name
    (tmp_path / "c.toml").write_text(text.replace("[budget]", '[budget]\naccountant = "rdp"', 1), encoding="utf-8")
    with pytest.raises(CatalogError, match="budget.accountant"):
        load_policy(tmp_path / "c.toml")


def test_a_huge_epsilon_term_is_added_beside_the_pld_without_overflow() -> None:
    huge = approx(Fraction(10**6))
    composition = accountant("pld").empty().add([laplace(Fraction(1, 100))] * 100 + [huge])
    spent = composition.epsilon_at(DELTA)
    assert spent is not None and 10**6 < spent <= 10**6 + 1
    assert not composition.fits(PrivacyCost(10**6, DELTA)) and composition.fits(PrivacyCost(10**6 + 1, DELTA))

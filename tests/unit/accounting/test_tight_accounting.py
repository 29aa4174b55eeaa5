"""The reference PLD composition stays sound for Gaussian terms; the ledger's filter counts
("queries left") are exact and the ledger admits exactly that many.

- A composition depends on its multiset of terms alone (however it was built).
- Soundness for random mixes of discrete Laplace, discrete Gaussian and (epsilon, delta) terms:
  the PLD epsilon is <= dp-accounting's RDP accountant (an independent upper bound), <= basic
  composition, and >= the exact closed form of k-fold pure epsilon composition; a negative
  control (an accountant that drops one entry) is caught by the same check.
"""

from __future__ import annotations

import math
import random
import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest

from dpsql.accounting.accountant import accountant
from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.accounting.filters import Filter, History, charge_of
from dpsql.accounting.ledger import open_ledger
from dpsql.errors import BudgetExhaustedError
from dpsql.mechanisms.gaussian import GaussianSpec
from dpsql.mechanisms.gaussian import cost as gaussian_cost

DELTA = Fraction(1, 10**6)
BUDGET = PrivacyCost(1, DELTA)


def laplace(epsilon: Fraction, sensitivity: int = 1) -> PrivacyLoss:
    return PrivacyLoss("discrete_laplace", "laplace", epsilon, Fraction(0), sensitivity=Fraction(sensitivity),
                       scale=Fraction(sensitivity) / epsilon)


def gauss(epsilon: Fraction, delta: Fraction, sensitivity: int = 1) -> PrivacyLoss:
    (loss,) = gaussian_cost(GaussianSpec(Fraction(sensitivity), epsilon, delta)).losses
    return loss


def approx(epsilon: Fraction, delta: Fraction = Fraction(0)) -> PrivacyLoss:
    return PrivacyLoss("approx_dp", "ptr", epsilon, delta)


def rdp_epsilon(losses: list[PrivacyLoss], delta: float) -> float:
    """dp-accounting's RDP accountant: an upper bound computed independently of the PLD."""
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant

    rdp = rdp_privacy_accountant.RdpAccountant()
    for loss in losses:
        if loss.family == "discrete_gaussian":
            assert loss.sigma2 is not None and loss.sensitivity is not None
            # The discrete Gaussian's Renyi divergences are at most the continuous one's (CKS20).
            rdp.compose(dp_event.GaussianDpEvent(math.sqrt(float(loss.sigma2)) / float(loss.sensitivity)))
        elif loss.family == "discrete_laplace":
            assert loss.scale is not None and loss.sensitivity is not None
            rdp.compose(dp_event.LaplaceDpEvent(float(loss.scale) / float(loss.sensitivity)))
        else:
            return math.inf  # RDP has no (epsilon, delta) event: no independent bound
    return float(rdp.get_epsilon(delta))


def _random_mix(rng: random.Random) -> list[PrivacyLoss]:
    losses: list[PrivacyLoss] = []
    for _ in range(rng.randint(1, 4)):
        eps = Fraction(rng.randint(100, 5000), 100_000)
        kind = rng.choice(["laplace", "gauss"])
        n = rng.randint(1, 80)
        losses += [laplace(eps) if kind == "laplace" else gauss(eps, Fraction(1, 10**9))] * n
    rng.shuffle(losses)
    return losses


@pytest.mark.parametrize("seed", range(10))
def test_pld_is_below_rdp_and_basic_for_random_laplace_and_gaussian_mixes(seed: int) -> None:
    losses = _random_mix(random.Random(seed))
    pld = accountant("pld").empty().add(losses).epsilon_at(DELTA)
    assert pld is not None
    assert float(pld) <= rdp_epsilon(losses, 1e-6) + 1e-9  # RDP over-states; the PLD must not exceed it
    assert pld <= sum((x.epsilon for x in losses), Fraction(0))


@pytest.mark.parametrize("k", [1, 5, 40])
def test_k_fold_pure_epsilon_never_under_states_the_closed_form(k: int) -> None:
    """k-fold composition of an epsilon-DP (randomized-response) term at delta: exactly
    delta(E) = sum_i C(k, i) p^(k-i) q^i max(0, 1 - e^(E - (k - 2i) eps)) (Kairouz et al.)."""
    eps = 0.05

    def exact_delta(e: float) -> float:
        p, q = math.exp(eps) / (1 + math.exp(eps)), 1 / (1 + math.exp(eps))
        return sum(math.comb(k, i) * p ** (k - i) * q ** i * max(0.0, 1 - math.exp(e - (k - 2 * i) * eps)) for i in range(k + 1))

    spent = accountant("pld").empty().add([approx(Fraction(5, 100))] * k).epsilon_at(DELTA)
    assert spent is not None
    assert exact_delta(float(spent)) <= 1e-6 * (1 + 1e-9)  # what it reports really holds


def test_negative_control_an_accountant_that_drops_one_entry_is_below_the_exact_bound() -> None:
    eps = 0.05
    k = 40

    def exact_delta(e: float) -> float:
        p, q = math.exp(eps) / (1 + math.exp(eps)), 1 / (1 + math.exp(eps))
        return sum(math.comb(k, i) * p ** (k - i) * q ** i * max(0.0, 1 - math.exp(e - (k - 2 * i) * eps)) for i in range(k + 1))

    dropped = accountant("pld").empty().add([approx(Fraction(5, 100))] * (k - 1))._tight_epsilon(DELTA)
    assert dropped is not None and exact_delta(float(dropped)) > 1e-6  # the same check catches it


def test_the_composition_depends_on_the_multiset_only() -> None:
    terms = [laplace(Fraction(1, 100))] * 30 + [gauss(Fraction(1, 10), Fraction(1, 10**8))] * 7
    shuffled = list(terms)
    random.Random(1).shuffle(shuffled)
    stepwise = accountant("pld").empty()
    for loss in shuffled:
        stepwise = stepwise.add([loss])
    grouped = accountant("pld").compose_counted([((terms[0],), 30), ((terms[-1],), 7)])
    assert stepwise.epsilon_at(DELTA) == grouped.epsilon_at(DELTA) == accountant("pld").empty().add(terms).epsilon_at(DELTA)


@pytest.mark.parametrize("name", ["pld", "zcdp", "basic"])
def test_headroom_is_the_largest_count_that_fits(name: str) -> None:
    base = accountant(name).empty().add([laplace(Fraction(1, 100))] * 50)
    kind = [laplace(Fraction(1, 100)), gauss(Fraction(1, 50), Fraction(1, 10**8))]
    j = base.headroom(kind, BUDGET)
    assert j > 0 and base.add(kind, j).fits(BUDGET) and not base.add(kind, j + 1).fits(BUDGET)


def _charge(led, cost: PrivacyCost, analyst: str = "alice", budget: PrivacyCost = BUDGET) -> None:  # type: ignore[no-untyped-def]
    led.charge(analyst=analyst, session="s", query="q", plan_hash="h", mechanism="laplace",
               params={"losses": [x.record() for x in cost.losses]}, cost=cost, budget=budget, accountant="adaptive")


def test_more_counts_down_exactly_and_the_ledger_admits_that_many(tmp_path: Path) -> None:
    count = PrivacyCost.of(laplace(Fraction(1, 100)))
    with open_ledger(tmp_path / "l.db") as led:
        first = led.more("alice", count, BUDGET, "adaptive")
        _charge(led, count)
        assert led.more("alice", count, BUDGET, "adaptive") == first - 1
        for _ in range(first - 1):
            _charge(led, count)
        assert led.more("alice", count, BUDGET, "adaptive") == 0
        with pytest.raises(BudgetExhaustedError):
            _charge(led, count)
    chosen, kind = Filter("adaptive", BUDGET), charge_of(count.losses)
    assert chosen.admits(History().add(kind, first)) and not chosen.admits(History().add(kind, first + 1))


def test_a_known_fitting_superset_is_not_reused_for_another_budget(tmp_path: Path) -> None:
    count = PrivacyCost.of(laplace(Fraction(1, 100)))
    small = PrivacyCost(Fraction(1, 20), DELTA)
    with open_ledger(tmp_path / "l.db") as led:
        for _ in range(10):
            _charge(led, count)  # certified under (1, 1e-6): hundreds more would fit
        with pytest.raises(BudgetExhaustedError):
            _charge(led, count, budget=small)  # 11 x 0.01 > 0.05 under any accountant


def test_an_old_ledger_file_is_read_and_extended(tmp_path: Path) -> None:
    """A ledger written before loss terms and the ledger identity were recorded (schema 1, params
    without "losses"): its charges enter as their (epsilon, 0) cost and the file is extended."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        raw.execute("INSERT INTO schema_version VALUES (1)")
        raw.execute("""CREATE TABLE charges (id INTEGER PRIMARY KEY AUTOINCREMENT, analyst TEXT NOT NULL,
            session TEXT NOT NULL, time REAL NOT NULL, query TEXT NOT NULL, plan_hash TEXT NOT NULL,
            mechanism TEXT NOT NULL, params TEXT NOT NULL, eps_num TEXT NOT NULL, eps_den TEXT NOT NULL,
            delta_num TEXT NOT NULL, delta_den TEXT NOT NULL)""")
        raw.executemany("INSERT INTO charges (analyst, session, time, query, plan_hash, mechanism, params, eps_num, eps_den, "
                        "delta_num, delta_den) VALUES ('alice', 'old', 0, 'SELECT COUNT(*) FROM t', 'h', 'laplace', "
                        "'{\"kind\": \"laplace\", \"scale\": \"100\"}', '1', '100', '0', '1')", [()] * 200)
    count = PrivacyCost.of(laplace(Fraction(1, 100)))
    old = History().add(charge_of((PrivacyLoss("approx_dp", "ledger", Fraction(1, 100)),)), 200)
    expected = Filter("adaptive", BUDGET).more(old, charge_of(count.losses), 10**6)
    with open_ledger(path) as led:
        assert len(led.entries("alice")) == 200
        n = 0
        while True:
            try:
                _charge(led, count)
            except BudgetExhaustedError:
                break
            n += 1
        assert n == expected and len(led.entries("alice")) == 200 + n
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT COUNT(*) FROM charges").fetchone() == (200 + n,)


def test_a_count_above_the_limit_reads_at_least_and_below_it_is_exact(tmp_path: Path) -> None:
    from dpsql.accounting.ledger import MORE_LIMIT

    count = PrivacyCost.of(laplace(Fraction(1, 1000)))  # about 56,000 fit within (1, 1e-6)
    small = PrivacyCost.of(laplace(Fraction(1, 100)))
    with open_ledger(tmp_path / "l.db") as led:
        _charge(led, count)
        assert led.more("alice", count, BUDGET, "adaptive") == MORE_LIMIT  # shown as "at least 1000"
        history = History().add(charge_of(count.losses))
        exact = Filter("adaptive", BUDGET).more(history, charge_of(small.losses), 10**6)
        assert 0 < exact < MORE_LIMIT and led.more("alice", small, BUDGET, "adaptive") == exact
        chosen = Filter("adaptive", BUDGET)
        assert chosen.admits(history.add(charge_of(small.losses), exact))
        assert not chosen.admits(history.add(charge_of(small.losses), exact + 1))


def test_pld_is_capped_by_the_zcdp_bound_where_the_grid_over_states() -> None:
    """Gaussian noise of large sigma: each loss is far below the PLD's 1e-4 grid, so rounding every
    one up over-states; the zCDP bound of the same terms holds too, and the smaller one is used."""
    big_sigma = gauss(Fraction(1, 1000), Fraction(1, 10**9))
    history = accountant("pld").empty().add([big_sigma], 5000)
    zcdp = accountant("zcdp").empty().add([big_sigma], 5000).epsilon_at(DELTA)
    pld_alone = history._pld_epsilon(DELTA)
    assert zcdp is not None and pld_alone is not None and zcdp < pld_alone  # the grid's over-statement
    assert history.epsilon_at(DELTA) == zcdp

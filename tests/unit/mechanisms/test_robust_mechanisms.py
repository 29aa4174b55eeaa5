"""The robust mechanisms' release steps: exact distributions, costs, and refusals.

Distribution checks are chi-square or Kolmogorov-Smirnov tests at a fixed seed with a 1e-6
level: under a correct sampler they fail with probability 1e-6 (deterministically here).
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
from scipy import stats

from dpsql.accounting.cost import PrivacyCost
from dpsql.mechanisms import exponential, ptr, subsample
from dpsql.mechanisms.ranks import Histogram, WindowedOrderStatistics, quantile_rank, rank_shift
from dpsql.mechanisms.rng import SeededRandomSource

LEVEL = 1e-6


def chi_square_ok(observed: list[int], expected: list[float]) -> bool:
    total = sum(observed)
    keep = [i for i, p in enumerate(expected) if p * total >= 5]
    rest_obs = total - sum(observed[i] for i in keep)
    rest_exp = 1 - sum(expected[i] for i in keep)
    obs = [observed[i] for i in keep] + ([rest_obs] if rest_exp * total >= 5 else [])
    exp_ = [expected[i] * total for i in keep] + ([rest_exp * total] if rest_exp * total >= 5 else [])
    chi = sum((o - e) ** 2 / e for o, e in zip(obs, exp_))
    return stats.chi2.sf(chi, len(obs) - 1) > LEVEL


def test_quantile_rank_is_percentile_disc() -> None:
    # rho_p(n) = max(1, ceil(n p)): DuckDB's quantile_disc (checked against DuckDB in integration).
    assert [quantile_rank(n, Fraction(1, 2)) for n in range(0, 7)] == [1, 1, 1, 2, 2, 3, 3]
    assert quantile_rank(10, Fraction(1, 4)) == 3 and quantile_rank(10, Fraction(3, 4)) == 8
    assert rank_shift(1, Fraction(1, 10)) == 1 and rank_shift(4, Fraction(1, 10)) == 4


# --- the exponential mechanism -----------------------------------------------------------------------


def em_exact(spec: exponential.ExponentialQuantileSpec, values: list[int]) -> list[float]:
    p = Fraction(spec.p)
    a, b = p.numerator, p.denominator
    rho = float(spec.rho)
    weights = [rho ** abs((b - a) * sum(v < c for v in values) - a * sum(v > c for v in values))
               for c in range(spec.lower, spec.upper + 1)]
    total = sum(weights)
    return [w / total for w in weights]


@pytest.mark.parametrize("max_near", [512, 3, 0])
def test_em_samples_exactly_proportional_to_rho_to_the_score(monkeypatch: pytest.MonkeyPatch, max_near: int) -> None:
    # max_near 3 and 0 push most candidates into the far envelope, exercising the rejection path.
    monkeypatch.setattr(exponential, "MAX_NEAR", max_near)
    values = [3, 3, 4, 7, 7, 7, 8, 12, 15, 15]
    spec = exponential.ExponentialQuantileSpec(Fraction(1, 2), Fraction(1, 2), 1, 0, 19)
    hist = Histogram.of(values)
    rng = SeededRandomSource(4)
    draws = [exponential.release(spec, hist, rng) for _ in range(20000)]
    observed = [draws.count(c) for c in range(20)]
    assert chi_square_ok(observed, em_exact(spec, values))


def test_em_quartile_and_empty_input() -> None:
    spec = exponential.ExponentialQuantileSpec(Fraction(2), Fraction(1, 4), 2, 10, 30)
    rng = SeededRandomSource(5)
    values = list(range(10, 31)) * 3
    draws = [exponential.release(spec, Histogram.of(values), rng) for _ in range(8000)]
    assert chi_square_ok([draws.count(c) for c in range(10, 31)], em_exact(spec, values))
    empty = [exponential.release(spec, Histogram.of([]), rng) for _ in range(4000)]  # uniform, never ⊥
    assert chi_square_ok([empty.count(c) for c in range(10, 31)], [1 / 21] * 21)


def test_em_rho_is_rounded_up_and_costs_pure_epsilon() -> None:
    spec = exponential.ExponentialQuantileSpec(Fraction(1, 10), Fraction(9, 10), 3, 0, 100)
    assert spec.sensitivity == 27
    assert float(spec.rho) >= math.exp(-0.1 / 54)
    assert 2 * spec.sensitivity * -math.log(spec.rho) <= 0.1 + 1e-12
    assert exponential.cost(spec) == PrivacyCost(Fraction(1, 10), 0)


def test_em_with_a_huge_score_scale_finishes() -> None:
    # p with many digits makes the scores huge and rho close to 1: the far path must stay cheap.
    spec = exponential.ExponentialQuantileSpec(Fraction(1, 100), Fraction(123456789, 10**9), 1, 0, 2000)
    hist = Histogram.of(list(range(0, 2000, 3)) * 5)
    rng = SeededRandomSource(1)
    assert all(0 <= exponential.release(spec, hist, rng) <= 2000 for _ in range(50))


@pytest.mark.parametrize("num,den,times", [(3, 4, 5), (7, 10, 3), (2**48 - 5, 2**48, 10**12), (1, 3, 1)])
def test_bernoulli_power_is_exact(num: int, den: int, times: int) -> None:
    rng = SeededRandomSource(times % 97)
    n = 40000
    hits = sum(exponential._bernoulli_power(num, den, times, rng) for _ in range(n))
    p = (num / den) ** times
    assert stats.binomtest(hits, n, p).pvalue > LEVEL


# --- PTR releases --------------------------------------------------------------------------------------


def test_smed_releases_exact_value_or_refuses_and_never_anything_else() -> None:
    test = ptr.PTRTest(Fraction(1), Fraction(1, 10**6))
    spec = ptr.SMedSpec(test, Fraction(1, 2), 1)
    rng = SeededRandomSource(2)
    stable = WindowedOrderStatistics.full([5] * 200)
    assert {ptr.smed_release(spec, stable, rng) for _ in range(200)} == {5}
    assert ptr.smed_release(spec, WindowedOrderStatistics.full([]), rng) is ptr.REFUSED
    edge = WindowedOrderStatistics.full([1] * 100 + [2] * 100)  # m = 100: the last 1
    outcomes = {ptr.smed_release(spec, edge, rng) for _ in range(500)}
    assert outcomes == {ptr.REFUSED}
    assert ptr.smed_cost(spec) == PrivacyCost(1, Fraction(1, 10**6))
    assert not ptr.REFUSED and repr(ptr.REFUSED) == "REFUSED"


def test_ptr_laplace_release_is_laplace_on_the_grid() -> None:
    test = ptr.PTRTest(Fraction(1, 2), Fraction(1, 10**6))
    spec = ptr.PTRLaplaceSpec(test, Fraction(1, 2), Fraction(1, 2), 1, Fraction(3))
    values = WindowedOrderStatistics.full([10] * 500 + [11] * 500)
    rng = SeededRandomSource(3)
    out = [ptr.ptr_laplace_release(spec, values, rng) for _ in range(4000)]
    noise = [v - 10 for v in out]
    assert all((Fraction(v) / spec.grid).denominator == 1 for v in out[:50])  # every output on the grid b / 2^20
    assert stats.kstest(noise, stats.laplace(scale=6).cdf).pvalue > LEVEL  # b / eps_r = 6
    assert ptr.ptr_laplace_cost(spec) == PrivacyCost(1, Fraction(1, 10**6))
    assert abs(float(spec.half_width()) - 6 * math.log(20)) < 0.01


def test_scale_release_is_beta_to_a_laplace_power() -> None:
    spec = ptr.ScaleSpec(Fraction(1, 4), Fraction(1, 10**6), 1, 1)
    r = random.Random(6)  # test DATA only
    values = WindowedOrderStatistics.full([r.lognormvariate(6, 0.5) for _ in range(100_000)])
    iqr = values.at(quantile_rank(values.n, Fraction(3, 4))) - values.at(quantile_rank(values.n, Fraction(1, 4)))
    base = spec.base(100_000)
    assert 1 < base < 1.05
    rng = SeededRandomSource(7)
    z = [math.log(ptr.scale_release(spec, values, 100_000, rng) / iqr) / math.log(base) for _ in range(3000)]
    assert stats.kstest(z, stats.laplace(scale=4).cdf).pvalue > LEVEL
    assert ptr.scale_cost(spec) == PrivacyCost(1, Fraction(1, 10**6))
    assert spec.base(None) == 2.0 and spec.base(10) == 2.0


def test_scale_releases_zero_for_a_stable_zero_iqr() -> None:
    spec = ptr.ScaleSpec(Fraction(1), Fraction(1, 10**6), 1, 1)
    values = WindowedOrderStatistics.full([0] * 10 + [4] * 2000 + [9] * 10)
    rng = SeededRandomSource(8)
    assert {ptr.scale_release(spec, values, 2000, rng) for _ in range(100)} == {0.0}


# --- A_samp ------------------------------------------------------------------------------------------------


def test_asamp_releases_the_clear_winner_and_refuses_ties() -> None:
    spec = subsample.ASampSpec(ptr.PTRTest(Fraction(1), Fraction(1, 10**6)))
    rng = SeededRandomSource(9)
    assert {subsample.release(spec, {"a": 150, "b": 30, "c": 20}, rng) for _ in range(100)} == {"a"}
    assert {subsample.release(spec, {"a": 100, "b": 100}, rng) for _ in range(300)} == {ptr.REFUSED}
    assert subsample.release(spec, {}, rng) is ptr.REFUSED
    assert subsample.cost(spec) == PrivacyCost(1, Fraction(1, 10**6))


def test_default_blocks_leave_room_for_the_threshold() -> None:
    for eps, delta, groups in ((Fraction(1), Fraction(1, 10**6), 1), (Fraction(1, 10), Fraction(1, 10**8), 1),
                               (Fraction(1, 3), Fraction(1, 10**6), 3)):
        test = ptr.PTRTest(eps, delta, groups)
        blocks = subsample.default_blocks(test)
        assert blocks >= 200
        assert (blocks - 1) // 2 >= test.threshold + 4 * test.scale  # the largest distance passes reliably
    assert subsample.default_blocks(ptr.PTRTest(Fraction(1), Fraction(1, 10**6))) == 200

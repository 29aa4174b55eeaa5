"""Distribution tests for the exact discrete Gaussian sampler (CKS20 Algorithm 3).

H0: the draws of `discrete_gaussian(sigma2, rng)` follow P[X = x] = exp(-x²/(2σ²)) / Z with
Z = sum over all integers of exp(-x²/(2σ²)).

Same method as test_discrete_laplace.py: N = 20,000 draws per check, one bin per integer near 0,
the tails pooled so every expected count is >= 5, and H0 rejected when the chi-square p-value is
below 1e-4. The 5 seeded positive checks (4 variances and a huge one on quantile bins) are
deterministic; the SystemRandomSource check fails with probability 1e-4 per run for a correct
sampler. The negative controls feed samples drawn at a wrong variance (x0.8, x1.25) to the same
check and assert that it rejects them. The pmf is computed here with 50-digit decimals,
independently of dpsql.mechanisms.sampling; `discrete_gaussian_ci` is checked against it too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import cache

import pytest
from scipy import stats

from dpsql.mechanisms.rng import RandomSource, SeededRandomSource, SystemRandomSource
from dpsql.mechanisms.sampling import discrete_gaussian, discrete_gaussian_ci

pytestmark = pytest.mark.statistical

N = 20_000
P_THRESHOLD = 1e-4
MIN_EXPECTED = 5.0
VARIANCES = [Fraction(1, 4), Fraction(1), Fraction(7, 2), Fraction(100)]


@cache
def pmf_table(sigma2: Fraction) -> tuple[int, tuple[float, ...]]:
    """(K, probabilities of 0..K) with the mass beyond K below 1e-30 (50-digit decimals)."""
    with localcontext() as ctx:
        ctx.prec = 50
        var = Decimal(sigma2.numerator) / Decimal(sigma2.denominator)
        k_max = int(12 * math.sqrt(float(sigma2))) + 12
        weights = [(-(Decimal(x * x)) / (2 * var)).exp() for x in range(k_max + 1)]
        total = weights[0] + 2 * sum(weights[1:])
        return k_max, tuple(float(w / total) for w in weights)


def probability(sigma2: Fraction, x: int) -> float:
    k_max, table = pmf_table(sigma2)
    return table[abs(x)] if abs(x) <= k_max else 0.0


def bins(sigma2: Fraction, n: int) -> list[int]:
    """Symmetric integer bins -K..K, K as large as keeps each bin and both tails at >= 5 expected."""
    k = 0
    while True:
        tail = sum(probability(sigma2, x) for x in range(k + 2, pmf_table(sigma2)[0] + 1))
        if n * probability(sigma2, k + 1) < MIN_EXPECTED or n * tail < MIN_EXPECTED:
            return list(range(-k, k + 1))
        k += 1


def pvalue(samples: Sequence[int], sigma2: Fraction) -> float:
    centre = bins(sigma2, len(samples))
    k = centre[-1]
    expected = [sum(probability(sigma2, x) for x in range(-pmf_table(sigma2)[0], -k))]
    expected += [probability(sigma2, x) for x in centre]
    expected += [sum(probability(sigma2, x) for x in range(k + 1, pmf_table(sigma2)[0] + 1))]
    observed = [0] * len(expected)
    for s in samples:
        observed[0 if s < -k else len(expected) - 1 if s > k else s + k + 1] += 1
    total = sum(expected)
    scaled = [e * len(samples) / total for e in expected]
    assert min(scaled) >= MIN_EXPECTED
    return float(stats.chisquare(observed, scaled).pvalue)


def draw(sigma2: Fraction, rng: RandomSource, n: int = N) -> list[int]:
    return [discrete_gaussian(sigma2, rng) for _ in range(n)]


@pytest.mark.parametrize("sigma2", VARIANCES, ids=str)
def test_discrete_gaussian_follows_its_pmf(sigma2: Fraction) -> None:
    seed = 70_000 + sigma2.numerator * 100 + sigma2.denominator
    p = pvalue(draw(sigma2, SeededRandomSource(seed)), sigma2)
    assert p > P_THRESHOLD, f"H0 rejected at sigma2 {sigma2}: p = {p:.3g}"


@pytest.mark.parametrize("sigma2", [Fraction(1), Fraction(100)], ids=str)
@pytest.mark.parametrize("factor", [Fraction(4, 5), Fraction(5, 4)], ids=["x0.8", "x1.25"])
def test_check_rejects_the_wrong_variance(sigma2: Fraction, factor: Fraction) -> None:
    samples = draw(sigma2 * factor, SeededRandomSource(91 + factor.numerator))
    assert pvalue(samples, sigma2) < P_THRESHOLD


def test_discrete_gaussian_with_the_system_source() -> None:
    sigma2 = Fraction(7, 2)
    assert pvalue(draw(sigma2, SystemRandomSource()), sigma2) > P_THRESHOLD


def test_discrete_gaussian_huge_variance() -> None:
    # σ = 10^5: 40 bins at the normal quantiles (the discrete and continuous laws agree to far
    # below the test's resolution at this σ); expected count per bin 500.
    sigma2 = Fraction(10**10)
    sigma = 10**5
    edges = sorted({round(sigma * stats.norm.ppf(i / 40)) for i in range(1, 40)})
    probs = [stats.norm.cdf(edges[0] / sigma)] + [stats.norm.cdf(b / sigma) - stats.norm.cdf(a / sigma)
                                                  for a, b in zip(edges, edges[1:])] + [stats.norm.sf(edges[-1] / sigma)]

    def check(samples: list[int]) -> float:
        observed = [0] * (len(edges) + 1)
        for s in samples:
            observed[sum(1 for e in edges if e <= s)] += 1
        return float(stats.chisquare(observed, [p * len(samples) for p in probs]).pvalue)

    assert check(draw(sigma2, SeededRandomSource(5))) > P_THRESHOLD
    assert check(draw(sigma2 * Fraction(81, 100), SeededRandomSource(6))) < P_THRESHOLD


@pytest.mark.parametrize("sigma2", VARIANCES + [Fraction(160000)], ids=str)
def test_interval_half_width_matches_the_pmf(sigma2: Fraction) -> None:
    k = discrete_gaussian_ci(sigma2)
    k_max = pmf_table(sigma2)[0]

    def outside(j: int) -> float:
        return 2 * sum(probability(sigma2, x) for x in range(j + 1, k_max + 1))

    assert outside(k) <= 0.05 + 1e-12
    assert k == 0 or outside(k - 1) > 0.05

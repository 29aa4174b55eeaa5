"""The discrete Gaussian mechanism: the sampler's distribution (chi-square against the exact pmf,
fixed seed, with a negative control), its calibration from (epsilon, delta), and its interval."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from scipy.stats import chi2

from dpsql.mechanisms.gaussian import GaussianSpec, half_width, zcdp_rho
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.mechanisms.sampling import discrete_gaussian

N = 20_000
SIGMA2 = Fraction(4)
LIMIT = 6  # bins -6..6, and the two tails


def _pmf(sigma2: float) -> dict[int, float]:
    weights = {x: math.exp(-x * x / (2 * sigma2)) for x in range(-60, 61)}
    total = sum(weights.values())
    return {x: w / total for x, w in weights.items()}


def _chi_square(draws: list[int], sigma2: float) -> tuple[float, int]:
    pmf = _pmf(sigma2)
    bins = {x: pmf[x] for x in range(-LIMIT, LIMIT + 1)}
    low = sum(p for x, p in pmf.items() if x < -LIMIT)
    high = sum(p for x, p in pmf.items() if x > LIMIT)
    observed = {x: 0 for x in bins} | {"low": 0, "high": 0}
    for d in draws:
        observed["low" if d < -LIMIT else "high" if d > LIMIT else d] += 1
    expected = {**bins, "low": low, "high": high}
    stat = sum((observed[k] - N * p) ** 2 / (N * p) for k, p in expected.items())
    return stat, len(expected) - 1


# The test fails with probability 1e-4 under a correct sampler (fixed seed: deterministic).
CRITICAL = float(chi2.ppf(1 - 1e-4, 2 * LIMIT + 2))


def test_the_sampler_matches_the_exact_pmf() -> None:
    rng = SeededRandomSource(11)
    stat, _ = _chi_square([discrete_gaussian(SIGMA2, rng) for _ in range(N)], float(SIGMA2))
    assert stat < CRITICAL


def test_negative_control_a_rounded_continuous_gaussian_of_another_sigma_is_caught() -> None:
    import random

    rng = random.Random(11)  # test-only: the wrong sampler this test must reject
    draws = [round(rng.gauss(0, 2.3)) for _ in range(N)]
    stat, _ = _chi_square(draws, float(SIGMA2))
    assert stat > CRITICAL


def test_sigma_is_calibrated_by_the_zcdp_conversion() -> None:
    spec = GaussianSpec(Fraction(3), Fraction(1, 2), Fraction(1, 10**6))
    rho = 9 / (2 * float(spec.sigma2))
    assert rho <= zcdp_rho(0.5, 1e-6)  # rounded towards more noise
    assert rho + 2 * math.sqrt(rho * math.log(1e6)) <= 0.5
    assert rho == pytest.approx(zcdp_rho(0.5, 1e-6), rel=1e-6)


def test_the_interval_covers_95_percent() -> None:
    spec = GaussianSpec(Fraction(1), Fraction(1), Fraction(1, 10**6))
    k = half_width(spec)
    pmf = _pmf(float(spec.sigma2))
    assert sum(p for x, p in pmf.items() if abs(x) > k) <= 0.05 < sum(p for x, p in pmf.items() if abs(x) > k - 1)


def test_delta_zero_is_refused() -> None:
    with pytest.raises(ValueError):
        GaussianSpec(Fraction(1), Fraction(1), Fraction(0))

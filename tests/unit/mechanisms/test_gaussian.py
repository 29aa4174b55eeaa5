"""The discrete Gaussian mechanism: its calibration from (epsilon, delta) and its interval. The
sampler's distribution is tested in tests/statistical/test_discrete_gaussian.py (chi-square at
fixed seeds, with wrong-variance negative controls); the (epsilon, delta) audit through SQL in
tests/statistical/test_gaussian_sql_audit.py."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from dpsql.mechanisms.gaussian import GaussianSpec, half_width, zcdp_rho


def _pmf(sigma2: float) -> dict[int, float]:
    weights = {x: math.exp(-x * x / (2 * sigma2)) for x in range(-2000, 2001)}
    total = sum(weights.values())
    return {x: w / total for x, w in weights.items()}


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

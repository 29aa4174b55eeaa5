"""The discrete Gaussian mechanism on integers (counts and fixed-point sums), exact.

Privacy function: adding discrete Gaussian noise of variance parameter sigma^2 to an integer
query of L2 sensitivity s is rho-zCDP with rho = s^2 / (2 sigma^2) (Canonne, Kamath & Steinke
2020, Thm. 4), hence (rho + 2 sqrt(rho ln(1/delta)), delta)-DP for every delta > 0 (Bun &
Steinke 2016, Prop. 1.3). Given a release's (epsilon, delta) share, sigma^2 is the smallest
(rounded up to 9 significant digits) for which that conversion gives epsilon: rho =
(sqrt(ln(1/delta) + epsilon) - sqrt(ln(1/delta)))^2. The ledger records the noise itself
(sigma^2, s), so the PLD and zCDP accountants compose its exact loss, which is far below the
recorded (epsilon, delta) pair that basic composition adds up.

The L2 sensitivity used is the L1 one the policy gives (a person's rows spread over groups have
L2 norm <= L1 norm), so no new policy fact is needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.mechanisms.base import Describing, ErrorDescription, Output, Parameters, fmt
from dpsql.mechanisms.rng import RandomSource
from dpsql.mechanisms.sampling import discrete_gaussian, discrete_gaussian_ci

_EXACT_SIGMA = 400.0  # discrete_gaussian_ci sums the pmf exactly up to this sigma


def zcdp_rho(epsilon: float, delta: float) -> float:
    """The largest rho whose zCDP-to-DP conversion at ``delta`` is at most ``epsilon``."""
    log_term = math.log(1 / delta)
    return (math.sqrt(log_term + epsilon) - math.sqrt(log_term)) ** 2


def round_up(value: float, digits: int = 9) -> Fraction:
    """A Fraction >= value with about ``digits`` significant decimal digits."""
    exponent = digits - 1 - math.floor(math.log10(value))
    if exponent >= 0:
        return Fraction(math.ceil(value * (1 + 1e-12) * 10**exponent), 10**exponent)
    return Fraction(math.ceil(value * (1 + 1e-12) / 10**-exponent) * 10**-exponent)


@dataclass(frozen=True, slots=True)
class GaussianSpec:
    """Discrete Gaussian on an integer aggregate: L2 sensitivity (grid units) and the (epsilon,
    delta) share sigma^2 is calibrated from."""

    sensitivity: Fraction
    epsilon: Fraction
    delta: Fraction

    def __post_init__(self) -> None:
        if self.sensitivity < 0 or self.epsilon <= 0 or not 0 < self.delta < 1:
            raise ValueError("the Gaussian mechanism needs sensitivity >= 0, epsilon > 0 and 0 < delta < 1")

    @property
    def sigma2(self) -> Fraction:
        """The variance parameter, in grid units squared (0 when the sensitivity is 0)."""
        if self.sensitivity == 0:
            return Fraction(0)
        rho = zcdp_rho(float(self.epsilon), float(self.delta)) * (1 - 1e-12)  # rounded down: more noise
        return round_up(float(self.sensitivity) ** 2 / (2 * rho))

    def half_width(self, confidence: float = 0.95) -> int:
        """The half-width k, in grid units, with P(|noise| > k) <= 1 - confidence."""
        return gaussian_half_width(self.sigma2, confidence)

    @property
    def scale(self) -> Fraction:
        """sigma, for reports (rounded to 9 significant digits)."""
        sigma2 = self.sigma2
        return round_up(math.sqrt(sigma2)) if sigma2 else Fraction(0)


def cost(spec: GaussianSpec) -> PrivacyCost:
    """(epsilon, delta) of the share, with the noise recorded for the tight accountants."""
    return PrivacyCost.of(PrivacyLoss("discrete_gaussian", "gaussian", spec.epsilon, spec.delta,
                                      sensitivity=spec.sensitivity, sigma2=spec.sigma2))


def half_width(spec: GaussianSpec, confidence: float = 0.95) -> int:
    """The half-width k, in grid units, with P(|noise| > k) <= 1 - confidence."""
    return gaussian_half_width(spec.sigma2, confidence)


def gaussian_half_width(sigma2: Fraction, confidence: float = 0.95) -> int:
    """discrete_gaussian_ci, with the continuous quantile rounded up plus one above sigma 400 at
    levels other than 95% (the discrete tail is then below the continuous one)."""
    if sigma2 and math.sqrt(float(sigma2)) > _EXACT_SIGMA and confidence != 0.95:
        return math.ceil(NormalDist().inv_cdf(1 - (1 - confidence) / 2) * math.sqrt(float(sigma2))) + 1
    return discrete_gaussian_ci(sigma2, confidence)


class Gaussian:
    """COUNT and fixed-point SUM releases with discrete Gaussian noise (``noise = 'gaussian'``)."""

    name = "gaussian"
    spec_type = GaussianSpec
    output = Output()

    def cost(self, spec: GaussianSpec) -> PrivacyCost:
        return cost(spec)

    def parameters(self, spec: GaussianSpec) -> Parameters:
        return ()

    def release(self, spec: GaussianSpec, raw: int, rng: RandomSource) -> int:
        return int(raw) + discrete_gaussian(spec.sigma2, rng)

    def describe(self, spec: GaussianSpec, context: Describing = Describing()) -> str:
        unit = context.grid
        return (f"discrete Gaussian, L2 sensitivity {fmt(spec.sensitivity * unit)}, sigma {fmt(spec.scale * unit)}, "
                f"epsilon {fmt(spec.epsilon)}, delta {float(spec.delta):.3g}, 95% +-{fmt(half_width(spec) * unit)}")

    def error(self, spec: GaussianSpec) -> ErrorDescription:
        return ErrorDescription(scale=float(spec.scale), ci95=float(half_width(spec)))

    def refusal(self, spec: object) -> str | None:
        return None

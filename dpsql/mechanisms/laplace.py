"""The Laplace mechanism on integers (counts and fixed-point sums), discrete and exact.

Privacy function: for a query whose L1 sensitivity (after contribution bounding, in grid units)
is `sensitivity`, adding discrete Laplace noise of scale `sensitivity / epsilon` to every
coordinate is (epsilon, 0)-DP (Canonne, Kamath, Steinke 2020, Thm. 14 for the discrete case).
The cost is computed apart from the release, before any data is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.mechanisms.base import Describing, ErrorDescription, Output, Parameters, fmt
from dpsql.mechanisms.rng import RandomSource
from dpsql.mechanisms.sampling import discrete_laplace, discrete_laplace_ci


@dataclass(frozen=True, slots=True)
class LaplaceSpec:
    """Discrete Laplace on an integer aggregate: L1 sensitivity (grid units) and epsilon."""

    sensitivity: Fraction
    epsilon: Fraction

    def __post_init__(self) -> None:
        if self.sensitivity < 0 or self.epsilon <= 0:
            raise ValueError("Laplace needs sensitivity >= 0 and epsilon > 0")

    @property
    def scale(self) -> Fraction:
        """The noise scale b = sensitivity / epsilon, in grid units."""
        return Fraction(self.sensitivity) / self.epsilon

    def half_width(self, confidence: float = 0.95) -> int:
        """The half-width k, in grid units, with P(|noise| > k) <= 1 - confidence."""
        return discrete_laplace_ci(self.scale, confidence)


def cost(spec: LaplaceSpec) -> PrivacyCost:
    """What releasing with `spec` costs: (epsilon, 0), whatever the data."""
    return PrivacyCost.of(PrivacyLoss("discrete_laplace", "laplace", spec.epsilon, Fraction(0),
                                      sensitivity=spec.sensitivity, scale=spec.scale))


def release(spec: LaplaceSpec, raw: int, rng: RandomSource) -> int:
    """The exact integer aggregate plus one discrete Laplace draw."""
    return int(raw) + discrete_laplace(spec.scale, rng)


def half_width(spec: LaplaceSpec, confidence: float = 0.95) -> int:
    """The half-width k, in grid units, with P(|noise| > k) <= 1 - confidence."""
    return discrete_laplace_ci(spec.scale, confidence)


class Laplace:
    """COUNT and fixed-point SUM releases (docs/mechanisms.md). Raw and released values are in grid units;
    `Describing.grid` converts EXPLAIN's numbers to value units."""

    name = "laplace"
    spec_type = LaplaceSpec
    output = Output()

    def cost(self, spec: LaplaceSpec) -> PrivacyCost:
        return cost(spec)

    def parameters(self, spec: LaplaceSpec) -> Parameters:
        return ()

    def release(self, spec: LaplaceSpec, raw: int, rng: RandomSource) -> int:
        return int(raw) + discrete_laplace(spec.scale, rng)  # = release(spec, raw, rng), one call less per cell

    def describe(self, spec: LaplaceSpec, context: Describing = Describing()) -> str:
        unit = context.grid
        return (f"discrete Laplace, sensitivity {fmt(spec.sensitivity * unit)}, scale {fmt(spec.scale * unit)}, "
                f"epsilon {fmt(spec.epsilon)}, 95% +-{fmt(half_width(spec) * unit)}")

    def error(self, spec: LaplaceSpec) -> ErrorDescription:
        return ErrorDescription(scale=float(spec.scale), ci95=float(half_width(spec)))

    def refusal(self, spec: object) -> str | None:
        return None

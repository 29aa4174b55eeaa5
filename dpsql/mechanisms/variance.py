"""VARIANCE / VAR_SAMP / VAR_POP and STDDEV / STDDEV_SAMP / STDDEV_POP from three Laplace releases.

Privacy function. Each value x is clamped into the column's public bounds [L, U] and centred on
the bounds' midpoint c = (L + U) / 2, so |x - c| <= R/2 with R = U - L. Three sums are released
with discrete Laplace noise, each with its own share of epsilon: the count n (sensitivity
max_rows), the centred sum S1 = sum(x - c) (sensitivity max_rows * R/2) and the centred sum of
squares S2 = sum((x - c)^2) (sensitivity max_rows * (R/2)^2; without centring it would be
max_rows * max(L^2, U^2), up to 4x more when L = 0). By basic composition the aggregate costs the
sum of the three epsilons, delta 0. Everything after the draws is post-processing:

    var_pop  = S2/n - (S1/n)^2        (shift-invariant: centring changes nothing but the noise)
    var_samp = var_pop * n / (n - 1)
    stddev   = sqrt(var)

with n taken as max(n, 1) (max(n, 2) for the sample forms) and the variance clamped to
[0, R^2/4], the largest variance any distribution on [L, U] has, so the standard deviation lies in
[0, R/2].

95% interval (sound, `bounds`): each noisy sum is within its half-width at level 1 - 0.05/3
(a union bound keeps the joint level at 95%). Over that box, S2/n is monotone in each argument,
and (S1/n)^2 is smallest where S1/n is closest to 0; bounding the two terms separately gives
an interval that holds the true (population) statistic of the clamped values whenever the box
holds the true sums, so with probability >= 95%. It is then clamped like the estimate. The
interval is data-dependent in its position (it is computed from the released values) but uses
only released values and public parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.mechanisms import laplace
from dpsql.mechanisms.base import Describing, ErrorDescription, Output, Parameters, fmt
from dpsql.mechanisms.laplace import LaplaceSpec
from dpsql.mechanisms.rng import RandomSource

PARTS = 3  # the count, the centred sum and the centred sum of squares


@dataclass(frozen=True, slots=True)
class VarianceSpec:
    """The three Laplace releases of one variance (in their grid units) and the public facts
    the estimate needs: the grid of the sum (`grid`) and of the squares (`square_grid`), the
    half range R/2 of the clamp bounds, and which statistic (sample or population, variance or
    standard deviation)."""

    count: LaplaceSpec
    total: LaplaceSpec
    squares: LaplaceSpec
    grid: Fraction
    square_grid: Fraction
    half_range: Fraction
    sample: bool
    root: bool

    @property
    def ceiling(self) -> float:
        """The largest variance of values in the bounds: (R/2)^2."""
        return float(self.half_range) ** 2

    @property
    def label(self) -> str:
        """The statistic's name."""
        return ("STDDEV" if self.root else "VAR") + ("_SAMP" if self.sample else "_POP")


def estimate(spec: VarianceSpec, count: float, total: float, squares: float) -> float:
    """The statistic from the noisy count, centred sum and centred sum of squares (value units)."""
    n = max(count, 2.0 if spec.sample else 1.0)
    mean = total / n
    var = squares / n - mean * mean
    if spec.sample:
        var *= n / (n - 1)
    var = min(max(var, 0.0), spec.ceiling)
    return math.sqrt(var) if spec.root else var


def bounds(spec: VarianceSpec, count: float, total: float, squares: float,
           widths: tuple[float, float, float]) -> tuple[float, float]:
    """A 95% interval for the statistic of the clamped values (module docstring), from the noisy
    sums and their half-widths at level 1 - 0.05/3 (value units)."""
    floor = 2.0 if spec.sample else 1.0
    n_low, n_high = max(count - widths[0], floor), max(count + widths[0], floor)
    s_low, s_high = total - widths[1], total + widths[1]
    q_low, q_high = max(squares - widths[2], 0.0), max(squares + widths[2], 0.0)
    means = [s_low / n_low, s_low / n_high, s_high / n_low, s_high / n_high]
    largest_square = max(m * m for m in means)
    smallest_square = 0.0 if s_low <= 0.0 <= s_high else min(m * m for m in means)
    low = q_low / n_high - largest_square
    high = q_high / n_low - smallest_square
    if spec.sample:  # n/(n-1) is decreasing in n, between its values at n_high and n_low
        low *= n_high / (n_high - 1) if low >= 0 else n_low / (n_low - 1)
        high *= n_low / (n_low - 1) if high >= 0 else n_high / (n_high - 1)
    low, high = min(max(low, 0.0), spec.ceiling), min(max(high, 0.0), spec.ceiling)
    return (math.sqrt(low), math.sqrt(high)) if spec.root else (low, high)


def widths(spec: VarianceSpec) -> tuple[float, float, float]:
    """The half-widths of the three releases at level 1 - 0.05/3, in value units."""
    level = 1 - 0.05 / PARTS
    return (float(laplace.half_width(spec.count, level)), float(laplace.half_width(spec.total, level) * spec.grid),
            float(laplace.half_width(spec.squares, level) * spec.square_grid))


class Variance:
    """VARIANCE and STDDEV (docs/mechanisms.md): three discrete Laplace sums, post-processed."""

    name = "variance"
    spec_type = VarianceSpec
    output = Output()

    def cost(self, spec: VarianceSpec) -> PrivacyCost:
        # Three discrete Laplace releases, composed (each its own loss term for the accountant).
        terms = [PrivacyCost.of(PrivacyLoss("discrete_laplace", self.name, s.epsilon, Fraction(0), sensitivity=s.sensitivity,
                                            scale=s.scale)) for s in (spec.count, spec.total, spec.squares)]
        return terms[0] + terms[1] + terms[2]

    def parameters(self, spec: VarianceSpec) -> Parameters:
        return ()

    def release(self, spec: VarianceSpec, raw: tuple[int, int, int], rng: RandomSource) -> float:
        """`raw`: the exact count, centred sum and centred sum of squares, in grid units."""
        count, total, squares = (laplace.release(s, int(v), rng) for s, v in zip((spec.count, spec.total, spec.squares), raw))
        return estimate(spec, float(count), float(Fraction(total) * spec.grid), float(Fraction(squares) * spec.square_grid))

    def describe(self, spec: VarianceSpec, context: Describing = Describing()) -> str:
        eps = [fmt(s.epsilon) for s in (spec.count, spec.total, spec.squares)]
        return (f"{spec.label} from noisy count, centred sum and centred sum of squares (discrete Laplace, epsilon "
                f"{' + '.join(eps)}), clamped to [0, {fmt(spec.half_range if spec.root else spec.half_range ** 2)}]")

    def error(self, spec: VarianceSpec) -> ErrorDescription:
        # The 95% interval depends on the released sums (bounds()), so it is given per cell.
        return ErrorDescription(scale=None, ci95=None)

    def refusal(self, spec: object) -> str | None:
        return None

"""The trimmed mean: the mean of the values between the p- and (1 - p)-quantiles, in four releases.

Privacy function. The column is read as a histogram of its values mapped onto a public grid
(grid indices clamped to the column's public bounds; the exponential mechanism's coarse grid of at
most 2^16 candidates), and the aggregate's budget eps is split in four equal parts:

1. a = the exponential-mechanism p-quantile (eps/4, dpsql/mechanisms/exponential.py),
2. b = the exponential-mechanism (1 - p)-quantile (eps/4); the window is [min(a, b), max(a, b)].
   It comes from these two paid DP releases only, never from the data directly;
3. S = the sum over the rows whose value v lies in the window of y(v) = round(2^20 (v - m) / W),
   m = (a + b)/2 and W = (b - a)/2 (y = 0 when W = 0), plus discrete Laplace noise: |y| <= 2^20,
   and a person adds or removes at most k = max_rows rows (over all groups), so the L1
   sensitivity is k 2^20 and the scale k 2^20 / (eps/4) makes it eps/4-DP given the window;
4. C = the number of rows in the window, plus discrete Laplace noise of scale k / (eps/4).

By adaptive basic composition the release is (eps, 0)-DP: the window is a function of releases
1-2 (post-processing), and 3-4 are eps/4-DP for every window. Everything after the draws is
post-processing: the estimate m + W S / (2^20 max(C, 1)), clamped to the window.

95% interval (sound, per cell). S and C are each within their half-width at level 1 - 0.05/2 (a
union bound keeps the joint level at 95%); the estimate is monotone in each, so the lowest and
highest corner bound the mean of the in-window values (rounded to the grid) with probability at
least 95%; W / 2^21 is added for the rounding of y. The interval, like the estimate, is about the
values inside the released window: its position is data-dependent, through released values only.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.mechanisms import exponential, laplace
from dpsql.mechanisms.base import Describing, ErrorDescription, Output, Parameters, fmt
from dpsql.mechanisms.exponential import ExponentialQuantileSpec
from dpsql.mechanisms.laplace import LaplaceSpec
from dpsql.mechanisms.ranks import Histogram
from dpsql.mechanisms.rng import RandomSource
from dpsql.mechanisms.window_exponential import Bracketed

STEPS = 1 << 20  # the in-window sum's units per half window
PARTS = 4  # two quantiles, the sum, the count: eps/4 each


@dataclass(frozen=True, slots=True)
class TrimmedMeanSpec:
    """The four releases of one trimmed mean (epsilon/4 each) over candidates lower..upper."""

    epsilon: Fraction
    p: Fraction
    max_rows: int
    lower: int
    upper: int

    def __post_init__(self) -> None:
        if self.epsilon <= 0 or not 0 < self.p < Fraction(1, 2) or self.lower > self.upper or self.max_rows < 1:
            raise ValueError("the trimmed mean needs epsilon > 0, 0 < p < 1/2, lower <= upper and k >= 1")

    @property
    def part(self) -> Fraction:
        """Each release's epsilon."""
        return Fraction(self.epsilon) / PARTS

    @property
    def quantiles(self) -> tuple[ExponentialQuantileSpec, ExponentialQuantileSpec]:
        """The window's ends: the p- and (1 - p)-quantiles."""
        return (ExponentialQuantileSpec(self.part, self.p, self.max_rows, self.lower, self.upper),
                ExponentialQuantileSpec(self.part, 1 - Fraction(self.p), self.max_rows, self.lower, self.upper))

    @property
    def total(self) -> LaplaceSpec:
        """The in-window sum of y, in units of W / 2^20: sensitivity k 2^20."""
        return LaplaceSpec(Fraction(self.max_rows * STEPS), self.part)

    @property
    def count(self) -> LaplaceSpec:
        """The in-window count: sensitivity k."""
        return LaplaceSpec(Fraction(self.max_rows), self.part)

    @property
    def candidates(self) -> int:
        """The public candidates of the window's ends."""
        return self.upper - self.lower + 1


def cost(spec: TrimmedMeanSpec) -> PrivacyCost:
    """(epsilon, 0): two bounded-range EM terms and two discrete Laplace terms, composed."""
    name = TrimmedMean.name
    terms = [PrivacyCost.of(PrivacyLoss("bounded_range", name, q.epsilon, Fraction(0))) for q in spec.quantiles]
    terms += [PrivacyCost.of(PrivacyLoss("discrete_laplace", name, s.epsilon, Fraction(0), sensitivity=s.sensitivity, scale=s.scale))
              for s in (spec.total, spec.count)]
    return sum(terms, PrivacyCost.zero())


def in_window(hist: Histogram, low: int, high: int) -> tuple[int, int]:
    """The exact sum of y(v) and the count of the rows whose value lies in [low, high] (module docstring)."""
    twice_middle, width = low + high, high - low  # 2m and 2W, integers
    total = count = 0
    for index, value in enumerate(hist.values):
        if low <= value <= high:
            rows = hist.count(index)
            count += rows
            if width:
                numerator = (2 * int(value) - twice_middle) * STEPS  # 2^20 (v - m) / W = numerator / width
                total += rows * ((2 * numerator + width) // (2 * width))  # rounded half up
    return total, count


def estimate(spec: TrimmedMeanSpec, low: int, high: int, total: float, count: float) -> Fraction:
    """m + W S / (2^20 max(C, 1)), clamped to the window (grid indices)."""
    middle, half = Fraction(low + high, 2), Fraction(high - low, 2)
    mean = middle + half * Fraction(total) / (STEPS * max(Fraction(count), Fraction(1)))
    return min(max(mean, Fraction(low)), Fraction(high))


@dataclass(frozen=True, slots=True)
class Draw:
    """The four noisy releases of one group: the window [low, high] (grid indices), the noisy
    in-window sum (units of W / 2^20) and count."""

    low: int
    high: int
    total: int
    count: int


def draw(spec: TrimmedMeanSpec, hist: Histogram, rng: RandomSource) -> Draw:
    """The window's two quantiles, then the in-window sum and count with their noise (in that order)."""
    first, second = (exponential.release(q, hist, rng) for q in spec.quantiles)
    low, high = min(first, second), max(first, second)
    exact_total, exact_count = in_window(hist, low, high)
    return Draw(low, high, laplace.release(spec.total, exact_total, rng), laplace.release(spec.count, exact_count, rng))


def bracket(spec: TrimmedMeanSpec, drawn: Draw, level: float = 1 - 0.05 / 2) -> Bracketed:
    """The estimate and its interval: the corners of S and C at `level` each (module docstring)."""
    low, high = drawn.low, drawn.high
    value = estimate(spec, low, high, drawn.total, drawn.count)
    w_total, w_count = laplace.half_width(spec.total, level), laplace.half_width(spec.count, level)
    corners = [estimate(spec, low, high, drawn.total + s * w_total, drawn.count + c * w_count) for s in (-1, 1) for c in (-1, 1)]
    rounding = Fraction(high - low, 4 * STEPS)  # W / 2^21: y is rounded to an integer
    return Bracketed(value, max(min(corners) - rounding, Fraction(low)), min(max(corners) + rounding, Fraction(high)))


def release(spec: TrimmedMeanSpec, hist: Histogram, rng: RandomSource) -> Bracketed:
    """The trimmed mean and its 95% interval, in grid indices (fractions)."""
    return bracket(spec, draw(spec, hist, rng))


class TrimmedMean:
    """TRIMMED_MEAN(col, p) (docs/mechanisms.md): reads a Histogram, never refuses."""

    name = "trimmed-mean"
    spec_type = TrimmedMeanSpec
    output = Output(interval=True)

    def cost(self, spec: TrimmedMeanSpec) -> PrivacyCost:
        return cost(spec)

    def parameters(self, spec: TrimmedMeanSpec) -> Parameters:
        return (("candidates", str(spec.candidates)), ("p", str(spec.p)))

    def release(self, spec: TrimmedMeanSpec, raw: Histogram, rng: RandomSource) -> Bracketed:
        return release(spec, raw, rng)

    def describe(self, spec: TrimmedMeanSpec, context: Describing = Describing()) -> str:
        lower, upper = spec.quantiles
        return (f"trimmed mean between two exponential-mechanism quantiles (p={fmt(spec.p)}, 1-p; {spec.candidates} public "
                f"candidates{context.values}, about {lower.rank_error()} ranks), then the in-window sum (discrete Laplace, "
                f"sensitivity {spec.max_rows} x 2^20 per half window) and count (sensitivity {spec.max_rows}); never ⊥; "
                f"epsilon 4 x {fmt(spec.part)}, delta 0")

    def error(self, spec: TrimmedMeanSpec) -> ErrorDescription:
        return ErrorDescription(details=(("candidates", spec.candidates),))

    def refusal(self, spec: object) -> str | None:
        return None

"""The exponential-mechanism quantile over a public candidate grid: the fallback and yardstick.

Candidates are the grid indices lower..upper of a bounded column (public: bounds and grid come
from the policy). With p = a/b in lowest terms, candidate c scores
    U(c) = |(b - a) #{x < c} - a #{x > c}|      (b times OpenDP's |(1-p) #lt - p #gt|),
an integer. Adding or removing one row moves #lt or #gt by at most 1, so U moves by at most
max(a, b - a); one person with at most k rows over all groups moves the per-group scores by
sum_g k_g max(a, b - a) <= Delta = k max(a, b - a) in total. The mechanism outputs c with
probability proportional to rho^U(c), where rho is a rational >= exp(-eps / (2 Delta)), so it is
(eps, 0)-DP (the usual factor 2 covers the normaliser) and never refuses.

Exact sampling (how, since exp is irrational): rho = P / 2^48 is rounded *up* from
exp(-eps / (2 Delta)), so the privacy loss is at most eps. U is V-shaped over the candidates
(the signed score (b-a) #lt - a #gt is non-decreasing in c), so the candidates with
U <= U_min + H form one interval ("near"). Rejection sampling with the envelope
    near: rho^(U - U_min) exactly (big-integer weights, common denominator 2^(48 (H + 1)))
    far:  rho^(H + 1) for each candidate (an upper bound of its true weight)
draws an index with exact integer arithmetic (`randbelow` over the total weight) and accepts a
far candidate with probability rho^(U - U_min - H - 1), by comparing a uniform drawn bit by bit
with fixed-point bounds of that power (refined until they decide). H is chosen so that the far envelope weighs at most about 1, so a
round is accepted with probability >= 1/2. The output distribution is exactly proportional to
rho^U; no floating point touches a probability.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from fractions import Fraction

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.mechanisms.base import Describing, ErrorDescription, Output, Parameters, fmt
from dpsql.mechanisms.ranks import Histogram
from dpsql.mechanisms.rng import RandomSource

RHO_BITS = 48
MAX_NEAR = 512


@dataclass(frozen=True, slots=True)
class ExponentialQuantileSpec:
    """EM quantile p over candidate grid indices lower..upper; k = rows per person."""

    epsilon: Fraction
    p: Fraction
    max_rows: int
    lower: int
    upper: int

    def __post_init__(self) -> None:
        if self.epsilon <= 0 or not 0 < self.p < 1 or self.lower > self.upper or self.max_rows < 1:
            raise ValueError("the EM quantile needs epsilon > 0, 0 < p < 1, lower <= upper and k >= 1")

    @property
    def candidates(self) -> int:
        """K, the number of candidates."""
        return self.upper - self.lower + 1

    @property
    def sensitivity(self) -> int:
        """Delta = k max(a, b - a) in integer score units."""
        p = Fraction(self.p)
        return self.max_rows * max(p.numerator, p.denominator - p.numerator)

    @property
    def rho(self) -> Fraction:
        """rho = P / 2^48 >= exp(-eps / (2 Delta)) (rounded up, with margin for the float exp)."""
        estimate = math.exp(-float(self.epsilon) / (2 * self.sensitivity))
        numerator = min(math.floor(estimate * 2**RHO_BITS) + 2, 2**RHO_BITS)
        return Fraction(numerator, 2**RHO_BITS)

    def score_error(self, confidence: float = 0.95) -> float:
        """t with K rho^t <= 1 - confidence: U(output) <= U_min + t with that probability."""
        log_rho = -math.log(self.rho) if self.rho < 1 else 0.0
        return math.inf if log_rho == 0 else math.log(self.candidates / (1 - confidence)) / log_rho

    def rank_error(self, confidence: float = 0.95) -> int:
        """The score error in ranks (one row moves the signed score by b): about how many order
        statistics the output may be away from x_(rho_p) with the given probability."""
        error = self.score_error(confidence)
        return -1 if math.isinf(error) else math.ceil(error / Fraction(self.p).denominator)


def cost(spec: ExponentialQuantileSpec) -> PrivacyCost:
    """(eps, 0), and eps-bounded-range: the loss -ln(rho) (U(D, c) - U(D', c)) + ln(Z'/Z) moves by at
    most eps over the outputs c (|U(D, c) - U(D', c)| <= Delta), so it is also eps^2 / 8-zCDP
    (Cesar and Rogers 2021), which the zCDP filter reads."""
    return PrivacyCost.of(PrivacyLoss("bounded_range", "exponential", spec.epsilon, Fraction(0)))


@dataclass(frozen=True, slots=True)
class _Run:
    start: int
    length: int
    signed: int  # (b - a) #lt - a #gt for every candidate of the run


def _runs(spec: ExponentialQuantileSpec, hist: Histogram) -> list[_Run]:
    p = Fraction(spec.p)
    a, b = p.numerator, p.denominator
    runs: list[_Run] = []
    below, above, last = 0, hist.n, spec.lower - 1
    for index, value in enumerate(hist.values):
        value = int(value)
        if value < spec.lower or value > spec.upper:
            raise ValueError("a histogram value lies outside the candidate range (the engine clamps them)")
        count = hist.count(index)
        if value > last + 1:
            runs.append(_Run(last + 1, value - last - 1, (b - a) * below - a * above))
        runs.append(_Run(value, 1, (b - a) * below - a * (above - count)))
        below, above, last = below + count, above - count, value
    if last < spec.upper:
        runs.append(_Run(last + 1, spec.upper - last, (b - a) * below - a * above))
    return runs


def release(spec: ExponentialQuantileSpec, hist: Histogram, rng: RandomSource) -> int:
    """A candidate index drawn with probability exactly proportional to rho^U."""
    rho = spec.rho
    if rho.numerator == rho.denominator:  # eps too small to matter: uniform
        return spec.lower + rng.randbelow(spec.candidates)
    runs = _runs(spec, hist)
    signed = [r.signed for r in runs]
    first = bisect.bisect_left(signed, 0)
    centre = min((i for i in (first - 1, first) if 0 <= i < len(runs)), key=lambda i: abs(signed[i]))
    u_min = abs(signed[centre])
    near_levels = min(MAX_NEAR, math.ceil(math.log(spec.candidates + 1) / -math.log(rho)) + 1)
    left = right = centre
    while left > 0 and abs(signed[left - 1]) - u_min <= near_levels:
        left -= 1
    while right < len(runs) - 1 and abs(signed[right + 1]) - u_min <= near_levels:
        right += 1
    big_p, big_q = rho.numerator, rho.denominator
    # power[e] = P^e Q^(H+1-e): weight rho^e on the common denominator Q^(H+1).
    power = [big_q ** (near_levels + 1)]
    for _ in range(near_levels + 1):
        power.append(power[-1] // big_q * big_p)
    near_cumulative, total = [], 0
    for run in runs[left : right + 1]:
        total += run.length * power[abs(run.signed) - u_min]
        near_cumulative.append(total)
    near_total = total
    far_runs = runs[:left] + runs[right + 1 :]
    far_cumulative, far_count = [], 0
    for run in far_runs:
        far_count += run.length
        far_cumulative.append(far_count)
    far_weight = power[near_levels + 1]
    total = near_total + far_count * far_weight
    while True:
        draw = rng.randbelow(total)
        if draw < near_total:
            run = runs[left + bisect.bisect_right(near_cumulative, draw)]
            return run.start + rng.randbelow(run.length)
        position = (draw - near_total) // far_weight
        index = bisect.bisect_right(far_cumulative, position)
        run = far_runs[index]
        offset = position - (far_cumulative[index - 1] if index else 0)
        if _bernoulli_power(big_p, big_q, abs(run.signed) - u_min - near_levels - 1, rng):
            return int(run.start + offset)


def _bernoulli_power(numerator: int, denominator: int, times: int, rng: RandomSource) -> bool:
    """True with probability exactly (numerator / denominator)^times, in O(log times) big-integer work.

    Compares a uniform U, drawn bit by bit, with rho^times: fixed-point lower and upper bounds of
    rho^times at `bits` bits decide unless U falls between them, in which case both are refined
    (probability about times * 2^-bits each round). No floating point is involved.
    """
    if times <= 0 or numerator == denominator:
        return True
    bits, u, u_bits = 64, 0, 0
    while True:
        low, high = _power_bounds(numerator, denominator, times, bits)
        u = (u << (bits - u_bits)) | rng.randbelow(1 << (bits - u_bits))
        u_bits = bits
        if u + 1 <= low:  # U < (u + 1) / 2^bits <= low <= rho^times
            return True
        if u >= high:  # U >= u / 2^bits >= high >= rho^times
            return False
        bits *= 2


def _power_bounds(numerator: int, denominator: int, times: int, bits: int) -> tuple[int, int]:
    """Integers low, high with low / 2^bits <= (numerator / denominator)^times <= high / 2^bits."""
    one = 1 << bits
    base_low = (numerator << bits) // denominator
    base_high = -((-numerator << bits) // denominator)
    low = high = one
    while times:
        if times & 1:
            low = (low * base_low) >> bits
            high = -((-high * base_high) >> bits)
        times >>= 1
        if times:
            base_low = (base_low * base_low) >> bits
            base_high = -((-base_high * base_high) >> bits)
    return low, min(high, one)


class ExponentialQuantile:
    """MEDIAN/QUANTILE over public candidates (docs/mechanisms.md): reads a Histogram, never refuses."""

    name = "exponential"
    spec_type = ExponentialQuantileSpec
    output = Output()

    def cost(self, spec: ExponentialQuantileSpec) -> PrivacyCost:
        return cost(spec)

    def parameters(self, spec: ExponentialQuantileSpec) -> Parameters:
        return (("candidates", str(spec.candidates)),)

    def release(self, spec: ExponentialQuantileSpec, raw: Histogram, rng: RandomSource) -> int:
        return release(spec, raw, rng)

    def describe(self, spec: ExponentialQuantileSpec, context: Describing = Describing()) -> str:
        return (f"exponential mechanism over {spec.candidates} public candidates{context.values} (never ⊥), "
                f"score sensitivity {spec.sensitivity}, 95% within about {spec.rank_error()} ranks; "
                f"epsilon {fmt(spec.epsilon)}, delta 0")

    def error(self, spec: ExponentialQuantileSpec) -> ErrorDescription:
        return ErrorDescription(details=(("rank_error95", spec.rank_error()), ("candidates", spec.candidates)))

    def refusal(self, spec: object) -> str | None:
        return None


QUARTILES = (Fraction(1, 4), Fraction(3, 4))


@dataclass(frozen=True, slots=True)
class ExponentialIQRSpec:
    """IQR as Q3 - Q1 of two exponential-mechanism quartiles over the same public candidates.

    DP argument: each quartile is an (eps/2, 0)-DP EM release (the score sensitivity of p = 1/4
    and 3/4 is k max(a, b - a) = 3k, see ExponentialQuantileSpec); by basic composition the pair
    is (eps, 0)-DP, and max(0, Q3 - Q1) is post-processing. Both draws happen whatever the data,
    it never refuses, and the release lies in [0, upper - lower] by construction (candidates are
    grid indices lower..upper), so it can never be absurd (unlike Scale's beta^Z factor).
    """

    epsilon: Fraction
    max_rows: int
    lower: int
    upper: int

    @property
    def quartiles(self) -> tuple[ExponentialQuantileSpec, ExponentialQuantileSpec]:
        """The two EM quantile specs, epsilon / 2 each."""
        half = Fraction(self.epsilon) / 2
        return (ExponentialQuantileSpec(half, QUARTILES[0], self.max_rows, self.lower, self.upper),
                ExponentialQuantileSpec(half, QUARTILES[1], self.max_rows, self.lower, self.upper))

    @property
    def candidates(self) -> int:
        """K, the number of candidates of each quartile."""
        return self.upper - self.lower + 1

    def rank_error(self, confidence: float = 0.95) -> int:
        """Ranks each quartile may be off, both at once with the given probability (union bound)."""
        each = 1 - (1 - confidence) / 2
        return max(spec.rank_error(each) for spec in self.quartiles)


def iqr_release(spec: ExponentialIQRSpec, hist: Histogram, rng: RandomSource) -> int:
    """max(0, Q3 - Q1) in grid units: two EM draws, always both."""
    low, high = (release(quartile, hist, rng) for quartile in spec.quartiles)
    return max(0, high - low)


class ExponentialIQR:
    """IQR of a bounded column (docs/mechanisms.md): two EM quartiles, never ⊥, always in [0, upper - lower]."""

    name = "exponential-iqr"
    spec_type = ExponentialIQRSpec
    output = Output()

    def cost(self, spec: ExponentialIQRSpec) -> PrivacyCost:
        return PrivacyCost.of(PrivacyLoss("bounded_range", "exponential-iqr", spec.epsilon, Fraction(0)))

    def parameters(self, spec: ExponentialIQRSpec) -> Parameters:
        return (("candidates", str(spec.candidates)),)

    def release(self, spec: ExponentialIQRSpec, raw: Histogram, rng: RandomSource) -> int:
        return iqr_release(spec, raw, rng)

    def describe(self, spec: ExponentialIQRSpec, context: Describing = Describing()) -> str:
        return (f"Q3 - Q1 of two exponential-mechanism quartiles over {spec.candidates} public candidates{context.values} "
                f"(never ⊥, always in [0, upper - lower]), score sensitivity {spec.quartiles[0].sensitivity}, both quartiles "
                f"95% within about {spec.rank_error()} ranks; epsilon 2 x {fmt(Fraction(spec.epsilon) / 2)}, delta 0")

    def error(self, spec: ExponentialIQRSpec) -> ErrorDescription:
        return ErrorDescription(details=(("rank_error95", spec.rank_error()), ("candidates", spec.candidates)))

    def refusal(self, spec: object) -> str | None:
        return None

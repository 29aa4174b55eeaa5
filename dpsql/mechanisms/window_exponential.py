"""The exponential-mechanism quantile over a fine public grid, from order statistics near rho_p only.

Candidates are every grid index c in lower..upper (public: bounds and grid from the policy; the
planner picks about 2^24 of them, so the grid step is negligible and the error grows only with
log K). With p = a/b, a rank offset o (0 for every release dpsql makes; kept for tests) and
    f(i) = b i - a n - b o      (zero where i = n p + o),
candidate c scores the distance of the target from the ranks c's tie run covers:
    U(c) = max(0, f(#lt(c)), -f(#le(c))),   #lt = #{x < c}, #le = #{x <= c},
where the public bounds count as covering every rank beyond the data (#lt(lower) = -inf,
#le(upper) = +inf). Adding or removing one row moves n by 1 and #lt, #le by 0 or 1 each, so f
moves by -a or b - a and U by at most max(a, b - a); one person with at most k rows moves it by
at most Delta = k max(a, b - a) (summed over groups as in dpsql.mechanisms.exponential). The
release draws c with probability proportional to rho^min(U(c), T) with rho >= exp(-eps/(2 Delta))
(a rational rounded up) and a public clip T: min(., T) keeps the sensitivity, so the release is
(eps, 0)-DP and never refuses. U(x_(rho_p + o)) = 0 always (rho_p's defining inequalities), so
the output is the target order statistic up to the EM's rank error.

Why the clip: every candidate below x_(rho + o - R) or above x_(rho + o + R), R = ceil(T / b) + 1,
has U >= b R >= T (proof in docs/mechanisms.md), so the engine only returns the order statistics
in that rank window (the windowed path of backend.robust_sql; or a histogram), never a Python
loop over rows. The clip changes no weight above rho^T, i.e. it can move at most K rho^T <= 1e-6
of probability mass.

Exact sampling: the clipped score is quasi-convex in c, so each set {c : min(U, T) <= t} is an
interval whose ends are two order statistics inside the window (`_SublevelSets`). Candidates are
grouped by envelope level (at most two runs each, from two such intervals); each level gets an
envelope weight e >= 2^64 rho^d (d = score - min score), a fixed-point upper bound from exact
big-integer powers; a level is drawn with probability proportional to its size x e by `randbelow`,
a candidate uniformly in it, and it is accepted with probability 2^64 rho^d / e by comparing a
uniform drawn bit by bit with refined bounds of rho^d. The output is exactly proportional to
rho^min(U, T); no floating point touches a probability, and a draw reads O(levels + log T) order
statistics whatever the window's width.

The interval (`QuantileIntervalSpec`): the value v is the release above at `value_share` of epsilon
(2/5 by default: docs/mechanisms.md, "Why 2/5"); the rest buys its 95% interval [v - w, v + w], w
drawn by a second exponential mechanism (`WidthSpec`) from a public ladder of half-widths 0, 1, 2, ... growing by 5/4 up to the
range, plus the whole range (PostRI: Humphries, Li, Zhang, Knopf and He, "Interpreting the Error of
Differentially Private Median Queries through Randomization Intervals", 2026). A rung's score is the
distance of a target mu from its coverage margin, where the margin counts (in score units) how far
beyond the true order statistic the interval reaches on its tighter side, as a range over the
end's tie run; it moves by at most Delta per person, so the draw is (eps_w, 0)-DP given v, and the
two draws compose to (eps, 0). A rung that misses the truth scores >= mu + 1, the whole range
scores the public P, so P(miss) <= J rho^(mu + 1 - P) <= alpha by the choice of mu, whatever the
data (J rungs). The width adapts to the data (no worst-case log K term), and the interval costs no
extra read: the margins use the order statistics within `reach` ranks of the target, like the value.

MIN and MAX (p = 0 and 1, b = 2): the target is min(2 r0, n) (MIN) or max(2 (n + 1 - r0), n) (MAX)
in place of a n, i.e. the r0-th smallest / largest value, or the median when there are fewer than
2 r0 values; r0 is the release's own 95% rank error (public). The target moves by at most 1 (MIN)
or between 1 and 2 (MAX) per row, so f = 2 i - target moves by at most 2 and Delta = 2k; the
window and interval arguments above only use b c >= target > b (c - 1) for the target rank c.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.mechanisms.base import Describing, ErrorDescription, Output, Parameters, fmt
from dpsql.mechanisms.exponential import RHO_BITS, _bernoulli_power, _power_bounds
from dpsql.mechanisms.ranks import CountedWindows, OrderStatistics
from dpsql.mechanisms.rng import RandomSource

ENVELOPE_BITS = 64
CLIP_MASS = 1e-6  # K rho^T: the most probability the clip can move
VALUE_SHARE = Fraction(2, 5)  # of an interval release's epsilon; the half-width gets the rest (docs/mechanisms.md)
TAIL_VALUE_SHARE = Fraction(3, 5)  # quantiles with p < 1/4 or p > 3/4 (not MIN/MAX): their values stay at the peers' accuracy


def value_share(p: Fraction) -> Fraction:
    """The default share of epsilon for the value (public: p only). 2/5 puts the stated half-width near 3x
    the value's real 95% error; a tail quantile keeps 3/5 because its rank error is max(p, 1 - p) / (1/2)
    times the median's and the data are sparse there: at 2/5 its value would be about twice as far from
    the truth as the peers' (docs/mechanisms.md, "Why 2/5")."""
    return VALUE_SHARE if p in (0, 1) or Fraction(1, 4) <= p <= Fraction(3, 4) else TAIL_VALUE_SHARE
ALPHA = 0.05
FULL_MASS = 0.05  # about how often the interval is the whole range when a rung fits (rho^P)
LADDER_RATIO = Fraction(5, 4)  # consecutive public half-widths differ by this factor (rounded up)
QUARTILES = (Fraction(1, 4), Fraction(3, 4))


@functools.lru_cache(maxsize=1024)
def _rho(epsilon: Fraction, sensitivity: int) -> Fraction:
    """P / 2^48 >= exp(-eps / (2 Delta)), rounded up with margin for the float exp."""
    estimate = math.exp(-float(epsilon) / (2 * sensitivity))
    return Fraction(min(math.floor(estimate * 2**RHO_BITS) + 2, 2**RHO_BITS), 2**RHO_BITS)


@dataclass(frozen=True, slots=True)
class WindowQuantileSpec:
    """EM for the order statistic at rank rho_p(n) + offset over grid indices lower..upper."""

    epsilon: Fraction
    p: Fraction
    max_rows: int
    lower: int
    upper: int
    offset: int = 0
    anchor: int = 0  # MIN/MAX: r0 (p = 0: rank min(r0, n/2); p = 1: rank max(n + 1 - r0, n/2))

    def __post_init__(self) -> None:
        if self.epsilon <= 0 or not 0 <= self.p <= 1 or self.lower > self.upper or self.max_rows < 1:
            raise ValueError("the EM quantile needs epsilon > 0, 0 <= p <= 1, lower <= upper and k >= 1")

    @property
    def candidates(self) -> int:
        """K, the number of candidates."""
        return self.upper - self.lower + 1

    @property
    def sensitivity(self) -> int:
        """Delta = k max(a, b - a) in integer score units; 2k for MIN and MAX (see `target`)."""
        p = Fraction(self.p)
        if p in (0, 1):
            return 2 * self.max_rows
        return self.max_rows * max(p.numerator, p.denominator - p.numerator)

    @property
    def scale(self) -> int:
        """b: score units per rank (the denominator of p; 2 for MIN and MAX)."""
        p = Fraction(self.p)
        return 2 if p in (0, 1) else p.denominator

    def target(self, n: int) -> int:
        """b times the target rank, as a function of n: a n + b o for 0 < p < 1; for MIN
        min(2 r0, n) + 2 o and for MAX max(2 (n + 1 - r0), n) + 2 o, so that with fewer than 2 r0
        values they aim at the median instead of beyond the data. Adding a row moves it by 0..a
        (quantiles), 0..1 (MIN) or 1..2 (MAX): f = b i - target moves by at most Delta / k."""
        p = Fraction(self.p)
        if p == 0:
            return min(2 * self.anchor, n) + 2 * self.offset
        if p == 1:
            return max(2 * (n + 1 - self.anchor), n) + 2 * self.offset
        return p.numerator * n + p.denominator * self.offset

    def centre(self, n: int) -> int:
        """The target rank c = ceil(target / b): b c >= target > b (c - 1), what the window proofs use."""
        return -(-self.target(n) // self.scale)

    @property
    def rho(self) -> Fraction:
        """The weight base, >= exp(-eps / (2 Delta))."""
        return _rho(Fraction(self.epsilon), self.sensitivity)

    def _log_rho(self) -> float:
        return -math.log(self.rho) if self.rho < 1 else 0.0

    @property
    def clip(self) -> int:
        """T with K rho^T <= CLIP_MASS (public)."""
        log_rho = self._log_rho()
        if log_rho == 0:
            return 0
        return math.ceil(math.log(self.candidates / CLIP_MASS) / log_rho)

    @property
    def reach(self) -> int:
        """R = ceil(T / b) + 1: the order statistics rho + offset -+ R the release reads."""
        return -(-self.clip // self.scale) + 1

    def rank_error(self, confidence: float = 0.95) -> int:
        """Ranks the output may be from the target, with the given probability (K rho^t <= 1 - confidence)."""
        log_rho = self._log_rho()
        if log_rho == 0:
            return -1
        return math.ceil(math.log(self.candidates / (1 - confidence)) / log_rho / self.scale)


@dataclass(frozen=True, slots=True)
class _Scorer:
    """min(U, T) from #lt and #le; None stands for a term known to be negative (or -inf/+inf)."""

    b: int
    target: int  # a n + b o
    clip: int

    @classmethod
    def of(cls, spec: WindowQuantileSpec, n: int) -> _Scorer:
        return cls(spec.scale, spec.target(n), spec.clip)

    def __call__(self, lt: int | None, le: int | None) -> int:
        score = 0
        if lt is not None:
            score = max(score, self.b * lt - self.target)
        if le is not None:
            score = max(score, self.target - self.b * le)
        return min(score, self.clip)


@dataclass(frozen=True, slots=True)
class _SublevelSets:
    """S_t = {c : min(U(c), T) <= t} for every t: an interval whose ends are two order statistics.

    For 0 <= t < T, b #lt(c) - target <= t iff #lt(c) <= A = floor((t + target) / b) iff c <= x_(A+1),
    and target - b #le(c) <= t iff #le(c) >= B = ceil((target - t) / b) iff c >= x_(B) (x_(i) = -inf
    for i < 1, +inf for i > n; the lower bound drops the first condition, the upper bound the
    second), so S_t = [clamp(x_(B)), clamp(x_(A+1))] with clamp to [lower, upper]; S_t is every
    candidate for t >= T and empty for t < 0. The ranks read are within the window: b c >= target >
    b (c - 1) for the centre c gives c - R <= B and A + 1 <= c + R - 1 for t < T.
    """

    stats: OrderStatistics
    low: int
    high: int
    b: int
    target: int
    clip: int

    @classmethod
    def of(cls, spec: WindowQuantileSpec, stats: OrderStatistics) -> _SublevelSets:
        return cls(stats, spec.lower, spec.upper, spec.scale, spec.target(stats.n), spec.clip)

    def _value(self, rank: int, below: int, above: int) -> int:
        if rank < 1:
            return below
        if rank > self.stats.n:
            return above
        value = self.stats.at(rank)
        if value < self.low or value > self.high:
            raise ValueError("an order statistic lies outside the candidate range (the engine clamps them)")
        return int(value)

    def interval(self, t: int) -> tuple[int, int] | None:
        """S_t as (first, last) candidate, or None when empty."""
        if t < 0:
            return None
        if t >= self.clip:
            return self.low, self.high
        left = self._value(-((t - self.target) // self.b), self.low, self.high)
        right = self._value((t + self.target) // self.b + 1, self.low, self.high)
        return (left, right) if left <= right else None

    def size(self, t: int) -> int:
        span = self.interval(t)
        return 0 if span is None else span[1] - span[0] + 1

    def least(self) -> int:
        """The smallest score (S_t grows with t and S_T is every candidate)."""
        low, high = 0, self.clip
        while low < high:
            middle = (low + high) // 2
            if self.interval(middle) is None:
                low = middle + 1
            else:
                high = middle
        return low

    def score(self, candidate: int, low: int, high: int) -> int:
        """min(U(c), T) of a candidate known to score within [low, high]."""
        while low < high:
            middle = (low + high) // 2
            span = self.interval(middle)
            if span is not None and span[0] <= candidate <= span[1]:
                high = middle
            else:
                low = middle + 1
        return low


def runs(spec: WindowQuantileSpec, stats: OrderStatistics) -> list[tuple[int, int, int]]:
    """(first candidate, length, clipped score) runs covering lower..upper, in order, from the
    sublevel sets (tests: one interval per score up to T, so O(T) order statistics)."""
    sets = _SublevelSets.of(spec, stats)
    out: list[tuple[int, int, int]] = []
    previous: tuple[int, int] | None = None
    for t in range(sets.least(), sets.clip + 1):
        span = sets.interval(t)
        assert span is not None
        if previous is None:
            out.append((span[0], span[1] - span[0] + 1, t))
        else:
            if span[0] < previous[0]:
                out.append((span[0], previous[0] - span[0], t))
            if span[1] > previous[1]:
                out.append((previous[1] + 1, span[1] - previous[1], t))
        previous = span
    return sorted(out)


def sample(spec: WindowQuantileSpec, stats: OrderStatistics, rng: RandomSource) -> int:
    """A candidate drawn with probability exactly proportional to rho^min(U, T).

    Two levels: candidates are grouped by envelope level ell = floor(d / s) (d = score - least, s with
    rho^s >= 1/2), each level weighing (its candidates) x e_ell, e_ell >= 2^64 rho^(ell s) an exact
    upper bound; a level is drawn, then a candidate uniformly among its candidates (in increasing
    order), then accepted with probability 2^64 rho^d / e_ell >= 1/2 (exactly, by `_accept`).

    The score is quasi-convex in c (`_SublevelSets`), so level ell's candidates are S_hi minus
    S_lo for two nested intervals: at most two runs, found from two order statistics each. The
    work is O(levels + log T) order statistics per draw, whatever the window's size, and the
    draws equal those of a walk over every run of equal score (the levels, their sizes and the
    candidates' order are the same).
    """
    rho = spec.rho
    if rho.numerator == rho.denominator:
        return spec.lower + rng.randbelow(spec.candidates)
    sets = _SublevelSets.of(spec, stats)
    least, clip = sets.least(), sets.clip
    step = max(1, math.floor(math.log(2) / -math.log(rho)))
    big_p, big_q = rho.numerator, rho.denominator
    upper_bound = _UpperPowers(big_p, big_q)
    levels: list[tuple[int, tuple[int, int] | None, tuple[int, int]]] = []  # (level, S below it, S through it)
    envelopes: list[int] = []
    cumulative, total = [], 0
    inner = sets.interval(least - 1)
    for level in range((clip - least) // step + 1):
        outer = sets.interval(min(clip, least + (level + 1) * step - 1))
        assert outer is not None
        count = outer[1] - outer[0] + 1 - (0 if inner is None else inner[1] - inner[0] + 1)
        if count:
            levels.append((level, inner, outer))
            envelope = max(1, upper_bound(level * step))
            envelopes.append(envelope)
            total += count * envelope
            cumulative.append(total)
        inner = outer
    while True:
        draw = rng.randbelow(total)
        index = bisect.bisect_right(cumulative, draw)
        envelope = envelopes[index]
        position, remainder = divmod(draw - (cumulative[index - 1] if index else 0), envelope)
        level, inside, through = levels[index]
        if inside is None:
            candidate = through[0] + position
        else:
            left = inside[0] - through[0]
            candidate = through[0] + position if position < left else inside[1] + 1 + position - left
        score = sets.score(candidate, least + level * step, min(clip, least + (level + 1) * step - 1))
        # V uniform in [remainder, remainder + 1) / 2^64 below e_ell / 2^64: accept iff V < rho^d.
        if _accept(big_p, big_q, score - least, remainder, rng):
            return candidate


class _UpperPowers:
    """2^64 (P / Q)^d rounded up, from a table of rounded-up squares (rigorous upper bounds)."""

    def __init__(self, numerator: int, denominator: int) -> None:
        one = 1 << ENVELOPE_BITS
        self.one = one
        self.table = [-((-numerator << ENVELOPE_BITS) // denominator)]
        while len(self.table) < 64:
            last = self.table[-1]
            self.table.append(-((-last * last) >> ENVELOPE_BITS))

    def __call__(self, times: int) -> int:
        value, bit = self.one, 0
        while times:
            if times & 1:
                value = -((-value * self.table[bit]) >> ENVELOPE_BITS)
            times >>= 1
            bit += 1
        return min(value, self.one)


def _accept(numerator: int, denominator: int, times: int, top: int, rng: RandomSource) -> bool:
    """V < rho^times for V uniform in [top, top + 1) / 2^64, refined bit by bit until bounds decide."""
    if times <= 0:
        return True
    bits, u = ENVELOPE_BITS, top
    while True:
        low, high = _power_bounds(numerator, denominator, times, bits)
        if u + 1 <= low:
            return True
        if u >= high:
            return False
        u = (u << bits) | rng.randbelow(1 << bits)
        bits *= 2


@dataclass(frozen=True, slots=True)
class Bracketed:
    """A released value with the ends of its 95% interval (grid indices, whole or, for a mean,
    fractional; low <= high)."""

    value: int | Fraction
    low: int | Fraction
    high: int | Fraction


@functools.lru_cache(maxsize=1024)  # a pure function of public bounds, asked thousands of times a release
def ladder(span: int, ratio: Fraction = LADDER_RATIO) -> tuple[int, ...]:
    """The public half-widths (grid steps) the width release chooses from: 0, then ceil(ratio^j)
    without repeats, up to the first one that reaches `span` (upper - lower). Public: bounds only."""
    widths = [0]
    step = Fraction(1)
    while widths[-1] < span:
        width = min(-(-step.numerator // step.denominator), span)
        if width > widths[-1]:
            widths.append(width)
        step *= ratio
    return tuple(widths)


def _count_lt(stats: OrderStatistics, value: int, first: int, last: int) -> int | None:
    """#{x < value} when it lies in first - 1 .. last (ranks first..last are readable), else None."""
    if stats.n == 0:
        return 0
    if stats.at(first) >= value:
        return None if first > 1 else 0
    if stats.at(last) < value:
        return None if last < stats.n else stats.n
    if isinstance(stats, CountedWindows):  # the two-stage read: one bisection of a window's distinct values
        counted = stats.count_below(value, first, last)
        if counted is not None:
            return counted
    low, high = first, last  # x_(low) < value <= x_(high)
    while high - low > 1:
        middle = (low + high) // 2
        if stats.at(middle) < value:
            low = middle
        else:
            high = middle
    return low


@dataclass(frozen=True, slots=True)
class WidthSpec:
    """The interval's half-width around a released value v: an exponential mechanism over a public
    ladder of half-widths w_0 < ... < w_(J-1) (`ladder`) plus the whole range (PostRI; Humphries, Li,
    Zhang, Knopf and He, "Interpreting the Error of Differentially Private Median Queries through
    Randomization Intervals", 2026).

    Margins in score units, with t = b x the target rank: the lower end v - w has the range
    [t - b #{x <= v - w} - 1, t - b #{x < v - w} - 1], whose top is >= 0 iff v - w <= x_(rho) (rho's
    defining inequalities); the upper end v + w has [b #{x < v + w} - t, b #{x <= v + w} - t], whose
    top is >= 0 iff v + w >= x_(rho); +inf for an end clamped to a bound. The range's width is the
    end's tie run. The tighter side's range is [min of the bottoms, min of the tops], and the rung
    scores S(w) = min(dist(mu, that range), T): 0 when mu lies in it. Each bound moves by at most
    Delta per person (as the EM's score), and so do min, the distance and the clip: the draw, with
    weights rho^S and rho >= exp(-eps / (2 Delta)), is (eps, 0)-DP given v.
    Coverage: a rung that misses x_(rho) has a top <= -1, so S >= mu + 1 (T > mu), while the whole
    range weighs rho^P: P(miss) <= J rho^(mu + 1 - P) <= alpha by the choice of mu, whatever the data
    and whatever v. Ties: when the tie run next to v holds the target, the next rung scores 0
    instead of over-covering by the whole run. The whole range is drawn with probability about rho^P
    (~ p_full) when a rung scores near 0.
    """

    epsilon: Fraction
    p: Fraction
    max_rows: int
    lower: int
    upper: int
    anchor: int = 0
    alpha: float = ALPHA
    full_mass: float = FULL_MASS

    @property
    def quantile(self) -> WindowQuantileSpec:
        """The score's shape (target, Delta, rho) at this release's epsilon."""
        return _width_constants(self).quantile

    @property
    def widths(self) -> tuple[int, ...]:
        return _width_constants(self).widths

    def _log_rho(self) -> float:
        return _width_constants(self).log_rho

    @property
    def full_score(self) -> int:
        """P: rho^P <= full_mass."""
        log_rho = self._log_rho()
        return 0 if log_rho == 0 else math.ceil(math.log(1 / self.full_mass) / log_rho)

    @property
    def target_margin(self) -> int:
        """mu (score units): J rho^(mu + 1 - P) <= alpha, with one more unit of slack for the float log."""
        log_rho = self._log_rho()
        if log_rho == 0:
            return 0
        return self.full_score + 1 + math.ceil(math.log(len(self.widths) / self.alpha) / log_rho)

    @property
    def clip(self) -> int:
        """T > mu: (J + 1) rho^T <= CLIP_MASS beyond mu; the clip keeps the sensitivity."""
        log_rho = self._log_rho()
        if log_rho == 0:
            return 1
        return self.target_margin + 1 + math.ceil(math.log((len(self.widths) + 1) / CLIP_MASS) / log_rho)

    @property
    def reach(self) -> int:
        """Ranks around the target rank the margins read: beyond them every score is clipped."""
        return -(-(self.target_margin + self.clip) // self.quantile.scale) + 2

    def margins(self, value: int, stats: OrderStatistics) -> list[tuple[int, int]]:
        """The tighter side's margin range [least, most] for every rung (reads ranks centre -+ reach only)."""
        # The public constants once (each property recomputes rho and the ladder): the same values.
        quantile = self.quantile
        target, b = quantile.target(stats.n), quantile.scale
        centre = quantile.centre(stats.n)
        widths, lower, upper, reach = self.widths, self.lower, self.upper, self.reach
        first, last = max(1, centre - reach), min(stats.n, centre + reach)
        big = self.target_margin + self.clip  # a margin this far from mu on either side scores T

        def count(bound: int) -> int | None:
            """#{x < bound}, or None when it lies outside the window (then the sign says which side)."""
            return _count_lt(stats, bound, first, last)

        def margin(bound: int, sign: int, offset: int) -> int:
            """sign (b #{x < bound} - t) - offset, or -+big outside the window (provably beyond it)."""
            counted = count(bound)
            if counted is None:
                above = stats.at(first) < bound  # #{x < bound} >= last, else <= first - 1
                return big if (sign > 0) == above else -big
            return sign * (b * counted - target) - offset

        out = []
        for width in widths:
            low, high = value - width, value + width
            lows = (big, big) if low <= lower else (margin(low + 1, -1, 1), margin(low, -1, 1))
            highs = (big, big) if high >= upper else (margin(high, 1, 0), margin(high + 1, 1, 0))
            out.append((min(lows[0], highs[0]), min(lows[1], highs[1])))
        return out

    def scores(self, value: int, stats: OrderStatistics) -> list[int]:
        """S(w) for every rung, then P for the whole range (reads ranks centre -+ reach only)."""
        mu, clip = self.target_margin, self.clip
        out = [_interval_score(least, most, mu, clip) for least, most in self.margins(value, stats)]
        out.append(self.full_score)
        return out

    def joint_scores(self, others: Sequence[tuple[WidthSpec, int]], value: int, stats: OrderStatistics) -> list[int]:
        """S(w) when rung w sets the half-width of several intervals at once (IQR's two quartiles): the
        tightest of all their margins, as one range [min of the bottoms, min of the tops]. Each margin moves
        by at most Delta per person, and so does the min: the draw keeps this spec's (eps, 0). A rung that
        misses any of the true values has that margin's top <= -1: the coverage bound is unchanged."""
        ranges = self.margins(value, stats)
        for spec, other in others:
            if (spec.quantile.rho, spec.target_margin, spec.clip, spec.full_score, spec.widths) != \
                    (self.quantile.rho, self.target_margin, self.clip, self.full_score, self.widths):
                raise ValueError("joint widths need the same rho, ladder, mu, clip and P")
            ranges = [(min(a, c), min(b, d)) for (a, b), (c, d) in zip(ranges, spec.margins(other, stats))]
        mu, clip = self.target_margin, self.clip
        return [_interval_score(least, most, mu, clip) for least, most in ranges] + [self.full_score]


@dataclass(frozen=True, slots=True)
class _WidthConstants:
    """A WidthSpec's costly public constants (rho's exp, the ladder), derived from its fields alone."""

    quantile: WindowQuantileSpec
    widths: tuple[int, ...]
    log_rho: float


@functools.lru_cache(maxsize=1024)
def _width_constants(spec: WidthSpec) -> _WidthConstants:
    """Computed once per spec: a release reads P, mu, T and the reach for every rung, and each
    recomputed rho (an exp and a Fraction) and the ladder."""
    quantile = WindowQuantileSpec(spec.epsilon, spec.p, spec.max_rows, spec.lower, spec.upper, anchor=spec.anchor)
    return _WidthConstants(quantile, ladder(spec.upper - spec.lower), quantile._log_rho())


def _interval_score(least: int, most: int, mu: int, clip: int) -> int:
    """The distance of mu from the tighter side's margin range [least, most] (tie runs), clipped at T."""
    return min(max(0, least - mu, mu - most), clip)


def draw_rung(spec: WidthSpec, scores: Sequence[int], rng: RandomSource) -> int | None:
    """A rung's half-width drawn exactly proportional to rho^S, or None for the whole range."""
    rho = spec.quantile.rho
    least = min(scores)
    while True:
        index = rng.randbelow(len(scores))
        if _bernoulli_power(rho.numerator, rho.denominator, scores[index] - least, rng):
            break
    widths = spec.widths  # a property: read once
    return None if index == len(widths) else widths[index]


def release_width(spec: WidthSpec, value: int, stats: OrderStatistics, rng: RandomSource) -> tuple[int, int]:
    """[low, high] around `value`: a rung (or the whole range) drawn exactly proportional to rho^S."""
    width = draw_rung(spec, spec.scores(value, stats), rng)
    if width is None:
        return spec.lower, spec.upper
    return max(spec.lower, value - width), min(spec.upper, value + width)


@dataclass(frozen=True, slots=True)
class QuantileIntervalSpec:
    """A quantile (`value_share` of epsilon, default `value_share(p)`) and the half-width of its 95%
    interval (the rest), one charge. `alpha` is the interval's miss probability (0.05).
    """

    epsilon: Fraction
    p: Fraction
    max_rows: int
    lower: int
    upper: int
    alpha: float = ALPHA
    value_share: Fraction | None = None  # None: value_share(p)

    def __post_init__(self) -> None:
        WindowQuantileSpec(self.epsilon, self.p, self.max_rows, self.lower, self.upper)  # validates
        if not 0 < self.share < 1:
            raise ValueError("the value's share of epsilon must be in (0, 1)")

    @property
    def share(self) -> Fraction:
        """The value's share of epsilon (the given one, else `value_share(p)`)."""
        return value_share(Fraction(self.p)) if self.value_share is None else Fraction(self.value_share)

    @property
    def anchor(self) -> int:
        """0 for a quantile; for MIN (p = 0) and MAX (p = 1) r0, the release's own 95% rank error:
        they target the r0-th smallest / largest value (nearer the end the rank error would swamp
        it), or the median when there are fewer than 2 r0 values (public)."""
        if 0 < self.p < 1:
            return 0
        return max(1, WindowQuantileSpec(Fraction(self.epsilon) * self.share, self.p, self.max_rows,
                                         self.lower, self.upper).rank_error())

    @property
    def main(self) -> WindowQuantileSpec:
        """The quantile's own release."""
        return WindowQuantileSpec(Fraction(self.epsilon) * self.share, self.p, self.max_rows, self.lower,
                                  self.upper, anchor=self.anchor)

    @property
    def width(self) -> WidthSpec:
        """The release of the interval's half-width."""
        return WidthSpec(Fraction(self.epsilon) * (1 - self.share), self.p, self.max_rows, self.lower,
                         self.upper, self.anchor, self.alpha)

    @property
    def candidates(self) -> int:
        """K, the number of candidates."""
        return self.upper - self.lower + 1

    @property
    def reach(self) -> int:
        """The order statistics read around rho_p (the engine's window centre; 1 for p = 0): enough
        for both releases."""
        shift = self.anchor + (1 if self.p == 0 else 0)
        return shift + max(self.main.reach, self.width.reach)

    @property
    def sensitivity(self) -> int:
        """Delta of each release's score."""
        return self.main.sensitivity

    @property
    def windows(self) -> dict[Fraction, int]:
        """The rank windows {p: reach} the engine returns for it."""
        return {Fraction(self.p): self.reach}


def release_interval(spec: QuantileIntervalSpec, stats: OrderStatistics, rng: RandomSource) -> Bracketed:
    """The quantile, then its interval around it: two draws, always both."""
    value = sample(spec.main, stats, rng)
    low, high = release_width(spec.width, value, stats, rng)
    return Bracketed(value, low, high)


def cost(spec: QuantileIntervalSpec | IQRIntervalSpec | WindowQuantileSpec, name: str) -> PrivacyCost:
    """(eps, 0): basic composition of the draws, all pure; each draw is bounded-range (its clipped
    score moves by at most Delta), so the whole is also eps^2 / 8-zCDP (Cesar and Rogers 2021)."""
    return PrivacyCost.of(PrivacyLoss("bounded_range", name, Fraction(spec.epsilon), Fraction(0)))


def _interval_text(width: WidthSpec) -> str:
    return (f"95% interval: a half-width drawn by a second exponential mechanism from {len(width.widths)} public "
            f"widths around the value (or the whole range), aiming at {width.target_margin} score units beyond the "
            f"true value (miss probability <= {width.alpha:g} whatever the data)")


class WindowExponentialQuantile:
    """MEDIAN/QUANTILE/MIN/MAX of a bounded column over a fine grid, with its 95% interval (never ⊥)."""

    name = "exponential-fine"
    spec_type = QuantileIntervalSpec
    output = Output(interval=True)

    def cost(self, spec: QuantileIntervalSpec) -> PrivacyCost:
        return cost(spec, self.name)

    def parameters(self, spec: QuantileIntervalSpec) -> Parameters:
        return (("candidates", str(spec.candidates)),)

    def release(self, spec: QuantileIntervalSpec, raw: OrderStatistics, rng: RandomSource) -> Bracketed:
        return release_interval(spec, raw, rng)

    def describe(self, spec: QuantileIntervalSpec, context: Describing = Describing()) -> str:
        main = spec.main
        end = ("" if 0 < spec.p < 1 else
               f"approximate: estimates the r0 = {spec.anchor}-th {'smallest' if spec.p == 0 else 'largest'} value "
               f"(its own 95% rank error; the median of fewer than 2 r0 values), by the ")
        return (f"{end}exponential mechanism over {spec.candidates} public candidates{context.values} (never ⊥), reading "
                f"order statistics within {spec.reach} ranks; score sensitivity {spec.sensitivity}, 95% within about "
                f"{main.rank_error()} ranks; {_interval_text(spec.width)}; "
                f"epsilon {fmt(main.epsilon)} (value) + {fmt(spec.width.epsilon)} (interval), delta 0")

    def error(self, spec: QuantileIntervalSpec) -> ErrorDescription:
        return ErrorDescription(details=(("rank_error95", spec.main.rank_error()), ("candidates", spec.candidates)))

    def refusal(self, spec: object) -> str | None:
        return None


@dataclass(frozen=True, slots=True)
class IQRIntervalSpec:
    """IQR = Q3 - Q1 of two fine-grid EM quartiles, and one half-width w for both quartiles' intervals.

    Each quartile's value takes value_share x epsilon / 2; w takes the rest, (1 - value_share) x epsilon,
    in one width release whose score is the tightest margin of the two intervals (`WidthSpec.joint_scores`):
    a rung that misses either true quartile scores >= mu + 1, so both intervals hold their quartiles with
    probability >= 1 - alpha (no union bound over two releases, and one draw at the whole interval share
    instead of two at half of it). The IQR's interval [Q3_low - Q1_high, Q3_high - Q1_low] then holds the
    true IQR; the release and both ends are clamped to [0, upper - lower] (post-processing).
    """

    epsilon: Fraction
    max_rows: int
    lower: int
    upper: int
    value_share: Fraction = VALUE_SHARE
    alpha: float = ALPHA

    @property
    def quartiles(self) -> tuple[WindowQuantileSpec, WindowQuantileSpec]:
        """The two quartile values' releases (value_share x epsilon / 2 each)."""
        each = Fraction(self.epsilon) * self.value_share / 2
        return (WindowQuantileSpec(each, QUARTILES[0], self.max_rows, self.lower, self.upper),
                WindowQuantileSpec(each, QUARTILES[1], self.max_rows, self.lower, self.upper))

    @property
    def widths(self) -> tuple[WidthSpec, WidthSpec]:
        """The shared half-width's release, seen from each quartile (same rho, ladder, mu, clip and P:
        the quartiles share b = 4 and Delta = 3k)."""
        share = Fraction(self.epsilon) * (1 - self.value_share)
        return (WidthSpec(share, QUARTILES[0], self.max_rows, self.lower, self.upper, alpha=self.alpha),
                WidthSpec(share, QUARTILES[1], self.max_rows, self.lower, self.upper, alpha=self.alpha))

    @property
    def candidates(self) -> int:
        """K, the number of candidates of each quartile."""
        return self.upper - self.lower + 1

    @property
    def windows(self) -> dict[Fraction, int]:
        """The rank windows {p: reach} the engine returns for it."""
        return {q.p: max(q.reach, w.reach) for q, w in zip(self.quartiles, self.widths)}


def release_iqr(spec: IQRIntervalSpec, stats: OrderStatistics, rng: RandomSource) -> Bracketed:
    """Q3 - Q1 in grid units, and its interval's ends: two values, then one shared half-width."""
    first, third = (sample(q, stats, rng) for q in spec.quartiles)
    low_width, high_width = spec.widths
    width = draw_rung(low_width, low_width.joint_scores(((high_width, third),), first, stats), rng)
    span = spec.upper - spec.lower

    def cut(value: int | Fraction) -> int | Fraction:
        return min(max(value, 0), span)

    if width is None:
        return Bracketed(cut(third - first), 0, span)
    ends = [(max(spec.lower, v - width), min(spec.upper, v + width)) for v in (first, third)]
    return Bracketed(cut(third - first), cut(ends[1][0] - ends[0][1]), cut(ends[1][1] - ends[0][0]))


class WindowExponentialIQR:
    """IQR of a bounded column over a fine grid, with its 95% interval; never ⊥, always in [0, upper - lower]."""

    name = "exponential-fine-iqr"
    spec_type = IQRIntervalSpec
    output = Output(interval=True)

    def cost(self, spec: IQRIntervalSpec) -> PrivacyCost:
        return cost(spec, self.name)

    def parameters(self, spec: IQRIntervalSpec) -> Parameters:
        return (("candidates", str(spec.candidates)),)

    def release(self, spec: IQRIntervalSpec, raw: OrderStatistics, rng: RandomSource) -> Bracketed:
        return release_iqr(spec, raw, rng)

    def describe(self, spec: IQRIntervalSpec, context: Describing = Describing()) -> str:
        first, width = spec.quartiles[0], spec.widths[0]
        return (f"Q3 - Q1 of two exponential-mechanism quartiles over {spec.candidates} public candidates{context.values} "
                f"(never ⊥, always in [0, upper - lower]), score sensitivity {first.sensitivity}, each 95% within about "
                f"{first.rank_error()} ranks; 95% interval: one half-width for both quartiles drawn by a third exponential "
                f"mechanism from {len(width.widths)} public widths (or the whole range), aiming at {width.target_margin} score "
                f"units beyond the tighter true quartile (miss probability <= {width.alpha:g} whatever the data), the IQR's "
                f"interval from their ends; epsilon 2 x {fmt(first.epsilon)} (values) + "
                f"{fmt(width.epsilon)} (interval), delta 0")

    def error(self, spec: IQRIntervalSpec) -> ErrorDescription:
        return ErrorDescription(details=(("rank_error95", spec.quartiles[0].rank_error()), ("candidates", spec.candidates)))

    def refusal(self, spec: object) -> str | None:
        return None


def brute_scores(spec: WindowQuantileSpec, values: Sequence[int]) -> list[int]:
    """min(U(c), T) for every candidate from all the values (tests: the window must agree)."""
    n = len(values)
    out = []
    for c in range(spec.lower, spec.upper + 1):
        lt = None if c == spec.lower else sum(v < c for v in values)
        le = None if c == spec.upper else sum(v <= c for v in values)
        out.append(_Scorer.of(spec, n)(lt, le))
    return out


def brute_width_ranges(spec: WidthSpec, value: int, values: Sequence[int]) -> list[tuple[float, float]]:
    """The tighter side's margin range of every rung from all the values (inf: both ends clamped)."""
    quantile = spec.quantile
    target, b = quantile.target(len(values)), quantile.scale
    out: list[tuple[float, float]] = []
    for width in spec.widths:
        low, high = value - width, value + width
        if low <= spec.lower:
            lows: tuple[float, float] = (math.inf, math.inf)
        else:
            lows = (target - b * sum(v <= low for v in values) - 1, target - b * sum(v < low for v in values) - 1)
        if high >= spec.upper:
            highs: tuple[float, float] = (math.inf, math.inf)
        else:
            highs = (b * sum(v < high for v in values) - target, b * sum(v <= high for v in values) - target)
        out.append((min(lows[0], highs[0]), min(lows[1], highs[1])))
    return out


def _brute_scored(spec: WidthSpec, ranges: Sequence[tuple[float, float]]) -> list[int]:
    out = [spec.clip if least == math.inf else _interval_score(int(least), int(min(most, 10**18)), spec.target_margin, spec.clip)
           for least, most in ranges]
    return out + [spec.full_score]


def brute_width_scores(spec: WidthSpec, value: int, values: Sequence[int]) -> list[int]:
    """The width release's scores from all the values (tests: the window must agree)."""
    return _brute_scored(spec, brute_width_ranges(spec, value, values))


def brute_joint_width_scores(pairs: Sequence[tuple[WidthSpec, int]], values: Sequence[int]) -> list[int]:
    """The shared half-width's scores (IQR) from all the values: the tightest margin of every interval."""
    ranges = brute_width_ranges(pairs[0][0], pairs[0][1], values)
    for spec, value in pairs[1:]:
        ranges = [(min(a, c), min(b, d)) for (a, b), (c, d) in zip(ranges, brute_width_ranges(spec, value, values))]
    return _brute_scored(pairs[0][0], ranges)

"""Propose-Test-Release for quantiles (SMed, PTR-Laplace) and the IQR (Scale, Dwork-Roth Alg. 12).

docs/mechanisms.md states what each mechanism releases (after Dwork & Roth ch. 7); section numbers below are those of the analysis it summarises.

The generic test (section 2.1). Let d be an integer "distance to the unsafe set" with
  (L) |d(x) - d(y)| <= 1 for neighbours x, y (one person added or removed), and
  (S) d(x) >= 1 implies the release distributions R(x), R(y) are eps_r-close for every neighbour y.
Draw Z ~ DLap(1/eps_t); if d(x) + Z >= tau output a sample of R(x), else refuse (⊥). This is
(eps_t + eps_r, delta)-DP with delta = P(Z >= tau): safe pairs pay eps_t for the pass/fail bit and
eps_r for the release, and a pair with d = 0 on both sides passes with probability <= delta.
Capping d at C >= 1 keeps (L) and (S), so only ranks within +-(C + 1) s of a quantile are read.

Groups. With GROUP BY, one person (at most k rows) can touch up to G groups; each touched
group's d moves by at most 1, so the vector of distances has L1 sensitivity G. The test then
uses DLap(G/eps_t) per group and delta/G per group (a union over the at most G unsafe pairs),
and a release whose per-group sensitivity is b uses scale G b / eps_r: the same argument as
Laplace counts whose L1 sensitivity covers all groups together (docs/privacy-model.md). Ungrouped, G = 1.

Continuous noise (docs/privacy-model.md). PTR-Laplace adds Lap(b / eps_r) on the grid gamma = b / 2^20:
the median is rounded to the grid and discrete Laplace is added in grid units, with the
sensitivity raised from 2^20 to 2^20 + 1 units for the rounding. Scale multiplies the IQR by
beta^Z, Z ~ Lap(1/eps'), drawn the same way in log_beta space (grid 2^-20, sensitivity
2^20 + 2 units: the bin width plus rounding plus one ulp of slack for the float logarithm).
Every draw is the exact discrete Laplace sampler fed by the injected RandomSource.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.mechanisms.base import Describing, ErrorDescription, Output, Parameters, fmt
from dpsql.mechanisms.ranks import OrderStatistics, Value, quantile_rank
from dpsql.mechanisms.rng import RandomSource
from dpsql.mechanisms.sampling import discrete_laplace, discrete_laplace_ci, discrete_laplace_threshold

GRID_BITS = 20
CAP_SLACK = 40  # C = tau + ceil(40 / eps): passes with probability 1 - 4e-18 once d >= C


class _Refused:
    """The ⊥ answer: not stable enough to release. A singleton, falsy, printed as REFUSED."""

    _instance: _Refused | None = None

    def __new__(cls) -> _Refused:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "REFUSED"

    def __bool__(self) -> bool:
        return False


REFUSED = _Refused()


def threshold(scale: Fraction, groups: int, delta: Fraction) -> int:
    """tau: the smallest t with groups * P(DLap(scale) >= t) <= delta (section 2.2)."""
    return discrete_laplace_threshold(scale, groups, delta)


@dataclass(frozen=True, slots=True)
class PTRTest:
    """The noisy distance test: epsilon and delta of the test, and the groups one person touches."""

    epsilon: Fraction
    delta: Fraction
    groups: int = 1

    def __post_init__(self) -> None:
        if self.epsilon <= 0 or not 0 < self.delta < 1 or self.groups < 1:
            raise ValueError("a PTR test needs epsilon > 0, 0 < delta < 1 and groups >= 1")

    @property
    def scale(self) -> Fraction:
        """Scale of the discrete Laplace added to each group's distance."""
        return Fraction(self.groups) / Fraction(self.epsilon)

    @property
    def threshold(self) -> int:
        """tau(eps, delta): a group passes when its noisy distance reaches it."""
        return _cached_threshold(self.scale, self.groups, Fraction(self.delta))

    @property
    def cap(self) -> int:
        """C = tau + ceil(40 G / eps): distances are capped there (privacy-neutral)."""
        return self.threshold + math.ceil(CAP_SLACK * self.scale)


@functools.lru_cache(maxsize=1024)
def _cached_threshold(scale: Fraction, groups: int, delta: Fraction) -> int:
    return threshold(scale, groups, delta)


def passes(test: PTRTest, distance: int, rng: RandomSource) -> bool:
    """One noisy test: min(d, C) + DLap(G / eps) >= tau. Always draws exactly one noise value."""
    noise = discrete_laplace(test.scale, rng)
    return min(max(int(distance), 0), test.cap) + noise >= test.threshold


def _first_true(predicate: Callable[[int], bool], low: int, high: int) -> int | None:
    """The smallest t in [low, high] with predicate(t), for a predicate monotone False...True."""
    if not predicate(high):
        return None
    while low < high:
        mid = (low + high) // 2
        if predicate(mid):
            high = mid
        else:
            low = mid + 1
    return low


def _difference(high: Value, low: Value) -> Fraction | float:
    """high - low, exact for finite values (Fractions), +-inf at the padding."""
    if math.isinf(high) or math.isinf(low):
        return high - low  # never inf - inf: the padding keeps high >= low in every caller
    return Fraction(high) - Fraction(low)


# --- distances -------------------------------------------------------------------------------


def smed_distance(stats: OrderStatistics, p: Fraction, shift: int, cap: int) -> int:
    """SMed / A_dist on the rank-rho_p value (section 3.2), capped at `cap`.

    With mu = x_(m), m = rho_p(n): D = min{t >= 1 : x_(m - ts) != mu or x_(m + ts) != mu} and
    d = D - 1 = min(ceil((m - c_lt)/s) - 1, floor((c_le - m)/s)) from the tie block of mu.
    Reads ranks m +- (cap + 1) s only.
    """
    if stats.n == 0:
        return 0
    m = quantile_rank(stats.n, p)
    mu = stats.at(m)
    unstable = _first_true(lambda t: stats.at(m - t * shift) != mu or stats.at(m + t * shift) != mu, 1, cap + 1)
    return cap if unstable is None else unstable - 1


def ptr_laplace_distance(stats: OrderStatistics, p: Fraction, shift: int, bound: Fraction, cap: int) -> int:
    """Distance to a dataset whose local sensitivity exceeds b (section 3.4), capped at `cap`.

    d_b = min{j >= 0 : x_(m + (j+1)s) - x_(m - (j+1)s) > b}. d_b >= 1 means every neighbour's
    rank-rho value lies in [x_(m-s), x_(m+s)], an interval of width <= b.
    """
    if stats.n == 0:
        return 0
    m = quantile_rank(stats.n, p)
    wide = _first_true(lambda j: _difference(stats.at(m + (j + 1) * shift), stats.at(m - (j + 1) * shift)) > bound, 0, cap)
    return cap if wide is None else wide


def log_edge(base: float, k: int, offset: Fraction) -> float:
    """E(k) = beta^(k - o): the one function that defines Scale's bins (section 4.1)."""
    return float(base ** (k - float(offset)))


def log_bin(value: Value, base: float, offset: Fraction) -> int:
    """The k with E(k) <= value < E(k + 1), for value > 0; estimated by logs, fixed with E itself."""
    k = math.floor(math.log(value) / math.log(base) + float(offset))
    while log_edge(base, k, offset) > value:
        k -= 1
    while log_edge(base, k + 1, offset) <= value:
        k += 1
    return k


def scale_distance(stats: OrderStatistics, p_lo: Fraction, p_hi: Fraction, shift: int, base: float,
                   offset: Fraction, cap: int) -> int:
    """A_0 - 1 of Scale, sandwich version (section 4.2b), capped at `cap`.

    With [L, U) the bin of IQR = x_(r3) - x_(r1) in the discretisation `offset`:
    exit(t) := x_(r3+ts) - x_(r1-ts) >= U or x_(r3-ts) - x_(r1+ts) < L (for IQR = 0, the bin
    {0}: x_(r3+ts) - x_(r1-ts) > 0). A_0 = min{t >= 1 : exit(t)}. All comparisons use float
    subtraction, which is monotone, and the same edges as `log_bin`.
    """
    if stats.n == 0:
        return 0
    r1, r3 = quantile_rank(stats.n, p_lo), quantile_rank(stats.n, p_hi)
    iqr = stats.at(r3) - stats.at(r1)
    if iqr == 0:
        def leaves(t: int) -> bool:
            return stats.at(r3 + t * shift) - stats.at(r1 - t * shift) > 0
    else:
        k = log_bin(iqr, base, offset)
        low, high = log_edge(base, k, offset), log_edge(base, k + 1, offset)

        def leaves(t: int) -> bool:
            widest = stats.at(r3 + t * shift) - stats.at(r1 - t * shift)
            narrowest = stats.at(r3 - t * shift) - stats.at(r1 + t * shift)
            return widest >= high or narrowest < low
    exit_at = _first_true(leaves, 1, cap + 1)
    return cap if exit_at is None else exit_at - 1


# --- SMed -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SMedSpec:
    """Stable quantile: release x_(rho_p) exactly when its noisy distance to instability passes."""

    test: PTRTest
    p: Fraction
    shift: int

    @property
    def reach(self) -> int:
        """Ranks read on each side of rho_p: (C + 1) s."""
        return (self.test.cap + 1) * self.shift


def smed_cost(spec: SMedSpec) -> PrivacyCost:
    """(eps, delta), whatever the data and whether or not the answer is ⊥."""
    return PrivacyCost.of(PrivacyLoss("approx_dp", "smed", spec.test.epsilon, spec.test.delta))


def smed_release(spec: SMedSpec, stats: OrderStatistics, rng: RandomSource) -> Value | _Refused:
    """x_(rho_p(n)) exactly, or REFUSED. n = 0 is refused deterministically (safe, section 3.1)."""
    distance = smed_distance(stats, spec.p, spec.shift, spec.test.cap)
    ok = passes(spec.test, distance, rng)
    if stats.n == 0 or not ok:
        return REFUSED
    return stats.at(quantile_rank(stats.n, spec.p))


# --- PTR-Laplace ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PTRLaplaceSpec:
    """Propose b, test the distance to local sensitivity > b, release x_(rho_p) + Lap(G b / eps_r)."""

    test: PTRTest
    epsilon_release: Fraction
    p: Fraction
    shift: int
    bound: Fraction
    lower: Fraction | None = None  # the column's declared bounds (mapped units): the release is clamped
    upper: Fraction | None = None  # to them, post-processing that costs nothing

    def __post_init__(self) -> None:
        if self.bound <= 0 or self.epsilon_release <= 0:
            raise ValueError("PTR-Laplace needs a bound b > 0 and a release epsilon > 0")
        if self.lower is not None and self.upper is not None and self.lower > self.upper:
            raise ValueError("PTR-Laplace needs lower <= upper")

    @property
    def reach(self) -> int:
        """Ranks read on each side of rho_p: (C + 1) s."""
        return (self.test.cap + 1) * self.shift

    @property
    def grid(self) -> Fraction:
        """The output grid gamma = b / 2^20."""
        return Fraction(self.bound) / Fraction(2**GRID_BITS)

    @property
    def noise_units(self) -> Fraction:
        """Discrete Laplace scale in grid units: G (2^20 + 1) / eps_r."""
        return Fraction(self.test.groups * (2**GRID_BITS + 1)) / Fraction(self.epsilon_release)

    def half_width(self, confidence: float = 0.95) -> Fraction:
        """Half-width of the release noise's central interval, in value units (public)."""
        return discrete_laplace_ci(self.noise_units, confidence) * self.grid


def ptr_laplace_cost(spec: PTRLaplaceSpec) -> PrivacyCost:
    """(eps_t + eps_r, delta): the release's Laplace noise is eps_r-DP only on pairs that pass the
    test, so the loss is known as this pair only."""
    return PrivacyCost.of(PrivacyLoss("approx_dp", "ptr-laplace", spec.test.epsilon + spec.epsilon_release, spec.test.delta))


def ptr_laplace_release(spec: PTRLaplaceSpec, stats: OrderStatistics, rng: RandomSource) -> float | _Refused:
    """x_(rho_p) + Lap on the grid b / 2^20, or REFUSED. Both draws happen whatever the outcome."""
    distance = ptr_laplace_distance(stats, spec.p, spec.shift, spec.bound, spec.test.cap)
    ok = passes(spec.test, distance, rng)
    noise = discrete_laplace(spec.noise_units, rng)
    if stats.n == 0 or not ok:
        return REFUSED
    value = stats.at(quantile_rank(stats.n, spec.p))
    units = round(Fraction(value) / spec.grid)
    return float(clamp((units + noise) * spec.grid, spec.lower, spec.upper))


def clamp(value: Fraction, lower: Fraction | None, upper: Fraction | None) -> Fraction:
    """value clamped to [lower, upper] (either side may be open): post-processing of a DP release,
    so it costs nothing, and it can only move the release towards the true value when that lies inside."""
    if lower is not None and value < lower:
        return Fraction(lower)
    if upper is not None and value > upper:
        return Fraction(upper)
    return value


# --- Scale (IQR) ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScaleSpec:
    """Scale (Alg. 12, corrected): two log-bin discretisations, each a PTR test plus a beta^Lap factor.

    `epsilon_step` is eps' (each test and each release); the whole costs (4 eps', delta).
    The base is beta = min(2, 1 + c s tau / n_hat), n_hat public or a paid DP count (section 4.4).
    """

    epsilon_step: Fraction
    delta: Fraction
    groups: int
    shift: int
    p_lo: Fraction = Fraction(1, 4)
    p_hi: Fraction = Fraction(3, 4)
    base_constant: int = 60
    offsets: tuple[Fraction, Fraction] = field(default=(Fraction(0), Fraction(1, 2)))
    span: Fraction | None = None  # upper - lower of a bounded column: releases are clamped to [0, span]

    @property
    def test(self) -> PTRTest:
        """Each discretisation's test: (eps', delta / 2)."""
        return PTRTest(self.epsilon_step, Fraction(self.delta) / 2, self.groups)

    @property
    def reach(self) -> int:
        """Ranks read on each side of r1 and r3: (C + 1) s."""
        return (self.test.cap + 1) * self.shift

    def base(self, n_hat: float | int | None) -> float:
        """beta = min(2, 1 + c s tau / max(n_hat, 1)); 2 without an estimate."""
        if n_hat is None:
            return 2.0
        return float(min(Fraction(2), 1 + Fraction(self.base_constant * self.shift * self.test.threshold) / max(Fraction(n_hat), Fraction(1))))

    @property
    def noise_units(self) -> Fraction:
        """Discrete Laplace scale, in log_beta grid units of 2^-20: G (2^20 + 2) / eps'."""
        return Fraction(self.groups * (2**GRID_BITS + 2)) / Fraction(self.epsilon_step)

    def factor(self, base: float, confidence: float = 0.95) -> float:
        """The multiplicative 95% error factor beta^w of a released IQR (public given beta)."""
        width = discrete_laplace_ci(self.noise_units, confidence) / 2**GRID_BITS
        return _power(base, width)


def scale_cost(spec: ScaleSpec) -> PrivacyCost:
    """(4 eps', delta): two discretisations of (2 eps', delta / 2), both always run and charged."""
    return PrivacyCost.of(PrivacyLoss("approx_dp", "scale", 4 * Fraction(spec.epsilon_step), spec.delta))


def _power(base: float, exponent: float) -> float:
    try:
        return float(base**exponent)
    except OverflowError:
        return math.inf


def scale_release(spec: ScaleSpec, stats: OrderStatistics, n_hat: float | int | None, rng: RandomSource) -> float | _Refused:
    """IQR * beta^Z from the first discretisation that passes, or REFUSED; 0 when IQR = 0 passes."""
    base = spec.base(n_hat)
    answers: list[float | _Refused] = []
    for offset in spec.offsets:
        distance = scale_distance(stats, spec.p_lo, spec.p_hi, spec.shift, base, offset, spec.test.cap)
        ok = passes(spec.test, distance, rng)
        noise = discrete_laplace(spec.noise_units, rng)
        if stats.n == 0 or not ok:
            answers.append(REFUSED)
            continue
        iqr = stats.at(quantile_rank(stats.n, spec.p_hi)) - stats.at(quantile_rank(stats.n, spec.p_lo))
        if iqr == 0:
            answers.append(0.0)
            continue
        units = round(math.log(iqr) / math.log(base) * 2**GRID_BITS)
        released = _power(base, (units + noise) / 2**GRID_BITS)
        answers.append(released if spec.span is None else min(released, float(spec.span)))  # post-processing
    return answers[0] if answers[0] is not REFUSED else answers[1]


# --- the mechanisms' protocol (dpsql.mechanisms.base) ----------------------------------------


def describe_test(test: PTRTest) -> str:
    """EXPLAIN text of a PTR test."""
    return f"test: distance + discrete Laplace (scale {fmt(test.scale)}) >= tau {test.threshold}, distance capped at {test.cap}"


def test_parameters(test: PTRTest) -> Parameters:
    """The ledger's record of a PTR test (public)."""
    return (("test_scale", str(test.scale)), ("threshold", test.threshold), ("cap", test.cap))


def test_details(test: PTRTest, shift: int | None = None) -> tuple[tuple[str, object], ...]:
    """The public parameters a PTR-tested release reports per cell."""
    details: tuple[tuple[str, object], ...] = (("threshold", test.threshold), ("cap", test.cap))
    return details + ((("rank_shift", shift),) if shift is not None else ())


@dataclass(frozen=True, slots=True)
class ScaleInput:
    """What Scale reads: the exact order statistics and the released n_hat (None without one)."""

    stats: OrderStatistics
    n_hat: float | int | None


def _unstable(p: Fraction) -> str:
    name = "median" if p == Fraction(1, 2) else f"{float(p):g} quantile"
    return (f"the {name} is not stable on this data (too few rows, the {name} lies in a gap between clusters, "
            f"or at the edge of a block of equal values)")


class SMed:
    """MEDIAN/QUANTILE, exact when stable (docs/mechanisms.md). Releases a mapped value or REFUSED."""

    name = "smed"
    spec_type = SMedSpec
    output = Output()

    def cost(self, spec: SMedSpec) -> PrivacyCost:
        return smed_cost(spec)

    def parameters(self, spec: SMedSpec) -> Parameters:
        return test_parameters(spec.test) + (("shift", str(spec.shift)),)

    def release(self, spec: SMedSpec, raw: OrderStatistics, rng: RandomSource) -> Value | _Refused:
        return smed_release(spec, raw, rng)

    def describe(self, spec: SMedSpec, context: Describing = Describing()) -> str:
        return (f"SMed, the stable rank-rho_{fmt(spec.p)} value{context.values} (exact or ⊥); rank shift s={spec.shift}; "
                f"{describe_test(spec.test)}; epsilon {fmt(spec.test.epsilon)}, delta {float(spec.test.delta):.3g}")

    def error(self, spec: SMedSpec) -> ErrorDescription:
        return ErrorDescription(details=test_details(spec.test, spec.shift))

    def refusal(self, spec: SMedSpec) -> str | None:
        return f"{_unstable(spec.p)}. Try a coarser precision, a proposed bound b, a larger epsilon, or more rows."


class PTRLaplace:
    """MEDIAN/QUANTILE with a proposed bound b (docs/mechanisms.md): the quantile plus Laplace, or REFUSED."""

    name = "ptr-laplace"
    spec_type = PTRLaplaceSpec
    output = Output()

    def cost(self, spec: PTRLaplaceSpec) -> PrivacyCost:
        return ptr_laplace_cost(spec)

    def parameters(self, spec: PTRLaplaceSpec) -> Parameters:
        return test_parameters(spec.test) + (("shift", str(spec.shift)), ("bound", str(spec.bound)))

    def release(self, spec: PTRLaplaceSpec, raw: OrderStatistics, rng: RandomSource) -> float | _Refused:
        return ptr_laplace_release(spec, raw, rng)

    def describe(self, spec: PTRLaplaceSpec, context: Describing = Describing()) -> str:
        return (f"PTR-Laplace with proposed bound b={fmt(spec.bound)}{context.values}; rank shift s={spec.shift}; "
                f"{describe_test(spec.test)}; then Laplace scale {fmt(spec.noise_units * spec.grid)} on the grid b/2^20, "
                f"95% +-{fmt(spec.half_width())}; epsilon {fmt(spec.test.epsilon)} + {fmt(spec.epsilon_release)}, "
                f"delta {float(spec.test.delta):.3g}")

    def error(self, spec: PTRLaplaceSpec) -> ErrorDescription:
        return ErrorDescription(scale=float(spec.noise_units * spec.grid), ci95=float(spec.half_width()),
                                details=(("bound", float(spec.bound)), *test_details(spec.test, spec.shift)))

    def refusal(self, spec: PTRLaplaceSpec) -> str | None:
        return f"{_unstable(spec.p)}. Try a larger bound b, a larger epsilon, or more rows."


class Scale:
    """IQR (docs/mechanisms.md): reads `ScaleInput`; the IQR times beta^Z, or REFUSED."""

    name = "scale"
    spec_type = ScaleSpec
    output = Output()

    def cost(self, spec: ScaleSpec) -> PrivacyCost:
        return scale_cost(spec)

    def parameters(self, spec: ScaleSpec) -> Parameters:
        return test_parameters(spec.test) + (("shift", str(spec.shift)), ("epsilon_step", str(spec.epsilon_step)))

    def release(self, spec: ScaleSpec, raw: ScaleInput, rng: RandomSource) -> float | _Refused:
        return scale_release(spec, raw.stats, raw.n_hat, rng)

    def describe(self, spec: ScaleSpec, context: Describing = Describing()) -> str:
        return (f"Scale (IQR by PTR on two log-bin discretisations, threshold 1 + ln(1/delta)/eps), base "
                f"min(2, 1 + {spec.base_constant}*s*tau/n_hat) with n_hat = {context.n_hat}; rank shift s={spec.shift}; "
                f"each {describe_test(spec.test)}; epsilon 4 x {fmt(spec.epsilon_step)}, delta {float(spec.delta):.3g}")

    def error(self, spec: ScaleSpec) -> ErrorDescription:
        return ErrorDescription(details=test_details(spec.test, spec.shift))

    def refusal(self, spec: ScaleSpec) -> str | None:
        return ("the quartiles are not stable on this data (too few rows, or a quartile in a sparse region). "
                "Try a larger epsilon or more rows.")

"""The Sparse Vector Technique of the Median Mechanism layer (docs/mechanisms.md).

Privacy function. The layer tests, for each counting query i, the integer statistic
`e_i = |f_i(D) - med_i|` (or its maximum over the groups of a GROUP BY), where `med_i` is a
function of public state only, so `e_i` has sensitivity Δ = max_rows (one person adds or removes
at most max_rows rows, each in one cell). Up to `c` queries are declared "hard" (above the
threshold); each hard query releases its answer with FRESH noise. Two accounting modes:

* Pure ε-DP (Lyu, Su, Li 2017, Alg. 1). ε_svt = ε1 + ε2 with ε1 : ε2 ≈ 1 : (2c)^{2/3}; ONE
  threshold noise ρ ~ Lap(Δ/ε1) per session; fresh ν_i ~ Lap(2cΔ/ε2) per query; hard iff
  e_i + ν_i >= T + ρ; halt after c hard answers. Hard answers: f_i(D) + Lap(cΔ/ε_ans) per cell
  (basic composition over at most c answers, Δ the L1 sensitivity of the answer vector). Total
  ε = ε_n + ε_svt + ε_ans (ε_n releases the noisy table size n̂ once).
* ρ-zCDP, reported as (ε, δ)-DP. ρ_tot = (√(ln(1/δ)+ε) − √ln(1/δ))², the inverse of
  ε = ρ + 2√(ρ ln 1/δ) (Bun & Steinke 2016). The SVT is c sequential AboveThreshold rounds,
  each ε_r-DP with c·ε_r²/2 <= ρ_svt (pure ε_r-DP implies ε_r²/2-zCDP; zCDP composes); in a
  round: threshold Lap(Δ/ε_r1), query noise Lap(2Δ/ε_r2), ε_r1 + ε_r2 = ε_r, and a NEW threshold
  draw after every hard answer. Hard answers: discrete Gaussian with σ² = cΔ²/(2ρ_ans) per cell
  (Δ the L2 sensitivity, <= max_rows). n̂: discrete Gaussian with σ² = Δ²/(2ρ_n).

All noise is drawn with the exact samplers from the injected `RandomSource`. Every scale is an
exact Fraction; where the optimal value is irrational (the (2c)^{2/3} split, √(2ρ/c)) a rational
is chosen so that the privacy inequality holds exactly (any split is private; ε_r is rounded
down and checked). The secret state (threshold noise) is never exposed: `__repr__` shows only
public counters.

Calibration (`calibrate`) reads public inputs only: (ε, δ, A, β, Δ, k_exp). It sizes the cap c
and the threshold T so that an easy answer is within A with probability >= 1 - β:
easy means e + ν < T + ρ, so e > A needs ρ − ν > A − T; T = A − margin with
P(ρ − ν >= margin + 1) <= β. The tail of the difference of two discrete Laplace variables is
computed in closed form (floats: public sizing only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.mechanisms.base import Describing, ErrorDescription, Output, Parameters, fmt
from dpsql.mechanisms.rng import RandomSource
from dpsql.mechanisms.sampling import (
    discrete_gaussian,
    discrete_gaussian_ci,
    discrete_laplace,
    discrete_laplace_ci,
)

Mode = Literal["pure", "zcdp"]

# Shares of the reservation (public constants; any values are private).
SIZE_SHARE = Fraction(1, 50)  # the noisy table size n̂
SVT_SHARE = Fraction(1, 2)  # of what is left after n̂: the sparse vector; the rest to hard answers
MAX_CAP = 1_000_000
_SPLIT_DENOMINATOR = 10**6


# ---------------------------------------------------------------------------------------------
# Public sizing helpers (floats)


def _expm1_ratio(x: float, t: int) -> float:
    """(1 - e^{-x t}) / (1 - e^{-x}) for x >= 0, stable near 0 (limit t)."""
    if x == 0:
        return float(t)
    return math.expm1(-x * t) / math.expm1(-x)


def laplace_difference_tail(scale1: Fraction | float, scale2: Fraction | float, t: int) -> float:
    """P(X − Y >= t) for independent discrete Laplace X (scale1) and Y (scale2), t integer.

    X − Y has the law of X + Y (both symmetric). Closed form from summing the geometric pmfs;
    for t <= 0 by symmetry, P(S >= t) = 1 − P(S >= 1 − t).

    Example:
        >>> round(laplace_difference_tail(1, 1, 0), 6) > 0.5
        True
    """
    a, b = 1 / float(scale1), 1 / float(scale2)
    if t <= 0:
        return 1.0 - laplace_difference_tail(scale1, scale2, 1 - t)
    p, q = math.exp(-a), math.exp(-b)
    c_q = -math.expm1(-b) / (1 + q)  # (1 - q) / (1 + q)
    one_minus_pq = -math.expm1(-(a + b))
    p_t, q_t = math.exp(-a * t), math.exp(-b * t)
    # sum_{y=0}^{t-1} q^y p^{t-y} = p * (p^t - q^t) / (p - q), written stably around p = q.
    if a <= b:
        middle = p * p ** (t - 1) * _expm1_ratio(b - a, t) if t > 1 else p
    else:
        middle = p * q ** (t - 1) * _expm1_ratio(a - b, t) if t > 1 else p
    below = c_q / (1 + p) * (p_t * p * q / one_minus_pq + middle)
    above = c_q * q_t / -math.expm1(-b) - c_q * q_t * p / ((1 + p) * one_minus_pq)
    return min(1.0, max(0.0, below + above))


def _margin(threshold_scale: Fraction, query_scale: Fraction, beta: float) -> int:
    """Smallest m >= 0 with P(ρ − ν >= m + 1) <= β."""
    lo, hi = -1, 1
    while laplace_difference_tail(threshold_scale, query_scale, hi + 1) > beta:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if laplace_difference_tail(threshold_scale, query_scale, mid + 1) <= beta:
            hi = mid
        else:
            lo = mid
    return max(hi, 0)


def rho_from_epsilon_delta(epsilon: Fraction, delta: Fraction) -> Fraction:
    """A rational ρ with ρ + 2√(ρ ln(1/δ)) <= ε (the zCDP → (ε, δ) conversion of Bun–Steinke).

    The closed-form inverse is computed in floats and shrunk by a relative 1e-9, far more than
    any float rounding, so the inequality holds for the rational that is returned.
    """
    if epsilon <= 0 or not 0 < delta < 1:
        raise ValueError("zCDP conversion needs epsilon > 0 and 0 < delta < 1")
    log_inv = -(math.log(delta.numerator) - math.log(delta.denominator))
    rho = (math.sqrt(log_inv + float(epsilon)) - math.sqrt(log_inv)) ** 2
    bound = Fraction(rho) * (1 - Fraction(1, 10**9))
    simple = bound.limit_denominator(10**12)
    return min(simple, bound)


def _rational_below(value: float) -> Fraction:
    """A simple rational close to (and not above) a positive float."""
    guess = Fraction(value).limit_denominator(_SPLIT_DENOMINATOR)
    return guess if guess <= Fraction(value) else Fraction(math.floor(value * _SPLIT_DENOMINATOR), _SPLIT_DENOMINATOR)


def _split(total: Fraction, ratio: float) -> tuple[Fraction, Fraction]:
    """(first, total − first) with first ≈ total / (1 + ratio); any split is private."""
    first = _rational_below(float(total) / (1 + ratio))
    if not 0 < first < total:
        first = total / (1 + Fraction(ratio).limit_denominator(1000))
    return first, total - first


# ---------------------------------------------------------------------------------------------
# Calibration


def _conversion(rho: Fraction, delta: Fraction) -> Fraction:
    """An epsilon >= rho + 2 sqrt(rho ln(1/delta)) (rounded up): a valid (epsilon, delta) for rho-zCDP."""
    value = float(rho) + 2 * math.sqrt(float(rho) * math.log(1 / float(delta)))
    return Fraction(value * (1 + 1e-9) + 1e-15).limit_denominator(10**12) + Fraction(1, 10**12)


@dataclass(frozen=True, slots=True)
class SVTCalibration:
    """Every public parameter of one Median Mechanism session, computed before any data access.

    Scales are exact Fractions in count units: `threshold_scale` (ρ), `query_scale` (ν),
    `answer_scale` (pure: Laplace scale of hard answers) or `answer_sigma2` (zCDP: σ² of the
    discrete Gaussian), `size_scale` / `size_sigma2` (n̂).
    """

    mode: Mode
    epsilon: Fraction
    delta: Fraction
    sensitivity: int
    accuracy: int
    beta: Fraction
    cap: int
    threshold: int
    margin: int
    false_hard_rate: float
    epsilon_size: Fraction
    epsilon_svt: Fraction
    epsilon_answers: Fraction
    rho: Fraction | None
    threshold_scale: Fraction
    query_scale: Fraction
    answer_scale: Fraction | None
    answer_sigma2: Fraction | None
    size_scale: Fraction | None
    size_sigma2: Fraction | None
    answer_ci95: int
    expected_queries: int | None = None
    round_epsilon: Fraction | None = None
    notes: tuple[str, ...] = field(default=())
    # The share of the reservation (epsilon or rho) spent on the warm-start measurement; with a
    # warm start n̂ comes from that measurement, so no share goes to a separate size release.
    warm_share: Fraction = Fraction(0)
    warm_releases: int = 0  # noisy vectors of the warm start (marginals), each with sensitivity Δ

    @property
    def rho_parts(self) -> tuple[Fraction, Fraction, Fraction, Fraction]:
        """(rho_warm, rho_size, rho_svt, rho_answers) of the zCDP mode."""
        assert self.rho is not None
        rho_warm = self.rho * self.warm_share
        rho_size = Fraction(0) if self.warm_share else self.rho * SIZE_SHARE
        rho_svt = (self.rho - rho_warm - rho_size) * SVT_SHARE
        return rho_warm, rho_size, rho_svt, self.rho - rho_warm - rho_size - rho_svt

    @property
    def epsilon_warm(self) -> Fraction:
        """The pure mode's epsilon of the warm-start measurement."""
        return self.epsilon * self.warm_share

    @property
    def cost(self) -> PrivacyCost:
        """The whole reservation: charged once, whatever happens afterwards (pure: epsilon-DP;
        zcdp: rho-zCDP, charged as its (epsilon, delta) conversion, with its parts for the PLD
        accountant: the warm start's and the hard answers' discrete Gaussians and the c pure
        AboveThreshold rounds, whose numerical composition is tighter than the conversion)."""
        if self.mode == "zcdp":
            return PrivacyCost.of(PrivacyLoss("zcdp", "median_mechanism", self.epsilon, self.delta, rho=self.rho,
                                              parts=self._zcdp_parts()))
        return PrivacyCost.of(PrivacyLoss("approx_dp", "median_mechanism", self.epsilon, Fraction(0)))

    def _zcdp_parts(self) -> tuple[PrivacyLoss, ...]:
        rho_warm, rho_size, _, _ = self.rho_parts
        s = Fraction(self.sensitivity)
        parts: list[PrivacyLoss] = []

        def gaussian(sigma2: Fraction, count: int) -> None:
            eps = _conversion(s * s / (2 * sigma2), self.delta)
            parts.extend([PrivacyLoss("discrete_gaussian", "median_mechanism", eps, Fraction(0), sensitivity=s,
                                      sigma2=sigma2)] * count)

        if rho_warm and self.warm_releases:
            gaussian(self.warm_sigma2, self.warm_releases)
        if rho_size and self.size_sigma2 is not None:
            gaussian(self.size_sigma2, 1)
        if self.cap and self.round_epsilon is not None and self.answer_sigma2 is not None:
            parts.extend([PrivacyLoss("approx_dp", "median_mechanism", self.round_epsilon, Fraction(0))] * self.cap)
            gaussian(self.answer_sigma2, self.cap)
        return tuple(parts)

    @property
    def warm_sigma2(self) -> Fraction:
        """zCDP mode: sigma^2 of every cell of the warm start (each of its vectors has L2 sensitivity Δ)."""
        rho_warm = self.rho_parts[0]
        return Fraction(self.sensitivity ** 2 * max(self.warm_releases, 1)) / (2 * rho_warm)

    @property
    def warm_scale(self) -> Fraction:
        """Pure mode: discrete Laplace scale of every cell of the warm start (L1 sensitivity Δ per vector)."""
        return Fraction(self.sensitivity * max(self.warm_releases, 1)) / self.epsilon_warm

    def ledger_params(self) -> dict[str, object]:
        """The parameters the ledger records with the reservation (all public)."""
        params: dict[str, object] = {
            "mode": self.mode, "epsilon": str(self.epsilon), "delta": str(self.delta), "sensitivity": self.sensitivity,
            "accuracy": self.accuracy, "beta": str(self.beta), "cap": self.cap, "threshold": self.threshold,
            "threshold_scale": str(self.threshold_scale), "query_scale": str(self.query_scale),
        }
        if self.mode == "pure":
            params.update({"epsilon_size": str(self.epsilon_size), "epsilon_svt": str(self.epsilon_svt),
                           "epsilon_answers": str(self.epsilon_answers)})
            params["answer_scale"] = str(self.answer_scale)
            params["size_scale"] = str(self.size_scale)
        else:
            rho_warm, rho_size, rho_svt, rho_answers = self.rho_parts
            params.update({"rho_warm": str(rho_warm), "rho_size": str(rho_size), "rho_svt": str(rho_svt),
                           "rho_answers": str(rho_answers)})
            params["rho"] = str(self.rho)
            params["round_epsilon"] = str(self.round_epsilon)
            params["answer_sigma2"] = str(self.answer_sigma2)
            params["size_sigma2"] = str(self.size_sigma2)
        if self.expected_queries is not None:
            params["expected_queries"] = self.expected_queries
        if self.warm_share:
            params.update({"warm_share": str(self.warm_share), "warm_releases": self.warm_releases})
        return params


@dataclass(frozen=True, slots=True)
class _Scales:
    threshold: Fraction
    query: Fraction
    answer_scale: Fraction | None
    answer_sigma2: Fraction | None
    round_epsilon: Fraction | None


def _pure_scales(c: int, eps_svt: Fraction, eps_ans: Fraction, delta_s: int) -> _Scales:
    eps1, eps2 = _split(eps_svt, (2 * c) ** (2 / 3))
    return _Scales(delta_s / eps1, 2 * c * delta_s / eps2, c * delta_s / eps_ans, None, None)


def _round_epsilon(rho_svt: Fraction, c: int) -> Fraction:
    """A rational ε_r <= √(2ρ_svt/c), checked exactly: c·ε_r²/2 <= ρ_svt."""
    eps_r = _rational_below(math.sqrt(2 * float(rho_svt) / c))
    while c * eps_r * eps_r / 2 > rho_svt:
        eps_r = eps_r * Fraction(999_999, 1_000_000)
    return eps_r


def _zcdp_scales(c: int, rho_svt: Fraction, rho_ans: Fraction, delta_s: int) -> _Scales:
    eps_r = _round_epsilon(rho_svt, c)
    eps1, eps2 = _split(eps_r, 2 ** (2 / 3))
    sigma2 = Fraction(c * delta_s * delta_s) / (2 * rho_ans)
    return _Scales(delta_s / eps1, 2 * delta_s / eps2, None, sigma2, eps_r)


def calibrate(  # noqa: C901 - the calibration's cases follow the paper's, one branch per mode and noise
    *,
    mode: Mode,
    epsilon: Fraction,
    delta: Fraction,
    accuracy: Fraction,
    sensitivity: int,
    beta: Fraction = Fraction(1, 20),
    expected_queries: int | None = None,
    cap: int | None = None,
    threshold: int | None = None,
    warm_share: Fraction = Fraction(0),
    warm_releases: int = 0,
) -> SVTCalibration:
    """The cap c, threshold T and every noise scale, from public inputs only.

    c is the largest cap whose margin (the (1 − β) quantile of threshold minus query noise) is
    at most A/2; with `expected_queries` (k_exp) also k_exp · fp(c) <= c/2, where fp(c) is the
    false-hard rate of a perfect median. T = A − margin(c). c = 0 when even one slot does not fit.
    `cap` and `threshold` override the sizing (any public values are private: tests, experiments).
    `warm_share` of the budget goes to a warm-start measurement of `warm_releases` noisy vectors
    (n̂ then comes from it: no size share).
    """
    if sensitivity < 1:
        raise ValueError("sensitivity must be >= 1")
    accuracy_int = math.floor(accuracy)
    beta_f = float(beta)
    if not 0 <= warm_share < 1:
        raise ValueError("warm_share must be in [0, 1)")
    eps_size = Fraction(0) if warm_share else epsilon * SIZE_SHARE
    rest = epsilon - epsilon * warm_share - eps_size
    eps_svt = rest * SVT_SHARE
    eps_ans = rest - eps_svt
    rho = None
    if mode == "pure":
        def scales(c: int) -> _Scales:
            return _pure_scales(c, eps_svt, eps_ans, sensitivity)
    else:
        rho = rho_from_epsilon_delta(epsilon, delta)
        rho_size = Fraction(0) if warm_share else rho * SIZE_SHARE
        rho_rest = rho - rho * warm_share - rho_size
        rho_svt = rho_rest * SVT_SHARE
        rho_ans = rho_rest - rho_svt

        def scales(c: int) -> _Scales:
            return _zcdp_scales(c, rho_svt, rho_ans, sensitivity)

    def margin(c: int) -> int:
        s = scales(c)
        return _margin(s.threshold, s.query, beta_f)

    def false_hard(c: int) -> float:
        s = scales(c)
        return laplace_difference_tail(s.threshold, s.query, accuracy_int - margin(c))

    half = accuracy_int // 2
    fixed_cap = cap
    cap = 0
    if fixed_cap is not None:
        cap = fixed_cap
    elif accuracy_int >= 2 and margin(1) <= half:
        lo, hi = 1, 2
        while hi <= MAX_CAP and margin(hi) <= half:
            lo, hi = hi, hi * 2
        hi = min(hi, MAX_CAP + 1)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if margin(mid) <= half:
                lo = mid
            else:
                hi = mid
        cap = lo
        if expected_queries is not None:
            # fp(c) grows with c while c/2 grows too: scan down from the margin-only cap.
            cap = next((c for c in range(cap, 0, -1) if expected_queries * false_hard(c) <= c / 2), 0)
    used = max(cap, 1)
    s = scales(used)
    m = margin(used) if threshold is None else accuracy_int - threshold
    if mode == "pure":
        size_scale, size_sigma2 = (sensitivity / eps_size if eps_size else None), None
        answer_ci = discrete_laplace_ci(s.answer_scale)  # type: ignore[arg-type]
    else:
        assert rho is not None
        size_scale = None
        size_sigma2 = None if warm_share else Fraction(sensitivity * sensitivity) / (2 * rho * SIZE_SHARE)
        answer_ci = discrete_gaussian_ci(s.answer_sigma2)  # type: ignore[arg-type]
    return SVTCalibration(
        mode=mode, epsilon=epsilon, delta=delta if mode == "zcdp" else Fraction(0), sensitivity=sensitivity,
        accuracy=accuracy_int, beta=beta, cap=cap, threshold=accuracy_int - m, margin=m,
        false_hard_rate=laplace_difference_tail(s.threshold, s.query, accuracy_int - m),
        epsilon_size=eps_size, epsilon_svt=eps_svt, epsilon_answers=eps_ans, rho=rho,
        threshold_scale=s.threshold, query_scale=s.query, answer_scale=s.answer_scale, answer_sigma2=s.answer_sigma2,
        size_scale=size_scale, size_sigma2=size_sigma2, answer_ci95=answer_ci, expected_queries=expected_queries,
        round_epsilon=s.round_epsilon, warm_share=warm_share, warm_releases=warm_releases,
    )


# ---------------------------------------------------------------------------------------------
# The secret side: threshold noise, query noise, fresh answer noise


class SparseVector:
    """The sparse vector test of one Median Mechanism session (pure or zCDP rounds).

    `test(statistic)` draws fresh query noise and answers True ("hard", above the threshold) or
    False; after `cap` hard answers the vector is halted and refuses further tests (a public
    condition: the number of hard answers is part of the transcript). The threshold noise is
    drawn once (pure) or at the start of every round (zCDP: after each hard answer) and never
    leaves this object.
    """

    __slots__ = ("_cal", "_hard", "_rho", "_rng", "_tests")

    def __init__(self, calibration: SVTCalibration, rng: RandomSource) -> None:
        if calibration.cap < 1:
            raise ValueError("the sparse vector needs a cap of at least one hard answer")
        self._cal = calibration
        self._rng = rng
        self._hard = 0
        self._tests = 0
        self._rho = self._draw_threshold_noise()

    def _draw_threshold_noise(self) -> int:
        return discrete_laplace(self._cal.threshold_scale, self._rng)

    def _draw_query_noise(self) -> int:
        return discrete_laplace(self._cal.query_scale, self._rng)

    @property
    def hard_answers(self) -> int:
        """Hard answers so far (public)."""
        return self._hard

    @property
    def slots_left(self) -> int:
        """Hard answers still allowed (public)."""
        return self._cal.cap - self._hard

    @property
    def halted(self) -> bool:
        """Whether all hard slots are used (public)."""
        return self._hard >= self._cal.cap

    def test(self, statistic: int) -> bool:
        """One sparse vector test of an integer statistic with sensitivity <= Δ; True means hard."""
        if self.halted:
            raise RuntimeError("the sparse vector is halted: no further tests")
        if isinstance(statistic, bool) or not isinstance(statistic, int):
            raise TypeError("the statistic must be an int")
        self._tests += 1
        above = statistic + self._draw_query_noise() >= self._cal.threshold + self._rho
        if above:
            self._hard += 1
            if self._cal.mode == "zcdp" and not self.halted:
                self._rho = self._draw_threshold_noise()  # a new AboveThreshold round
        return above

    def __repr__(self) -> str:
        return f"SparseVector(mode={self._cal.mode!r}, cap={self._cal.cap}, hard={self._hard}, tests={self._tests})"


def answer_noise(calibration: SVTCalibration, rng: RandomSource) -> int:
    """One fresh noise draw for one cell of a hard answer (never the test's noise)."""
    if calibration.mode == "pure":
        assert calibration.answer_scale is not None
        return discrete_laplace(calibration.answer_scale, rng)
    assert calibration.answer_sigma2 is not None
    return discrete_gaussian(calibration.answer_sigma2, rng)


def size_noise(calibration: SVTCalibration, rng: RandomSource) -> int:
    """The noise of the table size n̂, released once per session."""
    if calibration.mode == "pure":
        assert calibration.size_scale is not None
        return discrete_laplace(calibration.size_scale, rng)
    assert calibration.size_sigma2 is not None
    return discrete_gaussian(calibration.size_sigma2, rng)


class MedianMechanismReservation:
    """The Median Mechanism layer's sparse vector and hard answers (docs/mechanisms.md), priced once per
    session. Its spec is the public calibration; `release` is one hard answer's cell (the exact
    count plus fresh noise); the stateful test itself is `SparseVector`."""

    name = "median_mechanism"
    spec_type = SVTCalibration
    output = Output()

    def cost(self, spec: SVTCalibration) -> PrivacyCost:
        return spec.cost

    def parameters(self, spec: SVTCalibration) -> Parameters:
        return ()

    def release(self, spec: SVTCalibration, raw: int, rng: RandomSource) -> int:
        return int(raw) + answer_noise(spec, rng)

    def describe(self, spec: SVTCalibration, context: Describing = Describing()) -> str:
        scale = self.error(spec).scale
        answers = f"discrete Laplace scale {fmt(scale)}" if spec.mode == "pure" else f"discrete Gaussian sigma {fmt(scale)}"
        budget = f"epsilon {fmt(spec.epsilon)}" + (f", delta {float(spec.delta):.3g} (rho {fmt(spec.rho)})" if spec.mode == "zcdp" else "")
        return (f"sparse vector ({spec.mode}), threshold {spec.threshold}, sensitivity {spec.sensitivity}, "
                f"at most {spec.cap} hard answers of {answers}; {budget}")

    def error(self, spec: SVTCalibration) -> ErrorDescription:
        scale = float(spec.answer_scale or 0) if spec.mode == "pure" else math.sqrt(float(spec.answer_sigma2 or 0))
        return ErrorDescription(scale=scale, ci95=float(spec.answer_ci95), details=(("mode", spec.mode),))

    def refusal(self, spec: object) -> str | None:
        return None

"""Exact samplers for privacy noise, in integer and Fraction arithmetic only.

The samplers follow Canonne, Kamath and Steinke (2020), "The Discrete Gaussian for
Differential Privacy", Algorithms 1 and 2. Every random choice is one call to
`RandomSource.randbelow`, so an output's probability is exactly what the algorithm says: there
are no floating-point holes for an attacker to read (docs/privacy-model.md; tests/security/test_attack_a11_*).

Privacy function: for an integer-valued query with sensitivity Δ (an integer, or Δ on the
fixed-point grid of a sum), adding `discrete_laplace(Δ / ε, rng)` is ε-differentially private,
since the pmf ratio at neighbouring outputs is at most exp(Δ / scale) = exp(ε).

The tail, interval and threshold helpers at the end use floats (`math.exp`/`math.log`). They
only size error bars and thresholds from public parameters; they never draw noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from numbers import Rational
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dpsql.mechanisms.rng import RandomSource

__all__ = [
    "bernoulli",
    "bernoulli_exp",
    "discrete_laplace",
    "discrete_laplace_ci",
    "discrete_laplace_tail",
    "discrete_laplace_threshold",
    "discrete_laplace_upper_tail",
    "discrete_gaussian",
    "discrete_gaussian_ci",
    "geometric_exp",
    "geometric_exp_slow",
]


# ---------------------------------------------------------------------------------------------
# Argument checks


def _exact(value: object, name: str) -> Fraction:
    # Samplers take only exact rationals: a float such as 0.1 is not the number the caller
    # meant, and silently sampling at its binary value would hide the mistake.
    if isinstance(value, bool) or not isinstance(value, Rational):
        msg = f"{name} must be an int or a Fraction, got {type(value).__name__}"
        raise TypeError(msg)
    return Fraction(value)


def _nonnegative(value: object, name: str) -> Fraction:
    exact = _exact(value, name)
    if exact < 0:
        msg = f"{name} must be >= 0, got {exact}"
        raise ValueError(msg)
    return exact


# ---------------------------------------------------------------------------------------------
# Exact samplers. Internally a rational r is carried as the integers (num, den), den >= 1, so
# the hot loops do no Fraction normalisation (gcd) at all. The helpers take the source's bound
# `randbelow` method rather than the source, so a draw looks the method up once, not per call.

_Randbelow = Callable[[int], int]


def _bernoulli_exp_unit(num: int, den: int, randbelow: _Randbelow) -> bool:
    # CKS20 Alg. 1 for gamma = num/den in [0, 1]: draw A_k ~ Bernoulli(gamma / k) until the first
    # failure at K; P(K odd) = exp(-gamma).
    if num == 0:
        return True
    k = 1
    while randbelow(den * k) < num:
        k += 1
    return k % 2 == 1


def _bernoulli_exp_int(num: int, den: int, randbelow: _Randbelow) -> bool:
    # exp(-gamma) = exp(-1)^floor(gamma) * exp(-frac(gamma)); stop at the first failed factor,
    # so the expected work stays below 1.6 factors however large gamma is.
    while num > den:
        if not _bernoulli_exp_unit(1, 1, randbelow):
            return False
        num -= den
    return _bernoulli_exp_unit(num, den, randbelow)


def _geometric_slow_int(num: int, den: int, randbelow: _Randbelow) -> int:
    # Count successes of Bernoulli(exp(-x)) before the first failure: P[k] = (1 - e^-x) e^(-xk).
    k = 0
    while _bernoulli_exp_int(num, den, randbelow):
        k += 1
    return k


def _geometric_fast_int(num: int, den: int, randbelow: _Randbelow) -> int:
    # CKS20 Alg. 2, steps 3-8, for x = num/den > 0. U is uniform on [0, den) kept with probability
    # exp(-U/den), V ~ Geometric(exp(-1)); X = U + den*V then has P[X] ∝ exp(-X/den), and
    # floor(X / num) has P[k] ∝ exp(-k num/den). The work does not grow with den, unlike the slow
    # sampler at x = num/den, which needs about den/num Bernoulli draws.
    u = 0
    if den > 1:
        while True:
            u = randbelow(den)
            if _bernoulli_exp_unit(u, den, randbelow):
                break
    v = _geometric_slow_int(1, 1, randbelow)
    return (u + den * v) // num


def _laplace_int(num: int, den: int, randbelow: _Randbelow) -> int:
    # CKS20 Alg. 2 at scale num/den > 0 (rate den/num): a sign, then the magnitude
    # _geometric_fast_int(den, num, randbelow) with it and the Bernoulli helpers inlined. A
    # discrete Laplace draw is the whole cost of releasing a count, and the helper calls were
    # about a quarter of it. The randbelow calls, their bounds and their order are exactly those
    # of the helpers (tests/unit/mechanisms/test_sampling.py compares the two call for call), so
    # the output distribution is unchanged: only the bookkeeping between the calls is cheaper.
    while True:
        negative = randbelow(2) == 1
        # U: uniform on [0, num), kept with probability exp(-U/num) (_bernoulli_exp_unit(U, num)).
        u = 0
        if num > 1:
            while True:
                u = randbelow(num)
                if u == 0:
                    break
                bound, odd = num, True  # bound = num * k, odd = k % 2 == 1, from k = 1
                while randbelow(bound) < u:
                    bound += num
                    odd = not odd
                if odd:
                    break
        # V ~ Geometric(exp(-1)): successes of _bernoulli_exp_unit(1, 1) before the first failure.
        # Its first call randbelow(1) < 1 always holds, but the call stays so the sequence of
        # draws (and every seeded stream) is the helpers' own.
        v = 0
        while True:
            k = 1
            while randbelow(k) < 1:
                k += 1
            if not k & 1:
                break
            v += 1
        magnitude = (u + num * v) // den
        # Reject "-0" so that zero is not counted twice.
        if negative and magnitude == 0:
            continue
        return -magnitude if negative else magnitude


def bernoulli(p: Fraction, rng: RandomSource) -> bool:
    """True with probability exactly p.

    Args:
        p: the probability, an int or Fraction in [0, 1].
        rng: the random source.

    Returns:
        One Bernoulli(p) draw.

    Raises:
        TypeError: p is not an int or a Fraction.
        ValueError: p is outside [0, 1].

    Example:
        >>> from dpsql.mechanisms.rng import SeededRandomSource
        >>> bernoulli(Fraction(1), SeededRandomSource(0)), bernoulli(0, SeededRandomSource(0))
        (True, False)
    """
    exact = _nonnegative(p, "p")
    if exact > 1:
        msg = f"p must be <= 1, got {exact}"
        raise ValueError(msg)
    return rng.randbelow(exact.denominator) < exact.numerator


def bernoulli_exp(gamma: Fraction, rng: RandomSource) -> bool:
    """True with probability exactly exp(-gamma) (CKS20 Algorithm 1).

    Args:
        gamma: an int or Fraction >= 0.
        rng: the random source.

    Returns:
        One Bernoulli(exp(-gamma)) draw. gamma == 0 always gives True.

    Raises:
        TypeError: gamma is not an int or a Fraction.
        ValueError: gamma < 0.
    """
    exact = _nonnegative(gamma, "gamma")
    return _bernoulli_exp_int(exact.numerator, exact.denominator, rng.randbelow)


def geometric_exp_slow(x: Fraction, rng: RandomSource) -> int:
    """A geometric draw with P[k] ∝ exp(-x k), k >= 0, by repeated Bernoulli(exp(-x)).

    Expected work is about 1 / (1 - exp(-x)) Bernoulli draws, so use it only for x of order 1;
    `geometric_exp` is the general sampler.

    Args:
        x: an int or Fraction > 0.
        rng: the random source.

    Returns:
        An integer k >= 0.

    Raises:
        TypeError: x is not an int or a Fraction.
        ValueError: x <= 0 (the distribution would not be normalisable).
    """
    exact = _positive_rate(x)
    return _geometric_slow_int(exact.numerator, exact.denominator, rng.randbelow)


def geometric_exp(x: Fraction, rng: RandomSource) -> int:
    """A geometric draw with P[k] ∝ exp(-x k), k >= 0 (CKS20 Algorithm 2, steps 3-9).

    Draws a uniform offset over x's denominator and a Geometric(exp(-1)) count, so the expected
    work is constant in the size of x's numerator and denominator.

    Args:
        x: an int or Fraction > 0.
        rng: the random source.

    Returns:
        An integer k >= 0.

    Raises:
        TypeError: x is not an int or a Fraction.
        ValueError: x <= 0.
    """
    exact = _positive_rate(x)
    return _geometric_fast_int(exact.numerator, exact.denominator, rng.randbelow)


def _positive_rate(x: object) -> Fraction:
    exact = _exact(x, "x")
    if exact <= 0:
        msg = f"x must be > 0, got {exact}"
        raise ValueError(msg)
    return exact


def discrete_laplace(scale: Fraction, rng: RandomSource) -> int:
    """A discrete Laplace draw: P[X = x] ∝ exp(-|x| / scale) over all integers x.

    CKS20 Algorithm 2: a sign and a geometric magnitude with rate 1/scale, rejecting "-0" so that
    zero is not counted twice. Adding it with scale Δ/ε to an integer query of sensitivity Δ is
    ε-DP. Fast for any scale: 10,000 draws at scale 3e11 cost about as much as at scale 1.

    Args:
        scale: an int or Fraction >= 0. Scale 0 means no noise.
        rng: the random source (`SystemRandomSource` for privacy noise).

    Returns:
        An integer; 0 when scale == 0.

    Raises:
        TypeError: scale is not an int or a Fraction.
        ValueError: scale < 0.

    Example:
        >>> from dpsql.mechanisms.rng import SeededRandomSource
        >>> discrete_laplace(Fraction(0), SeededRandomSource(1))
        0
    """
    # Fast paths for the two exact types callers pass: a Fraction is already in lowest terms
    # with a positive denominator, so its parts are read, not rebuilt (Fraction(scale) and the
    # Rational ABC check cost more than the rest of a small-scale draw). Anything else goes
    # through the full check.
    cls: type = scale.__class__
    if cls is Fraction:
        num, den = scale.numerator, scale.denominator
    elif cls is int:
        num, den = int(scale), 1
    else:
        exact = _exact(scale, "scale")
        num, den = exact.numerator, exact.denominator
    if num <= 0:
        if num < 0:
            msg = f"scale must be >= 0, got {Fraction(num, den)}"
            raise ValueError(msg)
        return 0
    return _laplace_int(num, den, rng.randbelow)


def discrete_gaussian(sigma2: Fraction, rng: RandomSource) -> int:
    """A discrete Gaussian draw: P[X = x] ∝ exp(-x² / (2 σ²)) over all integers x (CKS20 Alg. 3).

    Rejection sampling from a discrete Laplace of integer scale t = floor(σ) + 1: accept Y with
    probability exp(-(|Y| - σ²/t)² / (2σ²)), an exact Bernoulli on a rational argument. Adding
    it with σ² = Δ₂² / (2ρ) to an integer query of L2 sensitivity Δ₂ is ρ-zCDP (CKS20 Thm. 4).
    The expected number of rounds is below 1 + 1/(1 - e^-1) ≈ 2.6 for every σ.

    Args:
        sigma2: the variance parameter σ², an int or Fraction >= 0. 0 means no noise.
        rng: the random source (`SystemRandomSource` for privacy noise).

    Returns:
        An integer; 0 when sigma2 == 0.

    Raises:
        TypeError: sigma2 is not an int or a Fraction.
        ValueError: sigma2 < 0.

    Example:
        >>> from dpsql.mechanisms.rng import SeededRandomSource
        >>> discrete_gaussian(Fraction(0), SeededRandomSource(1))
        0
    """
    exact = _nonnegative(sigma2, "sigma2")
    if exact == 0:
        return 0
    # t = floor(sqrt(num/den)) + 1, exactly: floor(sqrt(num*den) / den) = isqrt(num*den) // den.
    t = math.isqrt(exact.numerator * exact.denominator) // exact.denominator + 1
    shift = exact / t  # σ²/t
    twice = 2 * exact
    randbelow = rng.randbelow
    while True:
        y = _laplace_int(t, 1, randbelow)  # discrete_laplace(Fraction(t), rng), without the checks
        gap = abs(y) - shift
        gamma = gap * gap / twice
        if _bernoulli_exp_int(gamma.numerator, gamma.denominator, randbelow):
            return y


# ---------------------------------------------------------------------------------------------
# Tails, intervals and thresholds (floats: reporting and public sizing only).
#
# With p = exp(-1/scale) the pmf is (1-p)/(1+p) * p^|x|, so for k >= 1
#   P(X >= k) = p^k / (1+p)   and   P(|X| >= k) = 2 p^k / (1+p).
# Probabilities are handled as logs so tiny deltas (1e-12 and far below) do not underflow, and
# k/scale is formed exactly as a Fraction before rounding, so the log tails are monotone in k.


def _report_scale(scale: object) -> Fraction:
    if isinstance(scale, bool):
        msg = "scale must be a number, not a bool"
        raise TypeError(msg)
    if isinstance(scale, float):
        if not math.isfinite(scale):
            msg = f"scale must be finite, got {scale}"
            raise ValueError(msg)
        # The decimal the caller wrote (0.1 -> 1/10), as in accounting.cost.to_fraction.
        return _nonnegative(Fraction(repr(scale)), "scale")
    return _nonnegative(scale, "scale")


def _float_or_inf(value: Fraction) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _log_positive(value: object, name: str) -> float:
    # math.log of a Fraction would round it to a float first and fail below 1e-308.
    if isinstance(value, bool) or not isinstance(value, (Rational, float)):
        msg = f"{name} must be a number, got {type(value).__name__}"
        raise TypeError(msg)
    if not value > 0:  # type: ignore[operator]  # a Rational or a float, both ordered
        msg = f"{name} must be > 0, got {value}"
        raise ValueError(msg)
    if isinstance(value, float):
        return math.log(value)
    exact = Fraction(value)
    return math.log(exact.numerator) - math.log(exact.denominator)


class _Tails:
    """Log tail probabilities of the discrete Laplace at one scale > 0."""

    def __init__(self, scale: Fraction) -> None:
        self.rate = 1 / scale
        # log(1 + p), the normaliser shared by every tail.
        self.log1p_p = math.log1p(math.exp(-_float_or_inf(self.rate)))

    def log_p_pow(self, k: int) -> float:
        """log p^k = -k/scale, rounded once from the exact rational."""
        return -_float_or_inf(k * self.rate)

    def log_upper(self, k: int) -> float:
        """log P(X >= k)."""
        if k >= 1:
            return self.log_p_pow(k) - self.log1p_p
        # Symmetry: P(X >= k) = 1 - P(X <= k - 1) = 1 - P(X >= 1 - k).
        return math.log1p(-math.exp(self.log_p_pow(1 - k) - self.log1p_p))

    def log_abs(self, k: int) -> float:
        """log P(|X| >= k)."""
        if k <= 0:
            return 0.0
        return math.log(2.0) + self.log_p_pow(k) - self.log1p_p


def _smallest_true(ok: Callable[[int], bool], guess: int, floor: int | None = None) -> int:
    """The smallest integer k (>= floor) with ok(k), for ok monotone False...True.

    Starts at the closed-form guess, which is right or off by one except at huge scales where
    floats cannot resolve single steps; galloping then bisection keeps the fix-up logarithmic.
    """
    if floor is not None:
        guess = max(guess, floor)
    if ok(guess):
        hi, step = guess, 1
        while True:
            lo = hi - step
            if floor is not None and lo < floor:
                lo = floor - 1  # sentinel below the floor, never evaluated
                break
            if not ok(lo):
                break
            hi, step = lo, step * 2
    else:
        lo, step = guess, 1
        while True:
            hi = lo + step
            if ok(hi):
                break
            lo, step = hi, step * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _ceil_guess(value: float, default: int) -> int:
    return math.ceil(value) if math.isfinite(value) else default


def discrete_laplace_tail(scale: Fraction | float, k: int) -> float:
    """P(|X| >= k) for X discrete Laplace with the given scale.

    Args:
        scale: the scale (>= 0); floats are read as the decimal they print as.
        k: the integer bound.

    Returns:
        2 p^k / (1 + p) with p = exp(-1/scale) for k >= 1, and 1.0 for k <= 0.

    Example:
        >>> round(discrete_laplace_tail(Fraction(1), 1), 6)
        0.537883
    """
    exact = _report_scale(scale)
    if k <= 0:
        return 1.0
    if exact == 0:
        return 0.0
    return math.exp(_Tails(exact).log_abs(k))


def discrete_laplace_upper_tail(scale: Fraction | float, k: int) -> float:
    """P(X >= k) for X discrete Laplace with the given scale.

    Args:
        scale: the scale (>= 0); floats are read as the decimal they print as.
        k: the integer bound.

    Returns:
        p^k / (1 + p) with p = exp(-1/scale) for k >= 1; for k <= 0, 1 - P(X >= 1 - k).
    """
    exact = _report_scale(scale)
    if exact == 0:
        return 1.0 if k <= 0 else 0.0
    return math.exp(_Tails(exact).log_upper(k))


def discrete_laplace_ci(scale: Fraction | float, confidence: float = 0.95) -> int:
    """Half-width of a central interval: the smallest k >= 0 with P(|X| > k) <= 1 - confidence.

    Args:
        scale: the scale (>= 0); floats are read as the decimal they print as.
        confidence: in (0, 1).

    Returns:
        The integer half-width k; the noisy value is within ±k of the true one with probability
        at least `confidence`. 0 for scale 0.

    Raises:
        ValueError: confidence is not in (0, 1), or scale < 0.

    Example:
        >>> discrete_laplace_ci(Fraction(10)), discrete_laplace_ci(Fraction(1000))
        (30, 2996)
    """
    exact = _report_scale(scale)
    if not 0 < confidence < 1:
        msg = f"confidence must be in (0, 1), got {confidence}"
        raise ValueError(msg)
    if exact == 0:
        return 0
    tails = _Tails(exact)
    log_alpha = math.log(1 - confidence)
    # 2 p^(k+1) / (1+p) <= alpha  <=>  k + 1 >= scale * (log 2 - log(1+p) - log alpha).
    guess = _ceil_guess(_float_or_inf(exact) * (math.log(2.0) - tails.log1p_p - log_alpha), 1) - 1
    return _smallest_true(lambda k: tails.log_abs(k + 1) <= log_alpha, guess, floor=0)


def discrete_laplace_threshold(scale: Fraction | float, count: int, delta: Fraction | float) -> int:
    """The smallest integer t with count * P(X >= t) <= delta.

    Used by partition selection: a key held by one unit (true count at most `count` after
    bounding) passes a noisy threshold t with probability at most delta.

    Args:
        scale: the scale (>= 0); floats are read as the decimal they print as.
        count: a positive integer multiplier.
        delta: the target probability, 0 < delta < count.

    Returns:
        The threshold t (1 for scale 0, since X is then always 0).

    Raises:
        ValueError: count < 1, delta <= 0 or delta >= count (every t would qualify).

    Example:
        >>> discrete_laplace_threshold(Fraction(1), 1, Fraction(1, 10**6))
        14
    """
    exact = _report_scale(scale)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        msg = f"count must be an int >= 1, got {count!r}"
        raise ValueError(msg)
    log_r = _log_positive(delta, "delta") - math.log(count)
    if log_r >= 0:
        msg = f"delta must be below count ({count}), got {delta}"
        raise ValueError(msg)
    if exact == 0:
        return 1
    tails = _Tails(exact)
    scale_f = _float_or_inf(exact)
    # For t >= 1: p^t / (1+p) <= r  <=>  t >= scale * (-log(1+p) - log r).
    guess = _ceil_guess(scale_f * (-tails.log1p_p - log_r), 1)
    if guess < 1:
        # t <= 0: 1 - p^(1-t)/(1+p) <= r  <=>  t >= 1 + scale * (log(1-r) + log(1+p)).
        guess = _ceil_guess(1 + scale_f * (math.log1p(-math.exp(log_r)) + tails.log1p_p), 0)
    return _smallest_true(lambda t: tails.log_upper(t) <= log_r, guess)


_GAUSS_EXACT_SIGMA = 400.0
_Z975 = 1.959963984540054  # the 0.975 quantile of the standard normal


def discrete_gaussian_ci(sigma2: Fraction | float, confidence: float = 0.95) -> int:
    """Half-width of a central interval of the discrete Gaussian: the smallest k >= 0 with
    P(|X| > k) <= 1 - confidence.

    Exact summation of the pmf for σ up to 400; above that the continuous normal quantile
    rounded up plus one (the discrete and continuous tails then differ by far less than one
    point mass). Public sizing only: never draws noise.

    Args:
        sigma2: the variance parameter σ² (>= 0).
        confidence: in (0, 1).

    Returns:
        The integer half-width; 0 for σ² = 0.

    Example:
        >>> discrete_gaussian_ci(Fraction(1)), discrete_gaussian_ci(Fraction(100))
        (2, 20)
    """
    exact = _report_scale(sigma2)
    if not 0 < confidence < 1:
        msg = f"confidence must be in (0, 1), got {confidence}"
        raise ValueError(msg)
    if exact == 0:
        return 0
    var = float(exact)
    sigma = math.sqrt(var)
    if confidence == 0.95 and sigma > _GAUSS_EXACT_SIGMA:
        return math.ceil(_Z975 * sigma) + 1
    if sigma > _GAUSS_EXACT_SIGMA:
        msg = "discrete_gaussian_ci computes other levels exactly only for sigma <= 400"
        raise ValueError(msg)
    limit = int(40 * sigma) + 40
    weights = [math.exp(-(x * x) / (2 * var)) for x in range(limit + 1)]
    total = weights[0] + 2 * math.fsum(weights[1:])
    alpha = 1 - confidence
    # P(|X| > k) = 2 * sum_{x > k} w(x) / total; walk k up from 0.
    tail = 2 * math.fsum(weights[1:])
    k = 0
    while tail / total > alpha:
        k += 1
        tail -= 2 * weights[k]
    return k

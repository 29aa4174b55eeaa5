"""The optimal composition of k (epsilon0, delta0)-DP mechanisms, exactly, in pure Python.

Kairouz, Oh and Viswanath ("The Composition Theorem for Differential Privacy", ICML 2015) show
that every (epsilon0, delta0)-DP mechanism is a post-processing of one pair of distributions:
randomized response at epsilon0, plus an outcome of probability delta0 that reveals the input;
and that the k-fold *adaptive* composition of such mechanisms is a post-processing of k copies
of that pair. So for every epsilon the composition is (epsilon, delta_k(epsilon))-DP with

    delta_k(epsilon) = 1 - (1 - delta0)^k (1 - h_k(epsilon)),
    h_k(epsilon) = sum over m of C(k, m) q^m p^(k - m) (1 - e^(epsilon - epsilon0 (k - 2 m)))_+,

p = e^epsilon0 / (1 + e^epsilon0), q = 1 - p (the loss of k randomized responses is
epsilon0 (k - 2 m) when m of them point the other way), and no bound that holds for every such
mechanism is smaller. dpsql's homogeneous filter class reads it to cap a chain of charges that
are each (epsilon0, delta0)-DP.

Floats, rounded to be safe: only the terms with a positive part are summed, from the largest
loss down; the sum stops once the remaining terms are below 1e-30 of it, and what it leaves
out is added back as a geometric bound (successive terms shrink by at least their current
ratio); the total is inflated by a relative margin far above float error.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

from dpsql.accounting.zcdp import float_down, float_up

_RELATIVE_MARGIN = 1e-6


def _log_binomial(k: int, m: int) -> float:
    return math.lgamma(k + 1) - math.lgamma(m + 1) - math.lgamma(k - m + 1)


@lru_cache(maxsize=4096)
def _h(k: int, epsilon0: float, epsilon: float) -> float:
    """h_k(epsilon) for randomized response at epsilon0 (an upper bound, see the module doc)."""
    if k == 0 or epsilon0 <= 0:
        return 0.0
    # Terms with loss epsilon0 (k - 2 m) > epsilon: m < (k - epsilon / epsilon0) / 2.
    top = math.ceil((k - epsilon / epsilon0) / 2) - 1
    if top < 0:
        return 0.0
    top = min(top, k)
    # ln(1 / (1 + e^eps0)) and ln(e^eps0 / (1 + e^eps0)), stable for any eps0 (no e^eps0 overflow).
    log_q = -(epsilon0 + math.log1p(math.exp(-epsilon0)))
    log_p = -math.log1p(math.exp(-epsilon0))
    total = 0.0
    m = top
    while m >= 0:
        log_term = _log_binomial(k, m) + m * log_q + (k - m) * log_p
        weight = -math.expm1(epsilon - epsilon0 * (k - 2 * m))  # 1 - e^(eps - loss), in (0, 1]
        term = math.exp(min(0.0, log_term))
        total += term * weight
        # Going down, the binomial factor shrinks by m / (k - m + 1) * e^eps0 per step (< 1 below
        # the mean) and the weight grows towards 1: the rest is at most a geometric series.
        if m > 0 and term <= 1e-30 * max(total, 1e-300):
            log_ratio = math.log(m) - math.log(k - m + 1) + epsilon0
            if log_ratio < 0:
                ratio = math.exp(log_ratio)
                total += term * ratio / (1 - ratio)
                break
        m -= 1
    return total


def composed_delta(k: int, epsilon0: Fraction, delta0: Fraction, epsilon: Fraction) -> float:
    """An upper bound (rounded up) of delta_k(epsilon) for k adaptively composed (epsilon0, delta0)-DP
    mechanisms (Kairouz, Oh and Viswanath 2015)."""
    if k <= 0:
        return 0.0
    e0, d0, e = float_up(epsilon0), float_up(delta0), float_down(epsilon)
    if e < 0:
        return 1.0
    h = _h(k, e0, e)
    # 1 - (1 - d0)^k (1 - h) = (1 - (1 - d0)^k) + (1 - d0)^k h: the first part by expm1 (no
    # cancellation); both parts are within float error of exact, far inside the margin.
    keep = math.exp(k * math.log1p(-d0)) if d0 < 1 else 0.0
    lost = -math.expm1(k * math.log1p(-d0)) if d0 < 1 else 1.0
    return min(1.0, (lost + keep * h) * (1 + _RELATIVE_MARGIN) + 1e-300)


def chain_length(epsilon0: Fraction, delta0: Fraction, budget_epsilon: Fraction, budget_delta: Fraction,
                 limit: int = 10**7) -> int:
    """The largest k <= limit with composed_delta(k) <= budget_delta (0 when not even one fits).
    composed_delta grows with k, so galloping then bisection: about 2 log2(k) evaluations."""
    return _chain_length(epsilon0, delta0, budget_epsilon, budget_delta, limit)


@lru_cache(maxsize=512)
def _chain_length(epsilon0: Fraction, delta0: Fraction, budget_epsilon: Fraction, budget_delta: Fraction, limit: int) -> int:
    bound = float_down(budget_delta)

    def fits(k: int) -> bool:
        return composed_delta(k, epsilon0, delta0, budget_epsilon) <= bound

    if not fits(1):
        return 0
    lo, hi = 1, 2
    while hi <= limit and fits(hi):
        lo, hi = hi, hi * 2
    if hi > limit:
        if fits(limit):
            return limit
        hi = limit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def chain_epsilon(k: int, epsilon0: Fraction, delta0: Fraction, budget_delta: Fraction) -> float | None:
    """The smallest epsilon (rounded up, to 1e-9) with composed_delta(k, ., epsilon) <= budget_delta;
    None when no epsilon does (the deltas alone pass it)."""
    if k <= 0:
        return 0.0
    bound = float_down(budget_delta)
    top = float_up(epsilon0) * k
    if composed_delta(k, epsilon0, delta0, Fraction(top)) > bound:
        return None
    lo, hi = 0.0, top
    if composed_delta(k, epsilon0, delta0, Fraction(0)) <= bound:
        return 0.0
    while hi - lo > 1e-9 * max(1.0, hi):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if composed_delta(k, epsilon0, delta0, Fraction(mid)) <= bound else (mid, hi)
    return hi

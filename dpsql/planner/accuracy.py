"""Accuracy first: the smallest per-release epsilon giving a noisy cell a 95% half-width.

``OPTIONS (ci95 = h)`` asks for every noisy cell's 95% interval to be at most +-h (in the
aggregate's units) instead of naming an epsilon. Each COUNT or SUM release has a public
sensitivity (from the policy) and a public unit, so the half-width its noise gives at a given
epsilon is a public function, non-increasing in epsilon: bisection finds the smallest epsilon
(rounded up to 6 significant digits) whose half-width is <= h. No data is read.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpsql.mechanisms import registry

_LOW, _HIGH = 1e-9, 1e9  # the epsilons searched (a request outside them is refused by the planner)


def _round_up(value: float) -> Fraction:
    exponent = 5 - math.floor(math.log10(value))
    if exponent >= 0:
        return Fraction(math.ceil(value * 10**exponent), 10**exponent)
    return Fraction(math.ceil(value / 10**-exponent) * 10**-exponent)


def width(noise: str, sensitivity: Fraction, epsilon: Fraction, delta: Fraction) -> int:
    """The 95% half-width, in grid units, of one release at ``epsilon`` (and ``delta`` for Gaussian)."""
    return registry.noise_spec(noise, sensitivity, epsilon, delta).half_width()


def epsilon_for(noise: str, sensitivity: Fraction, target_units: Fraction, delta: Fraction) -> Fraction | None:
    """The smallest epsilon (6 significant digits, rounded up) whose half-width is <= target_units
    grid units; None when even epsilon 1e9 is not enough (a target below one grid unit)."""
    if sensitivity == 0:
        return Fraction(0)

    def ok(eps: float) -> bool:
        return width(noise, sensitivity, _round_up(eps), delta) <= target_units

    if not ok(_HIGH):
        return None
    lo, hi = math.log(_LOW), math.log(_HIGH)
    if ok(_LOW):
        return _round_up(_LOW)
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if ok(math.exp(mid)) else (mid, hi)
    return _round_up(math.exp(hi))

"""How sure a released MODE is, computed from the release alone (post-processing, no data, no cost).

A MODE mechanism returns `Confident(value, confidence)`: the value and the confidence 1 - alpha of
a stated claim. "Confidence" means a valid p-value bound: for every level a in (0, 1),

    P(the claim is false and alpha <= a) <= a,

over the mechanism's own noise, for every data set. So among releases that claim confidence
>= 0.9, at most 10% (of all releases, hence of those too in expectation) are wrong.

The three claims (derivations in each function):
- report-noisy-max (declared values): "the released value has the largest true count" (ties allowed);
- stable-histogram mode (undeclared values): the same claim, over all values of the column;
- A_samp: "the released value wins the subsample vote, and no single person added or removed
  changes the winner" (a claim about the subsample vote, not the population's counts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpsql.mechanisms.sampling import discrete_laplace_upper_tail


@dataclass(frozen=True, slots=True)
class Confident:
    """A released value with the confidence (in [0, 1]) that its claim holds."""

    value: Any
    confidence: float


def _tail(scale: Fraction, t: int) -> float:
    """P(N >= t) for N ~ DLap(scale)."""
    return discrete_laplace_upper_tail(scale, t)


def noisy_max_alpha(scale: Fraction, values: int, gap: int) -> float:
    """alpha of report-noisy-max: min(1, K * P(N >= ceil(g / 2))), K = number of declared values.

    Setting. Counts c_i of the K declared values, noisy counts y_i = c_i + n_i with n_i i.i.d.
    DLap(scale) (the whole noisy vector is eps-DP, so g is post-processing). v = argmax y, g =
    y_v - max_{i != v} y_i (integer, >= 0). Claim: c_v >= c_i for every i.

    Fix a true mode m (chosen from the counts alone, not the noise). If the claim is false then
    c_m > c_v, so v != m and y_v - y_m >= g, i.e. n_v - n_m >= g + (c_m - c_v) > g.
    Fix a level a; let s be the smallest integer >= 0 with K P(N >= s) <= a. On {alpha <= a}:
    K P(N >= ceil(g/2)) <= a, so ceil(g/2) >= s and g >= 2s - 1. If n_i <= s - 1 for every i != m
    and -n_m <= s - 1, then n_v - n_m <= 2s - 2 < g: a contradiction. Hence

        P(claim false and alpha <= a) <= sum_{i != m} P(n_i >= s) + P(-n_m >= s) = K P(N >= s) <= a

    (N symmetric; the union bound is over K fixed indices because m does not depend on the noise).
    """
    return min(1.0, values * _tail(scale, math.ceil(gap / 2)))


def histogram_alpha(scale: Fraction, selected: int, gap: int) -> float:
    """alpha of the stable-histogram mode: min(1, 2 |S| P(N >= ceil(g / 2))).

    Setting (mechanisms/histogram_mode.py). Stage 1: each present value's count plus DLap(scale),
    kept when >= T: the released set S (values absent from S have stage-1 noisy count <= T - 1, or
    are absent from the data: count 0). Stage 2: fresh y'_i = c_i + n'_i, n'_i ~ DLap(scale), for
    i in S (|S| is public after stage 1). v = argmax_S y', g = y'_v - max(second y' in S, T - 1).
    Claim: c_v >= c_i for every value i of the column.

    Fix a true mode m. If the claim is false, c_m > c_v >= 1 (v is present), and
    - m in S: y'_v - y'_m >= g, so n'_v - n'_m > g;
    - m not in S: c_m + n_m <= T - 1 (n_m its stage-1 noise), so
      n'_v - n_m = y'_v - c_v - n_m >= y'_v - (T - 1) + (c_m - c_v) > g.
    Fix a level a; s_S = the smallest s with 2 |S| P(N >= s) <= a, and tau = the smallest s with
    2 P(N >= s) <= a (data-free, <= s_S as |S| >= 1). On {alpha <= a}, g >= 2 s_S - 1 (as for
    noisy-max), so one of: n'_i >= s_S for some i in S \\ {m}, -n'_m >= s_S (m in S), or
    -n_m >= s_S >= tau (m not in S). Given S the fresh n' are independent of it:

        P(claim false and alpha <= a) <= E[|S| P(N >= s_S)] + P(-n_m >= tau) <= a/2 + a/2 = a.

    The union over S is over a set that stage 1 already released, so it is fixed when stage 2
    draws; the factor 2 pays for m's stage-1 noise, which is not independent of S.
    """
    return min(1.0, 2 * max(selected, 1) * _tail(scale, math.ceil(gap / 2)))


def stability_alpha(scale: Fraction, noisy_distance: int) -> float:
    """alpha of A_samp: P(Z >= d^) for Z ~ DLap(scale), d^ = min(d, C) + Z the released noisy distance.

    d = floor((gap - 1) / 2T) >= 1 says the winner keeps winning the vote on every neighbouring
    data set (subsample.py). Claim: d >= 1. If it is false, d = 0 and d^ = Z, so alpha = P(Z' >= Z)
    (Z' an independent copy) is a p-value: P(alpha <= a) <= a. Releasing d^ with the winner is
    covered by the PTR cost: the noisy distance is eps-DP and the answer given a pass differs
    between neighbours only when d = 0, which passes with probability <= delta.
    """
    return min(1.0, _tail(scale, noisy_distance))

"""The (1, 0)-DP inequality checked on event counts from two neighbouring databases, shared by the
sensitivity tests that run a release's statement on both (joins, units, DISTINCT aggregates).

Each side's probability is bounded by Clopper-Pearson at ALPHA per one-sided bound (four bounds
per test: family confidence 1 - 1e-6); a violation is P_left(S) > e^1 P_right(S) at that
confidence. `control_detected` says, before a negative control runs, whether its run count can
flag a release whose noise is `shift / scale` nats too sharp even at unlucky draws."""

from __future__ import annotations

import math

from scipy import stats

from tests.statistical.test_end_to_end_dp import clopper_pearson_lower, clopper_pearson_upper

ALPHA = 2.5e-7


def violates(left: int, right: int, n: int) -> bool:
    """The data show P_left(S) > e^1 P_right(S) at the stated confidence."""
    return clopper_pearson_lower(left, n, ALPHA) > math.e * clopper_pearson_upper(right, n, ALPHA)


def control_detected(scale: float, shift: int, n: int, quantile: float = 1e-6) -> bool:
    """Whether the check flags S_hi with n runs at the unlucky quantiles of both binomials
    (two-sided geometric noise of `scale`, the neighbours `shift` apart)."""
    q = math.exp(-1 / scale)
    low = int(stats.binom.ppf(quantile, n, 1 / (1 + q)))
    high = int(stats.binom.ppf(1 - quantile, n, q**shift / (1 + q)))
    return violates(low, high, n)

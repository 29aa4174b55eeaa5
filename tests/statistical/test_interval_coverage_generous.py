"""Coverage of the 95% intervals of MEDIAN, QUANTILE, MIN, MAX and IQR at epsilon 1: the same
hypothesis, releases, level and shapes as test_interval_coverage.py (epsilon 0.1 there, with the
negative controls), split off so a parallel run covers both epsilons at once."""

from __future__ import annotations

from fractions import Fraction

import pytest

from tests.statistical.test_interval_coverage import KINDS, STATISTICS, check_cell

pytestmark = [pytest.mark.statistical, pytest.mark.slow]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("statistic", STATISTICS)
def test_the_interval_covers_the_true_value_in_95_percent_of_releases_at_epsilon_1(kind: str, statistic: str) -> None:
    check_cell(kind, statistic, Fraction(1))

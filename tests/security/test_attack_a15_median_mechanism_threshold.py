"""A15: the Median Mechanism layer's threshold (sparse vector) component. Most published sparse
vector variants are not private (Lyu, Su, Li 2017): without fresh threshold noise, the pattern of
easy and hard answers over an adaptive query stream separates neighbouring databases.

This is the standing-suite entry for the audit in tests/statistical/test_median_mechanism_audit.py
(its databases, builds, adaptive stream and Clopper-Pearson bound are imported, not copied; read
its docstring for the set-up). Hypothesis: the easy/hard pattern of the real `LayerCore` is
epsilon_svt-DP, i.e. no event "the first j answers are easy" / "the first hard answer is at j"
certifies a privacy loss above epsilon_svt (one-sided Clopper-Pearson at level 0.05 / the number
of comparisons, Bonferroni). Here: 3,000 runs per database on seeds the audit does not use.
Negative control: the build without threshold noise (Lyu et al.'s Alg. 5) is caught on the same
events with the same run count (certified loss about 2.8 against epsilon_svt = 1.96).
"""

from __future__ import annotations

import pytest

from tests.statistical.test_median_mechanism_audit import (
    NoThresholdNoise,
    build,
    calibration,
    comparisons,
    epsilon_lower_bound,
    prefix_events,
    sample,
)

pytestmark = [pytest.mark.statistical, pytest.mark.slow]

RUNS = 3000


def certified_loss(svt: type | None = None) -> tuple[float, str]:
    make = (lambda h, s: build(h, s)) if svt is None else (lambda h, s: build(h, s, svt=svt))
    first, second = sample(RUNS, make, 101_000 if svt is None else 105_000)
    return epsilon_lower_bound(first, second, prefix_events(), comparisons=comparisons(prefix_events()))


def test_a15_threshold_component_is_within_its_epsilon() -> None:
    bound, where = certified_loss()
    assert bound <= float(calibration("pure").epsilon_svt), where


def test_a15_negative_control_no_threshold_noise_is_caught() -> None:
    bound, where = certified_loss(NoThresholdNoise)
    assert bound > float(calibration("pure").epsilon_svt), where

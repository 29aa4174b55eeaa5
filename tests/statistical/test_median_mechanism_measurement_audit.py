"""Monte-Carlo privacy audit of the layer's warm-start measurement (the new noisy path).

The pmw strategy releases m noisy marginals once; one person is in one cell of each, so the
measurement's L1 sensitivity is m·Δ and each cell gets discrete Laplace noise of scale m·Δ/ε_warm
(pure mode). Set-up: X = 3 columns of 2 values (+ NULL cells), D = 50 rows in every regular cell,
D' = D minus one row of cell (0, 0, 0); the 2-way marginals (m = 3), the real `SecretHistogram.measure`
and the plan's `measurement_noise`. Events, fixed in advance: "the sum of the three released cells
that hold the removed row is >= t" for t on a grid. For a correct build every event satisfies
P_D(S) <= e^ε_warm P_D'(S) and the reverse; the test certifies a one-sided Clopper–Pearson lower
bound on log(P_D(S)/P_D'(S)) (Bonferroni over events and directions, level 0.05 in total) and
requires it to be <= ε_warm. Negative control: noise of scale Δ/ε_warm per cell (the number of
marginals forgotten) loses up to m·ε_warm on these events, and the same test must certify more
than ε_warm + 0.3. Fixed seeds: deterministic.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpsql.mechanisms.median_mechanism.core import SecretHistogram, measurement_noise
from dpsql.mechanisms.median_mechanism.public_model import marginal
from dpsql.mechanisms.median_mechanism.strategy import LayerPlan, plan_layer
from dpsql.mechanisms.rng import SeededRandomSource
from tests.unit.mechanisms.median_mechanism.support import tiny_domain

pytestmark = pytest.mark.statistical

DOMAIN = tiny_domain(2, 2, 2)
RUNS = 8000
THRESHOLDS = list(range(-6, 16, 2))


def plan() -> LayerPlan:
    chosen = plan_layer(mode="pure", epsilon=Fraction(3), delta=Fraction(0), accuracy=Fraction(100), sensitivity=1,
                        sizes=DOMAIN.sizes, strategy="pmw", measurement="2-way marginals")
    assert len(chosen.axes) == 3 and chosen.calibration.epsilon_warm == 1
    return chosen


def databases() -> tuple[np.ndarray, np.ndarray]:
    h = np.zeros(DOMAIN.cells, dtype=np.int64)
    regular = [x for x in range(DOMAIN.cells) if all(DOMAIN.codes(i)[x] < 2 for i in range(3))]
    h[regular] = 50
    neighbour = h.copy()
    neighbour[0] -= 1  # cell (0, 0, 0)
    return h, neighbour


def released_sums(measure_plan: LayerPlan, h: np.ndarray, seed: int) -> np.ndarray:
    """Per run: the sum over the three marginals of the released cell holding cell (0, 0, 0), minus 300 (its exact value on D)."""
    rng = SeededRandomSource(seed)
    noise = measurement_noise(measure_plan, rng)
    out = np.empty(RUNS, dtype=np.int64)
    for run in range(RUNS):
        measured = SecretHistogram(h).measure(DOMAIN.sizes, measure_plan.axes, noise)
        out[run] = sum(int(m[0]) for m in measured) - 300
    return out


def certified_epsilon(first: np.ndarray, second: np.ndarray) -> float:
    alpha = 0.05 / (2 * len(THRESHOLDS))
    best = -math.inf
    for t in THRESHOLDS:
        a, b = int((first >= t).sum()), int((second >= t).sum())
        for x, y in ((a, b), (b, a), (RUNS - a, RUNS - b), (RUNS - b, RUNS - a)):
            lo = float(stats.beta.ppf(alpha, x, RUNS - x + 1)) if x > 0 else 0.0
            hi = float(stats.beta.ppf(1 - alpha, y + 1, RUNS - y)) if y < RUNS else 1.0
            if lo > 0:
                best = max(best, math.log(lo / hi))
    return best


def test_the_measurement_satisfies_its_epsilon() -> None:
    chosen = plan()
    h, neighbour = databases()
    # Sanity of the set-up: the three marginals each hold the row once.
    assert [int(marginal(h, DOMAIN.sizes, ax)[0]) for ax in chosen.axes] == [100, 100, 100]
    bound = certified_epsilon(released_sums(chosen, h, 1), released_sums(chosen, neighbour, 2))
    assert bound <= float(chosen.calibration.epsilon_warm)


def test_noise_that_forgets_the_number_of_marginals_is_caught() -> None:
    chosen = plan()
    broken = dataclasses.replace(chosen, calibration=dataclasses.replace(chosen.calibration, warm_releases=1))
    assert broken.calibration.warm_scale * 3 == chosen.calibration.warm_scale
    h, neighbour = databases()
    bound = certified_epsilon(released_sums(broken, h, 3), released_sums(broken, neighbour, 4))
    assert bound > float(chosen.calibration.epsilon_warm) + 0.3

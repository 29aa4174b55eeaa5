"""The learning layer answers a long correlated counting workload at its reservation alone.

The regime of the issue: 10^6 persons (one row each, Δ = 1), X = dept (9) x region (5) x age bins
(7) = 315 regular cells (480 with the NULL cell of each column), a reservation of epsilon 0.3,
delta 1e-6 (zCDP), accuracy target A = 5,000 at 95%, and 6,000 random correlated counting
queries (a dept IN list, often a region, often an age range; few exact repeats).

Claim: >= 90% of the 6,000 queries are answered within A by the layer alone (no per-query
fallback), both with the strategy it picks from public facts (identity: one noisy histogram;
the 95% half-width of even the all-cells query is about 650 here) and with the private
multiplicative weights strategy forced (its warm start here is a noisy histogram at a third of
the reservation; queries whose half-width exceeds A go to the sparse vector and the model). Negative
control: the same pmw layer with no warm start and no updates (a fixed uniform model, the old
layer's failure mode) spends its hard slots on the first few hundred queries, halts, and falls far
short. Tolerance: a correct build answers every query it reaches within A with probability about
1 − β = 95% (the sparse vector's calibration) or better (the measured answers' errors are about
650 at most, far below A), so 90% leaves a wide margin; fixed seeds make it deterministic.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpsql.mechanisms.median_mechanism.core import LayerCore, SecretHistogram
from dpsql.mechanisms.median_mechanism.domain import QueryShape
from dpsql.mechanisms.median_mechanism.strategy import plan_layer
from dpsql.mechanisms.rng import SeededRandomSource
from tests.unit.mechanisms.median_mechanism.support import tiny_domain

pytestmark = pytest.mark.statistical

SIZES = (9, 5, 7)
DOMAIN = tiny_domain(*SIZES)
ACCURACY = 5000
QUERIES = 6000


def people(n: int, seed: int) -> np.ndarray:
    """A histogram of n persons with correlated dept, region and age (a 6-class mixture)."""
    rng = np.random.default_rng(seed)
    classes = rng.choice(6, size=n, p=rng.dirichlet(np.ones(6)))
    x = np.zeros(n, dtype=np.int64)
    for size in SIZES:
        cumulative = np.cumsum(rng.dirichlet(np.full(size, 0.5), size=6), axis=1)[classes]
        x = x * (size + 1) + np.minimum((rng.random(n)[:, None] > cumulative).sum(axis=1), size - 1)
    return np.bincount(x, minlength=DOMAIN.cells).astype(np.int64)


def workload(seed: int) -> list[np.ndarray]:
    """Masks of `dept IN (...) [AND region = r] [AND age BETWEEN a AND b]` (public randomness)."""
    rng = np.random.default_rng(seed)
    masks = []
    for _ in range(QUERIES):
        dept = np.zeros(SIZES[0] + 1, dtype=bool)
        dept[rng.choice(SIZES[0], size=int(rng.integers(1, SIZES[0] + 1)), replace=False)] = True
        region = np.ones(SIZES[1] + 1, dtype=bool)
        if rng.random() < 0.7:
            region[:] = False
            region[int(rng.integers(SIZES[1]))] = True
        age = np.ones(SIZES[2] + 1, dtype=bool)
        if rng.random() < 0.7:
            lo = int(rng.integers(SIZES[2]))
            age[:] = False
            age[lo:int(rng.integers(lo, SIZES[2])) + 1] = True
        masks.append(np.einsum("i,j,k->ijk", dept, region, age).reshape(-1))
    return masks


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, list[np.ndarray]]:
    return people(10**6, seed=18), workload(seed=18)


def within(core: LayerCore, counts: np.ndarray, masks: list[np.ndarray]) -> tuple[int, dict[str, int]]:
    """Queries answered within A by the layer alone (a halted layer answers nothing more)."""
    good, kinds = 0, {"easy": 0, "hard": 0, "repeat": 0, "measured": 0}
    for mask in masks:
        shape = QueryShape(mask)
        release = core.answer(shape)
        if release is None:
            break
        kinds[release.kind] += 1
        good += abs(int(release.values[0]) - int(counts[mask].sum())) <= ACCURACY
    return good, kinds


def plan(**kwargs: object):  # type: ignore[no-untyped-def]
    return plan_layer(mode="zcdp", epsilon=Fraction(3, 10), delta=Fraction(1, 10**6), accuracy=Fraction(ACCURACY),
                      sensitivity=1, sizes=DOMAIN.sizes, **kwargs)  # type: ignore[arg-type]


def test_the_chosen_strategy_answers_the_workload(data: tuple[np.ndarray, list[np.ndarray]]) -> None:
    counts, masks = data
    chosen = plan()
    assert chosen.strategy == "identity"  # |X| = 480 is small next to (A * epsilon)^2 here
    good, kinds = within(LayerCore(chosen, DOMAIN, SecretHistogram(counts), SeededRandomSource(1)), counts, masks)
    assert good >= 0.9 * QUERIES, (good, kinds)


def test_pmw_with_warm_start_and_updates_answers_the_workload(data: tuple[np.ndarray, list[np.ndarray]]) -> None:
    counts, masks = data
    forced = plan(strategy="pmw", expected_queries=QUERIES)
    assert forced.measurement == "histogram"  # a third of the reservation already resolves a half-domain query
    core = LayerCore(forced, DOMAIN, SecretHistogram(counts), SeededRandomSource(2))
    good, kinds = within(core, counts, masks)
    assert good >= 0.9 * QUERIES, (good, kinds, forced.calibration.cap)


def test_no_warm_start_and_no_updates_falls_short(data: tuple[np.ndarray, list[np.ndarray]]) -> None:
    counts, masks = data
    forced = plan(strategy="pmw", warm_start=False)
    core = LayerCore(forced, DOMAIN, SecretHistogram(counts), SeededRandomSource(3), warm_start=False, learn=False)
    good, kinds = within(core, counts, masks)
    assert core.halted and good < 0.5 * QUERIES, (good, kinds)

"""Monte-Carlo privacy audit of the whole Median Mechanism layer (docs/mechanisms.md, "The Median Mechanism layer"; attack A15).

Two small databases that differ by one person (one row, max_rows = 1, so Δ = 1) run through the
real `LayerCore` (candidates, repeat cache, sparse vector, fresh answer noise, transcript) on an
adaptive query stream: query i+1 is chosen from the answer to query i. The output is the public
transcript (easy/hard bits and released values).

Set-up, chosen for power (any public choice is private): X = 2 columns x 4 values (+ NULL cells),
D = 100 rows in each of the 16 non-NULL cells plus K = 10 more in cell 0, D' = D minus one row of
cell 0. A public model, uniform over the 16 cells, and a fixed public size n̂ = 1600 (a
data-independent constant, so no size release), so the median of every query is 100·|cells|
and every query below contains cell 0: e(D) = K and e(D') = K − 1 for all of them. Threshold
T = K; cap c = 1 (pure mode: the first hard answer halts the layer).

Hypothesis for the correct build (ε-DP, or (ε, δ) in zCDP mode): for every event S,
P_D(S) <= e^ε P_D'(S) + δ and the same with D, D' swapped. Events are fixed in advance: the
prefix events "the first j answers are all easy" (j = 1..8) and "the first hard answer comes at
position j"; their probabilities depend on the sparse vector's outputs only, so the bound for them
is ε_svt (stronger than the layer's total). Plus events on the released values with the layer's
total ε. Each event is tested with one-sided Clopper–Pearson bounds at level 0.05 / (number of
comparisons) (Bonferroni), so a correct build fails the test with probability <= 5% in total; the
seeds are fixed, so the outcome is deterministic.

Negative controls (Lyu, Su, Li 2017) must be caught:
* no threshold noise (their Alg. 5, Stoddard et al.): the pure mode needs one threshold draw;
  without it the prefix events separate D and D' far beyond ε_svt;
* a median computed from the data (the easy answer is the true count): the released values
  separate D and D' completely;
* the test's noise reused in the released hard answer (their Alg. 3 releases q + ν): the hard
  answers' noise must be a fresh draw with the accounted law whatever the test did; a chi-square
  test of the released errors against that law (p < 1e-6) catches the reuse, which the likelihood
  events cannot see at Monte-Carlo sample sizes (the reuse leaks only on rare events).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpsql.mechanisms.median_mechanism.core import LayerCore, SecretHistogram
from dpsql.mechanisms.median_mechanism.domain import QueryShape
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.mechanisms.sparse_vector import SparseVector, SVTCalibration, calibrate
from tests.unit.mechanisms.median_mechanism.support import tiny_domain

pytestmark = pytest.mark.statistical

DOMAIN = tiny_domain(4, 4)
CELLS = [x for x in range(DOMAIN.cells) if DOMAIN.codes(0)[x] < 4 and DOMAIN.codes(1)[x] < 4]
K = 10
QUERIES = 8
N_HAT = 1600
EPSILON = Fraction(4)
DELTA = Fraction(1, 10**6)


def databases() -> tuple[np.ndarray, np.ndarray]:
    h = np.zeros(DOMAIN.cells, dtype=np.int64)
    h[CELLS] = 100
    h[CELLS[0]] += K
    neighbour = h.copy()
    neighbour[CELLS[0]] -= 1
    return h, neighbour


def stream_masks() -> list[np.ndarray]:
    """Distinct masks that all contain cell 0 (so no query of a run is a repeat)."""
    rng = np.random.default_rng(0)
    masks, seen = [], set()
    while len(masks) < 64:
        chosen = tuple(sorted(rng.choice(CELLS[1:], size=int(rng.integers(1, 8)), replace=False)))
        if chosen not in seen:
            seen.add(chosen)
            mask = np.zeros(DOMAIN.cells, dtype=bool)
            mask[[CELLS[0], *chosen]] = True
            masks.append(mask)
    return masks


SHAPES = [QueryShape(m) for m in stream_masks()]
UNIFORM = np.full(DOMAIN.cells, 1e-12)
UNIFORM[CELLS] = 1.0
UNIFORM /= UNIFORM.sum()


def calibration(mode: str, threshold: int = K) -> SVTCalibration:
    return calibrate(mode=mode, epsilon=EPSILON, delta=DELTA if mode == "zcdp" else Fraction(0),  # type: ignore[arg-type]
                     accuracy=Fraction(100), sensitivity=1, cap=1, threshold=threshold)


# --- the builds ------------------------------------------------------------------------------


class NoThresholdNoise(SparseVector):
    """Negative control: the mode requires threshold noise; this draws none (Lyu et al. Alg. 5)."""

    __slots__ = ()

    def _draw_threshold_noise(self) -> int:
        return 0


class ReusedNoise(SparseVector):
    """Negative control, part 1: remembers the test's query noise so the answer can reuse it."""

    __slots__ = ("last",)

    def _draw_query_noise(self) -> int:
        self.last = super()._draw_query_noise()
        return self.last


class ReusedNoiseCore(LayerCore):
    """Negative control, part 2: the hard answer is f(D) + ν_i, the test's noise (Lyu et al. Alg. 3)."""

    def answer(self, shape: QueryShape):  # type: ignore[no-untyped-def]
        import dpsql.mechanisms.median_mechanism.core as core_module

        original = core_module.answer_noise
        core_module.answer_noise = lambda cal, rng: self._svt.last  # type: ignore[assignment]
        try:
            return super().answer(shape)
        finally:
            core_module.answer_noise = original


class DataMedianCore(LayerCore):
    """Negative control: the model's answer is the true count, computed from the data."""

    def answer(self, shape: QueryShape):  # type: ignore[no-untyped-def]
        truth = shape.totals(self._data._counts).astype(np.int64)
        self.model.answer = lambda _shape: truth  # type: ignore[method-assign]
        return super().answer(shape)


def build(h: np.ndarray, seed: int, mode: str = "pure", svt: type[SparseVector] = SparseVector,
          core: type[LayerCore] = LayerCore, threshold: int = K) -> LayerCore:
    rng = SeededRandomSource(seed)
    layer = core(calibration(mode, threshold), DOMAIN, SecretHistogram(h), rng, n_hat=N_HAT)
    if svt is not SparseVector:
        layer._svt = svt(layer.calibration, rng)
    layer.model.w[:] = UNIFORM
    return layer


def transcript(layer: LayerCore) -> tuple[str, tuple[int, ...]]:
    """Run the adaptive stream; the easy/hard pattern and the released values (relative to 100·|cells|)."""
    pattern, values, position = [], [], 0
    for _ in range(QUERIES):
        shape = SHAPES[position]
        release = layer.answer(shape)
        if release is None:
            break
        pattern.append(release.kind[0])
        value = int(release.values[0]) - 100 * len(shape.cells)
        values.append(value)
        position = (position + 1 + (int(release.values[0]) % 3)) % len(SHAPES)  # adaptive: next query from this answer
    return "".join(pattern), tuple(values)


def sample(runs: int, make: Callable[[np.ndarray, int], LayerCore], base_seed: int) -> tuple[list, list]:
    h, neighbour = databases()
    first = [transcript(make(h, base_seed + i)) for i in range(runs)]
    second = [transcript(make(neighbour, base_seed + 10**7 + i)) for i in range(runs)]
    return first, second


# --- events and bounds -----------------------------------------------------------------------

def prefix_events() -> dict[str, Callable[[tuple[str, tuple[int, ...]]], bool]]:
    events: dict[str, Callable[[tuple[str, tuple[int, ...]]], bool]] = {}
    for j in range(1, QUERIES + 1):
        events[f"first {j} easy"] = lambda t, j=j: t[0][:j] == "e" * j
        events[f"first hard at {j}"] = lambda t, j=j: t[0][:j] == "e" * (j - 1) + "h"
    return events


def value_events() -> dict[str, Callable[[tuple[str, tuple[int, ...]]], bool]]:
    events: dict[str, Callable[[tuple[str, tuple[int, ...]]], bool]] = {}
    for v in range(K - 3, K + 3):
        events[f"first answer = median + {v}"] = lambda t, v=v: bool(t[1]) and t[1][0] == v
    events["hard answer >= median + K"] = lambda t: "h" in t[0] and t[1][t[0].index("h")] >= K
    return events


def lower(hits: int, runs: int, alpha: float) -> float:
    return float(stats.beta.ppf(alpha, hits, runs - hits + 1)) if hits > 0 else 0.0


def upper(hits: int, runs: int, alpha: float) -> float:
    return float(stats.beta.ppf(1 - alpha, hits + 1, runs - hits)) if hits < runs else 1.0


def epsilon_lower_bound(first: list, second: list, events: dict, delta: float = 0.0, comparisons: int = 1) -> tuple[float, str]:
    """The largest certified log((P_D(S) − δ) / P_D'(S)) over events and both directions."""
    alpha = 0.05 / comparisons
    best, where = -math.inf, ""
    for name, event in events.items():
        a = sum(map(event, first))
        b = sum(map(event, second))
        for x, y, label in ((a, b, "D/D'"), (b, a, "D'/D")):
            lo, hi = lower(x, len(first), alpha) - delta, upper(y, len(first), alpha)
            if lo > 0:
                bound = math.log(lo / hi)
                if bound > best:
                    best, where = bound, f"{name} {label}: {x} vs {y}"
    return best, where


def comparisons(*families: dict) -> int:
    return 2 * sum(len(f) for f in families)


RUNS = 12_000


@pytest.fixture(scope="module")
def correct_pure() -> tuple[list, list]:
    return sample(RUNS, lambda h, s: build(h, s), 1)


def test_correct_build_satisfies_the_inequality(correct_pure: tuple[list, list]) -> None:
    first, second = correct_pure
    eps_svt = float(calibration("pure").epsilon_svt)
    n = comparisons(prefix_events(), value_events())
    bound, where = epsilon_lower_bound(first, second, prefix_events(), comparisons=n)
    assert bound <= eps_svt, where  # patterns: the sparse vector's own budget
    bound, where = epsilon_lower_bound(first, second, value_events(), comparisons=n)
    assert bound <= float(EPSILON), where
    # The stream exercises both outcomes: the audit is not vacuous.
    patterns = Counter(t[0] for t in first)
    assert patterns["h"] > 500 and patterns["e" * QUERIES] > 50


def test_zcdp_build_satisfies_the_epsilon_delta_inequality() -> None:
    first, second = sample(6000, lambda h, s: build(h, s, mode="zcdp"), 3)
    n = comparisons(prefix_events(), value_events())
    for events in (prefix_events(), value_events()):
        bound, where = epsilon_lower_bound(first, second, events, delta=float(DELTA), comparisons=n)
        assert bound <= float(EPSILON), where


def test_no_threshold_noise_is_caught() -> None:
    first, second = sample(RUNS, lambda h, s: build(h, s, svt=NoThresholdNoise), 5)
    eps_svt = float(calibration("pure").epsilon_svt)
    bound, where = epsilon_lower_bound(first, second, prefix_events(), comparisons=comparisons(prefix_events()))
    assert bound > eps_svt + 0.5, where


def test_median_from_the_data_is_caught() -> None:
    first, second = sample(1500, lambda h, s: build(h, s, core=DataMedianCore), 7)
    bound, where = epsilon_lower_bound(first, second, value_events(), comparisons=comparisons(value_events()))
    assert bound > float(EPSILON) + 1, where


def hard_errors(make: Callable[[np.ndarray, int], LayerCore], runs: int, seed: int) -> list[int]:
    h, _ = databases()
    errors = []
    for i in range(runs):
        pattern, values = transcript(make(h, seed + i))
        if "h" in pattern:
            errors.append(values[pattern.index("h")] - K)  # released − f(D): the hard answer's noise
    return errors


def fresh_noise_pvalue(errors: list[int]) -> float:
    """Chi-square of hard-answer noise against the accounted law: discrete Laplace, scale cΔ/ε_ans.

    Bins <= -2, -1, 0, 1, >= 2, with the exact pmf (1 − p)/(1 + p) · p^|x|, p = exp(−1/scale).
    """
    scale = calibration("pure").answer_scale
    assert scale is not None
    p = math.exp(-1 / float(scale))
    point = [(1 - p) / (1 + p) * p ** abs(x) for x in (-1, 0, 1)]
    tail = p**2 / (1 + p)
    expected = np.array([tail, *point, tail]) * len(errors)
    observed = np.array([sum(x <= -2 for x in errors), *[sum(x == v for x in errors) for v in (-1, 0, 1)],
                         sum(x >= 2 for x in errors)])
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue)


def test_hard_answers_use_fresh_noise_and_reuse_is_caught() -> None:
    correct = hard_errors(lambda h, s: build(h, s), 2500, 11)
    reused = hard_errors(lambda h, s: build(h, s, svt=ReusedNoise, core=ReusedNoiseCore), 2500, 11)
    assert len(correct) > 1000 and len(reused) > 1000
    assert fresh_noise_pvalue(correct) > 1e-4
    assert fresh_noise_pvalue(reused) < 1e-6

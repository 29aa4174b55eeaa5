"""TRIMMED_MEAN (mechanisms/trimmed_mean.py): an (epsilon, 0) audit on neighbours and the 95%
interval's coverage, each with a negative control.

The spec is the planner's, for `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1)
TRIMMED_MEAN(age, 0.25) FROM people` on the demo policy (k = max_rows = 3, age in [18, 90] on its
unit grid: the engine's histogram of age is the count of each age, built here directly).

1. Audit. Events S = {estimate >= t}, t fixed in advance from the exact data; for (1, 0)-DP,
   P_D(S) <= e P_D'(S) and the reverse. With N runs per side and Clopper-Pearson bounds at
   1 - 2.5e-7 each, a correct mechanism fails with probability <= 1e-6. Two neighbour pairs:
   - the sum: D' = 1,000 rows at 40 and 1,000 at 60 (a window of [40, 60] almost surely), D adds a
     person with 3 rows at 60, the window's edge, where the sum's sensitivity is spent. Control:
     the sum's and the count's noise divided by 50: the outputs separate and the audit fails;
   - the window: D' = 749 rows at 40 and 251 at 90, D adds a person with 3 rows at 90: the exact
     75% quantile jumps from 40 to 90. Control: the window taken from the exact quantiles (the data
     directly, unpaid) instead of the two exponential-mechanism releases: the answer jumps with it
     and the audit fails. The mechanism itself passes both pairs.
2. Coverage. N = 2,000 seeded releases on the demo's ages (generate_people(3000)); the interval
   must hold the exact mean of the values inside the released window in at least B = the 1e-6
   quantile of Binomial(N, 0.95) runs. Control: the interval from the sum's and the count's 50%
   half-widths (a mis-stated level) covers far less often and fails the check.
"""

from __future__ import annotations

import math
import tomllib
from collections import Counter
from collections.abc import Callable
from fractions import Fraction

import pytest
from scipy import stats

from dpsql.analysis.context import AnalysisContext
from dpsql.catalog.loader import policy_from_dict
from dpsql.demo.people import generate_people, policy_text
from dpsql.execution.compiled import CompiledQuery, compile_statement
from dpsql.mechanisms import laplace, trimmed_mean
from dpsql.mechanisms.laplace import LaplaceSpec
from dpsql.mechanisms.ranks import Histogram, quantile_rank
from dpsql.mechanisms.rng import RandomSource, SeededRandomSource
from dpsql.mechanisms.trimmed_mean import Draw, TrimmedMeanSpec, bracket, draw, in_window

pytestmark = pytest.mark.statistical

RUNS = 2_000
ALPHA = 2.5e-7
SQL = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) TRIMMED_MEAN(age, 0.25) FROM people"

Mechanism = Callable[[TrimmedMeanSpec, Histogram, RandomSource], Draw]


def spec() -> TrimmedMeanSpec:
    policy = policy_from_dict(tomllib.loads(policy_text(None)))
    _, compiled = compile_statement(SQL, None, AnalysisContext(policy, policy.budget.default_query))
    assert isinstance(compiled, CompiledQuery)
    found = compiled.plan.robust[0].spec
    assert isinstance(found, TrimmedMeanSpec) and found.epsilon == 1 and found.max_rows == 3
    return found


def histogram(counts: dict[int, int]) -> Histogram:
    return Histogram.from_counts(list(counts.items()))


def value(s: TrimmedMeanSpec, hist: Histogram, rng: RandomSource, mechanism: Mechanism) -> float:
    return float(bracket(s, mechanism(s, hist, rng)).value)


def exact(hist: Histogram, low: int, high: int) -> Fraction:
    """The mean of the values in [low, high] (the estimate's target given that window)."""
    rows = [(v, hist.count(i)) for i, v in enumerate(hist.values) if low <= v <= high]
    return Fraction(sum(v * c for v, c in rows), sum(c for _, c in rows))


def lower(hits: int, n: int) -> float:
    return 0.0 if hits == 0 else float(stats.beta.ppf(ALPHA, hits, n - hits + 1))


def upper(hits: int, n: int) -> float:
    return 1.0 if hits == n else float(stats.beta.ppf(1 - ALPHA, hits + 1, n - hits))


def violated(s: TrimmedMeanSpec, d: Histogram, d2: Histogram, threshold: float, mechanism: Mechanism = draw) -> bool:
    """Whether the audit finds P_D(S) > e^eps P_D'(S) (or the reverse, or for the complement)."""
    rng_d, rng_d2 = SeededRandomSource(1), SeededRandomSource(2)
    hits_d = sum(value(s, d, rng_d, mechanism) >= threshold for _ in range(RUNS))
    hits_d2 = sum(value(s, d2, rng_d2, mechanism) >= threshold for _ in range(RUNS))
    bound = math.exp(float(trimmed_mean.cost(s).epsilon))
    return (lower(hits_d, RUNS) > bound * upper(hits_d2, RUNS)
            or lower(RUNS - hits_d2, RUNS) > bound * upper(RUNS - hits_d, RUNS)
            or lower(hits_d2, RUNS) > bound * upper(hits_d, RUNS)
            or lower(RUNS - hits_d, RUNS) > bound * upper(RUNS - hits_d2, RUNS))


# --- the audit: the sum's pair ----------------------------------------------------------------------------

SUM_D2 = {40: 1000, 60: 1000}
SUM_D = {40: 1000, 60: 1003}
SUM_T = float((exact(histogram(SUM_D), 40, 60) + exact(histogram(SUM_D2), 40, 60)) / 2)


class _QuietSpec(TrimmedMeanSpec):
    """A broken spec: the sum's and the count's noise 50 times too small."""

    @property
    def total(self) -> LaplaceSpec:
        return LaplaceSpec(Fraction(self.max_rows * trimmed_mean.STEPS) / 50, self.part)

    @property
    def count(self) -> LaplaceSpec:
        return LaplaceSpec(Fraction(self.max_rows) / 50, self.part)


def test_epsilon_audit_on_the_sums_neighbours() -> None:
    assert not violated(spec(), histogram(SUM_D), histogram(SUM_D2), SUM_T)


def test_negative_control_fifty_times_less_noise_is_caught() -> None:
    s = spec()
    quiet = _QuietSpec(s.epsilon, s.p, s.max_rows, s.lower, s.upper)
    assert violated(quiet, histogram(SUM_D), histogram(SUM_D2), SUM_T)


# --- the audit: the window's pair -------------------------------------------------------------------------

WINDOW_D2 = {40: 750, 90: 250}
WINDOW_D = {40: 750, 90: 253}
WINDOW_T = 45.0  # between the narrow window's mean (40) and the wide one's (about 52.6)


def data_window(s: TrimmedMeanSpec, hist: Histogram, rng: RandomSource) -> Draw:
    """A broken draw: the window from the exact quantiles (the data directly), the rest as released."""
    low, high = (int(hist.at(quantile_rank(hist.n, q.p))) for q in s.quantiles)
    exact_total, exact_count = in_window(hist, low, high)
    return Draw(low, high, laplace.release(s.total, exact_total, rng), laplace.release(s.count, exact_count, rng))


def test_the_windows_neighbours_move_the_exact_quantile() -> None:
    s = spec()
    assert data_window(s, histogram(WINDOW_D2), SeededRandomSource(0)).high == 40
    assert data_window(s, histogram(WINDOW_D), SeededRandomSource(0)).high == 90


def test_epsilon_audit_on_the_windows_neighbours() -> None:
    assert not violated(spec(), histogram(WINDOW_D), histogram(WINDOW_D2), WINDOW_T)


def test_negative_control_a_window_from_the_data_is_caught() -> None:
    assert violated(spec(), histogram(WINDOW_D), histogram(WINDOW_D2), WINDOW_T, mechanism=data_window)


# --- coverage ----------------------------------------------------------------------------------------------


def coverage(level: float = 1 - 0.05 / 2) -> int:
    s = spec()
    ages = Counter(int(a) for a in generate_people(3000, seed=7).age if 18 <= a <= 90)
    hist = histogram(dict(ages))
    rng = SeededRandomSource(11)
    covered = 0
    for _ in range(RUNS):
        drawn = draw(s, hist, rng)
        interval = bracket(s, drawn, level)
        covered += interval.low <= exact(hist, drawn.low, drawn.high) <= interval.high
    return covered


def required() -> int:
    return int(stats.binom.ppf(1e-6, RUNS, 0.95))


def test_interval_covers_the_in_window_mean() -> None:
    assert coverage() >= required()


def test_negative_control_an_interval_at_the_half_level_undercovers() -> None:
    assert coverage(level=0.5) < required()

"""The fine-grid exponential mechanism (dpsql/mechanisms/window_exponential.py): the window gives the
exact clipped scores, the sampler is exactly proportional to rho^score, an exhaustive neighbour-graph
audit of its (epsilon, 0) claim, and the 95% interval's coverage. Each with a negative control.

Fixed seeds everywhere; distribution checks are chi-square tests at level 1e-6 (a correct sampler
fails one with probability 1e-6, deterministically here).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator
from fractions import Fraction

import pytest
from scipy import stats

from dpsql.accounting.cost import PrivacyCost
from dpsql.mechanisms import registry
from dpsql.mechanisms import window_exponential as we
from dpsql.mechanisms.ranks import CountedWindows, Histogram, WindowedOrderStatistics, quantile_rank
from dpsql.mechanisms.rng import SeededRandomSource

LEVEL = 1e-6
PS = (Fraction(1, 2), Fraction(1, 4), Fraction(3, 4), Fraction(9, 10), Fraction(1, 100), Fraction(1, 3), Fraction(0), Fraction(1))


class _Clipped(we.WindowQuantileSpec):
    """A spec with a small clip, so that windows are much narrower than the data."""

    __slots__ = ()
    small_clip = 0

    @property
    def clip(self) -> int:
        return type(self).small_clip


def _spec_with_clip(spec: we.WindowQuantileSpec, clip: int) -> we.WindowQuantileSpec:
    cls = type("Clip", (_Clipped,), {"small_clip": clip})
    return cls(spec.epsilon, spec.p, spec.max_rows, spec.lower, spec.upper, spec.offset, spec.anchor)  # type: ignore[no-any-return]


def _flat(pieces: list[tuple[int, int, int]]) -> list[int]:
    out: list[int] = []
    for _, length, score in pieces:
        out += [score] * length
    return out


def _random_case(rng: random.Random) -> tuple[we.WindowQuantileSpec, list[int]]:
    low = rng.randint(-5, 5)
    high = low + rng.randint(0, 30)
    values = sorted(rng.randint(low, high) if rng.random() < 0.7 else rng.choice([low, high, (low + high) // 2])
                    for _ in range(rng.randint(0, 40)))
    spec = we.WindowQuantileSpec(Fraction(rng.choice([1, 5, 20, 50]), 10), rng.choice(PS), rng.randint(1, 3), low, high,
                                 rng.randint(-8, 8), rng.randint(0, 30))
    return _spec_with_clip(spec, rng.randint(0, 40)), values


def _windowed(spec: we.WindowQuantileSpec, values: list[int]) -> WindowedOrderStatistics:
    """Only the ranks centre -+ reach, as the engine returns them (no other rank can be read)."""
    n, ordered = len(values), sorted(values)
    first, last = max(1, spec.centre(n) - spec.reach), min(n, spec.centre(n) + spec.reach)
    return WindowedOrderStatistics(n, ((first, tuple(ordered[first - 1:last])),) if first <= last else ())


def test_the_window_gives_every_candidates_clipped_score_exactly() -> None:
    # Random data with heavy ties at the bounds and the middle, every p (MIN/MAX too), offsets, and clips
    # small enough that the window covers a few ranks only: the runs must equal min(U, T) computed from all rows.
    rng = random.Random(5)
    for _ in range(3000):
        spec, values = _random_case(rng)
        brute = we.brute_scores(spec, values)
        for order_statistics in (_windowed(spec, values), WindowedOrderStatistics.full(values), Histogram.of(values)):
            pieces = we.runs(spec, order_statistics)
            assert [start for start, _, _ in pieces] == sorted(start for start, _, _ in pieces)
            assert _flat(pieces) == brute, (values, spec)


def test_control_a_window_narrower_than_the_clip_needs_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Negative control: reading R - 3 ranks instead of R = ceil(T / b) + 1 makes some scores wrong
    # (or asks for a rank the window does not hold).
    monkeypatch.setattr(we.WindowQuantileSpec, "reach", property(lambda s: max(0, -(-s.clip // s.scale) - 2)))
    rng = random.Random(5)
    wrong = 0
    for _ in range(600):
        spec, values = _random_case(rng)
        try:
            wrong += _flat(we.runs(spec, _windowed(spec, values))) != we.brute_scores(spec, values)
        except LookupError:
            wrong += 1
    assert wrong > 0


def _probabilities(spec: we.WindowQuantileSpec, values: list[int], rho: float | None = None) -> list[float]:
    base = float(spec.rho) if rho is None else rho
    weights = [base ** score for score in we.brute_scores(spec, values)]
    total = sum(weights)
    return [w / total for w in weights]


@pytest.mark.parametrize("values,spec", [
    ([3, 3, 4, 7, 7, 7, 8, 12, 15, 15], we.WindowQuantileSpec(Fraction(1, 2), Fraction(1, 2), 1, 0, 19)),
    ([0, 0, 1, 5, 5, 5, 5, 9, 19, 19, 19], we.WindowQuantileSpec(Fraction(3), Fraction(1, 4), 2, 0, 19, -2)),
    ([], we.WindowQuantileSpec(Fraction(3), Fraction(1, 4), 2, 0, 19)),
    ([4] * 30, we.WindowQuantileSpec(Fraction(1, 20), Fraction(9, 10), 1, 0, 200, 3)),
    ([1, 2, 2, 9], we.WindowQuantileSpec(Fraction(2), Fraction(0), 1, 0, 12, 0, 2)),
    ([1, 2, 2, 9, 9, 11], we.WindowQuantileSpec(Fraction(2), Fraction(1), 2, 0, 12, -1, 2)),
])
@pytest.mark.statistical
def test_the_sampler_is_exactly_proportional_to_rho_to_the_clipped_score(values: list[int], spec: we.WindowQuantileSpec) -> None:
    expected = _probabilities(spec, values)
    draws = 30000
    for source in (WindowedOrderStatistics.full(values), Histogram.of(values)):
        rng = SeededRandomSource(7)
        counts = [0] * spec.candidates
        for _ in range(draws):
            counts[we.sample(spec, source, rng) - spec.lower] += 1
        keep = [i for i, p in enumerate(expected) if p * draws >= 5]
        chi = sum((counts[i] - draws * expected[i]) ** 2 / (draws * expected[i]) for i in keep)
        rest = draws - sum(counts[i] for i in keep)
        assert rest <= max(5.0, 10 * draws * (1 - sum(expected[i] for i in keep)))
        assert stats.chi2.sf(chi, max(1, len(keep) - 1)) > LEVEL, (counts, expected)


@pytest.mark.slow
def test_the_envelope_powers_are_upper_bounds() -> None:
    rho = we._rho(Fraction(1, 10), 27)
    upper = we._UpperPowers(rho.numerator, rho.denominator)
    for times in (0, 1, 2, 3, 17, 1000, 123457, 10**6):
        exact = rho ** times * 2**64
        assert exact <= upper(times) <= exact * (1 + Fraction(1, 2**40)) + 256  # an upper bound, and a tight one
    assert upper(10**9) >= 1 or rho ** (10**9) == 0


# --- exhaustive neighbour-graph audit ----------------------------------------------------------------------


def _datasets(domain: range, size: int) -> list[tuple[int, ...]]:
    return [c for n in range(size + 1) for c in itertools.combinations_with_replacement(domain, n)]


def _worst_ratio(k: int, p: Fraction, offset: int, rho: float | None = None, anchor: int = 0) -> float:
    """max over neighbouring (D, D + one person with up to k rows) and candidates of P[c | D] / P[c | D']."""
    domain = range(0, 5)
    spec = we.WindowQuantileSpec(Fraction(1), p, k, 0, 4, offset, anchor)
    worst = 1.0
    for base in _datasets(domain, 3):
        for person in _datasets(domain, k):
            if not person:
                continue
            a = _probabilities(spec, sorted(base), rho)
            b = _probabilities(spec, sorted(base + person), rho)
            worst = max(worst, max(max(x / y, y / x) for x, y in zip(a, b)))
    return worst


@pytest.mark.parametrize("p,offset,anchor", [(Fraction(1, 2), 0, 0), (Fraction(1, 4), -1, 0), (Fraction(3, 4), 2, 0),
                                             (Fraction(0), 0, 2), (Fraction(0), -1, 3), (Fraction(1), 0, 2), (Fraction(1), 1, 1)])
def test_every_neighbouring_pair_is_within_e_to_the_epsilon(p: Fraction, offset: int, anchor: int) -> None:
    # Exact output probabilities (the sampler is exactly proportional, tested above) over every data set of
    # at most 3 rows on 0..4 and every person of up to k = 2 rows: the privacy loss never exceeds epsilon = 1.
    assert _worst_ratio(2, p, offset, anchor=anchor) <= math.exp(1) * (1 + 1e-12)


def test_control_the_score_sensitivity_without_max_rows_is_caught() -> None:
    # Negative control: rho = exp(-eps / (2 max(a, b - a))) ignores that a person keeps k = 2 rows.
    assert _worst_ratio(2, Fraction(1, 2), 0, rho=math.exp(-1 / 2)) > math.exp(1) * 1.05


def test_control_min_with_the_quantile_sensitivity_is_caught() -> None:
    # Negative control: MIN's target min(2 r0, n) moves with n, so its sensitivity is 2k, not k.
    assert _worst_ratio(2, Fraction(0), 0, rho=math.exp(-1 / (2 * 2)), anchor=2) > math.exp(1) * 1.05


# --- the interval -----------------------------------------------------------------------------------------------


def _coverage(spec: we.QuantileIntervalSpec, values: list[int], releases: int, seed: int) -> int:
    order_statistics = WindowedOrderStatistics.full(values)
    n = len(values)
    rank = spec.main.centre(n)  # MIN/MAX: the r0-th smallest/largest value (the median of fewer than 2 r0)
    truth = sorted(values)[min(max(rank, 1), n) - 1]
    rng = SeededRandomSource(seed)
    covered = 0
    for _ in range(releases):
        out = we.release_interval(spec, order_statistics, rng)
        # The stated interval value -+ ci95 holds [low, high]; the claim is about [low, high] itself.
        covered += out.low <= truth <= out.high
    return covered


def _data(kind: str, rng: random.Random) -> list[int]:
    if kind == "lognormal":
        return [min(int(rng.lognormvariate(8, 1.0)), 100_000) for _ in range(3000)]
    if kind == "ties":  # integer ages: long runs of equal values around every quantile
        return [rng.randint(18, 90) for _ in range(3000)]
    return [0] * 1500 + [100_000] * 1500  # a gap around the median: the hardest case for a rank interval


@pytest.mark.statistical
@pytest.mark.parametrize("kind", ["lognormal", "ties", "gap"])
@pytest.mark.parametrize("p", [Fraction(1, 2), Fraction(9, 10), Fraction(0)])
def test_the_interval_holds_the_true_value_in_at_least_95_percent_of_releases(kind: str, p: Fraction) -> None:
    # H0: coverage >= 0.95. Reject if the one-sided binomial p-value of the observed count is below 1e-6.
    values = _data(kind, random.Random(3))
    spec = we.QuantileIntervalSpec(Fraction(1, 2), p, 1, 0, 100_000)
    releases = 200
    covered = _coverage(spec, values, releases, seed=11)
    assert stats.binom.cdf(covered, releases, 0.95) > LEVEL, (covered, releases)


@pytest.mark.statistical
def test_control_an_interval_without_room_for_the_rungs_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Negative control: mu = P (no ln(J / alpha) between a missing rung and the whole range) covers far
    # less than 95% when the median lies at the edge of a gap (rungs inside the gap all miss).
    monkeypatch.setattr(we.WidthSpec, "target_margin", property(lambda s: s.full_score))
    values = _data("gap", random.Random(3))
    spec = we.QuantileIntervalSpec(Fraction(1, 2), Fraction(1, 2), 1, 0, 100_000)
    releases = 200
    covered = _coverage(spec, values, releases, seed=11)
    assert stats.binom.cdf(covered, releases, 0.95) <= LEVEL, covered


# --- the width release: window scores, exact sampling, the neighbour graph --------------------------------------


class _SmallWidth(we.WidthSpec):
    """A width spec with a small target margin and clip, so that windows are much narrower than the data."""

    __slots__ = ()
    small: tuple[int, int] = (0, 1)

    @property
    def target_margin(self) -> int:
        return type(self).small[0]

    @property
    def clip(self) -> int:
        return type(self).small[1]


def _random_width_case(rng: random.Random) -> tuple[we.WidthSpec, list[int], int]:
    quantile, values = _random_case(rng)
    mu = rng.randint(0, 30)
    cls = type("Small", (_SmallWidth,), {"small": (mu, mu + 1 + rng.randint(0, 20))})
    spec = cls(quantile.epsilon, quantile.p, quantile.max_rows, quantile.lower, quantile.upper, quantile.anchor)
    return spec, values, rng.randint(quantile.lower, quantile.upper)


def _width_windowed(spec: we.WidthSpec, values: list[int]) -> WindowedOrderStatistics:
    n, ordered = len(values), sorted(values)
    centre = spec.quantile.centre(n)
    first, last = max(1, centre - spec.reach), min(n, centre + spec.reach)
    return WindowedOrderStatistics(n, ((first, tuple(ordered[first - 1:last])),) if first <= last else ())


def test_the_window_gives_every_rungs_width_score_exactly() -> None:
    # Random data (ties at the bounds and the middle), every p (MIN/MAX too), values anywhere in the range and
    # small target margins and clips: the scores read from ranks centre -+ reach equal those from all rows.
    rng = random.Random(8)
    for _ in range(3000):
        spec, values, value = _random_width_case(rng)
        brute = we.brute_width_scores(spec, value, values)
        for order_statistics in (_width_windowed(spec, values), WindowedOrderStatistics.full(values)):
            assert spec.scores(value, order_statistics) == brute, (values, value, spec)


def test_control_a_width_window_too_narrow_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Negative control: reading 3 ranks fewer than the reach makes some scores wrong (or asks for a missing rank).
    monkeypatch.setattr(we.WidthSpec, "reach", property(lambda s: max(0, -(-(s.target_margin + s.clip) // s.quantile.scale) - 1)))
    rng = random.Random(8)
    wrong = 0
    for _ in range(600):
        spec, values, value = _random_width_case(rng)
        try:
            wrong += spec.scores(value, _width_windowed(spec, values)) != we.brute_width_scores(spec, value, values)
        except LookupError:
            wrong += 1
    assert wrong > 0


def _width_probabilities(spec: we.WidthSpec, value: int, values: list[int], rho: float | None = None) -> list[float]:
    base = float(spec.quantile.rho) if rho is None else rho
    weights = [base ** score for score in we.brute_width_scores(spec, value, values)]
    return [w / sum(weights) for w in weights]


@pytest.mark.statistical
def test_the_width_draw_is_exactly_proportional_to_rho_to_the_score() -> None:
    # Chi-square goodness of fit of 20,000 draws against the exact probabilities (level 1e-6).
    values = [3, 3, 4, 7, 7, 7, 8, 12, 15, 15, 40, 41, 90]
    spec = we.WidthSpec(Fraction(1), Fraction(1, 2), 1, 0, 100)
    ends = [(max(0, 9 - w), min(100, 9 + w)) for w in spec.widths] + [(0, 100)]
    exact: dict[tuple[int, int], float] = {}
    for end, probability in zip(ends, _width_probabilities(spec, 9, values)):  # clamped rungs can coincide
        exact[end] = exact.get(end, 0.0) + probability
    rng = SeededRandomSource(3)
    counts = dict.fromkeys(exact, 0)
    for _ in range(20_000):
        counts[we.release_width(spec, 9, WindowedOrderStatistics.full(values), rng)] += 1
    keep = [end for end in exact if exact[end] * 20_000 >= 5]
    rest = [end for end in exact if end not in keep]
    observed = [counts[e] for e in keep] + [sum(counts[e] for e in rest)]
    wanted = [exact[e] * 20_000 for e in keep] + [sum(exact[e] for e in rest) * 20_000]
    assert stats.chisquare(observed, wanted).pvalue > LEVEL


def _worst_width_ratio(k: int, p: Fraction, rho: float | None = None, anchor: int = 0) -> float:
    """max over neighbouring (D, D + one person of up to k rows), values v and rungs of P[rung | D, v] / P[rung | D', v]."""
    domain = range(0, 5)
    spec = we.WidthSpec(Fraction(1), p, k, 0, 4, anchor)
    worst = 1.0
    for base in _datasets(domain, 3):
        for person in _datasets(domain, k):
            if not person:
                continue
            for value in domain:
                a = _width_probabilities(spec, value, sorted(base), rho)
                b = _width_probabilities(spec, value, sorted(base + person), rho)
                worst = max(worst, max(max(x / y, y / x) for x, y in zip(a, b)))
    return worst


@pytest.mark.slow
@pytest.mark.parametrize("p,anchor", [(Fraction(1, 2), 0), (Fraction(1, 4), 0), (Fraction(9, 10), 0), (Fraction(0), 2), (Fraction(1), 1)])
def test_the_width_draw_is_within_e_to_the_epsilon_on_every_neighbouring_pair(p: Fraction, anchor: int) -> None:
    # Exact probabilities given the released value v (public), every data set of at most 3 rows on 0..4 and
    # every person of up to k = 2 rows: the width release's privacy loss never exceeds epsilon = 1.
    assert _worst_width_ratio(2, p, anchor=anchor) <= math.exp(1) * (1 + 1e-12)


@pytest.mark.slow
def test_control_the_width_score_without_max_rows_is_caught() -> None:
    # Negative control: rho = exp(-eps / (2 max(a, b - a))) ignores that a person keeps k = 2 rows: the
    # loss exceeds epsilon (by 0.2%, far above float error; the correct rho stays at 1.70 < e).
    assert _worst_width_ratio(2, Fraction(1, 2), rho=math.exp(-1 / 2)) > math.exp(1) * (1 + 1e-9)


def test_iqr_is_always_in_range_and_its_interval_covers() -> None:
    rng = random.Random(9)
    source = SeededRandomSource(2)
    covered = releases = 0
    for _ in range(40):  # random data and epsilons (property test)
        values = sorted(rng.randint(0, 1000) if rng.random() < 0.8 else rng.choice([0, 1000]) for _ in range(rng.randint(0, 400)))
        spec = we.IQRIntervalSpec(Fraction(rng.choice([1, 10, 100, 1000]), 100), rng.randint(1, 3), 0, 1000)
        out = we.release_iqr(spec, WindowedOrderStatistics.full(values), source)
        assert 0 <= out.low <= out.high <= 1000 and 0 <= out.value <= 1000
        if values:
            n = len(values)
            truth = values[quantile_rank(n, Fraction(3, 4)) - 1] - values[quantile_rank(n, Fraction(1, 4)) - 1]
            half = max(out.value - out.low, out.high - out.value)
            covered += out.value - half <= truth <= out.value + half
            releases += 1
    assert stats.binom.cdf(covered, releases, 0.95) > LEVEL


def test_cost_is_the_whole_epsilon_and_never_delta() -> None:
    spec = we.QuantileIntervalSpec(Fraction(1, 10), Fraction(9, 10), 3, 0, 10**7)
    assert registry.cost(spec) == PrivacyCost(Fraction(1, 10), 0)
    assert spec.main.epsilon + spec.width.epsilon == Fraction(1, 10)
    iqr = we.IQRIntervalSpec(Fraction(1, 10), 3, 0, 10**7)
    assert registry.cost(iqr) == PrivacyCost(Fraction(1, 10), 0)
    assert sum(q.epsilon for q in iqr.quartiles) + iqr.widths[0].epsilon == Fraction(1, 10)
    assert iqr.widths[0].epsilon == iqr.widths[1].epsilon  # one draw, seen from each quartile
    assert registry.refusal(spec) is None and registry.refusal(iqr) is None


# --- IQR: one half-width for both quartiles --------------------------------------------------------------------


def _joint_case(rng: random.Random) -> tuple[tuple[we.WidthSpec, we.WidthSpec], list[int], int, int]:
    low = rng.randint(-5, 5)
    high = low + rng.randint(0, 30)
    values = sorted(rng.randint(low, high) if rng.random() < 0.7 else rng.choice([low, high, (low + high) // 2])
                    for _ in range(rng.randint(0, 40)))
    mu = rng.randint(0, 30)
    cls = type("Small", (_SmallWidth,), {"small": (mu, mu + 1 + rng.randint(0, 20))})
    epsilon, k = Fraction(rng.choice([1, 5, 20]), 10), rng.randint(1, 3)
    pair = (cls(epsilon, Fraction(1, 4), k, low, high), cls(epsilon, Fraction(3, 4), k, low, high))
    return pair, values, rng.randint(low, high), rng.randint(low, high)  # type: ignore[return-value]


def _joint_windowed(pair: tuple[we.WidthSpec, we.WidthSpec], values: list[int]) -> WindowedOrderStatistics:
    n, ordered = len(values), sorted(values)
    windows = []
    for spec in pair:
        centre = spec.quantile.centre(n)
        first, last = max(1, centre - spec.reach), min(n, centre + spec.reach)
        if first <= last:
            windows.append((first, tuple(ordered[first - 1:last])))
    return WindowedOrderStatistics(n, tuple(windows))


def test_the_windows_give_every_shared_rungs_score_exactly() -> None:
    # Random tied data, both quartiles' values anywhere: the shared half-width's scores read from the two rank
    # windows equal the tightest margin of the two intervals computed from all rows.
    rng = random.Random(12)
    for _ in range(2000):
        pair, values, first, third = _joint_case(rng)
        brute = we.brute_joint_width_scores(((pair[0], first), (pair[1], third)), values)
        for order_statistics in (_joint_windowed(pair, values), WindowedOrderStatistics.full(values)):
            assert pair[0].joint_scores(((pair[1], third),), first, order_statistics) == brute, (values, first, third)


def test_control_the_shared_rung_scored_on_one_quartile_is_caught() -> None:
    # Negative control: the first quartile's scores alone differ from the shared ones on some data (the third
    # quartile's interval is the tighter one there).
    rng = random.Random(12)
    differ = 0
    for _ in range(300):
        pair, values, first, third = _joint_case(rng)
        differ += pair[0].scores(first, WindowedOrderStatistics.full(values)) != \
            we.brute_joint_width_scores(((pair[0], first), (pair[1], third)), values)
    assert differ > 0


def _worst_joint_ratio(k: int, rho: float | None = None) -> float:
    """max over neighbouring (D, D + one person of up to k rows), quartile values and rungs of P[rung | D] / P[rung | D']."""
    domain = range(0, 5)
    pair = [we.WidthSpec(Fraction(1), q, k, 0, 4) for q in (Fraction(1, 4), Fraction(3, 4))]
    base_rho = float(pair[0].quantile.rho) if rho is None else rho

    def probabilities(first: int, third: int, data: list[int]) -> list[float]:
        weights = [base_rho ** s for s in we.brute_joint_width_scores(((pair[0], first), (pair[1], third)), data)]
        return [w / sum(weights) for w in weights]

    worst = 1.0
    for base in _datasets(domain, 3):
        for person in _datasets(domain, k):
            if not person:
                continue
            for first, third in itertools.product(domain, repeat=2):
                a, b = probabilities(first, third, sorted(base)), probabilities(first, third, sorted(base + person))
                worst = max(worst, max(max(x / y, y / x) for x, y in zip(a, b)))
    return worst


@pytest.mark.slow
def test_the_shared_width_draw_is_within_e_to_the_epsilon_on_every_neighbouring_pair() -> None:
    # Exact probabilities given both released quartiles (public), every data set of at most 3 rows on 0..4 and
    # every person of up to k = 2 rows: the shared width release's privacy loss never exceeds epsilon = 1.
    assert _worst_joint_ratio(2) <= math.exp(1) * (1 + 1e-12)


@pytest.mark.slow
def test_control_the_shared_width_without_max_rows_is_caught() -> None:
    # Negative control: rho for one row per person (k ignored) exceeds epsilon on some neighbouring pair.
    assert _worst_joint_ratio(2, rho=math.exp(-1 / (2 * 3))) > math.exp(1) * (1 + 1e-9)


def _counted_case(rng: random.Random) -> tuple[CountedWindows, list[int]]:
    """Sorted values with ties, read as one or two windows of distinct values and counts (the two-stage read)."""
    values = sorted(rng.choice([rng.randint(0, 12), rng.randint(0, 400)]) for _ in range(rng.randint(1, 60)))
    cuts = sorted(rng.sample(range(len(values) + 1), 2)) if len(values) > 2 else [0, len(values)]
    windows = []
    for start, stop in ((cuts[0], cuts[1]), (cuts[1], len(values))) if rng.random() < 0.5 else ((cuts[0], cuts[1]),):
        part = values[start:stop]
        if part:
            distinct = sorted(set(part))
            cumulative = tuple(itertools.accumulate(part.count(v) for v in distinct))
            windows.append((start, tuple(distinct), cumulative))
    return CountedWindows(len(values), tuple(windows)), values


def _window_cases(seed: int, count: int, first_window: bool = False) -> Iterator[tuple[CountedWindows, list[int], int, int]]:
    """(stats, values, below, size) of one window of each generated case that has a window."""
    rng = random.Random(seed)
    for _ in range(count):
        stats, values = _counted_case(rng)
        if stats.windows:
            below, _, cumulative = stats.windows[0 if first_window else rng.randrange(len(stats.windows))]
            yield stats, values, below, cumulative[-1]


def _generic_count_lt(monkeypatch: pytest.MonkeyPatch, stats: CountedWindows, value: int, first: int, last: int) -> int | None:
    with monkeypatch.context() as patch:
        patch.setattr(CountedWindows, "count_below", lambda *args: None)
        return we._count_lt(stats, value, first, last)


def test_counted_windows_count_below_equals_the_rank_search(monkeypatch: pytest.MonkeyPatch) -> None:
    # The one-bisection count of a window's distinct values gives what the binary search over ranks gives.
    rng = random.Random(12)
    fast_used = 0
    for counted, values, below, size in _window_cases(11, 3000):
        first = rng.randint(below + 1, below + size)
        last = rng.randint(first, below + size)
        value = rng.randint(-2, 402)
        fast_used += counted.count_below(value, first, last) is not None
        assert we._count_lt(counted, value, first, last) == _generic_count_lt(monkeypatch, counted, value, first, last)
        if counted.count_below(value, first, last) is not None:
            assert counted.count_below(value, first, last) == sum(v < value for v in values)
    assert fast_used > 100  # the fast path was exercised, not only the fallback


def test_control_an_off_by_ties_count_below_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Negative control: counting values <= the bound (bisect_right) differs from the search on ties.
    import bisect

    def wrong(self: CountedWindows, value: int, first: int, last: int) -> int | None:
        for below, distinct, cumulative in self.windows:
            if below < first and last <= below + cumulative[-1]:
                return below + cumulative[bisect.bisect_right(distinct, value) - 1]
        return None

    rng = random.Random(12)
    differ = 0
    for counted, values, below, size in _window_cases(11, 600, first_window=True):
        first, last = below + 1, below + size
        value = rng.choice(values)
        expected = _generic_count_lt(monkeypatch, counted, value, first, last)
        with monkeypatch.context() as patch:
            patch.setattr(CountedWindows, "count_below", wrong)
            differ += we._count_lt(counted, value, first, last) != expected
    assert differ > 0

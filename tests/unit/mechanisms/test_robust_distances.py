"""Exhaustive neighbour-graph checks of every PTR / A_samp distance (docs/mechanisms.md, the Propose-Test-Release test).

For every multiset over a small domain and every neighbour (one person with up to k rows added;
removal is the same edge read backwards), check
  (L) |d(x) - d(y)| <= 1, and
  (S) d(x) >= 1 or d(y) >= 1 implies the released statistic is stable on the pair
      (SMed: equal value; PTR-Laplace: |change| <= b; Scale: same log bin; A_samp: same winner),
plus a non-vacuity assertion (some pairs have d >= 1). The negative controls (s one too small,
the tie-count formula without the rank offset, A_samp normalised by T instead of 2T) must be
caught by the same checks: a check that cannot fail proves nothing.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from fractions import Fraction

import pytest

from dpsql.mechanisms import ptr, subsample
from dpsql.mechanisms.ranks import Histogram, WindowedOrderStatistics, quantile_rank, rank_shift
from dpsql.mechanisms.sampling import discrete_laplace_upper_tail

HALF, Q1, Q3 = Fraction(1, 2), Fraction(1, 4), Fraction(3, 4)
BIG_CAP = 50


def multisets(domain: tuple[int, ...], max_size: int) -> Iterator[tuple[int, ...]]:
    for size in range(max_size + 1):
        yield from itertools.combinations_with_replacement(domain, size)


def additions(domain: tuple[int, ...], k: int) -> list[tuple[int, ...]]:
    return [a for size in range(1, k + 1) for a in itertools.combinations_with_replacement(domain, size)]


def pairs(domain: tuple[int, ...], max_size: int, k: int) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(x, y) with y = x plus one person's 1..k rows; both directions of every add/remove edge."""
    extra = additions(domain, k)
    for x in multisets(domain, max_size):
        for rows in extra:
            yield x, tuple(sorted(x + rows))


def stats(values: tuple[int, ...]) -> WindowedOrderStatistics:
    return WindowedOrderStatistics.full(values)


def check_graph(
    domain: tuple[int, ...], max_size: int, k: int,
    distance: Callable[[tuple[int, ...]], int],
    stable: Callable[[tuple[int, ...], tuple[int, ...]], bool],
) -> tuple[list[tuple], int]:
    """(violations, number of pairs with a positive distance)."""
    cache: dict[tuple[int, ...], int] = {}

    def d(v: tuple[int, ...]) -> int:
        if v not in cache:
            cache[v] = distance(v)
        return cache[v]

    bad, positive = [], 0
    for x, y in pairs(domain, max_size, k):
        dx, dy = d(x), d(y)
        if abs(dx - dy) > 1:
            bad.append(("L", x, y, dx, dy))
        if dx >= 1 or dy >= 1:
            positive += 1
            if not stable(x, y):
                bad.append(("S", x, y, dx, dy))
    return bad, positive


def value_at(values: tuple[int, ...], p: Fraction) -> float:
    s = stats(values)
    return s.at(quantile_rank(s.n, p)) if values else math.nan


def same_quantile(p: Fraction) -> Callable[[tuple[int, ...], tuple[int, ...]], bool]:
    return lambda x, y: bool(x) and bool(y) and value_at(x, p) == value_at(y, p)


# --- SMed ---------------------------------------------------------------------------------------

ROW_DOMAIN = (0, 1, 2, 3, 5, 8, 13, 40)
PERSON_DOMAIN = (0, 1, 2, 5)


@pytest.mark.parametrize("p,domain,max_size", [(HALF, ROW_DOMAIN, 6), (Q1, ROW_DOMAIN, 6), (Q3, ROW_DOMAIN, 6),
                                              (Fraction(1, 10), (0, 1, 5), 24)])
@pytest.mark.parametrize("cap", [2, BIG_CAP])
def test_smed_rows_add_remove(p: Fraction, domain: tuple[int, ...], max_size: int, cap: int) -> None:
    s = rank_shift(1, p)
    bad, positive = check_graph(domain, max_size, 1, lambda v: ptr.smed_distance(stats(v), p, s, cap), same_quantile(p))
    assert not bad, bad[:5]
    assert positive > 100


@pytest.mark.parametrize("k,max_size,domain,p", [
    (2, 9, PERSON_DOMAIN, HALF), (3, 8, PERSON_DOMAIN, HALF),
    (2, 16, (0, 1, 5), Q1), (3, 16, (0, 1, 5), Q1), (2, 16, (0, 1, 5), Q3), (3, 16, (0, 1, 5), Q3),
])
def test_smed_persons(k: int, max_size: int, domain: tuple[int, ...], p: Fraction) -> None:
    s = rank_shift(k, p)
    bad, positive = check_graph(domain, max_size, k, lambda v: ptr.smed_distance(stats(v), p, s, BIG_CAP), same_quantile(p))
    assert not bad, bad[:5]
    assert positive > 50


def test_median_shift_is_one_for_two_rows() -> None:
    # The note's brute-force finding: k = 2 needs s = 1 for the median, not 2; k = 3 needs 2.
    assert rank_shift(2, HALF) == 1 and rank_shift(3, HALF) == 2
    assert rank_shift(2, Q1) == rank_shift(2, Q3) == 2 and rank_shift(3, Q3) == 3


def test_negative_control_smed_shift_one_too_small_at_k3_is_caught() -> None:
    bad, _ = check_graph(PERSON_DOMAIN, 8, 3, lambda v: ptr.smed_distance(stats(v), HALF, 1, BIG_CAP), same_quantile(HALF))
    assert bad


def test_negative_control_smed_tie_count_minus_one_is_caught() -> None:
    # "d = #ties - 1": the size of mu's tie block, ignoring where rank m sits inside it.
    def ties_minus_one(v: tuple[int, ...]) -> int:
        if not v:
            return 0
        mu = value_at(v, HALF)
        return max(0, v.count(mu) - 1)

    bad, _ = check_graph(ROW_DOMAIN, 6, 1, ties_minus_one, same_quantile(HALF))
    assert bad


def test_smed_tie_formula_matches_the_rank_search() -> None:
    for v in multisets(PERSON_DOMAIN, 9):
        if not v:
            continue
        for s in (1, 2, 3):
            m = quantile_rank(len(v), HALF)
            mu = v[m - 1]
            c_lt, c_le = sum(x < mu for x in v), sum(x <= mu for x in v)
            formula = min(-((c_lt - m) // s) - 1, (c_le - m) // s)
            assert ptr.smed_distance(stats(v), HALF, s, BIG_CAP) == formula, (v, s)


# --- PTR-Laplace ----------------------------------------------------------------------------------


def close_quantile(p: Fraction, bound: int) -> Callable[[tuple[int, ...], tuple[int, ...]], bool]:
    return lambda x, y: bool(x) and bool(y) and abs(value_at(x, p) - value_at(y, p)) <= bound


@pytest.mark.parametrize("bound", [1, 3, 10])
@pytest.mark.parametrize("k,max_size,domain", [(1, 6, ROW_DOMAIN), (2, 9, PERSON_DOMAIN), (3, 8, PERSON_DOMAIN)])
def test_ptr_laplace_distance(bound: int, k: int, max_size: int, domain: tuple[int, ...]) -> None:
    s = rank_shift(k, HALF)
    bad, positive = check_graph(domain, max_size, k, lambda v: ptr.ptr_laplace_distance(stats(v), HALF, s, Fraction(bound), BIG_CAP),
                                close_quantile(HALF, bound))
    assert not bad, bad[:5]
    assert positive > 50


def test_negative_control_ptr_laplace_shift_too_small_is_caught() -> None:
    bad, _ = check_graph(PERSON_DOMAIN, 8, 3, lambda v: ptr.ptr_laplace_distance(stats(v), HALF, 1, Fraction(1), BIG_CAP),
                         close_quantile(HALF, 1))
    assert bad


# --- Scale ---------------------------------------------------------------------------------------

QUARTILE_DOMAIN = (0, 1, 5)


def iqr(values: tuple[int, ...]) -> float:
    s = stats(values)
    return s.at(quantile_rank(s.n, Q3)) - s.at(quantile_rank(s.n, Q1))


def same_bin(base: float, offset: Fraction) -> Callable[[tuple[int, ...], tuple[int, ...]], bool]:
    def bin_of(v: tuple[int, ...]) -> object:
        if not v:
            return None
        value = iqr(v)
        return "zero" if value == 0 else ptr.log_bin(value, base, offset)

    return lambda x, y: bool(x) and bool(y) and bin_of(x) == bin_of(y)


@pytest.mark.parametrize("base", [2.0, 1.5])
@pytest.mark.parametrize("offset", [Fraction(0), Fraction(1, 2), Fraction(37, 100)])
def test_scale_rows(base: float, offset: Fraction) -> None:
    bad, positive = check_graph(ROW_DOMAIN, 6, 1, lambda v: ptr.scale_distance(stats(v), Q1, Q3, 1, base, offset, BIG_CAP),
                                same_bin(base, offset))
    assert not bad, bad[:5]
    assert positive > 50


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("offset", [Fraction(0), Fraction(1, 2)])
def test_scale_persons(k: int, offset: Fraction) -> None:
    s = rank_shift(k, Q3)
    bad, positive = check_graph(QUARTILE_DOMAIN, 16, k, lambda v: ptr.scale_distance(stats(v), Q1, Q3, s, 2.0, offset, BIG_CAP),
                                same_bin(2.0, offset))
    assert not bad, bad[:5]
    assert positive > 50


@pytest.mark.parametrize("k", [2, 3])
def test_negative_control_scale_shift_one_too_small_is_caught(k: int) -> None:
    s = rank_shift(k, Q3) - 1
    bad, _ = check_graph(QUARTILE_DOMAIN, 16, k, lambda v: ptr.scale_distance(stats(v), Q1, Q3, s, 2.0, Fraction(0), BIG_CAP),
                         same_bin(2.0, Fraction(0)))
    assert bad


def test_log_bins_partition_the_line() -> None:
    for base in (2.0, 1.5, 1.0037):
        for offset in (Fraction(0), Fraction(1, 2)):
            for value in (1e-9, 0.3, 1, 1.5, 2, 3, 1024, 12345.678, 1e12):
                k = ptr.log_bin(value, base, offset)
                assert ptr.log_edge(base, k, offset) <= value < ptr.log_edge(base, k + 1, offset)


# --- A_samp ----------------------------------------------------------------------------------------

LABELS = ("a", "b", "c", None)  # None: an empty subsample, which abstains


def vote_counts(vector: tuple) -> dict:
    counts: dict = {}
    for label in vector:
        if label is not None:
            counts[label] = counts.get(label, 0) + 1
    return counts


def vote_pairs(blocks: int, copies: int) -> Iterator[tuple[tuple, tuple]]:
    """Vectors of subsample modes, and every vector differing in at most T entries."""
    for x in itertools.product(LABELS, repeat=blocks):
        for changed in range(1, copies + 1):
            for where in itertools.combinations(range(blocks), changed):
                for new in itertools.product(LABELS, repeat=changed):
                    y = list(x)
                    for i, label in zip(where, new):
                        y[i] = label
                    if tuple(y) != x:
                        yield x, tuple(y)


def check_votes(blocks: int, copies: int, normaliser: int) -> tuple[list, int]:
    bad, positive = [], 0
    for x, y in vote_pairs(blocks, copies):
        vx, vy = vote_counts(x), vote_counts(y)
        dx, dy = subsample.vote_distance(vx, normaliser, BIG_CAP), subsample.vote_distance(vy, normaliser, BIG_CAP)
        if abs(dx - dy) > 1:
            bad.append(("L", x, y))
        if dx >= 1 or dy >= 1:
            positive += 1
            if subsample.winner(vx) != subsample.winner(vy):
                bad.append(("S", x, y))
    return bad, positive


@pytest.mark.parametrize("blocks,copies", [(6, 1), (5, 2)])
def test_asamp_distance_normalised_by_2t(blocks: int, copies: int) -> None:
    bad, positive = check_votes(blocks, copies, 2 * copies)
    assert not bad, bad[:5]
    assert positive > 100


@pytest.mark.parametrize("blocks,copies", [(6, 1), (5, 2)])
def test_negative_control_asamp_normalised_by_t_is_caught(blocks: int, copies: int) -> None:
    bad, _ = check_votes(blocks, copies, copies)
    assert bad


def test_asamp_spec_normaliser_is_2t() -> None:
    test = ptr.PTRTest(Fraction(1), Fraction(1, 10**6))
    assert subsample.ASampSpec(test, blocks=10, copies=3).normaliser == 6


# --- thresholds -------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps,delta,expected", [(1, Fraction(1, 10**6), 14), (Fraction(1, 2), Fraction(1, 10**6), 27),
                                                 (Fraction(1, 4), Fraction(1, 10**5), 44), (1, Fraction(1, 10**9), 21)])
def test_tau_matches_the_note_and_is_tight(eps: Fraction, delta: Fraction, expected: int) -> None:
    test = ptr.PTRTest(Fraction(eps), delta)
    tau = test.threshold
    assert tau == expected
    assert discrete_laplace_upper_tail(test.scale, tau) <= delta < discrete_laplace_upper_tail(test.scale, tau - 1)
    assert test.cap == tau + math.ceil(40 / Fraction(eps))


def test_grouped_test_splits_delta_over_groups() -> None:
    one, three = ptr.PTRTest(Fraction(1), Fraction(1, 10**6)), ptr.PTRTest(Fraction(1), Fraction(1, 10**6), groups=3)
    assert three.scale == 3
    assert 3 * discrete_laplace_upper_tail(three.scale, three.threshold) <= Fraction(1, 10**6)
    assert three.threshold > one.threshold


def test_negative_control_seed_scale_threshold_without_eps_leaks() -> None:
    # Alg. 12 as transcribed refuses when R0 <= 1 + ln(1/delta): a unit-scale threshold. At
    # eps' = 1/4 the chance that an unsafe data set (A0 = 1, d = 0) passes is far above delta.
    eps, delta = Fraction(1, 4), Fraction(1, 20)
    seed_tau = math.floor(math.log(1 / delta)) + 1
    leak = discrete_laplace_upper_tail(1 / eps, seed_tau)
    assert leak > 3 * delta
    assert discrete_laplace_upper_tail(1 / eps, ptr.PTRTest(eps, delta).threshold) <= delta


def test_histogram_and_window_paths_agree() -> None:
    values = (3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3)
    full, hist = WindowedOrderStatistics.full(values), Histogram.of(values)
    for rank in range(-2, len(values) + 3):
        assert full.at(rank) == hist.at(rank)
    for s in (1, 2):
        assert ptr.smed_distance(full, HALF, s, 5) == ptr.smed_distance(hist, HALF, s, 5)
        assert ptr.scale_distance(full, Q1, Q3, s, 1.5, HALF, 5) == ptr.scale_distance(hist, Q1, Q3, s, 1.5, HALF, 5)

"""The stable-histogram mode: exhaustive neighbour checks of its threshold and counts, and its releases.

For one person with up to k rows, the cells that exist only because of them hold row counts
c_j >= 1 with sum <= k (every partition of r <= k rows into cells). The threshold T must keep the
exact probability that any such cell passes, 1 - prod_j (1 - P(N >= T - c_j)), at most delta for
every partition, and T - 1 must not (T is the smallest). Negative controls: the threshold of a
single one-row value (partition selection with one key per person) and the threshold of a single
k-row value are each caught at a setting where the other vertex of the argument binds.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from fractions import Fraction

import pytest

from dpsql.mechanisms import histogram_mode
from dpsql.mechanisms.confidence import Confident
from dpsql.mechanisms.ptr import REFUSED
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.mechanisms.sampling import discrete_laplace_threshold, discrete_laplace_upper_tail

SETTINGS = [(Fraction(1, 10), Fraction(1, 10**6)), (Fraction(1), Fraction(1, 10**6)), (Fraction(8), Fraction(1, 10**6)),
            (Fraction(1), Fraction(1, 20)), (Fraction(16), Fraction(1, 20))]


def partitions(rows: int, most: int | None = None) -> Iterator[tuple[int, ...]]:
    """Every partition of `rows` into positive parts (non-increasing)."""
    most = rows if most is None else most
    if rows == 0:
        yield ()
        return
    for first in range(min(rows, most), 0, -1):
        for rest in partitions(rows - first, first):
            yield (first, *rest)


def leak(scale: Fraction, threshold: int, cells: tuple[int, ...]) -> float:
    """P(some new cell passes) exactly: the cells' noises are independent."""
    stay = 1.0
    for count in cells:
        stay *= 1.0 - discrete_laplace_upper_tail(scale, threshold - count)
    return 1.0 - stay


def worst_leak(spec: histogram_mode.HistogramModeSpec, threshold: int) -> float:
    return max(leak(spec.scale, threshold, cells) for rows in range(1, spec.max_rows + 1) for cells in partitions(rows))


@pytest.mark.parametrize("k", [1, 2, 3, 4, 6])
@pytest.mark.parametrize(("eps", "delta"), SETTINGS)
def test_new_values_pass_with_probability_at_most_delta_and_t_is_the_smallest(k: int, eps: Fraction, delta: Fraction) -> None:
    spec = histogram_mode.HistogramModeSpec(eps, delta, k)
    assert worst_leak(spec, spec.threshold) <= float(delta) * (1 + 1e-9)
    assert worst_leak(spec, spec.threshold - 1) > float(delta)


def _caught(rule: Callable[[histogram_mode.HistogramModeSpec], int]) -> bool:
    for (eps, delta), k in itertools.product(SETTINGS, [2, 3, 4, 6]):
        spec = histogram_mode.HistogramModeSpec(eps, delta, k)
        if worst_leak(spec, rule(spec)) > float(delta) * (1 + 1e-9):
            return True
    return False


def test_negative_control_the_one_row_value_threshold_is_caught() -> None:
    assert _caught(lambda spec: 1 + discrete_laplace_threshold(spec.scale, 1, spec.delta))


def test_negative_control_partition_selections_threshold_on_row_counts_is_caught() -> None:
    # 1 + threshold(scale, k, delta): right for person counts (each new key has count 1), not for
    # one value holding all k of a person's rows, which binds at large epsilon.
    assert _caught(lambda spec: 1 + discrete_laplace_threshold(spec.scale, spec.max_rows, spec.delta))


def test_negative_control_the_k_row_value_threshold_is_caught() -> None:
    assert _caught(lambda spec: spec.max_rows + discrete_laplace_threshold(spec.scale, 1, spec.delta))


def test_common_cells_move_by_at_most_k_in_l1() -> None:
    # Every multiset over 3 values (<= 4 rows) and every addition of 1..k rows: the counts of the
    # values present on both sides move by at most k in L1, and the new values' rows sum to <= k.
    domain, k = ("a", "b", "c", "d"), 3
    for size in range(5):
        for x in itertools.combinations_with_replacement(domain[:3], size):
            for added in (a for r in range(1, k + 1) for a in itertools.combinations_with_replacement(domain, r)):
                cx, cy = Counter(x), Counter(x + added)
                common = [v for v in cy if v in cx]
                assert sum(abs(cy[v] - cx[v]) for v in common) <= k
                assert sum(cy[v] for v in cy if v not in cx) <= k


def test_release_clear_winner_refusal_and_confidence() -> None:
    spec = histogram_mode.HistogramModeSpec(Fraction(1, 10), Fraction(1, 10**6), 3)
    rng = SeededRandomSource(5)
    top = spec.threshold * 4
    out = [histogram_mode.release_confident(spec, {"a": top, "b": top // 3, "c": 2}, rng) for _ in range(50)]
    assert all(isinstance(o, Confident) and o.value == "a" and o.confidence > 0.99 for o in out)
    assert histogram_mode.release_confident(spec, {}, rng) is REFUSED
    assert histogram_mode.release(spec, {"a": 3, "b": 2}, rng) is REFUSED  # far below T: passes w.p. < delta
    assert histogram_mode.cost(spec).epsilon == Fraction(1, 10) and histogram_mode.cost(spec).delta == Fraction(1, 10**6)


def test_the_release_reads_values_in_a_data_independent_order() -> None:
    # The same counts in another insertion order draw the same noise in the same order.
    spec = histogram_mode.HistogramModeSpec(Fraction(1), Fraction(1, 10**6), 1)
    counts = {"b": 100, "a": 100, "c": 100}
    one = histogram_mode.release_confident(spec, counts, SeededRandomSource(3))
    two = histogram_mode.release_confident(spec, dict(sorted(counts.items())), SeededRandomSource(3))
    assert one == two

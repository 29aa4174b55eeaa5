"""Order statistics of one group, in the form the rank mechanisms (PTR, Scale, EM) read them.

Notation (docs/mechanisms.md): x_(1) <= ... <= x_(n) are the sorted values of
a group after NULL/NaN are dropped, padded with x_(i) = -inf for i < 1 and +inf for i > n.
rho_p(n) = max(1, ceil(n p)) is SQL PERCENTILE_DISC and DuckDB quantile_disc (the lower median
for p = 1/2).

The sandwich lemma: if one person (at most k rows) is added or removed, then for every j
    x_(rho(n_x) + j - s) <= y_(rho(n_y) + j) <= x_(rho(n_x) + j + s),   s = ceil(k max(p, 1 - p)).
Every distance in `ptr` relies on it, which is why they only read ranks within +-(C + 1) s of
rho: the engine returns either such windows or a whole histogram, and both look the same here.

Values are ints (integer columns, dates as day ordinals, grid indices) or finite floats.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

Value = int | float
NEG_INF = float("-inf")
POS_INF = float("inf")


def quantile_rank(n: int, p: Fraction) -> int:
    """rho_p(n) = max(1, ceil(n p)), the rank PERCENTILE_DISC(p) reads (1 when n = 0)."""
    p = Fraction(p)
    return max(1, -((-n * p.numerator) // p.denominator))


def rank_shift(max_rows: int, p: Fraction) -> int:
    """s = ceil(k max(p, 1 - p)): how far one person with at most k rows moves rank rho_p.

    Person-level privacy comes from this Lipschitz scale of the distances, never from group
    privacy (docs/mechanisms.md; brute-forced in tests/unit/mechanisms).
    """
    p = Fraction(p)
    q = max(p, 1 - p)
    return max(1, math.ceil(max_rows * q))


class OrderStatistics(Protocol):
    """x_(rank) of one group, with -inf/+inf padding outside 1..n."""

    @property
    def n(self) -> int:
        """The number of values."""
        ...

    def at(self, rank: int) -> Value:
        """x_(rank)."""
        ...


@dataclass(frozen=True, slots=True)
class WindowedOrderStatistics:
    """Some windows of consecutive order statistics, as the engine's windowed path returns them.

    `windows` holds (first rank, sorted values) pairs; together they must cover every rank a
    mechanism asks for (the engine checks that before building this object).
    """

    n: int
    windows: tuple[tuple[int, tuple[Value, ...]], ...]

    def at(self, rank: int) -> Value:
        """x_(rank); LookupError for a rank inside 1..n that no window covers (a bug, never data)."""
        if rank < 1:
            return NEG_INF
        if rank > self.n:
            return POS_INF
        for first, values in self.windows:
            if first <= rank < first + len(values):
                return values[rank - first]
        raise LookupError(f"rank {rank} is outside the windows read from the engine")

    @classmethod
    def full(cls, values: Sequence[Value]) -> WindowedOrderStatistics:
        """All values as one window (tests, small inputs)."""
        ordered = tuple(sorted(values))
        return cls(len(ordered), ((1, ordered),))


@dataclass(frozen=True, slots=True)
class Histogram:
    """Sorted distinct values with their counts: the engine's histogram path.

    Serves as OrderStatistics (x_(rank) by bisection on cumulative counts) and as the input
    of the exponential-mechanism quantile (counts below and above a candidate).
    """

    values: tuple[Value, ...]
    cumulative: tuple[int, ...]

    @classmethod
    def from_counts(cls, pairs: Sequence[tuple[Value, int]]) -> Histogram:
        """From (value, count) pairs in any order; zero counts are dropped, equal values merged."""
        merged: dict[Value, int] = {}
        for value, count in pairs:
            if count:
                merged[value] = merged.get(value, 0) + int(count)
        values = tuple(sorted(merged))
        total, cumulative = 0, []
        for value in values:
            total += merged[value]
            cumulative.append(total)
        return cls(values, tuple(cumulative))

    @classmethod
    def of(cls, values: Sequence[Value]) -> Histogram:
        """From raw values (tests)."""
        return cls.from_counts([(v, 1) for v in values])

    @property
    def n(self) -> int:
        """The number of values."""
        return self.cumulative[-1] if self.cumulative else 0

    def at(self, rank: int) -> Value:
        """x_(rank)."""
        if rank < 1:
            return NEG_INF
        if rank > self.n:
            return POS_INF
        return self.values[bisect.bisect_left(self.cumulative, rank)]

    def count(self, index: int) -> int:
        """The count of the index-th distinct value."""
        return self.cumulative[index] - (self.cumulative[index - 1] if index else 0)


@dataclass(frozen=True, slots=True)
class CountedWindows:
    """Windows of order statistics as distinct values with their counts (the two-stage read).

    `windows` holds (values below, sorted distinct values, cumulative counts) triples: window w
    covers ranks below + 1 .. below + cumulative[-1], and values[i] is x_(rank) for the ranks
    below + cumulative[i - 1] + 1 .. below + cumulative[i]. Together they cover every rank a
    mechanism asks for (the engine checks that before building this object).
    """

    n: int
    windows: tuple[tuple[int, tuple[Value, ...], tuple[int, ...]], ...]

    def at(self, rank: int) -> Value:
        """x_(rank); LookupError for a rank inside 1..n that no window covers (a bug, never data)."""
        if rank < 1:
            return NEG_INF
        if rank > self.n:
            return POS_INF
        for below, values, cumulative in self.windows:
            if below < rank <= below + cumulative[-1]:
                return values[bisect.bisect_left(cumulative, rank - below)]
        raise LookupError(f"rank {rank} is outside the windows read from the engine")

    def count_below(self, value: Value, first: int, last: int) -> int | None:
        """#{x < value} when x_(first) < value <= x_(last) and one window holds ranks first..last,
        read with one bisection of its distinct values; else None (the caller searches the ranks)."""
        for below, values, cumulative in self.windows:
            if below < first and last <= below + cumulative[-1]:
                if not values[bisect.bisect_left(cumulative, first - below)] < value <= values[bisect.bisect_left(cumulative, last - below)]:
                    return None
                # Every rank at or below `below` holds a value <= x_(first) < value.
                return below + cumulative[bisect.bisect_left(values, value) - 1]
        return None

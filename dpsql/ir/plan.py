"""The DP plan: what the engine computes exactly, and how noise turns it into answers.

Scan -> Filter -> BoundContribution -> Clamp (on a public grid) -> GroupBy -> RawAggregate(s)
-> Release (mechanism spec) -> Estimate (post-processing) -> outputs.

Robust aggregates (MEDIAN/QUANTILE, IQR, MODE) add raw *requests* the engine answers exactly
(rank windows or histograms of a mapped column, subsample-mode votes) and RobustRelease nodes
that turn them into a value or ⊥ with a PTR, Scale, A_samp or exponential-mechanism spec.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal, NamedTuple, Protocol

from sqlglot import exp

from dpsql.accounting.cost import PrivacyCost
from dpsql.catalog.policy import Column
from dpsql.ir.query import SPELLING, BoundQuery
from dpsql.mechanisms import registry
from dpsql.mechanisms.gaussian import GaussianSpec
from dpsql.mechanisms.laplace import LaplaceSpec
from dpsql.mechanisms.partition import PartitionSelectionSpec
from dpsql.mechanisms.ranks import Histogram

RawKind = Literal["count_rows", "count_values", "count_finite", "sum_grid", "sumsq_grid", "count_units", "distinct_values"]
EMPTY_HISTOGRAM = Histogram((), ())


def release_name(index: int) -> str:
    """The column name of release `index` in the engine result and the noisy table."""
    return f"{SPELLING['release']}{index}"  # ColumnRef("release", index).name, without the object (hot path)


def robust_name(index: int) -> str:
    """The column name of robust release `index` in the noisy table."""
    return f"{SPELLING['robust']}{index}"


def aggregate_name(index: int) -> str:
    """The column of analyst aggregate `index` (its estimate) in the table post-processing reads."""
    return f"{SPELLING['aggregate']}{index}"  # ColumnRef("aggregate", index).name, without the object


def aggregate_width_name(index: int) -> str:
    """The column of analyst aggregate `index`'s per-cell 95% half-widths (post-processing's table)."""
    return f"{aggregate_name(index)}__w"


def aggregate_low_name(index: int) -> str:
    """The column of analyst aggregate `index`'s per-cell 95% interval low end (post-processing's table)."""
    return f"{aggregate_name(index)}__lo"


def aggregate_high_name(index: int) -> str:
    """The column of analyst aggregate `index`'s per-cell 95% interval high end (post-processing's table)."""
    return f"{aggregate_name(index)}__hi"


def aggregate_confidence_name(index: int) -> str:
    """The column of analyst aggregate `index`'s per-cell confidence (MODE; post-processing's table)."""
    return f"{aggregate_name(index)}__cf"


def corner_name(index: int, output: int, corner: int) -> str:
    """The column of analyst aggregate `index` evaluated at corner `corner` of output `output`'s
    releases (its interval; execution/intervals.py)."""
    return f"{aggregate_name(index)}__c{output}_{corner}"


def robust_confidence_name(index: int) -> str:
    """The noisy table's column of robust release `index`'s per-row confidence (its mechanism's
    `output.confidence`: MODE)."""
    return f"{robust_name(index)}__conf"


def robust_ci_name(index: int) -> str:
    """The noisy table's column of robust release `index`'s per-row 95% half-widths (its
    mechanism's `output.interval`)."""
    return f"{robust_name(index)}__ci95"


def robust_end_names(index: int) -> tuple[str, str]:
    """The noisy table's columns of robust release `index`'s per-row 95% interval ends, where its
    estimate decodes them (`Cell.low`, `Cell.high`; None: value -+ half-width)."""
    return f"{robust_name(index)}__lo", f"{robust_name(index)}__hi"


@dataclass(frozen=True, slots=True)
class RawAggregate:
    """An exact per-group aggregate the engine computes after bounding.

    `sum_grid` sums round(clamp(x, lower, upper) / grid) - center as integers (HUGEINT), so the
    sum is exact and independent of row order; NULL, NaN and +-inf are dropped before clamping.
    `count_finite` counts the rows `sum_grid` sums (AVG's denominator); with `distinct`, both read
    each distinct grid value of the group once (SUM/AVG(DISTINCT x)). `sumsq_grid` sums the
    squares of those centred values, rounded onto `square_grid(raw)` and clamped to
    [0, square_units(raw)] per row (VARIANCE and STDDEV).
    """

    kind: RawKind
    column: Column | None = None
    grid: Fraction = Fraction(1)
    lower_units: int = 0
    upper_units: int = 0
    center_units: int = 0
    expr: exp.Expr | None = None  # the per-row value when it is an expression, not `column` itself
    # Over the distinct grid values of each group (SUM/AVG(DISTINCT x)): `sum_grid` sums each
    # distinct round(clamp(x) / grid) once, `count_finite` counts them.
    distinct: bool = False


@dataclass(frozen=True, slots=True)
class Release:
    """One noisy release: a raw aggregate, its mechanism spec, and what its units mean."""

    raw: RawAggregate
    spec: LaplaceSpec | GaussianSpec  # noise = 'laplace' (the default) or 'gaussian'

    @property
    def unit(self) -> Fraction:
        """Real value of one grid unit (1 for counts)."""
        if self.raw.kind == "sumsq_grid":
            return square_grid(self.raw)
        return self.raw.grid if self.raw.kind == "sum_grid" else Fraction(1)


def release_width(plan: Plan, index: int, parts: int) -> Fraction:
    """Half-width, in real units, of release `index` at level 1 - 0.05/parts (a union bound over
    `parts` releases keeps their joint level at 95%)."""
    release = plan.releases[index]
    return _width(release.spec, parts) * release.unit


@functools.lru_cache(maxsize=4096)
def _width(spec: LaplaceSpec | GaussianSpec, parts: int) -> int:
    # Depends on the public spec only; cached because every answer reports it.
    return spec.half_width(1 - 0.05 / parts)


class Cell(NamedTuple):
    """One group's released value of an aggregate: the value (None for ⊥), its 95% half-width
    (None: none stated), for MODE the confidence that it is the mode, and the 95% interval's ends
    where its estimate computed them (`low`, `high`: value ∓ half-width clipped to the range every
    true value lies in, or the corner evaluation's own ends; None: value ∓ half-width)."""

    value: Any
    half_width: float | None = None
    confidence: float | None = None
    low: float | None = None
    high: float | None = None

    def interval(self) -> tuple[float, float] | None:
        """The 95% interval (low, high): the ends computed, else value ∓ half-width; None without one."""
        if self.value is None or self.half_width is None or isinstance(self.value, bool) \
                or not isinstance(self.value, (int, float, Decimal)):
            return None
        if self.low is not None and self.high is not None:
            return float(self.low), float(self.high)
        number = float(self.value)
        return number - float(self.half_width), number + float(self.half_width)


class Estimate(Protocol):
    """One analyst aggregate as its module planned it (dpsql/aggregates/<family>.py): which of
    the plan's releases it reads, and the one definition of its value, type, 95% interval and
    noise facts. It reads public facts of the plan and released values only (post-processing);
    execution evaluates it (execution/assemble.py), EXPLAIN prints `expected`."""

    @property
    def kind(self) -> str:
        """How noise_info names it inside a post-processed column ("count", "avg", ...)."""
        ...

    @property
    def releases(self) -> tuple[int, ...]:
        """The Laplace/Gaussian releases (Plan.releases) it reads, in `value`'s order."""
        ...

    def possible(self) -> tuple[float | None, float | None]:
        """The range every true value lies in, from the policy alone (None: unbounded on that side)."""
        ...

    @property
    def additive(self) -> bool:
        """Whether its value over a union of disjoint groups is the sum of theirs (COUNT, SUM):
        grouping sets' totals are reconciled with their parts (execution/consistency.py)."""
        ...

    @property
    def not_additive(self) -> str:
        """Why it is not, when a reader would expect it to be (EXPLAIN); empty otherwise."""
        ...

    @property
    def robust(self) -> int | None:
        """The robust release (Plan.robust) whose noisy column it reads, or None."""
        ...

    @property
    def corners(self) -> bool:
        """Whether `value` is monotone in each release, so that evaluating it at the corners of
        its releases' intervals bounds it (the 95% interval of arithmetic over it)."""
        ...

    def value(self, released: Sequence[Any]) -> Any:
        """Its value from its releases' noisy values (in `releases` order)."""
        ...

    def cells(self, plan: Plan, columns: Mapping[str, Sequence[Any]], rows: int) -> list[Cell]:
        """Its value, 95% half-width and confidence in each of the noisy table's `rows` groups."""
        ...

    def output_type(self, plan: Plan) -> str:
        """The engine type of its values (known from the plan alone)."""
        ...

    def noise(self, plan: Plan) -> dict[str, Any]:
        """The noise_info fields of an output that is this aggregate alone (public)."""
        ...

    def expected(self, plan: Plan) -> str:
        """EXPLAIN's expected 95% interval, before anything is read (public)."""
        ...

    def reads(self, release: RobustRelease, raw: Any, columns: Mapping[str, Sequence[Any]], row: int) -> Any:
        """What its robust release's mechanism reads in one group: the engine's exact answer,
        with released values it needs (Scale's n_hat)."""
        ...

    def decode(self, released: Any) -> Cell:
        """Its robust release's output in one group, in the column's units (None for ⊥)."""
        ...


def largest_deviation(raw: RawAggregate) -> Fraction:
    """The largest |x - center| of a clamped value, in value units (public)."""
    return max(abs(raw.lower_units - raw.center_units), abs(raw.upper_units - raw.center_units)) * raw.grid


def square_grid(raw: RawAggregate) -> Fraction:
    """The power-of-two grid of a sum of squares: about 2^30 steps up to the largest square, so a
    row's rounded square fits in 32 bits and the exact HUGEINT sum cannot overflow."""
    return Column(name="", type="float", lower=Fraction(0), upper=largest_deviation(raw) ** 2).grid()


def square_units(raw: RawAggregate) -> int:
    """The largest rounded square of one row, in square_grid units: the per-row clamp."""
    return math.ceil(largest_deviation(raw) ** 2 / square_grid(raw))


def median_grid(column: Column, steps: int = 1000) -> Fraction | None:
    """The public grid SMed ranks a column on (ties need a grid; policy only, never data).

    The column's declared `precision`; else 1 for int and date (days) columns; else, for a
    float column with bounds, the 1-2-5 step at or above (upper - lower) / steps (500 for
    [0, 500000] and the default 1000 steps); else None (SMed cannot run: declare a precision or
    propose a bound). The exponential mechanism asks for a finer grid (2^16 steps).
    """
    if column.precision is not None:
        return Fraction(column.precision)
    if column.type in ("int", "date"):
        return Fraction(1)
    if column.lower is None or column.upper is None or column.upper <= column.lower:
        return None
    target = (column.upper - column.lower) / steps
    step = Fraction(1)
    while step > target:
        step /= 10
    while step * 10 <= target:
        step *= 10
    return next(step * f for f in (1, 2, 5, 10) if step * f >= target)


def _round_half_away(value: Fraction) -> int:
    # DuckDB's round() on a DOUBLE rounds half away from zero.
    magnitude = (abs(value) * 2 + 1) // 2
    return int(magnitude if value >= 0 else -magnitude)


@dataclass(frozen=True, slots=True)
class ValueMap:
    """How the engine maps one column's values to the numbers a rank mechanism reads.

    A per-row map, so it keeps neighbouring tables neighbours: NULL and NaN (and +-inf on
    floats) are dropped, dates become day ordinals (date.toordinal), values are clamped to the
    declared bounds when there are any, and with a grid g each value becomes the integer index
    round(value / g) (clamped to the index range). Everything here is public (policy only).
    """

    column: Column
    grid: Fraction | None = None
    lower: Fraction | None = None
    upper: Fraction | None = None

    @property
    def indexed(self) -> bool:
        """Whether values become grid indices round(value / grid) (not for the unit grid of ints and dates)."""
        return self.grid is not None and not (self.grid == 1 and self.column.type in ("int", "date"))

    @property
    def index_range(self) -> tuple[int, int] | None:
        """The smallest and largest mapped value when finitely many are possible, else None."""
        if self.lower is None or self.upper is None:
            return None
        if self.grid is not None:
            return _round_half_away(self.lower / self.grid), _round_half_away(self.upper / self.grid)
        if self.column.type in ("int", "date"):
            return int(self.lower), int(self.upper)
        return None

    @property
    def domain_size(self) -> int | None:
        """How many distinct mapped values there can be (public), or None when unbounded."""
        span = self.index_range
        return None if span is None else span[1] - span[0] + 1

    @property
    def step(self) -> Fraction:
        """One mapped unit in column units: the grid when values are indexed, else 1."""
        return self.grid if self.indexed and self.grid is not None else Fraction(1)

    def decode(self, mapped: Any) -> Any:
        """A released mapped value back in the column's units (grid index * grid; ordinal -> date)."""
        value: Any = mapped
        if self.indexed:
            assert self.grid is not None
            exact = Fraction(mapped) * self.grid
            value = int(exact) if exact.denominator == 1 and self.column.type in ("int", "date") else float(exact)
        if self.column.type == "date":
            return date.fromordinal(min(max(int(round(value)), 1), date.max.toordinal()))
        return value


@dataclass(frozen=True, slots=True)
class RankRequest:
    """Exact order statistics of a mapped column per group: n, and the ranks within `reach` of
    rho_p(n) for each (p, reach) window; or, with `histogram`, every distinct value's count."""

    values: ValueMap
    windows: tuple[tuple[Fraction, int], ...]
    histogram: bool

    @property
    def empty(self) -> Histogram:
        """What a group without rows reads: no order statistics."""
        return EMPTY_HISTOGRAM

    @property
    def column(self) -> Column:
        """The column whose order statistics are read."""
        return self.values.column

    @property
    def reads(self) -> str:
        """What the engine returns for it, for EXPLAIN."""
        return "a histogram" if self.histogram else "rank windows of +-(C+1)s"

    @property
    def seeded(self) -> bool:
        """Whether its statement takes secret per-query seeds (no: order statistics are exact)."""
        return False


@dataclass(frozen=True, slots=True)
class ModeRequest:
    """Votes of subsample modes per group: each person hashed (keyed, secret seed) into one of
    `blocks` subsamples; each non-empty subsample votes for its most frequent value. With
    `counts`, the exact row count of each value per group instead: of the declared values
    (report-noisy-max), or of every value present (the stable-histogram mode, no declared values)."""

    column: Column
    blocks: int
    counts: bool = False

    @property
    def empty(self) -> dict[object, int]:
        """What a group without rows reads: no votes."""
        return {}

    @property
    def reads(self) -> str:
        """What the engine returns for it, for EXPLAIN."""
        return "per-value counts" if self.counts else "subsample-mode votes"

    @property
    def seeded(self) -> bool:
        """Whether its statement takes secret per-query seeds ($mode_seed, $tie_seed: the votes do)."""
        return not self.counts


@dataclass(frozen=True, slots=True)
class RobustRelease:
    """One robust aggregate: its mechanism's spec (any registered one), the engine request it
    reads, and how its values were mapped."""

    aggregate: int
    spec: object
    request: int
    values: ValueMap | None = None
    n_hat: int | None = None  # the Laplace release whose noisy value is Scale's n_hat

    @property
    def mechanism(self) -> str:
        """The name of its mechanism (from the registry: the spec's type decides)."""
        return registry.name(self.spec)


@dataclass(frozen=True, slots=True)
class Bounding:
    """Per-person contribution limits of the table."""

    unit: str
    max_rows: int
    max_groups: int


@dataclass(frozen=True, slots=True)
class Plan:
    """A sensitivity-bounded plan with its full cost."""

    query: BoundQuery
    bounding: Bounding
    releases: tuple[Release, ...]
    estimates: tuple[Estimate, ...]  # one per analyst aggregate (query.aggregates), by its module
    selection: PartitionSelectionSpec | None
    cost: PrivacyCost
    notes: tuple[str, ...] = ()
    requests: tuple[RankRequest | ModeRequest, ...] = ()
    robust: tuple[RobustRelease, ...] = ()

    @property
    def public_keys(self) -> bool:
        """Whether every group key has a public domain (all keys released, empty ones too)."""
        return all(key.public for key in self.query.keys)

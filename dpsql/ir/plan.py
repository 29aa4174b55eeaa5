"""The DP plan: what the engine computes exactly, and how noise turns it into answers.

Scan -> Filter -> BoundContribution -> Clamp (on a public grid) -> GroupBy -> RawAggregate(s)
-> Release (mechanism spec) -> Estimate (post-processing) -> outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from dpsql.accounting.cost import PrivacyCost
from dpsql.catalog.model import Column
from dpsql.ir.query import BoundQuery
from dpsql.mechanisms.laplace import LaplaceSpec
from dpsql.mechanisms.partition import PartitionSelectionSpec

RawKind = Literal["count_rows", "count_values", "count_finite", "sum_grid", "count_units"]
EstimateKind = Literal["count", "sum", "avg"]


def release_name(index: int) -> str:
    """The column name of release `index` in the engine result and the noisy table."""
    return f"__r{index}"


@dataclass(frozen=True, slots=True)
class RawAggregate:
    """An exact per-group aggregate the engine computes after bounding.

    `sum_grid` sums round(clamp(x, lower, upper) / grid) - center as integers (HUGEINT), so the
    sum is exact and independent of row order; NULL, NaN and +-inf are dropped before clamping.
    `count_finite` counts the rows `sum_grid` sums (AVG's denominator).
    """

    kind: RawKind
    column: Column | None = None
    grid: Fraction = Fraction(1)
    lower_units: int = 0
    upper_units: int = 0
    center_units: int = 0


@dataclass(frozen=True, slots=True)
class Release:
    """One noisy release: a raw aggregate, its mechanism spec, and what its units mean."""

    raw: RawAggregate
    spec: LaplaceSpec

    @property
    def unit(self) -> Fraction:
        """Real value of one grid unit (1 for counts)."""
        return self.raw.grid if self.raw.kind == "sum_grid" else Fraction(1)


@dataclass(frozen=True, slots=True)
class Estimate:
    """How one analyst aggregate is computed from releases (post-processing only)."""

    kind: EstimateKind
    releases: tuple[int, ...]
    column: Column | None = None
    center: Fraction = Fraction(0)


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
    estimates: tuple[Estimate, ...]
    selection: PartitionSelectionSpec | None
    cost: PrivacyCost
    notes: tuple[str, ...] = ()

    @property
    def public_keys(self) -> bool:
        """Whether every group key has a public domain (all keys released, empty ones too)."""
        return all(key.public for key in self.query.keys)

"""The plan being built, as an aggregate's planning (phase 2) reads and extends it.

It holds the query's Laplace releases (with their specs, once the budget is split), the robust
releases and the engine requests they read: rank windows of one mapped column are merged into
one request, so MEDIAN and QUANTILE(.., 0.9) of a column read its order statistics once. A
request reads a histogram when the mapped column has at most 2^16 possible values (public:
bounds and grid), else rank windows of +-(C + 1) s around each quantile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dpsql.ir.plan import Bounding, ModeRequest, RankRequest, RawAggregate, Release, RobustRelease, ValueMap
from dpsql.ir.query import BoundQuery

HISTOGRAM_MAX_VALUES = 1 << 16


def person_groups(query: BoundQuery, bounding: Bounding) -> int:
    """G: how many groups one person's rows can fall in: 1 without GROUP BY, else min(k, product of
    the public domain sizes) (a person keeps at most k rows, each in one group)."""
    if not query.keys:
        return 1
    groups = bounding.max_rows
    if all(key.public for key in query.keys):
        domain = 1
        for key in query.keys:
            domain *= len(key.column.values or ())
        groups = min(groups, max(domain, 1))
    return groups


@dataclass
class PlanBuilder:
    """The Planning an aggregate's phase 2 sees (aggregates/base.py), filled in aggregate order."""

    query: BoundQuery
    bounding: Bounding
    releases: list[Release]
    groups: int
    robust_releases: list[RobustRelease] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    _windows: dict[ValueMap, dict[Fraction, int]] = field(default_factory=dict)
    _order: list[object] = field(default_factory=list)

    def release(self, raw: RawAggregate) -> int:
        return next(i for i, release in enumerate(self.releases) if release.raw == raw)

    def spec(self, index: int) -> Any:
        return self.releases[index].spec

    def unit(self, index: int) -> Fraction:
        return self.releases[index].unit

    def add_release(self, raw: RawAggregate, spec: Any) -> int:
        self.releases.append(Release(raw, spec))
        return len(self.releases) - 1

    def reusable_count(self, column: str) -> int | None:
        for position, release in enumerate(self.releases):
            raw = release.raw
            if raw.kind == "count_rows" or (raw.kind in ("count_values", "count_finite") and raw.column is not None
                                            and raw.column.name == column):
                return position
        return None

    def rank_request(self, values: Any, windows: Mapping[Fraction, int]) -> int:
        if values not in self._windows:
            self._windows[values] = {}
            self._order.append(values)
        merged = self._windows[values]
        for p, reach in windows.items():
            merged[p] = max(merged.get(p, 0), reach)
        return self._order.index(values)

    def mode_request(self, request: Any) -> int:
        self._order.append(request)
        return len(self._order) - 1

    def robust(self, release: RobustRelease) -> int:
        self.robust_releases.append(release)
        return len(self.robust_releases) - 1

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def requests(self) -> tuple[RankRequest | ModeRequest, ...]:
        """The engine requests, windows of one mapped column merged into one request."""
        out: list[RankRequest | ModeRequest] = []
        for item in self._order:
            if isinstance(item, ValueMap):
                windows = tuple(sorted(self._windows[item].items()))
                size = item.domain_size
                out.append(RankRequest(item, windows, histogram=size is not None and size <= HISTOGRAM_MAX_VALUES))
            else:
                assert isinstance(item, ModeRequest)
                out.append(item)
        return tuple(out)

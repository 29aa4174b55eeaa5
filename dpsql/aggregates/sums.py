"""SUM and AVG of a bounded column or per-row expression, and SUM(DISTINCT x) and AVG(DISTINCT x):
fixed-point sums with discrete Laplace (or Gaussian) noise.

Sensitivity (policy only): values are clamped to the column's bounds on its grid g (bounds
rounded inwards, so the sensitivity stays as declared); a person keeps at most k = max_rows rows.
SUM: k * max(|lower|, |upper|) / g grid units. AVG: a sum centred on the bounds' midpoint c
(k * max(|lower - c|, |upper - c|) / g) and a count of the rows it sums (k), each its own release:
AVG = c + S / max(C, 1), clamped to [lower, upper]; its 95% interval is the corner evaluation
over the two releases (docs/mechanisms.md, "Counts, sums and averages"). An expression's bounds
are those the analysis derived for it from the policy, and the engine clamps each row into them.

DISTINCT (the same releases and sensitivities): the engine sums each distinct grid value u =
round(clamp(x) / g) of a group once (AVG: centred, over COUNT(DISTINCT u)). On the bounded
relation a person has at most k rows, and each row's u joins or leaves its group's set of
distinct values at most once (another person's equal value keeps it there), so adding or
removing the person changes the distinct sets of all groups together by at most k values, each
within [L, U]: the L1 change of the per-group distinct sums is at most k * max(|L|, |U|) / g,
of the centred sums k * max(|L - c|, |U - c|) / g, and of the distinct counts k, whatever the
grouping (COUNT(DISTINCT col)'s argument, counts.py). The clamp comes before DISTINCT, so two raw
values on one grid point are one value, and the count counts the values the sum adds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from sqlglot import exp

from dpsql.aggregates.base import (
    Binder,
    LaplaceEstimate,
    Needs,
    Planning,
    Share,
    grid_units,
    noise_family,
    number_literal,
    over_expression,
    per_rows,
    width,
)
from dpsql.frontend.privacy_dialect import CONTRIBUTION_BOUNDS, ContributionBounds
from dpsql.ir.plan import Bounding, Plan, RawAggregate
from dpsql.ir.query import AggregateCall, BoundQuery
from dpsql.mechanisms.base import fmt

SUM, AVG = "sum", "avg"


def bind_bounded(node: exp.Expr, binder: Binder, text: str, kind: str) -> AggregateCall:
    """`kind` of a bounded numeric column, or of a per-row expression with derived bounds; BigQuery's
    `contribution_bounds_per_group => (lo, hi)` narrows those bounds (`narrowed`); `kind(DISTINCT x)`
    of one column or expression reads each distinct value of a group once (`distinct`)."""
    arg = node.this
    if isinstance(arg, exp.Distinct):
        if len(arg.expressions) != 1:
            raise binder.refuse("DP116", f"{kind.upper()}(DISTINCT ...) takes one column or expression", node,
                                f"write {kind.upper()}(DISTINCT col)")
        return replace(_bind_argument(arg.expressions[0], node, binder, text, kind), distinct=True)
    if isinstance(arg, ContributionBounds):
        return narrowed(_bind_argument(arg.this, node, binder, text, kind), arg, binder)
    return _bind_argument(arg, node, binder, text, kind)


def narrowed(call: AggregateCall, bounds: ContributionBounds, binder: Binder) -> AggregateCall:
    """The call with each value clamped to the query's bounds, which must lie within the bounds the
    policy gives its argument: sensitivity comes from the policy, so bounds may narrow it (a
    smaller sensitivity, values beyond them clamped) and never widen it (DP120)."""
    column = call.column
    assert column is not None and column.lower is not None and column.upper is not None
    values = [_signed_number(v) for v in bounds.expressions]
    caret = bounds.parent or bounds  # the caret under the whole call (the bounds' literals carry no position)
    policy = f"[{column.bound_text(column.lower)}, {column.bound_text(column.upper)}]"
    name = f"{call.kind.upper()}({call.expr.sql() if call.expr is not None else column.name})"
    if len(values) != 2 or values[0] is None or values[1] is None or values[0] > values[1]:
        raise binder.invalid_option(f"{CONTRIBUTION_BOUNDS} of {name} must be two numbers (lower, upper) with "
                                    "lower <= upper", caret,
                                    f"write {CONTRIBUTION_BOUNDS} => ({column.bound_text(column.lower)}, "
                                    f"{column.bound_text(column.upper)}) or narrower bounds within {policy}")
    lower, upper = values[0], values[1]
    if lower < column.lower or upper > column.upper:
        raise binder.invalid_option(f"{CONTRIBUTION_BOUNDS} ({column.bound_text(lower)}, {column.bound_text(upper)}) "
                                    f"of {name} reach beyond the policy's bounds {policy}: the sensitivity "
                                    "comes from the policy, and a query's bounds may only narrow it", caret,
                                    f"write bounds within {policy}, or leave {CONTRIBUTION_BOUNDS} out "
                                    "(the policy's bounds apply)")
    return replace(call, column=replace(column, lower=lower, upper=upper))


def _signed_number(node: exp.Expr) -> Fraction | None:
    if isinstance(node, exp.Neg):
        value = number_literal(node.this)
        return None if value is None else -value
    return number_literal(node)


def _bind_argument(arg: exp.Expr | None, node: exp.Expr, binder: Binder, text: str, kind: str) -> AggregateCall:
    if arg is not None and not isinstance(arg, (exp.Column, exp.Distinct)):
        return over_expression(binder, kind, arg, text)
    column = binder.column(arg, node)
    if not column.numeric:
        raise binder.refuse("DP117", f"{kind.upper()} needs a numeric column; '{column.name}' is {column.type}", node,
                            "sum, average or take the variance of an int or float column")
    if not column.bounded:
        raise binder.refuse("DP106", f"{kind.upper()}({column.name}) needs public bounds for '{column.name}'", node,
                            f"declare lower and upper for {column.name} under [tables.{binder.table.name}.columns] in the policy")
    return AggregateCall(kind=kind, column=column, text=text)


@dataclass(frozen=True, slots=True)
class GridSum:
    """A bounded column's clamp on its grid: bounds in grid units (rounded inwards) and their midpoint."""

    raw: RawAggregate  # the uncentred sum
    centred: RawAggregate  # the sum centred on the midpoint
    count: RawAggregate  # the rows it sums (finite values)

    @staticmethod
    def of(call: AggregateCall) -> GridSum:
        column = call.column
        assert column is not None and column.lower is not None and column.upper is not None
        grid = column.grid()
        lower, upper = grid_units(column.lower, grid, math.ceil), grid_units(column.upper, grid, math.floor)
        center = (lower + upper) // 2
        distinct = call.distinct
        # DISTINCT counts distinct grid values, so its count carries the grid and clamp of its sum.
        count = RawAggregate("count_finite", column, grid, lower, upper, 0, call.expr, True) if distinct else \
            RawAggregate("count_finite", column, expr=call.expr)
        return GridSum(RawAggregate("sum_grid", column, grid, lower, upper, 0, call.expr, distinct),
                       RawAggregate("sum_grid", column, grid, lower, upper, center, call.expr, distinct), count)

    @property
    def deviation(self) -> int:
        """The largest |value - midpoint| of a clamped value, in grid units."""
        raw = self.centred
        return max(abs(raw.lower_units - raw.center_units), abs(raw.upper_units - raw.center_units))

    @property
    def center(self) -> Fraction:
        """The midpoint in value units."""
        return self.centred.center_units * self.centred.grid


@dataclass(frozen=True, slots=True)
class SumEstimate(LaplaceEstimate):
    """SUM: the noisy sum of its one release (value units)."""

    releases: tuple[int, ...]
    sign: int = 0  # the sign every value has by the bounds (1: lower >= 0, -1: upper <= 0, 0: either)
    kind = "sum"
    additive = True

    def value(self, released: Sequence[Any]) -> Any:
        return released[0]

    def possible(self) -> tuple[float | None, float | None]:
        return (0 if self.sign > 0 else None), (0 if self.sign < 0 else None)

    def expected(self, plan: Plan) -> str:
        every = ", the same for every group" if plan.query.keys else ""
        side = {1: "never below 0", -1: "never above 0"}.get(self.sign)
        clamped = f"; {side} (clamp = false leaves it unbiased)" if side and plan.query.clamp else ""
        return f"±{fmt(width(plan, self.releases[0]))} ({noise_family(plan, self.releases[0])}{every}){clamped}"


@dataclass(frozen=True, slots=True)
class DistinctSumEstimate(SumEstimate):
    """SUM(DISTINCT x): the noisy sum of its one release; not additive (a value two groups share
    is once in their union)."""

    additive = False
    not_additive = "a value two groups share counts once in their union"


@dataclass(frozen=True, slots=True)
class AvgEstimate(LaplaceEstimate):
    """AVG: midpoint + centred sum / max(count, 1), clamped to the column's bounds."""

    releases: tuple[int, ...]  # (centred sum, count)
    center: float  # the bounds' midpoint on the grid, and the bounds (public)
    lower: float
    upper: float
    kind = "avg"
    doubles = True
    not_additive = "AVG is released from its own centred sum and count"

    def value(self, released: Sequence[Any]) -> Any:
        total, count = released
        return min(max(self.center + total / max(count, 1), self.lower), self.upper)

    def expected(self, plan: Plan) -> str:
        total, count = self.releases
        return (f"about ±{fmt(width(plan, total, 2))} / n for a group of n rows ({per_rows(width(plan, total, 2))}); "
                f"the noisy n (±{fmt(width(plan, count, 2))}) adds to it when n is small; clamped to the bounds")


class Sums:
    """SUM and AVG (module docstring)."""

    kinds = (SUM, AVG)
    classes: tuple[type[exp.Expr], ...] = (exp.Sum, exp.Avg)
    names: tuple[str, ...] = ()
    filterable = True

    def bind(self, node: exp.Expr, binder: Binder, text: str) -> AggregateCall:
        return bind_bounded(node, binder, text, SUM if isinstance(node, exp.Sum) else AVG)

    def accuracy_first(self, call: AggregateCall) -> str | None:
        return "a noisy count divides it" if call.kind == AVG else None

    def row_count(self, call: AggregateCall) -> tuple[bool, str | None]:
        return False, None

    def value_type(self, call: AggregateCall) -> str:
        return "DOUBLE"

    def needs(self, call: AggregateCall, query: BoundQuery, bounding: Bounding) -> Needs:
        rows = Fraction(bounding.max_rows)
        sums = GridSum.of(call)
        if call.kind == SUM:
            raw = sums.raw
            return Needs(releases=((raw, rows * max(abs(raw.lower_units), abs(raw.upper_units))),))
        return Needs(releases=((sums.centred, rows * sums.deviation), (sums.count, rows)))

    def plan(self, call: AggregateCall, index: int, planning: Planning, share: Share) -> LaplaceEstimate:
        sums = GridSum.of(call)
        if call.kind == SUM:
            raw = sums.raw
            sign = 1 if raw.lower_units >= 0 else -1 if raw.upper_units <= 0 else 0
            return (DistinctSumEstimate if call.distinct else SumEstimate)((planning.release(raw),), sign)
        column = call.column
        assert column is not None and column.lower is not None and column.upper is not None
        return AvgEstimate((planning.release(sums.centred), planning.release(sums.count)), float(sums.center), float(column.lower),
                           float(column.upper))


SUMS = Sums()

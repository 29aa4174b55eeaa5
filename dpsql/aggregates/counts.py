"""COUNT(*), COUNT(col), COUNT(expression) and COUNT(DISTINCT unit): one discrete Laplace (or
Gaussian) count each.

Sensitivity (policy only): a person keeps at most k = max_rows rows in all, so COUNT(*) and
COUNT(col) move by at most k. COUNT(DISTINCT unit) moves by 1 without GROUP BY and by k with it
(a person is in at most k groups, since they keep at most k rows). COUNT(DISTINCT col) of another
column moves by at most k in all: a person's k rows hold at most k values, each of which may be
the only occurrence of its value in its group (summed over the groups the rows fall in). The value is the noisy count
itself; its 95% interval is the release's (docs/mechanisms.md, "Counts, sums and averages").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from sqlglot import exp

from dpsql.aggregates.base import Binder, LaplaceEstimate, Needs, Planning, Share, noise_family, strip_qualifiers, width
from dpsql.catalog.policy import Column
from dpsql.frontend.privacy_dialect import Dpsql
from dpsql.ir.plan import Bounding, Plan, RawAggregate
from dpsql.ir.query import AggregateCall, BoundQuery
from dpsql.mechanisms.base import fmt

STAR, VALUES, UNITS, DISTINCT = "count_star", "count", "count_distinct", "count_distinct_values"


@dataclass(frozen=True, slots=True)
class CountEstimate(LaplaceEstimate):
    """A count: the noisy count of its one release."""

    releases: tuple[int, ...]
    kind = "count"
    additive = True  # of rows or values; a distinct count's raw is not additive (consistency.py checks the raw)

    def value(self, released: Sequence[Any]) -> Any:
        return released[0]

    def possible(self) -> tuple[float | None, float | None]:
        return 0, None  # a count is never negative

    def expected(self, plan: Plan) -> str:
        every = ", the same for every group" if plan.query.keys else ""
        clamped = "; never below 0 (clamp = false leaves it unbiased)" if plan.query.clamp else ""
        return f"±{fmt(width(plan, self.releases[0]))} ({noise_family(plan, self.releases[0])}{every}){clamped}"


class Counts:
    """COUNT in its spellings (module docstring)."""

    kinds = (STAR, VALUES, UNITS, DISTINCT)
    classes: tuple[type[exp.Expr], ...] = (exp.Count,)
    names: tuple[str, ...] = ()
    filterable = True

    def bind(self, node: exp.Expr, binder: Binder, text: str) -> AggregateCall:
        arg = node.this
        if isinstance(arg, exp.Star) or (isinstance(arg, exp.Literal) and not isinstance(arg, exp.Null)):
            return AggregateCall(kind=STAR, column=None, text=text)
        if isinstance(arg, exp.Distinct):
            inner = arg.expressions
            unit = binder.table.privacy_unit
            if len(inner) == 1 and isinstance(inner[0], exp.Column) and inner[0].name.lower() == unit:
                return AggregateCall(kind=UNITS, column=binder.table.column(inner[0].name), text=text)
            if len(inner) == 1 and isinstance(inner[0], exp.Column):
                return AggregateCall(kind=DISTINCT, column=binder.column(inner[0], node), text=text)
            raise binder.refuse("DP116", "COUNT(DISTINCT ...) is accepted on one column", node,
                                f"count people with COUNT(DISTINCT {unit}), distinct values with COUNT(DISTINCT col), "
                                "or GROUP BY the columns")
        if not isinstance(arg, exp.Column):
            # Counts the rows where the value is not NULL: no bounds needed.
            expr = strip_qualifiers(arg)
            return AggregateCall(kind=VALUES, column=Column(name=expr.sql(dialect=Dpsql), type="text"), text=text, expr=expr)
        return AggregateCall(kind=VALUES, column=binder.column(arg, node), text=text)

    def accuracy_first(self, call: AggregateCall) -> str | None:
        return None

    def row_count(self, call: AggregateCall) -> tuple[bool, str | None]:
        if call.kind in (UNITS, DISTINCT):
            return False, None
        return True, call.column.name if call.column is not None else None

    def value_type(self, call: AggregateCall) -> str:
        return "DOUBLE"

    def needs(self, call: AggregateCall, query: BoundQuery, bounding: Bounding) -> Needs:
        return Needs(releases=((_raw(call), _sensitivity(call, query, bounding)),))

    def plan(self, call: AggregateCall, index: int, planning: Planning, share: Share) -> CountEstimate:
        return CountEstimate((planning.release(_raw(call)),))


def _raw(call: AggregateCall) -> RawAggregate:
    if call.kind == STAR:
        return RawAggregate("count_rows")
    if call.kind == UNITS:
        return RawAggregate("count_units", call.column)
    if call.kind == DISTINCT:
        return RawAggregate("distinct_values", call.column)
    return RawAggregate("count_values", call.column, expr=call.expr)


def _sensitivity(call: AggregateCall, query: BoundQuery, bounding: Bounding) -> Fraction:
    if call.kind == UNITS and not query.keys:
        return Fraction(1)
    return Fraction(bounding.max_rows)


COUNTS = Counts()

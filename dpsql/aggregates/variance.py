"""VARIANCE, VAR_SAMP, VAR_POP, STDDEV, STDDEV_SAMP, STDDEV_POP of a bounded column or per-row
expression: three discrete Laplace releases (a count, a centred sum and a centred sum of squares),
post-processed by dpsql/mechanisms/variance.py.

Sensitivity (policy only), with values clamped to [L, U] on the column's grid and centred on
the midpoint c (|x - c| <= R/2): the count k, the centred sum k R/2, the centred squares k (R/2)^2
on their own grid (ir.plan.square_grid); the centred sum and the count are AVG's, and shared with
an AVG of the same column. The estimate is not monotone in the centred sum, so arithmetic over it
gets no corner interval; a bare one gets the sound interval of mechanisms/variance.bounds. Its
intervals are derived for Laplace noise: a query with one keeps Laplace noise (an EXPLAIN note).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, cast

from sqlglot import exp

from dpsql.aggregates.base import Binder, LaplaceEstimate, Needs, Planning, Share, per_rows, width
from dpsql.aggregates.sums import GridSum, bind_bounded
from dpsql.ir.plan import Bounding, Cell, Plan, RawAggregate, release_name, square_units
from dpsql.ir.query import AggregateCall, BoundQuery
from dpsql.mechanisms import variance
from dpsql.mechanisms.base import fmt
from dpsql.mechanisms.laplace import LaplaceSpec
from dpsql.mechanisms.variance import PARTS, VarianceSpec

SPELLINGS: dict[type[exp.Expr], str] = {exp.Variance: "var_samp", exp.VariancePop: "var_pop", exp.Stddev: "stddev_samp",
                                        exp.StddevSamp: "stddev_samp", exp.StddevPop: "stddev_pop"}
GAUSSIAN_NOTE = "STDDEV/VARIANCE are derived from Laplace releases: this query uses Laplace noise, not Gaussian"


@dataclass(frozen=True, slots=True)
class VarianceEstimate(LaplaceEstimate):
    """The statistic from its releases (sum of squares, sum, count) and their public spec."""

    releases: tuple[int, ...]  # (centred sum of squares, centred sum, count)
    variance: VarianceSpec
    kind = "variance"
    corners = False
    doubles = True

    def value(self, released: Sequence[Any]) -> Any:
        squares, total, count = released
        return variance.estimate(self.variance, float(count), float(total), float(squares))

    def cells(self, plan: Plan, columns: Mapping[str, Sequence[Any]], rows: int) -> list[Cell]:
        spec, widths = self.variance, variance.widths(self.variance)
        out = []
        for squares, total, count in zip(*(columns[release_name(r)] for r in self.releases)):
            value = variance.estimate(spec, float(count), float(total), float(squares))
            low, high = variance.bounds(spec, float(count), float(total), float(squares), widths)
            low, high = min(low, value), max(high, value)  # its sound interval, around the value
            out.append(Cell(value, float(max(high - value, value - low)), None, float(low), float(high)))
        return out

    def expected(self, plan: Plan) -> str:
        spec = self.variance
        squares = width(plan, self.releases[0], PARTS)
        top = spec.half_range if spec.root else spec.half_range ** 2
        what = "the variance's" if not spec.root else "the variance (before the square root):"
        return (f"within [0, {fmt(top)}] (the clamp); {what} about ±{fmt(squares)} / n for a group of n rows "
                f"({per_rows(squares)}), plus terms in the noisy mean; depends on n")


class Variances:
    """The VARIANCE and STDDEV family (module docstring)."""

    kinds = tuple(dict.fromkeys(SPELLINGS.values()))
    classes: tuple[type[exp.Expr], ...] = tuple(SPELLINGS)
    names: tuple[str, ...] = ()
    filterable = False

    def bind(self, node: exp.Expr, binder: Binder, text: str) -> AggregateCall:
        if isinstance(node.this, exp.Distinct):
            # The centred squares of two distinct values symmetric about the midpoint are one value
            # to the engine's DISTINCT: no release of the distinct values' squares in one pass.
            raise binder.refuse("DP116", "DISTINCT is accepted inside COUNT, SUM and AVG only, not STDDEV or VARIANCE",
                                node, "take the variance of the rows (without DISTINCT), or SUM/AVG/COUNT(DISTINCT x)")
        return bind_bounded(node, binder, text, SPELLINGS[type(node)])

    def accuracy_first(self, call: AggregateCall) -> str | None:
        return "its error depends on the values"

    def row_count(self, call: AggregateCall) -> tuple[bool, str | None]:
        return False, None

    def value_type(self, call: AggregateCall) -> str:
        return "DOUBLE"

    def needs(self, call: AggregateCall, query: BoundQuery, bounding: Bounding) -> Needs:
        # Centred on the bounds' midpoint: the sum's and the squares' sensitivities are those of
        # values in [-R/2, R/2] (mechanisms/variance.py).
        rows = Fraction(bounding.max_rows)
        sums = GridSum.of(call)
        squares = _squares(sums)
        notes = (GAUSSIAN_NOTE,) if query.noise == "gaussian" else ()
        return Needs(releases=((squares, rows * square_units(squares)), (sums.centred, rows * sums.deviation), (sums.count, rows)),
                     laplace_only=True, notes=notes)

    def plan(self, call: AggregateCall, index: int, planning: Planning, share: Share) -> VarianceEstimate:
        sums = GridSum.of(call)
        squares, total, count = (planning.release(raw) for raw in (_squares(sums), sums.centred, sums.count))
        raw = sums.centred
        # The planner keeps Laplace noise for a query with STDDEV/VARIANCE (laplace_only).
        spec = VarianceSpec(count=cast(LaplaceSpec, planning.spec(count)), total=cast(LaplaceSpec, planning.spec(total)),
                            squares=cast(LaplaceSpec, planning.spec(squares)), grid=raw.grid, square_grid=planning.unit(squares),
                            half_range=Fraction(raw.upper_units - raw.lower_units) * raw.grid / 2,
                            sample=call.kind.endswith("_samp"), root=call.kind.startswith("stddev"))
        return VarianceEstimate((squares, total, count), spec)


def _squares(sums: GridSum) -> RawAggregate:
    raw = sums.centred
    return RawAggregate("sumsq_grid", raw.column, raw.grid, raw.lower_units, raw.upper_units, raw.center_units, raw.expr, raw.distinct)


VARIANCES = Variances()

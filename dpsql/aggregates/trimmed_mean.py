"""TRIMMED_MEAN(col, p): the mean of a bounded numeric column's values between its p- and
(1 - p)-quantiles (0 < p < 1/2), robust to outliers where AVG is not.

Sensitivity and budget (policy only; the argument in dpsql/mechanisms/trimmed_mean.py): the
aggregate takes one share eps of the query's epsilon, like MEDIAN, and spends no delta. Its
mechanism splits it in four: the window's ends are two exponential-mechanism quantiles (eps/4
each) over the coarse public grid of the column (aggregates/quantiles.em_values: at most 2^16
candidates, so the engine returns a histogram); given that released window [a, b], the sum of the
in-window values, centred on (a + b)/2 in units of (b - a)/2^21 (sensitivity k 2^20), and their
count (sensitivity k) get discrete Laplace noise (eps/4 each), k = max_rows. The window is paid
for and released first: it never comes from the data directly. The answer is never ⊥ and states
a per-cell 95% interval for the mean of the values inside the released window.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from sqlglot import exp

from dpsql.aggregates.base import Binder, Needs, Planning, RobustEstimate, Share, number_literal
from dpsql.aggregates.planning import HISTOGRAM_MAX_VALUES
from dpsql.aggregates.quantiles import MAX_QUANTILE_DENOMINATOR, em_values
from dpsql.ir.plan import Bounding, Cell, Plan, RobustRelease, ValueMap
from dpsql.ir.query import AggregateCall, BoundQuery
from dpsql.mechanisms import registry
from dpsql.mechanisms.trimmed_mean import TrimmedMeanSpec
from dpsql.mechanisms.window_exponential import Bracketed

TRIMMED = "trimmed_mean"
USAGE = "TRIMMED_MEAN(col, p)"


@dataclass(frozen=True, slots=True)
class TrimmedMeanEstimate(RobustEstimate):
    """A trimmed mean in column units (DOUBLE), with its per-cell 95% interval."""

    robust: int
    values: ValueMap
    kind = "trimmed_mean"

    def output_type(self, plan: Plan) -> str:
        return "DOUBLE"

    def decode(self, released: Any) -> Cell:
        assert isinstance(released, Bracketed)
        grid = self.values.grid if self.values.indexed and self.values.grid is not None else Fraction(0)
        step = grid or Fraction(1)
        value = Fraction(released.value)
        half = max(value - Fraction(released.low), Fraction(released.high) - value) * step
        # The mean is of values rounded to the grid: the unrounded ones' mean is within grid/2.
        return Cell(float(value * step), float(half + grid / 2))

    def expected(self, plan: Plan) -> str:
        spec = plan.robust[self.robust].spec
        lower = dict(registry.error(spec).details)
        return (f"the mean of the values inside a window between two exponential-mechanism quantiles over "
                f"{lower['candidates']} public candidates; depends on the data (each answer states its 95% interval, "
                "which grows with the window's width over the rows in it), never NULL")


class TrimmedMean:
    """TRIMMED_MEAN (module docstring)."""

    kinds = (TRIMMED,)
    classes: tuple[type[exp.Expr], ...] = ()
    names: tuple[str, ...] = ("trimmed_mean",)
    filterable = False

    def bind(self, node: exp.Expr, binder: Binder, text: str) -> AggregateCall:
        args = node.expressions
        if len(args) != 2:
            raise binder.refuse("DP124", f"TRIMMED_MEAN takes {USAGE}", node, f"write {USAGE}, e.g. TRIMMED_MEAN(income, 0.1)")
        p = number_literal(args[1])
        if p is None or not 0 < p < Fraction(1, 2) or p.denominator > MAX_QUANTILE_DENOMINATOR:
            raise binder.refuse("DP124", "the trim p of TRIMMED_MEAN must be a number literal strictly between 0 and 0.5, "
                                "with at most 15 decimal digits", node, "write TRIMMED_MEAN(income, 0.1): the mean of the values "
                                "between the 10% and 90% quantiles")
        column = binder.column(args[0], node)
        if column.type not in ("int", "float"):
            raise binder.refuse("DP117", f"TRIMMED_MEAN needs an int or float column; '{column.name}' is {column.type}", node,
                                "average a numeric column")
        if not column.bounded:
            raise binder.refuse("DP106", f"TRIMMED_MEAN({column.name}) needs public bounds for '{column.name}'", node,
                                f"declare lower and upper for {column.name} under [tables.{binder.table.name}.columns] in the policy")
        return AggregateCall(kind=TRIMMED, column=column, text=text, p=p)

    def accuracy_first(self, call: AggregateCall) -> str | None:
        return "its error depends on the values"

    def row_count(self, call: AggregateCall) -> tuple[bool, str | None]:
        return False, None

    def value_type(self, call: AggregateCall) -> str:
        return "DOUBLE"

    def needs(self, call: AggregateCall, query: BoundQuery, bounding: Bounding) -> Needs:
        return Needs(share=True)

    def plan(self, call: AggregateCall, index: int, planning: Planning, share: Share) -> TrimmedMeanEstimate:
        assert call.column is not None and call.p is not None
        values = em_values(call.column)
        span, size = values.index_range, values.domain_size
        assert span is not None and size is not None and size <= HISTOGRAM_MAX_VALUES  # the engine returns a histogram
        spec = TrimmedMeanSpec(share.epsilon, call.p, planning.bounding.max_rows, span[0], span[1])
        request = planning.rank_request(values, {call.p: 0, 1 - call.p: 0})
        return TrimmedMeanEstimate(planning.robust(RobustRelease(index, spec, request, values)), values)


TRIMMED_MEAN = TrimmedMean()

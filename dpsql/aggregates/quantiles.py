"""MEDIAN and QUANTILE in their spellings (quantile_disc/_cont, approx_quantile,
PERCENTILE_DISC/_CONT, WITHIN GROUP), approximate MIN and MAX, and IQR: order statistics of one
column, released by the exponential mechanism, SMed, PTR-Laplace or Scale.

Every parameter comes from the policy, the query and its budget share, never from data:
- k = max_rows (rows one person keeps); the rank shift s = ceil(k max(p, 1 - p));
- G = groups one person can touch (aggregates/planning.person_groups); the PTR tests use DLap(G/eps)
  and delta/G per group (dpsql/mechanisms/ptr.py);
- which mechanism: PTR-Laplace with a proposed bound (MEDIAN(col, b), OPTIONS (median_bound = b)),
  else OPTIONS (quantile_mechanism = ...), else the exponential mechanism over a fine grid of about
  2^24 steps on a bounded column (never ⊥, a 95% interval; MIN and MAX always), else SMed;
- the SMed grid is the column's `precision` (else 1 for int/date, else a 1-2-5 step from the
  bounds: ir.plan.median_grid); the coarse EM grid (quantile_mechanism = 'exponential') is the
  precision (int/date: 1), else the 1-2-5 step over 2^16 steps of the bounds, coarsened by powers
  of two until the candidates fit in 2^16; the fine grid the same over 2^24 steps, up to 2^26;
- IQR of a bounded column: two fine-grid EM quartiles with their interval (the default), two
  coarse EM quartiles (quantile_mechanism = 'exponential'), else Scale, whose base beta uses n_hat,
  a DP count: a COUNT the query already releases, else a count of the column's rows that the IQR
  pays for with a tenth of its share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from sqlglot import exp

from dpsql.aggregates.base import (
    Binder,
    Needs,
    Planning,
    RobustEstimate,
    Share,
    function_name,
    number_literal,
    within_group_argument,
)
from dpsql.catalog.policy import Column
from dpsql.ir.plan import Bounding, Cell, Plan, RawAggregate, RobustRelease, ValueMap, median_grid, release_name
from dpsql.ir.query import AggregateCall, BoundQuery
from dpsql.mechanisms import ptr
from dpsql.mechanisms.exponential import ExponentialIQRSpec, ExponentialQuantileSpec
from dpsql.mechanisms.laplace import LaplaceSpec
from dpsql.mechanisms.ptr import PTRLaplaceSpec, PTRTest, ScaleInput, ScaleSpec, SMedSpec
from dpsql.mechanisms.ranks import rank_shift
from dpsql.mechanisms.window_exponential import Bracketed, IQRIntervalSpec, QuantileIntervalSpec

QUANTILE, IQR = "quantile", "iqr"
EM_MAX_CANDIDATES = 1 << 16
FINE_STEPS = 1 << 24
FINE_MAX_CANDIDATES = 1 << 26
NHAT_SHARE = Fraction(1, 10)
QUARTILES = (Fraction(1, 4), Fraction(3, 4))
MAX_QUANTILE_DENOMINATOR = 10**15
NULL_NOTE = "MEDIAN/QUANTILE, IQR and MODE may answer NULL (⊥: not stable enough); their budget is charged either way"
# OPTIONS (quantile_mechanism = ...): the spellings accepted, and the mechanism each names.
MECHANISM_OPTIONS = {"smed": "smed", "ptr_laplace": "ptr-laplace", "ptr-laplace": "ptr-laplace",
                     "exponential": "exponential", "em": "exponential"}


def mechanism_option(text: str) -> str | None:
    """The mechanism OPTIONS (quantile_mechanism = text) names, or None for an unknown one."""
    return MECHANISM_OPTIONS.get(text)


def bound_conflicts(option: str | None) -> bool:
    """Whether OPTIONS (median_bound = b) contradicts the quantile_mechanism option (only
    PTR-Laplace takes a proposed bound)."""
    return option in ("smed", "exponential")


def quantile_mechanism(bound: Fraction | None, option: str | None, bounded: bool = False) -> str:
    """The mechanism of a quantile, from public facts only: PTR-Laplace with a proposed bound, else
    the option, else the exponential mechanism over a fine grid (about 2^24 steps) on a bounded
    column (it never refuses, its rank error grows only with the log of the grid, and it states a
    95% interval), else SMed (the only one for a column with a precision but no bounds)."""
    if bound is not None:
        return "ptr-laplace"
    return option or ("exponential-fine" if bounded else "smed")


def _mechanism(call: AggregateCall, query: BoundQuery) -> str:
    """The quantile's mechanism (public facts only); MIN and MAX (p = 0, 1) always the fine-grid EM."""
    if call.p in (0, 1):
        return "exponential-fine"
    return quantile_mechanism(call.bound, query.quantile_mechanism, call.column is not None and call.column.bounded)


def _value_share(query: BoundQuery) -> Fraction | None:
    """The value's share of an interval release's epsilon: 1 - OPTIONS (interval_share), else None
    (the mechanism's default: 2/5 for central quantiles, 3/5 for tails; docs/mechanisms.md)."""
    return None if query.interval_share is None else 1 - query.interval_share


def _fine_iqr(call: AggregateCall, query: BoundQuery) -> bool:
    """IQR by two fine-grid EM quartiles with their intervals: the default on a bounded column."""
    return call.column is not None and call.column.bounded and query.quantile_mechanism is None


def _em_iqr(call: AggregateCall, query: BoundQuery) -> bool:
    """IQR of a bounded column: Q3 - Q1 of two EM quartiles, unless the query asks for the PTR family
    (quantile_mechanism = 'smed' or 'ptr_laplace': Scale, clamped to [0, upper - lower]). Scale's 95% error factor
    beta^(ln 20 / eps') (eps' = a quarter of the share, beta = min(2, 1 + 60 s tau / n_hat)) is
    astronomically large unless n_hat >> 60 s tau (e.g. 1e40 at 100k rows and epsilon 0.1), while
    the EM quartiles' rank error is O(k log(K) / eps) ranks and the release is in [0, upper - lower]."""
    return call.column is not None and call.column.bounded and query.quantile_mechanism in (None, "exponential")


def _spends_delta(call: AggregateCall, query: BoundQuery) -> bool:
    """Whether the mechanism spends delta (every one but the exponential mechanism)."""
    if call.kind == IQR:
        return not _em_iqr(call, query)
    return _mechanism(call, query) not in ("exponential", "exponential-fine")


def value_map(column: Column, grid: Fraction | None) -> ValueMap:
    """How the engine maps the column for ranking: bounds from the policy, `grid` (or none)."""
    return ValueMap(column, grid, column.lower, column.upper)


def em_values(column: Column) -> ValueMap:
    """The coarse EM grid: the precision (int/date: 1), else the 1-2-5 step over 2^16 steps of the
    bounds; coarsened by powers of two until at most 2^16 candidates (policy only)."""
    return _coarsened(column, EM_MAX_CANDIDATES, EM_MAX_CANDIDATES)


def fine_values(column: Column) -> ValueMap:
    """The fine public grid: the precision (int/date: 1), else the 1-2-5 step over 2^24 steps of the
    bounds; coarsened by powers of two until at most 2^26 candidates (policy only)."""
    return _coarsened(column, FINE_STEPS, FINE_MAX_CANDIDATES)


def _coarsened(column: Column, steps: int, most: int) -> ValueMap:
    grid = median_grid(column, steps)
    assert grid is not None
    values = value_map(column, grid)
    while (values.domain_size or 0) > most:
        grid *= 2
        values = value_map(column, grid)
    return values


def _cut(end: float, values: ValueMap) -> float:
    """An interval end cut at the column's bounds (public)."""
    if values.lower is not None:
        end = max(end, float(values.lower))
    if values.upper is not None:
        end = min(end, float(values.upper))
    return end


def _bracket(values: ValueMap, bracketed: Bracketed) -> tuple[Any, Fraction, Fraction]:
    """The release in grid steps: its value, the half-width of a symmetric interval holding [low,
    high] (column units) and the grid (0 for ints and dates on their unit grid). Ranking values
    rounded to a grid g moves each order statistic by at most g/2 (one quantile) or g (a difference
    of two, IQR): the caller adds that slack."""
    grid = values.grid if values.indexed and values.grid is not None else Fraction(0)
    step = grid if grid else Fraction(1)
    half = max(bracketed.value - bracketed.low, bracketed.high - bracketed.value) * step
    return bracketed.value, half, grid


@dataclass(frozen=True, slots=True)
class QuantileEstimate(RobustEstimate):
    """A quantile (MIN, MAX) released as a value of the column (a date for a date column)."""

    robust: int
    values: ValueMap
    exact: bool  # it releases one of the mapped values (SMed, the EM), not a noisy real (PTR-Laplace)
    smed: bool  # SMed: the exact order statistic of values rounded to the grid
    kind = "quantile"

    def output_type(self, plan: Plan) -> str:
        column = self.values.column
        if column.type == "date":
            return "DATE"
        if self.exact and column.type == "int":
            return "BIGINT" if (self.values.grid or Fraction(1)).denominator == 1 else "DOUBLE"
        return "DOUBLE"

    def stated_ci95(self, plan: Plan, ci95: float | None) -> float | None:
        if not self.smed:
            return ci95
        # SMed releases the exact order statistic of the values rounded to the public grid: the
        # quantile of the unrounded values lies within half a grid step (0 on ints and dates).
        return float(self.values.grid) / 2 if self.values.indexed and self.values.grid is not None else 0.0

    def decode(self, released: Any) -> Cell:
        if released is ptr.REFUSED:
            return Cell(None)
        if isinstance(released, Bracketed):
            value, half, grid = _bracket(self.values, released)
            if self.values.column.type == "date":  # ends as numbers would not read as dates: value ± days
                return Cell(self.values.decode(value), float(half + grid / 2))
            # The interval's own ends (asymmetric where the width reached a bound), widened by the
            # grid's rounding slack and cut at the column's bounds, which hold every order statistic.
            low = _cut(float(self.values.decode(released.low)) - float(grid) / 2, self.values)
            high = _cut(float(self.values.decode(released.high)) + float(grid) / 2, self.values)
            return Cell(self.values.decode(value), float(half + grid / 2), None, low, high)
        return Cell(self.values.decode(released))


@dataclass(frozen=True, slots=True)
class IQREstimate(RobustEstimate):
    """IQR: a width in column units (DOUBLE)."""

    robust: int
    values: ValueMap
    kind = "iqr"

    def output_type(self, plan: Plan) -> str:
        return "DOUBLE"

    def reads(self, release: RobustRelease, raw: Any, columns: Mapping[str, Sequence[Any]], row: int) -> Any:
        if release.n_hat is None:
            return raw
        return ScaleInput(raw, columns[release_name(release.n_hat)][row])  # Scale: the order statistics and n_hat

    def decode(self, released: Any) -> Cell:
        if released is ptr.REFUSED:
            return Cell(None)
        if isinstance(released, Bracketed):
            value, half, grid = _bracket(self.values, released)
            step = grid or 1
            # Ends of the width's interval, widened by the rounding slack of two order statistics
            # and cut at [0, upper - lower] (a width of values within the bounds).
            span = None if self.values.lower is None or self.values.upper is None else float(self.values.upper - self.values.lower)
            low = max(float(released.low * step - grid), 0.0)
            high = float(released.high * step + grid)
            return Cell(float(value * step), float(half + grid), None, low, high if span is None else min(high, span))
        return Cell(float(released * self.values.step))  # a width in grid units (Scale: already in column units)


class Quantiles:
    """MEDIAN, QUANTILE and their spellings, MIN, MAX and IQR (module docstring)."""

    kinds = (QUANTILE, IQR)
    classes: tuple[type[exp.Expr], ...] = (exp.Median, exp.Quantile, exp.PercentileDisc, exp.PercentileCont,
                                           exp.ApproxQuantile, exp.Min, exp.Max)
    names: tuple[str, ...] = ("iqr", "median", "quantile")
    filterable = False

    def bind(self, node: exp.Expr, binder: Binder, text: str) -> AggregateCall:  # noqa: C901 - one branch per spelling (MEDIAN, PERCENTILE_*, QUANTILE, IQR) and its argument checks
        iqr = isinstance(node, exp.Anonymous) and function_name(node) == "iqr"
        p: Fraction | None = None if iqr else Fraction(1, 2)
        bound: Fraction | None = None
        if isinstance(node, exp.WithinGroup):
            arg = within_group_argument(node, binder)
            p = _quantile_literal(node.this.this, node, binder)
        elif isinstance(node, exp.Anonymous):
            args = node.expressions
            named = function_name(node)
            usage, most = (("QUANTILE(col, p) or QUANTILE(col, p, b)", 3) if named == "quantile" else
                           ("MEDIAN(col) or MEDIAN(col, b)", 2) if not iqr else ("IQR(col)", 1))
            if len(args) < (2 if named == "quantile" else 1) or len(args) > most:
                raise binder.refuse("DP124", f"{named.upper()} takes {usage}", node, f"write {usage}")
            arg = args[0]
            if named == "quantile":
                p = _quantile_literal(args[1], node, binder)
            if len(args) == most and not iqr:
                bound = _bound_literal(args[-1], node, binder)
        else:
            arg = node.this
            if isinstance(node, (exp.Min, exp.Max)):
                if node.expressions:
                    raise binder.refuse("DP124", f"{function_name(node).upper()} takes one column", node,
                                        f"write {function_name(node).upper()}(col)")
                p = Fraction(0) if isinstance(node, exp.Min) else Fraction(1)
            elif isinstance(node, (exp.Quantile, exp.ApproxQuantile)):
                p = _quantile_literal(node.args.get("quantile"), node, binder)
            elif isinstance(node, (exp.PercentileDisc, exp.PercentileCont)):
                p = _quantile_literal(node.args.get("expression"), node, binder)
        column = binder.column(arg, node)
        name = ("IQR" if iqr else "MEDIAN" if p == Fraction(1, 2) else "MIN" if p == 0 else "MAX" if p == 1 else "QUANTILE")
        if column.type == "timestamp":
            raise binder.refuse("DP117", f"{name} of a timestamp column is not supported; '{column.name}' is timestamp", node,
                                "rank a date column, or count per date_trunc('day', col) group (MODE works on any column)")
        if column.type not in ("int", "float", "date"):
            raise binder.refuse("DP117", f"{name} needs an int, float or date column; '{column.name}' is {column.type}", node,
                                "rank a numeric or date column (MODE works on any column)")
        if iqr:
            return AggregateCall(kind=IQR, column=column, text=text)
        bound = bound if bound is not None or name in ("MIN", "MAX") else binder.median_bound
        _check_mechanism(name, column, bound, node, binder)
        return AggregateCall(kind=QUANTILE, column=column, text=text, p=p, bound=bound)

    def accuracy_first(self, call: AggregateCall) -> str | None:
        return "its error depends on the values"

    def row_count(self, call: AggregateCall) -> tuple[bool, str | None]:
        return False, None

    def value_type(self, call: AggregateCall) -> str:
        return "DATE" if call.kind == QUANTILE and call.column is not None and call.column.type == "date" else "DOUBLE"

    def needs(self, call: AggregateCall, query: BoundQuery, bounding: Bounding) -> Needs:
        delta = _spends_delta(call, query)
        return Needs(share=True, delta=delta, notes=(NULL_NOTE,) if delta else ())

    def plan(self, call: AggregateCall, index: int, planning: Planning, share: Share) -> RobustEstimate:
        if call.kind == IQR:
            return _plan_iqr(call, index, planning, share)
        return _plan_quantile(call, index, planning, share)


def _plan_quantile(call: AggregateCall, index: int, planning: Planning, share: Share) -> QuantileEstimate:
    p, column = call.p, call.column
    assert p is not None and column is not None
    k = planning.bounding.max_rows
    mechanism = _mechanism(call, planning.query)
    epsilon, delta = share.epsilon, share.delta
    if mechanism == "exponential-fine":
        values = fine_values(column)
        span = values.index_range
        assert span is not None
        fine = QuantileIntervalSpec(epsilon, p, k, span[0], span[1], value_share=_value_share(planning.query))
        robust = planning.robust(RobustRelease(index, fine, planning.rank_request(values, fine.windows), values))
        return QuantileEstimate(robust, values, exact=True, smed=False)
    if mechanism == "exponential":
        values = em_values(column)
        span = values.index_range
        assert span is not None
        spec = ExponentialQuantileSpec(epsilon, p, k, span[0], span[1])
        robust = planning.robust(RobustRelease(index, spec, planning.rank_request(values, {p: 0}), values))
        return QuantileEstimate(robust, values, exact=True, smed=False)
    shift = rank_shift(k, p)
    if mechanism == "ptr-laplace":
        assert call.bound is not None
        test = PTRTest(epsilon / 2, delta, planning.groups)
        values = value_map(column, None)
        # The release is clamped to the bounds.
        ptr_spec = replace(PTRLaplaceSpec(test, epsilon / 2, p, shift, call.bound), lower=values.lower, upper=values.upper)
        robust = planning.robust(RobustRelease(index, ptr_spec, planning.rank_request(values, {p: ptr_spec.reach}), values))
        return QuantileEstimate(robust, values, exact=False, smed=False)
    smed = SMedSpec(PTRTest(epsilon, delta, planning.groups), p, shift)
    values = value_map(column, median_grid(column))
    robust = planning.robust(RobustRelease(index, smed, planning.rank_request(values, {p: smed.reach}), values))
    return QuantileEstimate(robust, values, exact=True, smed=True)


def _plan_iqr(call: AggregateCall, index: int, planning: Planning, share: Share) -> IQREstimate:
    column = call.column
    assert column is not None
    k = planning.bounding.max_rows
    epsilon, query = share.epsilon, planning.query
    if _fine_iqr(call, query):
        values = fine_values(column)
        span = values.index_range
        assert span is not None
        value_part = _value_share(planning.query)
        fine = (IQRIntervalSpec(epsilon, k, span[0], span[1]) if value_part is None
                else IQRIntervalSpec(epsilon, k, span[0], span[1], value_part))
        return IQREstimate(planning.robust(RobustRelease(index, fine, planning.rank_request(values, fine.windows), values)), values)
    if _em_iqr(call, query):
        values = em_values(column)
        span = values.index_range
        assert span is not None
        em = ExponentialIQRSpec(epsilon, k, span[0], span[1])
        request = planning.rank_request(values, {q: 0 for q in QUARTILES})
        return IQREstimate(planning.robust(RobustRelease(index, em, request, values)), values)
    n_hat = planning.reusable_count(column.name)
    if n_hat is None:
        raw = RawAggregate("count_finite", column) if column.type == "float" else RawAggregate("count_values", column)
        n_hat, epsilon = planning.add_release(raw, LaplaceSpec(Fraction(k), epsilon * NHAT_SHARE)), epsilon * (1 - NHAT_SHARE)
    values = value_map(column, None)
    width = None if values.lower is None or values.upper is None else values.upper - values.lower
    spec = ScaleSpec(epsilon / 4, share.delta, planning.groups, rank_shift(k, QUARTILES[1]), span=width)
    request = planning.rank_request(values, {q: spec.reach for q in QUARTILES})
    return IQREstimate(planning.robust(RobustRelease(index, spec, request, values, n_hat=n_hat)), values)


def _check_mechanism(name: str, column: Column, bound: Fraction | None, node: exp.Expr, binder: Binder) -> None:
    option = binder.quantile_mechanism
    where = f"under [tables.{binder.table.name}.columns] in the policy"
    if name in ("MIN", "MAX"):  # always the fine-grid exponential mechanism (bound and option do not apply)
        if not column.bounded:
            raise binder.refuse("DP106", f"the approximate {name}({column.name}) needs public bounds for '{column.name}'",
                                node, f"declare lower and upper for {column.name} {where}")
        return
    if bound is not None and option in ("smed", "exponential"):
        raise binder.invalid_option(f"{name} with a proposed bound runs PTR-Laplace, but quantile_mechanism = '{option}'",
                                    node, "drop the bound or the option")
    mechanism = quantile_mechanism(bound, option, column.bounded)
    if mechanism == "ptr-laplace" and bound is None:
        raise binder.invalid_option(f"quantile_mechanism = 'ptr_laplace' needs a proposed bound for {name}({column.name})",
                                    node, f"write {name}({column.name}, b) or add median_bound = b to OPTIONS")
    if mechanism == "exponential" and not column.bounded:
        raise binder.refuse("DP106", f"the exponential-mechanism {name}({column.name}) needs public bounds for '{column.name}'",
                            node, f"declare lower and upper for {column.name} {where}")
    if mechanism == "smed" and median_grid(column) is None:
        raise binder.refuse("DP106", f"{name}({column.name}) ranks a float column on a public grid: declare 'precision' "
                            f"(or lower and upper) for '{column.name}'", node,
                            f"e.g. precision = 100 for {column.name} {where}, or propose a bound: {name}({column.name}, b)")


def _quantile_literal(node: exp.Expr | None, call: exp.Expr, binder: Binder) -> Fraction:
    value = number_literal(node)
    # p = a/b in lowest terms scales the exponential mechanism's score sensitivity by b: keep b sane
    if value is None or not 0 < value < 1 or value.denominator > MAX_QUANTILE_DENOMINATOR:
        raise binder.refuse("DP124", "the quantile p must be a number literal strictly between 0 and 1, "
                            "with at most 15 decimal digits", call,
                            "write QUANTILE(age, 0.25) or PERCENTILE_DISC(0.9) WITHIN GROUP (ORDER BY age)")
    return value


def _bound_literal(node: exp.Expr, call: exp.Expr, binder: Binder) -> Fraction:
    value = number_literal(node)
    if value is None or value <= 0:
        raise binder.refuse("DP124", "the proposed bound b of MEDIAN(col, b) or QUANTILE(col, p, b) must be a number literal greater than 0", call,
                            "write MEDIAN(income, 100): b bounds how far one person may move the median")
    return value


QUANTILES = Quantiles()

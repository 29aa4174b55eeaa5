"""Post-processing SQL of one query: its outputs, HAVING, ORDER BY and LIMIT over its released
aggregates, run in the released-values database (backend/auxiliary/released_db.py).

It reads one table of released values only (`OUTPUTS`): the group keys, each aggregate's
estimate (`__a<j>`, computed by its Estimate, dpsql/aggregates/), its 95% half-width, the
interval's two ends (clipped to the possible range: not value ∓ half-width there) and its
confidence (MODE), and, for an output that is arithmetic over aggregates, the aggregates' values at
the corners of its releases' intervals (execution/intervals.py). The analyst's expressions run
here unchanged: aggregate placeholders are already that table's column names. Arithmetic on
released values that overflows yields NULL (TRY) instead of failing after the charge.
"""

from __future__ import annotations

from sqlglot import exp

from dpsql.backend.sql.plan_sql import key_type
from dpsql.ir.plan import (
    Plan,
    aggregate_confidence_name,
    aggregate_high_name,
    aggregate_low_name,
    aggregate_name,
    aggregate_width_name,
    corner_name,
)
from dpsql.ir.query import ColumnRef, key_name
from dpsql.mechanisms import registry

OUTPUTS = "__dpsql_noisy"

Corners = dict[int, tuple[int, ...]]  # output index -> the releases its corner interval shifts


def confident(plan: Plan, aggregate: int) -> bool:
    """Whether an aggregate's cells state a confidence (its robust release's mechanism declares one)."""
    robust = plan.estimates[aggregate].robust
    return robust is not None and registry.output(plan.robust[robust].spec).confidence


def output_table(plan: Plan, corners: Corners) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Names and engine types of the released-values table the outputs read (from the plan alone)."""
    names = [key_name(i) for i in range(len(plan.query.keys))]
    types = [key_type(k.column.type) for k in plan.query.keys]
    for index, estimate in enumerate(plan.estimates):
        names += [aggregate_name(index), aggregate_width_name(index), aggregate_low_name(index), aggregate_high_name(index)]
        types += [estimate.output_type(plan), "DOUBLE", "DOUBLE", "DOUBLE"]
        if confident(plan, index):
            names.append(aggregate_confidence_name(index))
            types.append("DOUBLE")
    for output, releases in corners.items():
        for corner in range(2 ** len(releases)):
            for index in plan.query.outputs[output].aggregates:
                names.append(corner_name(index, output, corner))
                types.append("DOUBLE")
    return tuple(names), tuple(types)


def _safe(expr: exp.Expr) -> exp.Expr:
    """TRY(expr): only released values are here, so the NULL reveals nothing private."""
    if isinstance(expr, exp.Column):
        return expr
    return exp.func("try", expr)


def _at_corner(expr: exp.Expr, output: int, corner: int) -> exp.Expr:
    def visit(node: exp.Expr) -> exp.Expr:
        ref = ColumnRef.of(node)
        if ref is not None and ref.kind == "aggregate":
            return exp.column(corner_name(ref.index, output, corner))
        return node

    return expr.copy().transform(visit, copy=False)


def _corner_column(output: int, corner: int) -> str:
    """The inner column holding output `output` evaluated at corner `corner` (see output_select)."""
    return f"__corner{output}_{corner}"


def output_select(plan: Plan, corners: Corners) -> exp.Select:
    """SELECT outputs (with their half-widths, corner bounds and confidences) FROM the released
    aggregates, with HAVING, ORDER BY and LIMIT."""
    query = plan.query
    columns: list[exp.Expr] = []
    at_corners: list[exp.Expr] = []  # each corner evaluated once, in a subquery; the ends read its columns
    for index, output in enumerate(query.outputs):
        value = _safe(output.expr.copy())
        columns.append(exp.alias_(value, ColumnRef("output", index).name, copy=False))
        if output.aggregate is not None:  # a bare aggregate: its own half-width and ends (and confidence)
            columns.append(exp.alias_(exp.column(aggregate_width_name(output.aggregate)), ColumnRef("width", index).name, copy=False))
            columns.append(exp.alias_(exp.column(aggregate_low_name(output.aggregate)), ColumnRef("low", index).name, copy=False))
            columns.append(exp.alias_(exp.column(aggregate_high_name(output.aggregate)), ColumnRef("high", index).name, copy=False))
            if confident(plan, output.aggregate):
                columns.append(exp.alias_(exp.column(aggregate_confidence_name(output.aggregate)), ColumnRef("confidence", index).name,
                                          copy=False))
        elif index in corners:
            names = [_corner_column(index, c) for c in range(2 ** len(corners[index]))]
            at_corners += [exp.alias_(_safe(_at_corner(output.expr, index, c)), name, copy=False) for c, name in enumerate(names)]
            # LEAST/GREATEST skip NULLs: a corner that fails (x // 0, an overflow) must not narrow
            # the interval, so any NULL corner makes both ends NULL (read as unbounded).
            failed = exp.or_(*[exp.Is(this=exp.column(n), expression=exp.Null()) for n in names], copy=False)
            for ref, func in ((ColumnRef("low", index), "least"), (ColumnRef("high", index), "greatest")):
                end = exp.func(func, value.copy(), *[exp.column(n) for n in names])
                columns.append(exp.alias_(exp.Case(ifs=[exp.If(this=failed.copy(), true=exp.Null())], default=end), ref.name, copy=False))
    source: exp.Expr = exp.to_identifier(OUTPUTS)
    if at_corners:  # the released table with its corner columns, under the same name (HAVING and ORDER BY read it)
        source = exp.select(exp.Star(), *at_corners, copy=False).from_(exp.to_identifier(OUTPUTS), copy=False).subquery(OUTPUTS, copy=False)
    select = exp.select(*columns, copy=False).from_(source, copy=False)
    if query.having is not None:
        select = select.where(_safe(query.having.copy()))
    if query.order:
        select = select.order_by(*[exp.Ordered(this=_safe(o.expr.copy()), desc=o.descending, nulls_first=o.nulls_first)
                                   for o in query.order])
    # Without ORDER BY, rows keep the table's order (public domain order, or sorted selected keys).
    if query.limit is not None:
        select = select.limit(query.limit)
    if query.offset is not None:
        select = select.offset(query.offset)
    return select

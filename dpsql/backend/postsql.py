"""Post-processing SQL over the noisy table: outputs, HAVING, ORDER BY, LIMIT, and 95% intervals.

This runs only on released (noisy) values and public keys, so it costs no privacy. Each analyst
aggregate is an expression over release columns (AVG = mid + centered sum / max(count, 1),
clamped to the column's bounds). A cell's 95% interval comes from interval arithmetic: each of
its m releases is taken at its (1 - 0.05/m) interval (a union bound keeps the joint level at 95%)
and the expression is evaluated at every corner.
"""

from __future__ import annotations

import functools
import itertools
from fractions import Fraction

from sqlglot import exp

from dpsql.backend.sqlgen import number
from dpsql.ir.plan import (
    Estimate,
    Plan,
    release_name,
    robust_ci_name,
    robust_confidence_name,
    robust_name,
)
from dpsql.ir.query import ColumnRef, refs
from dpsql.mechanisms import registry
from dpsql.mechanisms.gaussian import GaussianSpec
from dpsql.mechanisms.laplace import LaplaceSpec

NOISY = "__dpsql_noisy"
MAX_CORNER_RELEASES = 4


def estimate_sql(estimate: Estimate, shift: dict[int, exp.Expr] | None = None) -> exp.Expr:
    """An analyst aggregate as an expression over (possibly shifted) release columns."""

    def release(index: int) -> exp.Expr:
        column = exp.column(release_name(index))
        offset = (shift or {}).get(index)
        return exp.paren(exp.Add(this=column, expression=offset)) if offset is not None else column

    if estimate.kind == "robust":
        assert estimate.robust is not None
        return exp.column(robust_name(estimate.robust))  # a value, or NULL for ⊥
    if estimate.kind in ("count", "sum"):
        return release(estimate.releases[0])
    if estimate.kind == "variance":
        return _variance_sql(estimate, *(release(i) for i in estimate.releases))
    total, count = (release(i) for i in estimate.releases)
    column = estimate.column
    assert column is not None and column.lower is not None and column.upper is not None
    mean = exp.Add(
        this=number(estimate.center),
        expression=exp.Div(this=total, expression=exp.func("greatest", count, exp.Literal.number(1))),
    )
    return exp.func("least", exp.func("greatest", mean, number(column.lower)), number(column.upper))


def _variance_sql(estimate: Estimate, squares: exp.Expr, total: exp.Expr, count: exp.Expr) -> exp.Expr:
    """mechanisms/variance.estimate in SQL: S2/n - (S1/n)^2 (times n/(n-1)), clamped, sqrt for STDDEV."""
    spec = estimate.variance
    assert spec is not None
    n = exp.func("greatest", exp.cast(count, "DOUBLE"), exp.Literal.number(2 if spec.sample else 1))
    mean = exp.Div(this=total, expression=n.copy())
    var: exp.Expr = exp.Sub(this=exp.Div(this=squares, expression=n.copy()), expression=exp.Mul(this=mean, expression=mean.copy()))
    if spec.sample:
        var = exp.Mul(this=exp.paren(var), expression=exp.Div(this=n.copy(), expression=exp.Sub(this=n.copy(), expression=exp.Literal.number(1))))
    clamped = exp.func("least", exp.func("greatest", var, exp.Literal.number(0)), number(Fraction(spec.half_range) ** 2))
    return exp.func("sqrt", clamped) if spec.root else clamped


def variance_deps(expr: exp.Expr, plan: Plan) -> bool:
    """Whether an output expression reads a VARIANCE/STDDEV estimate (its corners are no interval:
    the estimate is not monotone in the centred sum; mechanisms/variance.bounds is)."""
    return any(plan.estimates[a].kind == "variance" for a in refs(expr, "aggregate"))


def _substitute(expr: exp.Expr, plan: Plan, shift: dict[int, exp.Expr] | None = None) -> exp.Expr:
    def visit(node: exp.Expr) -> exp.Expr:
        ref = ColumnRef.of(node)
        if ref is not None and ref.kind == "aggregate":
            return exp.paren(estimate_sql(plan.estimates[ref.index], shift))
        return node

    return expr.copy().transform(visit)


def robust_deps(expr: exp.Expr, plan: Plan) -> tuple[int, ...]:
    """The robust releases an output expression depends on."""
    used = refs(expr, "aggregate")
    return tuple(sorted({plan.estimates[a].robust for a in used if plan.estimates[a].kind == "robust"}))  # type: ignore[misc]


def release_deps(expr: exp.Expr, plan: Plan) -> tuple[int, ...]:
    """The releases an output expression depends on."""
    used = refs(expr, "aggregate")
    return tuple(sorted({r for a in used for r in plan.estimates[a].releases}))


def release_width(plan: Plan, index: int, parts: int) -> Fraction:
    """Half-width, in real units, of release `index` at level 1 - 0.05/parts."""
    release = plan.releases[index]
    return _width(release.spec, parts) * release.unit


@functools.lru_cache(maxsize=4096)
def _width(spec: LaplaceSpec | GaussianSpec, parts: int) -> int:
    # Depends on the public spec only; cached because every answer reports it.
    return spec.half_width(1 - 0.05 / parts)


def _safe(expr: exp.Expr) -> exp.Expr:
    """TRY(expr): arithmetic on released values that overflows yields NULL instead of failing
    after the charge. Only noisy values are here, so the NULL reveals nothing private."""
    if isinstance(expr, exp.Column):
        return expr
    return exp.func("try", expr)


def post_select(plan: Plan) -> exp.Select:
    """SELECT outputs (and interval corners) FROM the noisy table, with HAVING/ORDER/LIMIT."""
    query = plan.query
    columns: list[exp.Expr] = []
    for index, output in enumerate(query.outputs):
        value = _safe(_substitute(output.expr, plan))
        columns.append(exp.alias_(value, ColumnRef("output", index).name))
        deps = release_deps(output.expr, plan)
        if deps and len(deps) <= MAX_CORNER_RELEASES and not robust_deps(output.expr, plan) and not variance_deps(output.expr, plan):
            corners = [_safe(_corner(output.expr, plan, deps, signs)) for signs in itertools.product((-1, 1), repeat=len(deps))]
            columns.append(exp.alias_(exp.func("least", value.copy(), *corners), ColumnRef("low", index).name))
            columns.append(exp.alias_(exp.func("greatest", value.copy(), *[c.copy() for c in corners]), ColumnRef("high", index).name))
        robust = robust_deps(output.expr, plan)
        if not deps and len(robust) == 1 and output.expr.find(exp.Column) == output.expr:
            release = plan.robust[robust[0]]
            if registry.output(release.spec).interval and (release.values is None or release.values.column.type != "date"):
                ci = exp.column(robust_ci_name(robust[0]))  # a bare value with its per-row 95% interval
                columns.append(exp.alias_(exp.Sub(this=value.copy(), expression=ci), ColumnRef("low", index).name))
                columns.append(exp.alias_(exp.Add(this=value.copy(), expression=ci.copy()), ColumnRef("high", index).name))
            if registry.output(release.spec).confidence:  # a bare MODE with its per-row confidence
                columns.append(exp.alias_(exp.column(robust_confidence_name(robust[0])), ColumnRef("confidence", index).name))
    select = exp.select(*columns).from_(exp.to_identifier(NOISY))
    if query.having is not None:
        select = select.where(_safe(_substitute(query.having, plan)))
    if query.order:
        select = select.order_by(
            *[exp.Ordered(this=_safe(_substitute(o.expr, plan)), desc=o.descending, nulls_first=o.nulls_first) for o in query.order]
        )
    # Without ORDER BY, rows keep the noisy table's order (public domain order, or sorted
    # selected keys): DuckDB preserves insertion order of a scanned frame.
    if query.limit is not None:
        select = select.limit(query.limit)
    if query.offset is not None:
        select = select.offset(query.offset)
    return select


def _corner(expr: exp.Expr, plan: Plan, deps: tuple[int, ...], signs: tuple[int, ...]) -> exp.Expr:
    shift = {r: number(s * release_width(plan, r, len(deps))) for r, s in zip(deps, signs)}
    return _substitute(expr, plan, shift)

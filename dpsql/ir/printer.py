"""Plan -> stable indented text, for EXPLAIN and golden files. Depends on the query and policy only."""

from __future__ import annotations

from sqlglot import exp

from dpsql.ir.join import JoinedTable
from dpsql.ir.plan import Plan, RobustRelease, aggregate_high_name, aggregate_low_name, aggregate_width_name, release_name, robust_name
from dpsql.mechanisms import registry
from dpsql.mechanisms.base import Describing

RAW_TEXT = {
    "count_rows": "COUNT(*)",
    "count_values": "COUNT({c})",
    "count_finite": "COUNT({c} finite)",
    "count_units": "COUNT(DISTINCT {c})",
    "distinct_values": "COUNT(DISTINCT {c})",
    "sum_grid": "SUM(round(clamp({c}, {lo}, {hi}) / {grid}) - {center})",
    "sumsq_grid": "SUM((round(clamp({c}, {lo}, {hi}) / {grid}) - {center})^2 on its square grid)",
}


def _fmt(value: object) -> str:
    return f"{float(value):.6g}"  # type: ignore[arg-type]


def plan_text(plan: Plan) -> list[str]:  # noqa: C901 - one optional EXPLAIN line per plan feature, in the printed order
    """The plan as lines of text."""
    query, bounding = plan.query, plan.bounding
    lines = [f"Scan {query.table.name} (private; privacy unit {bounding.unit})"]
    if isinstance(query.table, JoinedTable):  # what the joined relation reads, and its max_rows
        lines.extend(f"  {line}" for line in query.table.explain)
    lines.append(f"  BoundContribution: at most {bounding.max_rows} row(s) per {bounding.unit} (keyed hash, secret seed)")
    if query.where is not None:
        lines.append(f"  Filter: {query.where.sql(dialect='duckdb')} (row-level; an error on a row makes it false)")
    for key in query.keys:
        how = "public domain, every key released" if key.public else f"partition selection, at most {bounding.max_groups} key(s) per person"
        if key.expr is not None:  # GROUP BY an expression: how its domain came from the policy
            how = f"derived key: {key.derivation}" if not key.public else f"{how}; derived domain: {_domain_text(key.column.values or ())}"
        elif key.derivation and key.public:  # a bare column whose keys the WHERE lists
            how = f"{how}; keys {key.derivation}: {_domain_text(key.column.values or ())}"
        lines.append(f"  GroupBy: {key.column.name} ({how})")
    for index, release in enumerate(plan.releases):
        raw = release.raw
        column = raw.column.name if raw.column else ""
        text = RAW_TEXT[raw.kind].format(c=column, lo=raw.lower_units * raw.grid, hi=raw.upper_units * raw.grid,
                                         grid=_fmt(raw.grid), center=raw.center_units)
        if raw.distinct:  # over each distinct grid value of the group once
            text = text.replace("(", "(DISTINCT ", 1)
        lines.append(f"  Release {release_name(index)} = {text}: {registry.describe(release.spec, Describing(grid=release.unit))}")
    lines.extend(robust_text(plan, index, release) for index, release in enumerate(plan.robust))
    if plan.selection is not None:
        lines.append(f"  PartitionSelection: {registry.describe(plan.selection)}")
    for output in query.outputs:
        if output.key is not None:
            lines.append(f"  Output {output.name}: group key")
        else:
            used = ", ".join(query.aggregates[a].label for a in output.aggregates)
            described = _interval_of(plan, output.expr)  # CI95(agg), CI_LOW, CI_HIGH: free
            if described:
                used = (used + "; " if used else "") + f"the 95% interval of {described} (free)"
            lines.append(f"  Output {output.name}: from {used or 'constant'}")
    if query.having is not None:
        lines.append("  Having: applied after noise (post-processing)")
    if query.order:
        lines.append("  OrderBy: applied after noise (post-processing)")
    if query.limit is not None:
        lines.append(f"  Limit: {query.limit} (after noise)")
    lines.extend(f"  Note: {note}" for note in plan.notes)
    lines.append(f"Cost: epsilon {_fmt(plan.cost.epsilon)}, delta {float(plan.cost.delta):.3g}")
    return lines


def _request(plan: Plan, release: RobustRelease) -> str:
    return f"reads: {plan.requests[release.request].reads} (request {release.request})"


def _values(release: RobustRelease) -> str:
    values = release.values
    if values is None:
        return ""
    parts = []
    if values.indexed:
        parts.append(f"rounded to the grid {_fmt(values.grid)}")
    if values.lower is not None:
        parts.append("clamped to the declared bounds")
    return (" (values " + ", ".join(parts) + ")") if parts else ""


def robust_text(plan: Plan, index: int, release: RobustRelease) -> str:
    """One EXPLAIN line for a robust release: which mechanism runs, with its public parameters."""
    label = plan.query.aggregates[release.aggregate].label
    head = f"  Release {robust_name(index)} = {label}: "
    n_hat = release_name(release.n_hat) if release.n_hat is not None else "none"
    body = registry.describe(release.spec, Describing(values=_values(release), unit=plan.bounding.unit, n_hat=n_hat))
    return head + body + "; " + _request(plan, release)


def _domain_text(values: tuple[object, ...], shown: int = 8) -> str:
    """A derived public domain as EXPLAIN shows it: its first and last values and its size (public)."""
    def text(v: object) -> str:
        return "NULL" if v is None else repr(v) if isinstance(v, str) else str(v)

    listed = [text(v) for v in values] if len(values) <= shown else [*map(text, values[:shown - 2]), "...", text(values[-1])]
    return f"{{{', '.join(listed)}}} ({len(values)} key{'s' if len(values) != 1 else ''})"


def _interval_of(plan: Plan, expr: exp.Expr) -> str:
    """The aggregates whose 95% interval an output reads (CI95(agg) and its ends), as written."""
    names = {name(i): call.label for i, call in enumerate(plan.query.aggregates)
             for name in (aggregate_width_name, aggregate_low_name, aggregate_high_name)}
    found = [names[c.name] for c in expr.find_all(exp.Column) if c.name in names]
    return ", ".join(dict.fromkeys(found))

"""Plan -> stable indented text, for EXPLAIN and golden files. Depends on the query and policy only."""

from __future__ import annotations

from dpsql.ir.plan import Plan, release_name
from dpsql.mechanisms.laplace import half_width

RAW_TEXT = {
    "count_rows": "COUNT(*)",
    "count_values": "COUNT({c})",
    "count_finite": "COUNT({c} finite)",
    "count_units": "COUNT(DISTINCT {c})",
    "sum_grid": "SUM(round(clamp({c}, {lo}, {hi}) / {grid}) - {center})",
}


def _fmt(value: object) -> str:
    return f"{float(value):.6g}"  # type: ignore[arg-type]


def plan_text(plan: Plan) -> list[str]:
    """The plan as lines of text."""
    query, bounding = plan.query, plan.bounding
    lines = [f"Scan {query.table.name} (private; privacy unit {bounding.unit})"]
    lines.append(f"  BoundContribution: at most {bounding.max_rows} row(s) per {bounding.unit} (keyed hash, secret seed)")
    if query.where is not None:
        lines.append(f"  Filter: {query.where.sql(dialect='duckdb')} (row-level; an error on a row makes it false)")
    for key in query.keys:
        how = "public domain, every key released" if key.public else f"partition selection, at most {bounding.max_groups} key(s) per person"
        lines.append(f"  GroupBy: {key.column.name} ({how})")
    for index, release in enumerate(plan.releases):
        raw = release.raw
        column = raw.column.name if raw.column else ""
        text = RAW_TEXT[raw.kind].format(c=column, lo=raw.lower_units * raw.grid, hi=raw.upper_units * raw.grid,
                                         grid=_fmt(raw.grid), center=raw.center_units)
        spec = release.spec
        lines.append(
            f"  Release {release_name(index)} = {text}: discrete Laplace, sensitivity {_fmt(spec.sensitivity * release.unit)}, "
            f"scale {_fmt(spec.scale * release.unit)}, epsilon {_fmt(spec.epsilon)}, "
            f"95% +-{_fmt(half_width(spec) * release.unit)}"
        )
    if plan.selection is not None:
        sel = plan.selection
        lines.append(
            f"  PartitionSelection: person count per key + discrete Laplace (scale {_fmt(sel.scale)}), "
            f"released when >= {sel.threshold}; epsilon {_fmt(sel.epsilon)}, delta {float(sel.delta):.3g}"
        )
    for output in query.outputs:
        if output.key is not None:
            lines.append(f"  Output {output.name}: group key")
        else:
            used = ", ".join(query.aggregates[a].label for a in output.aggregates) or "constant"
            lines.append(f"  Output {output.name}: from {used}")
    if query.having is not None:
        lines.append("  Having: applied after noise (post-processing)")
    if query.order:
        lines.append("  OrderBy: applied after noise (post-processing)")
    if query.limit is not None:
        lines.append(f"  Limit: {query.limit} (after noise)")
    lines.extend(f"  Note: {note}" for note in plan.notes)
    lines.append(f"Cost: epsilon {_fmt(plan.cost.epsilon)}, delta {float(plan.cost.delta):.3g}")
    return lines

"""EXPLAIN's expected 95% interval per output column, before anything is read or spent.

Every number here comes from the plan: the mechanisms' public parameters (sensitivity, epsilon,
grid), never from data. Where the accuracy depends on the data (AVG and VARIANCE divide by a
group's row count n; robust aggregates answer within a rank error, or ⊥), the line says so and
gives the formula in n rather than a number.

Each aggregate's module writes its own line (dpsql/aggregates/<family>.py, Estimate.expected):
e.g. COUNT and SUM give the release's 95% half-width, AVG its half-width over n for a few n.
"""

from __future__ import annotations

from dpsql.ir.plan import Plan


def expected_lines(plan: Plan) -> list[str]:
    """'Expected 95% interval' lines, one per output column that releases noise (each bare
    aggregate's line is its module's: Estimate.expected)."""
    lines = []
    for output in plan.query.outputs:
        if output.key is not None or not output.aggregates:
            continue
        name = output.name
        if name.startswith("__"):  # an internal column inside a post-processing release: name its aggregate
            name = f"{name} ({', '.join(plan.query.aggregates[a].label for a in output.aggregates)})"
        if output.aggregate is None:
            lines.append(f"  {name}: post-processed from {len(output.aggregates)} aggregate(s); "
                         "its interval is derived from theirs per cell")
            continue
        lines.append(f"  {name}: {plan.estimates[output.aggregate].expected(plan)}")
    return ["Expected 95% intervals (public, before any data is read):", *lines] if lines else []

"""EXPLAIN's expected 95% interval per output column, before anything is read or spent.

Every number here comes from the plan: the mechanisms' public parameters (sensitivity, epsilon,
grid), never from data. Where the accuracy depends on the data (AVG and VARIANCE divide by a
group's row count n; robust aggregates answer within a rank error, or ⊥), the line says so and
gives the formula in n rather than a number.

- COUNT, SUM: the release's 95% half-width, the discrete Laplace k with P(|noise| > k) <= 5%
  (about ln(20) * sensitivity / epsilon).
- AVG: (W_sum + |mean - mid| * W_count) / n at level 1 - 0.05/2 each, where W are the
  releases' half-widths; shown as W_sum / n for a few n (the count's own term is smaller once
  n is large); clamped to the column's bounds.
- VARIANCE/STDDEV: at most the clamp [0, (R/2)^2] (R/2 for STDDEV), about W_squares / n for
  the variance; per-cell intervals are computed from the released sums (mechanisms/variance.py).
- MEDIAN/QUANTILE/IQR/MODE: the mechanism's public rank error or half-width when it has one,
  else "depends on the data".
"""

from __future__ import annotations

from dpsql.ir.plan import Estimate, Plan
from dpsql.mechanisms import registry
from dpsql.mechanisms.base import fmt
from dpsql.mechanisms.variance import PARTS

EXAMPLE_ROWS = (100, 1_000, 10_000)


def expected_lines(plan: Plan) -> list[str]:
    """'Expected 95% interval' lines, one per output column that releases noise."""
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
        lines.append(f"  {name}: {_expected(plan, plan.estimates[output.aggregate])}")
    return ["Expected 95% intervals (public, before any data is read):", *lines] if lines else []


def _width(plan: Plan, release: int, parts: int = 1) -> float:
    spec = plan.releases[release]
    return float(spec.spec.half_width(1 - 0.05 / parts) * spec.unit)  # Laplace or Gaussian: each spec knows its tail


def _per_rows(width: float) -> str:
    return ", ".join(f"±{fmt(width / n)} at n = {n:,}" for n in EXAMPLE_ROWS)


def _expected(plan: Plan, estimate: Estimate) -> str:
    if estimate.kind in ("count", "sum"):
        every = ", the same for every group" if plan.query.keys else ""
        noise = {"gaussian": "discrete Gaussian"}.get(registry.mechanism_for(plan.releases[estimate.releases[0]].spec).name,
                                                      "discrete Laplace")
        return f"±{fmt(_width(plan, estimate.releases[0]))} ({noise}{every})"
    if estimate.kind == "avg":
        total, count = estimate.releases
        return (f"about ±{fmt(_width(plan, total, 2))} / n for a group of n rows ({_per_rows(_width(plan, total, 2))}); "
                f"the noisy n (±{fmt(_width(plan, count, 2))}) adds to it when n is small; clamped to the bounds")
    if estimate.kind == "variance":
        spec = estimate.variance
        assert spec is not None
        squares = _width(plan, estimate.releases[0], PARTS)
        top = spec.half_range if spec.root else spec.half_range ** 2
        what = "the variance's" if not spec.root else "the variance (before the square root):"
        return (f"within [0, {fmt(top)}] (the clamp); {what} about ±{fmt(squares)} / n for a group of n rows "
                f"({_per_rows(squares)}), plus terms in the noisy mean; depends on n")
    assert estimate.robust is not None
    release = plan.robust[estimate.robust]
    error = registry.error(release.spec)
    details = dict(error.details)
    if "rank_error95" in details:
        return f"within {details['rank_error95']} ranks of the true quantile with 95% probability (the value error depends on the data)"
    if error.ci95 is not None:
        return f"±{fmt(error.ci95)} when released (it may answer NULL, ⊥, when the data are not stable enough)"
    if release.mechanism == "noisy-max":
        return (f"the mode whenever it leads the runner-up by more than {fmt(2 * release.spec.count_half_width())} rows "  # type: ignore[attr-defined]
                "(95%); each answer states its confidence that it is the mode")
    if release.mechanism == "stable-histogram":
        return (f"NULL (⊥) unless some value has about {details['threshold']} rows; each answer states its confidence "
                "that it is the mode")
    if release.mechanism == "asamp":
        return ("depends on the data (a stability test releases the subsample vote's winner or NULL, ⊥); each answer states "
                "its confidence that no single person changes the winner")
    return "depends on the data (a stability test releases the exact value or NULL, ⊥)"


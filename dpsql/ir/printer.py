"""Plan -> stable indented text, for EXPLAIN and golden files. Depends on the query and policy only."""

from __future__ import annotations

from dpsql.ir.plan import ModeRequest, Plan, RankRequest, RobustRelease, release_name, robust_name
from dpsql.mechanisms.exponential import ExponentialQuantileSpec
from dpsql.mechanisms.laplace import half_width
from dpsql.mechanisms.ptr import PTRLaplaceSpec, PTRTest, ScaleSpec, SMedSpec
from dpsql.mechanisms.subsample import ASampSpec

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
    lines.extend(robust_text(plan, index, release) for index, release in enumerate(plan.robust))
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


def _test(test: PTRTest) -> str:
    return f"test: distance + discrete Laplace (scale {_fmt(test.scale)}) >= tau {test.threshold}, distance capped at {test.cap}"


def _request(plan: Plan, release: RobustRelease) -> str:
    request = plan.requests[release.request]
    if isinstance(request, ModeRequest):
        return f"reads: subsample-mode votes (request {release.request})"
    assert isinstance(request, RankRequest)
    how = "a histogram" if request.histogram else "rank windows of +-(C+1)s"
    return f"reads: {how} (request {release.request})"


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
    spec = release.spec
    head = f"  Release {robust_name(index)} = {label}: "
    if isinstance(spec, SMedSpec):
        body = (f"SMed, the stable rank-rho_{_fmt(spec.p)} value{_values(release)} (exact or ⊥); rank shift s={spec.shift}; "
                f"{_test(spec.test)}; epsilon {_fmt(spec.test.epsilon)}, delta {float(spec.test.delta):.3g}")
    elif isinstance(spec, PTRLaplaceSpec):
        body = (f"PTR-Laplace with proposed bound b={_fmt(spec.bound)}{_values(release)}; rank shift s={spec.shift}; {_test(spec.test)}; "
                f"then Laplace scale {_fmt(spec.noise_units * spec.grid)} on the grid b/2^20, 95% +-{_fmt(spec.half_width())}; "
                f"epsilon {_fmt(spec.test.epsilon)} + {_fmt(spec.epsilon_release)}, delta {float(spec.test.delta):.3g}")
    elif isinstance(spec, ScaleSpec):
        n_hat = release_name(release.n_hat) if release.n_hat is not None else "none"
        body = (f"Scale (IQR by PTR on two log-bin discretisations, threshold 1 + ln(1/delta)/eps), base "
                f"min(2, 1 + {spec.base_constant}*s*tau/n_hat) with n_hat = {n_hat}; rank shift s={spec.shift}; "
                f"each {_test(spec.test)}; epsilon 4 x {_fmt(spec.epsilon_step)}, delta {float(spec.delta):.3g}")
    elif isinstance(spec, ExponentialQuantileSpec):
        body = (f"exponential mechanism over {spec.candidates} public candidates{_values(release)} (never ⊥), "
                f"score sensitivity {spec.sensitivity}, 95% within about {spec.rank_error()} ranks; "
                f"epsilon {_fmt(spec.epsilon)}, delta 0")
    else:
        assert isinstance(spec, ASampSpec)
        body = (f"A_samp: each {plan.bounding.unit} in {spec.copies} of {spec.blocks} subsamples by a keyed hash (secret seed), "
                f"subsample modes (random tie-break, empty ones abstain), gap normalised by 2T={spec.normaliser}; "
                f"{_test(spec.test)}; epsilon {_fmt(spec.test.epsilon)}, delta {float(spec.test.delta):.3g}")
    return head + body + "; " + _request(plan, release)

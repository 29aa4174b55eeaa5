"""noise_info: per output column, the mechanism, scale, 95% interval and cost of its values.

Columns of robust aggregates also say whether they can be ⊥ (`refusal`: the public sentence)
and, given the answer's rows, which cells were (`refused`). A refusal sentence holds public facts
only (the aggregate as written, the mechanism family, its epsilon and delta): never a distance,
a noisy distance, n, or which discretisation failed (docs/mechanisms.md; tests/security/test_attack_a14_*).
"""

from __future__ import annotations

from typing import Any, Sequence

from sqlglot import exp

from dpsql.backend.postsql import release_deps, release_width, robust_deps
from dpsql.execution.compiled import CompiledQuery
from dpsql.ir.plan import Plan, RobustRelease
from dpsql.mechanisms import registry
from dpsql.result import NoiseInfo


def noise_info(compiled: CompiledQuery, rows: Sequence[Sequence[Any]] | None = None,
               cells: Sequence[tuple[float | None, ...]] | None = None,
               confidences: Sequence[tuple[float | None, ...]] | None = None,
               template: Sequence[NoiseInfo | None] | None = None) -> list[NoiseInfo | None]:
    """One NoiseInfo per output column (None for group keys): mechanism, scale, ci95, epsilon, delta.

    Columns of robust aggregates also say whether they can be ⊥ (`refusal`: the public sentence)
    and, given the answer's rows, which cells were (`refused`: a bool, or one flag per row).
    Given the cells' 95% half-widths, derived columns get theirs as `ci95`. `template`: what
    depends on the plan alone (`plan_noise_info`), when the caller keeps it.
    """
    infos = list(plan_noise_info(compiled) if template is None else template)
    if rows is not None:
        infos = mark_refusals(infos, rows)
    if confidences:
        infos = fill_confidence(infos, confidences)
    return fill_ci(infos, cells) if cells else infos


def fill_confidence(infos: list[NoiseInfo | None], confidences: Sequence[tuple[float | None, ...]]) -> list[NoiseInfo | None]:
    """`confidence` of MODE columns: one number for a single row, else one per row (None for ⊥)."""
    out = list(infos)
    for i, info in enumerate(infos):
        column = tuple(c[i] if i < len(c) else None for c in confidences)
        if info is None or all(c is None for c in column):
            continue
        out[i] = info.replace(confidence=column[0] if len(column) == 1 else column)
    return out


def fill_ci(infos: list[NoiseInfo | None], cells: Sequence[tuple[float | None, ...]]) -> list[NoiseInfo | None]:
    """ci95 of derived columns: one number when equal across rows, else the per-row tuple."""
    out = list(infos)
    for i, info in enumerate(infos):
        if info is not None and info.ci95 is None and cells:
            widths = {c[i] for c in cells}
            out[i] = info.replace(ci95=widths.pop() if len(widths) == 1 else tuple(c[i] for c in cells))
    return out


def plan_noise_info(compiled: CompiledQuery) -> list[NoiseInfo | None]:
    """The NoiseInfo of each output column that the plan alone determines (no answer yet)."""
    plan = compiled.plan
    infos: list[NoiseInfo | None] = []
    for output in plan.query.outputs:
        deps = release_deps(output.expr, plan)
        robust = robust_deps(output.expr, plan)
        if robust:
            infos.append(_robust_info(plan, output.expr, deps, robust))
            continue
        if not deps:
            infos.append(None)
            continue
        releases = [plan.releases[r] for r in deps]
        scales = [float(r.spec.scale * r.unit) for r in releases]
        kinds = {plan.estimates[a].kind for a in output.aggregates}
        single = len(deps) == 1 and output.expr.find(exp.Column) == output.expr
        noise = registry.mechanism_for(releases[0].spec).name  # one noise family per query
        infos.append(NoiseInfo(
            mechanism=noise if single else f"{noise} (" + ", ".join(sorted(kinds)) + ", post-processed)",
            scale=scales[0] if len(scales) == 1 else tuple(scales),
            ci95=float(release_width(plan, deps[0], 1)) if single else None,
            epsilon=float(sum(r.spec.epsilon for r in releases)),
            delta=float(sum(getattr(r.spec, "delta", 0) for r in releases)),
        ))
    return infos


def _robust_info(plan: Plan, expr: exp.Expr, deps: tuple[int, ...], robust: tuple[int, ...]) -> NoiseInfo:
    infos = [describe(plan, plan.robust[r]) for r in robust]
    if len(robust) == 1 and not deps and expr.find(exp.Column) == expr:
        return infos[0]
    refusals = [i.refusal for i in infos if i.refusal is not None]
    return NoiseInfo(
        mechanism=", ".join([i.mechanism for i in infos] + (["laplace"] if deps else [])) + " (post-processed)",
        scale=None,
        ci95=None,
        epsilon=sum(i.epsilon for i in infos) + float(sum(plan.releases[r].spec.epsilon for r in deps)),
        delta=sum(i.delta for i in infos),
        refusal=" ".join(refusals) if refusals else None,
        refused=False if refusals else None,
    )


def refusal_sentence(release: RobustRelease, label: str, reason: str) -> str:
    """The ⊥ message: public facts only (the aggregate, the mechanism family, its cost)."""
    cost = registry.cost(release.spec)
    return f"{label} refused: {reason} Its budget (epsilon {float(cost.epsilon):.4g}, delta {float(cost.delta):.3g}) was spent."


def describe(plan: Plan, release: RobustRelease) -> NoiseInfo:
    """noise_info of a bare robust output (ci95 filled per cell by the caller)."""
    cost = registry.cost(release.spec)
    error = registry.error(release.spec)
    details = dict(error.details)
    reason = registry.refusal(release.spec)
    if reason is not None:  # a stability test: the release can be ⊥
        label = plan.query.aggregates[release.aggregate].label
        details.update({"refusal": refusal_sentence(release, label, reason), "refused": False})
    ci95 = error.ci95
    if release.mechanism == "smed" and release.values is not None:
        # SMed releases the exact order statistic of the values rounded to the public grid: the
        # quantile of the unrounded values lies within half a grid step (0 on ints and dates).
        ci95 = float(release.values.grid) / 2 if release.values.indexed and release.values.grid is not None else 0.0
    return NoiseInfo(mechanism=release.mechanism, scale=error.scale, ci95=ci95,
                     epsilon=float(cost.epsilon), delta=float(cost.delta), **details)


def mark_refusals(infos: list[NoiseInfo | None], rows: Sequence[Sequence[Any]]) -> list[NoiseInfo | None]:
    """`refused`: True/False for the column, or one flag per row when rows differ (⊥ = a NULL cell)."""
    out = list(infos)
    for i, info in enumerate(infos):
        if info is None or info.refusal is None:
            continue
        flags = tuple(row[i] is None for row in rows)
        out[i] = info.replace(refused=flags[0] if flags and len(set(flags)) == 1 else (flags if flags else False))
    return out



"""noise_info: per output column, the mechanism, scale, 95% interval and cost of its values.

Columns of robust aggregates also say whether they can be ⊥ (`refusal`: the public sentence)
and, given the answer's rows, which cells were (`refused`). A refusal sentence holds public facts
only (the aggregate as written, the mechanism family, its epsilon and delta): never a distance,
a noisy distance, n, or which discretisation failed (docs/mechanisms.md; tests/security/test_attack_a14_*).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dpsql.execution.compiled import CompiledQuery
from dpsql.ir.plan import Plan
from dpsql.ir.query import OutputColumn
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
    return [_output_info(plan, output) for output in plan.query.outputs]


def _output_info(plan: Plan, output: OutputColumn) -> NoiseInfo | None:
    """A bare aggregate's noise facts are its Estimate's; arithmetic over aggregates combines theirs."""
    if output.aggregate is not None:
        return NoiseInfo(**plan.estimates[output.aggregate].noise(plan))
    estimates = [plan.estimates[a] for a in output.aggregates]
    releases = sorted({r for e in estimates for r in e.releases})
    robust = sorted({e.robust for e in estimates if e.robust is not None})
    if not releases and not robust:
        return None
    specs = [plan.releases[r].spec for r in releases]
    noise = registry.name(specs[0]) if specs else None  # one noise family per query
    if robust:
        infos = [NoiseInfo(**plan.estimates[plan.robust[r].aggregate].noise(plan)) for r in robust]
        refusals = [i.refusal for i in infos if i.refusal is not None]
        return NoiseInfo(
            mechanism=", ".join([i.mechanism for i in infos] + ([noise] if noise else [])) + " (post-processed)",
            scale=None,
            ci95=None,
            epsilon=sum(i.epsilon for i in infos) + float(sum(spec.epsilon for spec in specs)),
            delta=sum(i.delta for i in infos),
            refusal=" ".join(refusals) if refusals else None,
            refused=False if refusals else None,
        )
    scales = [float(plan.releases[r].spec.scale * plan.releases[r].unit) for r in releases]
    kinds = sorted({e.kind for e in estimates})
    return NoiseInfo(
        mechanism=f"{noise} (" + ", ".join(kinds) + ", post-processed)",
        scale=scales[0] if len(scales) == 1 else tuple(scales),
        ci95=None,
        epsilon=float(sum(spec.epsilon for spec in specs)),
        delta=float(sum(getattr(spec, "delta", 0) for spec in specs)),
    )


def mark_refusals(infos: list[NoiseInfo | None], rows: Sequence[Sequence[Any]]) -> list[NoiseInfo | None]:
    """`refused`: True/False for the column, or one flag per row when rows differ (⊥ = a NULL cell)."""
    out = list(infos)
    for i, info in enumerate(infos):
        if info is None or info.refusal is None:
            continue
        flags = tuple(row[i] is None for row in rows)
        out[i] = info.replace(refused=flags[0] if flags and len(set(flags)) == 1 else (flags if flags else False))
    return out



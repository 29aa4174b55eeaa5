"""95% intervals of released values, derived in one place: corners and lineage.

Corners (a query's own outputs). Each aggregate states its cell's 95% half-width through its
Estimate (dpsql/aggregates/: the corner evaluation of its value over its releases, the sound
interval of a VARIANCE, or its mechanism's own interval). An output that is arithmetic over
aggregates (`SUM(x) / COUNT(*)`) gets the corner evaluation too: each of its m releases (at most
MAX_CORNER_RELEASES) is taken at its (1 - 0.05/m) interval, a union bound keeping the joint level
at 95%; each aggregate's value is computed at every corner by its Estimate (the one definition of
its value), and post-processing SQL evaluates the output expression there and takes the lowest
and highest. An output over a robust aggregate or a VARIANCE gets none: no corner bounds them.

Lineage (a post-processing query's outer query over released tables). An output column that
copies a released column (through filters, ORDER BY, LIMIT, joins, UNION ALL) keeps each cell's
95% half-width and ends (a clipped interval stays clipped), found by the cell's value among the
released cells of its source columns (the widest, or the hull of the ends, when several share the
value). A derived column (arithmetic, aggregates or windows over
released values) gets none: a sum of independent Laplace errors has no exact 95% half-width from
the parts (the square-root rule is a normal approximation, not a guarantee), so dpsql drops the
interval rather than guess. A filter or ORDER BY ... LIMIT on noisy values selects cells by their
noise: among the selected cells, coverage may fall below 95% (docs/sql-reference.md).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from dpsql.accounting.cost import PrivacyCost
from dpsql.ir.plan import Estimate, Plan, release_name, release_width
from dpsql.ir.post_query import OutputLineage
from dpsql.result import Interval, NoiseInfo, NoisyResult, symmetric

MAX_CORNER_RELEASES = 4
DERIVED = "post-processed (no interval)"


# --- corners ---------------------------------------------------------------------------------------


def corners(plan: Plan) -> dict[int, tuple[int, ...]]:
    """The outputs whose interval is a corner evaluation, each with the releases it reads."""
    out: dict[int, tuple[int, ...]] = {}
    for index, output in enumerate(plan.query.outputs):
        if output.aggregate is not None or not output.aggregates:
            continue  # a bare aggregate states its own interval; keys and constants have none
        estimates = [plan.estimates[a] for a in output.aggregates]
        if any(e.robust is not None or not e.corners for e in estimates):
            continue
        releases = tuple(sorted({r for e in estimates for r in e.releases}))
        if 0 < len(releases) <= MAX_CORNER_RELEASES:
            out[index] = releases
    return out


def shifts(plan: Plan, releases: tuple[int, ...]) -> list[dict[int, float]]:
    """Per corner (in itertools.product order of the signs), each release's shift: its sign
    times its half-width at level 1 - 0.05/m."""
    widths = [float(release_width(plan, r, len(releases))) for r in releases]
    return [{r: s * w for r, s, w in zip(releases, signs, widths)} for signs in itertools.product((-1, 1), repeat=len(releases))]


def at_corner(estimate: Estimate, shift: Mapping[int, float], columns: Mapping[str, Sequence[Any]], row: int,
              clamp: bool = False) -> Any:
    """An aggregate's value with its releases shifted to one corner; with `clamp` (the query's
    default), projected into the aggregate's possible range as its released value is. Valid:
    when the box of the releases' intervals holds the truth (the 95% event), each aggregate's
    true value lies between its corner values and in its range, so between the projected corner
    values too (a projection is monotone and fixes the truth); an output monotone in each
    aggregate (what the corner evaluation assumes) then stays between its projected corners. So
    `COUNT(*) + 1` over an empty group reads [1, high], never an interval below 1."""
    value = estimate.value([columns[release_name(r)][row] + shift.get(r, 0.0) for r in estimate.releases])
    if not clamp or value is None:
        return value
    low, high = estimate.possible()
    if low is not None and value < low:
        return type(value)(low)
    if high is not None and value > high:
        return type(value)(high)
    return value


def _number(x: Any) -> bool:
    return isinstance(x, (int, float, Decimal)) and not isinstance(x, bool)


def _unbounded(value: Any, low: Any, high: Any) -> bool:
    """A numeric value whose corners failed (NULL: x // 0) or left the reals (x / 0 gives inf,
    0 / 0 NaN, when a count's corner is 0): no finite interval holds it, so it is stated as
    unbounded rather than dropped (a value without an interval reads as exact)."""
    return _number(value) and math.isfinite(float(value)) and any(
        x is None or (_number(x) and not math.isfinite(float(x))) for x in (low, high))


def half_width(value: Any, low: Any, high: Any) -> float | None:
    """The half-width of a symmetric interval around `value` holding [low, high]: inf when a
    corner failed or is not finite; None if the value is NULL or not a number (a CASE over noisy
    values may turn them into text or a flag)."""
    if _unbounded(value, low, high):
        return math.inf
    if not all(_number(x) for x in (value, low, high)) or not math.isfinite(float(value)):
        return None  # inf / NaN values (x / 0 of a count released as 0) have no interval
    return max(float(high) - float(value), float(value) - float(low))  # a DECIMAL output (6.8 * SUM(1)) beside float ends


def ends(value: Any, low: Any, high: Any) -> Interval | None:
    """The interval (low, high) around `value` (None as for `half_width`); it holds the value."""
    if _unbounded(value, low, high):
        return -math.inf, math.inf
    if half_width(value, low, high) is None:
        return None
    return float(min(low, value)), float(max(high, value))


# --- lineage ---------------------------------------------------------------------------------------


Lineage = tuple[list[NoiseInfo | None], list[tuple[float | None, ...]], list[tuple[Interval | None, ...]] | None]


def lineage_noise(lineage: tuple[OutputLineage, ...] | None, cost: PrivacyCost, results: Sequence[NoisyResult],
                  rows: list[tuple[Any, ...]], width: int) -> Lineage:
    """Each outer-query column's noise information, per-cell half-widths and the ends of cells
    whose interval is not symmetric (NoisyResult.cell_bounds; None when there are none), by lineage."""
    derived = NoiseInfo(mechanism=DERIVED, scale=None, ci95=None, epsilon=float(cost.epsilon), delta=float(cost.delta))
    if lineage is None or len(lineage) != width:
        return [derived] * width, [tuple(None for _ in range(width)) for _ in rows], None
    infos: list[NoiseInfo | None] = []
    widths: list[list[float | None]] = []
    ends: list[list[Interval | None]] = []
    for position, line in enumerate(lineage):
        info, column, bent = _column_noise(line, results, [row[position] for row in rows], derived)
        infos.append(info)
        widths.append(column)
        ends.append(bent)
    cells = [tuple(widths[c][r] for c in range(width)) for r in range(len(rows))]
    bounds = [tuple(ends[c][r] for c in range(width)) for r in range(len(rows))]
    return infos, cells, bounds if any(e is not None for row in bounds for e in row) else None


def _column_noise(line: OutputLineage, results: Sequence[NoisyResult], values: list[Any],
                  derived: NoiseInfo) -> tuple[NoiseInfo | None, list[float | None], list[Interval | None]]:
    noisy_sources = [(info, i, j) for i, j in line.sources if (info := results[i].noise_info[j]) is not None]
    none: list[Interval | None] = [None] * len(values)
    if not line.passthrough:
        if not line.noisy:
            return None, [None] * len(values), none
        per_column = {(i, j): info.epsilon for info, i, j in noisy_sources}
        epsilon = sum(per_column.values()) if per_column else derived.epsilon
        mechanisms = sorted({info.mechanism for info, _, _ in noisy_sources})
        mechanism = f"{', '.join(mechanisms)}, {DERIVED}" if mechanisms else DERIVED
        return derived.replace(mechanism=mechanism, epsilon=float(epsilon)), [None] * len(values), none
    if not noisy_sources:
        return None, [None] * len(values), none
    # Each released cell's half-width and interval, by value (the widest, and the hull of the
    # intervals, when several cells share a value: a wider interval holds the truth whenever either does).
    by_value: dict[Any, float | None] = {}
    hull: dict[Any, Interval | None] = {}
    for _, i, j in noisy_sources:
        for r, (row, cells) in enumerate(zip(results[i].rows, results[i].cell_ci95)):
            value, half, interval = row[j], cells[j], results[i].interval(r, j)
            if value in by_value:
                previous, around = by_value[value], hull[value]
                by_value[value] = None if previous is None or half is None else max(previous, half)
                hull[value] = None if around is None or interval is None else \
                    (min(around[0], interval[0]), max(around[1], interval[1]))
            else:
                by_value[value], hull[value] = half, interval
    column = [by_value.get(v) if v is not None else None for v in values]
    bent = [None if v is None or (e := hull.get(v)) is None or symmetric(v, e) else e for v in values]
    first = noisy_sources[0][0]
    distinct = set(column)
    ci95: float | tuple[float | None, ...] | None = distinct.pop() if len(distinct) == 1 else tuple(column)
    if len(noisy_sources) == 1:
        return first.replace(ci95=ci95), column, bent
    infos = [s[0] for s in noisy_sources]
    scales = tuple(s for info in infos for s in (info.scale if isinstance(info.scale, tuple) else (info.scale,))
                   if s is not None)
    return NoiseInfo(mechanism=", ".join(sorted({info.mechanism for info in infos})), scale=scales or None, ci95=ci95,
                     epsilon=float(sum(info.epsilon for info in infos)), delta=float(sum(info.delta for info in infos))), column, bent

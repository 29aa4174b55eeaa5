"""Consistent grouping sets: released totals reconciled with their parts by weighted least squares.

GROUP BY ROLLUP / CUBE / GROUPING SETS releases each set with its own noise, so a total differs
from the sum of its parts. For an additive aggregate (COUNT(*), COUNT(col), SUM: one Laplace or
Gaussian release of a sum over rows) every released cell is a sum of cells of the finest common
refinement x of the sets' keys: y = A x + noise. The reconciled answer minimises
sum (A x - y)^2 / var over x (Hay, Rastogi, Miklau and Suciu, "Boosting the Accuracy of
Differentially Private Histograms Through Consistency", 2010; the US Census TopDown algorithm
does the same at scale), and every reported cell is A x: totals equal the sum of their parts.

Post-processing, free: it reads the released values (the noisy table, before clamping) and the
releases' public noise scales, nothing else; it spends nothing and runs after the charge.

- Bounds. Unless OPTIONS (clamp = false), x is solved within the aggregate's possible range per
  cell (COUNT >= 0; SUM of a column bounded >= 0 is >= 0, <= 0 likewise) by non-negative least
  squares, so every reported cell (a sum of in-range parts) is in range too; the grand total, when
  released, is held at its unconstrained estimate cut at the range (`_top_down`).
- Exact sums. x is rounded to the release's grid (integers for counts) by cumulative rounding
  (each prefix sum rounded, so x stays in range) and every reported cell is the exact integer sum
  of its parts times the grid: a total equals the sum of its parts exactly.
- Intervals. The linear estimate of a cell is c . y, its error c . noise: a weighted sum of
  independent discrete Laplace (or Gaussian) noises, bounded at 95% by execution/sum_tails.py. The
  reported value differs from the linear one by the bounds and the rounding only (public
  arithmetic on released values), so its half-width is the linear one plus that difference:
  |reported - truth| <= |reported - linear| + |linear - truth|.
- Which sets. Only sets whose keys all have declared `values` (public domains, every key
  released, empty ones too) take part: the finest refinement is then fully known, and the
  declared values are taken as the column's values (a row whose key is outside them, NULL
  included, is counted in the coarser sets only; reconciliation spreads it over the declared
  keys: filter such rows in WHERE to keep them out). A set with a key chosen by partition
  selection is left as released: its unreleased groups hold mass the parent counts, so its
  released groups are not a complete set of parts (dpsql does not guess them).
- Which aggregates. The bare outputs COUNT(*), COUNT(col) and SUM(col) of queries without HAVING
  (the released groups are then all the groups). AVG is released from its own centred sum and
  count, not from the displayed SUM and COUNT, so it is left as released; so are COUNT(DISTINCT),
  STDDEV/VARIANCE, MEDIAN/QUANTILE/IQR/MODE and arithmetic over aggregates (not additive).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dpsql.ir.plan import Estimate, Plan, release_name
from dpsql.ir.post_query import GroupingSets
from dpsql.ir.query import key_name
from dpsql.result import NoisyResult

if TYPE_CHECKING:  # numpy and the noise-sum bounds load on a reconciliation only, not with every query
    import numpy as np

ADDITIVE = frozenset({"count_rows", "count_values", "sum_grid"})
MAX_CELLS = 512  # finest cells of the refinement; larger grouping sets are left as released
MAX_RELEASED = 1024  # released cells per aggregate
RECONCILED = "reconciled by least squares"


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    """One select item reconciled across the sets: its output position and release in each."""

    item: int
    name: str
    sets: tuple[int, ...]  # positions in GroupingSets.inputs
    positions: tuple[int, ...]
    releases: tuple[int, ...]
    sign: int  # 1: every cell >= 0, -1: <= 0, 0: unbounded (or clamp = false)


@dataclasses.dataclass(frozen=True, slots=True)
class Layout:
    """What a grouping-set query reconciles (public: from the plans alone, before any data)."""

    keys: tuple[str, ...]  # the finest refinement's key columns
    domains: tuple[tuple[Any, ...], ...]  # their declared values
    sets: tuple[int, ...]  # positions in GroupingSets.inputs taking part
    targets: tuple[Target, ...]
    notes: tuple[str, ...]  # what is left as released, and why


def _simple(plan: Plan) -> bool:
    query = plan.query
    return all(o.key is not None or o.aggregate is not None for o in query.outputs) and query.having is None \
        and not query.order and query.limit is None and query.offset is None


def layout(group: GroupingSets, plans: Sequence[Plan]) -> Layout:
    """The sets and aggregates reconciled, and why others are not (module docstring)."""
    notes: list[str] = []
    sets: list[int] = []
    for k, plan in enumerate(plans):
        label = "(" + ", ".join(group.keys[k]) + ")"
        if plan.selection is not None:
            notes.append(f"set {label} has a key without declared values (partition selection): its released groups "
                         "need not be all the parts of a total, so it is left as released")
        elif not _simple(plan):
            notes.append(f"set {label} has HAVING: its released groups need not be all the parts, left as released")
        else:
            sets.append(k)
    keys = tuple(dict.fromkeys(k for s in sets for k in group.keys[s]))
    domains: dict[str, tuple[Any, ...]] = {}
    for s in sets:
        for group_key in plans[s].query.keys:
            domains.setdefault(group_key.column.name.lower(), tuple(group_key.column.values or ()))
    cells = 1
    for name in keys:
        cells *= max(len(domains.get(name, ())), 1)
    if len(sets) < 2 or cells > MAX_CELLS or any(name not in domains for name in keys):
        if len(sets) >= 2 and cells > MAX_CELLS:
            notes.append(f"the sets' keys have {cells:,} combinations (more than {MAX_CELLS}): left as released")
        return Layout(keys, (), (), (), tuple(notes))
    targets = []
    for item, name in enumerate(group.names):
        found = [_additive(plans[s], group.positions[s][item]) for s in sets]
        if all(f is not None for f in found):
            releases = tuple(f[0] for f in found if f is not None)
            signs = {f[1] for f in found if f is not None}
            sign = signs.pop() if len(signs) == 1 and all(plans[s].query.clamp for s in sets) else 0
            targets.append(Target(item, name, tuple(sets), tuple(group.positions[s][item] for s in sets),  # type: ignore[misc]
                                  releases, sign))
        elif any(_aggregated(plans[s], group.positions[s][item]) for s in sets):
            estimate = _estimate(plans[sets[0]], group.positions[sets[0]][item])
            why = estimate.not_additive if estimate is not None else ""
            notes.append(f"{name} is left as released: not additive over groups" + (f" ({why})" if why else ""))
    return Layout(keys, tuple(domains[k] for k in keys), tuple(sets), tuple(targets), tuple(notes))


def _aggregated(plan: Plan, position: int | None) -> bool:
    """Whether an output reads an aggregate (bare or in an expression)."""
    if position is None:
        return False
    output = plan.query.outputs[position]
    return output.key is None and bool(output.aggregates)


def _estimate(plan: Plan, position: int | None) -> Estimate | None:
    """The estimate of a bare aggregate output, else None."""
    if position is None:
        return None
    output = plan.query.outputs[position]
    return plan.estimates[output.aggregate] if output.key is None and output.aggregate is not None else None


def _additive(plan: Plan, position: int | None) -> tuple[int, int] | None:
    """(release, sign) of a bare COUNT or SUM output over one additive release, else None."""
    if position is None:
        return None
    output = plan.query.outputs[position]
    if output.aggregate is None:
        return None
    estimate = plan.estimates[output.aggregate]
    if not estimate.additive or len(estimate.releases) != 1:
        return None
    release = estimate.releases[0]
    if plan.releases[release].raw.kind not in ADDITIVE:
        return None
    low, high = estimate.possible()
    return release, (1 if low == 0 else -1 if high == 0 else 0)


def explain(group: GroupingSets, plans: Sequence[Plan]) -> list[str]:
    """EXPLAIN's lines on reconciliation (public facts only)."""
    if not group.consistent:
        return ["Totals: not reconciled (OPTIONS (consistent = false)): each grouping set as released, so a total "
                "may differ from the sum of its parts"]
    found = layout(group, plans)
    lines = []
    if found.targets:
        names = ", ".join(t.name for t in found.targets)
        sets = ", ".join("(" + ", ".join(group.keys[s]) + ")" for s in found.sets)
        bounded = any(t.sign for t in found.targets)
        lines.append(f"Totals reconciled by least squares (free): {names} over the sets {sets}, weighted by each "
                     "release's noise variance, so that every total equals the sum of its parts; post-processing of "
                     "released values and public noise scales, no budget spent. Each cell's 95% interval is "
                     "recomputed for the reconciled value"
                     + ("; cells kept in their possible range (clamp = false: plain least squares)" if bounded else ""))
    lines.extend(f"Totals: {note}" for note in found.notes)
    return lines


# --- after the charge ---------------------------------------------------------------------------------


def reconcile(group: GroupingSets, plans: Sequence[Plan], raws: Sequence[Mapping[str, Sequence[Any]]],
              results: Sequence[NoisyResult]) -> list[NoisyResult]:
    """The sets' answers with every reconciled cell's value and 95% half-width replaced (`raws`:
    each set's noisy table, unclamped; `results`: each set's answer, rows in the noisy table's order)."""
    out = list(results)
    if not group.consistent:
        return out
    found = layout(group, plans)
    for target in found.targets:
        solved = _solve(found, target, [plans[s] for s in target.sets], [raws[s] for s in target.sets])
        if solved is None:
            continue
        for k, s in enumerate(target.sets):
            values, widths = solved[k]
            plan = plans[s]
            additive = _additive(plan, target.positions[k])
            sign = additive[1] if additive is not None and plan.query.clamp else 0
            out[s] = _replace(out[s], target.positions[k], values, widths, sign)
    return out


def _replace(result: NoisyResult, position: int, values: list[Any], widths: list[float], sign: int) -> NoisyResult:
    """`sign`: 1 when the cell's possible range is [0, inf) and clamping is on, -1 for (-inf, 0],
    0 for none. The reconciled value lies in that range (the fit is bounded), and the interval
    value ± w is clipped to it: the truth lies in the range, so clipping never drops it."""
    rows = [row[:position] + (v,) + row[position + 1:] for row, v in zip(result.rows, values)]
    cells = [tuple(c[:position]) + (w,) + tuple(c[position + 1:]) for c, w in zip(result.cell_ci95, widths)]
    bounds = None
    if sign != 0 or result.cell_bounds is not None:
        bounds = []
        for row, (v, w) in enumerate(zip(values, widths)):
            given: list[tuple[float, float] | None] = list(result.cell_bounds[row]) if result.cell_bounds is not None and row < len(result.cell_bounds) \
                else [None] * len(result.columns)
            given += [None] * (len(result.columns) - len(given))
            low, high = float(v) - w, float(v) + w
            clipped = (max(low, 0.0), high) if sign > 0 else (low, min(high, 0.0)) if sign < 0 else (low, high)
            given[position] = clipped if clipped != (low, high) else None
            bounds.append(tuple(given))
    infos = list(result.noise_info)
    info = infos[position]
    if info is not None:
        distinct = set(widths)
        infos[position] = info.replace(mechanism=f"{info.mechanism}, {RECONCILED}",
                                       ci95=distinct.pop() if len(distinct) == 1 else tuple(widths))
    return dataclasses.replace(result, rows=rows, cell_ci95=cells, noise_info=tuple(infos), cell_bounds=bounds)


def _noise(plan: Plan, release: int) -> tuple[str, float, Fraction]:
    """(family, scale in grid units, unit) of a release."""
    from dpsql.mechanisms import sum_tails

    family, scale = sum_tails.noise_term(plan.releases[release].spec)
    return family, scale, plan.releases[release].unit


def _solve(found: Layout, target: Target, plans: Sequence[Plan],
           raws: Sequence[Mapping[str, Sequence[Any]]]) -> list[tuple[list[Any], list[float]]] | None:
    cells = list(itertools.product(*found.domains))
    index = {cell: i for i, cell in enumerate(cells)}
    rows: list[list[int]] = []  # per released cell, the finest cells it sums
    y: list[float] = []
    noise: list[tuple[str, float, Fraction]] = []
    spans: list[tuple[int, int]] = []  # per set, its rows in `y`
    for plan, raw, release in zip(plans, raws, target.releases):
        names = [k.column.name.lower() for k in plan.query.keys]
        where = [found.keys.index(n) for n in names]
        count = len(raw[key_name(0)]) if names else 1
        by_key = {tuple(raw[key_name(q)][r] for q in range(len(names))): r for r in range(count)}
        members: list[list[int]] = [[] for _ in range(count)]
        for cell, i in index.items():
            r = by_key.get(tuple(cell[p] for p in where))
            if r is None:
                return None  # a public key not released: not the shape reconciled here
            members[r].append(i)
        start = len(y)
        rows.extend(members)
        y.extend(float(v) for v in raw[release_name(release)])
        noise.extend([_noise(plan, release)] * count)
        spans.append((start, len(y)))
    if len(y) > MAX_RELEASED:
        return None
    values, widths = estimate(rows, len(cells), y, noise, target.sign)
    return [(values[lo:hi], widths[lo:hi]) for lo, hi in spans]


def estimate(rows: Sequence[Sequence[int]], cells: int, y: Sequence[float], noise: Sequence[tuple[str, float, Fraction]],
             sign: int, variances: Sequence[float] | None = None) -> tuple[list[Any], list[float]]:
    """Every released cell reconciled, and its 95% half-width. `rows`: per released cell, the
    finest cells it sums; `y`: its released (unclamped) value; `noise`: its release's (family,
    scale in grid units, unit), one unit for all; `sign`: the bound on every finest cell (0: none).
    `variances` overrides the weights (tests: a mis-weighted least squares as a negative control)."""
    import numpy as np

    from dpsql.mechanisms import sum_tails

    m = len(y)
    a = np.zeros((m, cells))
    for r, members in enumerate(rows):
        a[r, list(members)] = 1.0
    units = [float(u) for _, _, u in noise]
    var = np.array(variances if variances is not None else
                   [sum_tails.variance(f, s) * u * u for (f, s, _), u in zip(noise, units)])
    var = np.where(var > 0, var, np.min(var[var > 0]) * 1e-6 if np.any(var > 0) else 1.0)
    root = 1.0 / np.sqrt(var)
    b_mat = a * root[:, None]
    yv = np.array(y, dtype=np.float64)
    pinv = np.linalg.pinv(b_mat)
    hat = a @ (pinv * root[None, :])  # each released cell's linear estimate: hat @ y
    linear = hat @ yv
    x = pinv @ (yv * root)
    if sign:
        x = sign * _top_down(rows, cells, b_mat * sign, yv * root, sign * x, sign * linear)
    unit = noise[0][2]
    parts = _rounded(x / float(unit))
    reported = [sum(parts[i] for i in members) for members in rows]
    values: list[Any] = [u if unit == 1 else float(u * unit) for u in reported]
    widths = []
    for r in range(m):
        terms = tuple((float(hat[r, i]) * units[i], noise[i][0], noise[i][1]) for i in range(m) if hat[r, i] != 0)
        widths.append(sum_tails.half_width(terms) + abs(float(values[r]) - float(linear[r])))
    return values, widths


def _top_down(rows: Sequence[Sequence[int]], cells: int, b: np.ndarray, y: np.ndarray, start: np.ndarray,
              linear: np.ndarray) -> np.ndarray:
    """Parts >= 0 whose sum is the grand total's unbiased estimate cut at 0 (when a grand total is
    released), else plain non-negative least squares. Why: where noise dwarfs small cells, the
    non-negative fit pins many of them at 0 and their sum, the total, takes that bias (CUBE SUM's
    total had 2.3x the released MSE). As in the Census TopDown algorithm, the coarsest level is
    fixed first from the unconstrained (unbiased) fit and the finer cells are fitted under it, so
    the total keeps the least-squares accuracy and the parts' bias stays in the parts. The total
    is held by a heavily weighted row (a penalty): any parts >= 0 keep the intervals valid."""
    import numpy as np

    totals = [r for r, members in enumerate(rows) if len(members) == cells]
    if not totals:
        return _nnls(b, y, start)
    total = max(float(linear[totals[0]]), 0.0)
    weight = 1e4 * max(float(np.max(np.abs(b))), 1.0)
    constrained = np.vstack([b, np.full((1, cells), weight)])
    target = np.append(y, weight * total)
    return _nnls(constrained, target, start)


def _rounded(x: np.ndarray) -> list[int]:
    """Cumulative rounding: each prefix sum rounded to an integer, the parts their differences
    (monotone prefix sums stay monotone, so parts keep their sign)."""
    import numpy as np

    prefix = [0, *(int(round(v)) for v in np.cumsum(x))]
    return [prefix[i + 1] - prefix[i] for i in range(len(x))]


def _nnls(b: np.ndarray, y: np.ndarray, start: np.ndarray) -> np.ndarray:
    """min |b z - y| over z >= 0 (Lawson and Hanson's active set method, started from the
    unconstrained solution's positive part). Any z >= 0 keeps the intervals valid (they add the
    distance to the linear estimate), so an iteration cap only costs accuracy."""
    import numpy as np

    n = b.shape[1]
    scale = max(float(np.max(np.abs(y))), 1.0)
    tol = 1e-10 * scale * max(float(np.max(np.abs(b))), 1.0) * n
    z = np.maximum(start, 0.0)
    passive = z > 0
    for _ in range(3 * n + 10):
        for _ in range(n + 1):  # make the passive set's solution feasible
            trial = np.zeros(n)
            if passive.any():
                trial[passive] = np.linalg.lstsq(b[:, passive], y, rcond=None)[0]
            bad = passive & (trial <= 0)
            if not bad.any():
                z = trial
                break
            gap = z[bad] - trial[bad]
            step = float(np.min(np.where(gap > 0, z[bad] / np.where(gap > 0, gap, 1.0), 0.0)))
            z = z + step * (trial - z)
            passive &= z > 0
            z = np.where(passive, np.maximum(z, 0.0), 0.0)
        gradient = b.T @ (y - b @ z)
        free = ~passive & (gradient > tol)
        if not free.any():
            break
        passive[int(np.argmax(np.where(free, gradient, -np.inf)))] = True
    kept: np.ndarray = np.maximum(z, 0.0)
    return kept

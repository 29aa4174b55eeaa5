"""Assembly: the noisy table -> the analyst's rows, output types and per-cell 95% half-widths."""

from __future__ import annotations

import itertools
from typing import Any, Mapping, Sequence

from dpsql.backend.postsql import release_width
from dpsql.execution.compiled import CompiledQuery
from dpsql.execution.noise import describe, noise_info
from dpsql.ir.plan import Estimate, release_name, robust_name
from dpsql.ir.query import ColumnRef, key_name
from dpsql.result import NoiseInfo, NoisyResult, ResultColumn


def _estimate_value(estimate: Estimate, values: Sequence[Any]) -> Any:
    """An analyst aggregate from release values (the Python twin of postsql.estimate_sql)."""
    if estimate.kind in ("count", "sum"):
        return values[0]
    total, count = values
    column = estimate.column
    assert column is not None and column.lower is not None and column.upper is not None
    mean = float(estimate.center) + total / max(count, 1)
    return min(max(mean, float(column.lower)), float(column.upper))


def simple_rows(compiled: CompiledQuery, columns: dict[str, list[Any]], types: dict[str, str]) -> tuple[
        tuple[str, ...], tuple[str, ...], list[tuple[Any, ...]], list[tuple[float | None, ...]]]:
    """Outputs, types, rows and 95% half-widths for simple queries, without a second engine call.

    Rows keep the order of the noisy table (sorted keys); a cell's interval is the corner
    evaluation of its estimate with each release at level 1 - 0.05/m, as in postsql.
    """
    plan = compiled.plan
    outputs = plan.query.outputs
    nrows = len(next(iter(columns.values()))) if columns else 1
    names = tuple(o.name for o in outputs)
    out_types, getters = [], []
    for output in outputs:
        if output.key is not None:
            out_types.append(types[key_name(output.key)])
            getters.append((output.key, None))
            continue
        assert output.aggregate is not None
        estimate = plan.estimates[output.aggregate]
        if estimate.kind == "robust":
            name = robust_name(estimate.robust)  # type: ignore[arg-type]
            out_types.append(types[name])
            width = describe(plan, plan.robust[estimate.robust]).ci95  # type: ignore[index]
            getters.append((None, (name, width)))
            continue
        release_types = {types[release_name(r)] for r in estimate.releases}
        out_types.append("DOUBLE" if estimate.kind == "avg" or "DOUBLE" in release_types else "BIGINT")
        widths = [float(release_width(plan, r, len(estimate.releases))) for r in estimate.releases]
        getters.append((None, (estimate, widths)))
    rows, cells = [], []
    for i in range(nrows):
        row, cell = [], []
        for key, spec in getters:
            if spec is None:
                row.append(columns[key_name(key)][i])
                cell.append(None)
                continue
            if isinstance(spec[0], str):  # a robust release: exact-or-refused, or PTR-Laplace's interval
                value = columns[spec[0]][i]
                row.append(value)
                cell.append(spec[1] if value is not None else None)
                continue
            estimate, widths = spec
            values = [columns[release_name(r)][i] for r in estimate.releases]
            value = _estimate_value(estimate, values)
            corners = [_estimate_value(estimate, [v + s * w for v, s, w in zip(values, signs, widths)])
                       for signs in itertools.product((-1, 1), repeat=len(values))]
            row.append(value)
            cell.append(float(max(max(corners) - value, value - min(corners))))
        rows.append(tuple(row))
        cells.append(tuple(cell))
    return names, tuple(out_types), rows, cells


def assemble(compiled: CompiledQuery, names: tuple[str, ...], types: tuple[str, ...], rows: list[tuple[Any, ...]]) -> NoisyResult:
    """The answer from post-processing's output (output values, interval bounds where computed)."""
    outputs = compiled.plan.query.outputs
    position = {name: i for i, name in enumerate(names)}
    at = [position[ColumnRef("output", i).name] for i in range(len(outputs))]
    columns = tuple(ResultColumn(o.name, types[at[i]]) for i, o in enumerate(outputs))
    values, cells = [], []
    for row in rows:
        values.append(tuple(row[j] for j in at))
        cells.append(tuple(_half_width(row, position, i) for i in range(len(outputs))))
    infos = fill_ci(noise_info(compiled, values), cells)
    return NoisyResult("query", columns, values, tuple(infos), cells, compiled.plan.cost)


def assemble_simple(compiled: CompiledQuery, columns: dict[str, list[Any]], types: dict[str, str]) -> NoisyResult:
    """The answer of a simple query straight from the noisy table (no post-processing SQL)."""
    names, out_types, rows, cells = simple_rows(compiled, columns, types)
    result_columns = tuple(ResultColumn(n, t) for n, t in zip(names, out_types))
    infos = fill_ci(noise_info(compiled, rows), cells)
    return NoisyResult("query", result_columns, rows, tuple(infos), cells, compiled.plan.cost)


def fill_ci(infos: list[NoiseInfo | None], cells: list[tuple[float | None, ...]]) -> list[NoiseInfo | None]:
    """ci95 of derived columns: one number when equal across rows, else the per-row tuple."""
    out = list(infos)
    for i, info in enumerate(infos):
        if info is not None and info.ci95 is None and cells:
            widths = {c[i] for c in cells}
            out[i] = info.replace(ci95=widths.pop() if len(widths) == 1 else tuple(c[i] for c in cells))
    return out


def _half_width(row: tuple[Any, ...], position: Mapping[str, int], i: int) -> float | None:
    low_at = position.get(ColumnRef("low", i).name)
    if low_at is None:
        return None
    value, low, high = row[position[ColumnRef("output", i).name]], row[low_at], row[position[ColumnRef("high", i).name]]
    if value is None or low is None or high is None:
        return None
    return float(max(high - value, value - low))

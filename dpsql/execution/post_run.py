"""A post-processing query's released tables and each output column's noise information.

The executor runs it (execution/executor.py, fail closed): budget check -> every release's dry
runs -> the outer query over EMPTY released tables (DP127) -> one charge for the sum of the
releases -> each release answered (engine, noise) exactly as the query on its own would be ->
the outer query in a database that holds the released tables and nothing else
(backend/released_db.py). This module holds the pieces that read no engine.

Intervals: an output column that copies a released column (through filters, ORDER BY,
LIMIT, joins, UNION ALL) keeps each cell's 95% half-width, found by the cell's value among the
released cells of its source columns (the widest when several share the value). A derived
column (arithmetic, aggregates or windows over released values) gets none: a sum of
independent Laplace errors has no exact 95% half-width from the parts (the square-root rule is
a normal approximation, not a guarantee), so dpsql drops the interval rather than guess.
A filter or ORDER BY ... LIMIT on noisy values selects cells by their noise: among the selected
cells, coverage may fall below 95% (docs/sql-reference.md).
"""

from __future__ import annotations

from typing import Any, Sequence

from dpsql.backend.released_db import ReleasedTable
from dpsql.execution.compiled import CompiledPost
from dpsql.ir.post import OutputLineage, released_column
from dpsql.result import NoiseInfo, NoisyResult, ResultColumn

_DERIVED = "post-processed (no interval)"


def released_schemas(compiled: CompiledPost, described: Sequence[tuple[ResultColumn, ...]]) -> tuple[ReleasedTable, ...]:
    """The released tables' schemas (no rows), from each release's described output columns."""
    tables = []
    for inp, columns in zip(compiled.query.inputs, described):
        names = tuple(released_column(j) for j in range(len(columns)))  # positional: output names may repeat
        tables.append(ReleasedTable(inp.name, names, tuple(c.type_name for c in columns), []))
    return tuple(tables)


def filled(tables: Sequence[ReleasedTable], results: Sequence[NoisyResult]) -> list[ReleasedTable]:
    """The released tables with each release's released rows."""
    return [ReleasedTable(t.name, t.columns, t.types, r.rows) for t, r in zip(tables, results)]


def noisy_outputs(compiled: CompiledPost, columns: tuple[ResultColumn, ...]) -> tuple[bool, ...]:
    """Which output columns depend on a noisy value (all of them when the lineage is unknown)."""
    lineage = compiled.query.lineage
    if lineage is None or len(lineage) != len(columns):
        return tuple(True for _ in columns)
    return tuple(line.noisy for line in lineage)


def post_result(compiled: CompiledPost, columns: tuple[ResultColumn, ...], types: Sequence[str], rows: list[tuple[Any, ...]],
                results: Sequence[NoisyResult]) -> NoisyResult:
    """The answer: the outer query's rows, each column's noise information and cells' intervals."""
    result_columns = tuple(ResultColumn(c.name, t) for c, t in zip(columns, types))
    infos, cells = _noise(compiled, results, rows, len(result_columns))
    return NoisyResult("query", result_columns, rows, tuple(infos), cells, compiled.cost)


def _noise(compiled: CompiledPost, results: Sequence[NoisyResult], rows: list[tuple[Any, ...]],
           width: int) -> tuple[list[NoiseInfo | None], list[tuple[float | None, ...]]]:
    lineage = compiled.query.lineage
    total = compiled.cost
    derived = NoiseInfo(mechanism=_DERIVED, scale=None, ci95=None, epsilon=float(total.epsilon), delta=float(total.delta))
    if lineage is None or len(lineage) != width:
        return [derived] * width, [tuple(None for _ in range(width)) for _ in rows]
    infos: list[NoiseInfo | None] = []
    widths: list[list[float | None]] = []
    for position, line in enumerate(lineage):
        info, column = _column_noise(line, results, [row[position] for row in rows], derived)
        infos.append(info)
        widths.append(column)
    cells = [tuple(widths[c][r] for c in range(width)) for r in range(len(rows))]
    return infos, cells


def _column_noise(line: OutputLineage, results: Sequence[NoisyResult], values: list[Any],
                  derived: NoiseInfo) -> tuple[NoiseInfo | None, list[float | None]]:
    noisy_sources = [(info, i, j) for i, j in line.sources if (info := results[i].noise_info[j]) is not None]
    if not line.passthrough:
        if not line.noisy:
            return None, [None] * len(values)
        per_column = {(i, j): info.epsilon for info, i, j in noisy_sources}
        epsilon = sum(per_column.values()) if per_column else derived.epsilon
        mechanisms = sorted({info.mechanism for info, _, _ in noisy_sources})
        mechanism = f"{', '.join(mechanisms)}, {_DERIVED}" if mechanisms else _DERIVED
        return derived.replace(mechanism=mechanism, epsilon=float(epsilon)), [None] * len(values)
    if not noisy_sources:
        return None, [None] * len(values)
    # Each released cell's half-width, by value (the widest when several cells share a value).
    by_value: dict[Any, float | None] = {}
    for _, i, j in noisy_sources:
        for row, cells in zip(results[i].rows, results[i].cell_ci95):
            value, half = row[j], cells[j]
            if value in by_value:
                previous = by_value[value]
                by_value[value] = None if previous is None or half is None else max(previous, half)
            else:
                by_value[value] = half
    column = [by_value.get(v) if v is not None else None for v in values]
    first = noisy_sources[0][0]
    distinct = set(column)
    ci95: float | tuple[float | None, ...] | None = distinct.pop() if len(distinct) == 1 else tuple(column)
    if len(noisy_sources) == 1:
        return first.replace(ci95=ci95), column
    infos = [s[0] for s in noisy_sources]
    scales = tuple(s for info in infos for s in (info.scale if isinstance(info.scale, tuple) else (info.scale,))
                   if s is not None)
    return NoiseInfo(mechanism=", ".join(sorted({info.mechanism for info in infos})), scale=scales or None, ci95=ci95,
                     epsilon=float(sum(info.epsilon for info in infos)), delta=float(sum(info.delta for info in infos))), column

"""Running a post-processing query: releases first (charged once, together), then the outer
query over the released rows only, then each output column's noise information.

Order (fail closed): budget check -> every release's dry runs -> the outer query over EMPTY
released tables (DP127) -> one charge for the sum of the releases -> each release answered
(engine, noise) exactly as the query on its own would be -> the outer query in a fresh
database that holds the released tables and nothing else (backend/released_db.py).

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

from typing import TYPE_CHECKING, Any, Sequence

from dpsql.backend.released_db import ReleasedTable
from dpsql.execution.compiled_post import CompiledPost
from dpsql.ir.post import OutputLineage, released_column
from dpsql.result import NoiseInfo, NoisyResult, ResultColumn

if TYPE_CHECKING:
    from dpsql.execution.executor import Executor

_DERIVED = "post-processed (no interval)"


def _tables(executor: Executor, compiled: CompiledPost) -> list[ReleasedTable]:
    """The released tables' schemas (names and types from the plans alone, no data)."""
    cached = compiled.memo.get("tables")
    if isinstance(cached, list):
        return cached
    tables: list[ReleasedTable] = []
    for inp, query in zip(compiled.query.inputs, compiled.inputs):
        columns = executor.describe_private(query)
        names = tuple(released_column(j) for j in range(len(columns)))  # positional: output names may repeat
        tables.append(ReleasedTable(inp.name, names, tuple(c.type_name for c in columns), []))
    compiled.memo["tables"] = tables
    return tables


def _outer_sql(executor: Executor, compiled: CompiledPost) -> str:
    cached = compiled.memo.get("outer_sql")
    if isinstance(cached, str):
        return cached
    text = executor.released.render(_tables(executor, compiled), compiled.query.outer)
    compiled.memo["outer_sql"] = text
    return text


def check_outer(executor: Executor, compiled: CompiledPost) -> tuple[ResultColumn, ...]:
    """The outer query over empty released tables: its output columns, or DP127 (uncharged)."""
    cached = compiled.memo.get("outer_columns")
    if isinstance(cached, tuple):
        return cached
    result = executor.released.check(_tables(executor, compiled), _outer_sql(executor, compiled))
    columns = tuple(ResultColumn(n, t) for n, t in zip(result.names, result.types))
    compiled.memo["outer_columns"] = columns
    return columns


def describe_post(executor: Executor, compiled: CompiledPost) -> tuple[tuple[ResultColumn, ...], tuple[bool, ...]]:
    """Output columns and which are noisy, without data or budget."""
    columns = check_outer(executor, compiled)
    lineage = compiled.query.lineage
    if lineage is None or len(lineage) != len(columns):
        return columns, tuple(True for _ in columns)
    return columns, tuple(line.noisy for line in lineage)


def run_post(executor: Executor, compiled: CompiledPost) -> NoisyResult:
    """Answer a post-processing query (see the module docstring for the order)."""
    executor.charger.check(compiled.cost)  # fail fast, without touching the engine
    for query in compiled.inputs:
        executor.dry_runs(query)
    columns = check_outer(executor, compiled)
    executor.charger.charge_post(compiled.statement.sql, compiled.plan_hash, [q.plan for q in compiled.inputs], compiled.cost,
                                 compiled.memo)
    # Charged: from here on, nothing is refunded, whatever happens.
    results = [executor.answer(query) for query in compiled.inputs]
    tables = [ReleasedTable(t.name, t.columns, t.types, r.rows) for t, r in zip(_tables(executor, compiled), results)]
    out = executor.released.run(tables, _outer_sql(executor, compiled))
    names = tuple(c.name for c in columns)
    result_columns = tuple(ResultColumn(n, t) for n, t in zip(names, out.types))
    infos, cells = _noise(compiled, results, out.rows, len(result_columns))
    return NoisyResult("query", result_columns, out.rows, tuple(infos), cells, compiled.cost)


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

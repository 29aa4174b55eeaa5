"""A post-processing query's released tables and each output column's noise information.

The executor runs it (execution/executor.py, fail closed): budget check -> every release's dry
runs -> the outer query over EMPTY released tables (DP127) -> one charge for the sum of the
releases -> each release answered (engine, noise) exactly as the query on its own would be ->
the outer query in a database that holds the released tables and nothing else
(backend/auxiliary/released_db.py). This module holds the pieces that read no engine.

Grouping sets are reconciled before the outer query reads them (execution/consistency.py: totals
equal the sum of their parts, free post-processing). Intervals follow each output column's
lineage (execution/intervals.py): a column that copies a released column keeps each cell's 95%
half-width and ends, a derived one gets none.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from sqlglot import exp

from dpsql.backend.auxiliary.released_db import ReleasedTable
from dpsql.execution.compiled import CompiledPost
from dpsql.execution.consistency import reconcile
from dpsql.execution.intervals import lineage_noise
from dpsql.ir.post_query import ScalarParameter, released_column
from dpsql.result import NoisyResult, ResultColumn


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


def reconciled(compiled: CompiledPost, raws: Sequence[Any], results: Sequence[NoisyResult]) -> list[NoisyResult]:
    """The releases' answers with each grouping-set query's additive aggregates reconciled
    (`raws`: each release's noisy table, in input order)."""
    out = list(results)
    for group in compiled.query.grouping:
        plans = [compiled.inputs[i].plan for i in group.inputs]
        answers = reconcile(group, plans, [raws[i] for i in group.inputs], [out[i] for i in group.inputs])
        for i, answer in zip(group.inputs, answers):
            out[i] = answer
    return out


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
    infos, cells, bounds = lineage_noise(compiled.query.lineage, compiled.cost, results, rows, len(result_columns))
    return NoisyResult("query", result_columns, rows, tuple(infos), cells, compiled.cost, cell_bounds=bounds)


# --- scalar subqueries' values (analysis/scalar_subqueries.py) ------------------------------------------


def scalar_values(compiled: CompiledPost, index: int, result: NoisyResult) -> dict[str, Any]:
    """The engine parameters release `index` computes: its released value (first row, only column;
    NULL when it is ⊥ or has no row), as a Python value of the parameter's type. Released values
    only: post-processing."""
    return {p.name: first_value(p, result) for p in compiled.query.parameters if p.source == index}


def first_value(parameter: ScalarParameter, result: NoisyResult) -> Any:
    """A scalar subquery's value: its result's first row's only column (NULL when it has no row)."""
    return parameter_value(parameter, result.rows[0][0] if result.rows else None)


def parameter_value(parameter: ScalarParameter, value: Any) -> Any:
    """A released value as the engine parameter `CAST($name AS type)` takes it."""
    if value is None:
        return None
    if parameter.type == "DOUBLE":
        return float(value)
    if parameter.type == "DATE" and isinstance(value, dt.datetime):
        return value.date()
    if parameter.type == "VARCHAR":
        return str(value)
    return value


def unknown_values(compiled: CompiledPost) -> dict[str, Any]:
    """The parameters in the dry runs (before any release): NULL, cast to the same type."""
    return {p.name: None for p in compiled.query.parameters}


def with_values(values: Mapping[str, Any] | None, select: exp.Expr, params: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """An engine statement's parameters with the scalar values it reads (the engines refuse
    parameters a statement does not name)."""
    if not values:
        return params
    used = {str(p.this) for p in select.find_all(exp.Placeholder)} & set(values)
    if not used:
        return params
    return {**(params or {}), **{name: values[name] for name in used}}

"""Release: every noisy value of an answer, after the charge, through the mechanism registry.

`release_rows` turns the engine's exact raw aggregates into the noisy table (partition
selection of private keys, then one Laplace draw per release and group); `release_robust_rows`
releases MEDIAN/QUANTILE, IQR and MODE per group (a value, or None for ⊥) from what the robust
aggregates' raw requests read (engine SQL from backend.robust_sql, run by the executor), read back
in the column's units by the aggregate's own Estimate, with the interval or confidence its
mechanism declares. Every draw comes from the injected random source; nothing here touches the ledger.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from dpsql.backend.engines.engine import EngineResult
from dpsql.backend.sql.plan_sql import UNITS, key_type
from dpsql.backend.sql.robust_sql import GroupKey
from dpsql.execution.compiled import CompiledQuery
from dpsql.ir.plan import (
    Plan,
    release_name,
    robust_ci_name,
    robust_confidence_name,
    robust_end_names,
    robust_name,
)
from dpsql.ir.query import key_name
from dpsql.mechanisms import registry
from dpsql.mechanisms.rng import RandomSource


def _sort_key(key: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    return tuple((value is None, value if value is not None else 0) for value in key)


def release_rows(compiled: CompiledQuery, raw: EngineResult, rng: RandomSource) -> tuple[dict[str, list[Any]], dict[str, str]]:
    """Noisy table columns (keys and released values) from the exact raw aggregates."""
    plan = compiled.plan
    query = plan.query
    nkeys = len(query.keys)
    index = {name: i for i, name in enumerate(raw.names)}
    by_key = {tuple(row[:nkeys]): row for row in raw.rows}
    groups: list[tuple[Any, ...]]
    if nkeys == 0:
        groups = [()]
    elif plan.public_keys:
        groups = list(itertools.product(*[key.column.values or () for key in query.keys]))
    else:
        # Private keys: selection draws in a fixed order (sorted keys), so seeded runs reproduce.
        selection = registry.mechanism_for(plan.selection)
        groups = [k for k in sorted(by_key, key=_sort_key) if selection.release(plan.selection, by_key[k][index[UNITS]], rng)]
    columns: dict[str, list[Any]] = {key_name(i): [g[i] for g in groups] for i in range(nkeys)}
    types = {key_name(i): key_type(k.column.type) for i, k in enumerate(query.keys)}
    for r, release in enumerate(plan.releases):
        name = release_name(r)
        mechanism = registry.mechanism_for(release.spec)
        values = []
        for group in groups:
            row = by_key.get(group)
            exact = int(row[index[name]] or 0) if row is not None else 0
            noisy = mechanism.release(release.spec, exact, rng)
            values.append(noisy if release.unit == 1 else float(Fraction(noisy) * release.unit))
        columns[name] = values
        types[name] = "BIGINT" if release.unit == 1 else "DOUBLE"
    return columns, types


def release_robust_rows(compiled: CompiledQuery, columns: dict[str, list[Any]], types: dict[str, str],
                        data: Sequence[Mapping[GroupKey, Any]], rng: RandomSource) -> None:
    """Add the robust releases' columns (None = ⊥) from what their requests read (`data`, one per
    request: the executor ran them after the charge)."""
    plan = compiled.plan
    if not plan.robust:
        return
    nkeys = len(plan.query.keys)
    nrows = len(columns[key_name(0)]) if nkeys else 1
    groups = [tuple(columns[key_name(i)][row] for i in range(nkeys)) for row in range(nrows)]
    release_robust(plan, groups, columns, types, data, rng)


def release_robust(plan: Plan, groups: Sequence[GroupKey], columns: dict[str, list[Any]], types: dict[str, str],
                   data: Sequence[Mapping[GroupKey, Any]], rng: RandomSource) -> None:
    """Add one noisy column per robust release to `columns` (None where ⊥), in `groups` order."""
    for index, release in enumerate(plan.robust):
        estimate = plan.estimates[release.aggregate]  # its aggregate's module reads the release back
        output = registry.output(release.spec)
        answers, empty = data[release.request], plan.requests[release.request].empty
        cells = []
        for row, group in enumerate(groups):
            raw = estimate.reads(release, answers.get(tuple(group), empty), columns, row)
            cells.append(estimate.decode(registry.release(release.spec, raw, rng)))
        columns[robust_name(index)] = [cell.value for cell in cells]
        types[robust_name(index)] = estimate.output_type(plan)
        if output.interval:  # a value with its own 95% interval, per row
            columns[robust_ci_name(index)] = [cell.half_width for cell in cells]
            types[robust_ci_name(index)] = "DOUBLE"
            if any(cell.low is not None for cell in cells):
                for name, ends in zip(robust_end_names(index), ([c.low for c in cells], [c.high for c in cells])):
                    columns[name], types[name] = ends, "DOUBLE"
        if output.confidence:  # MODE: the confidence it is the mode, per row (None for ⊥)
            columns[robust_confidence_name(index)] = [cell.confidence for cell in cells]
            types[robust_confidence_name(index)] = "DOUBLE"

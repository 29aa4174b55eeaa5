"""Release: every noisy value of an answer, after the charge, through the mechanism registry.

`release_rows` turns the engine's exact raw aggregates into the noisy table (partition
selection of private keys, then one Laplace draw per release and group); `release_robust_rows`
releases MEDIAN/QUANTILE, IQR and MODE per group (a value, or None for ⊥) from what the robust
aggregates' raw requests read (engine SQL from backend.robust_sql, run by the executor). Every draw comes from the
injected random source; nothing here touches the ledger.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any, Mapping, Sequence

from dpsql.backend.engine import EngineResult, key_type
from dpsql.backend.robust_sql import GroupKey, decode
from dpsql.backend.sqlgen import UNITS
from dpsql.execution.compiled import CompiledQuery
from dpsql.ir.plan import (
    CONFIDENCE_MECHANISMS,
    INTERVAL_MECHANISMS,
    Plan,
    RobustRelease,
    release_name,
    robust_ci_name,
    robust_confidence_name,
    robust_name,
)
from dpsql.ir.query import key_name
from dpsql.mechanisms import ptr, registry
from dpsql.mechanisms.confidence import Confident
from dpsql.mechanisms.rng import RandomSource
from dpsql.mechanisms.window_exponential import Bracketed



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


def noisy_types(compiled: CompiledQuery) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Names and engine types of the noisy table's columns (simple queries: of the outputs), from the plan.

    The same types `release_rows` and `simple_rows` produce, known before anything runs.
    """
    plan = compiled.plan
    query = plan.query
    if compiled.simple_outputs:
        out = []
        for output in query.outputs:
            if output.key is not None:
                out.append(key_type(query.keys[output.key].column.type))
                continue
            assert output.aggregate is not None
            estimate = plan.estimates[output.aggregate]
            if estimate.kind == "robust":
                out.append(robust_type(plan, plan.robust[estimate.robust]))  # type: ignore[index]
                continue
            doubles = estimate.kind in ("avg", "variance") or any(plan.releases[r].unit != 1 for r in estimate.releases)
            out.append("DOUBLE" if doubles else "BIGINT")
        return tuple(o.name for o in query.outputs), tuple(out)
    names = [key_name(i) for i in range(len(query.keys))] + [release_name(r) for r in range(len(plan.releases))]
    types = [key_type(k.column.type) for k in query.keys] + ["BIGINT" if r.unit == 1 else "DOUBLE" for r in plan.releases]
    names += [robust_name(r) for r in range(len(plan.robust))]
    types += [robust_type(plan, r) for r in plan.robust]
    intervals = [r for r, release in enumerate(plan.robust) if release.mechanism in INTERVAL_MECHANISMS]
    names += [robust_ci_name(r) for r in intervals]
    types += ["DOUBLE"] * len(intervals)
    confident = [r for r, release in enumerate(plan.robust) if release.mechanism in CONFIDENCE_MECHANISMS]
    names += [robust_confidence_name(r) for r in confident]
    types += ["DOUBLE"] * len(confident)
    return tuple(names), tuple(types)


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


def robust_type(plan: Plan, release: RobustRelease) -> str:
    """The engine type of a robust release's noisy column (known from the plan alone)."""
    if release.mechanism in CONFIDENCE_MECHANISMS:
        return key_type(plan.requests[release.request].column.type)
    if release.mechanism in ("scale", "exponential-iqr", "exponential-fine-iqr"):
        return "DOUBLE"
    assert release.values is not None
    column = release.values.column
    if column.type == "date":
        return "DATE"
    if release.mechanism in ("smed", "exponential", "exponential-fine") and column.type == "int":
        grid = release.values.grid or Fraction(1)
        return "BIGINT" if grid.denominator == 1 else "DOUBLE"
    return "DOUBLE"


def release_robust(plan: Plan, groups: Sequence[GroupKey], columns: dict[str, list[Any]], types: dict[str, str],
                   data: Sequence[Mapping[GroupKey, Any]], rng: RandomSource) -> None:
    """Add one noisy column per robust release to `columns` (None where ⊥), in `groups` order."""
    for index, release in enumerate(plan.robust):
        raw = data[release.request]
        empty = plan.requests[release.request].empty
        values, widths, confidences = [], [], []
        for row, group in enumerate(groups):
            value = _release_one(release, raw.get(tuple(group), empty), columns, row, rng)
            if isinstance(value, Bracketed):  # a value with its 95% interval (grid units)
                value, width = _bracketed(release, value)
                widths.append(width)
            if release.mechanism in CONFIDENCE_MECHANISMS:  # MODE: the value and its confidence (None for ⊥)
                confidences.append(value.confidence if isinstance(value, Confident) else None)
                value = value.value if isinstance(value, Confident) else value
            values.append(None if value is ptr.REFUSED else value)
        columns[robust_name(index)] = values
        types[robust_name(index)] = robust_type(plan, release)
        if widths:
            columns[robust_ci_name(index)] = widths
            types[robust_ci_name(index)] = "DOUBLE"
        if release.mechanism in CONFIDENCE_MECHANISMS:
            columns[robust_confidence_name(index)] = confidences
            types[robust_confidence_name(index)] = "DOUBLE"


def _bracketed(release: RobustRelease, bracketed: Bracketed) -> tuple[Any, float]:
    """The released value in column units and the half-width of a symmetric interval holding [low, high].

    Ranking values rounded to a grid g moves each order statistic by at most g/2 (one quantile) or g
    (a difference of two, IQR), so that slack is added; ints and dates on their unit grid have none.
    """
    values = release.values
    assert values is not None
    grid = values.grid if values.indexed and values.grid is not None else Fraction(0)
    step = grid if grid else Fraction(1)
    half = max(bracketed.value - bracketed.low, bracketed.high - bracketed.value) * step
    if release.mechanism == "exponential-fine-iqr":
        return float(bracketed.value * step), float(half + grid)
    return decode(values, bracketed.value), float(half + grid / 2)


def _release_one(release: RobustRelease, raw: Any, columns: dict[str, list[Any]], row: int, rng: RandomSource) -> Any:
    """One group's release: votes (MODE), order statistics, or (IQR) order statistics and n_hat."""
    if release.n_hat is not None:  # Scale: its value is the IQR itself, not a mapped value
        return registry.release(release.spec, ptr.ScaleInput(raw, columns[release_name(release.n_hat)][row]), rng)
    value = registry.release(release.spec, raw, rng)
    if isinstance(value, (Bracketed, Confident)):  # decoded with its interval or confidence by the caller
        return value
    if release.mechanism == "exponential-iqr":  # a width in grid units, not a value: only the grid applies
        assert release.values is not None
        grid = release.values.grid if release.values.indexed and release.values.grid is not None else Fraction(1)
        return float(value * grid)
    return value if value is ptr.REFUSED else decode(release.values, value)



"""Assembly: the noisy table -> the analyst's rows, output types and per-cell 95% half-widths."""

from __future__ import annotations

from decimal import Decimal

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

from dpsql.accounting.cost import PrivacyCost
from dpsql.backend.engine import key_type
from dpsql.backend.postsql import release_width
from dpsql.execution.compiled import CompiledQuery
from dpsql.execution.engine_calls import EngineCalls
from dpsql.execution.noise import describe, noise_info
from dpsql.ir.plan import CONFIDENCE_MECHANISMS, Estimate, release_name, robust_confidence_name, robust_name
from dpsql.ir.query import ColumnRef, key_name
from dpsql.mechanisms import registry, variance
from dpsql.mechanisms.sparse_vector import SVTCalibration
from dpsql.result import NoiseInfo, NoisyResult, ResultColumn

if TYPE_CHECKING:  # the layer's modules (numpy) load only for a policy that enables a layer
    from dpsql.mechanisms.median_mechanism.core import Release

LAYER = "median_mechanism"


def _estimate_value(estimate: Estimate, values: Sequence[Any]) -> Any:
    """An analyst aggregate from release values (the Python twin of postsql.estimate_sql)."""
    if estimate.kind in ("count", "sum"):
        return values[0]
    if estimate.kind == "variance":
        assert estimate.variance is not None
        squares, total, count = values
        return variance.estimate(estimate.variance, float(count), float(total), float(squares))
    total, count = values
    column = estimate.column
    assert column is not None and column.lower is not None and column.upper is not None
    mean = float(estimate.center) + total / max(count, 1)
    return min(max(mean, float(column.lower)), float(column.upper))


class _Cell(Protocol):
    def cell(self, columns: Mapping[str, list[Any]], row: int) -> tuple[Any, float | None]:
        """One output cell: its value and its 95% half-width (None: exact or ⊥)."""
        ...


@dataclass(frozen=True, slots=True)
class _KeyCell:
    name: str

    def cell(self, columns: Mapping[str, list[Any]], row: int) -> tuple[Any, float | None]:
        return columns[self.name][row], None


@dataclass(frozen=True, slots=True)
class _RobustCell:
    """A robust release: exact-or-refused, or PTR-Laplace's interval (none for ⊥)."""

    name: str
    width: Any

    def cell(self, columns: Mapping[str, list[Any]], row: int) -> tuple[Any, float | None]:
        value = columns[self.name][row]
        widths = columns.get(f"{self.name}__ci95")  # per-row intervals (ir.plan.robust_ci_name), else the plan's
        width = widths[row] if widths is not None else self.width
        return value, width if value is not None else None


@dataclass(frozen=True, slots=True)
class _EstimateCell:
    """COUNT/SUM/AVG from releases; the interval is the corner evaluation of the estimate."""

    estimate: Estimate
    widths: list[float]
    names: tuple[str, ...]  # the estimate's release columns

    def cell(self, columns: Mapping[str, list[Any]], row: int) -> tuple[Any, float | None]:
        values = [columns[name][row] for name in self.names]
        value = _estimate_value(self.estimate, values)
        corners = [_estimate_value(self.estimate, [v + s * w for v, s, w in zip(values, signs, self.widths)])
                   for signs in itertools.product((-1, 1), repeat=len(values))]
        return value, float(max(max(corners) - value, value - min(corners)))


@dataclass(frozen=True, slots=True)
class _VarianceCell:
    """VARIANCE/STDDEV: the estimate and its sound 95% interval (mechanisms/variance.bounds)."""

    estimate: Estimate
    names: tuple[str, ...]  # (sum of squares, sum, count)

    def cell(self, columns: Mapping[str, list[Any]], row: int) -> tuple[Any, float | None]:
        spec = self.estimate.variance
        assert spec is not None
        squares, total, count = (float(columns[name][row]) for name in self.names)
        value = variance.estimate(spec, count, total, squares)
        low, high = variance.bounds(spec, count, total, squares, variance.widths(spec))
        return value, float(max(high - value, value - low))


SimpleShape = tuple[tuple[str, ...], tuple[str, ...], tuple[_Cell, ...]]


def simple_rows(compiled: CompiledQuery, columns: dict[str, list[Any]], types: dict[str, str],
                shape: SimpleShape | None = None) -> tuple[
        tuple[str, ...], tuple[str, ...], list[tuple[Any, ...]], list[tuple[float | None, ...]]]:
    """Outputs, types, rows and 95% half-widths for simple queries, without a second engine call.

    Rows keep the order of the noisy table (sorted keys); a cell's interval is the corner
    evaluation of its estimate with each release at level 1 - 0.05/m, as in postsql. `shape`:
    what to compute per cell (`simple_shape` of these types), when the caller keeps it.
    """
    nrows = len(next(iter(columns.values()))) if columns else 1
    names, out_types, cellers = simple_shape(compiled, types) if shape is None else shape
    rows: list[tuple[Any, ...]] = []
    cells: list[tuple[float | None, ...]] = []
    for i in range(nrows):
        pairs = [celler.cell(columns, i) for celler in cellers]
        rows.append(tuple(value for value, _ in pairs))
        cells.append(tuple(width for _, width in pairs))
    return names, out_types, rows, cells


def simple_shape(compiled: CompiledQuery, types: dict[str, str]) -> SimpleShape:
    """Output names, output types and one cell builder per output of a simple query (no data:
    the plan and the noisy table's types, both public and the same on every run of the plan)."""
    plan = compiled.plan
    outputs = plan.query.outputs
    names = tuple(o.name for o in outputs)
    out_types: list[str] = []
    cellers: list[_Cell] = []
    for output in outputs:
        if output.key is not None:
            out_types.append(types[key_name(output.key)])
            cellers.append(_KeyCell(key_name(output.key)))
            continue
        assert output.aggregate is not None
        estimate = plan.estimates[output.aggregate]
        if estimate.robust is not None:
            name = robust_name(estimate.robust)
            out_types.append(types[name])
            cellers.append(_RobustCell(name, describe(plan, plan.robust[estimate.robust]).ci95))
            continue
        release_types = {types[release_name(r)] for r in estimate.releases}
        out_types.append("DOUBLE" if estimate.kind in ("avg", "variance") or "DOUBLE" in release_types else "BIGINT")
        if estimate.kind == "variance":
            cellers.append(_VarianceCell(estimate, tuple(release_name(r) for r in estimate.releases)))
            continue
        widths = [float(release_width(plan, r, len(estimate.releases))) for r in estimate.releases]
        cellers.append(_EstimateCell(estimate, widths, tuple(release_name(r) for r in estimate.releases)))
    return names, tuple(out_types), tuple(cellers)


def assemble(compiled: CompiledQuery, names: tuple[str, ...], types: tuple[str, ...], rows: list[tuple[Any, ...]],
             template: Sequence[NoiseInfo | None] | None = None) -> NoisyResult:
    """The answer from post-processing's output (output values, interval bounds where computed)."""
    outputs = compiled.plan.query.outputs
    position = {name: i for i, name in enumerate(names)}
    at = [position[ColumnRef("output", i).name] for i in range(len(outputs))]
    columns = tuple(ResultColumn(o.name, types[at[i]]) for i, o in enumerate(outputs))
    values, cells, confidences = [], [], []
    sure = [position.get(ColumnRef("confidence", i).name) for i in range(len(outputs))]
    for row in rows:
        values.append(tuple(row[j] for j in at))
        cells.append(tuple(_half_width(row, position, i) for i in range(len(outputs))))
        confidences.append(tuple(None if j is None else row[j] for j in sure))
    infos = noise_info(compiled, values, cells, confidences, template)
    return NoisyResult("query", columns, values, tuple(infos), cells, compiled.plan.cost)


def assemble_simple(compiled: CompiledQuery, columns: dict[str, list[Any]], types: dict[str, str],
                    template: Sequence[NoiseInfo | None] | None = None, shape: SimpleShape | None = None) -> NoisyResult:
    """The answer of a simple query straight from the noisy table (no post-processing SQL)."""
    names, out_types, rows, cells = simple_rows(compiled, columns, types, shape)
    result_columns = tuple(ResultColumn(n, t) for n, t in zip(names, out_types))
    infos = noise_info(compiled, rows, cells, simple_confidences(compiled, columns, len(rows)), template)
    return NoisyResult("query", result_columns, rows, tuple(infos), cells, compiled.plan.cost)


def simple_confidences(compiled: CompiledQuery, columns: Mapping[str, list[Any]], nrows: int) -> list[tuple[float | None, ...]]:
    """Per row and output, the confidence of a bare MODE release (None elsewhere and for ⊥), in the
    noisy table's row order (the order `simple_rows` keeps)."""
    plan = compiled.plan
    sources: list[list[Any] | None] = []
    for output in plan.query.outputs:
        estimate = plan.estimates[output.aggregate] if output.key is None and output.aggregate is not None else None
        robust = estimate.robust if estimate is not None else None
        bare = robust is not None and plan.robust[robust].mechanism in CONFIDENCE_MECHANISMS
        sources.append(columns.get(robust_confidence_name(robust)) if bare and robust is not None else None)
    return [tuple(None if source is None else source[i] for source in sources) for i in range(nrows)]


def _half_width(row: tuple[Any, ...], position: Mapping[str, int], i: int) -> float | None:
    low_at = position.get(ColumnRef("low", i).name)
    if low_at is None:
        return None
    value, low, high = row[position[ColumnRef("output", i).name]], row[low_at], row[position[ColumnRef("high", i).name]]
    if value is None or low is None or high is None:
        return None
    # Only a number has a half-width: a CASE over noisy values may turn them into text or a flag.
    if not all(isinstance(x, (int, float, Decimal)) and not isinstance(x, bool) for x in (value, low, high)):
        return None
    return float(max(high - value, value - low))


def assemble_layer(compiled: CompiledQuery, release: Release, cal: SVTCalibration, engine: EngineCalls,
                 cost: PrivacyCost) -> NoisyResult:
    """The answer of a Median Mechanism layer release: keys in public-domain order, the count per group.

    Outputs that are a key or the bare count are filled directly; anything else (arithmetic,
    HAVING, ORDER BY, LIMIT) runs as post-processing SQL over the released values only.
    """
    plan = compiled.plan
    bound = plan.query
    groups = list(itertools.product(*[k.column.values or () for k in bound.keys])) if bound.keys else [()]
    columns: dict[str, list[Any]] = {key_name(i): [g[i] for g in groups] for i in range(len(bound.keys))}
    types = {key_name(i): key_type(k.column.type) for i, k in enumerate(bound.keys)}
    columns[release_name(0)] = [int(v) for v in release.values]
    types[release_name(0)] = "BIGINT"
    scale = None
    if release.origin == "hard":
        scale = registry.error(cal).scale
    outputs = bound.outputs
    bare = [o.key is None and o.aggregate == 0 for o in outputs]
    infos: list[NoiseInfo | None] = []
    for output, is_bare in zip(outputs, bare):
        if output.key is not None or not output.aggregates:
            infos.append(None)
            continue
        infos.append(NoiseInfo(
            mechanism=LAYER if is_bare else f"{LAYER} (post-processed)",
            kind=release.kind, scale=scale, ci95=float(release.error) if is_bare else None,
            epsilon=0.0, delta=0.0, hard_slots_left=release.slots_left, mode=cal.mode,
        ))
    if compiled.simple_outputs:
        names = tuple(o.name for o in outputs)
        out_types = tuple(types[key_name(o.key)] if o.key is not None else "BIGINT" for o in outputs)
        rows, cells = [], []
        for i in range(len(groups)):
            rows.append(tuple(columns[key_name(o.key)][i] if o.key is not None else columns[release_name(0)][i] for o in outputs))
            cells.append(tuple(None if o.key is not None else float(release.error) for o in outputs))
    else:
        post = engine.postprocess(columns, types, compiled.post)  # released values only
        position = {name: i for i, name in enumerate(post.names)}
        names = tuple(o.name for o in outputs)
        at = [position[ColumnRef("output", i).name] for i in range(len(outputs))]
        out_types = tuple(post.types[j] for j in at)
        rows = [tuple(row[j] for j in at) for row in post.rows]
        cells = [tuple(float(release.error) if b else None for b in bare) for _ in post.rows]
    result_columns = tuple(ResultColumn(n, t) for n, t in zip(names, out_types))
    return NoisyResult("query", result_columns, rows, tuple(infos), cells, cost)

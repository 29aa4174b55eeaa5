"""The pure data path: compile (parse -> analyse -> plan -> engine SQL) and release (noise).

`compile_statement` reads no data and spends no budget: EXPLAIN stops there. `release_rows`
runs after the charge, on exact raw aggregates, with the injected random source.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

from sqlglot import exp

from dpsql.analysis.analyze import analyze
from dpsql.analysis.context import AnalysisContext
from dpsql.backend.duckdb_engine import EngineResult, bounded_name, empty_name, key_type, render, source_name
from dpsql.backend.postsql import post_select, release_deps, release_width
from dpsql.backend.sqlgen import UNITS, bounded_select, engine_select
from dpsql.frontend.parse import ParsedStatement, parse_statement
from dpsql.ir.plan import Estimate, Plan, release_name
from dpsql.ir.printer import plan_text
from dpsql.ir.query import BoundQuery, PublicQuery, SetStatement, key_name
from dpsql.mechanisms import laplace, partition
from dpsql.mechanisms.rng import RandomSource
from dpsql.planner.plan import plan_query


@dataclass(frozen=True)
class CompiledQuery:
    """A plan with its engine SQL and post-processing SQL, ready to charge and run."""

    statement: ParsedStatement
    plan: Plan
    engine: exp.Select

    @functools.cached_property
    def engine_sql(self) -> str:
        """The engine SQL text (rendered once; the seed stays a $seed parameter)."""
        return render(self.engine)

    @functools.cached_property
    def dry_run_engine(self) -> exp.Select:
        """The same engine query over an empty table of the same schema (checked before charging)."""
        return engine_select(self.plan, empty_name(self.plan.query.table))

    @functools.cached_property
    def post(self) -> exp.Select:
        """Post-processing SQL over the noisy table (built only when the query needs it)."""
        return post_select(self.plan)

    @property
    def simple_outputs(self) -> bool:
        """Outputs are keys and bare aggregates, with no HAVING, ORDER BY, LIMIT or OFFSET."""
        query = self.plan.query
        bare = all(o.key is not None or (isinstance(o.expr, exp.Column) and o.expr.name.startswith("__a")) for o in query.outputs)
        return bare and query.having is None and not query.order and query.limit is None and query.offset is None

    def explain_lines(self) -> list[str]:
        """EXPLAIN output: plan, mechanisms, scales, cost, then the engine SQL."""
        table = self.plan.query.table
        lines = [f"Query: {' '.join(self.statement.sql.split())}", *plan_text(self.plan), "Engine SQL:"]
        lines.append(f"  {bounded_name(table)} := {render(bounded_select(table, source_name(table)))}")
        lines.append(f"  {render(self.engine)}")
        return lines

    @functools.cached_property
    def plan_hash(self) -> str:
        """A digest of the plan text (recorded in the ledger)."""
        return hashlib.sha256("\n".join(self.explain_lines()).encode()).hexdigest()[:16]


def compile_statement(
    sql: str, parameters: Sequence[object] | None, ctx: AnalysisContext
) -> tuple[ParsedStatement, CompiledQuery | PublicQuery | SetStatement]:
    """Parse, analyse and plan one statement. Pure: no data, no budget."""
    statement = parse_statement(sql, parameters)
    bound = analyze(statement, ctx)
    if isinstance(bound, BoundQuery):
        plan = plan_query(bound)
        return statement, CompiledQuery(statement, plan, engine_select(plan, bounded_name(bound.table)))
    return statement, bound


def _sort_key(key: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    return tuple((value is None, value if value is not None else 0) for value in key)


def release_rows(compiled: CompiledQuery, raw: EngineResult, rng: RandomSource) -> tuple[dict[str, list[Any]], dict[str, str]]:
    """Noisy table columns (keys and released values) from the exact raw aggregates."""
    plan = compiled.plan
    query = plan.query
    nkeys = len(query.keys)
    index = {name: i for i, name in enumerate(raw.names)}
    by_key = {tuple(row[:nkeys]): row for row in raw.rows}
    if nkeys == 0:
        groups = [()]
    elif plan.public_keys:
        groups = list(itertools.product(*[key.column.values or () for key in query.keys]))
    else:
        # Private keys: selection draws in a fixed order (sorted keys), so seeded runs reproduce.
        groups = [k for k in sorted(by_key, key=_sort_key) if partition.keep(plan.selection, by_key[k][index[UNITS]], rng)]  # type: ignore[arg-type]
    columns: dict[str, list[Any]] = {key_name(i): [g[i] for g in groups] for i in range(nkeys)}
    types = {key_name(i): key_type(k.column.type) for i, k in enumerate(query.keys)}
    for r, release in enumerate(plan.releases):
        name = release_name(r)
        values = []
        for group in groups:
            row = by_key.get(group)
            exact = int(row[index[name]] or 0) if row is not None else 0
            noisy = laplace.release(release.spec, exact, rng)
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
            estimate = plan.estimates[int(output.expr.name[3:])]
            doubles = estimate.kind == "avg" or any(plan.releases[r].unit != 1 for r in estimate.releases)
            out.append("DOUBLE" if doubles else "BIGINT")
        return tuple(o.name for o in query.outputs), tuple(out)
    names = [key_name(i) for i in range(len(query.keys))] + [release_name(r) for r in range(len(plan.releases))]
    types = [key_type(k.column.type) for k in query.keys] + ["BIGINT" if r.unit == 1 else "DOUBLE" for r in plan.releases]
    return tuple(names), tuple(types)


def noise_info(compiled: CompiledQuery) -> list[dict[str, Any] | None]:
    """One dict per output column (None for group keys): mechanism, scale, epsilon, delta."""
    plan = compiled.plan
    infos: list[dict[str, Any] | None] = []
    for output in plan.query.outputs:
        deps = release_deps(output.expr, plan)
        if not deps:
            infos.append(None)
            continue
        releases = [plan.releases[r] for r in deps]
        scales = [float(r.spec.scale * r.unit) for r in releases]
        kinds = {plan.estimates[a].kind for a in output.aggregates}
        single = len(deps) == 1 and output.expr.find(exp.Column) == output.expr
        infos.append(
            {
                "mechanism": "laplace" if single else "laplace (" + ", ".join(sorted(kinds)) + ", post-processed)",
                "scale": scales[0] if len(scales) == 1 else tuple(scales),
                "ci95": float(release_width(plan, deps[0], 1)) if single else None,
                "epsilon": float(sum(r.spec.epsilon for r in releases)),
                "delta": 0.0,
            }
        )
    return infos


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
        estimate = plan.estimates[int(output.expr.name[3:])]
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

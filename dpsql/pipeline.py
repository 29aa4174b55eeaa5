"""The pure data path: compile (parse -> analyse -> plan -> engine SQL) and release (noise).

`compile_statement` reads no data and spends no budget: EXPLAIN stops there. `release_rows`
runs after the charge, on exact raw aggregates, with the injected random source;
`release_robust_rows` then runs the robust aggregates' raw requests and releases them
(MEDIAN/QUANTILE, IQR, MODE: dpsql/robust.py).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

from sqlglot import exp

from dpsql.analysis.analyze import analyze
from dpsql.analysis.context import AnalysisContext
from dpsql.backend.dialects import render
from dpsql.backend.engine import EngineResult, bounded_name, empty_name, key_type, source_name
from dpsql.backend.postsql import post_select, release_deps, release_width, robust_deps
from dpsql.backend.robust import DUCKDB_CAPABILITIES, RobustQuery, robust_queries
from dpsql.backend.sqlgen import SEED, UNITS, bounded_select, engine_select
from dpsql.frontend.parse import ParsedStatement, parse_statement
from dpsql.ir.plan import Estimate, Plan, release_name, robust_name
from dpsql.ir.printer import plan_text
from dpsql.ir.query import BoundQuery, PublicQuery, SetStatement, key_name
from dpsql.mechanisms import laplace, partition
from dpsql.mechanisms.rng import RandomSource
from dpsql.planner.plan import plan_query
from dpsql.robust import describe, mark_refusals, release_robust, robust_type


@dataclass(frozen=True)
class CompiledQuery:
    """A plan with its engine SQL and post-processing SQL, ready to charge and run."""

    statement: ParsedStatement
    plan: Plan
    engine: exp.Select

    @functools.cached_property
    def engine_sql(self) -> str:
        """The DuckDB engine SQL text (rendered once; the seed stays a $seed parameter)."""
        return self.render_once(self.engine)

    @functools.cached_property
    def uses_seed(self) -> bool:
        """Whether the engine query takes the secret per-query $seed (key bounding)."""
        return any(p.this == SEED for p in self.engine.find_all(exp.Placeholder))

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

    @functools.cached_property
    def robust_queries(self) -> tuple[RobustQuery, ...]:
        """The robust aggregates' raw requests over the bounded relation, for DuckDB."""
        return self.robust_queries_for(DUCKDB_CAPABILITIES)

    @functools.cached_property
    def _by_engine(self) -> dict[tuple[str, frozenset[str]], Any]:
        return {}

    def robust_queries_for(self, capabilities: frozenset[str]) -> tuple[RobustQuery, ...]:
        """The robust aggregates' raw requests for an engine with these capabilities (run after the charge)."""
        key = ("queries", capabilities)
        if key not in self._by_engine:
            self._by_engine[key] = robust_queries(self.plan, bounded_name(self.plan.query.table), capabilities)
        return self._by_engine[key]  # type: ignore[no-any-return]

    def robust_dry_runs(self, capabilities: frozenset[str] = DUCKDB_CAPABILITIES) -> tuple[tuple[exp.Select, dict[str, int]], ...]:
        """Every robust statement over an empty table of the same schema, with dummy seeds (checked before charging)."""
        key = ("dry", capabilities)
        if key not in self._by_engine:
            self._by_engine[key] = tuple(statement for query in robust_queries(self.plan, empty_name(self.plan.query.table), capabilities)
                                         for statement in query.statements())
        return self._by_engine[key]  # type: ignore[no-any-return]

    @functools.cached_property
    def _rendered(self) -> dict[tuple[int, str], str]:
        return {}

    def render_once(self, select: exp.Expr, dialect: str = "duckdb") -> str:
        """Engine SQL text of one of this query's statements for one engine, rendered once."""
        text = self._rendered.get((id(select), dialect))
        if text is None:
            text = self._rendered[(id(select), dialect)] = render(select, dialect)
        return text

    def explain_lines(self, dialect: str = "duckdb", capabilities: frozenset[str] = DUCKDB_CAPABILITIES) -> list[str]:
        """EXPLAIN output: plan, mechanisms, scales, cost, then the engine SQL of that engine."""
        table = self.plan.query.table
        engine = "" if dialect == "duckdb" else f" ({dialect})"
        lines = [f"Query: {' '.join(self.statement.sql.split())}", *plan_text(self.plan), f"Engine SQL{engine}:"]
        lines.append(f"  {bounded_name(table)} := {render(bounded_select(table, source_name(table)), dialect)}")
        lines.append(f"  {self.render_once(self.engine, dialect)}")
        for index, query in enumerate(self.robust_queries_for(capabilities)):
            lines.append(f"  request {index}: {self.render_once(query.main, dialect)}")
            if query.scan is not None:
                lines.append(f"  request {index}, then with the bracket bound: {self.render_once(query.scan, dialect)}")
            if query.fallback is not None:
                lines.append(f"  request {index}, exact fallback when a bracket misses: {self.render_once(query.fallback, dialect)}")
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
            if estimate.kind == "robust":
                out.append(robust_type(plan, plan.robust[estimate.robust]))  # type: ignore[index]
                continue
            doubles = estimate.kind == "avg" or any(plan.releases[r].unit != 1 for r in estimate.releases)
            out.append("DOUBLE" if doubles else "BIGINT")
        return tuple(o.name for o in query.outputs), tuple(out)
    names = [key_name(i) for i in range(len(query.keys))] + [release_name(r) for r in range(len(plan.releases))]
    types = [key_type(k.column.type) for k in query.keys] + ["BIGINT" if r.unit == 1 else "DOUBLE" for r in plan.releases]
    names += [robust_name(r) for r in range(len(plan.robust))]
    types += [robust_type(plan, r) for r in plan.robust]
    return tuple(names), tuple(types)


def noise_info(compiled: CompiledQuery, rows: Sequence[Sequence[Any]] | None = None) -> list[dict[str, Any] | None]:
    """One dict per output column (None for group keys): mechanism, scale, epsilon, delta.

    Columns of robust aggregates also say whether they can be ⊥ (`refusal`: the public sentence)
    and, given the answer's rows, which cells were (`refused`: a bool, or one flag per row).
    """
    plan = compiled.plan
    infos: list[dict[str, Any] | None] = []
    for output in plan.query.outputs:
        deps = release_deps(output.expr, plan)
        robust = robust_deps(output.expr, plan)
        if robust:
            infos.append(_robust_info(plan, output.expr, deps, robust))
            continue
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
    if rows is not None:
        mark_refusals(infos, rows)
    return infos


def _robust_info(plan: Plan, expr: exp.Expr, deps: tuple[int, ...], robust: tuple[int, ...]) -> dict[str, Any]:
    infos = [describe(plan, plan.robust[r]) for r in robust]
    if len(robust) == 1 and not deps and expr.find(exp.Column) == expr:
        return infos[0]
    refusals = [i["refusal"] for i in infos if "refusal" in i]
    info: dict[str, Any] = {
        "mechanism": ", ".join([i["mechanism"] for i in infos] + (["laplace"] if deps else [])) + " (post-processed)",
        "scale": None,
        "ci95": None,
        "epsilon": sum(i["epsilon"] for i in infos) + float(sum(plan.releases[r].spec.epsilon for r in deps)),
        "delta": sum(i["delta"] for i in infos),
    }
    if refusals:
        info.update({"refusal": " ".join(refusals), "refused": False})
    return info


def release_robust_rows(compiled: CompiledQuery, columns: dict[str, list[Any]], types: dict[str, str],
                        run: Callable[[str, Mapping[str, Any]], EngineResult], rng: RandomSource,
                        dialect: str = "duckdb", capabilities: frozenset[str] = DUCKDB_CAPABILITIES) -> None:
    """Run the robust requests (after the charge) and add their released columns (None = ⊥)."""
    plan = compiled.plan
    if not plan.robust:
        return
    nkeys = len(plan.query.keys)
    nrows = len(columns[key_name(0)]) if nkeys else 1
    groups = [tuple(columns[key_name(i)][row] for i in range(nkeys)) for row in range(nrows)]

    def runner(select: exp.Select, params: Mapping[str, Any]) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        result = run(compiled.render_once(select, dialect), params)
        return result.names, result.rows

    release_robust(plan, compiled.robust_queries_for(capabilities), groups, columns, types, runner, rng)


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
        if estimate.kind == "robust":
            name = robust_name(estimate.robust)  # type: ignore[arg-type]
            out_types.append(types[name])
            width = describe(plan, plan.robust[estimate.robust]).get("ci95")  # type: ignore[index]
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

"""Compile (parse -> analyse -> plan -> engine SQL): the CompiledQuery that execution runs.

`compile_statement` reads no data and spends no budget: EXPLAIN stops there. A CompiledQuery
renders its engine statements once per dialect and remembers which engines' dry runs it passed.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from sqlglot import exp

from dpsql.analysis.analyze import analyze
from dpsql.analysis.context import AnalysisContext
from dpsql.backend.dialects import render
from dpsql.backend.engine import (
    bounded_heavy_name,
    bounded_name,
    empty_keyed_name,
    empty_name,
    keyed_name,
    source_name,
)
from dpsql.backend.join_sql import joined_select
from dpsql.backend.postsql import post_select
from dpsql.backend.robust_sql import DUCKDB_CAPABILITIES, RobustQuery, robust_queries
from dpsql.backend.bounding import bounding_steps
from dpsql.backend.sqlgen import SEED, bounded_select, engine_select, key_heavy_select, keyed_select, needs_keyed
from dpsql.frontend.parse import ParsedStatement, parse_statement
from dpsql.ir.join import JoinedTable
from dpsql.ir.plan import Plan
from dpsql.ir.expected import expected_lines
from dpsql.ir.printer import plan_text
from dpsql.ir.post import PostQuery
from dpsql.ir.query import BoundQuery, PublicQuery, RowProbe, SetStatement
from dpsql.planner.plan import plan_query

if TYPE_CHECKING:
    from dpsql.execution.compiled_post import CompiledPost


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
    def keyed_columns(self) -> tuple[str, ...]:
        """The grouping columns of the session's keyed relation this query reads (empty: none)."""
        return engine_relation_keys(self.plan)

    @functools.cached_property
    def dry_run_engine(self) -> exp.Select:
        """The same engine query over an empty table of the same schema (checked before charging)."""
        table = self.plan.query.table
        return engine_select(self.plan, empty_keyed_name(table) if self.keyed_columns else empty_name(table))

    @functools.cached_property
    def post(self) -> exp.Select:
        """Post-processing SQL over the noisy table (built only when the query needs it)."""
        return post_select(self.plan)

    @property
    def simple_outputs(self) -> bool:
        """Outputs are keys and bare aggregates, with no HAVING, ORDER BY, LIMIT or OFFSET."""
        query = self.plan.query
        bare = all(o.key is not None or o.aggregate is not None for o in query.outputs)
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
    def _rendered(self) -> dict[tuple[exp.Expr, str], str]:
        return {}

    def render_once(self, select: exp.Expr, dialect: str = "duckdb") -> str:
        """Engine SQL text of one of this query's statements for one engine, rendered once.

        Keyed by the statement itself (sqlglot caches its hash; the lookup finds the same object
        first), so equal statements share their text.
        """
        key = (select, dialect)
        text = self._rendered.get(key)
        if text is None:
            text = self._rendered[key] = render(select, dialect)
        return text

    @functools.cached_property
    def memo(self) -> dict[str, Any]:
        """Execution's values derived from the plan alone (e.g. its noise_info), computed once."""
        return {}

    @functools.cached_property
    def dry_runs_passed(self) -> set[str]:
        """The engine dialects whose dry runs this query passed (execution skips them next time)."""
        return set()

    def explain_lines(self, dialect: str = "duckdb", capabilities: frozenset[str] = DUCKDB_CAPABILITIES, verbose: bool = True) -> list[str]:
        """EXPLAIN output: plan, mechanisms, scales, cost, then (verbose) the engine SQL of that engine."""
        table = self.plan.query.table
        engine = "" if dialect == "duckdb" else f" ({dialect})"
        lines = [f"Query: {' '.join(self.statement.sql.split())}", *plan_text(self.plan), *expected_lines(self.plan)]
        if not verbose:
            return lines
        lines.append(f"Engine SQL{engine}:")
        lines.extend(_relation_lines(table, self.keyed_columns, dialect))
        lines.append(f"  {self.render_once(self.engine, dialect)}")
        for index, query in enumerate(self.robust_queries_for(capabilities)):
            lines.append(f"  request {index}: {self.render_once(query.main, dialect)}")
            if query.scan is not None:
                bound = "the windows' bucket ranges" if query.width is not None else "the bracket"
                lines.append(f"  request {index}, then with {bound} bound: {self.render_once(query.scan, dialect)}")
            if query.fallback is not None:
                when = "if the two reads' counts ever disagree" if query.width is not None else "when a bracket misses"
                lines.append(f"  request {index}, exact fallback {when}: {self.render_once(query.fallback, dialect)}")
        return lines

    @functools.cached_property
    def plan_hash(self) -> str:
        """A digest of the plan text (recorded in the ledger)."""
        return hashlib.sha256("\n".join(self.explain_lines()).encode()).hexdigest()[:16]


_RELATION_LINES: dict[tuple[int, tuple[str, ...], str], tuple[Any, tuple[str, ...]]] = {}
_RELATION_LINES_MAX = 256


def _relation_lines(table: Any, keys: tuple[str, ...], dialect: str) -> tuple[str, ...]:
    """EXPLAIN's lines for the statements that build a table's bounded (and keyed) relation.

    They depend on the table, the grouping columns and the dialect only, and rendering them took
    about 8 ms, paid by every new query (its plan hash is the digest of its EXPLAIN text): cached
    per table object (identity: a policy's tables are immutable values, kept alive by the cache)."""
    slot = (id(table), keys, dialect)
    found = _RELATION_LINES.get(slot)
    if found is not None and found[0] is table:
        return found[1]
    lines: list[str] = []
    if isinstance(table, JoinedTable):  # the parts' bounded relations, then the join's rows
        for part in table.private_parts:
            lines.append(f"  {bounded_name(part)} := {render(bounded_select(part, source_name(part)), dialect)}")
        relations = {t.name: bounded_name(t) for t in table.private_parts} | {t.name: source_name(t) for t in table.public_tables}
        lines.append(f"  {source_name(table)} := {render(joined_select(table, relations), dialect)}")
    for step in bounding_steps(table, source_name(table), bounded_name(table), bounded_heavy_name(table)):
        lines.append(f"  {step.table} := {render(step.sql, dialect)}" if step.table else f"  {render(step.sql, dialect)}")
    if keys:
        name = keyed_name(table, keys)
        lines.append(f"  {name}_heavy := {render(key_heavy_select(table, bounded_name(table), keys), dialect)}")
        lines.append(f"  {name} := {render(keyed_select(table, bounded_name(table), keys, f'{name}_heavy'), dialect)}")
    if len(_RELATION_LINES) >= _RELATION_LINES_MAX:
        _RELATION_LINES.clear()
    _RELATION_LINES[slot] = (table, tuple(lines))
    return tuple(lines)


def engine_relation_keys(plan: Plan) -> tuple[str, ...]:
    """The grouping columns whose keyed relation the plan's engine query reads (empty: the bounded one)."""
    if not needs_keyed(plan):
        return ()
    # A derived key (GROUP BY age // 10) is keyed on the columns it reads: a person's flagged row
    # per kept tuple of those columns has one value of each key expression, so each person has
    # flagged rows in at most max_groups key values; two kept tuples can share a key value, so
    # engine_select counts distinct persons there (sqlgen.engine_select).
    names: list[str] = []
    for key in plan.query.keys:
        read = [key.column.name] if key.expr is None else [c.name.lower() for c in key.expr.find_all(exp.Column)]
        names.extend(n for n in read if n not in names)
    return tuple(names)


def engine_relation(plan: Plan) -> str:
    """The session relation the plan's engine query reads."""
    keys = engine_relation_keys(plan)
    return keyed_name(plan.query.table, keys) if keys else bounded_name(plan.query.table)


def compile_statement(
    sql: str, parameters: Sequence[object] | None, ctx: AnalysisContext
) -> tuple[ParsedStatement, CompiledQuery | CompiledPost | PublicQuery | SetStatement | RowProbe]:
    """Parse, analyse and plan one statement. Pure: no data, no budget (a CompiledPost:
    post-processing over several releases)."""
    statement = parse_statement(sql, parameters)
    bound = analyze(statement, ctx)
    if isinstance(bound, PostQuery):
        # compiled_post builds on this module (CompiledQuery): imported here, not at the top.
        from dpsql.execution.compiled_post import compile_post

        return statement, compile_post(statement, bound)
    if isinstance(bound, BoundQuery):
        plan = plan_query(bound)
        return statement, CompiledQuery(statement, plan, engine_select(plan, engine_relation(plan)))
    return statement, bound

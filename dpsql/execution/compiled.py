"""Compile (parse -> analyse -> plan -> engine SQL): the CompiledQuery that execution runs.

`compile_statement` reads no data and spends no budget: EXPLAIN stops there. A compiled statement
(CompiledQuery, or CompiledPost: post-processing over several releases) is an immutable value; a
session keeps what it derives from one (rendered SQL, dry runs passed) in its own state.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlglot import exp

from dpsql.accounting.cost import PrivacyCost
from dpsql.analysis.analyze import analyze
from dpsql.analysis.context import AnalysisContext
from dpsql.backend.auxiliary.released_db import MAX_ROWS, ReleasedTable
from dpsql.backend.engines.engine import (
    bounded_heavy_name,
    bounded_name,
    empty_keyed_name,
    empty_name,
    keyed_name,
    source_name,
)
from dpsql.backend.sql.bounding import bounding_steps
from dpsql.backend.sql.engine_dialects import render
from dpsql.backend.sql.join_sql import joined_select
from dpsql.backend.sql.output_sql import OUTPUTS, output_select, output_table
from dpsql.backend.sql.plan_sql import SEED, bounded_select, engine_select, key_heavy_select, keyed_select, needs_keyed
from dpsql.backend.sql.robust_sql import DUCKDB_CAPABILITIES, RobustQuery, robust_queries
from dpsql.catalog.policy import Table
from dpsql.execution import intervals
from dpsql.execution.consistency import explain as explain_consistency
from dpsql.frontend.parse import ParsedStatement, parse_statement
from dpsql.ir.expected import expected_lines
from dpsql.ir.identity import plan_identity
from dpsql.ir.join import JoinedTable
from dpsql.ir.plan import Plan
from dpsql.ir.post_query import PostQuery
from dpsql.ir.printer import plan_text
from dpsql.ir.query import BoundQuery, PublicQuery, RowProbe, SetStatement
from dpsql.planner.build import plan_query


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class CompiledQuery:
    """A plan with its engine query, ready to charge and run. Immutable: nothing here changes when
    a session runs it (what a session derives from it, rendered SQL, dry runs passed, its ledger
    entry, is kept by that session's executor: execution/state.py), so compiled queries may be
    shared. Compared by identity (a plan holds expressions; equal texts may compile apart)."""

    statement: ParsedStatement
    plan: Plan
    engine: exp.Select
    uses_seed: bool  # the engine query takes the secret per-query $seed (key bounding)
    keyed_columns: tuple[str, ...]  # the grouping columns of the session's keyed relation it reads (empty: none)

    @property
    def engine_sql(self) -> str:
        """The DuckDB engine SQL text (rendered on each access; the seed stays a $seed parameter)."""
        return render(self.engine, "duckdb")

    @property
    def dry_run_engine(self) -> exp.Select:
        """The same engine query over an empty table of the same schema (checked before charging)."""
        table = self.plan.query.table
        return engine_select(self.plan, empty_keyed_name(table) if self.keyed_columns else empty_name(table))

    @property
    def corners(self) -> dict[int, tuple[int, ...]]:
        """The outputs whose interval is a corner evaluation, with their releases (execution/intervals.py)."""
        return intervals.corners(self.plan)

    @property
    def post(self) -> exp.Select:
        """Post-processing SQL over the released aggregates (built on each access: the executor keeps its session's)."""
        return output_select(self.plan, self.corners)

    @property
    def post_table(self) -> ReleasedTable:
        """The released aggregates' table as post-processing reads it: names and types, no rows
        (built on each access: the executor keeps its session's)."""
        names, types = output_table(self.plan, self.corners)
        return ReleasedTable(OUTPUTS, names, types, [])

    @property
    def simple_outputs(self) -> bool:
        """Outputs are keys and bare aggregates, with no HAVING, ORDER BY, LIMIT or OFFSET."""
        query = self.plan.query
        bare = all(o.key is not None or o.aggregate is not None for o in query.outputs)
        return bare and query.having is None and not query.order and query.limit is None and query.offset is None

    @property
    def robust_queries(self) -> tuple[RobustQuery, ...]:
        """The robust aggregates' raw requests over the bounded relation, for DuckDB."""
        return self.robust_queries_for(DUCKDB_CAPABILITIES)

    def robust_queries_for(self, capabilities: frozenset[str]) -> tuple[RobustQuery, ...]:
        """The robust aggregates' raw requests for an engine with these capabilities (run after the charge)."""
        return robust_queries(self.plan, bounded_name(self.plan.query.table), capabilities)

    def plan_hash(self) -> str:
        """The plan's identity in the ledger: the digest of its canonical form (ir/identity.py)."""
        return plan_identity(self.plan)

    def explain_lines(self, dialect: str = "duckdb", capabilities: frozenset[str] = DUCKDB_CAPABILITIES, verbose: bool = True,
                      text: Callable[[exp.Expr], str] | None = None) -> list[str]:
        """EXPLAIN output: plan, mechanisms, scales, cost, then (verbose) the engine SQL of that engine
        (`text`: a statement's SQL text for that engine, when the caller keeps them rendered)."""
        sql = text if text is not None else functools.partial(render, dialect=dialect)
        table = self.plan.query.table
        engine = "" if dialect == "duckdb" else f" ({dialect})"
        lines = [f"Query: {' '.join(self.statement.sql.split())}", *plan_text(self.plan), *expected_lines(self.plan)]
        if not verbose:
            return lines
        lines.append(f"Engine SQL{engine}:")
        lines.extend(_relation_lines(table, self.keyed_columns, dialect))
        lines.append(f"  {sql(self.engine)}")
        for index, query in enumerate(self.robust_queries_for(capabilities)):
            lines.append(f"  request {index}: {sql(query.main)}")
            if query.scan is not None:
                bound = "the windows' bucket ranges" if query.width is not None else "the bracket"
                lines.append(f"  request {index}, then with {bound} bound: {sql(query.scan)}")
            if query.fallback is not None:
                when = "if the two reads' counts ever disagree" if query.width is not None else "when a bracket misses"
                lines.append(f"  request {index}, exact fallback {when}: {sql(query.fallback)}")
        return lines


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class CompiledPost:
    """A post-processing query compiled (no data, no budget): one CompiledQuery per release, and
    the outer query over the released tables. Immutable, as CompiledQuery."""

    statement: ParsedStatement
    query: PostQuery
    inputs: tuple[CompiledQuery, ...]
    cost: PrivacyCost  # the sum of the releases' costs: each release is charged, the outer query is free

    def plan_hash(self) -> str:
        """The ledger's identity of the whole statement: the outer query and every release's plan."""
        return plan_identity(self.query, tuple(compiled.plan for compiled in self.inputs))

    def explain_lines(self, dialect: str = "duckdb", capabilities: frozenset[str] = DUCKDB_CAPABILITIES, verbose: bool = True) -> list[str]:
        """EXPLAIN: each release (its plan, cost and, verbose, engine SQL), the outer query, the total cost."""
        query = self.query
        count = len(self.inputs)
        lines = [f"Query: {' '.join(self.statement.sql.split())}",
                 f"Post-processing over released results ({query.kind}): {count} release(s), each computed and noised "
                 f"first; the outer query then reads the released rows{' and public tables' if query.public else ''} only, "
                 "in a separate database without private tables, at no extra cost"]
        for index, (inp, compiled) in enumerate(zip(query.inputs, self.inputs)):
            lines.append(f"Release {index + 1} of {count}: {inp.name} ({inp.role})")
            lines.extend(f"  {line}" for line in compiled.explain_lines(dialect, capabilities, verbose))
        lines.extend(self._parameter_lines())
        lines.extend(f"Public table {p.table.name} as {p.name}: read exactly (public rows, no cost, at most "
                     f"{MAX_ROWS:,} rows), beside the released rows" for p in query.public)
        lines.append(f"Outer query (released rows{' and public rows' if query.public else ''} only): "
                     f"{render(query.outer, 'duckdb')}")
        lines.append("Intervals: a column the outer query selects as released keeps each cell's 95% interval; a derived "
                     "column (arithmetic, aggregates or windows over released values) has none")
        lines.extend(f"Note: {note}" for note in query.notes)
        for group in query.grouping:
            lines.extend(explain_consistency(group, [self.inputs[i].plan for i in group.inputs]))
        parts = " + ".join(f"{float(c.plan.cost.epsilon):g}" for c in self.inputs)
        lines.append(f"Cost: epsilon {float(self.cost.epsilon):g}, delta {float(self.cost.delta):g}"
                     + (f" (epsilon {parts}: the sum of the {count} releases)" if count > 1 else ""))
        return lines


    def readers(self, name: str) -> list[int]:
        """The releases (indices) whose statements read the scalar parameter `name`."""
        return [index for index, compiled in enumerate(self.inputs) if name in scalar_reads(compiled.plan.query)]

    def _parameter_lines(self) -> list[str]:
        """EXPLAIN: each scalar subquery's value, where it comes from and who reads it, and how the
        budget is split between the releases (public facts: the SQL's OPTIONS and the policy)."""
        parameters = self.query.parameters
        if not parameters:
            return []
        lines = []
        for parameter in parameters:
            readers = ", ".join(str(i + 1) for i in self.readers(parameter.name)) or "none"
            source = (f"the exact value of {parameter.text} over public tables, read before the releases (no cost; NULL if "
                      "it has no row)" if parameter.source is None else
                      f"the value release {parameter.source + 1} releases for {parameter.text} (NULL if it is ⊥ or has no row)")
            lines.append(f"Parameter ${parameter.name} ({parameter.type}) := {source}, read by release(s) {readers} "
                         "as a typed engine parameter, never as SQL text: their plans, dry runs and sensitivities are "
                         "the same whatever the value")
        if len(self.inputs) < 2:
            return lines
        shares = " + ".join(f"epsilon {float(c.plan.cost.epsilon):g} (release {i + 1})" for i, c in enumerate(self.inputs))
        lines.append(f"Budget split: {shares}: each release has the budget of its own SELECT (its OPTIONS, else the "
                     "policy's default per-query budget), fixed before any data is read; the statement is charged once, "
                     "for their sum, before the first release runs")
        return lines


def scalar_reads(query: BoundQuery) -> frozenset[str]:
    """The engine parameters (scalar subqueries' values) a release's statements read: in its
    WHERE, its aggregates' arguments and its key expressions."""
    parts = [query.where, *(a.expr for a in query.aggregates), *(k.expr for k in query.keys)]
    return frozenset(str(p.this) for part in parts if part is not None for p in part.find_all(exp.Placeholder))


def _relation_lines(table: Table, keys: tuple[str, ...], dialect: str) -> list[str]:
    """EXPLAIN's lines for the statements that build a table's bounded (and keyed) relation."""
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
    return lines


def engine_relation_keys(plan: Plan) -> tuple[str, ...]:
    """The grouping columns whose keyed relation the plan's engine query reads (empty: the bounded one)."""
    if not needs_keyed(plan):
        return ()
    # A derived key (GROUP BY age // 10) is keyed on the columns it reads: a person's flagged row
    # per kept tuple of those columns has one value of each key expression, so each person has
    # flagged rows in at most max_groups key values; two kept tuples can share a key value, so
    # engine_select counts distinct persons there (plan_sql.engine_select).
    names: list[str] = []
    for key in plan.query.keys:
        read = [key.column.name] if key.expr is None else [c.name.lower() for c in key.expr.find_all(exp.Column)]
        names.extend(n for n in read if n not in names)
    return tuple(names)


def engine_relation(plan: Plan) -> str:
    """The session relation the plan's engine query reads."""
    keys = engine_relation_keys(plan)
    return keyed_name(plan.query.table, keys) if keys else bounded_name(plan.query.table)


def compile_query(statement: ParsedStatement, plan: Plan) -> CompiledQuery:
    """A plan's CompiledQuery: its engine query over the session relation it reads."""
    engine = engine_select(plan, engine_relation(plan))
    uses_seed = any(p.this == SEED for p in engine.find_all(exp.Placeholder))
    return CompiledQuery(statement, plan, engine, uses_seed, engine_relation_keys(plan))


def compile_post(statement: ParsedStatement, query: PostQuery) -> CompiledPost:
    """Plan every release of a post-processing query. Pure: no data, no budget."""
    inputs = tuple(compile_query(ParsedStatement(kind="select", tree=statement.tree, sql=inp.text), plan_query(inp.query))
                   for inp in query.inputs)
    total = PrivacyCost.zero()
    for compiled in inputs:
        total = total + compiled.plan.cost
    return CompiledPost(statement, query, inputs, total)


def compile_statement(
    sql: str, parameters: Sequence[object] | None, ctx: AnalysisContext
) -> tuple[ParsedStatement, CompiledQuery | CompiledPost | PublicQuery | SetStatement | RowProbe]:
    """Parse, analyse and plan one statement. Pure: no data, no budget (a CompiledPost:
    post-processing over several releases)."""
    statement = parse_statement(sql, parameters)
    bound = analyze(statement, ctx)
    if isinstance(bound, PostQuery):
        return statement, compile_post(statement, bound)
    if isinstance(bound, BoundQuery):
        return statement, compile_query(statement, plan_query(bound))
    return statement, bound

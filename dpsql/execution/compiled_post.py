"""CompiledPost: a post-processing query compiled (no data, no budget): one CompiledQuery per
release, and the outer query over the released tables."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

from dpsql.accounting.cost import PrivacyCost
from dpsql.backend.dialects import render
from dpsql.backend.robust_sql import DUCKDB_CAPABILITIES
from dpsql.backend.sqlgen import engine_select
from dpsql.execution.compiled import CompiledQuery, engine_relation
from dpsql.frontend.parse import ParsedStatement
from dpsql.ir.post import PostQuery
from dpsql.planner.plan import plan_query


@dataclass(frozen=True)
class CompiledPost:
    """The releases of a post-processing query, each a CompiledQuery, and its outer query."""

    statement: ParsedStatement
    query: PostQuery
    inputs: tuple[CompiledQuery, ...]

    @functools.cached_property
    def cost(self) -> PrivacyCost:
        """The sum of the releases' costs: each release is charged, the outer query is free."""
        total = PrivacyCost.zero()
        for compiled in self.inputs:
            total = total + compiled.plan.cost
        return total

    @functools.cached_property
    def memo(self) -> dict[str, object]:
        """Execution's values derived from the compiled query alone (e.g. released types), computed once."""
        return {}

    def explain_lines(self, dialect: str = "duckdb", capabilities: frozenset[str] = DUCKDB_CAPABILITIES, verbose: bool = True) -> list[str]:
        """EXPLAIN: each release (its plan, cost and, verbose, engine SQL), the outer query, the total cost."""
        query = self.query
        count = len(self.inputs)
        lines = [f"Query: {' '.join(self.statement.sql.split())}",
                 f"Post-processing over released results ({query.kind}): {count} release(s), each computed and noised "
                 "first; the outer query then reads the released rows only, in a separate database without private "
                 "tables, at no extra cost"]
        for index, (inp, compiled) in enumerate(zip(query.inputs, self.inputs)):
            lines.append(f"Release {index + 1} of {count}: {inp.name} ({inp.role})")
            lines.extend(f"  {line}" for line in compiled.explain_lines(dialect, capabilities, verbose))
        lines.append(f"Outer query (released rows only): {render(query.outer, 'duckdb')}")
        lines.append("Intervals: a column the outer query selects as released keeps each cell's 95% interval; a derived "
                     "column (arithmetic, aggregates or windows over released values) has none")
        lines.extend(f"Note: {note}" for note in query.notes)
        parts = " + ".join(f"{float(c.plan.cost.epsilon):g}" for c in self.inputs)
        lines.append(f"Cost: epsilon {float(self.cost.epsilon):g}, delta {float(self.cost.delta):g}"
                     + (f" (epsilon {parts}: the sum of the {count} releases)" if count > 1 else ""))
        return lines

    @functools.cached_property
    def plan_hash(self) -> str:
        """A digest of the EXPLAIN text (recorded in the ledger)."""
        return hashlib.sha256("\n".join(self.explain_lines()).encode()).hexdigest()[:16]


def compile_post(statement: ParsedStatement, query: PostQuery) -> CompiledPost:
    """Plan every release of a post-processing query. Pure: no data, no budget."""
    inputs = []
    for inp in query.inputs:
        plan = plan_query(inp.query)
        leaf = ParsedStatement(kind="select", tree=statement.tree, sql=inp.text)
        inputs.append(CompiledQuery(leaf, plan, engine_select(plan, engine_relation(plan))))
    return CompiledPost(statement, query, tuple(inputs))

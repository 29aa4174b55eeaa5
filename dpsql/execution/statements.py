"""Statements as a session runs them: one protocol for every kind of statement.

`compile_statement` (execution/compiled.py) makes immutable compiled values: a private query, a
post-processing query, a public query, a column probe or a session setting, any of them under
EXPLAIN. `prepare`
wraps each in a Statement that knows what to ask the session's Executor for; the session calls
the protocol only (what it costs, what it returns, its answer, its plan).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

from dpsql.accounting.cost import PrivacyCost
from dpsql.analysis.context import AnalysisContext
from dpsql.catalog.policy import Policy
from dpsql.execution.compiled import CompiledPost, CompiledQuery, compile_statement
from dpsql.execution.executor import Executor
from dpsql.execution.probe import answer_probe, probe_columns, probe_explain
from dpsql.frontend.parse import ParsedStatement
from dpsql.ir.query import PublicQuery, RowProbe, SetStatement
from dpsql.result import NoisyResult, ResultColumn

Columns = tuple[tuple[ResultColumn, ...], tuple[bool, ...]]  # output columns, and which are noisy
PLAN_COLUMN = ResultColumn("QUERY PLAN", "VARCHAR")


class Statement(Protocol):
    """One compiled statement, as the session runs it. `cost`, `describe` and `explain` read no
    data and spend no budget; `run` answers (a private query charges first, never refunded)."""

    @property
    def parsed(self) -> ParsedStatement:
        """The statement as parsed (its kind and the analyst's text)."""
        ...

    def cost(self, executor: Executor) -> PrivacyCost:
        """What running it would charge now."""
        ...

    def describe(self, executor: Executor) -> Columns:
        """Its output columns and which are noisy."""
        ...

    def run(self, executor: Executor) -> NoisyResult:
        """Its answer."""
        ...

    def explain(self, executor: Executor, verbose: bool = False) -> list[str]:
        """Its EXPLAIN lines (`verbose`: with the engine SQL)."""
        ...


@dataclass(frozen=True, slots=True)
class PrivateQuery:
    """An aggregate query over one private table (or a join as one)."""

    parsed: ParsedStatement
    compiled: CompiledQuery

    def cost(self, executor: Executor) -> PrivacyCost:
        return executor.cost_of(self.compiled)

    def describe(self, executor: Executor) -> Columns:
        return executor.describe_private(self.compiled), executor.noisy_private(self.compiled)

    def run(self, executor: Executor) -> NoisyResult:
        return executor.execute(self.compiled)

    def explain(self, executor: Executor, verbose: bool = False) -> list[str]:
        return executor.explain_lines(self.compiled, verbose)


@dataclass(frozen=True, slots=True)
class PostProcessing:
    """Post-processing over several releases (outer queries, UNION ALL, grouping sets)."""

    parsed: ParsedStatement
    compiled: CompiledPost

    def cost(self, executor: Executor) -> PrivacyCost:
        return executor.cost_of_post(self.compiled)

    def describe(self, executor: Executor) -> Columns:
        return executor.describe_post(self.compiled)

    def run(self, executor: Executor) -> NoisyResult:
        return executor.execute_post(self.compiled)

    def explain(self, executor: Executor, verbose: bool = False) -> list[str]:
        return executor.explain_post(self.compiled, verbose)


@dataclass(frozen=True, slots=True)
class Public:
    """A query over public tables only: exact, no noise, no cost."""

    parsed: ParsedStatement
    query: PublicQuery

    def cost(self, executor: Executor) -> PrivacyCost:
        return PrivacyCost.zero()

    def describe(self, executor: Executor) -> Columns:
        return executor.describe_public(self.query), ()

    def run(self, executor: Executor) -> NoisyResult:
        return executor.public(self.query)

    def explain(self, executor: Executor, verbose: bool = False) -> list[str]:
        return [f"Query: {self.query.sql}", "Public tables only: runs exactly, no noise, no cost", "Cost: epsilon 0, delta 0"]


@dataclass(frozen=True, slots=True)
class Probe:
    """A BI tool's column probe (a row-level statement with LIMIT 0 or 1): its columns and types
    over empty tables of the policy's types, no rows, no charge (execution/probe.py)."""

    parsed: ParsedStatement
    probe: RowProbe
    policy: Policy  # the policy it was compiled against

    def cost(self, executor: Executor) -> PrivacyCost:
        return PrivacyCost.zero()

    def describe(self, executor: Executor) -> Columns:
        return probe_columns(self.policy, self.probe), ()

    def run(self, executor: Executor) -> NoisyResult:
        return answer_probe(self.policy, self.probe)

    def explain(self, executor: Executor, verbose: bool = False) -> list[str]:
        return probe_explain(self.probe)


@dataclass(frozen=True, slots=True)
class Setting:
    """`SET dpsql.epsilon | dpsql.delta = value`: the session's default per-query budget."""

    parsed: ParsedStatement
    setting: SetStatement

    def cost(self, executor: Executor) -> PrivacyCost:
        return PrivacyCost.zero()

    def describe(self, executor: Executor) -> Columns:
        return (), ()

    def run(self, executor: Executor) -> NoisyResult:
        value = self.setting.value
        assert isinstance(value, Fraction)
        state = executor.state
        if self.setting.name == "epsilon":
            state.default_budget = PrivacyCost(value, state.default_budget.delta)
        else:
            state.default_budget = PrivacyCost(state.default_budget.epsilon, value)
        return NoisyResult("set", (), [], (), [], message=f"SET dpsql.{self.setting.name} = {float(value):g}")

    def explain(self, executor: Executor, verbose: bool = False) -> list[str]:
        return [f"SET dpsql.{self.setting.name}: a session setting, no cost"]


@dataclass(frozen=True, slots=True)
class Explain:
    """EXPLAIN of another statement: its plan, no data, no cost."""

    parsed: ParsedStatement
    inner: Statement

    def cost(self, executor: Executor) -> PrivacyCost:
        return PrivacyCost.zero()

    def describe(self, executor: Executor) -> Columns:
        return (PLAN_COLUMN,), ()

    def run(self, executor: Executor) -> NoisyResult:
        return plan_result(self.inner.explain(executor, self.parsed.verbose))

    def explain(self, executor: Executor, verbose: bool = False) -> list[str]:
        return self.inner.explain(executor, verbose)


def plan_result(lines: list[str]) -> NoisyResult:
    """EXPLAIN lines as an answer: one VARCHAR column, a row per line."""
    return NoisyResult("explain", (PLAN_COLUMN,), [(line,) for line in lines], (None,), [(None,) for _ in lines])


def prepare(sql: str, parameters: Sequence[object] | None, ctx: AnalysisContext) -> Statement:
    """Compile one statement (pure: no data, no budget) into the Statement the session runs."""
    parsed, compiled = compile_statement(sql, parameters, ctx)
    statement: Statement
    if isinstance(compiled, CompiledQuery):
        statement = PrivateQuery(parsed, compiled)
    elif isinstance(compiled, CompiledPost):
        statement = PostProcessing(parsed, compiled)
    elif isinstance(compiled, PublicQuery):
        statement = Public(parsed, compiled)
    elif isinstance(compiled, RowProbe):  # a BI tool's column probe: columns, no rows, no charge
        statement = Probe(parsed, compiled, ctx.policy)
    else:
        statement = Setting(parsed, compiled)
    return Explain(parsed, statement) if parsed.kind == "explain" else statement

"""What the analysis knows: the policy, the session's query defaults, and the statement's text."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dpsql.accounting.cost import PrivacyCost
from dpsql.analysis.public_facts import PublicFacts
from dpsql.catalog.policy import Policy, Table
from dpsql.errors import InvalidOptionError, Span, UnsupportedQueryError
from dpsql.frontend.spans import span_of


@dataclass(frozen=True, slots=True)
class AnalysisContext:
    """The policy, the per-query budget to use when the query names none, and (once analysis of
    a statement starts) the statement's SQL text, which refusals point into with a caret."""

    policy: Policy
    default_budget: PrivacyCost
    sql: str = ""
    facts: PublicFacts | None = None  # exact facts of public tables (joins); None: compiling without a session

    def for_statement(self, sql: str) -> AnalysisContext:
        """The same context for one statement's text."""
        return AnalysisContext(self.policy, self.default_budget, sql, self.facts)

    def span(self, node: exp.Expr) -> Span | None:
        """Where `node` is in the statement's text."""
        return span_of(node, self.sql)

    def refuse(self, code: str, message: str, node: exp.Expr | None, hint: str, span: Span | None = None) -> UnsupportedQueryError:
        """An UnsupportedQueryError with a caret under `node` (or `span`)."""
        return refuse(code, message, node, self.sql, hint, span)

    def invalid_option(self, message: str, node: exp.Expr | None = None, hint: str | None = None) -> InvalidOptionError:
        """An InvalidOptionError (DP120) with a caret under `node` when given."""
        return InvalidOptionError(message, code="DP120", span=self.span(node) if node is not None else None, sql=self.sql,
                                  hint=hint)


@dataclass(frozen=True, slots=True)
class Scope:
    """The one table a SELECT reads and the names it may be referred to by."""

    table: Table
    names: frozenset[str]


def refuse(code: str, message: str, node: exp.Expr | None, sql: str, hint: str, span: Span | None = None) -> UnsupportedQueryError:
    """An UnsupportedQueryError with a caret under `node` (or `span`)."""
    where = span if span is not None else (span_of(node, sql) if node is not None else None)
    return UnsupportedQueryError(message, code=code, span=where, sql=sql, hint=hint)

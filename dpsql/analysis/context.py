"""What the analysis knows besides the SQL: the policy and the session's query defaults."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dpsql.accounting.cost import PrivacyCost
from dpsql.catalog.model import Policy, Table
from dpsql.errors import Span, UnsupportedQueryError
from dpsql.frontend.spans import span_of


@dataclass(frozen=True, slots=True)
class AnalysisContext:
    """The policy and the per-query budget to use when the query names none."""

    policy: Policy
    default_budget: PrivacyCost


@dataclass(frozen=True, slots=True)
class Scope:
    """The one table a SELECT reads and the names it may be referred to by."""

    table: Table
    names: frozenset[str]


def refuse(code: str, message: str, node: exp.Expr | None, sql: str, hint: str, span: Span | None = None) -> UnsupportedQueryError:
    """An UnsupportedQueryError with a caret under `node` (or `span`)."""
    where = span if span is not None else (span_of(node, sql) if node is not None else None)
    return UnsupportedQueryError(message, code=code, span=where, sql=sql, hint=hint)

"""BoundQuery: the analyst's validated intent, resolved against the policy.

Expressions kept here are sqlglot trees that the analysis has already checked; their column
references are rewritten: policy columns in `where`, and typed placeholders (ColumnRef: group
key i, aggregate j) in outputs, HAVING and ORDER BY. A placeholder's SQL spelling (`__k<i>`,
`__a<j>`) is only how the plan's intermediate tables name it; code reads the ColumnRef.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from sqlglot import exp

from dpsql.accounting.cost import PrivacyCost
from dpsql.catalog.policy import Column, Table

RefKind = Literal["key", "aggregate", "release", "robust", "output", "low", "high", "width", "confidence"]
SPELLING: dict[str, str] = {"key": "__k", "aggregate": "__a", "release": "__r", "robust": "__q",
                             "output": "__o", "low": "__lo", "high": "__hi", "width": "__w", "confidence": "__cf"}
_REF = "dpsql_ref"  # the sqlglot node meta key that holds a placeholder's ColumnRef


@dataclass(frozen=True, slots=True)
class ColumnRef:
    """A column of a plan's intermediate tables: group key i, aggregate j, release r, robust
    release q (the noisy table), or output i, its interval bounds or half-width and its
    confidence (post-processing)."""

    kind: RefKind
    index: int

    @property
    def name(self) -> str:
        """The column's name in engine and post-processing SQL."""
        return f"{SPELLING[self.kind]}{self.index}"

    def column(self) -> exp.Column:
        """A placeholder column node that carries this reference (copies keep it)."""
        node = exp.column(self.name)
        node.meta[_REF] = self
        return node

    @staticmethod
    def of(node: exp.Expr | None) -> ColumnRef | None:
        """The reference a placeholder node carries, or None for any other node."""
        return node.meta.get(_REF) if isinstance(node, exp.Column) else None


def refs(expr: exp.Expr, kind: RefKind) -> set[int]:
    """The indices of the placeholders of one kind in an expression."""
    found = (ColumnRef.of(node) for node in expr.find_all(exp.Column))
    return {ref.index for ref in found if ref is not None and ref.kind == kind}


def key_name(index: int) -> str:
    """The column name of group key `index` (engine SQL and the noisy table)."""
    return f"{SPELLING['key']}{index}"  # ColumnRef("key", index).name, without the object (hot path)


@dataclass(frozen=True, slots=True)
class AggregateCall:
    """One aggregate the query asks for (deduplicated across SELECT, HAVING and ORDER BY).

    `kind` names the registered aggregate that bound it and plans it (dpsql/aggregates/registry.py);
    only that aggregate's module reads it.
    """

    kind: str
    column: Column | None
    text: str
    p: Fraction | None = None  # a fraction argument: QUANTILE's p (1/2 for MEDIAN), TRIMMED_MEAN's trim
    bound: Fraction | None = None  # b proposed by MEDIAN(col, b) or OPTIONS (median_bound = b)
    # The per-row value when the argument is an expression (SUM(1), AVG(income / 12), a FILTER
    # as a CASE): over policy columns, unqualified. `column` is then a derived column named by the
    # expression, with the bounds the analysis derived from the policy (analysis/value_bounds.py).
    expr: exp.Expr | None = None
    # SUM(DISTINCT x), AVG(DISTINCT x): the aggregate of the distinct clamped values (aggregates/sums.py).
    distinct: bool = False

    @property
    def label(self) -> str:
        """How the aggregate is shown to users (EXPLAIN, default column names)."""
        return self.text


LISTED_BY_WHERE = "listed by the WHERE"  # a bare GroupKey's derivation when the WHERE's constants are its domain


@dataclass(frozen=True, slots=True)
class GroupKey:
    """A GROUP BY column or expression; its keys are the public domain or chosen by partition selection.

    For an expression (`age // 10 * 10`, `date_trunc('month', hired)`), `expr` is the per-row
    key over policy columns (unqualified) and `column` a derived column named by it, whose
    `values` are the domain derived from the policy (analysis/group_domains.py), or None when
    partition selection picks the keys; `derivation` says how, for EXPLAIN (for a bare column:
    LISTED_BY_WHERE when the WHERE's constants are its domain, else empty).
    """

    column: Column
    expr: exp.Expr | None = None
    derivation: str = ""
    # The key as the engine computes it, when that differs from `expr`: LN/LOG/EXP of listed values
    # written as the listed DOUBLEs, so every engine computes the listed keys (group_domains.exact_key).
    engine: exp.Expr | None = None

    @property
    def public(self) -> bool:
        """Whether all keys of the public domain are released."""
        return self.column.public_domain


@dataclass(frozen=True, slots=True)
class OutputColumn:
    """One column of the answer: an expression over key and aggregate placeholders."""

    name: str
    expr: exp.Expr
    key: int | None
    aggregates: tuple[int, ...]

    @property
    def aggregate(self) -> int | None:
        """The aggregate this output is, when it is a bare aggregate (no arithmetic)."""
        ref = ColumnRef.of(self.expr)
        return ref.index if ref is not None and ref.kind == "aggregate" else None


@dataclass(frozen=True, slots=True)
class OrderItem:
    """One ORDER BY item over placeholders and output names."""

    expr: exp.Expr
    descending: bool
    nulls_first: bool | None


@dataclass(frozen=True, slots=True)
class BoundQuery:
    """A validated aggregate query over one private table."""

    sql: str
    table: Table
    where: exp.Expr | None
    keys: tuple[GroupKey, ...]
    aggregates: tuple[AggregateCall, ...]
    outputs: tuple[OutputColumn, ...]
    having: exp.Expr | None
    order: tuple[OrderItem, ...]
    limit: int | None
    offset: int | None
    budget: PrivacyCost
    explicit_budget: bool
    quantile_mechanism: str | None = None  # OPTIONS (quantile_mechanism = 'smed' | 'ptr_laplace' | 'exponential')
    mode_blocks: int | None = None  # OPTIONS (mode_blocks = B): subsamples of MODE (public)
    noise: str = "laplace"  # COUNT/SUM/AVG noise: OPTIONS (noise = ...) or the policy's [budget] noise
    ci95: Fraction | None = None  # OPTIONS (ci95 = h): the planner derives epsilon from this half-width
    # OPTIONS (clamp = false): released values are left where the noise put them (unbiased, for
    # analysts who average releases) instead of clamped into their possible range (COUNT >= 0, ...).
    clamp: bool = True
    # OPTIONS (interval_share = s): a quantile's share of epsilon for its 95% interval (None: the default).
    interval_share: Fraction | None = None


@dataclass(frozen=True, slots=True)
class PublicQuery:
    """A query that reads only public tables: run exactly, no noise, no charge."""

    sql: str
    tree: exp.Expr
    tables: tuple[Table, ...]


@dataclass(frozen=True, slots=True)
class SetStatement:
    """`SET dpsql.<name> = <value>`: a session setting."""

    sql: str
    name: str
    value: object


@dataclass(frozen=True, slots=True)
class RowProbe:
    """A row-level SELECT over private data with LIMIT 0 or 1: a BI tool's column probe (Superset
    reads a virtual dataset's columns from `<sql> LIMIT 1`). Answered with the statement's columns
    and types only, computed over empty tables of the policy's types: no rows, no data, no charge.
    `tree` is the statement as written (views and CTEs by name), already checked."""

    sql: str
    tree: exp.Select
    limit: int

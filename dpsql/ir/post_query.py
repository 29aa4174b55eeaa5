"""PostQuery: an answer computed from differentially private releases only (post-processing).

An outer query over aggregated subqueries or CTEs, a UNION ALL of aggregate queries, and
GROUP BY ROLLUP / CUBE / GROUPING SETS are each a list of ordinary aggregate queries (one
BoundQuery per release, charged like any query) and one outer query that reads the released
tables by name, and public tables (read exactly, free: PublicInput), and nothing else (grammar/semantic_rules.md, "Post-processing over released
results" and "Grouping sets").
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dpsql.catalog.policy import Table
from dpsql.ir.query import BoundQuery, PublicQuery

RELEASED_PREFIX = "__dpsql_released_"
PUBLIC_PREFIX = "__dpsql_public_"


def released_name(index: int) -> str:
    """The name of release `index` in the post-processing database."""
    return f"{RELEASED_PREFIX}{index}"


def released_column(position: int) -> str:
    """The name of a released table's column `position` (positional: output names may repeat)."""
    return f"__c{position}"


@dataclass(frozen=True, slots=True)
class ReleasedInput:
    """One DP release the outer query reads: an aggregate query and where it came from."""

    name: str  # the released table's name in the post-processing database
    query: BoundQuery
    text: str  # the aggregate query as it runs (EXPLAIN)
    role: str  # "subquery t", "CTE t", "UNION ALL branch", "grouping set (dept)", ...


def public_name(index: int) -> str:
    """The name of public table `index` in the post-processing database."""
    return f"{PUBLIC_PREFIX}{index}"


@dataclass(frozen=True, slots=True)
class PublicInput:
    """A public table the outer query joins with released results: its rows are read exactly
    (public rows are free) and handed to the post-processing database beside the released ones.
    Never a private table (analysis/post_processing.py checks the policy says `public`)."""

    name: str  # the table's name in the post-processing database
    table: Table
    read: exp.Select  # SELECT <its declared columns> FROM <table>: what the engine runs
    columns: tuple[str, ...]  # the declared columns, in the order `read` selects them


@dataclass(frozen=True, slots=True)
class OutputLineage:
    """Where one output column of the outer query comes from.

    `passthrough`: the column copies a released column unchanged (through filters, ORDER BY,
    LIMIT, joins, UNION ALL), so each cell keeps the interval of the cell it copies. `sources`:
    the released columns it reads, as (input index, column position). `noisy`: it depends on a
    noisy value (False for group keys, constants and expressions of keys only).
    """

    passthrough: bool
    sources: tuple[tuple[int, int], ...]
    noisy: bool


@dataclass(frozen=True, slots=True)
class GroupingSets:
    """One GROUP BY ROLLUP / CUBE / GROUPING SETS: its releasing sets and where each select item
    is released in each (execution/consistency.py reconciles the additive ones).

    `inputs`: each releasing set's index in PostQuery.inputs; `keys`: each set's key columns
    (lower-case); `positions`: per set, per select item, its output position in the set's release
    (None: not released there, a rolled-up key or GROUPING()); `names`: the select items' names;
    `consistent`: OPTIONS (consistent = false) turns the reconciliation off.
    """

    inputs: tuple[int, ...]
    keys: tuple[tuple[str, ...], ...]
    positions: tuple[tuple[int | None, ...], ...]
    names: tuple[str, ...]
    consistent: bool = True


@dataclass(frozen=True, slots=True)
class ScalarParameter:
    """An uncorrelated scalar subquery's released value, read by the releases after it as a typed
    engine parameter (`CAST($name AS type)`, analysis/scalar_subqueries.py): the release at index
    `source` computes it (or the exact public query `public`, read before any release); its first
    row's only column is the value, NULL when it is ⊥ or has no row."""

    name: str  # the placeholder's name in the engine SQL
    type: str  # the DuckDB type the statement casts the value to
    source: int | None  # the release (index in PostQuery.inputs) whose value it is; None: `public`
    text: str  # the subquery as the analyst wrote it (EXPLAIN)
    public: PublicQuery | None = None  # a subquery over public tables only: read exactly (no noise, no cost)


@dataclass(frozen=True, slots=True)
class PostQuery:
    """Releases and the outer query over them (`lineage`: one entry per output column, or None
    when dpsql could not trace it: every output is then treated as noisy, without an interval)."""

    sql: str
    kind: str  # "outer query", "UNION ALL", "set operation", "grouping sets", or several joined by " + "
    inputs: tuple[ReleasedInput, ...]
    outer: exp.Query
    lineage: tuple[OutputLineage, ...] | None
    notes: tuple[str, ...] = ()
    grouping: tuple[GroupingSets, ...] = ()
    public: tuple[PublicInput, ...] = ()  # public tables the outer query reads beside the releases
    parameters: tuple[ScalarParameter, ...] = ()  # scalar subqueries' values, read by later releases

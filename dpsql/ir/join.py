"""A joined relation as one private table: what the analysis made of a query's JOINs and
`[NOT] EXISTS` / `[NOT] IN (SELECT ...)` predicates (analysis/joins.py), for the planner, the
backend (backend/sql/join_sql.py builds its SQL) and EXPLAIN.

A JoinedTable is a Table whose rows are the join's rows: every later stage (bounding, keyed
relations, dry runs, release) treats it as one private table with a privacy unit and a
`max_rows`. Its `max_rows` bounds the joined rows of one person (the product of the private
tables' limits and the public tables' fan-outs), and the bounded relation built over it enforces
that bound after the join (semantic_rules.md, "Joins").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from sqlglot import exp

from dpsql.catalog.policy import Table

JoinKind = Literal["from", "inner", "left"]
SemiKind = Literal["in", "exists"]


@dataclass(frozen=True, slots=True)
class JoinPart:
    """One table of the join: its policy table, its alias in the join SQL, how it is joined, and
    its ON equalities as (earlier part's alias, earlier part's column, this part's column).

    `within`: for a private table joined through an identifier (an order key) rather than its
    unit column, the equality (lead's alias, lead's unit column, this part's unit column) that the
    join adds, so that it pairs rows of one person only whatever the data hold."""

    table: Table
    alias: str
    kind: JoinKind
    on: tuple[tuple[str, str, str], ...] = ()
    fanout: int = 1  # public part: most rows sharing one value of its ON columns (public, read exactly)
    within: tuple[str, str, str] | None = None
    # A LEFT JOIN's conditions on this part's own rows (columns qualified by `alias`): the rows it
    # keeps are those of the table filtered before the join.
    where: exp.Expr | None = field(default=None, repr=False)  # named in the relation's digest only when set


@dataclass(frozen=True, slots=True)
class JoinColumn:
    """A column of the joined relation: `name`, taken from `column` of the part `part`."""

    name: str
    part: str
    column: str


@dataclass(frozen=True, slots=True)
class SemiJoin:
    """A subquery predicate of WHERE as a boolean column `name` of the joined relation (it never
    adds rows): `part.column IN (SELECT key FROM table AS alias WHERE where)` (kind "in", SQL's
    three-valued result) or `EXISTS (SELECT 1 FROM table AS alias WHERE where)` (kind "exists").

    `where` is the subquery's condition with its own columns qualified by `alias` and the outer
    query's by their part's alias (a correlated subquery). A private `table` is read through its
    bounded relation and only for the same person: correlated on the unit, or on an identifier,
    for which `within` = (lead's alias, lead's unit column, the table's unit column) is added to
    the condition. `text` is the analyst's subquery (EXPLAIN)."""

    name: str
    kind: SemiKind
    table: Table
    alias: str
    text: str
    where: exp.Expr | None = None
    part: str | None = None
    column: str | None = None
    key: str | None = None
    within: tuple[str, str, str] | None = None


@dataclass(frozen=True, slots=True)
class PerUnit:
    """A per-person aggregate as a relation (analysis/per_unit.py): the rows of the one part,
    filtered by `where`, grouped by its unit column `unit`, one row per person. `items` are the
    relation's columns: (name, expression over the part's columns, unqualified), each the unit
    column itself or an aggregate whose range analysis/per_unit.py derived from the policy
    (arguments clamped to their bounds)."""

    unit: str
    items: tuple[tuple[str, exp.Expr], ...]
    where: exp.Expr | None = None


@dataclass(frozen=True, slots=True)
class JoinedTable(Table):
    """The rows of a join (or of one table with semi-joins), as one private table; or, with
    `per_unit`, one row per person of its one part (a per-person aggregate)."""

    parts: tuple[JoinPart, ...] = ()
    mapping: tuple[JoinColumn, ...] = ()
    semijoins: tuple[SemiJoin, ...] = ()
    explain: tuple[str, ...] = ()  # why max_rows is what it is (EXPLAIN)
    per_unit: PerUnit | None = None

    @property
    def private_parts(self) -> tuple[Table, ...]:
        """The private tables the join reads (their session bounded relations), semi-joins' too."""
        found = [p.table for p in self.parts if not p.table.public] + [s.table for s in self.semijoins if not s.table.public]
        return tuple({t.name: t for t in found}.values())

    @property
    def public_tables(self) -> tuple[Table, ...]:
        """The public tables the join reads exactly."""
        found = [p.table for p in self.parts if p.table.public] + [s.table for s in self.semijoins if s.table.public]
        return tuple({t.name: t for t in found}.values())

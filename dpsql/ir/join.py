"""A joined relation as one private table: what the analysis made of a query's JOINs and
`IN (SELECT ... FROM public_table)` predicates (analysis/joins.py), for the planner, the backend
(backend/join_sql.py builds its SQL) and EXPLAIN.

A JoinedTable is a Table whose rows are the join's rows: every later stage (bounding, keyed
relations, dry runs, release) treats it as one private table with a privacy unit and a
`max_rows`. Its `max_rows` bounds the joined rows of one person (the product of the private
tables' limits and the public tables' fan-outs), and the bounded relation built over it enforces
that bound after the join (semantic_rules.md, "Joins").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlglot import exp

from dpsql.catalog.model import Table

JoinKind = Literal["from", "inner", "left"]


@dataclass(frozen=True, slots=True)
class JoinPart:
    """One table of the join: its policy table, its alias in the join SQL, how it is joined, and
    its ON equalities as (earlier part's alias, earlier part's column, this part's column)."""

    table: Table
    alias: str
    kind: JoinKind
    on: tuple[tuple[str, str, str], ...] = ()
    fanout: int = 1  # public part: most rows sharing one value of its ON columns (public, read exactly)


@dataclass(frozen=True, slots=True)
class JoinColumn:
    """A column of the joined relation: `name`, taken from `column` of the part `part`."""

    name: str
    part: str
    column: str


@dataclass(frozen=True, slots=True)
class SemiJoin:
    """`part.column IN (SELECT key FROM table [WHERE where])` over a public table: a boolean column
    `name` of the joined relation (the predicate itself, NULLs included); it never adds rows."""

    name: str
    part: str
    column: str
    table: Table
    key: str
    where: exp.Expr | None = None


@dataclass(frozen=True, slots=True)
class JoinedTable(Table):
    """The rows of a join (or of one table with public semi-joins), as one private table."""

    parts: tuple[JoinPart, ...] = ()
    mapping: tuple[JoinColumn, ...] = ()
    semijoins: tuple[SemiJoin, ...] = ()
    explain: tuple[str, ...] = ()  # why max_rows is what it is (EXPLAIN)

    @property
    def private_parts(self) -> tuple[Table, ...]:
        """The private tables the join reads (their session bounded relations)."""
        return tuple(p.table for p in self.parts if not p.table.public)

    @property
    def public_tables(self) -> tuple[Table, ...]:
        """The public tables the join reads exactly."""
        found = [p.table for p in self.parts if p.table.public] + [s.table for s in self.semijoins]
        return tuple({t.name: t for t in found}.values())

"""The SQL of a JoinedTable (ir/join.py): its rows from the joined tables' session relations.

Private tables enter through their bounded relations (each person cut to that table's max_rows
rows by the keyed hash), public tables through their typed source views (read exactly). The
result is the joined relation's "source"; the session then bounds it again to the JoinedTable's
max_rows per person (sqlgen.bounded_select), so the bound holds after the join whatever the data.
"""

from __future__ import annotations

from typing import Mapping

from sqlglot import exp

from dpsql.ir.join import JoinedTable


def joined_select(table: JoinedTable, relations: Mapping[str, str]) -> exp.Select:
    """SELECT the JoinedTable's columns FROM the parts' relations (`relations`: policy table name
    -> session relation), joined as the analyst wrote it; public IN-subqueries as boolean columns."""
    columns: list[exp.Expr] = []
    seen: set[str] = set()
    for m in table.mapping:
        if m.name not in seen:
            seen.add(m.name)
            columns.append(exp.alias_(exp.column(m.column, table=m.part, quoted=True), m.name, quoted=True))
    for semi in table.semijoins:
        keys = exp.select(exp.column(semi.key, quoted=True)).from_(
            exp.Table(this=exp.to_identifier(relations[semi.table.name], quoted=True),
                      alias=exp.TableAlias(this=exp.to_identifier(semi.table.name, quoted=True))))
        if semi.where is not None:
            keys = keys.where(_quoted(semi.where))
        test = exp.In(this=exp.column(semi.column, table=semi.part, quoted=True), query=keys.subquery())
        columns.append(exp.alias_(test, semi.name, quoted=True))
    first = table.parts[0]
    select = exp.select(*columns).from_(_relation(relations[first.table.name], first.alias))
    for part in table.parts[1:]:
        condition = exp.and_(*[exp.EQ(this=exp.column(left, table=other, quoted=True), expression=exp.column(right, table=part.alias, quoted=True))
                               for other, left, right in part.on])
        select = select.join(_relation(relations[part.table.name], part.alias), on=condition,
                             join_type="LEFT" if part.kind == "left" else "INNER")
    return select


def _relation(name: str, alias: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True), alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))


def _quoted(condition: exp.Expr) -> exp.Expr:
    """The subquery's filter with its column names quoted (policy names are case-insensitive, stored lower-case)."""
    def visit(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table:
            return exp.column(node.name.lower(), quoted=True)
        return node

    return condition.copy().transform(visit)

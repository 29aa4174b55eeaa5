"""The SQL of a JoinedTable (ir/join.py): its rows from the joined tables' session relations.

Private tables enter through their bounded relations (each person cut to that table's max_rows
rows by the keyed hash), public tables through their typed source views (read exactly). The
result is the joined relation's "source"; the session then bounds it again to the JoinedTable's
max_rows per person (sqlgen.bounded_select), so the bound holds after the join whatever the data.
"""

from __future__ import annotations

from typing import Mapping

from sqlglot import exp

from dpsql.ir.join import JoinedTable, SemiJoin


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
        columns.append(exp.alias_(_in_predicate(semi, relations[semi.table.name]), semi.name, quoted=True))
    first = table.parts[0]
    select = exp.select(*columns).from_(_relation(relations[first.table.name], first.alias))
    for part in table.parts[1:]:
        condition = exp.and_(*[exp.EQ(this=exp.column(left, table=other, quoted=True), expression=exp.column(right, table=part.alias, quoted=True))
                               for other, left, right in part.on])
        select = select.join(_relation(relations[part.table.name], part.alias), on=condition,
                             join_type="LEFT" if part.kind == "left" else "INNER")
    return select


def _in_predicate(semi: SemiJoin, relation: str) -> exp.Expr:
    """`column IN (SELECT key FROM public WHERE ...)` with SQL's three-valued result written out,
    so every engine gives the same value (Spark makes `NULL IN (subquery)` false, DuckDB NULL):
    TRUE when a non-NULL key equals the value; NULL when the value is NULL and the set is not
    empty, or the set holds a NULL key; else FALSE."""
    key = exp.column(semi.key, quoted=True)
    value = exp.column(semi.column, table=semi.part, quoted=True)

    def rows(*conditions: exp.Expr) -> exp.Select:
        select = exp.select(key.copy()).from_(exp.Table(this=exp.to_identifier(relation, quoted=True),
                                                         alias=exp.TableAlias(this=exp.to_identifier(semi.table.name, quoted=True))))
        parts = ([_quoted(semi.where)] if semi.where is not None else []) + list(conditions)
        return select.where(exp.and_(*parts)) if parts else select

    null = exp.Is(this=key.copy(), expression=exp.Null())
    found = exp.In(this=value.copy(), query=rows(exp.Not(this=null.copy())).subquery())
    unknown = exp.or_(exp.and_(exp.Is(this=value.copy(), expression=exp.Null()), exp.Exists(this=rows())),
                      exp.Exists(this=rows(null.copy())))
    return exp.Case(ifs=[exp.If(this=found, true=exp.true()), exp.If(this=unknown, true=exp.Null())], default=exp.false())


def _relation(name: str, alias: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True), alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))


def _quoted(condition: exp.Expr) -> exp.Expr:
    """The subquery's filter with its column names quoted (policy names are case-insensitive, stored lower-case)."""
    def visit(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table:
            return exp.column(node.name.lower(), quoted=True)
        return node

    return condition.copy().transform(visit)

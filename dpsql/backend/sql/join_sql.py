"""The SQL of a JoinedTable (ir/join.py): its rows from the joined tables' session relations.

Private tables enter through their bounded relations (each person cut to that table's max_rows
rows by the keyed hash), public tables through their typed source views (read exactly). The
result is the joined relation's "source"; the session then bounds it again to the JoinedTable's
max_rows per person (plan_sql.bounded_select), so the bound holds after the join whatever the data.

A private table joined through an identifier, and a private table read by EXISTS or IN, get the
equality of its unit column with the lead table's (`within`): they pair or test rows of the same
person only, whatever the data hold (semantic_rules.md, "Joins").
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from dpsql.backend.sql.engine_dialects import Guarded
from dpsql.backend.sql.safe_predicates import cannot_fail
from dpsql.ir.join import JoinedTable, SemiJoin


def joined_select(table: JoinedTable, relations: Mapping[str, str]) -> exp.Select:
    """SELECT the JoinedTable's columns FROM the parts' relations (`relations`: policy table name
    -> session relation), joined in the analysis's order; subquery predicates as boolean columns."""
    if table.per_unit is not None:
        return _per_unit_select(table, relations)
    columns: list[exp.Expr] = []
    seen: set[str] = set()
    for m in table.mapping:
        if m.name not in seen:
            seen.add(m.name)
            columns.append(exp.alias_(exp.column(m.column, table=m.part, quoted=True), m.name, quoted=True))
    for semi in table.semijoins:
        columns.append(exp.alias_(_predicate(semi, relations[semi.table.name]), semi.name, quoted=True))
    first = table.parts[0]
    select = exp.select(*columns).from_(_relation(relations[first.table.name], first.alias))
    for part in table.parts[1:]:
        pairs = part.on + ((part.within,) if part.within is not None else ())
        conditions: list[exp.Expr] = [_equal(other, left, part.alias, right) for other, left, right in pairs]
        if part.where is not None:  # its own rows' filter, guarded as a row filter is (an error on a row: false)
            own = part.where.copy()
            conditions.append(own if cannot_fail(own, part.table) else exp.func("coalesce", Guarded(this=own), exp.false()))
        condition = exp.and_(*conditions)
        select = select.join(_relation(relations[part.table.name], part.alias), on=condition,
                             join_type="LEFT" if part.kind == "left" else "INNER")
    return select


def _per_unit_select(table: JoinedTable, relations: Mapping[str, str]) -> exp.Select:
    """One row per person of the one part's relation (its bounded relation: at most max_rows rows
    per person): SELECT unit, aggregates FROM it WHERE ... GROUP BY unit. The WHERE is the
    analyst's, guarded as a query's row filter is (an error on a row makes it false)."""
    per_unit = table.per_unit
    assert per_unit is not None and len(table.parts) == 1
    part = table.parts[0]
    select = exp.select(*[exp.alias_(e.copy(), name, quoted=True) for name, e in per_unit.items]) \
        .from_(_relation(relations[part.table.name], part.alias)).group_by(exp.column(per_unit.unit, quoted=True))
    if per_unit.where is not None:
        where = per_unit.where.copy()
        select = select.where(where if cannot_fail(where, part.table) else exp.func("coalesce", Guarded(this=where), exp.false()))
    return select


def _equal(left_table: str, left: str, right_table: str, right: str) -> exp.EQ:
    return exp.EQ(this=exp.column(left, table=left_table, quoted=True), expression=exp.column(right, table=right_table, quoted=True))


def _rows(semi: SemiJoin, relation: str, selected: exp.Expr, *conditions: exp.Expr) -> exp.Select:
    """SELECT `selected` FROM the subquery's table WHERE its condition, the same-person equality
    and `conditions`."""
    parts = [semi.where.copy()] if semi.where is not None else []
    if semi.within is not None:
        lead, lead_unit, unit = semi.within
        parts.append(_equal(semi.alias, unit, lead, lead_unit))
    parts.extend(conditions)
    select = exp.select(selected).from_(_relation(relation, semi.alias))
    return select.where(exp.and_(*parts)) if parts else select


def _predicate(semi: SemiJoin, relation: str) -> exp.Expr:
    """The subquery predicate's value per joined row.

    EXISTS is TRUE or FALSE. `column IN (subquery)` has SQL's three-valued result written out, so
    every engine gives the same value (Spark makes `NULL IN (subquery)` false, DuckDB NULL): TRUE
    when a non-NULL key equals the value; NULL when the value is NULL and the set is not empty,
    or the set holds a NULL key; else FALSE."""
    if semi.kind == "exists":
        return exp.Exists(this=_rows(semi, relation, exp.Literal.number(1)))
    assert semi.key is not None and semi.column is not None and semi.part is not None
    key = exp.column(semi.key, table=semi.alias, quoted=True)
    value = exp.column(semi.column, table=semi.part, quoted=True)
    null = exp.Is(this=key.copy(), expression=exp.Null())
    found = exp.In(this=value.copy(), query=_rows(semi, relation, key.copy(), exp.Not(this=null.copy())).subquery())
    unknown = exp.or_(exp.and_(exp.Is(this=value.copy(), expression=exp.Null()), exp.Exists(this=_rows(semi, relation, key.copy()))),
                      exp.Exists(this=_rows(semi, relation, key.copy(), null.copy())))
    return exp.Case(ifs=[exp.If(this=found, true=exp.true()), exp.If(this=unknown, true=exp.Null())], default=exp.false())


def _relation(name: str, alias: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True), alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))

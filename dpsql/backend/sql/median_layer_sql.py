"""SQL of the Median Mechanism layer, as sqlglot expressions: the domain table, masks, histogram.

The layer works over the finite domain X of its enabled columns (catalog.MMColumnDomain). One
cell x has a code per column; `x_id` is the mixed-radix number of the codes, the first column
most significant. The *same* cell map is used on both sides, so they compare like with like:

* the domain table `__mm_dom_<t>` has one row per cell, holding each column's representative
  value (the declared value, the bin's lower edge, the integer, or NULL for the NULL cell); the
  analyst's predicate runs over it with DuckDB's own semantics (`mask_select`), no data involved;
* the histogram of the bounded data counts rows per cell (`histogram_select`), each row in
  exactly one cell: values outside a bin range or an integer range are clamped to the nearest
  bin or bound, NULL, NaN and text outside the declared values go to the NULL cell.
"""

from __future__ import annotations

from fractions import Fraction

from sqlglot import exp

from dpsql.backend.sql.engine_dialects import IntegerSeries
from dpsql.backend.sql.plan_sql import TYPE_NAMES, number
from dpsql.catalog.policy import MedianMechanismConfig, MMColumnDomain, Scalar, Table

X_ID = "x_id"
COUNT = "n"


def domain_name(table: Table) -> str:
    """The session's domain table of a table's Median Mechanism layer (public, no data)."""
    return f"__mm_dom_{table.name}"


def _code(index: int) -> exp.Expr:
    return exp.column(f"__c{index}")


def _literal(value: Scalar, domain: MMColumnDomain) -> exp.Expr:
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float)):
        return exp.Literal.number(repr(value) if isinstance(value, float) else value)
    if domain.type == "date":
        return exp.cast(exp.Literal.string(str(value)), "DATE")
    return exp.Literal.string(str(value))


def _representatives(domain: MMColumnDomain) -> list[exp.Expr]:
    if domain.kind == "bins":
        return [number(edge) for edge in domain.edges[:-1]]
    return [_literal(value, domain) for value in domain.values]


def _strides(config: MedianMechanismConfig) -> list[int]:
    strides, step = [], 1
    for domain in reversed(config.domains):
        strides.append(step)
        step *= domain.size
    return list(reversed(strides))


def _mixed_radix(codes: list[exp.Expr], config: MedianMechanismConfig) -> exp.Expr:
    total: exp.Expr | None = None
    for code, stride in zip(codes, _strides(config)):
        term = exp.cast(code, "BIGINT") if stride == 1 else exp.Mul(this=exp.cast(code, "BIGINT"), expression=exp.Literal.number(stride))
        total = term if total is None else exp.Add(this=total, expression=term)
    assert total is not None
    return total


def domain_select(config: MedianMechanismConfig) -> exp.Select:
    """One row per cell: x_id and each column's representative value, ordered by x_id."""
    columns: list[exp.Expr] = [exp.alias_(_mixed_radix([_code(i) for i in range(len(config.domains))], config), X_ID)]
    for i, domain in enumerate(config.domains):
        ifs = [exp.If(this=exp.Literal.number(code), true=value) for code, value in enumerate(_representatives(domain))]
        typed = exp.cast(exp.Case(this=_code(i), ifs=ifs), TYPE_NAMES[domain.type])
        columns.append(exp.alias_(typed, domain.column, quoted=True))
    select = exp.select(*columns)
    for i, domain in enumerate(config.domains):
        source = IntegerSeries(count=exp.Literal.number(domain.size), alias=exp.to_identifier(f"__r{i}"),
                               column=exp.to_identifier(f"__c{i}"))
        select = select.from_(source) if i == 0 else select.join(source, join_type="cross")
    return select.order_by(exp.column(X_ID))


def domain_create(table: Table, config: MedianMechanismConfig) -> exp.Create:
    """CREATE TEMP TABLE __mm_dom_<t> AS the domain rows."""
    return exp.Create(
        this=exp.to_identifier(domain_name(table), quoted=True),
        kind="TABLE",
        expression=domain_select(config),
        properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
    )


def mask_select(table: Table, predicate: exp.Expr | None, not_null: str | None = None) -> exp.Select:
    """The cells a row-level predicate keeps, evaluated like the engine does it (TRY, NULL is false)."""
    select = exp.select(exp.column(X_ID)).from_(exp.to_identifier(domain_name(table), quoted=True))
    conditions: list[exp.Expr] = []
    if predicate is not None:
        conditions.append(exp.func("coalesce", exp.func("try", predicate.copy()), exp.false()))
    if not_null is not None:
        conditions.append(exp.Not(this=exp.Is(this=exp.column(not_null, quoted=True), expression=exp.Null())))
    if conditions:
        select = select.where(exp.and_(*conditions) if len(conditions) > 1 else conditions[0])
    return select


def _encode(domain: MMColumnDomain) -> exp.Expr:
    """A row's code for one column: clamped into the domain; NULL/NaN/undeclared -> the NULL cell."""
    col = exp.column(domain.column, quoted=True)
    null_code = exp.Literal.number(domain.null_code)
    is_null = exp.Is(this=col.copy(), expression=exp.Null())
    ifs = [exp.If(this=is_null, true=null_code)]
    if domain.kind == "range":
        lower, upper = domain.values[0], domain.values[-1]
        assert isinstance(lower, int) and isinstance(upper, int)  # a range domain holds the integers of [lower, upper]
        clamped = exp.func("least", exp.func("greatest", col.copy(), exp.Literal.number(lower)), exp.Literal.number(upper))
        return exp.Case(ifs=ifs, default=exp.Sub(this=clamped, expression=exp.Literal.number(lower)))
    if domain.kind == "values":
        ifs += [exp.If(this=exp.EQ(this=col.copy(), expression=_literal(value, domain)), true=exp.Literal.number(code))
                for code, value in enumerate(domain.values)]
        return exp.Case(ifs=ifs, default=null_code.copy())
    if domain.type == "float":
        ifs.append(exp.If(this=exp.func("isnan", col.copy()), true=null_code.copy()))
    inner: list[Fraction] = list(domain.edges[1:-1])
    ifs += [exp.If(this=exp.LT(this=col.copy(), expression=number(edge)), true=exp.Literal.number(code))
            for code, edge in enumerate(inner)]
    return exp.Case(ifs=ifs, default=exp.Literal.number(len(domain.edges) - 2))


def histogram_select(config: MedianMechanismConfig, bounded: str) -> exp.Select:
    """Rows of the bounded relation per cell: SELECT x_id, COUNT(*) ... GROUP BY x_id."""
    encoded = exp.select(exp.alias_(_mixed_radix([_encode(d) for d in config.domains], config), X_ID)).from_(
        exp.to_identifier(bounded, quoted=True)
    )
    return (
        exp.select(exp.column(X_ID), exp.alias_(exp.Count(this=exp.Star()), COUNT))
        .from_(encoded.subquery("__mm_rows"))
        .group_by(exp.column(X_ID))
        .order_by(exp.column(X_ID))
    )

"""Plan -> sqlglot expressions for the engine. Never string formatting.

The engine reads the session's bounded relation (each person already cut to max_rows rows),
filters rows with the analyst's predicate inside TRY(...) (a predicate that fails on a value is
false for that row, so no error can depend on data; predicates that cannot fail skip it), and computes the exact raw aggregates per
group. With partition selection it also counts distinct persons per key after keeping at most
max_groups keys per person, chosen by a keyed hash with a secret per-query seed.
"""

from __future__ import annotations

from fractions import Fraction

from sqlglot import exp

from dpsql.backend.dialects import ExactSum, Guarded, IsFinite, KeyedHash, hash_input
from dpsql.backend.safe_predicates import cannot_fail
from dpsql.catalog.model import Column, Table
from dpsql.ir.plan import Plan, RawAggregate, release_name
from dpsql.ir.query import key_name

UNITS = "__units"
SEED = "seed"
ROW_RANK = "__rank"
TYPE_NAMES = {"int": "BIGINT", "float": "DOUBLE", "text": "VARCHAR", "bool": "BOOLEAN", "date": "DATE"}


def seed_placeholder() -> exp.Expr:
    """The secret seed, bound as a named engine parameter ($seed) at run time."""
    return exp.Placeholder(this=SEED)


def number(value: Fraction | int) -> exp.Expr:
    """An exact numeric literal (integers stay integers; fractions become decimals or doubles)."""
    value = Fraction(value)
    if value.denominator == 1:
        return exp.Literal.number(int(value.numerator))
    return exp.Literal.number(repr(float(value)))


def source_select(table: Table, source: exp.Expr) -> exp.Select:
    """The policy's columns of `source`, cast to their declared types (TRY_CAST: bad values -> NULL)."""
    columns = [
        exp.alias_(exp.TryCast(this=exp.column(c.name, quoted=True), to=exp.DataType.build(TYPE_NAMES[c.type])), c.name, quoted=True)
        for c in table.columns.values()
    ]
    return exp.select(*columns).from_(source)


def ordered(expression: exp.Expr) -> exp.Ordered:
    """Ascending with NULLs first, written out: the engines' defaults differ (DuckDB: NULLS LAST)."""
    return exp.Ordered(this=expression, desc=False, nulls_first=True)


def rank_by_hash(partition: list[exp.Expr], hashed: list[tuple[exp.Expr, str]], seed: exp.Expr) -> exp.Window:
    """row_number() within `partition`, in the order of a keyed hash of the values (the random
    part), then of the values themselves (a tie-break, so every engine picks the same rows).

    `hashed` holds (value, policy type) pairs; DOUBLEs enter the hash through `hash_input`.
    """
    digest = KeyedHash(this=seed, expressions=[hash_input(v.copy(), t) for v, t in hashed])
    order = [ordered(digest)] + [ordered(v.copy()) for v, _ in hashed]
    return exp.Window(this=exp.RowNumber(), partition_by=partition, order=exp.Order(expressions=order))


def bounded_select(table: Table, source_name: str) -> exp.Expr:
    """Each person keeps at most max_rows rows, chosen by a keyed hash; rows without a person are dropped.

    Persons with at most max_rows rows keep all of them, so only the rows of heavier persons need
    the keyed-hash window (and its MD5 over every column): the light persons' rows pass through
    an anti-join against the small set of heavy persons. The result is the same multiset of rows
    as ranking everybody (a person with n <= max_rows rows has ranks 1..n, all kept), so the
    privacy argument of the bounded relation (backend/engine.py) is unchanged; it is 3-4x
    cheaper when most persons are light, as they are in practice.
    """
    assert table.privacy_unit is not None
    unit = exp.column(table.privacy_unit, quoted=True)
    names = list(table.columns)
    source = exp.to_identifier(source_name, quoted=True)
    present = exp.Not(this=exp.Is(this=unit.copy(), expression=exp.Null()))
    heavy = (exp.select(unit.copy()).from_(source.copy()).where(present.copy()).group_by(unit.copy())
             .having(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(table.max_rows))))
    light_rows = (exp.select(*[exp.column(n, quoted=True) for n in names]).from_(source.copy())
                  .where(exp.and_(present.copy(), exp.Not(this=exp.In(this=unit.copy(), query=heavy.copy().subquery())))))
    rank = rank_by_hash([unit.copy()], [(exp.column(c.name, quoted=True), c.type) for c in table.columns.values()],
                        seed_placeholder())
    ranked = (
        exp.select(*[exp.column(n, quoted=True) for n in names], exp.alias_(rank, ROW_RANK))
        .from_(source.copy())
        .where(exp.In(this=unit.copy(), query=heavy.subquery()))
    )
    # A subquery rather than QUALIFY: Spark has no QUALIFY, and sqlglot's rewrite of it moves clauses.
    heavy_rows = (
        exp.select(*[exp.column(n, quoted=True) for n in names])
        .from_(ranked.subquery("__ranked"))
        .where(exp.LTE(this=exp.column(ROW_RANK), expression=exp.Literal.number(table.max_rows)))
    )
    return exp.union(light_rows, heavy_rows, distinct=False)


def engine_select(plan: Plan, bounded_name: str) -> exp.Select:
    """The one engine query of a plan: raw aggregates per group (and person counts per key)."""
    query = plan.query
    keys = [exp.column(k.column.name, quoted=True) for k in query.keys]
    base = exp.select().from_(exp.to_identifier(bounded_name, quoted=True))
    condition = _row_filter(plan)
    if condition is not None:
        base = base.where(condition)
    raws = [exp.alias_(_raw_sql(r.raw, plan), release_name(i)) for i, r in enumerate(plan.releases)]
    keyed = [exp.alias_(k.copy(), key_name(i)) for i, k in enumerate(keys)]
    aggregate = base.copy().select(*keyed, *raws)
    if keys:
        aggregate = aggregate.group_by(*[k.copy() for k in keys])
    if not raws and not keyed:
        aggregate = aggregate.select(exp.alias_(exp.Count(this=exp.Star()), "__rows"))
    if plan.selection is None:
        return aggregate
    if plan.bounding.max_groups >= plan.bounding.max_rows:
        # A person keeps at most max_rows rows, so touches at most max_rows <= max_groups keys:
        # no per-person key bounding is needed, and persons are counted in the same pass.
        units = exp.Count(this=exp.Distinct(expressions=[exp.column(plan.bounding.unit, quoted=True)]))
        return aggregate.select(exp.alias_(units, UNITS))
    return _with_selection(plan, base, keys, aggregate)


def row_filter(plan: Plan) -> exp.Expr | None:
    """The query's row filter: the analyst's WHERE inside TRY, and public key domains."""
    return _row_filter(plan)


def _row_filter(plan: Plan) -> exp.Expr | None:
    conditions = []
    if plan.query.where is not None:
        # TRY(...) turns a data-dependent error into NULL; COALESCE makes NULL rows drop out. A
        # predicate that cannot fail on any value skips TRY (backend/safe_predicates.py).
        where = plan.query.where.copy()
        guarded = where if cannot_fail(where, plan.query.table) else Guarded(this=where)
        conditions.append(exp.func("coalesce", guarded, exp.false()))
    # With public keys only, release iterates over the domain and drops other groups after
    # aggregation (cheaper than filtering rows). With partition selection (a private key too),
    # rows outside a public key's domain must go before selection can see them.
    if plan.selection is not None:
        for key in plan.query.keys:
            if key.public:
                values = [_domain_literal(v, key.column) for v in key.column.values or ()]
                conditions.append(exp.In(this=exp.column(key.column.name, quoted=True), expressions=values))
    if not conditions:
        return None
    return exp.and_(*conditions) if len(conditions) > 1 else conditions[0]


def _domain_literal(value: object, column: Column) -> exp.Expr:
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float)):
        return exp.Literal.number(repr(value) if isinstance(value, float) else value)
    if column.type == "date":
        return exp.cast(exp.Literal.string(str(value)), "DATE")
    return exp.Literal.string(str(value))


def _raw_sql(raw: RawAggregate, plan: Plan) -> exp.Expr:
    if raw.kind == "count_rows":
        return exp.Count(this=exp.Star())
    column = _value(raw)
    if raw.kind == "count_values":
        return exp.Count(this=column)
    if raw.kind == "count_units":
        return exp.Count(this=exp.Distinct(expressions=[exp.column(plan.bounding.unit, quoted=True)]))
    finite = _finite(column, raw)
    if raw.kind == "count_finite":
        return exp.Count(this=exp.If(this=finite, true=exp.Literal.number(1), false=exp.Null())) if finite is not None else exp.Count(this=column)
    # Exact integer sums (DuckDB HUGEINT, Spark DECIMAL(38, 0)): the same whatever the row order,
    # the thread count or the engine.
    return exp.func("coalesce", ExactSum(this=_grid_value(raw, column)), exp.Literal.number(0))


def _value(raw: RawAggregate) -> exp.Expr | None:
    """The per-row value an aggregate reads: its column, or its expression inside TRY (a value
    that fails on a row is NULL for that row, which no aggregate reads: no error can depend on data)."""
    if raw.expr is not None:
        # A float value is read as a DOUBLE, like a float column: DuckDB types `9.36` or
        # `age * 1.5` as DECIMAL, whose grid scaling could overflow outside TRY.
        value = raw.expr.copy()
        if raw.column is not None and raw.column.type == "float":
            value = exp.cast(value, "DOUBLE")
        return Guarded(this=value)
    return exp.column(raw.column.name, quoted=True) if raw.column is not None else None


def _finite(column: exp.Expr | None, raw: RawAggregate) -> exp.Expr | None:
    declared = raw.column
    if declared is not None and declared.type == "float":
        return IsFinite(this=column.copy(), kind=exp.Literal.string("float"))
    if raw.expr is not None and column is not None:
        # An integer expression is NULL on the rows a CASE or FILTER leaves out: those rows must
        # not be clamped to the lower bound (LEAST and GREATEST skip NULLs).
        return exp.Not(this=exp.Is(this=column.copy(), expression=exp.Null()))
    return None


def _grid_value(raw: RawAggregate, column: exp.Expr) -> exp.Expr:
    """round(clamp(x) / grid) - center; NULL for NULL, NaN, +-inf.

    The clamp bounds are lower_units * grid and upper_units * grid, so the rounded value lies in
    [lower_units, upper_units] and the sum's sensitivity is the planner's.
    """
    assert raw.column is not None
    lower, upper = raw.lower_units * raw.grid, raw.upper_units * raw.grid
    clamped = exp.func("least", exp.func("greatest", column.copy(), number(lower)), number(upper))
    if raw.grid != 1:
        clamped = exp.func("round", exp.Mul(this=clamped, expression=number(1 / raw.grid)))
    units = exp.cast(clamped, "BIGINT")
    if raw.center_units:
        units = exp.Sub(this=units, expression=exp.Literal.number(raw.center_units))
    finite = _finite(column, raw)
    return exp.If(this=finite, true=units, false=exp.Null()) if finite is not None else units


def _with_selection(plan: Plan, base: exp.Select, keys: list[exp.Expr], aggregate: exp.Select) -> exp.Select:
    unit = exp.column(plan.bounding.unit, quoted=True)
    names = [key_name(i) for i in range(len(keys))]
    person_keys = (
        base.copy()
        .select(*[exp.alias_(k.copy(), n) for k, n in zip(keys, names)], unit.copy())
        .distinct()
    )
    key_types = [k.column.type for k in plan.query.keys]
    unit_type = plan.query.table.columns[plan.bounding.unit].type
    rank = rank_by_hash([unit.copy()], [*[(exp.column(n), t) for n, t in zip(names, key_types)], (unit.copy(), unit_type)],
                        seed_placeholder())
    ranked = exp.select(*names, unit.copy(), exp.alias_(rank, ROW_RANK)).from_(person_keys.subquery("pk"))
    kept = exp.select(*names, unit.copy()).from_(ranked.subquery("ranked")).where(
        exp.LTE(this=exp.column(ROW_RANK), expression=exp.Literal.number(plan.bounding.max_groups))
    )
    persons = exp.select(*names, exp.alias_(exp.Count(this=exp.Star()), UNITS)).from_(kept.subquery("kept")).group_by(*names)
    join_on = exp.and_(*[exp.NullSafeEQ(this=exp.column(n, "s"), expression=exp.column(n, "a")) for n in names])
    raws = [exp.column(release_name(i), "a") for i in range(len(plan.releases))]
    return (
        exp.select(*[exp.column(n, "s") for n in names], *raws, exp.column(UNITS, "s"))
        .from_(persons.subquery("s"))
        .join(aggregate.subquery("a"), on=join_on)
    )

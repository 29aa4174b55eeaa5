"""Plan -> sqlglot expressions for the engine. Never string formatting.

The engine reads the session's bounded relation (each person already cut to max_rows rows),
filters rows with the analyst's predicate inside TRY(...) (a predicate that fails on a value is
false for that row, so no error can depend on data; predicates that cannot fail skip it), and computes the exact raw aggregates per
group. With partition selection it also counts persons per key in the same aggregation, from a flag
the session's keyed relation (keyed_select) sets on one row per person and kept key, after keeping
at most max_groups keys per person, chosen by a keyed hash with a secret session seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from sqlglot import exp

from dpsql.backend.sql.engine_dialects import ExactSum, Guarded, IsFinite, KeyedHash, hash_input
from dpsql.backend.sql.safe_predicates import cannot_fail
from dpsql.catalog.policy import ENGINE_TYPES, Column, Table
from dpsql.ir.plan import Plan, RawAggregate, release_name, square_grid, square_units
from dpsql.ir.query import GroupKey, key_name

UNITS = "__units"
SEED = "seed"
ROW_RANK = "__rank"
REP_RANK = "__rep"
UNIT_KEY = "__unit_key"
TYPE_NAMES = ENGINE_TYPES
FIXED_POINT = "__fx_"


def key_type(column_type: str) -> str:
    """The engine type of a policy column type."""
    return TYPE_NAMES[column_type]


# --- fixed-point columns prepared once in the bounded relation ----------------------------------


def fixed_point_units(column: Column) -> tuple[Fraction, int, int]:
    """The grid and clamp bounds (in grid units) of SUM/AVG over a bounded column: the planner's
    rule (planner/build.py), restated so the prepared column can be checked against each plan."""
    assert column.lower is not None and column.upper is not None
    grid = column.grid()
    return grid, math.ceil(column.lower / grid), math.floor(column.upper / grid)


def fixed_point_columns(table: Table) -> list[Column]:
    """The columns whose fixed-point value the bounded relation carries: bounded floats.

    round(clamp(x) / grid) with its finiteness test costs a float SUM about 40% of a GROUP BY at
    10M rows; computed once per row in the bounded relation, every later SUM/AVG over the column
    reads an integer. (Integer columns on the unit grid only need a clamp: not worth a column.)
    """
    return [c for c in table.columns.values() if c.type == "float" and c.lower is not None and c.upper is not None]


def fixed_point_name(column: Column) -> str:
    """The bounded relation's column holding `column` in grid units (NULL for NULL, NaN, +-inf)."""
    return f"{FIXED_POINT}{column.name}"


def _fixed_point(column: Column, value: exp.Expr, grid: Fraction, lower: int, upper: int) -> exp.Expr:
    """CAST(round(clamp(x, lower * grid, upper * grid) / grid) AS BIGINT), NULL where x is not a
    finite number: an integer in [lower, upper]."""
    clamped = exp.func("least", exp.func("greatest", value.copy(), number(lower * grid)), number(upper * grid))
    if grid != 1:
        clamped = exp.func("round", exp.Mul(this=clamped, expression=number(1 / grid)))
    units = exp.cast(clamped, "BIGINT")
    finite = IsFinite(this=value.copy(), kind=exp.Literal.string("float")) if column.type == "float" \
        else exp.Not(this=exp.Is(this=value.copy(), expression=exp.Null()))
    return exp.If(this=finite, true=units, false=exp.Null())


def fixed_point_selects(table: Table) -> list[exp.Expr]:
    """The prepared fixed-point columns as projections over the table's columns.

    Privacy: each is a function of its own row's value and the policy's public bounds, so adding
    it changes nothing about which rows the bounded relation holds (its argument in
    backend/engines/engine.py is unchanged), and a sum over it reads exactly the integers the per-query
    expression would compute (the same function, _fixed_point): identical answers, sensitivity
    from the same clamp bounds.
    """
    return [exp.alias_(_fixed_point(c, exp.column(c.name, quoted=True), *fixed_point_units(c)), fixed_point_name(c), quoted=True)
            for c in fixed_point_columns(table)]


def bounded_columns(table: Table) -> list[str]:
    """Every column of the bounded relation: the policy's, then the prepared fixed-point ones."""
    return [*table.columns, *(fixed_point_name(c) for c in fixed_point_columns(table))]


def seed_placeholder() -> exp.Expr:
    """The secret seed, bound as a named engine parameter ($seed) at run time."""
    return exp.Placeholder(this=SEED)


def number(value: Fraction | int) -> exp.Expr:
    """An exact numeric literal (integers stay integers; fractions become decimals or doubles)."""
    value = Fraction(value)
    if value.denominator == 1:
        return exp.Literal.number(int(value.numerator))
    return exp.Literal.number(repr(float(value)))


# Dates and timestamps outside years 1-9999 (DuckDB's 'infinity' and far years) have no Python
# value: one such row would make a result fail to convert, an error channel that says whether any
# person holds one. The source view maps them to NULL, a per-row map like TRY_CAST's.
_TIME_RANGE = {
    "date": ("0001-01-01", "9999-12-31"),
    "timestamp": ("0001-01-01 00:00:00", "9999-12-31 23:59:59.999999"),
}


def _typed(column: str, type_name: str) -> exp.Expr:
    cast = exp.TryCast(this=exp.column(column, quoted=True), to=exp.DataType.build(TYPE_NAMES[type_name]))
    if type_name not in _TIME_RANGE:
        return cast
    low, high = (exp.cast(exp.Literal.string(v), TYPE_NAMES[type_name]) for v in _TIME_RANGE[type_name])
    return exp.Case(ifs=[exp.If(this=exp.Between(this=cast, low=low, high=high), true=cast.copy())])


def source_select(table: Table, source: exp.Expr) -> exp.Select:
    """The policy's columns of `source`, cast to their declared types (TRY_CAST: bad values -> NULL;
    dates and timestamps outside years 1-9999 -> NULL)."""
    columns = [exp.alias_(_typed(c.name, c.type), c.name, quoted=True) for c in table.columns.values()]
    return exp.select(*columns).from_(source)


def ordered(expression: exp.Expr) -> exp.Ordered:
    """Ascending with NULLs first, written out: the engines' defaults differ (DuckDB: NULLS LAST)."""
    return exp.Ordered(this=expression, desc=False, nulls_first=True)


def rank_by_hash(partition: list[exp.Expr], hashed: list[tuple[exp.Expr, str]], seed: exp.Expr) -> exp.Window:
    """row_number() within `partition`, in the order of a keyed hash of the values (the random
    part), then of the values themselves (a tie-break, so every engine picks the same rows).

    `hashed` holds (value, policy type) pairs; DOUBLEs enter the hash through `hash_input`.
    The tie-break leaves out the values that are partition expressions: they are constant within
    a partition, so ordering by them changes no rank, and each costs the window's sort a key.
    """
    digest = KeyedHash(this=seed, expressions=[hash_input(v.copy(), t) for v, t in hashed])
    order = [ordered(digest)] + tie_break([v for v, _ in hashed], partition)
    return exp.Window(this=exp.RowNumber(), partition_by=partition, order=exp.Order(expressions=order))


def tie_break(values: Sequence[exp.Expr], partition: Sequence[exp.Expr]) -> list[exp.Ordered]:
    """`values` in order as window ORDER BY terms, without those among the `partition` expressions
    (constant within a partition: a no-op in the order, but a costly sort key each)."""
    return [ordered(v.copy()) for v in values if v not in partition]


def row_heavy_select(table: Table, source_name: str) -> exp.Select:
    """The persons with more than max_rows rows (the only ones bounded_select ranks)."""
    assert table.privacy_unit is not None
    unit = exp.column(table.privacy_unit, quoted=True)
    present = exp.Not(this=exp.Is(this=unit.copy(), expression=exp.Null()))
    return (exp.select(unit.copy()).from_(exp.to_identifier(source_name, quoted=True)).where(present).group_by(unit.copy())
            .having(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(table.max_rows))))


def bounded_select(table: Table, source_name: str, heavy_name: str | None = None) -> exp.Expr:
    """Each person keeps at most max_rows rows, chosen by a keyed hash; rows without a person are dropped.

    `heavy_name`: a relation holding row_heavy_select's persons, computed once by the session (the
    per-person count over every row is the costliest part of bounding; inlined, the engine
    computes it twice, once per branch below). Without it the subquery is inlined.

    Persons with at most max_rows rows keep all of them, so only the rows of heavier persons need
    the keyed-hash window (and its MD5 over every column): the light persons' rows pass through
    an anti-join against the small set of heavy persons. The result is the same multiset of rows
    as ranking everybody (a person with n <= max_rows rows has ranks 1..n, all kept), so the
    privacy argument of the bounded relation (backend/engines/engine.py) is unchanged; it is 3-4x
    cheaper when most persons are light, as they are in practice.
    """
    assert table.privacy_unit is not None
    unit = exp.column(table.privacy_unit, quoted=True)
    names = list(table.columns)
    source = exp.to_identifier(source_name, quoted=True)
    present = exp.Not(this=exp.Is(this=unit.copy(), expression=exp.Null()))
    heavy = row_heavy_select(table, source_name) if heavy_name is None else \
        exp.select(unit.copy()).from_(exp.to_identifier(heavy_name, quoted=True))
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
    kept = exp.union(light_rows, heavy_rows, distinct=False)
    prepared = fixed_point_selects(table)
    if not prepared:
        return kept
    return exp.select(*[exp.column(n, quoted=True) for n in names], *prepared).from_(kept.subquery("__kept"))


def key_sql(key: GroupKey) -> exp.Expr:
    """A group key's per-row value: its column, or its expression (GROUP BY age // 10 * 10) cast to
    the derived key type inside TRY, so a row on which it fails has the NULL key (outside a
    derived public domain unless a CASE without ELSE puts NULL in it): no error depends on data."""
    if key.expr is None:
        return exp.column(key.column.name, quoted=True)
    computed = key.engine if key.engine is not None else key.expr  # LN/LOG/EXP of listed values: their literals
    return Guarded(this=exp.cast(computed.copy(), TYPE_NAMES[key.column.type], copy=False))


def engine_select(plan: Plan, bounded_name: str) -> exp.Select:
    """The one engine query of a plan: raw aggregates per group (and person counts per key)."""
    query = plan.query
    keys = [key_sql(k) for k in query.keys]
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
    # `bounded_name` is then the session's keyed relation (keyed_select): the person counts come
    # from its precomputed flag, in the same aggregation as the released values. Privacy and
    # utility: see keyed_select. A key no counted person holds is never returned (HAVING), as
    # before: its presence would depend on one person's rows outside their kept keys. COUNT_IF
    # (DuckDB and Spark SQL) counts the same rows as COUNT(CASE WHEN flag THEN 1 END), NULL flags
    # not counted, and is DuckDB's cheaper native form; cast to BIGINT, the type Spark returns
    # (DuckDB's is HUGEINT), so both engines hand back the same raw types.
    counted: exp.Expr = exp.CountIf(this=exp.column(UNIT_KEY, quoted=True))
    if any(k.expr is not None for k in query.keys):
        # A derived key (GROUP BY upper(region), age // 10) is bounded on the columns it reads
        # (compiled.engine_relation_keys): two kept column tuples of one person, each with its
        # flagged row, can give the same key value ('abc' and 'ABC'), where COUNT_IF would count
        # that person twice and a key held by one person could reach a count of max_groups, not
        # the 1 the selection threshold is calibrated for. Counting the distinct persons with a
        # flagged row counts each at most once per key value, on at most max_groups key values
        # (one per kept tuple).
        counted = exp.Count(this=exp.Distinct(expressions=[exp.Case(ifs=[exp.If(
            this=exp.column(UNIT_KEY, quoted=True), true=exp.column(plan.bounding.unit, quoted=True))])]))
    return aggregate.select(exp.alias_(exp.cast(counted, exp.DataType.build("BIGINT")), UNITS)).having(
        exp.GT(this=counted.copy(), expression=exp.Literal.number(0)))


def needs_keyed(plan: Plan) -> bool:
    """Whether the plan's engine query reads the keyed relation of its grouping (key bounding)."""
    return plan.selection is not None and plan.bounding.max_groups < plan.bounding.max_rows


def key_heavy_select(table: Table, bounded: str, keys: tuple[str, ...]) -> exp.Select:
    """The persons of the bounded relation with more than max_groups distinct key tuples (the only
    ones whose keys need the keyed-hash ranking in keyed_select); a small, separate relation."""
    assert table.privacy_unit is not None
    unit = exp.column(table.privacy_unit, quoted=True)
    more = exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(table.max_groups))
    # Only a person with more than max_groups rows can have more than max_groups key tuples: the
    # distinct pairs are formed for those persons' rows only (a count per person, which DuckDB
    # runs as a perfect hash aggregate over dense ids, then the costlier DISTINCT over fewer rows).
    # The same persons as forming the pairs of every row.
    candidates = exp.select(unit.copy()).from_(exp.to_identifier(bounded, quoted=True)).group_by(unit.copy()).having(more.copy())
    pairs = (exp.select(unit.copy(), *[exp.column(k, quoted=True) for k in keys]).distinct().from_(exp.to_identifier(bounded, quoted=True))
             .where(exp.In(this=unit.copy(), query=candidates.subquery())))
    return exp.select(unit.copy()).from_(pairs.subquery("__pairs")).group_by(unit.copy()).having(more)


def keyed_select(table: Table, bounded: str, keys: tuple[str, ...], heavy: str) -> exp.Select:
    """The bounded relation with a flag UNIT_KEY on one row per (person, kept key): cached per
    session, table and grouping-column set, so selection needs no second pass per query. `heavy`
    holds key_heavy_select's persons.

    For each person p and key tuple k of p's bounded rows, the representative row r(p, k) is the
    first of p's rows with key k in the order of the row's values. A person with at most
    max_groups key tuples keeps them all; a heavier one keeps the first max_groups in the order of
    a keyed hash of (k, p) with the session's secret seed for this table and grouping. So p's kept
    key set K(p) has |K(p)| <= max_groups, and every choice reads p's rows only. (Only the persons
    in `heavy` pay for the hash and its window; the result is the same as ranking everybody.)

    Privacy. The flags are a stable per-person transformation of the bounded relation for a fixed
    seed (removing p removes p's rows and flags, changes nobody else's), like the bounded relation
    itself (backend/engines/engine.py). A query's person count of key k is the number of flagged rows with
    key k that pass its WHERE. p has flagged rows for the keys of K(p) only, one row per key, and a
    WHERE can only remove rows, never add a flag or change a row's key: so, whatever the WHERE, p
    adds 1 to at most |K(p)| <= max_groups keys' counts and 0 to all others (L0 <= max_groups,
    Linf = 1), which is what the partition selection threshold is calibrated for. Applying the key
    bounding before the WHERE keeps this because the bound holds for the unfiltered rows and
    filtering is monotone. Released values are unchanged: they aggregate every bounded row that
    passes the WHERE, with sensitivities from max_rows as before. A derived key (GROUP BY
    upper(region)) is keyed on the columns it reads, and two of p's kept tuples can give one key
    value: engine_select then counts the distinct persons with a flagged row, not the flags.

    Utility. K(p) is chosen among all of p's keys, not only the ones matching the WHERE, and p
    counts for k only if r(p, k) matches: exact when the WHERE is constant over a person's rows
    with that key (e.g. a per-person attribute), an under-count otherwise. Fewer keys may pass the
    threshold; the answers for the keys released are unchanged. (The exact alternative, flagging
    every row of a kept key and counting DISTINCT persons among the rows that pass the WHERE, is
    as private, but measured 3.5x slower at 1M rows and 7x at 10M: not worth it by default.)
    """
    assert table.privacy_unit is not None
    unit = exp.column(table.privacy_unit, quoted=True)
    columns = [exp.column(n, quoted=True) for n in table.columns]
    carried = [exp.column(n, quoted=True) for n in bounded_columns(table)]  # with the prepared fixed-point columns
    key_columns = [exp.column(k, quoted=True) for k in keys]
    source = exp.to_identifier(bounded, quoted=True)
    in_heavy = exp.In(this=unit.copy(), query=exp.select(unit.copy()).from_(exp.to_identifier(heavy, quoted=True)).subquery())
    # The representative: a deterministic order of the values (the same on every engine: NULLs
    # first, written out); no hash is needed, the choice only has to read p's rows.
    rep_partition = [unit.copy(), *[k.copy() for k in key_columns]]
    rep_order = tie_break(columns, rep_partition)  # empty when every column is grouped: the rows are then identical
    rep = exp.Window(this=exp.RowNumber(), partition_by=rep_partition, order=exp.Order(expressions=rep_order) if rep_order else None)
    first = exp.EQ(this=exp.column(REP_RANK), expression=exp.Literal.number(1))
    light = exp.select(*[c.copy() for c in carried], exp.alias_(exp.EQ(this=rep.copy(), expression=exp.Literal.number(1)), UNIT_KEY, quoted=True)
                       ).from_(source.copy()).where(exp.Not(this=in_heavy.copy()))
    unit_type = table.columns[table.privacy_unit].type
    key_rank = rank_by_hash([unit.copy(), first.copy()],
                            [*[(k.copy(), table.columns[n].type) for k, n in zip(key_columns, keys)], (unit.copy(), unit_type)],
                            seed_placeholder())
    represented = exp.select(*[c.copy() for c in carried], exp.alias_(rep, REP_RANK)).from_(source.copy()).where(in_heavy)
    ranked = exp.select(*[c.copy() for c in carried], exp.column(REP_RANK), exp.alias_(key_rank, ROW_RANK)).from_(
        represented.subquery("__represented"))
    flag = exp.and_(first.copy(), exp.LTE(this=exp.column(ROW_RANK), expression=exp.Literal.number(table.max_groups)))
    heavy_rows = exp.select(*[c.copy() for c in carried], exp.alias_(flag, UNIT_KEY, quoted=True)).from_(ranked.subquery("__ranked"))
    return exp.union(light, heavy_rows, distinct=False)  # type: ignore[return-value]


def row_filter(plan: Plan) -> exp.Expr | None:
    """The query's row filter (a WHERE conjunct only): the analyst's WHERE, inside TRY where it
    can fail on a value, and public key domains."""
    return _row_filter(plan)


def _row_filter(plan: Plan) -> exp.Expr | None:
    conditions = []
    if plan.query.where is not None:
        # TRY(...) turns a data-dependent error into NULL; COALESCE makes NULL rows drop out. A
        # predicate that cannot fail on any value skips TRY (backend/sql/safe_predicates.py).
        where = plan.query.where.copy()
        if cannot_fail(where, plan.query.table):
            # Bare: the filter is only ever a WHERE conjunct (here and in robust_sql), where NULL
            # drops the row like FALSE, and a bare comparison lets the engine push it into the
            # scan (COALESCE hid `age > 40` from DuckDB's filter pushdown: 20% of the query).
            conditions.append(where)
        else:
            conditions.append(exp.func("coalesce", Guarded(this=where), exp.false()))
    # With public keys only, release iterates over the domain and drops other groups after
    # aggregation (cheaper than filtering rows). With partition selection (a private key too),
    # rows outside a public key's domain must go before selection can see them.
    if plan.selection is not None:
        for key in plan.query.keys:
            if key.public:
                values = [_domain_literal(v, key.column) for v in key.column.values or ()]
                conditions.append(exp.In(this=key_sql(key), expressions=values))
    if not conditions:
        return None
    return exp.and_(*conditions, copy=False) if len(conditions) > 1 else conditions[0]  # fresh nodes: no second copy


def _domain_literal(value: object, column: Column) -> exp.Expr:
    if value is None:  # a derived domain's NULL key (CASE without ELSE): IN never matches it
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float)):
        return exp.Literal.number(repr(value) if isinstance(value, float) else value)
    if column.type in ("date", "timestamp"):
        return exp.cast(exp.Literal.string(str(value)), TYPE_NAMES[column.type])
    return exp.Literal.string(str(value))


def _raw_sql(raw: RawAggregate, plan: Plan) -> exp.Expr:
    if raw.kind == "count_rows":
        return exp.Count(this=exp.Star())
    column = _value(raw)
    if raw.kind == "count_values":
        return exp.Count(this=column)
    if raw.kind == "count_units":
        return exp.Count(this=exp.Distinct(expressions=[exp.column(plan.bounding.unit, quoted=True)]))
    if raw.kind == "distinct_values":
        return exp.Count(this=exp.Distinct(expressions=[column]))
    finite = _finite(column, raw)
    if raw.kind == "count_finite" and raw.distinct:
        # AVG(DISTINCT x)'s denominator: the distinct grid values its sum adds (NULL where not finite).
        assert column is not None
        prepared = raw.column in fixed_point_columns(plan.query.table) and _prepared(raw)
        return exp.Count(this=exp.Distinct(expressions=[_grid_value(raw, column, prepared)]))
    if raw.kind == "count_finite" and raw.expr is None and raw.column is not None and raw.column in fixed_point_columns(plan.query.table):
        return exp.Count(this=exp.column(fixed_point_name(raw.column), quoted=True))  # NULL exactly where not finite
    if raw.kind == "count_finite":
        return exp.Count(this=exp.If(this=finite, true=exp.Literal.number(1), false=exp.Null())) if finite is not None else exp.Count(this=column)
    # Exact integer sums (DuckDB HUGEINT, Spark DECIMAL(38, 0)): the same whatever the row order,
    # the thread count or the engine.
    assert column is not None  # a sum reads a declared column (raw.column), so it has a value
    # The prepared column holds the policy's clamp: a call whose bounds a query narrowed
    # (contribution_bounds_per_group) is another column (other bounds) and clamps per query.
    prepared = raw.column in fixed_point_columns(plan.query.table) and _prepared(raw)
    value = _square_value(raw, column, prepared) if raw.kind == "sumsq_grid" else _grid_value(raw, column, prepared)
    return exp.func("coalesce", ExactSum(this=value, distinct=raw.distinct or None), exp.Literal.number(0))


def _square_value(raw: RawAggregate, column: exp.Expr, prepared: bool) -> exp.Expr:
    """The centred value's square on the square grid, clamped to [0, square_units] per row, so the
    sum's sensitivity is max_rows * square_units whatever the floating-point rounding does."""
    units = _grid_value(raw, column, prepared)  # round(clamp(x) / grid) - center, NULL when not finite
    deviation = exp.Mul(this=exp.cast(units, "DOUBLE"), expression=number(raw.grid))
    scaled = exp.func("round", exp.Div(this=exp.Mul(this=deviation, expression=deviation.copy()), expression=number(square_grid(raw))))
    clamped = exp.func("least", exp.func("greatest", scaled, exp.Literal.number(0)), exp.Literal.number(square_units(raw)))
    return exp.cast(clamped, "BIGINT")


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
    if declared is not None and declared.type == "float" and column is not None:  # _value reads a declared column
        return IsFinite(this=column.copy(), kind=exp.Literal.string("float"))
    if column is not None:
        # An integer value is NULL where the data holds NULL, or where a CASE or FILTER leaves the
        # row out: such rows must not be clamped to the lower bound (LEAST and GREATEST skip
        # NULLs on DuckDB and Spark, so GREATEST(NULL, 18) is 18 and a NULL age added 18 to SUM).
        return exp.Not(this=exp.Is(this=column.copy(), expression=exp.Null()))
    return None


def _grid_value(raw: RawAggregate, column: exp.Expr, prepared: bool) -> exp.Expr:
    """round(clamp(x) / grid) - center; NULL for NULL, NaN, +-inf.

    The clamp bounds are lower_units * grid and upper_units * grid, so the rounded value lies in
    [lower_units, upper_units] and the sum's sensitivity is the planner's.
    """
    assert raw.column is not None
    units: exp.Expr
    if prepared:
        units = exp.column(fixed_point_name(raw.column), quoted=True)  # NULL where the value is not finite
        if raw.center_units:
            units = exp.Sub(this=units, expression=exp.Literal.number(raw.center_units))
        return units
    units = _fixed_point(raw.column, column, raw.grid, raw.lower_units, raw.upper_units)
    if raw.center_units:
        units = exp.Sub(this=units, expression=exp.Literal.number(raw.center_units))
    return units


def _prepared(raw: RawAggregate) -> bool:
    """Whether the bounded relation carries this aggregate's fixed-point value (a bounded float
    column itself, on the planner's grid and bounds), so the sum reads the prepared integer."""
    column = raw.column
    return (raw.expr is None and column is not None and column.type == "float" and column.lower is not None
            and column.upper is not None and fixed_point_units(column) == (raw.grid, raw.lower_units, raw.upper_units))

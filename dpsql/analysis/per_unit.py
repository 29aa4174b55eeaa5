"""A per-person aggregate, then an aggregate over it (a histogram): one release over one row per person.

Tableau's level-of-detail FIXED expressions and TPC-H Q13 aggregate per privacy unit first, then
count the persons per value (BigQuery DP does the same: it aggregates per privacy unit first):

    SELECT n, COUNT(*) FROM (SELECT person_id, COUNT(*) AS n FROM people GROUP BY person_id) t GROUP BY n

The inner SELECT, grouped by exactly the privacy unit, is not released: it is a relation with one
row per person, a deterministic function of that person's rows only (its bounded relation: at
most `max_rows` rows after the keyed-hash bound, filtered by the inner WHERE). The outer query is
then an ordinary aggregate over that relation (ir/join.py, JoinedTable with `per_unit`), planned
with `max_rows = 1` and `max_groups = 1`:

- Sensitivity. Adding or removing one person adds or removes exactly one row of the relation and
  changes no other row, so the outer COUNT(*) has sensitivity 1 per person, and an outer SUM of a
  per-person column the width of that column's range.
- Ranges, from the policy only (never from the data), with m = the inner table's `max_rows`:
  COUNT(*) is in [1, m] (a person's group exists only with a row), COUNT(col) and
  COUNT(DISTINCT col) in [0, m]; SUM(col) over a column bounded by [L, U] (each value clamped to
  them) is a sum of 1 to m values, so in [min(L, m L), max(U, m U)]; AVG, MIN and MAX in [L, U].
  An integer count's range is also its public domain {lo, ..., m}: GROUP BY it releases every
  value (empty ones too), with no partition selection.
- The inner GROUP BY must be exactly the privacy unit (else the inner SELECT is a release of its
  own, as before), and its items the unit or those aggregates over plain columns (else DP107:
  a per-person value dpsql cannot bound).

Tableau writes the same question as a join of the rows with the per-person aggregate ON the unit,
counting distinct persons: `FROM people JOIN (SELECT person_id, COUNT(1) AS m FROM people GROUP BY
1) t0 ON people.person_id = t0.person_id GROUP BY t0.m` with COUNT(DISTINCT people.person_id).
Each person of t0 has at least one row of people (the same table, the same bounded relation), so
that count is COUNT(*) over t0: the query is read as the histogram when the joined table is the
inner query's table and is read nowhere else.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from fractions import Fraction
from types import MappingProxyType

from sqlglot import exp

from dpsql.analysis.context import AnalysisContext, refuse
from dpsql.analysis.group_domains import MAX_DERIVED_KEYS
from dpsql.catalog.policy import Column
from dpsql.errors import Error
from dpsql.frontend.privacy_dialect import Dpsql
from dpsql.ir.join import JoinedTable, JoinPart, PerUnit
from dpsql.ir.query import BoundQuery, PublicQuery

AnalyzeSelect = Callable[[exp.Select, AnalysisContext], "BoundQuery | PublicQuery"]
UNIT = "__dpsql_unit"  # the relation's unit column when the inner query does not select it
_PART = "__u"  # the inner relation's alias in the per-person SQL
_BOUNDED = (exp.Sum, exp.Avg, exp.Min, exp.Max)


@dataclasses.dataclass(frozen=True, slots=True)
class PerUnitQuery:
    """The outer query over the per-person relation, and the context whose policy holds it."""

    select: exp.Select
    ctx: AnalysisContext
    note: str


def per_unit_query(select: exp.Select, bodies: Mapping[str, exp.Expr], ctes: list[exp.CTE], ctx: AnalysisContext,
                   analyze_select: AnalyzeSelect) -> PerUnitQuery | None:
    """The histogram shape read as one release over a per-person relation; None when `select` is
    not that shape (other paths judge it as before). `bodies`: the CTEs visible by name; `ctes`:
    the row-level CTEs the inner query may read."""
    select = _lod_join(select) or select
    from_ = select.args.get("from_")
    if from_ is None or from_.expressions or select.args.get("joins"):
        return None
    source = from_.this
    body, renames = _body(source, bodies)
    if body is None or not _per_unit_shape(body):
        return None
    key = _group_column(body)
    if key is None:
        return None
    probe = body.copy()
    for clause in ("group", "order", "with_"):
        probe.set(clause, None)
    if ctes:
        probe.set("with_", exp.With(expressions=[c.copy() for c in ctes]))
    unit_probe = probe.copy()
    unit_probe.set("expressions", [exp.Count(this=exp.Distinct(expressions=[key.copy()]))])
    try:
        bound = analyze_select(unit_probe, ctx)
    except Error:
        return None  # not over a private table dpsql reads: judged as a release, as before
    if not isinstance(bound, BoundQuery) or bound.aggregates[0].column is None \
            or bound.aggregates[0].column.name != bound.table.privacy_unit:
        return None  # grouped by something else: the inner SELECT is a release of its own
    table = _relation(body, renames, key, probe, bound, ctx, analyze_select)
    policy = dataclasses.replace(ctx.policy, tables=MappingProxyType({**ctx.policy.tables, table.name: table}))
    outer = select.copy()
    outer.set("from_", exp.From(this=exp.Table(this=exp.to_identifier(table.name),
                                               alias=exp.TableAlias(this=exp.to_identifier(source.alias_or_name)))))
    note = (f"the subquery {source.alias_or_name} aggregates per {bound.table.unit_name}: one row per person, read by "
            "the outer aggregate (max_rows = 1), not released itself")
    return PerUnitQuery(outer, dataclasses.replace(ctx, policy=policy), note)


def _body(source: exp.Expr, bodies: Mapping[str, exp.Expr]) -> tuple[exp.Select | None, list[str]]:
    """The aggregated SELECT a FROM item names (a subquery, or a CTE), and its column renames."""
    if isinstance(source, exp.Subquery):
        alias = source.args.get("alias")
        renames = [c.name for c in alias.columns] if alias is not None and alias.columns else []
        return (source.this if isinstance(source.this, exp.Select) else None), renames
    if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier) and not source.args.get("db"):
        body = bodies.get(source.name.lower())
        return (body if isinstance(body, exp.Select) else None), []
    return None, []


def _per_unit_shape(body: exp.Select) -> bool:
    """One GROUP BY expression, no HAVING, LIMIT, DISTINCT, grouping sets, window or own WITH."""
    group = body.args.get("group")
    if group is None or len(group.expressions) != 1 or any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets")):
        return False
    if any(body.args.get(k) is not None for k in ("having", "limit", "offset", "distinct", "with_", "qualify")):
        return False
    return body.find(exp.Window) is None


def _group_column(body: exp.Select) -> exp.Column | None:
    """The GROUP BY column (a position resolved to its select item)."""
    key = body.args["group"].expressions[0]
    if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit() and 1 <= int(key.this) <= len(body.expressions):
        item = body.expressions[int(key.this) - 1]
        key = item.this if isinstance(item, exp.Alias) else item
    return key if isinstance(key, exp.Column) else None


def _relation(body: exp.Select, renames: list[str], key: exp.Column, probe: exp.Select, bound: BoundQuery,
              ctx: AnalysisContext, analyze_select: AnalyzeSelect) -> JoinedTable:
    """The per-person relation: its columns, their ranges from the policy, and its SQL's parts."""
    inner = bound.table
    assert inner.privacy_unit is not None
    m = inner.max_rows
    items: list[tuple[str, exp.Expr]] = []
    columns: dict[str, Column] = {}
    lines = [f"Per-person aggregate over {inner.name}: one row per {inner.unit_name} (GROUP BY {inner.privacy_unit}), "
             f"from at most {m} row(s) each; not released, read by the outer aggregate"]
    unit_name: str | None = None
    key_text = key.sql(dialect=Dpsql).lower()
    for position, item in enumerate(body.expressions):
        name = (renames[position] if position < len(renames) else _name(item)).lower()
        value = item.this if isinstance(item, exp.Alias) else item
        if name in columns:
            raise refuse("DP128", f"the per-person subquery names two columns '{name}'", item, ctx.sql,
                         "give each column of the subquery its own alias")
        if isinstance(value, exp.Column) and value.sql(dialect=Dpsql).lower() == key_text:
            unit_name = name
            items.append((name, exp.column(inner.privacy_unit, quoted=True)))
            columns[name] = dataclasses.replace(inner.columns[inner.privacy_unit], name=name)
            continue
        per_row = probe.copy()
        per_row.set("expressions", [value.copy()])
        call = analyze_select(per_row, ctx)
        expr, column = _aggregate(value, call, m, name, ctx)
        items.append((name, expr))
        columns[name] = column
        lines.append(f"  {name} = {value.sql(dialect=Dpsql)}: in [{_fmt(column.lower)}, {_fmt(column.upper)}] "
                     f"({_why(value, m)})")
    if unit_name is None:  # the unit is not selected: a hidden column carries it
        unit_name = UNIT
        items.append((UNIT, exp.column(inner.privacy_unit, quoted=True)))
        columns[UNIT] = dataclasses.replace(inner.columns[inner.privacy_unit], name=UNIT)
    per_unit = PerUnit(unit=inner.privacy_unit, items=tuple(items), where=bound.where)
    part = JoinPart(table=inner, alias=_PART, kind="from")
    digest = hashlib.sha256(repr((inner.name, items, bound.where)).encode()).hexdigest()[:12]
    return JoinedTable(name=f"{inner.name}_per_unit_{digest}", columns=MappingProxyType(columns), privacy_unit=unit_name,
                       max_rows=1, max_groups=1, unit=inner.unit_name, parts=(part,), explain=tuple(lines),
                       per_unit=per_unit)


def _aggregate(value: exp.Expr, call: BoundQuery | PublicQuery, m: int, name: str,
               ctx: AnalysisContext) -> tuple[exp.Expr, Column]:
    """A per-person aggregate's SQL over the inner relation and its column with the policy's range."""
    if not isinstance(call, BoundQuery) or len(call.aggregates) != 1 or call.outputs[0].aggregate != 0:
        raise _unbounded(value, ctx)
    aggregate = call.aggregates[0]
    column = aggregate.column
    if isinstance(value, exp.Count):
        arg = value.this
        if column is None:  # COUNT(*), COUNT(1): a person's group has at least one row
            return exp.Count(this=exp.Star()), _count(name, 1, m)
        if aggregate.expr is not None:
            raise _unbounded(value, ctx)
        plain = exp.column(column.name, quoted=True)
        return exp.Count(this=exp.Distinct(expressions=[plain]) if isinstance(arg, exp.Distinct) else plain), _count(name, 0, m)
    if not isinstance(value, _BOUNDED) or column is None or aggregate.expr is not None or not column.bounded \
            or column.type not in ("int", "float"):
        raise _unbounded(value, ctx)
    assert column.lower is not None and column.upper is not None
    low, high = column.lower, column.upper
    clamped = exp.func("least", exp.func("greatest", exp.column(column.name, quoted=True), _number(low)), _number(high))
    if isinstance(value, exp.Sum):  # 1 to m values in [low, high]
        return exp.Sum(this=clamped), Column(name=name, type=column.type, lower=min(low, m * low), upper=max(high, m * high))
    kind = "float" if isinstance(value, exp.Avg) else column.type
    return type(value)(this=clamped), Column(name=name, type=kind, lower=low, upper=high)


def _count(name: str, low: int, m: int) -> Column:
    values = tuple(range(low, m + 1)) if m + 1 - low <= MAX_DERIVED_KEYS else None
    return Column(name=name, type="int", lower=Fraction(low), upper=Fraction(m), values=values)


def _unbounded(value: exp.Expr, ctx: AnalysisContext) -> Exception:
    return refuse("DP107", f"the per-person value {value.sql(dialect=Dpsql)} has no range dpsql can derive from the policy",
                  value, ctx.sql, "aggregate per person with COUNT(*), COUNT(col), COUNT(DISTINCT col), or SUM, AVG, MIN "
                  "or MAX of a column with public bounds, e.g. SELECT n, COUNT(*) FROM (SELECT person_id, COUNT(*) AS n "
                  "FROM people GROUP BY person_id) t GROUP BY n")


def _why(value: exp.Expr, m: int) -> str:
    if isinstance(value, exp.Count):
        return f"a count of at most {m} row(s)"
    if isinstance(value, exp.Sum):
        return f"a sum of 1 to {m} clamped value(s)"
    return "a clamped value"


def _name(item: exp.Expr) -> str:
    if isinstance(item, exp.Alias):
        return item.alias
    if isinstance(item, exp.Column):
        return item.name
    return item.sql(dialect=Dpsql)


def _number(value: Fraction) -> exp.Expr:
    return exp.Literal.number(str(value.numerator) if value.denominator == 1 else repr(float(value)))


def _fmt(value: Fraction | None) -> str:
    return "?" if value is None else f"{float(value):g}"


def _lod_join(select: exp.Select) -> exp.Select | None:  # noqa: C901 - one check per way Tableau's join can differ from the histogram
    """Tableau's LOD join read as the histogram (module doc), or None when it is not that shape.

    `FROM t JOIN (SELECT u, ... FROM t GROUP BY u) s ON t.u = s.u`, t read nowhere else than in
    ON and in COUNT(DISTINCT t.u), no WHERE: -> `FROM (...) s` with COUNT(*) for those counts."""
    from_ = select.args.get("from_")
    joins = select.args.get("joins") or []
    if from_ is None or from_.expressions or len(joins) != 1 or select.args.get("where") is not None:
        return None
    rows, join = from_.this, joins[0]
    inner = join.this
    if not isinstance(rows, exp.Table) or not isinstance(inner, exp.Subquery) or not isinstance(inner.this, exp.Select) \
            or join.args.get("side") or join.args.get("kind") not in (None, "INNER") or join.args.get("using"):
        return None
    body = inner.this
    body_from = body.args.get("from_")
    if body_from is None or body.args.get("joins") or body.args.get("where") is not None \
            or not isinstance(body_from.this, exp.Table) or body_from.this.name.lower() != rows.name.lower():
        return None
    key = _group_column(body) if _per_unit_shape(body) else None
    on = join.args.get("on")
    on = on.unnest() if isinstance(on, exp.Paren) else on
    if key is None or not isinstance(on, exp.EQ) or not all(isinstance(s, exp.Column) for s in (on.this, on.expression)):
        return None
    names = {rows.alias_or_name.lower()}
    sides = sorted((on.this, on.expression), key=lambda c: c.table.lower() in names)
    released, row_side = sides
    if row_side.table.lower() not in names or released.table.lower() != inner.alias_or_name.lower() \
            or row_side.name.lower() != key.name.lower():
        return None
    out = select.copy()
    out.set("joins", None)
    if any(not c.table for c in out.find_all(exp.Column)):
        return None  # an unqualified column could name either side
    counts: list[exp.Expr] = []
    for column in list(out.find_all(exp.Column)):
        if column.table.lower() not in names:
            continue
        distinct = column.parent
        if not isinstance(distinct, exp.Distinct) or not isinstance(distinct.parent, exp.Count) \
                or column.name.lower() != key.name.lower() or len(distinct.expressions) != 1:
            return None
        counts.append(distinct.parent.replace(exp.Count(this=exp.Star())))
    # Every aggregate is such a count: another aggregate of the join's rows (SUM(s.m)) would weigh
    # each person by their row count, which the per-person relation does not.
    if not counts or any(not any(f is c for c in counts) for f in out.find_all(exp.AggFunc)):
        return None
    out.set("from_", exp.From(this=inner.copy()))
    return out

"""Private rows joined with released keys: two releases and an outer query (a semi-join on a group key).

Superset's series limit, Tableau's top-N filter and similar BI shapes aggregate private rows
only for the keys another aggregate picked:

    SELECT dept, SUM(income) FROM people
    JOIN (SELECT dept, SUM(income) AS s FROM people GROUP BY dept ORDER BY s DESC LIMIT 5) t ON people.dept = t.dept
    GROUP BY dept

The inner aggregate is a release of its own (noise, then its ORDER BY and LIMIT over the noisy
values). Its keys are then public, and an INNER JOIN on them is a filter on the outer query's
group key: restricting rows to `dept IN K` before GROUP BY dept keeps exactly the groups whose
key is in K, each with the same rows. So the outer aggregate is released over all its groups
without the join (a second release, charged like the query it is: its sensitivity comes from
the policy as for any aggregate), and the join is applied to the released groups in the
post-processing database (a join on the key), then ORDER BY and LIMIT. Each released key
matches one released row, because the join equates every GROUP BY key of the inner aggregate,
so no group is counted twice, as in the analyst's SQL.

Only that shape is taken here; any other read of released results beside private rows stays
DP126 (analysis/post_processing.py): a join on a noisy value or on some of the inner keys only, a join the
outer query does not group by, a released column read outside ON.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from dpsql.analysis.context import refuse
from dpsql.analysis.window_lift import outer_order
from dpsql.frontend.privacy_dialect import Dpsql

TWO = "__dpsql_rows"  # the outer query's name for the second release's rows
HIDDEN = "__dpsql_key"  # a join key the analyst did not select, released as a hidden output


@dataclass(frozen=True, slots=True)
class KeyJoin:
    """The pieces of the shape: the released FROM item, the aggregated query without it, and how
    the released keys filter its groups."""

    released: exp.Expr  # the FROM item holding the first release (a subquery or a CTE's name)
    alias: str
    rows: exp.Select  # the outer aggregate without the join, ORDER BY, LIMIT and OFFSET (hidden keys appended)
    pairs: tuple[tuple[str, int], ...]  # (the released key's name, position of the equated key among rows' outputs)
    visible: int  # the analyst's outputs: the first `visible` of rows' outputs
    order: exp.Order | None
    limit: exp.Expr | None
    offset: exp.Expr | None

    def outer(self, released: exp.Query, rows: exp.Query) -> exp.Select:
        """The outer query over both releases' outer versions (each a SELECT of named columns)."""
        names = [s.alias_or_name for s in rows.selects]
        inner = exp.alias_(exp.Subquery(this=released), exp.to_identifier(self.alias, quoted=True), table=True)
        match = [exp.EQ(this=exp.column(exp.to_identifier(key, quoted=True), table=exp.to_identifier(self.alias, quoted=True)),
                        expression=exp.column(exp.to_identifier(names[position], quoted=True), table=TWO))
                 for key, position in self.pairs]
        # One released row per key (the join equates every GROUP BY key of the joined aggregate):
        # the INNER JOIN keeps each matching group once, a semi-join.
        outer = exp.select(*[exp.column(exp.to_identifier(n, quoted=True), table=TWO) for n in names[:self.visible]]) \
            .from_(rows.subquery(TWO)).join(inner, on=exp.and_(*match))
        for clause, value in (("order", self.order), ("limit", self.limit), ("offset", self.offset)):
            if value is not None:
                outer.set(clause, value.copy())
        return outer


def key_join(select: exp.Select, holds_release: Callable[[exp.Expr], bool], sql: str) -> KeyJoin | None:  # noqa: C901 - one check per way the shape can fail, each with its own DP126 reason
    """The shape's pieces when `select` (aggregated) joins one released FROM item to private rows
    on a group key; None when no FROM item or several hold a release, or one is not joined by
    JOIN ... ON (other shapes: analysis/post_processing.py); DP126 when the join is not on the keys."""
    from_ = select.args.get("from_")
    joins = list(select.args.get("joins") or [])
    if from_ is None or from_.expressions:
        return None
    sources = [from_.this, *(j.this for j in joins)]
    held = [i for i, s in enumerate(sources) if holds_release(s)]
    if len(held) != 1 or len(sources) < 2:
        return None
    index = held[0]
    released = sources[index]
    join = joins[0] if index == 0 else joins[index - 1]
    if join.args.get("side") or join.args.get("kind") not in (None, "INNER") or join.args.get("using") \
            or join.args.get("on") is None or not isinstance(released, (exp.Subquery, exp.Table)) \
            or not released.alias_or_name:
        return None
    alias = released.alias_or_name
    body = _released_select(released, select)
    if body is None:
        return None
    outputs = [item.alias_or_name.lower() for item in body.selects]
    unique = _unique_keys(body)
    if unique is None:
        raise _refuse("the joined aggregate has no plain GROUP BY keys: its rows are not one per key", released, sql)

    def released_side(column: exp.Column) -> bool:
        return column.table.lower() == alias.lower() if column.table else column.name.lower() in outputs

    # ON: equalities of a released key and a column of the private rows, joined by AND.
    pairs: list[tuple[str, exp.Column]] = []
    for condition in _conjuncts(join.args["on"]):
        sides = (condition.this, condition.expression) if isinstance(condition, exp.EQ) else ()
        if len(sides) != 2 or not all(isinstance(s, exp.Column) for s in sides) \
                or [released_side(s) for s in sides].count(True) != 1:
            raise _refuse("the join with the released results is not equalities of a released key and a column of "
                          "the rows, joined by AND", condition, sql)
        key, row = sides if released_side(sides[0]) else sides[::-1]
        assert isinstance(key, exp.Column) and isinstance(row, exp.Column)
        if key.name.lower() not in unique:
            raise _refuse(f"the join reads the released column '{key.name}', which is not a GROUP BY key of the joined "
                          "aggregate (a noisy value, or a key the aggregate does not group by)", key, sql)
        pairs.append((key.name, row))
    if {k.lower() for k, _ in pairs} != set(unique):
        raise _refuse("the join equates some of the joined aggregate's GROUP BY keys only: a private row would meet "
                      "several released rows", join, sql)
    # Released columns read anywhere else (outputs, WHERE, GROUP BY, HAVING, ORDER BY). An
    # unqualified ORDER BY name that is an output's alias is that output (SQL resolves it first).
    aliases = {e.alias.lower() for e in select.expressions if isinstance(e, exp.Alias)}
    for column in select.find_all(exp.Column):
        if column.find_ancestor(exp.Join) is not None and column.find_ancestor(exp.Join) is join:
            continue
        if column.find_ancestor(exp.Subquery) is released or column.find_ancestor(exp.Select) is not select:
            continue
        if not column.table and column.name.lower() in aliases and column.find_ancestor(exp.Order) is not None:
            continue
        if released_side(column):
            what = "" if column.table else " (unqualified, it names a released column: qualify the rows' column)"
            raise _refuse(f"the aggregate reads the released column '{column.name}' outside the join's ON{what}", column, sql)
    rows = select.copy()
    for clause in ("order", "limit", "offset", "with_"):
        rows.set(clause, None)
    rest = [j.copy() for k, j in enumerate(joins) if j is not join]
    if index == 0:  # FROM released JOIN t ON ... : t is the FROM item now
        rows.set("from_", exp.From(this=join.this.copy()))
    rows.set("joins", rest or None)
    keys = _group_columns(select)
    items = list(rows.expressions)
    visible = len(items)
    positions: list[tuple[str, int]] = []
    for name, row in pairs:
        if row.name.lower() not in keys:
            raise _refuse(f"the aggregate does not GROUP BY '{row.name}', the column joined with the released keys: "
                          "the join would change what its groups hold", row, sql)
        at = next((i for i, item in enumerate(items[:visible]) if _is_column(item, row.name)), None)
        if at is None:
            at = len(items)
            items.append(exp.alias_(row.copy(), exp.to_identifier(f"{HIDDEN}{len(items) - visible}", quoted=True)))
        positions.append((name, at))
    rows.set("expressions", items)
    order = _outer_order(select, items[:visible], sql)
    return KeyJoin(released, alias, rows, tuple(positions), visible, order, select.args.get("limit"),
                   select.args.get("offset"))


def _refuse(reason: str, node: exp.Expr, sql: str) -> Exception:
    return refuse("DP126", f"private rows joined with released results: {reason}", node, sql,
                  "join the rows to an aggregated subquery ON every one of its GROUP BY keys, and GROUP BY the joined "
                  "column, e.g. SELECT dept, COUNT(*) FROM people JOIN (SELECT dept AS d, COUNT(*) AS n FROM people "
                  "GROUP BY dept ORDER BY n DESC LIMIT 5) t ON dept = t.d GROUP BY dept")


def _released_select(released: exp.Expr, select: exp.Select) -> exp.Select | None:
    """The aggregated SELECT the released FROM item names (a subquery, or a CTE of this query)."""
    if isinstance(released, exp.Subquery):
        alias = released.args.get("alias")
        if alias is not None and alias.columns:
            return None  # t(a, b): renamed columns
        body = released.this
    else:
        body = None
        current: exp.Expr | None = select
        while current is not None and body is None:
            with_ = current.args.get("with_") if isinstance(current, exp.Query) else None
            for cte in with_.expressions if with_ is not None else []:
                if cte.alias.lower() == released.name.lower() and not cte.args["alias"].columns:
                    body = cte.this
            current = current.parent
    return body if isinstance(body, exp.Select) else None


def _unique_keys(body: exp.Select) -> set[str] | None:
    """The output names of the aggregate's GROUP BY keys, when every key is one of its outputs (then
    one released row per tuple of them); None otherwise."""
    group = body.args.get("group")
    if group is None or not group.expressions:
        return None
    items = body.selects
    texts = [(item.this if isinstance(item, exp.Alias) else item).sql(dialect=Dpsql, comments=False).lower() for item in items]
    names: set[str] = set()
    for key in group.expressions:
        if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit() and 1 <= int(key.this) <= len(items):
            names.add(items[int(key.this) - 1].alias_or_name.lower())
            continue
        text = key.sql(dialect=Dpsql, comments=False).lower()
        if text not in texts:
            return None
        names.add(items[texts.index(text)].alias_or_name.lower())
    return names


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    node = node.unnest() if isinstance(node, exp.Paren) else node
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def _group_columns(select: exp.Select) -> set[str]:
    """The names of the bare columns the query groups by (positions resolved)."""
    group = select.args.get("group")
    found: set[str] = set()
    for key in group.expressions if group is not None else []:
        if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit() \
                and 1 <= int(key.this) <= len(select.expressions):
            item = select.expressions[int(key.this) - 1]
            key = item.this if isinstance(item, exp.Alias) else item
        if isinstance(key, exp.Column):
            found.add(key.name.lower())
    return found


def _is_column(item: exp.Expr, name: str) -> bool:
    body = item.this if isinstance(item, exp.Alias) else item
    return isinstance(body, exp.Column) and body.name.lower() == name.lower()


def _outer_order(select: exp.Select, items: list[exp.Expr], sql: str) -> exp.Order | None:
    """ORDER BY over the analyst's outputs: a position or an output's name stays, an expression
    that is an output is ordered by that output's name; anything else is refused."""
    def refused(target: exp.Expr) -> exp.Expr:
        raise _refuse("ORDER BY an expression that is not one of the outputs", target, sql)

    order = outer_order(select, items, [item.alias_or_name for item in items], refused)
    assert order is not False  # `refused` raises rather than give up
    return order

"""Window functions over the aggregates of the same SELECT -> an outer query over the release.

BI tools put windows over a query's own aggregates in one SELECT: Metabase's cumulative sum
`SUM(SUM(total)) OVER (ORDER BY month)` and offset `LAG(SUM(total), 12) OVER (...)`, a share of
the total `COUNT(*) / SUM(COUNT(*)) OVER ()`, `RANK() OVER (ORDER BY COUNT(*) DESC)`. SQL
evaluates windows after GROUP BY and HAVING, over the grouped rows: they are functions of the
released groups, so the query is rewritten to

    SELECT <outputs, windows over hidden columns> FROM (<the aggregated query, windows lifted out>) ORDER BY ...

The inner query is one release (its aggregates and keys, plus each aggregate and key expression a
window reads as a hidden output); the outer query runs over the released rows only
(analysis/post_processing.py), at no extra cost. A window that reads a column that is neither inside an
aggregate nor a GROUP BY key is left alone (DP108 in the one-SELECT path, as before).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from sqlglot import exp

from dpsql.analysis.functions import is_aggregate
from dpsql.frontend.privacy_dialect import Dpsql

INNER = "__dpsql_grouped"  # the outer query's name for the released groups
HIDDEN = "__dpsql_w"


def windows_over_groups(select: exp.Select) -> bool:
    """Whether `select` is aggregated and calls a window function in its outputs or ORDER BY."""
    windows = [w for w in _own_windows(select)]
    if not windows:
        return False
    if select.args.get("group") is not None:
        return True
    return any(is_aggregate(f) for w in windows for f in w.find_all(exp.Func) if f is not w.this) \
        or any(is_aggregate(f) and f.find_ancestor(exp.Window) is None
               for item in select.expressions for f in item.find_all(exp.Func))


def _has_window(body: exp.Expr) -> bool:
    return body.find(exp.Window) is not None


def lift_windows(select: exp.Select, lifts: Callable[[exp.Expr], bool] = _has_window) -> exp.Select | None:  # noqa: C901 - a visitor over each window's parts (aggregates, keys, frames)
    """The outer query over the aggregated query with its windows lifted out; None when a window
    reads a column outside its aggregates and GROUP BY keys (the caller keeps DP108).

    `lifts` says which select items (and HAVING) go to the outer query: those with a window, or
    those with a scalar subquery over released values (analysis/scalar_subqueries.py), which the
    outer query keeps as written (a release of its own there); HAVING it lifts becomes the outer WHERE."""
    keys = _key_texts(select)
    items = list(select.expressions)
    names = [output_name(item) for item in items]
    inner_items: list[exp.Expr] = []
    outer_items: list[exp.Expr] = []
    # An aggregate or key expression's SQL -> the released column holding it: an output that is
    # one already (no aggregate released twice), else a hidden column.
    hidden: dict[str, str] = {}
    for item, name in zip(items, names):
        body = item.this if isinstance(item, exp.Alias) else item
        if not lifts(body):
            hidden.setdefault(body.sql(dialect=Dpsql, comments=False).lower(), name)

    def lift(node: exp.Expr) -> exp.Expr | None:
        """`node` with every aggregate and key expression replaced by a hidden column."""
        if isinstance(node, exp.Subquery):
            return node.copy()  # a scalar subquery: the outer query's own release
        text = node.sql(dialect=Dpsql, comments=False).lower()
        if (_aggregate_call(node) and not isinstance(node.parent, exp.Window)) or (text in keys and node.find(exp.Column)):
            if text not in hidden:
                hidden[text] = f"{HIDDEN}{len(inner_items)}"
                inner_items.append(exp.alias_(node.copy(), exp.to_identifier(hidden[text], quoted=True)))
            return exp.column(exp.to_identifier(hidden[text], quoted=True), table=INNER)
        if isinstance(node, exp.Column):
            return None
        new = node.copy()
        for key, value in list(new.args.items()):
            children = value if isinstance(value, list) else [value]
            lifted = []
            for child in children:
                if isinstance(child, exp.Expr):
                    replaced = lift(child)
                    if replaced is None:
                        return None
                    lifted.append(replaced)
                else:
                    lifted.append(child)
            new.set(key, lifted if isinstance(value, list) else lifted[0])
        return new

    for item, name in zip(items, names):
        alias = exp.to_identifier(name, quoted=True)
        body = item.this if isinstance(item, exp.Alias) else item
        if not lifts(body):
            inner_items.append(exp.alias_(body.copy(), alias))
            outer_items.append(exp.alias_(exp.column(alias.copy(), table=INNER), alias.copy()))
            continue
        lifted = lift(body)
        if lifted is None:
            return None
        outer_items.append(exp.alias_(lifted, alias))
    order = _order(select, items, names, lift)
    if order is False:
        return None
    having = select.args.get("having")
    where = lift(having.this) if having is not None and lifts(having.this) else None
    if having is not None and lifts(having.this) and where is None:
        return None
    inner = select.copy()
    for clause in ("order", "limit", "offset", "with_", *(("having",) if where is not None else ())):
        inner.set(clause, None)
    inner.set("expressions", inner_items)
    outer = exp.select(*outer_items).from_(inner.subquery(INNER))
    if select.args.get("with_") is not None:
        outer.set("with_", select.args["with_"].copy())
    if where is not None:
        outer.set("where", exp.Where(this=where))
    if order is not None:
        outer.set("order", order)
    for clause in ("limit", "offset"):
        if select.args.get(clause) is not None:
            outer.set(clause, select.args[clause].copy())
    return outer


def _aggregate_call(node: exp.Expr) -> bool:
    """An aggregate with its FILTER (WHERE ...) or WITHIN GROUP (ORDER BY ...): released whole."""
    if isinstance(node, (exp.Filter, exp.WithinGroup)):
        return is_aggregate(node.this)
    return is_aggregate(node) and not isinstance(node.parent, (exp.Filter, exp.WithinGroup))


def _own_windows(select: exp.Select) -> list[exp.Window]:
    found = []
    parts = list(select.expressions) + ([select.args["order"]] if select.args.get("order") is not None else [])
    for part in parts:
        for window in part.find_all(exp.Window):
            if window.find_ancestor(exp.Select) is select:
                found.append(window)
    return found


def _key_texts(select: exp.Select) -> set[str]:
    """The SQL of each GROUP BY expression (positions and output aliases resolved)."""
    group = select.args.get("group")
    texts: set[str] = set()
    aliases = {item.alias.lower(): item.this for item in select.expressions if isinstance(item, exp.Alias)}
    for key in group.expressions if group is not None else []:
        if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit() \
                and 1 <= int(key.this) <= len(select.expressions):
            item = select.expressions[int(key.this) - 1]
            key = item.this if isinstance(item, exp.Alias) else item
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in aliases:
            texts.add(key.sql(dialect=Dpsql, comments=False).lower())  # the alias as written, and what it names
            key = aliases[key.name.lower()]
        texts.add(key.sql(dialect=Dpsql, comments=False).lower())
    return texts


def output_texts(items: list[exp.Expr]) -> list[str]:
    """Each output's expression as ORDER BY compares it (alias removed, lower case)."""
    return [(item.this if isinstance(item, exp.Alias) else item).sql(dialect=Dpsql, comments=False).lower() for item in items]


def ordered_output(target: exp.Expr, names: list[str], texts: list[str]) -> int | None:
    """The output an ORDER BY item names (an unqualified output name, or an output's expression)."""
    lowered = [n.lower() for n in names]
    if isinstance(target, exp.Column) and not target.table and target.name.lower() in lowered:
        return lowered.index(target.name.lower())
    text = target.sql(dialect=Dpsql, comments=False).lower()
    return texts.index(text) if text in texts else None


def _order(select: exp.Select, items: list[exp.Expr], names: list[str], lift: object) -> exp.Order | None | bool:
    """The outer ORDER BY: positions stay, an output's name or expression orders by that output,
    a name that is no output stays (the outer query refuses it: DP111, with the released columns),
    anything else is lifted like a window's argument (False when it cannot be)."""
    assert callable(lift)
    return outer_order(select, items, names,
                       lambda target: target.copy() if isinstance(target, exp.Column) and not target.table else lift(target))


def outer_order(select: exp.Select, items: list[exp.Expr], names: list[str],
                other: Callable[[exp.Expr], exp.Expr | None]) -> exp.Order | Literal[False] | None:
    """ORDER BY of a query lifted over its outputs: a position stays, an output's name or
    expression orders by that output's name, anything else becomes `other(target)` (None: the
    order cannot be lifted, False is returned). No ORDER BY: None."""
    order = select.args.get("order")
    if order is None:
        return None
    texts = output_texts(items)
    out = []
    for ordered in order.expressions:
        target = ordered.this
        new = ordered.copy()
        if isinstance(target, exp.Literal) and not target.is_string and target.this.isdigit():
            out.append(new)
            continue
        index = ordered_output(target, names, texts)
        replacement = exp.column(exp.to_identifier(names[index], quoted=True)) if index is not None else other(target)
        if replacement is None:
            return False
        new.set("this", replacement)
        out.append(new)
    return exp.Order(expressions=out)


def output_name(item: exp.Expr) -> str:
    """The name the one-SELECT path gives an output (analysis/bind.py)."""
    if isinstance(item, exp.Alias):
        return item.alias
    if isinstance(item, exp.Column):
        return item.name
    return item.sql(dialect=Dpsql)

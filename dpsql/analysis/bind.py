"""Bind a validated SELECT to a BoundQuery: keys, aggregates, outputs, post-processing clauses."""

from __future__ import annotations

from fractions import Fraction

from sqlglot import exp

from dpsql.accounting.cost import PrivacyCost, to_fraction
from dpsql.analysis.context import AnalysisContext, Scope, refuse
from dpsql.catalog.model import Column
from dpsql.errors import InvalidOptionError
from dpsql.frontend.dialect import Dpsql, PrivacyOptions
from dpsql.frontend.spans import keyword_span, span_of
from dpsql.ir.query import AggregateCall, BoundQuery, GroupKey, OrderItem, OutputColumn, agg_name, key_name

QUERY_OPTIONS = frozenset({"epsilon", "delta"})


def bind_select(select: exp.Select, scope: Scope, ctx: AnalysisContext, sql: str) -> BoundQuery:
    """Turn a SELECT that passed the rules into a BoundQuery."""
    budget, explicit = _options(select, ctx, sql)
    keys = _group_keys(select, scope, sql)
    aggregates: list[AggregateCall] = []
    outputs = tuple(_output(item, keys, aggregates, scope, sql) for item in select.expressions)
    if not aggregates and not keys:
        raise refuse("DP105", "a query over a private table must aggregate", select.expressions[0], sql,
                     "wrap columns in COUNT, SUM or AVG, or GROUP BY them")
    having = select.args.get("having")
    having_expr = _post_expr(having.this, keys, aggregates, outputs, scope, sql) if having else None
    order = _order(select, keys, aggregates, outputs, scope, sql)
    where = select.args.get("where")
    return BoundQuery(
        sql=sql,
        table=scope.table,
        where=_strip_qualifiers(where.this) if where else None,
        keys=tuple(GroupKey(column=c) for c in keys),
        aggregates=tuple(aggregates),
        outputs=outputs,
        having=having_expr,
        order=order,
        limit=_int_clause(select, "limit", sql),
        offset=_int_clause(select, "offset", sql),
        budget=budget,
        explicit_budget=explicit,
    )


def _options(select: exp.Select, ctx: AnalysisContext, sql: str) -> tuple[PrivacyCost, bool]:
    hint = select.args.get("hint")
    if not isinstance(hint, PrivacyOptions):
        return ctx.default_budget, False
    values = {"epsilon": ctx.default_budget.epsilon, "delta": ctx.default_budget.delta}
    for item in hint.expressions:
        name = item.this.name.lower()
        if name not in QUERY_OPTIONS:
            raise InvalidOptionError(f"unknown privacy option '{name}'", code="DP120", span=span_of(item, sql), sql=sql,
                                     hint=f"options: {', '.join(sorted(QUERY_OPTIONS))}")
        values[name] = option_number(item.expression, name, sql)
    return check_budget_values(values["epsilon"], values["delta"], sql), True


def option_number(node: exp.Expr, name: str, sql: str) -> Fraction:
    """The exact number a privacy option or setting is set to."""
    negative = isinstance(node, exp.Neg)
    inner = node.this if negative else node
    if not isinstance(inner, exp.Literal) or inner.is_string:
        raise InvalidOptionError(f"'{name}' must be set to a number", code="DP120", span=span_of(node, sql), sql=sql)
    value = to_fraction(inner.this)
    return -value if negative else value


def check_budget_values(epsilon: Fraction, delta: Fraction, sql: str) -> PrivacyCost:
    """A per-query budget, refused unless epsilon > 0 and 0 <= delta < 1."""
    if epsilon <= 0:
        raise InvalidOptionError("epsilon must be greater than 0", code="DP120", sql=sql, hint="e.g. epsilon = 0.1")
    if not 0 <= delta < 1:
        raise InvalidOptionError("delta must be in [0, 1)", code="DP120", sql=sql, hint="e.g. delta = 1e-8")
    return PrivacyCost(epsilon, delta)


def _group_keys(select: exp.Select, scope: Scope, sql: str) -> list[Column]:
    group = select.args.get("group")
    if group is None:
        return []
    keys: list[Column] = []
    for item in group.expressions:
        column = _key_column(item, select, scope, sql)
        if column.name == scope.table.privacy_unit:
            raise refuse("DP107", "GROUP BY the privacy unit would release one group per person", item, sql,
                         "group by a column that many people share")
        if column not in keys:
            keys.append(column)
    return keys


def _key_column(item: exp.Expr, select: exp.Select, scope: Scope, sql: str) -> Column:
    target = item
    if isinstance(item, exp.Literal) and not item.is_string:
        position = int(item.this) if item.this.isdigit() else 0  # GROUP BY 1.5 is no position either
        if not 1 <= position <= len(select.expressions):
            raise refuse("DP114", f"GROUP BY {item.this} is not a position in the select list", item, sql,
                         "number select items from 1", span=keyword_span(sql, "GROUP"))
        target = select.expressions[position - 1]
    elif isinstance(item, exp.Column) and not item.table:
        aliased = next((e for e in select.expressions if isinstance(e, exp.Alias) and e.alias.lower() == item.name.lower()), None)
        if aliased is not None and scope.table.column(item.name) is None:
            target = aliased
    target = target.this if isinstance(target, exp.Alias) else target
    if not isinstance(target, exp.Column):
        raise refuse("DP114", "GROUP BY accepts columns (or their positions) only", item, sql,
                     "group by a column of the policy", span=span_of(item, sql) or keyword_span(sql, "GROUP"))
    column = scope.table.column(target.name)
    assert column is not None  # DP111 ran before binding
    return column


def _aggregate(node: exp.AggFunc, scope: Scope, sql: str) -> AggregateCall:
    text = node.sql(dialect=Dpsql)
    arg = node.this
    if isinstance(node, exp.Count):
        if isinstance(arg, exp.Star) or (isinstance(arg, exp.Literal) and not isinstance(arg, exp.Null)):
            return AggregateCall(kind="count_rows", column=None, text=text)
        if isinstance(arg, exp.Distinct):
            inner = arg.expressions
            if len(inner) == 1 and isinstance(inner[0], exp.Column) and inner[0].name.lower() == scope.table.privacy_unit:
                return AggregateCall(kind="count_units", column=scope.table.column(inner[0].name), text=text)
            raise refuse("DP116", "COUNT(DISTINCT ...) is accepted on the privacy unit only", node, sql,
                         f"count people with COUNT(DISTINCT {scope.table.privacy_unit}), or GROUP BY the column")
        column = _plain_column(arg, node, scope, sql)
        return AggregateCall(kind="count", column=column, text=text)
    column = _plain_column(arg, node, scope, sql)
    kind = "sum" if isinstance(node, exp.Sum) else "avg"
    if not column.numeric:
        raise refuse("DP117", f"{kind.upper()} needs a numeric column; '{column.name}' is {column.type}", node, sql,
                     "sum or average an int or float column")
    if not column.bounded:
        raise refuse("DP106", f"{kind.upper()}({column.name}) needs public bounds for '{column.name}'", node, sql,
                     f"declare lower and upper for {column.name} under [tables.{scope.table.name}.columns] in the policy")
    return AggregateCall(kind=kind, column=column, text=text)


def _plain_column(arg: exp.Expr | None, node: exp.Expr, scope: Scope, sql: str) -> Column:
    if isinstance(arg, exp.Distinct):
        raise refuse("DP116", "DISTINCT inside SUM/AVG is not accepted", node, sql, "aggregate the column without DISTINCT")
    if not isinstance(arg, exp.Column):
        raise refuse("DP115", "an aggregate's argument must be a column of the policy", node, sql,
                     "aggregate a column; filter or transform rows in WHERE")
    column = scope.table.column(arg.name)
    assert column is not None
    return column


def _replace(node: exp.Expr, keys: list[Column], aggregates: list[AggregateCall], scope: Scope, sql: str,
             outputs: tuple[OutputColumn, ...] = ()) -> exp.Expr:
    """Copy `node` with aggregates -> __a<j>, key columns -> __k<i>; other columns are refused."""

    def visit(sub: exp.Expr) -> exp.Expr:
        if isinstance(sub, exp.AggFunc):
            call = _aggregate(sub, scope, sql)
            if call not in aggregates:
                aggregates.append(call)
            return exp.column(agg_name(aggregates.index(call)))
        if isinstance(sub, exp.Column):
            by_alias = next((o for o in outputs if o.name.lower() == sub.name.lower() and not sub.table), None)
            if by_alias is not None and scope.table.column(sub.name) is None:
                return by_alias.expr.copy()
            column = scope.table.column(sub.name)
            if column is not None and column in keys:
                return exp.column(key_name(keys.index(column)))
            raise refuse("DP105", f"'{sub.sql()}' is neither aggregated nor a GROUP BY column", sub, sql,
                         f"wrap it in an aggregate such as COUNT({sub.name}), or add it to GROUP BY")
        return sub

    return node.copy().transform(visit)


def _output(item: exp.Expr, keys: list[Column], aggregates: list[AggregateCall], scope: Scope, sql: str) -> OutputColumn:
    body = item.this if isinstance(item, exp.Alias) else item
    expr = _replace(body, keys, aggregates, scope, sql)
    if isinstance(item, exp.Alias):
        name = item.alias
    elif isinstance(body, exp.Column):
        name = body.name
    else:
        name = body.sql(dialect=Dpsql)
    key = int(expr.name[3:]) if isinstance(expr, exp.Column) and expr.name.startswith("__k") else None
    used = tuple(sorted({int(c.name[3:]) for c in expr.find_all(exp.Column) if c.name.startswith("__a")}))
    return OutputColumn(name=name, expr=expr, key=key, aggregates=used)


def _post_expr(node: exp.Expr, keys: list[Column], aggregates: list[AggregateCall], outputs: tuple[OutputColumn, ...],
               scope: Scope, sql: str) -> exp.Expr:
    return _replace(node, keys, aggregates, scope, sql, outputs)


def _order(select: exp.Select, keys: list[Column], aggregates: list[AggregateCall], outputs: tuple[OutputColumn, ...],
           scope: Scope, sql: str) -> tuple[OrderItem, ...]:
    order = select.args.get("order")
    if order is None:
        return ()
    items = []
    for ordered in order.expressions:
        target = ordered.this
        if isinstance(target, exp.Literal) and not target.is_string:
            position = int(target.this) if target.this.isdigit() else 0  # ORDER BY 1.5 is no position either
            if not 1 <= position <= len(outputs):
                raise refuse("DP114", f"ORDER BY {target.this} is not a position in the select list", ordered, sql,
                             "number select items from 1", span=keyword_span(sql, "ORDER"))
            expr = outputs[position - 1].expr.copy()
        else:
            expr = _post_expr(target, keys, aggregates, outputs, scope, sql)
        nulls_first = ordered.args.get("nulls_first")
        items.append(OrderItem(expr=expr, descending=bool(ordered.args.get("desc")), nulls_first=nulls_first))
    return tuple(items)


def _int_clause(select: exp.Select, name: str, sql: str) -> int | None:
    clause = select.args.get(name)
    if clause is None:
        return None
    value = clause.expression if isinstance(clause, (exp.Limit, exp.Offset)) else clause
    if isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit():
        return int(value.this)
    raise refuse("DP119", f"{name.upper()} takes a non-negative integer literal", clause, sql,
                 f"write {name.upper()} 10", span=keyword_span(sql, name.upper()))


def _strip_qualifiers(node: exp.Expr) -> exp.Expr:
    def visit(sub: exp.Expr) -> exp.Expr:
        if isinstance(sub, exp.Column) and sub.table:
            return exp.column(sub.name)
        return sub

    return node.copy().transform(visit)

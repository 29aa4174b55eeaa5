"""Uncorrelated scalar subqueries over private rows: a release first, then a typed constant.

    SELECT dept, COUNT(*) FROM people WHERE income > (SELECT AVG(income) FROM people) GROUP BY dept

The subquery (one aggregated row: no GROUP BY, one output, nothing read from the outer query) is
a release of its own, answered first (noise and all); its value is then public (post-processing).
Where the value meets rows (WHERE, an aggregate's argument or FILTER, a GROUP BY key, inside a
row-level subquery or CTE), the query that reads it is a second release whose engine statements
take the value as a typed parameter, `CAST($dpsql_scalar0 AS DOUBLE)`, never as SQL text: that
release's plan, dry runs and sensitivity are the same whatever the value (a row filter against a
constant). Where it meets released values (SELECT, HAVING and ORDER BY outside aggregates), the
aggregated query is lifted into an outer query over its release (analysis/window_lift.py), where
the subquery is one more release read by post-processing. Either way the statement is charged
once, for the sum of its releases, before any of them reads data (analysis/post_processing.py,
execution/executor.py).

Refused before the charge (DP110): a correlated subquery, one that returns several columns or
one row per group, a row-level one (it would compare rows with one person's value), and one
whose value is not one aggregate or arithmetic over numeric aggregates (no type to give it).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify

from dpsql.aggregates import registry
from dpsql.analysis.context import refuse
from dpsql.analysis.functions import is_aggregate
from dpsql.catalog.policy import ENGINE_TYPES, Policy, Table
from dpsql.frontend.privacy_dialect import Dpsql
from dpsql.ir.query import AggregateCall, BoundQuery, ColumnRef

PREFIX = "dpsql_scalar"  # engine parameters `$dpsql_scalar<i>` (the analyst's own are bound as literals at parse time)

ACCEPTED = ("dpsql takes an uncorrelated scalar subquery that returns one aggregated value, e.g. "
            "WHERE income > (SELECT AVG(income) FROM people): it is released first and compared as a constant")
_NO_ROWS = ("(SELECT ...) must return one row and one column: one aggregate (or arithmetic over aggregates), "
            "no GROUP BY, e.g. (SELECT AVG(income) FROM people)")
_NUMERIC_FUNCTIONS = (exp.Round, exp.Abs, exp.Floor, exp.Ceil, exp.Sqrt, exp.Ln, exp.Log, exp.Exp, exp.Pow,
                      exp.Greatest, exp.Least, exp.Coalesce)
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.Neg, exp.Paren)
_NUMERIC_TYPES = frozenset({"DOUBLE", "FLOAT", "INT", "BIGINT", "SMALLINT", "TINYINT", "DECIMAL", "HUGEINT"})


def parameter_name(index: int) -> str:
    """The engine parameter of the statement's scalar subquery `index`."""
    return f"{PREFIX}{index}"


def is_scalar(node: exp.Expr) -> bool:
    """A subquery used as a value: not a FROM or JOIN item, a CTE, a set operation's branch, or
    the query of IN, EXISTS, ANY or ALL."""
    if not isinstance(node, exp.Subquery):
        return False
    parent = node.parent
    if isinstance(parent, (exp.From, exp.Join, exp.Exists, exp.Any, exp.All, exp.CTE, exp.SetOperation, exp.Lateral,
                           exp.Subquery, exp.Table)):
        return False
    return not (isinstance(parent, exp.In) and parent.args.get("query") is node)


def scalar_subqueries(node: exp.Expr) -> list[exp.Subquery]:
    """The outermost scalar subqueries in `node` (itself included), in tree order."""
    if is_scalar(node):
        assert isinstance(node, exp.Subquery)
        return [node]
    found: list[exp.Subquery] = []
    stack = [node]
    while stack:
        current = stack.pop()
        for child in reversed(list(current.iter_expressions())):
            if is_scalar(child):
                found.append(child)  # type: ignore[arg-type]
            else:
                stack.append(child)
    found.sort(key=lambda s: _order_of(node, s))
    return found


def _order_of(root: exp.Expr, node: exp.Expr) -> int:
    for index, current in enumerate(root.walk(bfs=False)):
        if current is node:
            return index
    return 0


def post_scalars(select: exp.Select) -> list[exp.Subquery]:
    """The scalar subqueries of `select` that read released values: in its SELECT list outside
    aggregates (an item that is not a GROUP BY key expression), HAVING and ORDER BY. The
    others (WHERE, aggregate arguments, key expressions, inside subqueries in FROM) meet rows."""
    found: list[exp.Subquery] = []
    for item in select.expressions:
        subs = [s for s in scalar_subqueries(item) if not _in_aggregate(s, item)]
        if subs and not _key_item(item):
            found.extend(subs)
    for clause in ("having", "order", "qualify"):
        part = select.args.get(clause)
        if part is not None:
            found.extend(s for s in scalar_subqueries(part) if not _in_aggregate(s, part))
    return found


def _in_aggregate(node: exp.Expr, top: exp.Expr) -> bool:
    current = node.parent
    while current is not None and current is not top.parent:
        if is_aggregate(current) or isinstance(current, (exp.Filter, exp.WithinGroup)):
            return True
        current = current.parent
    return False


def _key_item(item: exp.Expr) -> bool:
    """A select item that reads a column and no aggregate outside its scalar subqueries: a GROUP BY
    key expression, computed per row (`income > (SELECT AVG(income) FROM people) AS above`)."""
    column = aggregate = False
    subs = scalar_subqueries(item)
    for node in item.walk():
        if any(within(node, s) for s in subs):
            continue
        column = column or isinstance(node, exp.Column)
        aggregate = aggregate or is_aggregate(node)
    return column and not aggregate


def within(node: exp.Expr, ancestor: exp.Expr) -> bool:
    current: exp.Expr | None = node
    while current is not None:
        if current is ancestor:
            return True
        current = current.parent
    return False


def check_scalar(sub: exp.Subquery, statement: exp.Expr, policy: Policy, sql: str,
                 aggregated: Callable[[exp.Select], bool]) -> exp.Select:
    """The SELECT of an accepted scalar subquery; DP110 (before any release is planned) when it
    returns several columns or rows, is row-level, or reads the outer query's columns."""
    body = sub.this
    while isinstance(body, exp.Subquery):
        body = body.this
    if not isinstance(body, exp.Select):
        raise refuse("DP110", "a scalar subquery is one SELECT: a set operation returns several rows", sub, sql, _NO_ROWS)
    outputs = body.expressions
    if len(outputs) != 1 or outputs[0].is_star:
        raise refuse("DP110", f"a scalar subquery returns {'all columns' if outputs[0].is_star else f'{len(outputs)} columns'}: "
                     "it must return one value", sub, sql, _NO_ROWS)
    if body.args.get("from_") is None:
        raise refuse("DP110", "a scalar subquery without FROM computes a constant: write the value itself", sub, sql, _NO_ROWS)
    if body.args.get("group") is not None:
        raise refuse("DP110", "a scalar subquery with GROUP BY returns one row per group, not one value", sub, sql, _NO_ROWS)
    if not aggregated(body):
        raise refuse("DP110", "a row-level scalar subquery returns a row's value, which is not released: compare with an "
                     "aggregate over the rows", sub, sql, _NO_ROWS)
    outer = outer_reference(body, statement, policy)
    if outer is not None:
        raise correlated(outer, sql)
    return body


def correlated(outer: exp.Column, sql: str) -> Exception:
    """DP110 for a subquery over private rows that reads a column of the outer query."""
    return refuse("DP110", f"a correlated subquery (it reads '{outer.sql(dialect=Dpsql)}' of the outer query) would be "
                  "computed for each outer row over private rows without noise", outer, sql,
                  "an uncorrelated scalar subquery is released first and compared as a constant: (SELECT AVG(income) FROM "
                  "people); for a value per group, aggregate by that group in a subquery in FROM and join it ON the group key")


def outer_reference(body: exp.Select, statement: exp.Expr, policy: Policy) -> exp.Column | None:
    """A column of `body` that names the outer query (a qualifier that is none of its own tables,
    subqueries and CTEs, or an unqualified name that none of its tables has and an outer table
    has); None when every column is its own (or unknown: the subquery's own analysis says so)."""
    qualifiers, columns, known = _own_names(body, policy)
    outside: set[str] = set()
    for table in statement.find_all(exp.Table):
        found = policy.table(table.name) if isinstance(table.this, exp.Identifier) and not within(table, body) else None
        outside.update(c.lower() for c in (found.columns if found is not None else ()))
    for column in body.find_all(exp.Column):
        if isinstance(column.this, exp.Star):
            continue
        if column.table:
            if column.table.lower() not in qualifiers:
                return column
        elif known and column.name.lower() not in columns and column.name.lower() in outside:
            return column
    return None


def _own_names(body: exp.Select, policy: Policy) -> tuple[set[str], set[str], bool]:
    """The qualifiers and column names `body` defines itself, and whether those columns are all
    its sources expose (False when it reads a CTE of the statement or a view: not read here)."""
    qualifiers: set[str] = set()
    columns: set[str] = set()
    known = True
    for table in body.find_all(exp.Table):
        qualifiers.add(table.alias_or_name.lower())  # an aliased table's own name is the outer query's (SQL)
        found = policy.table(table.name) if isinstance(table.this, exp.Identifier) else None
        known = known and found is not None
        columns.update(c.lower() for c in (found.columns if found is not None else ()))
    qualifiers.update(node.alias.lower() for node in body.find_all(exp.Subquery, exp.CTE) if node.alias)
    for select in body.find_all(exp.Select):
        columns.update(item.alias_or_name.lower() for item in select.expressions)
    return qualifiers, columns, known


def parameter_type(bound: BoundQuery) -> str | None:
    """The DuckDB type of a scalar release's one value: an aggregate's own (a MODE's column type, a
    MEDIAN of dates a DATE, any other a number as DOUBLE), arithmetic over numeric aggregates a
    DOUBLE; None for anything else (no type dpsql can give it before it is released)."""
    if len(bound.outputs) != 1 or bound.keys:
        return None
    output = bound.outputs[0]
    if output.aggregate is not None:
        return _aggregate_type(bound.aggregates[output.aggregate])
    return "DOUBLE" if _numeric(output.expr, bound) else None


def public_type(select: exp.Expr, tables: tuple[Table, ...]) -> str | None:
    """The DuckDB type of a scalar subquery over public tables (a number as DOUBLE), from the
    policy's column types; None when dpsql cannot tell it."""
    schema: dict[str, object] = {t.name: {c: ENGINE_TYPES[column.type] for c, column in t.columns.items()} for t in tables}
    try:
        typed = annotate_types(qualify(select.copy(), schema=schema, dialect="duckdb"), schema=schema, dialect="duckdb")
    except SqlglotError:
        return None
    kind = typed.selects[0].type if isinstance(typed, exp.Select) and typed.selects else None
    if kind is None:
        return None
    if kind.is_type(*exp.DataType.NUMERIC_TYPES):
        return "DOUBLE"
    if kind.is_type(*exp.DataType.TEXT_TYPES):
        return "VARCHAR"
    return next((name for name in ("DATE", "TIMESTAMP", "BOOLEAN") if kind.is_type(name)), None)


def _aggregate_type(call: AggregateCall) -> str:
    return registry.for_call(call).value_type(call)


def _numeric(node: exp.Expr, bound: BoundQuery) -> bool:
    ref = ColumnRef.of(node)
    if ref is not None:
        return ref.kind == "aggregate" and _aggregate_type(bound.aggregates[ref.index]) == "DOUBLE"
    if isinstance(node, exp.Literal):
        return not node.is_string
    if isinstance(node, exp.Cast):
        return node.to.this.name in _NUMERIC_TYPES and _numeric(node.this, bound)
    if isinstance(node, (*_ARITHMETIC, *_NUMERIC_FUNCTIONS)):
        return all(_numeric(child, bound) for child in node.iter_expressions())
    return False


def placeholder(name: str, type_name: str) -> exp.Cast:
    """The typed engine parameter that stands for a scalar subquery's released value."""
    return exp.Cast(this=exp.Placeholder(this=name), to=exp.DataType.build(type_name))

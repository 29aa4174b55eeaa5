"""The ordered rule checks (grammar/semantic_rules.md). Each is pure and raises on the first breach.

Rules see a SELECT over one table (DP101-DP103 run first, in `statement_rules`) and a Scope.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from dpsql.analysis.context import AnalysisContext, Scope, refuse
from dpsql.analysis.function_arguments import check_bounded_expressions
from dpsql.analysis.functions import (
    FORBIDDEN_NAMES,
    INTERVAL_FUNCTIONS,
    RANDOM_NAMES,
    allowed_aggregate,
    function_name,
    is_aggregate,
    scalar_allowed,
)
from dpsql.analysis.group_domains import listed_keys
from dpsql.catalog.policy import Table
from dpsql.errors import UnknownColumnError, UnknownTableError
from dpsql.frontend.spans import keyword_span, span_of

_STATEMENT_WORDS = {
    exp.Insert: "INSERT", exp.Update: "UPDATE", exp.Delete: "DELETE", exp.Create: "CREATE",
    exp.Drop: "DROP", exp.Alter: "ALTER", exp.Copy: "COPY", exp.Attach: "ATTACH",
    exp.Detach: "DETACH", exp.Pragma: "PRAGMA", exp.Install: "INSTALL", exp.Command: "this command",
}


def check_DP102_statement_kind(tree: exp.Expr, sql: str) -> None:
    """DP102: only SELECT (with EXPLAIN) and SET dpsql.* are accepted; no DDL, DML or engine commands."""
    if isinstance(tree, (exp.Select, exp.Set)):
        return
    if isinstance(tree, (exp.Union, exp.Intersect, exp.Except)):
        raise refuse("DP110", "set operations (UNION, INTERSECT, EXCEPT) are not accepted", None, sql,
                     "ask one SELECT at a time", span=keyword_span(sql, type(tree).__name__.upper()))
    word = next((w for cls, w in _STATEMENT_WORDS.items() if isinstance(tree, cls)), type(tree).__name__.upper())
    first = sql.strip().split(None, 1)[0] if sql.strip() else word
    raise refuse("DP102", f"{first.upper()} statements are not accepted: dpsql answers SELECT queries only",
                 None, sql, "write a SELECT with COUNT, SUM or AVG over a table of the policy",
                 span=keyword_span(sql, first))


# DP110 for a subquery where dpsql takes none: the same words wherever it is found.
SUBQUERY_REFUSED = ("this subquery is not accepted here: dpsql takes subqueries in FROM, [NOT] EXISTS (SELECT ...) and col "
                    "[NOT] IN (SELECT ...) in WHERE, and uncorrelated scalar subqueries over private rows")
SUBQUERY_HINT = ("EXISTS and IN may read a public table, or a private table correlated on the privacy unit; a scalar subquery "
                 "that returns one aggregated value, e.g. WHERE income > (SELECT AVG(income) FROM people), is released first and "
                 "compared as a constant")


def check_DP110_single_select(select: exp.Select, sql: str) -> None:
    """DP110: one table, no joins, no CTEs, no subqueries, no set operations."""
    if select.args.get("with_"):
        raise refuse("DP110", "WITH (common table expressions) is not accepted yet", None, sql,
                     "put the filter in the WHERE clause of a single SELECT", span=keyword_span(sql, "WITH"))
    if select.args.get("joins") or select.args.get("laterals"):
        raise refuse("DP110", "joins are not accepted yet: a query reads one table", select.args["joins"][0]
                     if select.args.get("joins") else None, sql, "query one table at a time", span=keyword_span(sql, "JOIN"))
    for node in select.find_all(exp.Subquery, exp.Select, exp.Union, exp.Exists):
        if node is not select:
                raise refuse("DP110", SUBQUERY_REFUSED, node, sql, SUBQUERY_HINT, span=span_of(node, sql) or keyword_span(sql, "SELECT"))
    sample = select.find(exp.TableSample)
    if sample is not None:
        # Sampling inside the engine would be randomness the mechanism does not account for, and
        # dropping it silently would answer another question than the one asked.
        raise refuse("DP110", "sampling (USING SAMPLE, TABLESAMPLE) is not accepted", sample, sql,
                     "query the whole table: the noise already protects every person",
                     span=keyword_span(sql, "SAMPLE") or keyword_span(sql, "TABLESAMPLE"))
    from_ = select.args.get("from_")
    if from_ is None:
        raise refuse("DP103", "the query reads no table", None, sql, "add FROM <table> naming a table of the policy",
                     span=keyword_span(sql, "SELECT"))
    if len(from_.expressions or []) > 0:
        raise refuse("DP110", "a query reads one table", from_, sql, "query one table at a time")


def resolve_table(select: exp.Select, ctx: AnalysisContext, sql: str) -> Scope:
    """DP103: the FROM item is a plain name of a table declared in the policy."""
    source = select.args["from_"].this
    if not isinstance(source, exp.Table) or not isinstance(source.this, exp.Identifier) or source.args.get("db"):
        name = function_name(source.this) if isinstance(source, exp.Table) and isinstance(source.this, exp.Func) else None
        what = f"the table function {name}()" if name else "a file path, function or subquery in FROM"
        raise refuse("DP103", f"{what} is outside the policy", source, sql,
                     "read a table declared in the policy by its name",
                     span=span_of(source, sql) or (span_of(source.this, sql) if source.this is not None else None))
    ident = source.this
    name = ident.name
    if ident.quoted and any(ch in name for ch in "./\\'"):
        raise refuse("DP103", "file paths are outside the policy", source, sql,
                     "read a table declared in the policy by its name")
    table = ctx.policy.table(name)
    if table is None:
        known = ", ".join(sorted(ctx.policy.tables))
        raise UnknownTableError(f"table '{name}' is not in the policy", code="DP103", span=span_of(source, sql),
                                sql=sql, hint=f"tables you may query: {known}")
    alias = source.alias_or_name
    return Scope(table=table, names=frozenset({name.lower(), alias.lower()}))


def check_DP104_no_star(select: exp.Select, scope: Scope, sql: str) -> None:
    """DP104: SELECT * (or t.*) would release rows."""
    for star in select.find_all(exp.Star):
        if not isinstance(star.parent, exp.Count):
            raise refuse("DP104", "SELECT * would release individual rows", star, sql,
                         "select aggregates such as COUNT(*), SUM(col) or AVG(col), grouped by columns")


def check_DP108_no_window(select: exp.Select, scope: Scope, sql: str) -> None:
    """DP108: window functions and QUALIFY compute over individual rows."""
    window = select.find(exp.Window)
    if window is not None or select.args.get("qualify"):
        raise refuse("DP108", "window functions are not accepted over private rows", window, sql,
                     "use GROUP BY with aggregates instead",
                     span=(span_of(window, sql) or keyword_span(sql, "OVER")) if window is not None else keyword_span(sql, "QUALIFY"))


def check_DP111_columns_known(select: exp.Select, scope: Scope, sql: str) -> None:
    """DP111: every column is declared in the policy and belongs to the query's table."""
    aliases = {e.alias.lower() for e in select.expressions if isinstance(e, exp.Alias)}
    for column in select.find_all(exp.Column):
        if column.table and column.table.lower() not in scope.names:
            raise UnknownColumnError(f"'{column.sql()}' refers to a table the query does not read", code="DP111",
                                     span=span_of(column, sql), sql=sql, hint="qualify columns with the table in FROM")
        if scope.table.column(column.name) is None and not _alias_use(column, aliases):
            known = ", ".join(scope.table.columns)
            raise UnknownColumnError(f"column '{column.name}' is not in the policy for table '{scope.table.name}'",
                                     code="DP111", span=span_of(column, sql), sql=sql, hint=f"columns you may use: {known}")


def _alias_use(column: exp.Column, aliases: set[str]) -> bool:
    # Output aliases may be named in HAVING, ORDER BY and GROUP BY, never in WHERE or inside aggregates.
    if column.table or column.name.lower() not in aliases:
        return False
    clause = column.find_ancestor(exp.Where, exp.AggFunc, exp.Having, exp.Order, exp.Group)
    return isinstance(clause, (exp.Having, exp.Order, exp.Group))


def check_DP113_functions(select: exp.Select, scope: Scope, sql: str) -> None:
    """DP113: only allowlisted deterministic scalar functions; no I/O, randomness or error()."""
    check_functions(select, sql)


def check_functions(tree: exp.Expr, sql: str) -> None:
    """DP113 over any tree (a query, or the body of a subquery or CTE)."""
    for func in tree.find_all(exp.Func):
        if is_aggregate(func):
            continue
        name = function_name(func)
        if name in INTERVAL_FUNCTIONS:
            continue  # CI95(agg) and its ends: checked when bound (DP146)
        if name in RANDOM_NAMES:
            raise refuse("DP113", f"the function {name}() is not accepted: it is random, and the engine that would draw it "
                         "draws once per row or group it visits, so its later draws would depend on how many rows and "
                         "groups the private data hold; dpsql's noise comes only from its own secure sampler",
                         func, sql, f"leave {name}() out of the query and draw random values in your own code from the "
                         "released result (post-processing a release costs no privacy)")
        if name in FORBIDDEN_NAMES:
            raise refuse("DP113", f"the function {name}() is not accepted (it reads outside the policy, raises or is random)",
                         func, sql, "use the allowlisted scalar functions listed in grammar/semantic_rules.md")
        if not scalar_allowed(func):
            raise refuse("DP113", f"the function {name}() is not on dpsql's allowlist", func, sql,
                         "use arithmetic, CASE, CAST, COALESCE, string and date functions from grammar/semantic_rules.md")


def check_DP125_bounded_arguments(select: exp.Select, scope: Scope, sql: str) -> None:
    """DP125: constant patterns, formats and sizes; no expression that could build a huge string."""
    check_bounded_expressions(select, sql)


def check_DP109_aggregates(select: exp.Select, scope: Scope, sql: str) -> None:
    """DP109: COUNT, SUM, AVG, MEDIAN/QUANTILE/PERCENTILE_DISC, IQR and MODE have mechanisms; MIN, MAX and the rest are refused."""
    for node in select.find_all(exp.Func):
        if is_aggregate(node) and not allowed_aggregate(node):
            name = function_name(node).upper()
            hint = ("use MEDIAN, QUANTILE(col, p), quantile_cont(col, p) or PERCENTILE_CONT(p) WITHIN GROUP (ORDER BY col): "
                    "dpsql releases a DP estimate of the p-quantile"
                    if name.lower() == "reservoir_quantile" else
                    "use COUNT, SUM, AVG, MEDIAN, QUANTILE, IQR or MODE (a MIN/MAX of private values cannot be released with noise)")
            raise refuse("DP109", f"{name} has no differentially private mechanism in dpsql", node, sql, hint)


def check_DP112_aggregate_placement(select: exp.Select, scope: Scope, sql: str) -> None:
    """DP112: no aggregates in WHERE or GROUP BY, and no aggregate inside another."""
    for clause in ("where", "group"):
        part = select.args.get(clause)
        if part is not None:
            agg = next((f for f in part.find_all(exp.Func) if is_aggregate(f)), None)
            if agg is not None:
                raise refuse("DP112", f"aggregates are not allowed in {clause.upper()}", agg, sql,
                             "filter aggregates with HAVING, after noise")
    for agg in select.find_all(exp.Func):
        if not is_aggregate(agg):
            continue
        inner = next((f for a in agg.iter_expressions() for f in a.find_all(exp.Func) if is_aggregate(f)), None)
        if inner is not None:
            raise refuse("DP112", "an aggregate inside another aggregate is not accepted", inner, sql,
                         "aggregate the column directly")


def check_DP121_no_distinct_select(select: exp.Select, scope: Scope, sql: str) -> None:
    """DP121: SELECT DISTINCT over a private table; use GROUP BY to release keys."""
    if select.args.get("distinct"):
        raise refuse("DP121", "SELECT DISTINCT is not accepted over a private table", None, sql,
                     "use GROUP BY: keys are released from the public domain or by partition selection",
                     span=keyword_span(sql, "DISTINCT"))


def check_DP140_no_group_by_identifier(select: exp.Select, scope: Scope, sql: str) -> None:
    """DP140: GROUP BY a column the policy marks as an identifier (an order key) groups per person."""
    group = select.args.get("group")
    if group is None:
        return
    outputs = select.expressions
    aliases = {e.alias.lower(): e.this for e in outputs if isinstance(e, exp.Alias)}
    for item in group.expressions:
        key: exp.Expr = item
        if isinstance(item, exp.Literal) and item.is_int and 1 <= int(item.this) <= len(outputs):
            key = outputs[int(item.this) - 1]  # GROUP BY 1
        elif isinstance(item, exp.Column) and not item.table and scope.table.column(item.name) is None:
            key = aliases.get(item.name.lower(), item)  # GROUP BY an output alias
        body = key.this if isinstance(key, exp.Alias) else key
        if not isinstance(body, exp.Column) and listed_keys(body, select.args.get("where")) is not None:
            continue  # an expression the WHERE restricts to listed constants: those groups, shared by many persons
        for column in key.find_all(exp.Column):
            declared = scope.table.column(column.name)
            if declared is not None and declared.identifier is not None:
                raise refuse("DP140", f"GROUP BY {column.name} would release one group per {declared.identifier}: {column.name} "
                             "identifies rows held by one person", item, sql,
                             "group by a column many persons share; count or sum over the identifier's rows instead")


SELECT_RULES: tuple[Callable[[exp.Select, Scope, str], None], ...] = (
    check_DP104_no_star,
    check_DP108_no_window,
    check_DP111_columns_known,
    check_DP113_functions,
    check_DP125_bounded_arguments,
    check_DP109_aggregates,
    check_DP112_aggregate_placement,
    check_DP121_no_distinct_select,
    check_DP140_no_group_by_identifier,
)


def public_tables(select: exp.Select, ctx: AnalysisContext) -> tuple[Table, ...] | None:
    """The public tables a SELECT reads, when it reads only public tables; else None."""
    tables = list(select.find_all(exp.Table))
    found = []
    for node in tables:
        table = ctx.policy.table(node.name) if isinstance(node.this, exp.Identifier) and _default_schema(node) else None
        if table is None or not table.public:
            return None
        found.append(table)
    return tuple(found) if found else None


# The schema and catalog names a client may put before a policy table: DuckDB's default schema
# and catalog, PostgreSQL's default schema, and the database name the pgwire server reports.
SCHEMAS = frozenset({"main", "public"})
CATALOGS = frozenset({"memory", "dpsql"})


def _default_schema(node: exp.Table) -> bool:
    """Whether a table name is unqualified or qualified by the default schema (and catalog)."""
    db, catalog = node.args.get("db"), node.args.get("catalog")
    return (db is None or db.name.lower() in SCHEMAS) and (catalog is None or catalog.name.lower() in CATALOGS)

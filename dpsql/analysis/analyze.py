"""The analysis entry point: a parsed statement -> BoundQuery, PublicQuery or SetStatement."""

from __future__ import annotations

from fractions import Fraction

from sqlglot import exp

from dpsql.analysis.bind import bind_select, check_budget_values, option_number
from dpsql.analysis.context import AnalysisContext, refuse
from dpsql.analysis.expression_types import check_query
from dpsql.analysis.function_arguments import check_bounded_expressions
from dpsql.analysis.functions import FORBIDDEN_NAMES, function_name, is_aggregate
from dpsql.analysis.inline import flatten
from dpsql.analysis.joins import join_relation
from dpsql.analysis.post_processing import analyze_post, needs_post
from dpsql.analysis.row_level import row_probe
from dpsql.analysis.rules import (
    CATALOGS,
    SCHEMAS,
    SELECT_RULES,
    check_DP102_statement_kind,
    check_DP110_single_select,
    public_tables,
    resolve_table,
)
from dpsql.analysis.scalar_subqueries import scalar_subqueries
from dpsql.catalog.policy import Table
from dpsql.errors import CatalogError, InvalidOptionError
from dpsql.frontend.parse import ParsedStatement
from dpsql.frontend.privacy_dialect import Dpsql
from dpsql.frontend.spans import span_of
from dpsql.ir.post_query import PostQuery
from dpsql.ir.query import BoundQuery, PublicQuery, RowProbe, SetStatement

SETTINGS = frozenset({"epsilon", "delta"})


def analyze(statement: ParsedStatement, ctx: AnalysisContext) -> BoundQuery | PublicQuery | SetStatement | PostQuery | RowProbe:
    """Check `statement` against every rule, in order, and bind it. Raises a dpsql error on refusal."""
    tree, sql = statement.tree, statement.sql
    ctx = ctx.for_statement(sql)  # refusals point into this text
    # Outer queries over releases, UNION ALL, grouping sets, and scalar subqueries over private
    # rows, each released first (analysis/post_processing.py, analysis/scalar_subqueries.py).
    if needs_post(tree) or (isinstance(tree, exp.Select) and scalar_subqueries(tree) and public_tables(tree, ctx) is None):
        assert isinstance(tree, exp.Query)
        return analyze_post(tree, ctx, analyze_select)
    check_DP102_statement_kind(tree, sql)
    if isinstance(tree, exp.Set):
        return _setting(tree, ctx)
    assert isinstance(tree, exp.Select)
    if public_tables(tree, ctx) is None:
        probe = row_probe(tree, ctx)  # BI tools' column probes (LIMIT 0/1); row samples refused in plain words
        if probe is not None:
            return probe
    return analyze_select(tree, ctx)


def analyze_select(tree: exp.Select, ctx: AnalysisContext) -> BoundQuery | PublicQuery:
    """One SELECT over one table (or row-level relations over it), checked and bound."""
    sql = ctx.sql
    public = public_tables(tree, ctx)
    if public is not None:
        _check_public(tree, sql, public)
        return PublicQuery(sql=sql, tree=_unqualified_columns(tree), tables=public)
    tree = flatten(tree, ctx.policy, sql)  # qualified names, row-level subqueries and CTEs
    public = public_tables(tree, ctx)
    if public is not None:  # a row-level view of a public table is a public query
        _check_public(tree, sql, public)
        return PublicQuery(sql=sql, tree=tree, tables=public)
    joined = join_relation(tree, ctx)  # JOINs and public IN-subqueries: one JoinedTable (analysis/joins.py)
    if joined is not None:
        tree, scope = joined
        check_DP110_single_select(tree, sql)
    else:
        check_DP110_single_select(tree, sql)
        scope = resolve_table(tree, ctx, sql)
    tree = distinct_as_grouping(tree)
    for rule in SELECT_RULES:
        rule(tree, scope, sql)
    bound = bind_select(tree, scope, ctx)
    check_query(bound)  # DuckDB types for the engines' renderings; DP142 (analysis/expression_types.py)
    return bound


def distinct_as_grouping(tree: exp.Select) -> exp.Select:
    """SELECT DISTINCT where it is another spelling of what dpsql answers: without aggregates,
    `SELECT DISTINCT a, b` is `GROUP BY a, b` (keys from the public domain or partition
    selection, never the raw set of values); over an aggregated SELECT whose every GROUP BY key is
    an output (or with no GROUP BY: one row) each row is its own group, so DISTINCT is a no-op.
    Anything else (DISTINCT ON, DISTINCT over noisy values of groups it would merge) stays DP121."""
    distinct = tree.args.get("distinct")
    if distinct is None or distinct.args.get("on") is not None:
        return tree
    outputs = tree.expressions
    bare = [o.this if isinstance(o, exp.Alias) else o for o in outputs]
    if any(b.is_star or b.find(exp.Window) is not None for b in bare):
        return tree
    texts = {b.sql(dialect=Dpsql).lower() for b in bare} | {o.alias_or_name.lower() for o in outputs}
    aggregated = any(is_aggregate(f) for o in bare for f in o.find_all(exp.Func))
    group = tree.args.get("group")
    if aggregated:
        keys = group.expressions if group is not None else []
        if not all(k.sql(dialect=Dpsql).lower() in texts for k in keys):
            return tree
        out = tree.copy()
        out.set("distinct", None)
        return out
    if group is not None or tree.args.get("having") is not None:
        return tree
    out = tree.copy()
    out.set("distinct", None)
    return out.group_by(*[b.copy() for b in bare], copy=False)


def _unqualified_columns(tree: exp.Select) -> exp.Select:
    """`public.states.region` -> `states.region`: the engine reads each public table under its
    name (its default schema is the policy's, as for the table itself)."""
    if not any(c.args.get("db") for c in tree.find_all(exp.Column)):
        return tree
    tree = tree.copy()
    for column in tree.find_all(exp.Column):
        db, catalog = column.args.get("db"), column.args.get("catalog")
        if db is not None and db.name.lower() in SCHEMAS and (catalog is None or catalog.name.lower() in CATALOGS):
            column.set("db", None)
            column.set("catalog", None)
    return tree


def _check_public(tree: exp.Select, sql: str, tables: tuple[Table, ...]) -> None:
    for table in tables:
        if not table.columns:
            raise CatalogError(f"table '{table.name}' declares no columns, and dpsql could not read them from its source",
                               code="DP002", sql=sql, hint=f"declare [tables.{table.name}.columns] in the policy, or give the "
                               "table's data (a source, a table of the database, or a DataFrame)")
    for func in tree.find_all(exp.Func):
        if function_name(func) in FORBIDDEN_NAMES:
            raise refuse("DP113", f"the function {function_name(func)}() is not accepted", func, sql,
                         "query the public tables of the policy by name")
    check_bounded_expressions(tree, sql)  # DP125: public reads cannot exhaust the engine either


def _setting(tree: exp.Set, ctx: AnalysisContext) -> SetStatement:
    sql = ctx.sql
    items = tree.expressions
    if len(items) != 1 or not isinstance(items[0].this, exp.EQ):
        raise InvalidOptionError("SET takes one setting: SET dpsql.<name> = <value>", code="DP120", sql=sql)
    target, value = items[0].this.this, items[0].this.expression
    namespace = target.table.lower() if isinstance(target, exp.Column) else ""
    name = target.name.lower()
    if namespace != "dpsql" or name not in SETTINGS:
        raise InvalidOptionError(f"unknown setting '{target.sql()}'", code="DP120", span=span_of(target, sql), sql=sql,
                                 hint=f"settings: {', '.join('dpsql.' + s for s in sorted(SETTINGS))}")
    number = option_number(value, name, ctx)
    if name == "epsilon":
        check_budget_values(number, Fraction(0), ctx)
    else:
        check_budget_values(Fraction(1), number, ctx)
    return SetStatement(sql=sql, name=name, value=number)

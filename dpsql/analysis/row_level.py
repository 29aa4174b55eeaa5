"""Row-level statements over private data: BI tools' column probes answered with their columns, and
row samples refused in words that say why.

A statement without aggregates, GROUP BY, HAVING or DISTINCT asks for rows. BI tools send two
such shapes the analyst never wrote: a column probe (Superset's virtual dataset: `<sql> LIMIT 1`;
`LIMIT 0` from other tools), which reads only the result's column names and types, and a sample
(Superset's Samples pane and drill to detail: `SELECT cols FROM t LIMIT 100`). The first is
answered with the columns and types alone (a RowProbe): they depend on the SQL and the policy
only, never on data, so answering costs nothing and releases nothing. The second is refused
before any data is read, with the rule code it always had (DP104 for `*`, DP105 otherwise) and a
message that says row-level samples are not available under differential privacy.
"""

from __future__ import annotations

from sqlglot import exp

from dpsql.analysis.context import AnalysisContext, refuse
from dpsql.analysis.functions import is_aggregate
from dpsql.analysis.inline import flatten
from dpsql.analysis.joins import join_relation
from dpsql.analysis.rules import (
    check_DP108_no_window,
    check_DP110_single_select,
    check_DP111_columns_known,
    check_DP113_functions,
    check_DP125_bounded_arguments,
    public_tables,
    resolve_table,
)
from dpsql.frontend.spans import keyword_span
from dpsql.ir.query import RowProbe

SAMPLES_REFUSED = "row-level samples are not available under differential privacy"
PROBE_LIMITS = (0, 1)
PROBE_NOTICE = ("dpsql: the columns and types of this row-level statement, without rows: row-level results are not "
                "available under differential privacy, so this is not an empty table; nothing was charged")


def is_row_level(select: exp.Select) -> bool:
    """Whether a SELECT (and every SELECT inside it) releases rows: no aggregate, GROUP BY,
    HAVING or DISTINCT anywhere."""
    for node in select.find_all(exp.Select):
        if any(node.args.get(key) for key in ("group", "having", "distinct")):
            return False
    return not any(is_aggregate(f) for f in select.find_all(exp.Func))


def row_probe(select: exp.Select, ctx: AnalysisContext) -> RowProbe | None:
    """A RowProbe for a row-level statement with LIMIT 0 or 1; None for a statement that is not
    row-level. Other row-level statements are refused (row samples), after the checks every
    statement gets (tables, columns, functions, bounded expressions), before any data is read."""
    if not is_row_level(select):
        return None
    sql = ctx.sql
    flat = flatten(select, ctx.policy, sql)  # checks subqueries, CTEs and views are row-level over the policy
    if public_tables(flat, ctx) is not None:
        return None  # a row-level view of public tables: a public query, read exactly
    joined = join_relation(flat, ctx)
    if joined is not None:
        flat, scope = joined
        check_DP110_single_select(flat, sql)
    else:
        check_DP110_single_select(flat, sql)
        scope = resolve_table(flat, ctx, sql)
    named = flat.copy()  # `*` and `t.*` name no column (DP111 checks the others)
    named.set("expressions", [e for e in named.expressions if not _is_star(e)])
    for rule in (check_DP108_no_window, check_DP111_columns_known, check_DP113_functions, check_DP125_bounded_arguments):
        rule(named, scope, sql)
    limit = _limit(select)
    if limit in PROBE_LIMITS:
        return RowProbe(sql=sql, tree=select, limit=limit)
    star = next((s for s in select.expressions if _is_star(s)), None)
    what = "SELECT * would release individual rows" if star is not None else "this query selects columns without aggregating them"
    raise refuse("DP104" if star is not None else "DP105", f"{SAMPLES_REFUSED}: {what}", star if star is not None else select.expressions[0],
                 sql, "select aggregates such as COUNT(*), SUM(col) or AVG(col), grouped by columns; a BI tool's samples and "
                 "drill to detail cannot show rows (with LIMIT 1 a statement is answered with its columns only)", span=None if star is not None or select.expressions else keyword_span(sql, "SELECT"))


def _is_star(item: exp.Expr) -> bool:
    return isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star))


def _limit(select: exp.Select) -> int | None:
    """The LIMIT as an integer literal (None: absent or anything else; the rules refuse that)."""
    limit = select.args.get("limit")
    value = limit.args.get("expression") if isinstance(limit, exp.Limit) else None
    if isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit():
        return int(value.this)
    return None

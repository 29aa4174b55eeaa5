"""Which functions the outer query of a post-processing query may call (DP113).

The outer query runs over released rows only, so what it computes is free post-processing; what
it may not do is make the server hold much more than the released rows themselves. A function
that builds rows or lists (`unnest(range(N))`, `generate_series`, `list_transform(range(N), ...)`,
`string_agg` over a cross product) turns a few released rows into millions of values, fetched
into the server process: one statement took a server from 269 MB to 1,245 MB. So the outer query
gets an allowlist: the row-level scalar functions (their string sizes bounded by DP125),
aggregates that return one scalar, and the ranking and offset window functions. Casts are to
scalar types only. The rows it may return are capped separately, after the charge
(backend/auxiliary/released_db.py).
"""

from __future__ import annotations

from sqlglot import exp

from dpsql.analysis.context import refuse
from dpsql.analysis.functions import AGGREGATES, function_name, scalar_allowed
from dpsql.frontend.privacy_dialect import Dpsql

# Aggregates over released rows that return one scalar (never a list, a map or a concatenation).
OUTER_AGGREGATES: tuple[type[exp.Expr], ...] = (
    *AGGREGATES, exp.CountIf, exp.LogicalAnd, exp.LogicalOr, exp.Corr, exp.CovarPop, exp.CovarSamp,
)
OUTER_AGGREGATE_NAMES = frozenset({"product", "bool_and", "bool_or", "arg_min", "arg_max", "min_by", "max_by",
                                   "any_value", "first", "last", "kurtosis", "skewness", "geomean"})
# Ranking and offset window functions: one value per released row.
OUTER_WINDOW_FUNCTIONS: tuple[type[exp.Expr], ...] = (
    exp.RowNumber, exp.Rank, exp.DenseRank, exp.PercentRank, exp.CumeDist, exp.Ntile, exp.Lag, exp.Lead,
    exp.FirstValue, exp.LastValue, exp.NthValue,
)


def outer_function_allowed(node: exp.Func) -> bool:
    """Whether the outer query of a post-processing query may call this function."""
    if isinstance(node, (exp.Cast, exp.TryCast)):
        return not _nested(node.to)
    if isinstance(node, (*OUTER_AGGREGATES, *OUTER_WINDOW_FUNCTIONS)):
        return True
    if isinstance(node, exp.Anonymous) and function_name(node) in OUTER_AGGREGATE_NAMES:
        return True
    return scalar_allowed(node)


def _nested(to: exp.Expr | None) -> bool:
    """A list, array, map, struct or union type (a cast could build a large value from a literal)."""
    return isinstance(to, exp.DataType) and (bool(to.args.get("nested")) or to.is_type(*exp.DataType.NESTED_TYPES))


def check_outer_functions(outer: exp.Expr, sql: str) -> None:
    """DP113 for the first function of the outer query that is not on its allowlist."""
    for node in outer.walk():
        if isinstance(node, exp.Func) and not outer_function_allowed(node):
            raise refuse("DP113", f"{_written(node)} is not accepted in the outer query of a post-processing "
                         "query: the outer query may call the allowlisted scalar functions, aggregates that return one "
                         "value and ranking or offset window functions (nothing that builds rows or lists)", node, sql,
                         "post-process released columns with arithmetic, CASE, comparisons, the scalar functions of "
                         "the allowlist, SUM/AVG/MIN/MAX/COUNT and window functions such as ROW_NUMBER() or LAG()")


def _written(node: exp.Func) -> str:
    """The call as the analyst wrote it: `the function unnest()` (sqlglot's own name may differ), or
    the kind of literal (`[1, 2]`, `{'a': 1}`, a cast to a list type)."""
    if isinstance(node, (exp.Cast, exp.TryCast)):
        return f"a cast to {node.to.sql(dialect=Dpsql)}"
    head = node.sql(dialect=Dpsql).split("(", 1)[0].strip()
    if head.replace("_", "").isalnum():
        return f"the function {head.lower()}()"
    return "a list, map or struct value"

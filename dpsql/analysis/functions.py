"""Which functions may appear in analyst SQL, and where.

Aggregates are an allowlist: the spellings the aggregate families bind (dpsql/aggregates/). Scalar functions are an allowlist of
deterministic, side-effect-free functions: no file or network access, no environment, no
`error()`, no randomness. Row-level predicates run inside TRY(...) in the engine, so a scalar
function that fails on a particular value yields NULL instead of an error that depends on data.
"""

from __future__ import annotations

from sqlglot import exp

from dpsql.aggregates import registry
from dpsql.aggregates.base import function_name as function_name  # re-exported: the analysis names calls with it

# The aggregates with a mechanism are those of dpsql/aggregates/registry.py: each family module
# lists the sqlglot classes and the anonymous names it binds (MEDIAN(col, b), IQR(col), ...).
AGGREGATES: tuple[type[exp.Expr], ...] = registry.CLASSES
# Aggregates DuckDB knows that dpsql refuses until a mechanism exists (DP109 names them).
REFUSED_AGGREGATE_NAMES = frozenset(
    {
        "arg_min", "arg_max", "argmin", "argmax", "min_by", "max_by", "first", "last",
        "any_value", "list", "array_agg", "string_agg", "group_concat", "listagg", "histogram",
        "bit_and", "bit_or", "bit_xor", "bool_and", "bool_or", "product", "corr", "covar_pop", "covar_samp",
        "approx_count_distinct", "entropy", "kurtosis", "skewness", "mad", "count_if", "countif", "sum_no_overflow",
        "fsum", "kahan_sum", "favg", "regr_slope", "bitstring_agg",
        "reservoir_quantile", "approx_top_k", "arbitrary", "geomean", "geometric_mean", "weighted_avg",
    }
)

SCALAR_CLASSES: tuple[type[exp.Func], ...] = (
    exp.Abs, exp.Round, exp.Floor, exp.Ceil, exp.Lower, exp.Upper, exp.Length, exp.Substring,
    exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least, exp.Year, exp.Month, exp.Day, exp.Extract,
    exp.DateTrunc, exp.Cast, exp.TryCast, exp.Sqrt, exp.Ln, exp.Log, exp.Exp, exp.Pow, exp.Sign,
    exp.Trim, exp.Concat, exp.If, exp.Case, exp.StartsWith, exp.RegexpLike, exp.Left, exp.Right,
    exp.DayOfWeek, exp.Quarter, exp.Week, exp.StrPosition, exp.Replace, exp.DateDiff, exp.DateAdd,
    exp.DateSub, exp.Reverse, exp.Trunc,
    exp.UnixToTime,  # to_timestamp(seconds since 1970)
    exp.And, exp.Or,  # sqlglot 30 makes AND/OR Func subclasses: they are connectives, not calls
)
SCALAR_NAMES = frozenset(
    {
        "ends_with", "suffix", "prefix", "contains", "lpad", "rpad", "ltrim", "rtrim", "isnan",
        "isinf", "isfinite", "hour", "minute", "second", "dayofyear", "yearweek", "date_part",
        "datepart", "strftime", "nullif", "ifnull", "log10", "log2", "pi", "degrees", "radians",
        "cbrt", "trunc", "ascii", "repeat", "instr", "position", "strlen", "len", "char_length", "bit_length",
        "regexp_full_match",
    }
)
# Not on the list: the clocks (now(), current_date, today(), ...): parsing reads them once, as
# literals (frontend/clock.py), so none reaches the analysis. Nor functions that exist on one engine only, or mean something else on another, and
# that no rendering makes agree (dpsql answers the same on every engine): even, gcd, lcm, factorial,
# chr (DuckDB's code points vs Spark's bytes), signbit (the sign of a NaN), initcap (DuckDB has
# none; the word boundaries differ).
# sqlglot's names, once parsed, for allowlisted functions (dayofyear, isinf, isnan, lpad/rpad,
# strftime, and DuckDB's date_trunc, a TimestampTrunc node): not names an analyst writes.
_PARSED_NAMES = frozenset({"day_of_year", "is_inf", "is_nan", "pad", "time_to_str", "timestamp_trunc"})
# Functions that must never appear: they read files, the network, the catalog or the environment,
# raise on purpose, or are random. Listed so the refusal can name the reason (DP113).
FORBIDDEN_NAMES = frozenset(
    {
        "read_csv", "read_csv_auto", "read_parquet", "read_json", "read_json_auto", "read_text",
        "read_blob", "glob", "getenv", "current_setting", "error", "random", "uuid", "gen_random_uuid",
        "setseed", "rand", "duckdb_tables", "duckdb_columns", "duckdb_settings", "query", "query_table",
    }
)


# The random ones among them: refused with their own reason (an engine draws once per row or group
# it visits, so its generator's state would carry a count of the private rows).
RANDOM_NAMES = frozenset({"random", "rand", "setseed", "uuid", "gen_random_uuid"})


def is_aggregate(node: exp.Expr) -> bool:
    """Whether the node is an aggregate call (allowed or not)."""
    if isinstance(node, exp.AggFunc):
        return True
    name = function_name(node) if isinstance(node, exp.Anonymous) else ""
    return name in REFUSED_AGGREGATE_NAMES or name in registry.NAMES


def allowed_aggregate(node: exp.Expr) -> bool:
    """Whether an aggregate call has a mechanism in dpsql."""
    if isinstance(node, exp.Anonymous):
        return function_name(node) in registry.NAMES
    return type(node) in AGGREGATES


def scalar_allowed(node: exp.Func) -> bool:
    """Whether a non-aggregate function may appear in analyst SQL."""
    if isinstance(node, SCALAR_CLASSES):
        return True
    # By name for typed nodes too: sqlglot parses many listed names (pi, hour, repeat...) into classes.
    return function_name(node) in SCALAR_NAMES or function_name(node) in _PARSED_NAMES


# Names that read as SQL syntax rather than calls (sqlglot models them as functions).
_NOT_CALLS = frozenset({"AND", "OR", "CASE"})


# CI95(agg), CI_LOW(agg), CI_HIGH(agg): an aggregate's 95% half-width and interval ends in the
# same statement (bound in analysis/bind.py, DP146; free: they describe the release).
INTERVAL_FUNCTIONS = frozenset({"ci95", "ci_low", "ci_high"})


def allowed_function_names() -> dict[str, str]:
    """Every function name analyst SQL may call, upper-case, to "aggregate" or "scalar".

    For completion and help in the front ends; the analysis rules above stay the authority.

    Example:
        >>> allowed_function_names()["COUNT"], allowed_function_names()["ABS"]
        ('aggregate', 'scalar')
    """
    # Every aggregate spelling is a sqlglot function class (only functions have SQL names).
    names = {name: "aggregate" for cls in AGGREGATES if issubclass(cls, exp.Func) for name in cls.sql_names()}
    names.update({name.upper(): "aggregate" for name in registry.NAMES})
    for cls in SCALAR_CLASSES:
        names.update({name: "scalar" for name in cls.sql_names() if name not in _NOT_CALLS})
    names.update({name.upper(): "scalar" for name in SCALAR_NAMES})
    names.update({name.upper(): "aggregate" for name in INTERVAL_FUNCTIONS})  # they wrap one
    return names

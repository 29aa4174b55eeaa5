"""The DuckDB type of each node of a row-level expression, from the policy alone, and the
expressions whose value no other engine reproduces (DP142).

Every engine must give the same answer to the same SQL, with DuckDB's meaning as the reference
(`backend/sql/engine_dialects.py` renders the analyst's expressions for Spark so that they compute what
DuckDB computes). Some renderings depend on an operand's type (`CAST(x AS BIGINT)` rounds a
DOUBLE but keeps an integer; `FLOOR` of an integer is a DOUBLE on DuckDB), so the analysis
writes each node's DuckDB type into the node (`meta[TYPE_KEY]`), where the renderers read it;
copies of the tree keep it, and a node without it is dpsql's own SQL. Types follow DuckDB's
binder for the allowlisted functions (`analysis/functions.py`): a policy column has its declared
type, an integer literal is an INTEGER (a BIGINT beyond 32 bits), a decimal literal a DECIMAL,
`/` a DOUBLE, and so on. A node whose type dpsql does not know is marked UNKNOWN; a rendering
that needs it falls back to what sqlglot writes.

DP142 refuses, on every engine, what one engine cannot compute as DuckDB does:

- a DOUBLE (or REAL) as text (`CAST(income AS VARCHAR)`, `income || ''`, `concat(income)`): DuckDB
  prints the shortest round-trip digits ('10000000.0', '1e-05'), Spark Java's ('1.0E7', '1.0E-5');
- text read as a number, a date, a timestamp or a boolean (`CAST(zip AS INTEGER)`) unless the
  text is a literal: the engines read '3.7', '0x10', '1_000' and '1e3' differently;
- a part of a date (EXTRACT, date_part, date_diff, date_add) that dpsql does not render for every
  engine (`decade`, `century`, `millennium`, `julian` ...), and an INTERVAL whose amount is not a
  literal in `date_add`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sqlglot import exp

from dpsql.analysis.context import refuse
from dpsql.catalog.policy import Table
from dpsql.ir.query import BoundQuery

TYPE_KEY = "dpsql_type"  # a node's DuckDB type, as written by `annotate`

INTEGERS = ("INTEGER", "BIGINT", "HUGEINT")  # INTEGER stands for TINYINT, SMALLINT and INTEGER
FLOATS = ("DOUBLE", "FLOAT")
NUMBERS = (*INTEGERS, *FLOATS, "DECIMAL")
TIMES = ("DATE", "TIMESTAMP")
STRING_LITERAL = "STRING_LITERAL"  # a string literal: DuckDB casts it to what it meets

_POLICY_TYPES = {"int": "BIGINT", "float": "DOUBLE", "text": "VARCHAR", "date": "DATE", "timestamp": "TIMESTAMP",
                 "bool": "BOOLEAN"}
_T = exp.DataType.Type
_CAST_TYPES: dict[exp.DType, str] = {
    _T.TINYINT: "INTEGER", _T.SMALLINT: "INTEGER", _T.INT: "INTEGER", _T.BIGINT: "BIGINT", _T.INT128: "HUGEINT",
    _T.DOUBLE: "DOUBLE", _T.FLOAT: "FLOAT", _T.DECIMAL: "DECIMAL", _T.VARCHAR: "VARCHAR", _T.TEXT: "VARCHAR",
    _T.CHAR: "VARCHAR", _T.NVARCHAR: "VARCHAR", _T.DATE: "DATE", _T.TIMESTAMP: "TIMESTAMP",
    _T.TIMESTAMPNTZ: "TIMESTAMP", _T.DATETIME: "TIMESTAMP", _T.BOOLEAN: "BOOLEAN", _T.INTERVAL: "INTERVAL",
}
# Date parts every engine renders as DuckDB computes them (EXTRACT, date_part; date_diff units).
DATE_PARTS = frozenset({"year", "quarter", "month", "week", "day", "dow", "isodow", "doy", "hour", "minute", "second",
                        "millisecond", "microsecond", "epoch", "isoyear", "yearweek"})
PART_ALIASES = {"years": "year", "yr": "year", "y": "year", "months": "month", "mon": "month", "quarters": "quarter",
                "days": "day", "d": "day", "dayofmonth": "day", "dayofweek": "dow", "weekday": "dow",
                "dayofyear": "doy", "weeks": "week", "w": "week", "hours": "hour", "h": "hour", "minutes": "minute",
                "m": "minute", "min": "minute", "seconds": "second", "s": "second", "sec": "second",
                "milliseconds": "millisecond", "ms": "millisecond", "microseconds": "microsecond", "us": "microsecond"}
DIFF_UNITS = frozenset({"year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond",
                        "microsecond"})
INTERVAL_UNITS = frozenset({"year", "quarter", "month", "week", "day", "hour", "minute", "second"})

_BOOLEAN = (exp.Predicate, exp.Connector, exp.Not, exp.IsNan, exp.IsInf, exp.StartsWith, exp.EndsWith, exp.Contains,
            exp.RegexpLike, exp.RegexpILike, exp.RegexpFullMatch, exp.Boolean)
_TEXT = (exp.Upper, exp.Lower, exp.Substring, exp.Left, exp.Right, exp.Trim, exp.Concat, exp.DPipe, exp.Replace,
         exp.Reverse, exp.Pad, exp.Repeat, exp.TimeToStr)
_BIGINT = (exp.Length, exp.BitLength, exp.StrPosition, exp.Ascii, exp.Year, exp.Month, exp.Day, exp.DayOfMonth,
           exp.Quarter, exp.DayOfWeek, exp.DayOfYear, exp.Week, exp.WeekOfYear, exp.Hour, exp.Minute, exp.Second,
           exp.DateDiff)
_DOUBLE = (exp.Div, exp.Sqrt, exp.Cbrt, exp.Ln, exp.Log, exp.Exp, exp.Pow, exp.Degrees, exp.Radians, exp.Pi)
_BIGINT_NAMES = frozenset({"strlen", "yearweek"})
_BOOLEAN_NAMES = frozenset({"isfinite", "suffix", "prefix"})
_TEXT_NAMES = frozenset({"ltrim", "rtrim"})


UNKNOWN = "?"  # an annotated node whose type dpsql does not know


def type_of(node: exp.Expr | None) -> str | None:
    """The DuckDB type `annotate` wrote into a node (None: unknown or not annotated)."""
    kind = None if node is None else node.meta.get(TYPE_KEY)
    return None if kind == UNKNOWN else kind


def annotate(node: exp.Expr, table: Table) -> None:
    """Write the DuckDB type of every node of a row-level expression over `table` into the node.
    Subqueries (a public IN list) are left alone: their columns are not the table's."""
    for part in _post_order(node):
        part.meta[TYPE_KEY] = _type(part, table) or UNKNOWN


def _post_order(node: exp.Expr) -> Iterator[exp.Expr]:
    stack: list[tuple[exp.Expr, bool]] = [(node, False)]
    while stack:
        current, done = stack.pop()
        if done:
            yield current
            continue
        if isinstance(current, (exp.Subquery, exp.Select, exp.Query)):
            continue
        stack.append((current, True))
        stack.extend((child, False) for child in current.iter_expressions())


def _type(node: exp.Expr, table: Table) -> str | None:  # noqa: C901 - a visitor: one branch per expression kind
    if isinstance(node, (exp.Paren, exp.Alias)):
        return type_of(node.this)
    if isinstance(node, exp.Column):
        column = table.column(node.name)
        return None if column is None else _POLICY_TYPES.get(column.type)
    if isinstance(node, exp.Null):
        return "NULL"
    if isinstance(node, exp.Interval):
        return "INTERVAL"
    if isinstance(node, exp.Literal):
        return _literal(node)
    if isinstance(node, (exp.Cast, exp.TryCast)):
        return _CAST_TYPES.get(node.to.this)
    if isinstance(node, _BOOLEAN):
        return "BOOLEAN"
    if isinstance(node, exp.Neg):
        return type_of(node.this)
    if isinstance(node, (exp.Add, exp.Sub)):
        return _plus(node)
    if isinstance(node, (exp.Mul, exp.Mod)):
        return promote(type_of(node.this), type_of(node.expression))
    if isinstance(node, exp.IntDiv):
        left, right = type_of(node.this), type_of(node.expression)
        return promote(left, right) if left in INTEGERS and right in INTEGERS else "DOUBLE" if _numbers(left, right) else None
    if isinstance(node, exp.Extract):
        return "DOUBLE" if node.this is not None and node.this.name.lower() == "epoch" else "BIGINT"
    if isinstance(node, (exp.Floor, exp.Ceil)):
        inner = type_of(node.this)
        return "DECIMAL" if inner == "DECIMAL" else "DOUBLE" if inner in NUMBERS else None
    if isinstance(node, (exp.Round, exp.Trunc, exp.Abs)):
        return type_of(node.this) if type_of(node.this) in NUMBERS else None
    if isinstance(node, exp.Sign):
        return "INTEGER"
    if isinstance(node, _DOUBLE):
        return "DOUBLE"
    if isinstance(node, _BIGINT):
        return "BIGINT"
    if isinstance(node, _TEXT):
        return "VARCHAR"
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc, exp.DateAdd, exp.DateSub, exp.UnixToTime)):
        return "TIMESTAMP"
    if isinstance(node, exp.CurrentDate):
        return "DATE"
    if isinstance(node, (exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least)):
        return _common(node)
    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
        if name in ("date_part", "datepart"):
            return "DOUBLE" if _part_literal(node) == "epoch" else "BIGINT"
        return "BIGINT" if name in _BIGINT_NAMES else "BOOLEAN" if name in _BOOLEAN_NAMES else "VARCHAR" if name in _TEXT_NAMES else None
    return None


def _literal(node: exp.Literal) -> str | None:
    if node.is_string:
        return STRING_LITERAL
    text = node.this.strip().lower()
    if text.isdigit():
        value = int(text)
        return "INTEGER" if value < 2**31 else "BIGINT" if value < 2**63 else "HUGEINT"
    return "DOUBLE" if "e" in text else "DECIMAL"


def _numbers(*kinds: str | None) -> bool:
    return all(k in NUMBERS for k in kinds)


def promote(left: str | None, right: str | None) -> str | None:
    """The type of arithmetic on two numbers (DuckDB: any float makes a DOUBLE, else any DECIMAL a
    DECIMAL, else the wider integer); None when either is not a number."""
    if not _numbers(left, right):
        return None
    if left in FLOATS or right in FLOATS:
        return "DOUBLE"
    if "DECIMAL" in (left, right):
        return "DECIMAL"
    order = INTEGERS.index
    return left if order(left) >= order(right) else right


def _plus(node: exp.Expr) -> str | None:
    left, right = type_of(node.this), type_of(node.expression)
    if _numbers(left, right):
        return promote(left, right)
    if left == "INTERVAL" and right in TIMES and isinstance(node, exp.Add):
        left, right = right, left
    if left in TIMES and right == "INTERVAL":
        return "TIMESTAMP"  # DuckDB: a date plus an interval is a TIMESTAMP
    if left == "DATE" and right in INTEGERS:
        return "DATE"
    if isinstance(node, exp.Sub) and left == right == "DATE":
        return "BIGINT"  # days
    if isinstance(node, exp.Sub) and left == right == "TIMESTAMP":
        return "INTERVAL"
    return None


def _common(node: exp.Expr) -> str | None:
    if isinstance(node, exp.Case):
        parts = [i.args.get("true") for i in node.args.get("ifs") or []] + [node.args.get("default")]
    elif isinstance(node, exp.If):
        parts = [node.args.get("true"), node.args.get("false")]
    elif isinstance(node, exp.Nullif):
        parts = [node.this]
    else:
        parts = [node.this, *node.expressions]
    kinds = {type_of(p) for p in parts if p is not None} - {"NULL"}
    if not kinds or None in kinds:
        return None
    if len(kinds) == 1:
        kind = kinds.pop()
        return "VARCHAR" if kind == STRING_LITERAL else kind
    if all(k in NUMBERS for k in kinds):
        result: str | None = kinds.pop()
        for k in kinds:
            result = promote(result, k)
        return result
    if kinds <= {"VARCHAR", STRING_LITERAL}:
        return "VARCHAR"
    return None


def _part_literal(node: exp.Anonymous) -> str | None:
    first = node.expressions[0] if node.expressions else None
    return part_name(first.this) if isinstance(first, exp.Literal) and first.is_string else None


def part_name(text: str) -> str:
    """A date part's canonical name (DuckDB's aliases: 'dayofweek' is 'dow', 'years' is 'year')."""
    lowered = text.lower()
    return PART_ALIASES.get(lowered, lowered)


# --- DP142: what no other engine computes as DuckDB does ---------------------------------------------


def check_query(query: BoundQuery) -> None:
    """Annotate the row-level expressions of a bound query (WHERE, GROUP BY expressions, aggregate
    arguments) with their DuckDB types, for the engines' renderings, and refuse (DP142) a part
    that no engine but DuckDB computes alike."""
    expressions = [query.where, *(k.expr for k in query.keys), *(k.engine for k in query.keys), *(a.expr for a in query.aggregates)]
    for expression in expressions:
        if expression is None:
            continue
        annotate(expression, query.table)
        found = not_portable(expression)
        if found is not None:
            raise refuse("DP142", f"{found.reason}: dpsql answers only what every engine computes alike", found.node,
                         query.sql, found.hint)


@dataclass(frozen=True, slots=True)
class NotPortable:
    """Why an expression is refused on every engine (DP142), where, and the fix."""

    reason: str
    node: exp.Expr
    hint: str


def not_portable(node: exp.Expr) -> NotPortable | None:
    """The first part of an annotated row-level expression that DP142 refuses, or None."""
    for part in _post_order(node):
        found = _check(part)
        if found is not None:
            return found
    return None


_TEXT_HINT = "round it or cast it to an integer or DECIMAL(p, s) first: its text is then the same on every engine"


def _check(node: exp.Expr) -> NotPortable | None:
    if isinstance(node, (exp.Cast, exp.TryCast)):
        source, target = type_of(node.this), _CAST_TYPES.get(node.to.this)
        if source in FLOATS and target == "VARCHAR":
            return NotPortable("a DOUBLE's text differs between engines ('10000000.0' or '1.0E7')", node, _TEXT_HINT)
        if source == "VARCHAR" and target in (*NUMBERS, *TIMES, "BOOLEAN"):
            return NotPortable(f"the engines read text as {target} differently ('3.7', '0x10' or '1_000' as an integer)",
                               node, "compare the text with text literals, or cast a literal")
    if isinstance(node, (exp.DPipe, exp.Concat)):
        parts = [node.this, node.expression] if isinstance(node, exp.DPipe) else node.expressions
        double = next((p for p in parts if type_of(p) in FLOATS), None)
        if double is not None:
            return NotPortable("a DOUBLE's text differs between engines ('10000000.0' or '1.0E7')", double, _TEXT_HINT)
    part = _date_part_of(node)
    if part is not None and part not in DATE_PARTS:
        return NotPortable(f"the date part '{part}' is not computed alike on every engine", node,
                           "use year, quarter, month, week, day, dow, isodow, doy, hour, minute, second or epoch")
    if isinstance(node, exp.DateDiff):
        unit = part_name(node.text("unit") or "day")
        if unit not in DIFF_UNITS:
            return NotPortable(f"date_diff in '{unit}' is not computed alike on every engine", node,
                               "count in year, quarter, month, week, day, hour, minute or second")
    interval = interval_of(node)
    if interval is not None:
        amount, unit = interval
        if unit not in INTERVAL_UNITS or not _integer_literal(amount):
            return NotPortable("an INTERVAL is computed alike on every engine only with an integer literal in "
                               "years, quarters, months, weeks, days, hours, minutes or seconds", node,
                               "write INTERVAL 3 MONTH (or '3' MONTH)")
    return None


def interval_of(node: exp.Expr) -> tuple[exp.Expr, str] | None:
    """(amount, unit) of the interval that date_add/date_sub or `+`/`-` applies to a date or
    timestamp; None for any other node."""
    if isinstance(node, (exp.DateAdd, exp.DateSub)):
        interval = node.expression
        if isinstance(interval, exp.Interval):
            return interval.this, part_name(interval.text("unit") or "day")
        return interval, part_name(node.text("unit") or "day")
    if isinstance(node, (exp.Add, exp.Sub)):
        for side in (node.expression, node.this):
            if isinstance(side, exp.Interval):
                return side.this, part_name(side.text("unit") or "day")
    return None


def _integer_literal(node: exp.Expr | None) -> bool:
    while isinstance(node, (exp.Paren, exp.Neg)):
        node = node.this
    if not isinstance(node, exp.Literal):
        return False
    text: str = node.this
    return text.strip().lstrip("-").isdigit()


def _date_part_of(node: exp.Expr) -> str | None:
    if isinstance(node, exp.Extract) and node.this is not None:
        return part_name(node.this.name)
    if isinstance(node, exp.Anonymous) and node.name.lower() in ("date_part", "datepart"):
        return _part_literal(node)
    return None

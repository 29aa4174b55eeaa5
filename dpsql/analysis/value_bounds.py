"""Static bounds of a per-row numeric expression, by interval arithmetic over the policy's bounds.

`SUM(1)`, `SUM(CASE WHEN cond THEN 1 ELSE 0 END)`, `AVG(income / 12)` aggregate an expression
rather than a column. The sensitivity of such a sum needs an interval [lower, upper] that holds
the expression's value on every possible row; it is derived here from the policy alone
(declared column bounds and the literals of the query), never from data:

- a number literal v is [v, v]; a bounded numeric column is its declared [lower, upper];
- -x, x + y, x - y, x * y are the interval operations; x / y needs y's interval to exclude 0;
- CASE / IF take the hull of their result branches (a missing ELSE is NULL, which no sum reads);
- LEAST / GREATEST take the least / greatest of the operands' ends, so an unbounded column can
  be clamped explicitly: GREATEST(LEAST(x, 100), 0) is within [0, 100] whatever x is;
- CAST(x AS DOUBLE / REAL / DECIMAL) keeps x's interval; a cast to an integer type keeps an
  integer interval that fits the type (no rounding, no overflow);
- EXTRACT(EPOCH FROM c) (or date_part('epoch', c)) of a bounded date or timestamp column is the
  seconds since 1970-01-01 of its bounds (Grafana's `floor(extract(epoch from t) / 86400)`).
- LN, LOG (LOG10, LOG2, LOG(b, x) with a literal base), EXP, SQRT, CBRT and POWER(x, c) with a
  literal exponent are monotone: [lo, hi] maps to [f(lo), f(hi)] (ends swapped when f decreases;
  an even power's least value is 0 when the interval holds it), rounded outward by a few units in
  the last place, when [lo, hi] is inside f's domain (LN/LOG: lo > 0; SQRT: lo >= 0); otherwise
  no bound (the engines give -inf or NaN there), which a clamp around it can still supply
  (analysis/monotone.py).

Privacy does not rest on this arithmetic alone: the engine clamps every value into the interval
before summing (backend/sql/plan_sql.py), so a value outside it (float rounding, NaN) cannot raise the
sensitivity; a tight interval only keeps the clamp from changing honest values.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from sqlglot import exp

from dpsql.accounting.cost import to_fraction
from dpsql.analysis.monotone import CLASSES as MONOTONE_CLASSES
from dpsql.analysis.monotone import Monotone, image, monotone_call
from dpsql.catalog.policy import Table

# The largest magnitude a derived bound may have (declared column bounds are far below it).
MAX_MAGNITUDE = Fraction(10**15)
SECONDS_PER_DAY = 86_400
EPOCH_DAY = dt.date(1970, 1, 1).toordinal()  # a date bound is a day ordinal; a timestamp bound is seconds since 1970


class NoBounds(Exception):
    """The expression has no interval derivable from the policy; `node` is the part at fault."""

    def __init__(self, reason: str, node: exp.Expr) -> None:
        super().__init__(reason)
        self.reason = reason
        self.node = node


@dataclass(frozen=True, slots=True)
class Interval:
    """[lower, upper] (None: unbounded on that side); `integer` when every value is an integer."""

    lower: Fraction | None
    upper: Fraction | None
    integer: bool
    why: NoBounds | None = None  # why a side is unbounded (reported when nothing clamps it)


def value_bounds(node: exp.Expr, table: Table) -> Interval:
    """The finite interval of `node` on every row of `table`, or NoBounds."""
    interval = _interval(node, table)
    if interval is None:
        raise NoBounds("it is NULL on every row", node)
    if interval.lower is None or interval.upper is None:
        raise interval.why or NoBounds("it has no upper or lower bound", node)
    if max(abs(interval.lower), abs(interval.upper)) > MAX_MAGNITUDE:
        # The engine sums integers on a grid (BIGINT per row): bounds this wide would overflow
        # a cast for some rows and not others, an error that could depend on data.
        raise NoBounds("its bounds exceed ±10^15", node)
    return interval


def _interval(node: exp.Expr, table: Table) -> Interval | None:  # noqa: C901 - a visitor: one branch per expression kind
    """The interval of `node`; None when it is always NULL."""
    if isinstance(node, exp.Paren):
        return _interval(node.this, table)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Literal):
        if node.is_string:
            raise NoBounds("a string is not a number", node)
        try:
            value = to_fraction(node.this)
        except (ValueError, ZeroDivisionError):
            raise NoBounds("the number is out of range", node) from None
        return Interval(value, value, value.denominator == 1 and "." not in node.this and "e" not in node.this.lower())
    if isinstance(node, exp.Column):
        column = table.column(node.name)
        if column is None or not column.numeric:
            raise NoBounds(f"'{node.name}' is not a numeric column", node)
        why = None if column.bounded else NoBounds(f"'{node.name}' has no declared bounds: clamp it with LEAST and GREATEST", node)
        return Interval(column.lower, column.upper, column.type == "int", why)
    epoch = epoch_operand(node)
    if epoch is not None:
        return _epoch(epoch, table)
    if isinstance(node, exp.Neg):
        inner = _interval(node.this, table)
        return None if inner is None else Interval(_neg(inner.upper), _neg(inner.lower), inner.integer, inner.why)
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div)):
        left, right = _interval(node.this, table), _interval(node.expression, table)
        if left is None or right is None:
            return None
        return _arithmetic(node, left, right)
    if isinstance(node, exp.Case):
        branches = [i.args["true"] for i in node.args.get("ifs") or []] + [node.args.get("default") or exp.Null()]
        return _hull([_interval(b, table) for b in branches])
    if isinstance(node, exp.If):
        return _hull([_interval(node.args["true"], table), _interval(node.args.get("false") or exp.Null(), table)])
    if isinstance(node, (exp.Least, exp.Greatest)):
        parts = [_interval(p, table) for p in [node.this, *node.expressions]]
        if any(p is None for p in parts):
            return None  # DuckDB's LEAST/GREATEST skip NULLs, but one all-NULL operand is no bound either
        return _extreme(parts, isinstance(node, exp.Greatest))  # type: ignore[arg-type]
    if isinstance(node, exp.Cast):
        cast = _cast(node, table)
        if cast is None or isinstance(cast, Interval):
            return cast
    if isinstance(node, MONOTONE_CLASSES):
        call = monotone_call(node)
        if call is not None:
            return _monotone(call, node, table)
    if isinstance(node, (exp.Func, exp.Binary, exp.Cast)) and not isinstance(node, (exp.Predicate, exp.Connector)):
        # Any other numeric function: no bounds of its own, but LEAST/GREATEST around it can clamp it.
        return _unbounded(NoBounds(f"dpsql derives no bounds through {node.key.upper()}: clamp it with LEAST and GREATEST", node))
    raise NoBounds(f"dpsql derives no bounds through {node.key.upper()}", node)


_FLOAT_TYPES = {exp.DataType.Type.FLOAT, exp.DataType.Type.DOUBLE, exp.DataType.Type.DECIMAL}
_INTEGER_RANGES = {exp.DataType.Type.TINYINT: 2**7, exp.DataType.Type.SMALLINT: 2**15, exp.DataType.Type.INT: 2**31,
                   exp.DataType.Type.BIGINT: 2**63}


def _cast(node: exp.Cast, table: Table) -> Interval | None | Literal[False]:
    """CAST of a number to a float or decimal type keeps its interval (a rounding that leaves it
    is clamped back by the engine); to an integer type only an integer within the type's range
    (no rounding, no overflow error that could depend on a row). False: no bounds through it."""
    target = node.to.this if isinstance(node.to, exp.DataType) else None
    if target not in _FLOAT_TYPES and target not in _INTEGER_RANGES:
        return False
    inner = _interval(node.this, table)
    if inner is None:
        return None
    if target in _FLOAT_TYPES:
        return Interval(inner.lower, inner.upper, False, inner.why)
    limit = _INTEGER_RANGES[target]
    if not inner.integer or inner.lower is None or inner.upper is None or inner.lower < -limit or inner.upper >= limit:
        return False
    return inner


def _monotone(call: Monotone, node: exp.Expr, table: Table) -> Interval | None:
    """LN, LOG, EXP, SQRT, CBRT, POWER(x, c): the image of the argument's interval, rounded outward
    (analysis/monotone.py); unbounded, with why, when the interval leaves the function's domain."""
    inner = _interval(call.operand, table)
    if inner is None:
        return None
    if inner.lower is None or inner.upper is None:
        return _unbounded(inner.why or NoBounds(f"the argument of {call.name} has no bounds", node))
    found = image(call, inner.lower, inner.upper)
    if isinstance(found, str):
        return _unbounded(NoBounds(found, node))
    return Interval(found[0], found[1], False)


def epoch_operand(node: exp.Expr) -> exp.Expr | None:
    """x of EXTRACT(EPOCH FROM x) or date_part('epoch', x); None for anything else."""
    if isinstance(node, exp.Extract) and node.this is not None and node.this.name.lower() == "epoch":
        operand: exp.Expr = node.expression
        return operand
    if isinstance(node, exp.Anonymous) and node.name.lower() in ("date_part", "datepart") and len(node.expressions) == 2:
        part = node.expressions[0]
        if isinstance(part, exp.Literal) and part.is_string and part.this.lower() == "epoch":
            second: exp.Expr = node.expressions[1]
            return second
    return None


def _epoch(operand: exp.Expr, table: Table) -> Interval:
    """Seconds since 1970 of a date or timestamp column, from its declared bounds (a DOUBLE on
    the engines: a timestamp's seconds have a fraction)."""
    column = table.column(operand.name) if isinstance(operand, exp.Column) else None
    if column is None or column.type not in ("date", "timestamp"):
        raise NoBounds("EPOCH applies to a date or timestamp column", operand)
    if not column.bounded:
        return _unbounded(NoBounds(f"'{operand.name}' has no declared bounds", operand))
    assert column.lower is not None and column.upper is not None
    if column.type == "date":
        return Interval((column.lower - EPOCH_DAY) * SECONDS_PER_DAY, (column.upper - EPOCH_DAY) * SECONDS_PER_DAY, False)
    return Interval(column.lower, column.upper, False)


def _unbounded(why: NoBounds) -> Interval:
    return Interval(None, None, False, why)


def _neg(value: Fraction | None) -> Fraction | None:
    return None if value is None else -value


def _arithmetic(node: exp.Expr, left: Interval, right: Interval) -> Interval:
    if None in (left.lower, left.upper, right.lower, right.upper):
        return _unbounded(left.why or right.why or NoBounds("an operand has no bounds: clamp it with LEAST and GREATEST", node))
    a, b, c, d = left.lower, left.upper, right.lower, right.upper
    assert a is not None and b is not None and c is not None and d is not None
    integer = left.integer and right.integer
    if isinstance(node, exp.Add):
        return Interval(a + c, b + d, integer)
    if isinstance(node, exp.Sub):
        return Interval(a - d, b - c, integer)
    if isinstance(node, exp.Mul):
        corners = [a * c, a * d, b * c, b * d]
        return Interval(min(corners), max(corners), integer)
    if c <= 0 <= d:
        return _unbounded(NoBounds("the divisor may be 0", node.expression))
    corners = [a / c, a / d, b / c, b / d]
    return Interval(min(corners), max(corners), False)  # '/' divides exactly (a DOUBLE) on every engine


def _hull(parts: list[Interval | None]) -> Interval | None:
    present = [p for p in parts if p is not None]
    if not present:
        return None
    lowers, uppers = [p.lower for p in present], [p.upper for p in present]
    return Interval(None if None in lowers else min(lowers),  # type: ignore[type-var]
                    None if None in uppers else max(uppers),  # type: ignore[type-var]
                    all(p.integer for p in present), next((p.why for p in present if p.why is not None), None))


def _extreme(parts: list[Interval], greatest: bool) -> Interval:
    def pick(values: list[Fraction | None], unbounded_wins: bool) -> Fraction | None:
        known = [v for v in values if v is not None]
        if len(known) < len(values) and unbounded_wins:
            return None
        if not known:
            return None
        return max(known) if greatest else min(known)

    # LEAST: its upper end is the least upper end (one bounded operand suffices); its lower end
    # is the least lower end (any unbounded operand makes it unbounded). GREATEST, mirrored.
    lower = pick([p.lower for p in parts], unbounded_wins=not greatest)
    upper = pick([p.upper for p in parts], unbounded_wins=greatest)
    return Interval(lower, upper, all(p.integer for p in parts), next((p.why for p in parts if p.why is not None), None))

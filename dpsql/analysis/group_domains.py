"""Public domains of GROUP BY expressions, derived from the policy alone (never from data).

`GROUP BY CASE WHEN age < 30 THEN 'young' ELSE 'older' END`, `GROUP BY age // 10 * 10`,
`GROUP BY date_trunc('month', hired)`, `GROUP BY upper(dept)`: each key is a per-row function
of one row. Its domain (the keys released, empty ones too) is computed here by evaluating the
expression over *sets* of possible values taken from the policy:

- a literal is {v}; a column with declared `values` is those values; a bool column {false,
  true}; a bounded int or date column every value between its bounds (date and timestamp
  parts and truncations are computed from the bounds directly);
- an operator or function maps every combination of its operands' sets (a superset when a
  column appears twice: extra keys are released empty, never missing ones);
- CASE / IF take the union of their result branches, plus NULL when there is no ELSE;
- a comparison or other predicate is {false, true};
- LN, LOG, EXP, SQRT, CBRT and POWER(x, c) map a listed operand value by value, as DuckDB
  computes them (`GROUP BY LOG(CASE WHEN age < 50 THEN 50 ELSE 1 END)`: two keys); the engine
  computes such a key from the same literals (`exact_key`), so every engine agrees to the bit;
- FLOOR, CEIL, ROUND and `//` of a bounded numeric expression give every integer of its
  interval (analysis/value_bounds.py), and so does EXTRACT(EPOCH ...) under them (Grafana's
  `floor(extract(epoch from t) / 86400) * 86400`);
- CAST keeps a set's values in the target type as the engine converts them (an integer target
  keeps the values it holds, rounds a DOUBLE half to even and a DECIMAL half away from zero: both
  are listed for a half, since dpsql does not tell the two apart; a DATE target truncates a
  timestamp), and `to_timestamp(seconds)` maps seconds since 1970 to timestamps (Tableau's
  `CAST(EXTRACT(YEAR FROM t) AS INTEGER)`, Metabase's `CAST(date_trunc('month', d) AS date)`);
- a date or timestamp operand may be a column or a CAST of one to DATE or TIMESTAMP
  (`date_trunc('month', CAST(t AS DATE))`).

`narrowed` intersects a column's bounds with the constant ranges the WHERE clause puts on it
(`t >= '2025-01-01' AND t < '2025-04-01'`, BETWEEN, and constant date expressions such as
`date_trunc('month', now() + INTERVAL '-12 month')`, analysis/constant_instants.py): rows outside
them are filtered out, so the keys only they could produce would be empty groups. The constants
are in the SQL, or the clock read at plan time (frontend/clock.py): public.

A domain of more than MAX_DERIVED_KEYS keys, or an expression whose values cannot be listed
(an unbounded column, a function not modelled here), has no public domain: its keys are then
chosen by partition selection, like a column without declared values.

Values the engine cannot produce as a key are not listed, exactly as the engine computes them
(the key is cast to its type inside TRY, so a value that fails is the NULL key): an integer
outside BIGINT (overflow), FLOOR/CEIL/ROUND of an infinite or NaN value as the key itself (a
failing cast to BIGINT; inside a CAST to text it is 'inf' or 'nan', as in the engine), and NaN
(a NaN key equals no listed key). Infinite DOUBLE keys are listed: the engine
computes them (`age * 1e308 * 10` is +inf). Date and timestamp enumerations stop at the last
key Python can represent (year 9999): no later key is within the bounds. Rows whose key falls
outside a public domain (a value outside the declared bounds, a text value not declared) are
dropped from the answer, as for a column key. Nothing here reads data, so the released key set
is the same for every pair of neighbouring tables.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from sqlglot import exp

from dpsql.analysis.constant_instants import DATE_TYPES, TIMESTAMP_TYPES, UNITS, constant_instant, truncate, unit_name
from dpsql.analysis.monotone import CLASSES as MONOTONE_CLASSES
from dpsql.analysis.monotone import Monotone, monotone_call
from dpsql.analysis.value_bounds import NoBounds, epoch_operand, value_bounds
from dpsql.catalog.policy import Column, ColumnType, Table
from dpsql.frontend.privacy_dialect import Dpsql

MAX_DERIVED_KEYS = 10_000  # beyond this many keys, partition selection picks them (delta > 0)
MAX_PUBLIC_GROUPS = 100_000  # key combinations released when derived domains are crossed
_MAX_SET = 200_000  # the largest intermediate value set evaluated (a 500-year date range fits)
EPOCH = dt.datetime(1970, 1, 1)
BIGINT_MIN, BIGINT_MAX = -(2**63), 2**63 - 1  # an int key is cast to BIGINT: values outside are NULL


class NoDomain(Exception):
    """The expression's values cannot be listed from the policy; `node` is the part at fault."""

    def __init__(self, reason: str, node: exp.Expr) -> None:
        super().__init__(reason)
        self.reason = reason
        self.node = node


@dataclass(frozen=True, slots=True)
class _Values:
    """The possible values of a sub-expression: a finite set, or None when too many to list."""

    type: ColumnType
    values: frozenset[Any] | None
    node: exp.Expr


@dataclass(frozen=True, slots=True)
class DerivedKey:
    """A GROUP BY expression's key column: the type of its values and its public domain (None:
    partition selection), with how the domain was derived (EXPLAIN) or why there is none."""

    column: Column
    derivation: str


def derive_key(expr: exp.Expr, table: Table) -> DerivedKey:
    """The key column of GROUP BY `expr` (over policy columns, unqualified). Raises NoDomain when
    the expression's type cannot be determined (then it cannot be a key at all)."""
    name = expr.sql(dialect=Dpsql)
    try:
        found = _evaluate(expr, table)
    except _TooMany as many:
        return DerivedKey(Column(name=name, type=many.type), f"more than {MAX_DERIVED_KEYS:,} possible keys: partition selection")
    values = found.values
    if values is None or len(values) > MAX_DERIVED_KEYS:
        count = "" if values is None else f" ({len(values):,})"
        return DerivedKey(Column(name=name, type=found.type),
                          f"more than {MAX_DERIVED_KEYS:,} possible keys{count}: partition selection")
    ordered = tuple(sorted(_keys(found.type, values), key=_order))
    return DerivedKey(Column(name=name, type=found.type, values=ordered),
                      f"{len(ordered)} key(s) derived from the policy")


class _TooMany(Exception):
    def __init__(self, type_: ColumnType) -> None:
        super().__init__(type_)
        self.type = type_


def cap_public_groups(keys: list[Column], derived: list[Any]) -> list[Any]:
    """Derived keys without their public domain when the key combinations (the product of the
    public domains' sizes) would exceed MAX_PUBLIC_GROUPS: every combination is released, so an
    analyst could otherwise make the release draw noise for billions of empty groups. Partition
    selection then picks the keys. `derived[i]` is key i's GroupKey when it is an expression."""
    sizes = [len(c.values) for c in keys if c.values is not None]
    if not any(d is not None and d.column.values is not None for d in derived) or math.prod(sizes) <= MAX_PUBLIC_GROUPS:
        return derived
    note = f"the key combinations exceed {MAX_PUBLIC_GROUPS:,}: partition selection"
    return [d if d is None or d.column.values is None else
            replace(d, column=Column(name=d.column.name, type=d.column.type), derivation=note) for d in derived]


def _order(value: Any) -> tuple[bool, Any]:
    return (value is None, value if value is not None else 0)


def _evaluate(node: exp.Expr, table: Table) -> _Values:  # noqa: C901 - a visitor: one branch per expression kind
    if isinstance(node, exp.Paren):
        return _evaluate(node.this, table)
    if isinstance(node, exp.Null):
        raise NoDomain("a NULL key has no type", node)
    if isinstance(node, exp.Boolean):
        return _Values("bool", frozenset({node.this}), node)
    if isinstance(node, exp.Literal):
        return _literal(node)
    if isinstance(node, exp.Column):
        return _column(node, table)
    if isinstance(node, (exp.Case, exp.If, exp.Coalesce)):
        return _branches(node, table)
    if isinstance(node, (exp.Predicate, exp.Connector, exp.Not)):
        return _Values("bool", frozenset({False, True}), node)  # GROUP BY income > 50000: true, false (NULL dropped)
    if isinstance(node, (exp.Floor, exp.Ceil, exp.Round, exp.IntDiv)):
        return _integer_valued(node, table)
    if isinstance(node, (exp.Neg, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)):
        return _arithmetic(node, table)
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)):
        return _truncation(node, table)
    if isinstance(node, MONOTONE_CLASSES):
        return _monotone(node, table)
    epoch = epoch_operand(node)
    if epoch is not None:
        _span(epoch, table)  # a date or timestamp column, not the unit; its seconds are too many to list
        return _Values("float", None, node)
    if isinstance(node, exp.UnixToTime):
        return _from_epoch(node, table)
    part = _date_part(node)
    if part is not None:
        return _part(node, part[0], part[1], table)
    text = _TEXT_FUNCTIONS.get(type(node))
    if text is not None:
        return _text(node, text, table)
    if isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.TEXT_TYPES):
        inner = _evaluate(node.this, table)
        return _map(node, "text", [inner], lambda v: None if v is None else _as_text(v))
    if isinstance(node, (exp.Cast, exp.TryCast)):
        return _cast(node, table)
    raise NoDomain(f"dpsql lists no domain through {node.key.upper()}", node)


# --- casts -------------------------------------------------------------------------------------

# Integer targets and the bits of their signed range (a value outside it fails the cast: NULL).
_INTEGER_BITS = {exp.DataType.Type.TINYINT: 8, exp.DataType.Type.SMALLINT: 16, exp.DataType.Type.INT: 32,
                 exp.DataType.Type.BIGINT: 64}
_DATE, _TIMESTAMP = DATE_TYPES, TIMESTAMP_TYPES


def _cast(node: exp.Cast, table: Table) -> _Values:
    """CAST to an integer, DOUBLE, DATE or TIMESTAMP type, as the engine converts each value."""
    target = node.to.this
    if target in _DATE + _TIMESTAMP and _spanned(node.this):
        return _cast_instants(node, table)
    bits = _INTEGER_BITS.get(target)
    if bits is not None:
        return _cast_integer(node, bits, table)
    inner = _evaluate(node.this, table)
    if target == exp.DataType.Type.DOUBLE and inner.type in ("int", "float"):
        return _map(node, "float", [inner], lambda v: None if v is None else float(v))
    if target == exp.DataType.Type.BOOLEAN and inner.type == "bool":
        return inner
    if target in _DATE and inner.type in ("date", "timestamp"):
        return _map(node, "date", [inner], lambda v: None if v is None else v.date() if isinstance(v, dt.datetime) else v)
    if target in _TIMESTAMP and inner.type in ("date", "timestamp"):
        return _map(node, "timestamp", [inner], lambda v: None if v is None else
                    v if isinstance(v, dt.datetime) else dt.datetime(v.year, v.month, v.day))
    raise NoDomain(f"dpsql lists no domain through CAST to {node.to.sql(dialect=Dpsql)} of this type", node)


def _cast_integer(node: exp.Cast, bits: int, table: Table) -> _Values:
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    inner = _evaluate(node.this, table)
    if inner.type == "bool":
        return _map(node, "int", [inner], lambda v: None if v is None else int(v))
    if inner.type not in ("int", "float"):
        raise NoDomain(f"dpsql lists no domain through CAST of {inner.type} to an integer", node)
    if inner.values is None:
        try:
            interval = value_bounds(node.this, table)
        except NoBounds:
            raise _TooMany("int") from None
        assert interval.lower is not None and interval.upper is not None
        first, last = max(math.floor(interval.lower), low), min(math.ceil(interval.upper), high)
        if last - first + 1 > MAX_DERIVED_KEYS:
            raise _TooMany("int")
        return _Values("int", frozenset(range(first, last + 1)), node)
    out: set[Any] = set()
    for value in inner.values:
        for converted in _to_integers(value):
            if low <= converted <= high:
                out.add(converted)
    return _Values("int", frozenset(out), node)


def _to_integers(value: Any) -> tuple[int, ...]:
    """The integers the engines may cast a number to: itself, or a fraction's rounding (a DOUBLE
    rounds half to even, a DECIMAL half away from zero: both, when they differ); none for NULL,
    NaN or an infinity (the cast fails: NULL)."""
    if value is None or isinstance(value, float) and not math.isfinite(value):
        return ()
    if isinstance(value, int):
        return (value,)
    return tuple({round(value), _round_half_away(value)})


def _spanned(operand: exp.Expr) -> bool:
    """Whether an operand is a column (or a cast of one): its instants come from the bounds."""
    while isinstance(operand, (exp.Paren, exp.Cast, exp.TryCast)):
        operand = operand.this
    return isinstance(operand, exp.Column)


def _cast_instants(node: exp.Cast, table: Table) -> _Values:
    """CAST(t AS DATE) or CAST(d AS TIMESTAMP) of a bounded column: its days (a timestamp cast to
    a date truncates), or its timestamps (too many to list unless it is a date cast up)."""
    try:
        kind, first, last = _span(node, table)
    except _TooMany:
        raise _TooMany("date" if node.to.this in _DATE else "timestamp") from None
    if kind == "date":
        return _Values("date", frozenset(_days(first, last)), node)
    source, _, _ = _span(node.this, table)
    if source == "date":  # midnight of every day
        return _Values("timestamp", frozenset(dt.datetime(d.year, d.month, d.day) for d in _days(first, last)), node)
    return _Values("timestamp", None, node)


def _from_epoch(node: exp.UnixToTime, table: Table) -> _Values:
    """to_timestamp(seconds): the timestamp that many seconds after 1970-01-01 00:00 (UTC, no
    zone), to the microsecond (rounded half to even, as the engines cast)."""
    if any(node.args.get(a) is not None for a in ("scale", "zone", "hours", "minutes", "format", "target_type")):
        raise NoDomain("to_timestamp takes one argument, the seconds since 1970", node)
    inner = _evaluate(node.this, table)
    if inner.type not in ("int", "float"):
        raise NoDomain("to_timestamp applies to numbers", node)
    if inner.values is None:
        raise _TooMany("timestamp")

    def instant_of(seconds: Any) -> Any:
        if seconds is None or isinstance(seconds, float) and not math.isfinite(seconds):
            return None
        micros = round(Fraction(seconds) * 1_000_000)
        try:
            return EPOCH + dt.timedelta(microseconds=micros)
        except OverflowError:
            return None  # outside years 1-9999: no key (the engine's value is NULL there)

    return _map(node, "timestamp", [inner], instant_of)


def _literal(node: exp.Literal) -> _Values:
    if node.is_string:
        return _Values("text", frozenset({node.this}), node)
    text = node.this.strip()
    # Digits alone are an integer (when BIGINT holds it: the engine reads a wider one as a wider
    # type); anything else is a DOUBLE, read by float() (an exponent never expands into digits).
    if text.isdigit() and len(text) <= 19 and int(text) <= BIGINT_MAX:
        return _Values("int", frozenset({int(text)}), node)
    try:
        value = float(text)
    except ValueError:
        raise NoDomain(f"dpsql reads no number from the literal {text[:20]}", node) from None
    return _Values("float", frozenset({value}), node)


def _column(node: exp.Column, table: Table) -> _Values:
    column = table.column(node.name)
    if column is None:
        raise NoDomain(f"'{node.name}' is not a column of the policy", node)
    if column.name == table.privacy_unit:
        raise NoDomain("it reads the privacy unit (every group would be one person)", node)
    if column.values is not None:
        return _Values(column.type, frozenset(column.values), node)
    if column.type == "bool":
        return _Values("bool", frozenset({False, True}), node)
    if column.bounded and column.type in ("int", "date"):
        assert column.lower is not None and column.upper is not None
        lower, upper = int(column.lower), int(column.upper)
        if upper - lower + 1 > _MAX_SET:
            return _Values(column.type, None, node)
        if column.type == "int":
            return _Values("int", frozenset(range(lower, upper + 1)), node)
        return _Values("date", frozenset(dt.date.fromordinal(d) for d in range(lower, upper + 1)), node)
    return _Values(column.type, None, node)


def _branches(node: exp.Expr, table: Table) -> _Values:
    if isinstance(node, exp.Case):
        results = [i.args["true"] for i in node.args.get("ifs") or []]
        default = node.args.get("default")
    elif isinstance(node, exp.If):
        results, default = [node.args["true"]], node.args.get("false")
    else:
        results, default = [node.this, *node.expressions], None
    parts = [_evaluate(r, table) for r in results if not isinstance(r, exp.Null)]
    if default is not None and not isinstance(default, exp.Null):
        parts.append(_evaluate(default, table))
    if not parts:
        raise NoDomain("every branch is NULL", node)
    kind = _common_type([p.type for p in parts], node)
    if any(p.values is None for p in parts):
        return _Values(kind, None, node)
    union: set[Any] = set().union(*[p.values for p in parts if p.values is not None])
    if isinstance(node, (exp.Case, exp.If)) and (default is None or isinstance(default, exp.Null)):
        union.add(None)  # no ELSE: rows matching no branch are the NULL key
    if kind == "float":
        union = {None if v is None else float(v) for v in union}
    return _Values(kind, frozenset(union), node)


def _common_type(types: list[ColumnType], node: exp.Expr) -> ColumnType:
    kinds = set(types)
    if kinds <= {"int", "float"}:
        return "float" if "float" in kinds else "int"
    if len(kinds) == 1:
        return types[0]
    raise NoDomain(f"its results mix types ({', '.join(sorted(kinds))}): cast them to one type", node)


def _arithmetic(node: exp.Expr, table: Table) -> _Values:
    operands = [_evaluate(node.this, table)] if isinstance(node, exp.Neg) else [
        _evaluate(node.this, table), _evaluate(node.expression, table)]
    if any(o.type not in ("int", "float") for o in operands):
        raise NoDomain("arithmetic applies to numbers", node)
    integer = all(o.type == "int" for o in operands) and not isinstance(node, exp.Div)
    kind: ColumnType = "int" if integer else "float"
    if isinstance(node, (exp.IntDiv, exp.Mod)) and not integer:
        # DuckDB's // on a DOUBLE divides exactly, Spark's DIV truncates: no domain both agree on.
        return _Values("float", None, node)
    return _map(node, kind, operands, lambda *v: _apply(node, integer, *v))


def _apply(node: exp.Expr, integer: bool, *values: Any) -> Any:
    if any(v is None for v in values):
        return None
    if isinstance(node, exp.Neg):
        return -values[0]
    a, b = values
    if isinstance(node, exp.Add):
        return a + b
    if isinstance(node, exp.Sub):
        return a - b
    if isinstance(node, exp.Mul):
        return a * b
    if b == 0:
        return None  # an error inside TRY: the row's key is NULL, outside the domain
    if isinstance(node, exp.Div):
        return float(a) / float(b)
    if not integer:
        raise _Unlisted
    quotient = _truncated(a, b)
    return a - b * quotient if isinstance(node, exp.Mod) else quotient  # exact: the remainder takes a's sign


def _truncated(a: int, b: int) -> int:
    """DuckDB's and Spark's integer division: the quotient rounded towards zero."""
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b > 0) else -quotient


class _Unlisted(Exception):
    """An operation the set evaluation does not model for these operand types."""


def _map(node: exp.Expr, kind: ColumnType, operands: list[_Values], fn: Callable[..., Any]) -> _Values:
    if any(o.values is None for o in operands):
        return _Values(kind, None, node)
    size = math.prod(len(o.values or ()) for o in operands)
    if size > _MAX_SET:
        return _Values(kind, None, node)
    out: set[Any] = set()
    try:
        for combo in _product([sorted(o.values or (), key=_order) for o in operands]):
            out.add(fn(*combo))
    except _Unlisted:
        raise NoDomain(f"dpsql lists no domain through {node.key.upper()} of these types", node) from None
    out.discard(None)  # NULL inputs and failing rows: outside the domain, their rows are dropped
    # BIGINT arithmetic that overflows fails inside TRY: NULL, and NULL from there on.
    return _Values(kind, frozenset(v for v in out if not _wide(v)), node)


def _wide(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and not BIGINT_MIN <= value <= BIGINT_MAX


def _keys(kind: ColumnType, values: frozenset[Any]) -> frozenset[Any]:
    """The values the engine can produce as a key of this type (see the module doc): a BIGINT
    key is an integer in range (an integral DOUBLE from FLOOR/CEIL/ROUND casts to it, an
    infinite or NaN one does not); a DOUBLE key is not NaN."""
    if kind == "int":
        ints = {int(v) if isinstance(v, float) and v.is_integer() else v for v in values}
        return frozenset(v for v in ints if v is None or isinstance(v, int) and not _wide(v))
    if kind == "float":
        return frozenset(v for v in values if not (isinstance(v, float) and math.isnan(v)))
    return values


def _product(sets: list[list[Any]]) -> Iterable[tuple[Any, ...]]:
    if not sets:
        yield ()
        return
    for head in sets[0]:
        for tail in _product(sets[1:]):
            yield (head, *tail)


def _integer_valued(node: exp.Expr, table: Table) -> _Values:
    """FLOOR, CEIL, ROUND (to an integer) and `//`: enumerated when the operand is, else every
    integer of the operand's interval (from the policy's bounds)."""
    if isinstance(node, exp.Round) and node.args.get("decimals") is not None:
        raise NoDomain("ROUND with decimals: round to an integer, or use FLOOR(x * 10) / 10", node)
    if isinstance(node, exp.IntDiv):
        listed = _arithmetic(node, table)
        if listed.values is not None or listed.type != "int":
            return listed  # listed, or a float operand (partition selection)
    else:
        inner = _evaluate(node.this, table)
        if inner.type not in ("int", "float"):
            raise NoDomain(f"{node.key.upper()} applies to numbers", node)
        fn: Callable[[Any], Any] = _ROUNDINGS[type(node)]
        if inner.values is not None:
            return _map(node, "int", [inner], lambda v: None if v is None else fn(v))
    operand = exp.Div(this=node.this.copy(), expression=node.expression.copy()) if isinstance(node, exp.IntDiv) else node.this
    try:
        interval = value_bounds(operand, table)
    except NoBounds:
        raise _TooMany("int") from None  # a number without listable values: partition selection
    assert interval.lower is not None and interval.upper is not None
    if isinstance(node, exp.IntDiv):
        low, high = math.floor(interval.lower), math.ceil(interval.upper)
    else:
        rounding = _ROUNDINGS[type(node)]
        low, high = rounding(interval.lower), rounding(interval.upper)  # monotone (exact bounds: finite)
    if high - low + 1 > MAX_DERIVED_KEYS:
        raise _TooMany("int")
    return _Values("int", frozenset(range(int(low), int(high) + 1)), node)


def _round_half_away(value: Any) -> int:
    return int(math.floor(abs(value) + 0.5) * (1 if value >= 0 else -1))


def _finite(rounding: Callable[[Any], int]) -> Callable[[Any], Any]:
    """FLOOR/CEIL/ROUND: of a DOUBLE a DOUBLE, as in the engines (an infinite or NaN one
    unchanged), of an integer an integer. As the key itself the value is cast to BIGINT (`_keys`:
    an infinite or NaN one fails, NULL); inside CAST(... AS VARCHAR) a DOUBLE reads '3.0', 'inf'
    or 'nan', as in DuckDB."""
    def rounded(value: Any) -> Any:
        if not isinstance(value, float):
            return rounding(value)
        return float(rounding(value)) if math.isfinite(value) else value
    return rounded


_ROUNDINGS: dict[type[exp.Expr], Callable[[Any], Any]] = {
    exp.Floor: _finite(math.floor), exp.Ceil: _finite(math.ceil), exp.Round: _finite(_round_half_away)}


# --- LN, LOG, EXP, SQRT, CBRT, POWER: value by value ---------------------------------------------

MAX_MAPPED = 1_000  # listed operand values a key through one of them is mapped from, one by one


def _monotone(node: exp.Expr, table: Table) -> _Values:
    """LOG(CASE WHEN age < 50 THEN 50 ELSE 1 END): each listed operand value mapped as DuckDB
    computes it (analysis/monotone.py); NaN (outside the function's domain) is no key."""
    call = monotone_call(node)
    if call is None:
        raise NoDomain(f"dpsql lists no domain through {node.key.upper()} without a literal base or exponent", node)
    inner = _evaluate(call.operand, table)
    if inner.type not in ("int", "float"):
        raise NoDomain(f"{call.name} applies to numbers", node)
    if inner.values is None or len(inner.values) > MAX_MAPPED:
        return _Values("float", None, node)  # too many to map one by one: partition selection
    return _Values("float", frozenset(_mapped(call, inner.values).values()), node)


def _mapped(call: Monotone, values: frozenset[Any]) -> dict[Any, float]:
    """Each finite operand value -> its key (NaN left out: no key equals it)."""
    out = {}
    for v in values:
        if v is None or isinstance(v, bool) or not math.isfinite(float(v)):
            continue
        key = call.value(float(v))
        if not math.isnan(key):
            out[v] = key
    return out


def exact_key(expr: exp.Expr, table: Table) -> exp.Expr:
    """The key as the engines compute it: every LN/LOG/EXP/SQRT/CBRT/POWER call whose operand has
    at most MAX_MAPPED listed values becomes `CASE operand WHEN v THEN f(v) ... ELSE NaN END`,
    with each f(v) the DOUBLE listed in the domain. The C library (DuckDB, Python) and Java
    (Spark) can differ in the last bit of LN, LOG10 and EXP; written as literals, the keys are
    the listed ones on every engine. An operand value outside the list (outside the policy's
    bounds) gives NaN on every engine, a key no listed key equals: its row is dropped, as a
    column key's value outside the declared bounds is."""
    if next(expr.find_all(*MONOTONE_CLASSES), None) is None:
        return expr
    copy, changed = expr.copy(), False
    for node in reversed(list(copy.find_all(*MONOTONE_CLASSES))):  # the innermost calls first
        call = monotone_call(node)
        try:
            inner = _evaluate(call.operand, table) if call is not None else None
        except (NoDomain, _TooMany):
            continue
        if call is None or inner is None or inner.type not in ("int", "float") or inner.values is None \
                or len(inner.values) > MAX_MAPPED:
            continue
        mapping = _mapped(call, inner.values)
        if not mapping:
            continue
        branches = [exp.If(this=_double_literal(v) if isinstance(v, float) else exp.Literal.number(v), true=_double_literal(k))
                    for v, k in sorted(mapping.items())]
        mapped = exp.Case(this=call.operand.copy(), ifs=branches, default=_double_literal(math.nan))
        if node is copy:
            return mapped  # the key is the call itself (the innermost calls were rewritten before)
        node.replace(mapped)
        changed = True
    return copy if changed else expr


def _double_literal(value: float) -> exp.Expr:
    text = repr(value) if math.isfinite(value) else "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return exp.cast(exp.Literal.string(text) if not math.isfinite(value) else exp.Literal.number(text), "DOUBLE")


# --- dates and timestamps ----------------------------------------------------------------------

_UNITS = UNITS
_PART_FUNCTIONS: dict[type, str] = {
    exp.Year: "year", exp.Month: "month", exp.Quarter: "quarter", exp.Day: "day", exp.DayOfMonth: "day",
    exp.DayOfWeek: "dow", exp.DayOfYear: "doy", exp.Week: "week", exp.WeekOfYear: "week",
    exp.Hour: "hour", exp.Minute: "minute", exp.Second: "second",
}
_PART_ALIASES = {"years": "year", "yr": "year", "months": "month", "mon": "month", "quarters": "quarter",
                 "days": "day", "dayofmonth": "day", "dayofweek": "dow", "weekday": "dow", "dayofyear": "doy",
                 "weeks": "week", "hours": "hour", "minutes": "minute", "seconds": "second", "isodow": "isodow"}
_PART_NAMES = {"year", "quarter", "month", "week", "day", "dow", "isodow", "doy", "hour", "minute", "second"}


def _date_part(node: exp.Expr) -> tuple[str, exp.Expr] | None:
    """(part, operand) of year(x), EXTRACT(part FROM x), date_part('part', x); else None."""
    for kind, part in _PART_FUNCTIONS.items():
        if type(node) is kind:
            return part, node.this
    if isinstance(node, exp.Extract):
        return _part_name(node.this.name, node), node.expression
    if isinstance(node, exp.Anonymous) and node.name.lower() in ("date_part", "datepart") and len(node.expressions) == 2:
        first = node.expressions[0]
        if isinstance(first, exp.Literal) and first.is_string:
            return _part_name(first.this, node), node.expressions[1]
    return None


def _part_name(text: str, node: exp.Expr) -> str:
    part = _PART_ALIASES.get(text.lower(), text.lower())
    if part not in _PART_NAMES:
        raise NoDomain(f"dpsql lists no domain for the date part '{text}'", node)
    return part


def _span(operand: exp.Expr, table: Table) -> tuple[ColumnType, dt.datetime, dt.datetime]:
    """The type and [first, last] instant of a date or timestamp column (or of a CAST of one to
    DATE or TIMESTAMP: a date cast truncates to the day), from its bounds."""
    if isinstance(operand, exp.Paren):
        return _span(operand.this, table)
    if isinstance(operand, (exp.Cast, exp.TryCast)) and operand.to.this in _DATE + _TIMESTAMP:
        _, first, last = _span(operand.this, table)
        if operand.to.this in _DATE:
            return "date", truncate(first, "day"), truncate(last, "day")
        return "timestamp", first, last
    if not isinstance(operand, exp.Column):
        raise NoDomain("date parts and truncations apply to a date or timestamp column", operand)
    column = table.column(operand.name)
    if column is None or column.type not in ("date", "timestamp"):
        raise NoDomain(f"'{operand.name}' is not a date or timestamp column", operand)
    if column.name == table.privacy_unit:
        raise NoDomain("it reads the privacy unit (every group would be one person)", operand)
    if not column.bounded:
        raise _TooMany(column.type)  # the caller names the key's own type
    assert column.lower is not None and column.upper is not None
    if column.type == "date":
        first = dt.datetime.fromordinal(int(column.lower))
        last = dt.datetime.fromordinal(int(column.upper))
    else:
        first, last = instant(column.lower), instant(column.upper)
    return column.type, first, last


def instant(seconds: Fraction) -> dt.datetime:
    """A timestamp bound (seconds since 1970-01-01 00:00, no time zone) as a datetime."""
    return EPOCH + dt.timedelta(microseconds=int(seconds * 1_000_000))


def _days(first: dt.datetime, last: dt.datetime) -> Iterable[dt.date]:
    day, end = first.date(), last.date()
    if (end - day).days + 1 > _MAX_SET:
        raise _TooMany("int")
    while day <= end:
        yield day
        if day == dt.date.max:
            return  # 9999-12-31: no later day exists (nor is within the bounds)
        day += dt.timedelta(days=1)


def _part(node: exp.Expr, part: str, operand: exp.Expr, table: Table) -> _Values:
    try:
        kind, first, last = _span(operand, table)
    except _TooMany:
        raise _TooMany("int") from None  # a date part is an integer
    if part in ("hour", "minute", "second"):
        if kind == "date":
            return _Values("int", frozenset({0}), node)
        return _Values("int", frozenset(range(24 if part == "hour" else 60)), node)
    if part == "year":
        return _Values("int", frozenset(range(first.year, last.year + 1)), node)
    values = {_day_part(day, part) for day in _days(first, last)}
    return _Values("int", frozenset(values), node)


def _day_part(day: dt.date, part: str) -> int:
    if part == "month":
        return day.month
    if part == "quarter":
        return (day.month - 1) // 3 + 1
    if part == "day":
        return day.day
    if part == "dow":
        return day.isoweekday() % 7  # DuckDB: Sunday = 0
    if part == "isodow":
        return day.isoweekday()
    if part == "doy":
        return day.timetuple().tm_yday
    return day.isocalendar()[1]  # week: the ISO week


def _truncation(node: exp.Expr, table: Table) -> _Values:
    unit = node.args.get("unit")
    text = unit_name(unit.name if unit is not None else "")
    if text not in _UNITS:
        raise NoDomain(f"dpsql lists no domain for date_trunc to '{text}'", node)
    try:
        kind, first, last = _span(node.this, table)
    except _TooMany as many:  # unbounded: partition selection over keys of the truncation's type
        raise _TooMany("date" if many.type == "date" and text not in ("hour", "minute", "second") else "timestamp") from None
    start = truncate(first, text)
    keys: list[dt.datetime] = []
    following: dt.datetime | None = start
    while following is not None and following <= last:
        keys.append(following)
        if len(keys) > MAX_DERIVED_KEYS:
            raise _TooMany("date" if kind == "date" and text not in ("hour", "minute", "second") else "timestamp")
        following = _next(following, text)
    if kind == "date" and text not in ("hour", "minute", "second"):
        return _Values("date", frozenset(k.date() for k in keys), node)  # the key is cast back to DATE
    return _Values("timestamp", frozenset(keys), node)


def _next(value: dt.datetime, unit: str) -> dt.datetime | None:
    """The next key after `value`; None past year 9999 (Python's last datetime: no bound is later)."""
    if unit in ("year", "quarter", "month"):
        months = {"year": 12, "quarter": 3, "month": 1}[unit]
        total = value.month - 1 + months
        year = value.year + total // 12
        return value.replace(year=year, month=total % 12 + 1) if year <= dt.MAXYEAR else None
    step = {"week": dt.timedelta(weeks=1), "day": dt.timedelta(days=1), "hour": dt.timedelta(hours=1),
            "minute": dt.timedelta(minutes=1), "second": dt.timedelta(seconds=1)}[unit]
    return value + step if dt.datetime.max - value >= step else None


# --- text functions of listed values -------------------------------------------------------------


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _left(node: exp.Expr, v: str) -> str:
    return v[: _int_arg(node, "expression")]


def _right(node: exp.Expr, v: str) -> str:
    n = _int_arg(node, "expression")
    return v[-n:] if n > 0 else ""


def _substring(node: exp.Expr, v: str) -> str:
    start = _int_arg(node, "start")
    length = node.args.get("length")
    begin = max(start - 1, 0)
    if length is None:
        return v[begin:]
    count = _int_arg(node, "length") + min(start - 1, 0)
    return v[begin: begin + max(count, 0)]


def _int_arg(node: exp.Expr, name: str) -> int:
    arg = node.args.get(name)
    if isinstance(arg, exp.Literal) and not arg.is_string and arg.this.isdigit():
        return int(arg.this)
    raise _Unlisted


def _trim(node: exp.Expr, v: str) -> str:
    if node.args.get("expression") is not None or node.args.get("position") is not None:
        raise _Unlisted  # TRIM of other characters, or one side only: not modelled
    return v.strip(" ")


_TEXT_FUNCTIONS: dict[type, Callable[[exp.Expr, str], Any]] = {
    exp.Upper: lambda _, v: v.upper(),
    exp.Trim: _trim,
    exp.Lower: lambda _, v: v.lower(),
    exp.Left: _left,
    exp.Right: _right,
    exp.Substring: _substring,
    exp.Length: lambda _, v: len(v),
}


def _text(node: exp.Expr, fn: Callable[[exp.Expr, str], Any], table: Table) -> _Values:
    inner = _evaluate(node.this, table)
    if inner.type != "text":
        raise NoDomain(f"{node.key.upper()} applies to text", node)
    kind: ColumnType = "int" if isinstance(node, exp.Length) else "text"
    return _map(node, kind, [inner], lambda v: None if v is None else fn(node, v))


# --- narrowing by constant WHERE ranges ------------------------------------------------------------

_COMPARISONS: dict[type, str] = {exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<=", exp.EQ: "="}
_FLIPPED = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "=": "="}
_MICROSECOND = Fraction(1, 1_000_000)


def narrowed(table: Table, where: exp.Expr | None) -> Table:
    """`table` with each column's bounds intersected with the constant ranges that the WHERE's
    top-level conjuncts put on it (`t >= c1`, `t < c2`, `t BETWEEN c1 AND c2`, `t = c`, constants
    on either side), for deriving key domains.

    A row the WHERE keeps satisfies every conjunct, so its value lies in the range; a key only
    rows outside the range could produce would be an empty group. The constants are in the SQL
    (public), so the narrowed domain still depends on the policy and the query only. A range is
    read as the engines compare: a date column against a constant with a time of day widens to
    that day (`d < '2025-03-31 12:00'` keeps 2025-03-31); a timestamp's strict bound is one
    microsecond inside (the engines' resolution); a constant dpsql does not evaluate exactly (a
    time zone offset, an expression other than those of analysis/constant_instants.py) narrows
    nothing. A range that leaves no value changes nothing."""
    if where is None:
        return table
    ranges: dict[str, tuple[Fraction | None, Fraction | None]] = {}
    for conjunct in _conjuncts(where.this if isinstance(where, exp.Where) else where):
        for name, lower, upper in _ranges(conjunct, table):
            low, high = ranges.get(name, (None, None))
            ranges[name] = (lower if low is None or lower is not None and lower > low else low,
                            upper if high is None or upper is not None and upper < high else high)
    if not ranges:
        return table
    columns = dict(table.columns)
    for name, (lower, upper) in ranges.items():
        column = columns[name]
        low = column.lower if lower is None or column.lower is not None and column.lower > lower else lower
        high = column.upper if upper is None or column.upper is not None and column.upper < upper else upper
        if low is not None and high is not None and low > high:
            continue  # no row passes: keep the policy's domain (all empty) rather than none
        columns[name] = replace(column, lower=low, upper=high)
    return replace(table, columns=columns)


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def _ranges(node: exp.Expr, table: Table) -> list[tuple[str, Fraction | None, Fraction | None]]:
    """(column, lower, upper) for each bound one conjunct puts on a column (None: no bound)."""
    if isinstance(node, exp.Between) and not node.args.get("symmetric"):
        column = _range_column(node.this, table)
        if column is None:
            return []
        low, high = _bound(column, ">=", node.args["low"]), _bound(column, "<=", node.args["high"])
        return [(column.name, low[0], high[1])]
    op = _COMPARISONS.get(type(node))
    if op is None:
        return []
    left, right = node.this, node.expression
    column = _range_column(left, table)
    if column is None:
        column, right, op = _range_column(right, table), left, _FLIPPED[op]
    if column is None:
        return []
    lower, upper = _bound(column, op, right)
    return [(column.name, lower, upper)] if lower is not None or upper is not None else []


def _range_column(node: exp.Expr, table: Table) -> Column | None:
    while isinstance(node, exp.Paren):
        node = node.this
    if not isinstance(node, exp.Column):
        return None
    column = table.column(node.name)
    return column if column is not None and column.type in ("int", "float", "date", "timestamp") else None


def _bound(column: Column, op: str, node: exp.Expr) -> tuple[Fraction | None, Fraction | None]:
    """The (lower, upper) bound `column op constant` implies, in the column's bound units (a day
    ordinal for a date, seconds since 1970 for a timestamp); (None, None) when it implies none
    that dpsql reads."""
    value = _constant(node, column.type)
    if value is None:
        return None, None
    point, exact = value  # exact: a date constant without a time of day
    if column.type == "int":
        lower = Fraction(math.floor(point) + 1) if op == ">" else Fraction(math.ceil(point))
        upper = Fraction(math.ceil(point) - 1) if op == "<" else Fraction(math.floor(point))
    elif column.type == "date":
        # A constant with a time of day: the engines compare it as a timestamp or truncate it to
        # the date; the day itself is within both readings (a widening, never a narrowing too far).
        day = Fraction(math.floor(point))
        lower = day + 1 if op == ">" else day
        upper = day - 1 if op == "<" and exact else day
    elif column.type == "timestamp":
        lower = point + _MICROSECOND if op == ">" else point
        upper = point - _MICROSECOND if op == "<" else point
    else:
        lower = upper = point  # a float: the closed bound covers the open one
    if op in (">", ">="):
        return lower, None
    if op in ("<", "<="):
        return None, upper
    return lower, upper  # "="


def _constant(node: exp.Expr, kind: str) -> tuple[Fraction, bool] | None:
    """A constant in the bound units of a `kind` column, and whether it is a whole day; None when
    the node is no constant dpsql reads for that column type."""
    while isinstance(node, exp.Paren):
        node = node.this
    if kind in ("int", "float"):
        negative = isinstance(node, exp.Neg)
        inner = node.this if negative else node
        if isinstance(inner, exp.Literal) and not inner.is_string:
            try:
                number = Fraction(inner.this)
            except (ValueError, ZeroDivisionError):
                return None
            return (-number if negative else number), True
        return None
    found = constant_instant(node)  # a literal, a cast, date_trunc, +- INTERVAL: the clock read at plan time too
    if found is None:
        return None
    instant = found[0]
    whole_day = instant.time() == dt.time()
    seconds = _seconds(instant)
    if kind == "date":
        return Fraction(instant.toordinal()) + Fraction(seconds % 86_400) / 86_400, whole_day
    return seconds, whole_day


def _seconds(instant: dt.datetime) -> Fraction:
    delta = instant - EPOCH
    return Fraction(delta.days * 86_400 + delta.seconds) + Fraction(delta.microseconds, 1_000_000)


def listed_keys(expr: exp.Expr, where: exp.Expr | None) -> tuple[ColumnType, tuple[Any, ...]] | None:
    """The constants a top-level WHERE conjunct `expr IN ('a', 'b', ...)` or `expr = 'a'` restricts
    the key expression `expr` to, with their type ("text" for string literals, "int" for integer
    ones); None when no conjunct does. Every row the WHERE keeps has one of them as its key, so
    they are the key's public domain (the constants are in the SQL). TPC-H Q22 groups by a phone
    number's country code and keeps seven codes."""
    if where is None:
        return None
    wanted = _key_text(expr)
    for conjunct in _conjuncts(where.this if isinstance(where, exp.Where) else where):
        if isinstance(conjunct, exp.In) and conjunct.args.get("query") is None and not conjunct.args.get("unnest") \
                and _key_text(conjunct.this) == wanted:
            constants = conjunct.expressions
        elif isinstance(conjunct, exp.EQ) and _key_text(conjunct.this) == wanted:
            constants = [conjunct.expression]
        else:
            continue
        if constants and all(isinstance(c, exp.Literal) and c.is_string for c in constants):
            return "text", tuple(sorted({c.this for c in constants}))
        if constants and all(isinstance(c, exp.Literal) and c.is_int for c in constants):
            return "int", tuple(sorted({int(c.this) for c in constants}))
    return None


def _key_text(node: exp.Expr) -> str:
    """An expression's SQL with columns unqualified and identifiers unquoted (to compare keys)."""
    def visit(sub: exp.Expr) -> exp.Expr:
        if isinstance(sub, exp.Column):
            return exp.column(sub.name.lower())
        return sub

    while isinstance(node, exp.Paren):
        node = node.this
    return node.copy().transform(visit).sql(dialect=Dpsql).lower()

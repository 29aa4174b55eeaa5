"""The analyst's expressions rendered for Spark so that they compute what DuckDB computes.

DuckDB is the reference: the same SQL must give the same answer on every engine. sqlglot maps
DuckDB's functions to Spark's by name, and several names mean something else there, so every
node the analysis typed (`analysis/expression_types.py` writes each node's DuckDB type into it)
is rendered here when Spark's own function differs. dpsql's own plan nodes are untyped and keep
their renderings (`backend/sql/engine_dialects.py`). Each rendering, with the difference it closes:

- `x / y`: DuckDB divides as IEEE DOUBLEs (x / 0 is +-inf, 0 / 0 NaN), Spark returns NULL for a
  zero divisor: `CASE WHEN d <> 0 THEN n / d ELSE n * POWER(d, -1) END` (POWER(+-0, -1) is +-inf).
- `x // y`: DuckDB divides a DOUBLE or DECIMAL exactly (7.5 // 2 is 3.75), Spark's DIV truncates.
- `x % y` of a DOUBLE: fmod on both, but DuckDB's x % 0 is NaN, Spark's NULL.
- `+ - *` of integers: DuckDB fails on overflow (NULL inside TRY), Spark wraps: TRY_ADD and kin.
- LN, LOG10, LOG2, LOG(b, x): DuckDB gives NaN below 0 and -inf at 0, Spark NULL; DuckDB's
  LOG(b, x) is LOG10(x) / LOG10(b), and one-argument LOG is base 10 (natural on Spark).
- CAST to an integer type: DuckDB rounds a DOUBLE half to even and a DECIMAL half away from zero,
  and fails (NULL) out of range, on NaN and infinities; Spark truncates and saturates.
- FLOOR, CEIL, TRUNC: a DOUBLE on DuckDB (also of an integer), a BIGINT on Spark (NaN -> 0);
  Spark has no numeric TRUNC. SIGN: a TINYINT on DuckDB (0 for NaN), a DOUBLE on Spark.
- day of the week (dayofweek, EXTRACT(dow), date_part('dow')): Sunday is 0 on DuckDB, 1 on Spark;
  isodow, yearweek, week (ISO), EXTRACT(epoch), EXTRACT(second) (an integer on DuckDB, seconds
  with their fraction on Spark), millisecond, microsecond, isoyear.
- date_diff: DuckDB counts the unit's boundaries crossed (months by year * 12 + month, hours by
  floor(epoch / 3600)), weeks as whole 7-day spans; Spark's DATEDIFF counts days only.
- date_add and `+ INTERVAL`: Spark's DATE_ADD takes days; a date plus an interval is a TIMESTAMP
  on DuckDB, a DATE on Spark.
- substring, left, right with a start of 0 or below, or a negative length: DuckDB's positions
  (`substring(s, 0, 2)` is one character, a negative length counts backwards), Spark's differ.
- isinf, isfinite, isnan (NULL for NULL on DuckDB, false on Spark), suffix, prefix, strlen
  (bytes), regexp_full_match (the whole string): missing or different on Spark.
- to_timestamp(seconds): a TIMESTAMP without zone, NULL outside years 1-9999 (both engines: a
  key a Python datetime cannot hold would fail the release after the charge).

An operand used more than once is bound once when it is not a column or literal, through
`ELEMENT_AT(TRANSFORM(ARRAY(NAMED_STRUCT(...)), v -> ...), 1)`, so that nested expressions do not
grow exponentially in the Spark SQL.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from dpsql.analysis.expression_types import (
    FLOATS,
    INTEGERS,
    TYPE_KEY,
    interval_of,
    part_name,
    type_of,
)

if TYPE_CHECKING:  # sqlglot's SparkGenerator at run time (imported lazily by backend/sql/engine_dialects.py)
    from sqlglot.generator import Generator
Render = Callable[["Generator", Any], "str | None"]

_ATOMS = (exp.Column, exp.Literal, exp.Null, exp.Boolean, exp.Placeholder, exp.Parameter)
_VARIABLE = "__dpsql_v"
_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("dpsql_spark_bind_depth", default=0)
_SECOND_MICROS = 1_000_000
_UNIT_MICROS = {"hour": 3_600 * _SECOND_MICROS, "minute": 60 * _SECOND_MICROS, "second": _SECOND_MICROS,
                "millisecond": 1_000, "microsecond": 1}
_MIN_MICROS = -62_135_596_800_000_000  # 0001-01-01 00:00:00, the first instant a Python datetime holds
_MAX_MICROS = 253_402_300_799_999_999  # 9999-12-31 23:59:59.999999
_INTEGER_RANGES = {exp.DataType.Type.TINYINT: 8, exp.DataType.Type.SMALLINT: 16, exp.DataType.Type.INT: 32,
                   exp.DataType.Type.BIGINT: 64}


def typed(node: exp.Expr) -> bool:
    """Whether the analysis typed this node (an analyst's expression, rendered with DuckDB's meaning)."""
    return TYPE_KEY in node.meta


def _double(value: float | str) -> exp.Expr:
    return exp.cast(exp.Literal.string(str(value)), "DOUBLE")


def _number(value: int | float) -> exp.Expr:
    return exp.Literal.number(value)


def _as_double(node: exp.Expr) -> exp.Expr:
    copy = node.copy()
    return copy if type_of(node) == "DOUBLE" else exp.cast(copy, "DOUBLE")


def _atomic(node: exp.Expr) -> bool:
    """A value cheap to repeat in the Spark SQL: a column or literal, or an untyped call, cast or
    sign of such values (a typed node's own rendering may repeat its operands again)."""
    if isinstance(node, _ATOMS):
        return True
    if isinstance(node, (exp.Paren, exp.Cast, exp.TryCast, exp.Neg, exp.Func)) and not typed(node):
        return all(_atomic(child) for child in node.iter_expressions() if not isinstance(child, exp.DataType))
    return False


def _emit(gen: Generator, tree: exp.Expr) -> str:
    """A built tree as Spark SQL, with parentheses around each operand of the operators built here
    (sqlglot prints a tree as it is: `(a + b) / c` needs its Paren node). The analyst's typed
    subtrees are left as parsed: they carry their own parentheses."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if typed(node):
            continue
        if isinstance(node, (exp.Binary, exp.Unary)) and not isinstance(node, exp.Paren):
            for key in ("this", "expression"):
                child = node.args.get(key)
                if isinstance(child, (exp.Binary, exp.Unary)) and not isinstance(child, exp.Paren):
                    node.set(key, exp.Paren(this=child))
        stack.extend(node.iter_expressions())
    return gen.sql(tree)


def _bind(values: list[exp.Expr], body: Callable[..., exp.Expr]) -> exp.Expr:
    """`body(*values)` with each value computed once: repeated as written when every value is cheap
    (`_atomic`), else bound by a one-element TRANSFORM (a lambda is Spark's only let)."""
    if all(_atomic(v) for v in values):
        return body(*values)
    names = [f"v{i}" for i in range(len(values))]
    fields: list[exp.Expr] = []
    for name, value in zip(names, values):
        fields.extend([exp.Literal.string(name), value])
    record = exp.Anonymous(this="NAMED_STRUCT", expressions=fields)
    depth = _DEPTH.get()
    variable = f"{_VARIABLE}{depth}"  # a bind inside another's body gets its own name (no shadowing)
    refs = [exp.column(name, table=variable) for name in names]
    token = _DEPTH.set(depth + 1)
    try:
        inner = body(*refs)
    finally:
        _DEPTH.reset(token)
    mapped = exp.Anonymous(this="TRANSFORM", expressions=[
        exp.Anonymous(this="ARRAY", expressions=[record]),
        exp.Lambda(this=inner, expressions=[exp.to_identifier(variable)])])
    return exp.Anonymous(this="ELEMENT_AT", expressions=[mapped, _number(1)])


def _let(gen: Generator, values: list[exp.Expr], body: Callable[..., exp.Expr]) -> str:
    """`_bind`, as Spark SQL."""
    return _emit(gen, _bind(values, body))


def _case(*branches: tuple[exp.Expr, exp.Expr], default: exp.Expr | None = None) -> exp.Case:
    return exp.Case(ifs=[exp.If(this=c, true=v) for c, v in branches], default=default)


def _copy(node: exp.Expr) -> exp.Expr:
    return node.copy()


# --- arithmetic ---------------------------------------------------------------------------------


def _ieee_divide(n: exp.Expr, d: exp.Expr) -> exp.Expr:
    zero_or = exp.Mul(this=n.copy(), expression=exp.Anonymous(this="POWER", expressions=[d.copy(), _number(-1)]))
    return _case((exp.NEQ(this=d.copy(), expression=_number(0)), exp.Div(this=n.copy(), expression=d.copy())),
                 default=zero_or)


def _div(gen: Generator, node: exp.Div) -> str | None:
    return _let(gen, [_as_double(node.this), _as_double(node.expression)], _ieee_divide)


def _int_div(gen: Generator, node: exp.IntDiv) -> str | None:
    if type_of(node.this) in INTEGERS and type_of(node.expression) in INTEGERS:
        return None  # DIV truncates integers on both; a zero divisor is NULL on both
    return _emit(gen, exp.Div(this=_as_double(node.this), expression=_as_double(node.expression)))


def _mod(gen: Generator, node: exp.Mod) -> str | None:
    if type_of(node.this) not in FLOATS and type_of(node.expression) not in FLOATS:
        return None
    return _let(gen, [_as_double(node.this), _as_double(node.expression)], lambda n, d: _case(
        (exp.NEQ(this=d.copy(), expression=_number(0)), exp.Mod(this=n.copy(), expression=d.copy())),
        default=exp.Mul(this=n.copy(), expression=_double("NaN"))))


_CHECKED = {exp.Add: "TRY_ADD", exp.Sub: "TRY_SUBTRACT", exp.Mul: "TRY_MULTIPLY"}


def _checked(gen: Generator, node: exp.Add | exp.Sub | exp.Mul) -> str | None:
    if type_of(node) not in INTEGERS or type_of(node.this) not in INTEGERS or type_of(node.expression) not in INTEGERS:
        return _plus_interval(gen, node) if isinstance(node, (exp.Add, exp.Sub)) else None
    return _emit(gen, exp.Anonymous(this=_CHECKED[type(node)], expressions=[_copy(node.this), _copy(node.expression)]))


def _plus_interval(gen: Generator, node: exp.Add | exp.Sub) -> str | None:
    """A date or timestamp plus or minus an INTERVAL: a TIMESTAMP, as on DuckDB; date - date: days."""
    if isinstance(node, exp.Sub) and type_of(node.this) == type_of(node.expression) == "DATE":
        days = exp.Anonymous(this="DATEDIFF", expressions=[_copy(node.this), _copy(node.expression)])
        return _emit(gen, exp.cast(days, "BIGINT"))
    interval = interval_of(node)
    if interval is None or type_of(node) != "TIMESTAMP":
        return None
    amount, unit = interval
    base = node.this if not isinstance(node.this, exp.Interval) else node.expression
    return _emit(gen, exp.cast(_shift(base, amount, unit, negative=isinstance(node, exp.Sub)), "TIMESTAMP"))


def _shift(base: exp.Expr, amount: exp.Expr, unit: str, *, negative: bool) -> exp.Expr:
    """base + amount units (a literal amount, DP142), in Spark's interval arithmetic."""
    count = int(amount.this if not isinstance(amount, exp.Neg) else "-" + amount.this.this)
    if unit == "quarter":
        count, unit = count * 3, "month"
    if unit == "week":
        count, unit = count * 7, "day"
    interval = exp.Interval(this=exp.Literal.string(str(-count if negative else count)), unit=exp.var(unit.upper()))
    return exp.Add(this=exp.cast(base.copy(), "TIMESTAMP"), expression=interval)


def _date_add(gen: Generator, node: exp.DateAdd | exp.DateSub) -> str | None:
    interval = interval_of(node)
    if interval is None:
        return None
    amount, unit = interval
    return _emit(gen, exp.cast(_shift(node.this, amount, unit, negative=isinstance(node, exp.DateSub)), "TIMESTAMP"))


# --- logarithms, rounding -----------------------------------------------------------------------


def _duckdb_log(function: str, x: exp.Expr) -> exp.Expr:
    """DuckDB's logarithm: NaN below 0 (and for NaN), -inf at 0 (Spark's is NULL at and below 0)."""
    return _case((exp.GT(this=x.copy(), expression=_number(0)), exp.Anonymous(this=function, expressions=[x.copy()])),
                 (exp.EQ(this=x.copy(), expression=_number(0)), _double("-Infinity")),
                 (exp.LT(this=x.copy(), expression=_number(0)), _double("NaN")))


def _ln(gen: Generator, node: exp.Ln) -> str | None:
    return _let(gen, [_as_double(node.this)], lambda x: _duckdb_log("LN", x))


def _log(gen: Generator, node: exp.Log) -> str | None:
    if node.expression is None:  # LOG(x): base 10 on DuckDB
        return _let(gen, [_as_double(node.this)], lambda x: _duckdb_log("LOG10", x))
    base, value = node.this, node.expression
    if isinstance(base, exp.Literal) and base.this in ("10", "10.0"):
        return _let(gen, [_as_double(value)], lambda x: _duckdb_log("LOG10", x))
    number = _positive_literal(base)
    if number is not None and number != 1:
        # A literal base: LOG10(b) is the same double wherever it is computed (the C library's
        # log10, which Python's math.log10 calls), written as its shortest round-trip digits.
        divisor = _double(repr(math.log10(number)))
        return _let(gen, [_as_double(value)], lambda x: _ieee_divide(_duckdb_log("LOG10", x), divisor))
    # DuckDB's LOG(b, x) is LOG10(x) / LOG10(b), an IEEE division (log(1, x) is inf).
    return _let(gen, [_as_double(value), _as_double(base)],
                lambda x, b: _let_free_divide(_duckdb_log("LOG10", x), _duckdb_log("LOG10", b)))


def _positive_literal(node: exp.Expr) -> float | None:
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            value = float(node.this)
        except ValueError:
            return None
        return value if value > 0 and math.isfinite(value) else None
    return None


def _let_free_divide(n: exp.Expr, d: exp.Expr) -> exp.Expr:
    # n and d are logarithms of bound values: small CASEs, repeated once each by the division.
    return _ieee_divide(n, d)


def _floor_like(gen: Generator, node: exp.Floor | exp.Ceil | exp.Trunc) -> str | None:
    kind = type_of(node.this)
    if node.args.get("decimals") is not None or kind == "DECIMAL" and not isinstance(node, exp.Trunc):
        return None
    if kind in INTEGERS:
        return _emit(gen, exp.cast(_copy(node.this), "DOUBLE")) if not isinstance(node, exp.Trunc) else _emit(gen, node.this)
    if kind == "DECIMAL":  # TRUNC of a DECIMAL: towards zero, a DECIMAL
        return _let(gen, [_copy(node.this)], lambda x: _case(
            (exp.LT(this=x.copy(), expression=_number(0)), exp.Ceil(this=x.copy())), default=exp.Floor(this=x.copy())))
    if kind not in FLOATS:
        return None
    limit = _number(4503599627370496)  # 2^52: every DOUBLE at least this large is an integer already

    def rounded(x: exp.Expr) -> exp.Expr:
        small = exp.LT(this=exp.Abs(this=x.copy()), expression=limit.copy())
        whole: exp.Expr
        if isinstance(node, exp.Trunc):  # truncation keeps the sign of zero: -0.5 -> -0.0
            whole = exp.cast(exp.cast(x.copy(), "BIGINT"), "DOUBLE")
            return _case((exp.LT(this=exp.Abs(this=x.copy()), expression=_number(1)), exp.Mul(this=x.copy(), expression=_number(0))),
                         (small, whole), default=x.copy())
        nonzero = exp.and_(small, exp.NEQ(this=x.copy(), expression=_number(0)))
        if isinstance(node, exp.Floor):
            whole = exp.cast(exp.Floor(this=x.copy()), "DOUBLE")
        else:  # CEIL(x) = -FLOOR(-x): -0.5 gives -0.0, as DuckDB's ceil does
            whole = exp.Neg(this=exp.cast(exp.Floor(this=exp.Neg(this=x.copy())), "DOUBLE"))
        return _case((nonzero, whole), default=x.copy())  # NaN, +-inf, +-0 and huge values are their own floor

    return _let(gen, [_as_double(node.this)], rounded)


def _sign(gen: Generator, node: exp.Sign) -> str | None:
    return _emit(gen, exp.cast(exp.Anonymous(this="SIGN", expressions=[_copy(node.this)]), "TINYINT"))  # NaN -> 0


# --- casts --------------------------------------------------------------------------------------


def _cast(gen: Generator, node: exp.Cast | exp.TryCast) -> str | None:
    bits = _INTEGER_RANGES.get(node.to.this)
    source = type_of(node.this)
    if bits is None or source not in (*INTEGERS, *FLOATS, "DECIMAL"):
        return None
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    target = node.to.copy()
    if source in INTEGERS:
        if source == "INTEGER" and bits >= 32 or source == "BIGINT" and bits == 64:
            return None  # widening: the same on both
        return _let(gen, [_copy(node.this)], lambda x: _case(
            (exp.Between(this=x.copy(), low=_number(low), high=_number(high)), exp.Cast(this=x.copy(), to=target.copy()))))
    if source == "DECIMAL":  # half away from zero: Spark's ROUND of a DECIMAL
        return _let(gen, [exp.Round(this=_copy(node.this))], lambda r: _case(
            (exp.Between(this=r.copy(), low=_number(low), high=_number(high)), exp.Cast(this=r.copy(), to=target.copy()))))
    # A DOUBLE: RINT rounds half to even; NaN (above every number on Spark) and +-inf fail the range.
    def in_range(r: exp.Expr) -> exp.Expr:
        return exp.and_(exp.GTE(this=r.copy(), expression=_double(float(low))),
                        exp.LT(this=r.copy(), expression=_double(float(high) + 1)))

    return _let(gen, [exp.Anonymous(this="RINT", expressions=[_copy(node.this)])],
                lambda r: _case((in_range(r), exp.Cast(this=r.copy(), to=target.copy()))))


# --- dates and times ----------------------------------------------------------------------------


def _micros(value: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this="UNIX_MICROS", expressions=[exp.cast(value, "TIMESTAMP")])


# The parts that are one Spark function of the value.
_PART_FUNCTIONS = {"year": "YEAR", "month": "MONTH", "quarter": "QUARTER", "hour": "HOUR", "minute": "MINUTE", "second": "SECOND",
                   "day": "DAYOFMONTH", "doy": "DAYOFYEAR", "week": "WEEKOFYEAR"}


def _part(part: str, x: exp.Expr) -> exp.Expr | None:
    """DuckDB's EXTRACT(part FROM x) on Spark, as a BIGINT (a DOUBLE for epoch)."""
    def call(name: str) -> exp.Expr:
        return exp.Anonymous(this=name, expressions=[x.copy()])

    def extract(field: str) -> exp.Expr:
        return exp.Extract(this=exp.var(field), expression=x.copy())

    found: exp.Expr
    if part in _PART_FUNCTIONS:
        found = call(_PART_FUNCTIONS[part])
    elif part == "dow":
        found = exp.Sub(this=call("DAYOFWEEK"), expression=_number(1))
    elif part == "isodow":
        found = exp.Add(this=call("WEEKDAY"), expression=_number(1))
    elif part == "isoyear":
        found = extract("YEAROFWEEK")
    elif part == "yearweek":
        found = exp.Add(this=exp.Mul(this=extract("YEAROFWEEK"), expression=_number(100)), expression=call("WEEKOFYEAR"))
    elif part in ("millisecond", "microsecond"):  # seconds of the minute, in the unit (EXTRACT(SECOND) has the fraction)
        scale = 1_000 if part == "millisecond" else _SECOND_MICROS
        found = exp.Mul(this=exp.Extract(this=exp.var("SECOND"), expression=exp.cast(x.copy(), "TIMESTAMP")), expression=_number(scale))
    elif part == "epoch":
        return exp.Div(this=exp.cast(_micros(x.copy()), "DOUBLE"), expression=_double(float(_SECOND_MICROS)))
    else:
        return None
    return exp.cast(found, "BIGINT")


def _rendered_part(part: str) -> Callable[[exp.Expr], exp.Expr]:
    """`_part` for a part it renders (the caller checks: the part decides, never the operand)."""
    def render(x: exp.Expr) -> exp.Expr:
        found = _part(part, x)
        assert found is not None, part
        return found
    return render


def _extract(gen: Generator, node: exp.Extract) -> str | None:
    part = part_name(node.this.name) if node.this is not None else ""
    if _part(part, node.expression) is None:
        return None
    return _let(gen, [_copy(node.expression)], _rendered_part(part))


def _part_call(part: str) -> Render:
    def render(gen: Generator, node: exp.Expr) -> str | None:
        return _let(gen, [_copy(node.this)], _rendered_part(part))
    return render


def _date_diff(gen: Generator, node: exp.DateDiff) -> str | None:
    unit = part_name(node.text("unit") or "day")
    end, start = node.this, node.expression

    def diff(e: exp.Expr, s: exp.Expr) -> exp.Expr:
        def year(x: exp.Expr) -> exp.Expr:
            return exp.Anonymous(this="YEAR", expressions=[x.copy()])

        def scaled(x: exp.Expr, per_year: int, name: str) -> exp.Expr:
            return exp.Add(this=exp.Mul(this=year(x), expression=_number(per_year)),
                           expression=exp.Anonymous(this=name, expressions=[x.copy()]))

        days = exp.Anonymous(this="DATEDIFF", expressions=[exp.cast(e.copy(), "DATE"), exp.cast(s.copy(), "DATE")])
        if unit == "year":
            found: exp.Expr = exp.Sub(this=year(e), expression=year(s))
        elif unit == "quarter":
            found = exp.Sub(this=scaled(e, 4, "QUARTER"), expression=scaled(s, 4, "QUARTER"))
        elif unit == "month":
            found = exp.Sub(this=scaled(e, 12, "MONTH"), expression=scaled(s, 12, "MONTH"))
        elif unit == "week":
            found = exp.IntDiv(this=days, expression=_number(7))  # whole 7-day spans, truncated
        elif unit == "day":
            found = days
        else:  # boundaries of the unit crossed: floor(micros / unit) on each side
            size = _number(_UNIT_MICROS[unit])

            def floor_units(x: exp.Expr) -> exp.Expr:
                micros = _micros(x.copy())
                return exp.IntDiv(this=exp.Sub(this=micros, expression=exp.Anonymous(this="PMOD", expressions=[micros.copy(), size.copy()])),
                                  expression=size.copy())
            found = exp.Sub(this=floor_units(e), expression=floor_units(s))
        return exp.cast(found, "BIGINT")

    if unit not in ("year", "quarter", "month", "week", "day", *_UNIT_MICROS):
        return None
    return _let(gen, [_copy(end), _copy(start)], diff)


def _bigint_of_double(x: exp.Expr) -> exp.Expr:
    """CAST(x AS BIGINT) of a DOUBLE as DuckDB computes it: rounded half to even, NULL for NaN,
    +-inf and values outside BIGINT (Spark would truncate and saturate)."""
    r = exp.Anonymous(this="RINT", expressions=[x])
    inside = exp.and_(exp.GTE(this=r.copy(), expression=_double(float(-(2**63)))),
                      exp.LT(this=r.copy(), expression=_double(float(2**63))))
    return _case((inside, exp.cast(r.copy(), "BIGINT")))


def _unix_to_time(gen: Generator, node: exp.UnixToTime) -> str | None:
    micros = exp.Mul(this=_as_double(node.this), expression=_double(float(_SECOND_MICROS)))

    def instant(m: exp.Expr) -> exp.Expr:
        return _case((exp.Between(this=m.copy(), low=_number(_MIN_MICROS), high=_number(_MAX_MICROS)),
                      exp.Anonymous(this="TIMESTAMP_MICROS", expressions=[m.copy()])))

    return _let(gen, [micros], lambda m: _bind([_bigint_of_double(m)], instant))


def duckdb_unix_to_time(gen: Generator, node: exp.UnixToTime) -> str:
    """to_timestamp(seconds) on DuckDB: a TIMESTAMP without zone (MAKE_TIMESTAMP of the
    microseconds, rounded half to even as the cast rounds), NULL outside years 1-9999."""
    if TYPE_KEY not in node.meta:
        return gen.func("TO_TIMESTAMP", node.this)
    micros = exp.cast(exp.Mul(this=exp.cast(node.this.copy(), "DOUBLE"), expression=_double(float(_SECOND_MICROS))), "BIGINT")
    inside = exp.Between(this=micros, low=_number(_MIN_MICROS), high=_number(_MAX_MICROS))
    return _emit(gen, _case((inside, exp.Anonymous(this="MAKE_TIMESTAMP", expressions=[micros.copy()]))))


# --- text ---------------------------------------------------------------------------------------


def _int_literal(node: exp.Expr | None) -> int | None:
    negative = False
    while isinstance(node, (exp.Paren, exp.Neg)):
        negative ^= isinstance(node, exp.Neg)
        node = node.this
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return -int(node.this) if negative else int(node.this)
    return None


def _length(x: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this="CHAR_LENGTH", expressions=[x.copy()])


def _substring_of(s: exp.Expr, start: exp.Expr, length: exp.Expr | None) -> exp.Expr:
    """DuckDB's substring(s, start[, length]) on Spark: the characters at positions [b, b + length)
    (or [b + length, b) for a negative length) within 1..n, where b is start when positive, 0 (a
    position before the first) when 0, and n + start + 1 when negative."""
    n = _length(s)
    begin = _case((exp.GT(this=start.copy(), expression=_number(0)), start.copy()),
                  (exp.EQ(this=start.copy(), expression=_number(0)), _number(0)),
                  default=exp.Add(this=exp.Add(this=n.copy(), expression=start.copy()), expression=_number(1)))
    low: exp.Expr
    high: exp.Expr
    if length is None:
        low, high = begin, exp.Add(this=n.copy(), expression=_number(1))
    else:
        low = _case((exp.GTE(this=length.copy(), expression=_number(0)), begin.copy()),
                    default=exp.Add(this=begin.copy(), expression=length.copy()))
        high = _case((exp.GTE(this=length.copy(), expression=_number(0)), exp.Add(this=begin.copy(), expression=length.copy())),
                     default=begin.copy())
    first = exp.Greatest(this=low, expressions=[_number(1)])
    last = exp.Least(this=high, expressions=[exp.Add(this=n.copy(), expression=_number(1))])
    count = exp.Greatest(this=exp.Sub(this=last, expression=first.copy()), expressions=[_number(0)])
    return exp.Substring(this=s.copy(), start=first.copy(), length=count)


def _substring(gen: Generator, node: exp.Substring) -> str | None:
    start, length = _int_literal(node.args.get("start")), node.args.get("length")
    count = _int_literal(length) if length is not None else None
    if start is not None and start > 0 and (length is None or count is not None and count >= 0):
        return None  # Spark's substring agrees for a positive start and length
    if start is not None and length is not None and count is not None:
        return _emit(gen, _constant_substring(node.this, start, count))
    args = [_copy(node.this), _copy(node.args["start"])] + ([_copy(length)] if length is not None else [])
    return _let(gen, args, lambda s, b, *n: _substring_of(s, b, n[0] if n else None))


def _constant_substring(s: exp.Expr, start: int, count: int) -> exp.Expr:
    """DuckDB's substring with literal start and length, as one Spark call on positions >= 1 where
    the start alone decides (a negative start needs the length of s: the general form)."""
    if start >= 0:
        low, high = (start, start + count) if count >= 0 else (start + count, start)
        first = max(low, 1)
        return exp.Substring(this=s.copy(), start=_number(first), length=_number(max(high - first, 0)))
    if count >= 0:
        return exp.Substring(this=s.copy(), start=_number(start), length=_number(count))  # Spark counts from the end alike
    return _substring_of(s, _number(start), _number(count))


def _left_right(gen: Generator, node: exp.Left | exp.Right) -> str | None:
    count = _int_literal(node.expression)
    if count is not None and count >= 0:
        return None
    left = isinstance(node, exp.Left)

    def body(s: exp.Expr, n: exp.Expr) -> exp.Expr:
        # A negative n: all but the last (left) or first (right) -n characters.
        keep = exp.Greatest(this=exp.Add(this=_length(s), expression=n.copy()), expressions=[_number(0)])
        negative = exp.Substring(this=s.copy(), start=_number(1), length=keep) if left else \
            exp.Substring(this=s.copy(), start=exp.Sub(this=_number(1), expression=n.copy()))
        positive = (exp.Left if left else exp.Right)(this=s.copy(), expression=n.copy())
        if count is not None:
            return negative
        return _case((exp.GTE(this=n.copy(), expression=_number(0)), positive), default=negative)

    return _let(gen, [_copy(node.this), _copy(node.expression)], body)


def _regexp_full_match(gen: Generator, node: exp.RegexpFullMatch) -> str | None:
    pattern = node.expression
    options = node.args.get("options")
    flags = options.this if isinstance(options, exp.Literal) else ""
    if not (isinstance(pattern, exp.Literal) and pattern.is_string) or set(flags) - {"c", "i"}:
        return None
    prefix = "(?i)" if flags.rfind("i") > flags.rfind("c") else ""
    anchored = exp.Literal.string(f"{prefix}\\A(?:{pattern.this})\\z")
    return _emit(gen, exp.RegexpLike(this=_copy(node.this), expression=anchored))


# --- predicates and names Spark lacks -----------------------------------------------------------


def _not_null(x: exp.Expr, value: exp.Expr) -> exp.Expr:
    return _case((exp.Not(this=exp.Is(this=x.copy(), expression=exp.Null())), value))


def _finite_check(x: exp.Expr, kind: str | None, infinite: bool) -> exp.Expr:
    if kind in ("DATE", "TIMESTAMP"):  # dpsql reads infinite dates as NULL: a date is finite
        return _not_null(x, exp.false() if infinite else exp.true())
    magnitude = exp.Abs(this=exp.cast(x.copy(), "DOUBLE"))
    infinity = _double("Infinity")
    return exp.EQ(this=magnitude, expression=infinity) if infinite else exp.LT(this=magnitude, expression=infinity)


def _is_inf(gen: Generator, node: exp.IsInf) -> str | None:
    return _emit(gen, exp.paren(_finite_check(_copy(node.this), type_of(node.this), True)))


def _is_nan(gen: Generator, node: exp.IsNan) -> str | None:
    return _let(gen, [_copy(node.this)], lambda x: _not_null(x, exp.Anonymous(this="ISNAN", expressions=[x.copy()])))


_RENAMED = {"suffix": "ENDSWITH", "prefix": "STARTSWITH", "strlen": "OCTET_LENGTH"}


def _anonymous(gen: Generator, node: exp.Anonymous) -> str | None:
    name = node.name.lower()
    args = node.expressions
    if name in _RENAMED:
        return _emit(gen, exp.Anonymous(this=_RENAMED[name], expressions=[a.copy() for a in args]))
    if name == "isfinite" and len(args) == 1:
        return _emit(gen, exp.paren(_finite_check(args[0].copy(), type_of(args[0]), False)))
    if name == "yearweek" and len(args) == 1:
        return _let(gen, [args[0].copy()], _rendered_part("yearweek"))
    if name in ("date_part", "datepart") and len(args) == 2 and isinstance(args[0], exp.Literal):
        part = part_name(args[0].this)
        if _part(part, args[1]) is None:
            return None
        return _let(gen, [args[1].copy()], _rendered_part(part))
    return None


SPARK_RENDERINGS: dict[type[exp.Expr], Render] = {
    exp.Div: _div, exp.IntDiv: _int_div, exp.Mod: _mod, exp.Add: _checked, exp.Sub: _checked, exp.Mul: _checked,
    exp.Ln: _ln, exp.Log: _log, exp.Floor: _floor_like, exp.Ceil: _floor_like, exp.Trunc: _floor_like, exp.Sign: _sign,
    exp.Cast: _cast, exp.TryCast: _cast, exp.Extract: _extract, exp.DayOfWeek: _part_call("dow"),
    exp.Week: _part_call("week"), exp.DateDiff: _date_diff, exp.DateAdd: _date_add, exp.DateSub: _date_add,
    exp.UnixToTime: _unix_to_time, exp.Substring: _substring, exp.Left: _left_right, exp.Right: _left_right,
    exp.RegexpFullMatch: _regexp_full_match, exp.IsInf: _is_inf, exp.IsNan: _is_nan, exp.Anonymous: _anonymous,
}


def with_duckdb_meaning(transforms: dict[type[exp.Expr], Callable[..., str]]) -> dict[type[exp.Expr], Callable[..., str]]:
    """Spark's transforms with the renderings above for typed nodes; an untyped node (dpsql's
    own SQL), or one whose Spark function already agrees, renders as before."""
    out = dict(transforms)
    for cls, render in SPARK_RENDERINGS.items():
        out[cls] = _dispatching(cls, render, transforms.get(cls))
    return out


def _dispatching(cls: type[exp.Expr], render: Render, base: Callable[..., str] | None) -> Callable[..., str]:
    def handler(gen: Generator, node: exp.Expr) -> str:
        if typed(node):
            text = render(gen, node)
            if text is not None:
                return text
        if base is not None:
            return base(gen, node)
        method: Callable[[exp.Expr], str] | None = getattr(gen, f"{cls.key}_sql", None)
        if method is not None:
            return method(node)
        assert isinstance(node, exp.Func), cls  # sqlglot renders every other node by its own *_sql method
        return gen.function_fallback_sql(node)
    return handler

"""Monotone functions of one per-row value: LN, LOG (LOG10, LOG2, LOG(b, x) with a literal base),
EXP, SQRT, CBRT and POWER(x, c) with a literal exponent, as DuckDB computes them.

Two readers: analysis/value_bounds.py maps an argument's interval [lo, hi] to [f(lo), f(hi)] (or
[f(hi), f(lo)] for a decreasing one) when the interval lies inside the function's domain, and
analysis/group_domains.py maps a listed domain value by value.

DuckDB's values (the reference engine; Spark is rendered to match, backend/sql/spark_semantics.py):
LN, LOG10 and LOG(b, x) = LOG10(x) / LOG10(b) are -inf at 0 and NaN below it; one-argument LOG
is base 10; SQRT is NaN below 0; EXP overflows to +inf; POWER is the C library's pow (NaN for a
negative base and a fractional exponent, +inf for 0 to a negative power). Python's math module
calls the same C library functions, so `value` is what DuckDB computes on this machine; Java's
(Spark's) LN, LOG10 and EXP can differ in the last bit. Hence:

- bounds are rounded outward by a few units in the last place (ULPS) around the value at the
  argument's bounds, themselves rounded outward to DOUBLEs: the interval holds what either
  engine computes (each within one unit of the exact value; SQRT is correctly rounded by IEEE
  754 on both, so its bounds need no widening). Privacy does not rest on it: the
  engine clamps every summed value into the interval (value_bounds' module doc);
- a GROUP BY key through one of them is computed value by value from its listed operand values
  (group_domains.exact_key: `CASE x WHEN 50 THEN 1.6989700043360187 ... END`), so both engines
  produce exactly the listed keys.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from sqlglot import exp

CLASSES: tuple[type[exp.Expr], ...] = (exp.Ln, exp.Log, exp.Exp, exp.Sqrt, exp.Cbrt, exp.Pow)
ULPS = 4  # outward rounding of a derived bound, in units in the last place of a DOUBLE


@dataclass(frozen=True, slots=True)
class Monotone:
    """One call: its operand, DuckDB's value at a DOUBLE, and where it is monotone.

    `above`: the operand's domain is x > above (`open`) or x >= above; None: every real.
    `shape`: "increasing", "decreasing" or "even" (x^c for an even c: decreasing, then increasing
    from 0)."""

    name: str
    operand: exp.Expr
    value: Callable[[float], float]
    above: float | None
    open: bool
    shape: str
    exact: bool = False  # correctly rounded on every engine (IEEE SQRT): no outward units in the last place


def monotone_call(node: exp.Expr) -> Monotone | None:
    """The call as a Monotone; None when it is not one of CLASSES with a literal base or exponent."""
    if isinstance(node, exp.Ln):
        return Monotone("LN", node.this, _logarithm(math.log), 0.0, True, "increasing")
    if isinstance(node, exp.Log):
        return _log(node)
    if isinstance(node, exp.Exp):
        return Monotone("EXP", node.this, _exp, None, False, "increasing")
    if isinstance(node, exp.Sqrt):
        return Monotone("SQRT", node.this, lambda x: math.sqrt(x) if x >= 0 else math.nan, 0.0, False, "increasing", exact=True)
    if isinstance(node, exp.Cbrt):
        return Monotone("CBRT", node.this, math.cbrt, None, False, "increasing")
    if isinstance(node, exp.Pow):
        return _power(node)
    return None


def _number(node: exp.Expr | None) -> float | None:
    """A number literal (or its negation) as a finite DOUBLE; None for anything else."""
    negative = isinstance(node, exp.Neg)
    inner = node.this if negative and node is not None else node
    while isinstance(inner, exp.Paren):
        inner = inner.this
    if not isinstance(inner, exp.Literal) or inner.is_string:
        return None
    try:
        value = float(inner.this)
    except ValueError:
        return None
    return (-value if negative else value) if math.isfinite(value) else None


def _logarithm(log: Callable[[float], float]) -> Callable[[float], float]:
    """DuckDB's logarithm: -inf at 0, NaN below 0 (and for NaN)."""
    def value(x: float) -> float:
        if x > 0:
            return log(x)
        return -math.inf if x == 0 else math.nan
    return value


def _log(node: exp.Log) -> Monotone | None:
    if node.expression is None:  # LOG(x): base 10 on DuckDB
        return Monotone("LOG", node.this, _logarithm(math.log10), 0.0, True, "increasing")
    base = _number(node.this)
    if base is None or base <= 0 or base == 1:
        return None  # a base that is not a literal, or one that makes LOG constant or undefined
    operand: exp.Expr = node.expression
    if base == 10:
        return Monotone("LOG10", operand, _logarithm(math.log10), 0.0, True, "increasing")
    divisor = math.log10(base)
    name = "LOG2" if base == 2 else f"LOG({node.this.sql()}, x)"
    # DuckDB's LOG(b, x) is LOG10(x) / LOG10(b) (LOG2(x) is rendered as LOG(2, x)): an IEEE division.
    return Monotone(name, operand, _logarithm(lambda x: math.log10(x) / divisor), 0.0, True,
                    "increasing" if base > 1 else "decreasing")


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _power(node: exp.Pow) -> Monotone | None:
    c = _number(node.expression)
    if c is None:
        return None
    name = f"POWER(x, {node.expression.sql()})"

    def value(x: float) -> float:
        if x == 0 and c < 0:
            return math.inf
        try:
            return math.pow(x, c)
        except ValueError:
            return math.nan  # a negative base to a fractional power
        except OverflowError:
            odd = c.is_integer() and int(c) % 2 == 1
            return -math.inf if odd and x < 0 else math.inf

    if c.is_integer() and c >= 0:
        if c == 0 or int(c) % 2 == 1:
            return Monotone(name, node.this, value, None, False, "increasing")
        return Monotone(name, node.this, value, None, False, "even")
    if c > 0:
        return Monotone(name, node.this, value, 0.0, False, "increasing")  # x^0.5: x >= 0
    return Monotone(name, node.this, value, 0.0, True, "decreasing")  # x^-1: x > 0


def _below(value: Fraction) -> float:
    """The largest DOUBLE at or below `value`."""
    near = float(value)
    return near if Fraction(near) <= value else math.nextafter(near, -math.inf)


def _above(value: Fraction) -> float:
    near = float(value)
    return near if Fraction(near) >= value else math.nextafter(near, math.inf)


def _outward(value: float, direction: float) -> float:
    for _ in range(ULPS):
        value = math.nextafter(value, direction)
    return value


def image(call: Monotone, lower: Fraction, upper: Fraction) -> tuple[Fraction, Fraction] | str:
    """The interval [f(lower), f(upper)] (its ends swapped when f decreases), rounded outward to
    hold what either engine computes; or why there is none: the interval reaches outside f's
    domain, or f is infinite there."""
    if call.above is not None and (lower < call.above or (call.open and lower == call.above)):
        relation = "above" if call.open else "at or above"
        return (f"{call.name} needs an argument {relation} {call.above:g}, and its lower bound is {_text(lower)} "
                f"(there the engines give {'-inf or NaN' if call.open else 'NaN'}): add a constant, or clamp the argument with GREATEST")
    try:
        low, high = _below(lower), _above(upper)
    except OverflowError:
        return f"the argument of {call.name} is beyond the range of a DOUBLE"
    if call.shape == "increasing":
        ends = (call.value(low), call.value(high))
    elif call.shape == "decreasing":
        ends = (call.value(high), call.value(low))
    else:  # even power: the least value is at 0 when the interval holds it
        corners = (call.value(low), call.value(high))
        ends = (0.0 if low <= 0 <= high else min(corners), max(corners))
    if not all(math.isfinite(e) for e in ends):
        return f"{call.name} is infinite for arguments up to {_text(upper)}: clamp it with LEAST and GREATEST"
    if call.exact:
        return Fraction(ends[0]), Fraction(ends[1])
    return Fraction(_outward(ends[0], -math.inf)), Fraction(_outward(ends[1], math.inf))


def _text(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"

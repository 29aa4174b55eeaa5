"""The instant a constant date or time expression of the SQL denotes, computed as DuckDB computes
it (the reference engine), for narrowing GROUP BY domains by WHERE ranges (group_domains.narrowed).

A constant is public (it is in the SQL, or it is the clock read at plan time: frontend/clock.py),
so evaluating it here reads no data. Only what is computed exactly is evaluated: ISO literals and
their casts to DATE or TIMESTAMP, `date_trunc(unit, c)`, `c ± INTERVAL 'n unit'` (one unit; a
month added to the 31st lands on the month's last day, as DuckDB does), `date_add`/`date_sub`
with such an interval and `date ± n` days. Anything else (a time zone, several interval units,
fractions of a unit) is None: it narrows nothing.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re

from sqlglot import exp

DATE_TYPES = (exp.DataType.Type.DATE,)
TIMESTAMP_TYPES = (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPNTZ, exp.DataType.Type.DATETIME)
UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second")
_PLURALS = {f"{unit}s": unit for unit in UNITS}
_MONTHS = {"year": 12, "quarter": 3, "month": 1}
_SPANS = {"week": dt.timedelta(weeks=1), "day": dt.timedelta(days=1), "hour": dt.timedelta(hours=1),
          "minute": dt.timedelta(minutes=1), "second": dt.timedelta(seconds=1)}
_INTERVAL_TEXT = re.compile(r"^\s*([+-]?\d{1,9})\s*([a-z]+)?\s*$")


def unit_name(text: str) -> str:
    """A date part's name as dpsql reads it ('MONTHS' -> 'month'); unknown names unchanged."""
    text = text.lower()
    return _PLURALS.get(text, text)


def truncate(value: dt.datetime, unit: str) -> dt.datetime:
    """date_trunc(unit, value), as DuckDB and Spark compute it (weeks start on Monday)."""
    if unit == "year":
        return value.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    if unit == "quarter":
        return value.replace(month=(value.month - 1) // 3 * 3 + 1, day=1, hour=0, minute=0, second=0, microsecond=0)
    if unit == "month":
        return value.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    day = value.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "week":
        return day - dt.timedelta(days=value.weekday())
    if unit == "day":
        return day
    if unit == "hour":
        return value.replace(minute=0, second=0, microsecond=0)
    if unit == "minute":
        return value.replace(second=0, microsecond=0)
    return value.replace(microsecond=0)


def instant_text(node: exp.Expr) -> dt.datetime | None:
    """An ISO date or timestamp literal ('2025-01-01', '2025-01-01T00:00:00Z'); None for anything
    else, and for a time zone offset other than UTC (DuckDB's TIMESTAMP cast drops the offset)."""
    if not (isinstance(node, exp.Literal) and node.is_string):
        return None
    text = node.this.strip()
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if value.tzinfo is not None:
        if value.utcoffset() != dt.timedelta(0):
            return None
        value = value.replace(tzinfo=None)
    return value


def constant_instant(node: exp.Expr) -> tuple[dt.datetime, bool] | None:
    """The instant a constant expression denotes and whether it is a DATE (a day, not a time);
    None when dpsql does not evaluate it. A bare string literal reads as a timestamp."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Literal):
        value = instant_text(node)
        return None if value is None else (value, False)
    if isinstance(node, (exp.Cast, exp.TryCast)) and node.to.this in DATE_TYPES + TIMESTAMP_TYPES:
        inner = constant_instant(node.this)
        if inner is None:
            return None
        if node.to.this in DATE_TYPES:
            return dt.datetime.combine(inner[0].date(), dt.time()), True
        return inner[0], False
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)):
        unit = node.args.get("unit")
        inner = constant_instant(node.this)
        name = unit_name(unit.name) if unit is not None else ""
        return None if inner is None or name not in UNITS else (truncate(inner[0], name), False)
    if isinstance(node, (exp.Add, exp.Sub, exp.DateAdd, exp.DateSub)):
        return _shifted(node)
    return None


def _shifted(node: exp.Expr) -> tuple[dt.datetime, bool] | None:
    """`c ± INTERVAL 'n unit'` (a TIMESTAMP, as DuckDB gives even for a DATE c) or `date ± n` (a DATE)."""
    sign = -1 if isinstance(node, (exp.Sub, exp.DateSub)) else 1
    base, step = node.this, node.expression
    if isinstance(node, exp.Add) and isinstance(_unwrapped(base), exp.Interval):
        base, step = step, base  # INTERVAL '1 day' + c
    if isinstance(node, (exp.DateAdd, exp.DateSub)) and node.args.get("unit") is not None:
        return None  # date_add(c, n, unit) spellings: not read
    start = constant_instant(base)
    if start is None:
        return None
    step = _unwrapped(step)
    if isinstance(step, exp.Literal) and not step.is_string and str(step.this).lstrip("-").isdigit():
        if not start[1] or isinstance(node, (exp.DateAdd, exp.DateSub)):
            return None  # a timestamp plus an integer is an engine error: nothing to read
        day = _plus(start[0], sign * int(str(step.this)), "day")
        return None if day is None else (day, True)
    interval = _interval(step)
    if interval is None:
        return None
    count, unit = interval
    result = _plus(start[0], sign * count, unit)
    return None if result is None else (result, False)


def _unwrapped(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _interval(node: exp.Expr) -> tuple[int, str] | None:
    """INTERVAL 'n' unit, INTERVAL n unit or INTERVAL 'n unit' with one whole unit; else None."""
    if not isinstance(node, exp.Interval) or not isinstance(node.this, exp.Literal):
        return None
    match = _INTERVAL_TEXT.match(str(node.this.this).lower())
    unit = node.args.get("unit")
    if match is None or (match.group(2) is None) == (unit is None):
        return None
    name = unit_name(match.group(2) if unit is None else unit.name)
    return (int(match.group(1)), name) if name in UNITS else None


def _plus(value: dt.datetime, count: int, unit: str) -> dt.datetime | None:
    """value + count units, as DuckDB adds them (months keep the day, or the month's last day);
    None out of Python's range (years 1..9999: the bounds of a policy are inside)."""
    try:
        if unit in _MONTHS:
            total = value.year * 12 + value.month - 1 + count * _MONTHS[unit]
            year, month = divmod(total, 12)
            day = min(value.day, calendar.monthrange(year, month + 1)[1])
            return value.replace(year=year, month=month + 1, day=day)
        return value + count * _SPANS[unit]
    except (ValueError, OverflowError, calendar.IllegalMonthError):
        return None

"""PostgreSQL's `to_timestamp(text, format)` with constant arguments, read into a timestamp literal.

Superset writes its time filters as `TO_TIMESTAMP('2024-01-01 00:00:00.000000', 'YYYY-MM-DD
HH24:MI:SS.US')` (PostgreSQL's format patterns). DuckDB has no such overload, so dpsql reads the
constant here, while parsing, and the query carries `CAST('2024-01-01 00:00:00' AS TIMESTAMP)`
instead: the same value on every engine, and a constant the analysis can narrow time domains by.
Only a constant text with a constant format is read; anything else stays a call dpsql refuses
by name (DP113).
"""

from __future__ import annotations

import datetime as dt
import re

# PostgreSQL template patterns dpsql reads, longest first, with the digits each takes.
_PATTERNS: tuple[tuple[str, str, int], ...] = (
    ("YYYY", "year", 4), ("HH24", "hour", 2), ("HH12", "hour12", 2), ("MM", "month", 2), ("DD", "day", 2),
    ("HH", "hour12", 2), ("MI", "minute", 2), ("SS", "second", 2), ("US", "micro", 6), ("MS", "milli", 3),
)
_FIELD = re.compile("|".join(p for p, _, _ in _PATTERNS))


def postgres_timestamp(text: str, template: str) -> dt.datetime | None:
    """The timestamp `to_timestamp(text, template)` reads, or None when dpsql does not read this
    template (AM/PM, month names, time zones ...) or the text does not match it."""
    fields: dict[str, int] = {}
    position = 0
    last = 0
    for match in _FIELD.finditer(template):
        literal = template[last:match.start()]
        if not text.startswith(literal, position) or any(c.isalpha() for c in literal):
            return None
        position += len(literal)
        name, width = next((n, w) for p, n, w in _PATTERNS if p == match.group())
        digits = re.match(rf"\d{{1,{width}}}", text[position:])
        if digits is None:
            return None
        value = digits.group()
        fields[name] = int(value.ljust(width, "0")) if name in ("micro", "milli") else int(value)
        position += len(value)
        last = match.end()
    if text[position:] != template[last:] or any(c.isalpha() for c in template[last:]) or "hour12" in fields:
        return None
    micro = fields.get("micro", fields.get("milli", 0) * 1000)
    try:
        return dt.datetime(fields.get("year", 1), fields.get("month", 1), fields.get("day", 1), fields.get("hour", 0),
                           fields.get("minute", 0), fields.get("second", 0), micro)
    except ValueError:
        return None

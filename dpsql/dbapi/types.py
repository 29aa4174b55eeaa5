"""PEP 249 type objects and constructors. Type codes in cursor.description are engine type names."""

from __future__ import annotations

import datetime as dt
import time


class DBAPITypeObject:
    """Compares equal to every engine type name of its group."""

    def __init__(self, *names: str) -> None:
        self.names = frozenset(names)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other.upper() in self.names

    def __hash__(self) -> int:
        return hash(self.names)


STRING = DBAPITypeObject("VARCHAR", "TEXT", "STRING")
BINARY = DBAPITypeObject("BLOB", "BYTEA")
NUMBER = DBAPITypeObject("BIGINT", "INTEGER", "HUGEINT", "DOUBLE", "FLOAT", "DECIMAL", "SMALLINT", "TINYINT", "UBIGINT")
DATETIME = DBAPITypeObject("DATE", "TIMESTAMP", "TIME")
ROWID = DBAPITypeObject()

Date = dt.date
Time = dt.time
Timestamp = dt.datetime
Binary = bytes


def DateFromTicks(ticks: float) -> dt.date:  # noqa: N802 - PEP 249 name
    """A date from seconds since the epoch."""
    return Date(*time.localtime(ticks)[:3])


def TimeFromTicks(ticks: float) -> dt.time:  # noqa: N802 - PEP 249 name
    """A time from seconds since the epoch."""
    return Time(*time.localtime(ticks)[3:6])


def TimestampFromTicks(ticks: float) -> dt.datetime:  # noqa: N802 - PEP 249 name
    """A timestamp from seconds since the epoch."""
    return Timestamp(*time.localtime(ticks)[:6])

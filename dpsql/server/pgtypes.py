"""PostgreSQL type OIDs, engine type names -> OIDs, and value encoding in text and binary formats.

Every OID this server puts in a RowDescription has a binary encoder here, so a client that asks
for binary results (asyncpg, JDBC after its prepare threshold) can always have them.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import struct
import uuid
from collections.abc import Callable
from typing import Any

BOOL, BYTEA, CHAR, NAME, INT8, INT2, INT4, REGPROC, TEXT, OID = 16, 17, 18, 19, 20, 21, 23, 24, 25, 26
FLOAT4, FLOAT8, UNKNOWN, BPCHAR, VARCHAR, DATE, TIME, TIMESTAMP, TIMESTAMPTZ = 700, 701, 705, 1042, 1043, 1082, 1083, 1114, 1184
INTERVAL, NUMERIC, REGCLASS, REGTYPE, UUID, JSON = 1186, 1700, 2205, 2206, 2950, 114
ARRAY_OF = {BOOL: 1000, CHAR: 1002, NAME: 1003, INT2: 1005, INT4: 1007, TEXT: 1009, VARCHAR: 1015, INT8: 1016,
            FLOAT4: 1021, FLOAT8: 1022, OID: 1028, DATE: 1182, TIMESTAMP: 1115, NUMERIC: 1231}  # fmt: skip
ELEMENT_OF = {array: element for element, array in ARRAY_OF.items()}

# (typname, typlen) of the base types this server emits or accepts; the catalog emulation lists them in pg_type.
TYPES: dict[int, tuple[str, int]] = {
    BOOL: ("bool", 1), BYTEA: ("bytea", -1), CHAR: ("char", 1), NAME: ("name", 64), INT8: ("int8", 8),
    INT2: ("int2", 2), INT4: ("int4", 4), REGPROC: ("regproc", 4), TEXT: ("text", -1), OID: ("oid", 4),
    JSON: ("json", -1), FLOAT4: ("float4", 4), FLOAT8: ("float8", 8), UNKNOWN: ("unknown", -2),
    BPCHAR: ("bpchar", -1), VARCHAR: ("varchar", -1), DATE: ("date", 4), TIME: ("time", 8),
    TIMESTAMP: ("timestamp", 8), TIMESTAMPTZ: ("timestamptz", 8), INTERVAL: ("interval", 16),
    NUMERIC: ("numeric", -1), REGCLASS: ("regclass", 4), REGTYPE: ("regtype", 4), UUID: ("uuid", 16),
}  # fmt: skip

# Engine (DuckDB) type names -> OIDs.
_ENGINE_TYPES = {
    "BOOLEAN": BOOL, "TINYINT": INT2, "SMALLINT": INT2, "INTEGER": INT4, "BIGINT": INT8, "UTINYINT": INT2,
    "USMALLINT": INT4, "UINTEGER": INT8, "HUGEINT": NUMERIC, "UBIGINT": NUMERIC, "UHUGEINT": NUMERIC,
    "FLOAT": FLOAT4, "DOUBLE": FLOAT8, "VARCHAR": TEXT, "DATE": DATE, "TIME": TIME, "TIMESTAMP": TIMESTAMP,
    "TIMESTAMP WITH TIME ZONE": TIMESTAMPTZ, "INTERVAL": INTERVAL, "BLOB": BYTEA, "UUID": UUID, "JSON": JSON,
}  # fmt: skip
# Policy column types -> OIDs (the types of group keys).
POLICY_TYPES = {"int": INT8, "float": FLOAT8, "text": TEXT, "bool": BOOL, "date": DATE, "timestamp": TIMESTAMP}
PG_EPOCH = dt.date(2000, 1, 1)
PG_EPOCH_TS = dt.datetime(2000, 1, 1)
_DECIMAL = re.compile(r"^DECIMAL\(\d+,\s*\d+\)$")


def oid_for_engine_type(type_name: str) -> int:
    """The OID of an engine type name (text for anything without a PostgreSQL twin)."""
    name = type_name.upper().strip()
    if name.endswith("[]"):
        element = oid_for_engine_type(name[:-2])
        return ARRAY_OF.get(element, ARRAY_OF[TEXT])
    if _DECIMAL.match(name):
        return NUMERIC
    return _ENGINE_TYPES.get(name, TEXT)


def type_size(oid: int) -> int:
    """pg_type.typlen of an OID (-1 for varlena and arrays)."""
    return TYPES.get(oid, ("", -1))[1]


def type_name(oid: int) -> str:
    """pg_type.typname of an OID."""
    if oid in ELEMENT_OF:
        return "_" + type_name(ELEMENT_OF[oid])
    return TYPES.get(oid, ("text", -1))[0]


# --- text format --------------------------------------------------------------------------------
def _float_text(value: Any) -> str:
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return repr(number)


def _array_item(value: Any, element: int) -> str:
    if value is None:
        return "NULL"
    text = text_value(element, value)
    if text == "" or any(c in text for c in ' ,{}"\\') or text.upper() == "NULL":
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def text_value(oid: int, value: Any) -> str:
    """The PostgreSQL text output of a Python value as type `oid`."""
    if oid in ELEMENT_OF:
        return "{" + ",".join(_array_item(v, ELEMENT_OF[oid]) for v in value) + "}"
    if isinstance(value, bool) or oid == BOOL:
        return "t" if value else "f"
    if oid in (FLOAT4, FLOAT8):
        return _float_text(value)
    if oid in (INT2, INT4, INT8, OID, REGPROC, REGCLASS, REGTYPE) and isinstance(value, (int, float, decimal.Decimal)):
        return str(int(value))
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    if isinstance(value, dt.timedelta):
        return f"{value.days} days {value.seconds} seconds {value.microseconds} microseconds"
    return str(value)


def encode_text(oid: int, value: Any) -> bytes | None:
    """A DataRow field in text format."""
    return None if value is None else text_value(oid, value).encode("utf-8")


# --- binary format ------------------------------------------------------------------------------
def _numeric_binary(value: Any) -> bytes:
    number = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
    if not number.is_finite():
        return struct.pack("!hhHH", 0, 0, 0xC000, 0)
    sign, digit_tuple, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    if exponent >= 0:
        whole, fraction = digits + "0" * exponent, ""
    else:
        point = len(digits) + exponent
        whole, fraction = digits[: max(point, 0)], "0" * max(-point, 0) + digits[max(point, 0) :]
    whole = whole.lstrip("0")
    whole = "0" * (-len(whole) % 4) + whole
    dscale = len(fraction)
    fraction += "0" * (-len(fraction) % 4)
    groups = [int(part[i : i + 4]) for part in (whole, fraction) for i in range(0, len(part), 4)]
    weight = len(whole) // 4 - 1
    while groups and groups[0] == 0:
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    if not groups:
        weight = 0
    return struct.pack(f"!hhHH{len(groups)}H", len(groups), weight, 0x4000 if sign else 0, dscale, *groups)


def _array_binary(oid: int, value: Any) -> bytes:
    element = ELEMENT_OF[oid]
    items = list(value)
    has_null = any(v is None for v in items)
    head = struct.pack("!iiIii", 1 if items else 0, int(has_null), element, len(items), 1) if items else struct.pack("!iiI", 0, 0, element)
    body = []
    for item in items:
        encoded = encode_binary(element, item)
        body.append(struct.pack("!i", -1) if encoded is None else struct.pack("!i", len(encoded)) + encoded)
    return head + b"".join(body)


def _date_binary(value: Any) -> bytes:
    day = value.date() if isinstance(value, dt.datetime) else value
    return struct.pack("!i", (day - PG_EPOCH).days)


def _timestamp_binary(value: Any) -> bytes:
    moment = value if isinstance(value, dt.datetime) else dt.datetime.combine(value, dt.time())
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
    delta = moment - PG_EPOCH_TS
    return struct.pack("!q", (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds)


def _time_binary(value: Any) -> bytes:
    return struct.pack("!q", ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond)


def _interval_binary(value: Any) -> bytes:
    return struct.pack("!qii", value.seconds * 1_000_000 + value.microseconds, value.days, 0)


_BINARY: dict[int, Callable[[Any], bytes]] = {
    BOOL: lambda v: b"\x01" if v else b"\x00",
    INT2: lambda v: struct.pack("!h", int(v)),
    INT4: lambda v: struct.pack("!i", int(v)),
    INT8: lambda v: struct.pack("!q", int(v)),
    OID: lambda v: struct.pack("!I", int(v)),
    REGPROC: lambda v: struct.pack("!I", int(v)),
    REGCLASS: lambda v: struct.pack("!I", int(v)),
    REGTYPE: lambda v: struct.pack("!I", int(v)),
    FLOAT4: lambda v: struct.pack("!f", float(v)),
    FLOAT8: lambda v: struct.pack("!d", float(v)),
    NUMERIC: _numeric_binary,
    DATE: _date_binary,
    TIMESTAMP: _timestamp_binary,
    TIMESTAMPTZ: _timestamp_binary,
    TIME: _time_binary,
    INTERVAL: _interval_binary,
    BYTEA: lambda v: bytes(v),
    UUID: lambda v: (v if isinstance(v, uuid.UUID) else uuid.UUID(str(v))).bytes,
    CHAR: lambda v: str(v).encode("utf-8")[:1],
}


def encode_binary(oid: int, value: Any) -> bytes | None:
    """A DataRow field in binary format (text types are their UTF-8 bytes)."""
    if value is None:
        return None
    if oid in ELEMENT_OF:
        return _array_binary(oid, value)
    encoder = _BINARY.get(oid)
    return encoder(value) if encoder is not None else text_value(oid, value).encode("utf-8")


def encode(oid: int, value: Any, fmt: int) -> bytes | None:
    """A DataRow field in format `fmt` (0 text, 1 binary)."""
    return encode_binary(oid, value) if fmt == 1 else encode_text(oid, value)


# --- parameters ---------------------------------------------------------------------------------
_TRUE = frozenset({"t", "true", "y", "yes", "on", "1"})


def _split_array(text: str) -> list[str | None]:
    """Items of a one-dimensional PostgreSQL array literal such as {a,"b c",NULL}."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise ValueError(f"malformed array literal: {text!r}")
    items: list[str | None] = []
    body, index = body[1:-1], 0
    while index < len(body):
        if body[index] == '"':
            value, index = [], index + 1
            while body[index] != '"':
                if body[index] == "\\":
                    index += 1
                value.append(body[index])
                index += 1
            items.append("".join(value))
            index += 2  # the closing quote and the comma
            continue
        end = body.find(",", index)
        end = len(body) if end < 0 else end
        raw = body[index:end].strip()
        items.append(None if raw.upper() == "NULL" else raw)
        index = end + 1
    return items


def _array_from_binary(data: bytes) -> list[Any]:
    ndim, _, element = struct.unpack_from("!iiI", data)
    if ndim == 0:
        return []
    if ndim != 1:
        raise ValueError("only one-dimensional arrays are accepted")
    (count, _) = struct.unpack_from("!ii", data, 12)
    items, offset = [], 20
    for _ in range(count):
        (size,) = struct.unpack_from("!i", data, offset)
        offset += 4
        items.append(None if size == -1 else _from_binary(element, data[offset : offset + size]))
        offset += max(size, 0)
    return items


def _parse_text(oid: int, text: str) -> Any:
    if oid in ELEMENT_OF:
        return [None if item is None else _parse_text(ELEMENT_OF[oid], item) for item in _split_array(text)]
    if oid in (INT2, INT4, INT8, OID):
        return int(text)
    if oid in (FLOAT4, FLOAT8):
        return float(text)
    if oid == NUMERIC:
        return decimal.Decimal(text)
    if oid == BOOL:
        return text.strip().lower() in _TRUE
    if oid == DATE:
        return parse_date(text)
    if oid in (TIMESTAMP, TIMESTAMPTZ):
        return parse_timestamp(text, keep_offset=oid == TIMESTAMPTZ)
    return text


# What JDBC's setDate/setTimestamp send (as untyped text): `2024-01-01 +00`, `2024-01-01 10:00:00+05:30`,
# `2024-01-01 10:00:00.123-0800`; psycopg and others send ISO text. `T` or a space between date and time.
_DATE_TEXT = re.compile(r"^\s*(\d{4,})-(\d{1,2})-(\d{1,2})(?P<rest>.*)$", re.DOTALL)
_TIME_TEXT = re.compile(r"^(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6})\d*)?)?)?\s*"
                        r"(?:(?P<utc>Z)|(?P<sign>[+-])(?P<zh>\d{1,2})(?::?(?P<zm>\d{2})(?::?(?P<zs>\d{2}))?)?)?\s*(?:AD)?\s*$",
                        re.IGNORECASE)  # fmt: skip


def parse_date(text: str) -> dt.date:
    """A date parameter as PostgreSQL reads one: an ISO date, optionally followed by a time and an
    offset, both ignored (JDBC's setDate sends `2024-01-01 +00`)."""
    day, _ = _date_time(text)
    return day.date()


def parse_timestamp(text: str, *, keep_offset: bool = False) -> dt.datetime:
    """A timestamp parameter: ISO date and time with an optional offset. As PostgreSQL does for
    `timestamp without time zone`, the offset is ignored (the wall-clock time is kept); for
    `timestamptz` (`keep_offset`) the instant is converted to UTC (the session's TimeZone)."""
    moment, offset = _date_time(text)
    if keep_offset and offset is not None:
        return (moment - offset).replace(tzinfo=None)
    return moment


def _date_time(text: str) -> tuple[dt.datetime, dt.timedelta | None]:
    match = _DATE_TEXT.match(text)
    rest = _TIME_TEXT.match(match.group("rest")) if match else None
    if match is None or rest is None:
        raise ValueError(f"invalid date or timestamp {text.strip()[:40]!r}: expected YYYY-MM-DD[ HH:MM[:SS[.ffffff]]][+HH[:MM]]")
    hour, minute, second, fraction = (rest.group(i) for i in range(1, 5))
    moment = dt.datetime(int(match.group(1)), int(match.group(2)), int(match.group(3)), int(hour or 0), int(minute or 0),
                         int(second or 0), int((fraction or "0").ljust(6, "0")))  # fmt: skip
    if rest.group("utc"):
        return moment, dt.timedelta(0)
    if rest.group("sign") is None:
        return moment, None
    offset = dt.timedelta(hours=int(rest.group("zh")), minutes=int(rest.group("zm") or 0), seconds=int(rest.group("zs") or 0))
    return moment, -offset if rest.group("sign") == "-" else offset


def _numeric_from_binary(data: bytes) -> decimal.Decimal:
    ndigits, weight, sign, dscale = struct.unpack_from("!hhHH", data)
    if sign == 0xC000:
        return decimal.Decimal("NaN")
    digits = struct.unpack_from(f"!{ndigits}H", data, 8)
    value = sum((decimal.Decimal(d) * decimal.Decimal(10000) ** (weight - i) for i, d in enumerate(digits)), decimal.Decimal(0))
    value = -value if sign == 0x4000 else value
    return value.quantize(decimal.Decimal(1).scaleb(-dscale)) if dscale else value


def _from_binary(oid: int, data: bytes) -> Any:
    if oid in ELEMENT_OF:
        return _array_from_binary(data)
    simple = {INT2: "!h", INT4: "!i", INT8: "!q", OID: "!I", FLOAT4: "!f", FLOAT8: "!d"}
    if oid in simple:
        return struct.unpack(simple[oid], data)[0]
    if oid == BOOL:
        return data != b"\x00"
    if oid == NUMERIC:
        return _numeric_from_binary(data)
    if oid == DATE:
        return PG_EPOCH + dt.timedelta(days=struct.unpack("!i", data)[0])
    if oid in (TIMESTAMP, TIMESTAMPTZ):
        return PG_EPOCH_TS + dt.timedelta(microseconds=struct.unpack("!q", data)[0])
    if oid == BYTEA:
        return data
    return data.decode("utf-8")


def decode_parameter(oid: int, data: bytes | None, fmt: int) -> Any:
    """A Bind parameter as a Python value; ValueError when it does not match its type."""
    if data is None:
        return None
    try:
        return _from_binary(oid, data) if fmt == 1 else _parse_text(oid, data.decode("utf-8"))
    except (struct.error, UnicodeDecodeError, decimal.InvalidOperation) as err:
        raise ValueError(str(err)) from err

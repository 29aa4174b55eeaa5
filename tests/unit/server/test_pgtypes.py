"""Type OIDs and value encodings (text and binary) of the server."""

from __future__ import annotations

import datetime as dt
import decimal
import struct

import pytest

from dpsql.server import pgtypes as t


@pytest.mark.parametrize(
    ("engine", "oid"),
    [("BIGINT", t.INT8), ("DOUBLE", t.FLOAT8), ("VARCHAR", t.TEXT), ("BOOLEAN", t.BOOL), ("DATE", t.DATE),
     ("DECIMAL(18,3)", t.NUMERIC), ("HUGEINT", t.NUMERIC), ("VARCHAR[]", 1009), ("SMALLINT[]", 1005), ("MAP(INT, INT)", t.TEXT)],
)  # fmt: skip
def test_engine_types_map_to_oids(engine: str, oid: int) -> None:
    assert t.oid_for_engine_type(engine) == oid


def test_policy_types_map_to_oids() -> None:
    assert t.POLICY_TYPES == {"int": t.INT8, "float": t.FLOAT8, "text": t.TEXT, "bool": t.BOOL, "date": t.DATE,
                              "timestamp": t.TIMESTAMP}


@pytest.mark.parametrize(
    ("oid", "value", "text"),
    [(t.INT8, 42, "42"), (t.FLOAT8, 1.0, "1"), (t.FLOAT8, 0.1, "0.1"), (t.FLOAT8, float("nan"), "NaN"),
     (t.FLOAT8, float("-inf"), "-Infinity"), (t.BOOL, True, "t"), (t.TEXT, "é", "é"), (t.DATE, dt.date(2020, 1, 2), "2020-01-02"),
     (1009, ["a", "b c", None, ""], '{a,"b c",NULL,""}'), (t.FLOAT8, 3, "3")],
)  # fmt: skip
def test_text_encoding(oid: int, value: object, text: str) -> None:
    assert t.encode_text(oid, value) == text.encode()


def test_binary_encoding_of_scalars() -> None:
    assert t.encode_binary(t.INT8, 7) == struct.pack("!q", 7)
    assert t.encode_binary(t.INT4, 7) == struct.pack("!i", 7)
    assert t.encode_binary(t.FLOAT8, 2) == struct.pack("!d", 2.0)
    assert t.encode_binary(t.BOOL, False) == b"\x00"
    assert t.encode_binary(t.DATE, dt.date(2000, 1, 2)) == struct.pack("!i", 1)
    assert t.encode_binary(t.TEXT, "x") == b"x"
    assert t.encode_binary(t.INT8, None) is None


def test_binary_array() -> None:
    data = t.encode_binary(1016, [1, None])
    assert data == struct.pack("!iiIii", 1, 1, t.INT8, 2, 1) + struct.pack("!iq", 8, 1) + struct.pack("!i", -1)


@pytest.mark.parametrize("text", ["0", "1", "-1", "12345.678", "0.0001", "100000000", "-0.5", "123.4500", "0.00012", "NaN"])
def test_numeric_binary_round_trip(text: str) -> None:
    value = decimal.Decimal(text)
    decoded = t.decode_parameter(t.NUMERIC, t.encode_binary(t.NUMERIC, value), 1)
    assert (decoded.is_nan() and value.is_nan()) or (decoded == value and str(decoded) == str(value))


@pytest.mark.parametrize(
    ("oid", "data", "fmt", "value"),
    [(t.INT8, b"40", 0, 40), (t.INT4, struct.pack("!i", -3), 1, -3), (t.FLOAT8, b"0.5", 0, 0.5),
     (t.TEXT, b"sales", 0, "sales"), (0, b"sales", 0, "sales"), (t.BOOL, b"t", 0, True), (t.BOOL, b"\x00", 1, False),
     (t.DATE, b"2020-01-02", 0, dt.date(2020, 1, 2)), (t.DATE, struct.pack("!i", 1), 1, dt.date(2000, 1, 2)), (t.INT8, None, 0, None)],
)  # fmt: skip
def test_parameter_decoding(oid: int, data: bytes | None, fmt: int, value: object) -> None:
    assert t.decode_parameter(oid, data, fmt) == value


def test_bad_parameter_raises_value_error() -> None:
    with pytest.raises(ValueError):
        t.decode_parameter(t.INT8, b"forty", 0)
    with pytest.raises(ValueError):
        t.decode_parameter(t.INT8, b"\x01", 1)


def test_array_parameters() -> None:
    assert t.decode_parameter(1009, b'{r,p,"a b",NULL,"q\\"x"}', 0) == ["r", "p", "a b", None, 'q"x']
    assert t.decode_parameter(1016, b"{1,2}", 0) == [1, 2]
    assert t.decode_parameter(1016, t.encode_binary(1016, [1, None, 3]), 1) == [1, None, 3]
    assert t.decode_parameter(1009, b"{}", 0) == []

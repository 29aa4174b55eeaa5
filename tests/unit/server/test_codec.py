"""The sans-IO pgwire codec: frontend messages decoded from bytes, backend messages framed."""

from __future__ import annotations

import struct

import pytest

from dpsql.server import codec


def frontend(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def startup(params: dict[str, str], code: int = codec.PROTOCOL_V3) -> bytes:
    body = struct.pack("!i", code) + b"".join(k.encode() + b"\0" + v.encode() + b"\0" for k, v in params.items()) + b"\0"
    return struct.pack("!i", len(body) + 4) + body


def decode_all(data: bytes, startup_phase: bool = False) -> list[codec.FrontendMessage]:
    decoder = codec.Decoder()
    decoder.startup_phase = startup_phase
    decoder.feed(data)
    return list(decoder.messages())


def test_startup_message_then_typed_messages() -> None:
    decoder = codec.Decoder()
    decoder.feed(startup({"user": "alice", "database": "db"}) + frontend(b"Q", b"SELECT 1\0"))
    messages = list(decoder.messages())
    assert messages == [codec.Startup(codec.PROTOCOL_V3, {"user": "alice", "database": "db"}), codec.Query("SELECT 1")]


def test_ssl_request_keeps_the_startup_phase() -> None:
    decoder = codec.Decoder()
    decoder.feed(struct.pack("!ii", 8, codec.SSL_REQUEST))
    assert list(decoder.messages()) == [codec.SSLRequest()]
    assert decoder.startup_phase


def test_partial_input_waits_for_the_rest() -> None:
    data = frontend(b"Q", b"SELECT 42\0")
    decoder = codec.Decoder()
    decoder.startup_phase = False
    for byte in data[:-1]:
        decoder.feed(bytes([byte]))
        assert list(decoder.messages()) == []
    decoder.feed(data[-1:])
    assert list(decoder.messages()) == [codec.Query("SELECT 42")]


def test_extended_query_messages() -> None:
    parse = frontend(b"P", b"s1\0SELECT $1\0" + struct.pack("!hI", 1, 23))
    bind = frontend(b"B", b"p1\0s1\0" + struct.pack("!hh", 1, 1) + struct.pack("!hi", 2, 4) + b"\0\0\0\x07"
                    + struct.pack("!i", -1) + struct.pack("!hh", 1, 1))  # fmt: skip
    describe = frontend(b"D", b"Pp1\0")
    execute = frontend(b"E", b"p1\0" + struct.pack("!i", 10))
    messages = decode_all(parse + bind + describe + execute + frontend(b"S", b"") + frontend(b"X", b""))
    assert messages == [
        codec.Parse("s1", "SELECT $1", (23,)),
        codec.Bind("p1", "s1", (1,), (b"\0\0\0\x07", None), (1,)),
        codec.Describe("P", "p1"),
        codec.Execute("p1", 10),
        codec.Sync(),
        codec.Terminate(),
    ]


def test_unknown_message_type_is_reported_not_crashed() -> None:
    assert decode_all(frontend(b"F", b"\0\0")) == [codec.Unsupported("F")]


def test_invalid_length_is_a_protocol_violation() -> None:
    with pytest.raises(codec.ProtocolViolation):
        decode_all(b"Q" + struct.pack("!i", 2))


def test_sasl_initial_response() -> None:
    payload = b"SCRAM-SHA-256\0" + struct.pack("!i", 5) + b"n,,ab"
    assert codec.parse_sasl_initial(payload) == ("SCRAM-SHA-256", b"n,,ab")


def test_error_response_carries_severity_sqlstate_message_hint_and_position() -> None:
    data = codec.error_response("0A000", "DP105: nope", hint="aggregate it", position=8)
    assert data[:1] == b"E"
    (length,) = struct.unpack("!i", data[1:5])
    assert length == len(data) - 1
    fields = dict((f[:1], f[1:].decode()) for f in data[5:-1].split(b"\0") if f)
    assert fields == {b"S": "ERROR", b"V": "ERROR", b"C": "0A000", b"M": "DP105: nope", b"H": "aggregate it", b"P": "8"}


def test_row_description_and_data_row_framing() -> None:
    description = codec.row_description([codec.FieldDescription("n", 20, 8, -1, 0)])
    assert description[:1] == b"T" and description.endswith(b"n\0" + struct.pack("!ihihih", 0, 0, 20, 8, -1, 0))
    row = codec.data_row([b"42", None])
    assert row == b"D" + struct.pack("!ih", 4 + 2 + 4 + 2 + 4, 2) + struct.pack("!i", 2) + b"42" + struct.pack("!i", -1)


def test_ready_for_query_and_command_complete() -> None:
    assert codec.ready_for_query("I") == b"Z\0\0\0\x05I"
    assert codec.command_complete("SELECT 1") == b"C\0\0\0\x0dSELECT 1\0"

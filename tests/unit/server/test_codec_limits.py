"""The decoder's caps and its refusal of malformed startup-phase bodies (sans-IO, no sockets)."""

from __future__ import annotations

import struct

import pytest

from dpsql.server import codec


def test_before_login_a_message_over_the_cap_is_refused_from_its_length() -> None:
    decoder = codec.Decoder()
    decoder.feed(struct.pack("!i", codec.MAX_STARTUP_MESSAGE + 1))  # the length alone
    with pytest.raises(codec.ProtocolViolation):
        list(decoder.messages())


def test_typed_messages_before_login_are_capped_too() -> None:
    decoder = codec.Decoder()
    decoder.startup_phase = False
    decoder.feed(b"p" + struct.pack("!i", codec.MAX_STARTUP_MESSAGE + 1))
    with pytest.raises(codec.ProtocolViolation):
        list(decoder.messages())


def test_after_login_the_configured_cap_applies() -> None:
    decoder = codec.Decoder(max_message=50_000)
    decoder.startup_phase = False
    decoder.authenticated()
    body = b"SELECT 1 --" + b"x" * 20_000 + b"\0"
    decoder.feed(b"Q" + struct.pack("!i", len(body) + 4) + body)
    assert list(decoder.messages()) == [codec.Query(body[:-1].decode())]
    decoder.feed(b"Q" + struct.pack("!i", 50_001))
    with pytest.raises(codec.ProtocolViolation):
        list(decoder.messages())


@pytest.mark.parametrize(
    "body",
    [
        struct.pack("!ii", codec.CANCEL_REQUEST, 1),  # no key: struct.error before
        struct.pack("!iiii", codec.CANCEL_REQUEST, 1, 2, 3),  # one field too many
        struct.pack("!ii", codec.SSL_REQUEST, 0),
        struct.pack("!i", codec.PROTOCOL_V3) + b"user\0alice",  # no terminator
        struct.pack("!i", codec.PROTOCOL_V3) + b"user\0\xff\0\0",  # not UTF-8
        struct.pack("!i", codec.PROTOCOL_V3) + b"user\0a\0\0extra",  # bytes after the terminator
        b"\0\0",  # shorter than a code
    ],
)
def test_malformed_startup_bodies_are_protocol_violations(body: bytes) -> None:
    with pytest.raises(codec.ProtocolViolation):
        codec.decode_startup(body)


def test_cancel_request_of_the_right_size_decodes() -> None:
    assert codec.decode_startup(struct.pack("!iii", codec.CANCEL_REQUEST, 7, 9)) == codec.CancelRequest(7, 9)


@pytest.mark.parametrize("payload", [b"SCRAM-SHA-256\0\0\0", b"SCRAM-SHA-256", b"SCRAM-SHA-256\0\0\0\0\x09abc",
                                     b"SCRAM-SHA-256\0\0\0\0\x01ab"])
def test_malformed_sasl_initial_responses_are_protocol_violations(payload: bytes) -> None:
    with pytest.raises(codec.ProtocolViolation):
        codec.parse_sasl_initial(payload)


@pytest.mark.parametrize("kind, body", [(b"B", b"p\0s\0\0"), (b"P", b"s\0SELECT 1\0\0\1\0\0"), (b"E", b"p\0\0"),
                                        (b"D", b"\xff"), (b"C", b"S")])
def test_truncated_typed_bodies_are_protocol_violations(kind: bytes, body: bytes) -> None:
    with pytest.raises(codec.ProtocolViolation):
        codec.decode_message(kind.decode(), body)

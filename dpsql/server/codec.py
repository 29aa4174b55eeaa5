"""Sans-IO codec of the PostgreSQL frontend/backend protocol, version 3: bytes <-> messages.

No sockets here: a `Decoder` is fed bytes and yields frontend messages; the `*_msg` functions
build backend messages as bytes. The protocol state machine (protocol.py) sits on top.
Reference: PostgreSQL documentation, chapter "Frontend/Backend Protocol", "Message Formats".
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

PROTOCOL_V3 = 196608  # 3 << 16
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
# Before login every message (startup packet, SSLRequest, CancelRequest, SASL messages) is capped
# like PostgreSQL's MAX_STARTUP_PACKET_LENGTH: an unauthenticated peer can make the server buffer at
# most this much. After login the (configurable) larger cap applies. A message whose announced
# length passes the cap is refused when its length arrives, before its body is buffered.
MAX_STARTUP_MESSAGE = 10_000
MAX_MESSAGE = 16 * 1024 * 1024


class ProtocolViolation(Exception):
    """The peer sent bytes that are not a valid protocol message."""


# --- frontend messages --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Startup:
    """StartupMessage: protocol version and parameters (user, database, options, ...)."""

    version: int
    parameters: dict[str, str]


@dataclass(frozen=True, slots=True)
class SSLRequest:
    """SSLRequest: the client asks for TLS before the startup message."""


@dataclass(frozen=True, slots=True)
class GSSEncRequest:
    """GSSENCRequest: refused with 'N'."""


@dataclass(frozen=True, slots=True)
class CancelRequest:
    """CancelRequest: process id and secret key of the connection to cancel."""

    pid: int
    key: int


@dataclass(frozen=True, slots=True)
class PasswordData:
    """'p': PasswordMessage, SASLInitialResponse or SASLResponse (the state tells which)."""

    payload: bytes


@dataclass(frozen=True, slots=True)
class Query:
    """'Q': simple query."""

    sql: str


@dataclass(frozen=True, slots=True)
class Parse:
    """'P': prepare `sql` as statement `name` with parameter type OIDs (0 = unspecified)."""

    name: str
    sql: str
    param_types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Bind:
    """'B': bind parameter values to a prepared statement, making a portal."""

    portal: str
    statement: str
    param_formats: tuple[int, ...]
    params: tuple[bytes | None, ...]
    result_formats: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Describe:
    """'D': describe a statement ('S') or a portal ('P')."""

    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class Execute:
    """'E': run a portal, returning at most `max_rows` rows (0 = all)."""

    portal: str
    max_rows: int


@dataclass(frozen=True, slots=True)
class Close:
    """'C': close a statement ('S') or a portal ('P')."""

    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class Sync:
    """'S': end of an extended-query batch."""


@dataclass(frozen=True, slots=True)
class Flush:
    """'H': send what is pending."""


@dataclass(frozen=True, slots=True)
class Terminate:
    """'X': the client closes the connection."""


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A typed message this server does not implement (function call, COPY data)."""

    type: str


FrontendMessage = (
    Startup | SSLRequest | GSSEncRequest | CancelRequest | PasswordData | Query | Parse | Bind | Describe | Execute
    | Close | Sync | Flush | Terminate | Unsupported
)


class _Reader:
    """Reads fields of one message body."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.pos = 0

    def int16(self) -> int:
        (value,) = struct.unpack("!h", self.raw(2))
        return int(value)

    def int32(self) -> int:
        (value,) = struct.unpack("!i", self.raw(4))
        return int(value)

    def cstring(self) -> str:
        end = self.body.find(b"\0", self.pos)
        if end < 0:
            raise ProtocolViolation("unterminated string in message")
        try:
            text = self.body[self.pos : end].decode("utf-8")
        except UnicodeDecodeError as err:
            raise ProtocolViolation("invalid UTF-8 in message") from err
        self.pos = end + 1
        return text

    def raw(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.body):
            raise ProtocolViolation("field runs past the end of the message")
        data = self.body[self.pos : self.pos + size]
        self.pos += size
        return data

    def byte(self) -> str:
        value = self.raw(1)
        if not value.isascii():
            raise ProtocolViolation("invalid byte in message")
        return value.decode("ascii")

    def end(self) -> None:
        """The message must hold nothing more (PostgreSQL's pq_getmsgend)."""
        if self.pos != len(self.body):
            raise ProtocolViolation("invalid message format")


class Decoder:
    """Buffers received bytes and yields complete frontend messages.

    The first message of a connection has no type byte (startup phase); after it, every
    message has one. Call `expect_startup()` again after an SSLRequest answered with 'S'/'N'.
    Until `authenticated()` raises it, every message is capped at MAX_STARTUP_MESSAGE bytes.
    """

    def __init__(self, max_message: int = MAX_MESSAGE) -> None:
        self._buffer = bytearray()
        self.startup_phase = True
        self.limit = MAX_STARTUP_MESSAGE
        self._max_message = max_message

    def authenticated(self) -> None:
        """The peer logged in: from now on messages may be up to the post-login cap."""
        self.limit = self._max_message

    @property
    def pending(self) -> int:
        """Bytes received but not yet decoded."""
        return len(self._buffer)

    def expect_startup(self) -> None:
        """The next message is again an untyped startup-phase message."""
        self.startup_phase = True

    def feed(self, data: bytes) -> None:
        """Add received bytes."""
        self._buffer += data

    def messages(self) -> Iterator[FrontendMessage]:
        """Yield every complete message buffered so far."""
        while True:
            message = self._next()
            if message is None:
                return
            yield message

    def _next(self) -> FrontendMessage | None:
        offset = 0 if self.startup_phase else 1
        if len(self._buffer) < offset + 4:
            return None
        (length,) = struct.unpack_from("!i", self._buffer, offset)
        if self.startup_phase and not 8 <= length <= self.limit:
            raise ProtocolViolation("invalid length of startup packet")
        if length < 4:
            raise ProtocolViolation(f"invalid message length {length}")
        if length > self.limit:
            raise ProtocolViolation(f"message of {length} bytes exceeds the limit of {self.limit} bytes")
        if len(self._buffer) < offset + length:
            return None
        kind = chr(self._buffer[0]) if offset else ""
        body = bytes(self._buffer[offset + 4 : offset + length])
        del self._buffer[: offset + length]
        if self.startup_phase:
            message = decode_startup(body)
            if isinstance(message, Startup):
                self.startup_phase = False
            return message
        return decode_message(kind, body)


def decode_startup(body: bytes) -> FrontendMessage:
    """A startup-phase message body (after the length); ProtocolViolation when it is malformed."""
    reader = _Reader(body)
    code = reader.int32()
    if code in (SSL_REQUEST, GSSENC_REQUEST):
        reader.end()
        return SSLRequest() if code == SSL_REQUEST else GSSEncRequest()
    if code == CANCEL_REQUEST:
        request = CancelRequest(reader.int32(), reader.int32())
        reader.end()
        return request
    if code >> 16 != 3:
        raise ProtocolViolation(f"unsupported frontend protocol {code >> 16}.{code & 0xFFFF}")
    if not body.endswith(b"\0"):
        raise ProtocolViolation("invalid startup packet layout: expected terminator as last byte")
    parameters: dict[str, str] = {}
    while reader.pos < len(body):
        name = reader.cstring()
        if not name:
            break
        parameters[name] = reader.cstring()
    reader.end()
    return Startup(code, parameters)


def decode_message(kind: str, body: bytes) -> FrontendMessage:
    """A typed message body (after the type byte and the length)."""
    decoder = _DECODERS.get(kind)
    if decoder is None:
        return Unsupported(kind)
    try:
        return decoder(_Reader(body))
    except (struct.error, UnicodeDecodeError, ValueError) as err:
        raise ProtocolViolation(f"malformed '{kind}' message") from err


def _parse(r: _Reader) -> Parse:
    name, sql = r.cstring(), r.cstring()
    count = r.int16()
    return Parse(name, sql, tuple(r.int32() & 0xFFFFFFFF for _ in range(count)))


def _bind(r: _Reader) -> Bind:
    portal, statement = r.cstring(), r.cstring()
    formats = tuple(r.int16() for _ in range(r.int16()))
    params: list[bytes | None] = []
    for _ in range(r.int16()):
        size = r.int32()
        params.append(None if size == -1 else r.raw(size))
    results = tuple(r.int16() for _ in range(r.int16()))
    return Bind(portal, statement, formats, tuple(params), results)


_DECODERS: dict[str, Callable[[_Reader], FrontendMessage]] = {
    "Q": lambda r: Query(r.cstring()),
    "P": _parse,
    "B": _bind,
    "D": lambda r: Describe(r.byte(), r.cstring()),
    "E": lambda r: Execute(r.cstring(), r.int32()),
    "C": lambda r: Close(r.byte(), r.cstring()),
    "S": lambda r: Sync(),
    "H": lambda r: Flush(),
    "X": lambda r: Terminate(),
    "p": lambda r: PasswordData(r.body),
}


def parse_sasl_initial(payload: bytes) -> tuple[str, bytes]:
    """SASLInitialResponse: (mechanism name, initial client response)."""
    reader = _Reader(payload)
    mechanism = reader.cstring()
    size = reader.int32()
    data = b"" if size == -1 else reader.raw(size)
    reader.end()
    return mechanism, data


# --- backend messages ---------------------------------------------------------------------------
def message(kind: bytes, body: bytes = b"") -> bytes:
    """Frame a backend message: type byte, int32 length (itself included), body."""
    return kind + struct.pack("!i", len(body) + 4) + body


def _cstr(text: str) -> bytes:
    return text.encode("utf-8") + b"\0"


def auth_ok() -> bytes:
    """AuthenticationOk."""
    return message(b"R", struct.pack("!i", 0))


def auth_sasl(mechanisms: Sequence[str]) -> bytes:
    """AuthenticationSASL: the mechanisms offered."""
    return message(b"R", struct.pack("!i", 10) + b"".join(_cstr(m) for m in mechanisms) + b"\0")


def auth_sasl_continue(data: bytes) -> bytes:
    """AuthenticationSASLContinue with the server-first-message."""
    return message(b"R", struct.pack("!i", 11) + data)


def auth_sasl_final(data: bytes) -> bytes:
    """AuthenticationSASLFinal with the server-final-message."""
    return message(b"R", struct.pack("!i", 12) + data)


def parameter_status(name: str, value: str) -> bytes:
    """ParameterStatus."""
    return message(b"S", _cstr(name) + _cstr(value))


def backend_key_data(pid: int, key: int) -> bytes:
    """BackendKeyData."""
    return message(b"K", struct.pack("!ii", pid, key))


def negotiate_protocol_version(minor: int, unsupported: Sequence[str]) -> bytes:
    """NegotiateProtocolVersion: the newest 3.x minor version served and the options not recognised."""
    return message(b"v", struct.pack("!ii", minor, len(unsupported)) + b"".join(_cstr(o) for o in unsupported))


def ready_for_query(status: str) -> bytes:
    """ReadyForQuery with transaction status 'I', 'T' or 'E'."""
    return message(b"Z", status.encode("ascii"))


@dataclass(frozen=True, slots=True)
class FieldDescription:
    """One column of a RowDescription."""

    name: str
    type_oid: int
    type_size: int = -1
    type_modifier: int = -1
    format: int = 0
    table_oid: int = 0
    column_number: int = 0


def row_description(fields: Sequence[FieldDescription]) -> bytes:
    """RowDescription."""
    body = [struct.pack("!h", len(fields))]
    for f in fields:
        body.append(_cstr(f.name))
        body.append(struct.pack("!ihihih", f.table_oid, f.column_number, f.type_oid, f.type_size, f.type_modifier, f.format))
    return message(b"T", b"".join(body))


def data_row(values: Sequence[bytes | None]) -> bytes:
    """DataRow of already-encoded values (None is SQL NULL)."""
    body = [struct.pack("!h", len(values))]
    for value in values:
        body.append(struct.pack("!i", -1) if value is None else struct.pack("!i", len(value)) + value)
    return message(b"D", b"".join(body))


def command_complete(tag: str) -> bytes:
    """CommandComplete with its tag (e.g. 'SELECT 3', 'SET')."""
    return message(b"C", _cstr(tag))


def empty_query_response() -> bytes:
    """EmptyQueryResponse."""
    return message(b"I")


def parse_complete() -> bytes:
    """ParseComplete."""
    return message(b"1")


def bind_complete() -> bytes:
    """BindComplete."""
    return message(b"2")


def close_complete() -> bytes:
    """CloseComplete."""
    return message(b"3")


def no_data() -> bytes:
    """NoData."""
    return message(b"n")


def portal_suspended() -> bytes:
    """PortalSuspended."""
    return message(b"s")


def parameter_description(type_oids: Sequence[int]) -> bytes:
    """ParameterDescription."""
    return message(b"t", struct.pack("!h", len(type_oids)) + b"".join(struct.pack("!I", oid) for oid in type_oids))


def _notice_fields(severity: str, sqlstate: str, text: str, hint: str | None, position: int | None, detail: str | None) -> bytes:
    fields = [(b"S", severity), (b"V", severity), (b"C", sqlstate), (b"M", text)]
    if detail:
        fields.append((b"D", detail))
    if hint:
        fields.append((b"H", hint))
    if position is not None:
        fields.append((b"P", str(position)))
    return b"".join(code + _cstr(value) for code, value in fields) + b"\0"


def error_response(
    sqlstate: str, text: str, *, severity: str = "ERROR", hint: str | None = None, position: int | None = None,
    detail: str | None = None,
) -> bytes:
    """ErrorResponse with the S, V, C and M fields, and D, H and P (1-based character position) when known."""
    return message(b"E", _notice_fields(severity, sqlstate, text, hint, position, detail))


def notice_response(text: str, *, sqlstate: str = "00000", severity: str = "NOTICE") -> bytes:
    """NoticeResponse."""
    return message(b"N", _notice_fields(severity, sqlstate, text, None, None, None))

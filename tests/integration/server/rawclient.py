"""A minimal pgwire client over a socket: startup, SCRAM-SHA-256, and raw extended-query messages.

Used where a test must control the exact messages (Parse/Describe/Sync without Execute).
"""

from __future__ import annotations

import base64
import socket
import struct

from dpsql.server import codec, scram


def frontend(kind: bytes, body: bytes = b"") -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def parse(name: str, sql: str) -> bytes:
    return frontend(b"P", name.encode() + b"\0" + sql.encode() + b"\0" + struct.pack("!h", 0))


def bind(portal: str, statement: str, params: list[str]) -> bytes:
    body = portal.encode() + b"\0" + statement.encode() + b"\0" + struct.pack("!h", 0) + struct.pack("!h", len(params))
    body += b"".join(struct.pack("!i", len(p.encode())) + p.encode() for p in params)
    return frontend(b"B", body + struct.pack("!h", 0))


def describe(kind: str, name: str) -> bytes:
    return frontend(b"D", kind.encode() + name.encode() + b"\0")


def execute(portal: str) -> bytes:
    return frontend(b"E", portal.encode() + b"\0" + struct.pack("!i", 0))


SYNC = frontend(b"S")


def error_fields(payload: bytes) -> dict[str, str]:
    """The fields of an ErrorResponse body, by their one-letter codes."""
    return {f[:1].decode(): f[1:].decode() for f in payload.split(b"\0") if f}


class LoginRefused(Exception):
    """The server answered the login with an ErrorResponse."""

    def __init__(self, fields: dict[str, str]) -> None:
        super().__init__(fields.get("M"))
        self.fields = fields


class RawClient:
    """Connects and authenticates; `exchange(bytes)` sends and returns the messages up to ReadyForQuery."""

    def __init__(self, host: str, port: int, user: str | None, password: str) -> None:
        self.sock = socket.create_connection((host, port), timeout=30)
        self._buffer = b""
        who = b"user\0" + user.encode() + b"\0" if user is not None else b""
        body = struct.pack("!i", codec.PROTOCOL_V3) + who + b"database\0x\0\0"
        self.sock.sendall(struct.pack("!i", len(body) + 4) + body)
        self._expect(b"R")  # AuthenticationSASL
        first_bare = "n=,r=rawclientnonce"
        initial = b"SCRAM-SHA-256\0" + struct.pack("!i", len(first_bare) + 3) + b"n,," + first_bare.encode()
        self.sock.sendall(frontend(b"p", initial))
        kind, payload = self._expect(b"R")
        server_first = payload[4:].decode()
        attrs = dict(item.split("=", 1) for item in server_first.split(","))
        without_proof = f"c=biws,r={attrs['r']}"
        auth = f"{first_bare},{server_first},{without_proof}".encode()
        proof, _ = scram.client_proof(password, base64.b64decode(attrs["s"]), int(attrs["i"]), auth)
        self.sock.sendall(frontend(b"p", f"{without_proof},p={base64.b64encode(proof).decode()}".encode()))
        self._expect(b"R")  # AuthenticationSASLFinal
        self.startup = self.messages_until(b"Z")

    def _expect(self, kind: bytes) -> tuple[bytes, bytes]:
        got, payload = self._read()
        if got == b"E":
            self.sock.close()
            raise LoginRefused(error_fields(payload))
        assert got == kind, (got, kind)
        return got, payload

    def _read(self) -> tuple[bytes, bytes]:
        while len(self._buffer) < 5 or len(self._buffer) < 1 + struct.unpack("!i", self._buffer[1:5])[0]:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self._buffer += chunk
        size = struct.unpack("!i", self._buffer[1:5])[0]
        kind, payload, self._buffer = self._buffer[:1], self._buffer[5 : 1 + size], self._buffer[1 + size :]
        return kind, payload

    def messages_until(self, last: bytes) -> list[tuple[bytes, bytes]]:
        messages = []
        while True:
            kind, payload = self._read()
            messages.append((kind, payload))
            if kind == last or (kind == b"E" and last == b"R"):
                return messages

    def exchange(self, data: bytes) -> list[tuple[bytes, bytes]]:
        self.sock.sendall(data)
        return self.messages_until(b"Z")

    def close(self) -> None:
        self.sock.sendall(frontend(b"X"))
        self.sock.close()

"""The connection state machine, driven with bytes only (no sockets)."""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from dpsql.catalog.loader import load_policy
from dpsql.server import codec, scram
from dpsql.server.catalog_emulation import CatalogEmulation
from dpsql.server.protocol import PgConnection, ServerContext
from dpsql.session import open_session
from tests.conftest import make_policy_text


def typed(kind: bytes, body: bytes = b"") -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def untyped(body: bytes) -> bytes:
    return struct.pack("!i", len(body) + 4) + body


def startup(**params: str) -> bytes:
    return untyped(struct.pack("!i", codec.PROTOCOL_V3) + b"".join(k.encode() + b"\0" + v.encode() + b"\0" for k, v in params.items()) + b"\0")


def messages(data: bytes) -> list[tuple[bytes, bytes]]:
    out, index = [], 0
    while index < len(data):
        size = struct.unpack("!i", data[index + 1 : index + 5])[0]
        out.append((data[index : index + 1], data[index + 5 : index + 1 + size]))
        index += 1 + size
    return out


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory, people_frame: pd.DataFrame) -> ServerContext:
    path: Path = tmp_path_factory.mktemp("proto") / "policy.toml"
    verifier = scram.make_verifier("pw")
    path.write_text(make_policy_text(extra=f'[analysts.alice]\npassword = "{verifier}"\n'), encoding="utf-8")
    policy = load_policy(path)
    return ServerContext(policy, CatalogEmulation(policy), lambda user: open_session(None, policy, analyst=user, tables={"people": people_frame}))


def login(context: ServerContext, password: str = "pw") -> tuple[PgConnection, Any]:
    connection = PgConnection(context, pid=7)
    out = connection.receive(startup(user="alice", database="db"))
    assert messages(bytes(out.data)) == [(b"R", struct.pack("!i", 10) + b"SCRAM-SHA-256\0\0")]
    bare = "n=,r=abc"
    out = connection.receive(typed(b"p", b"SCRAM-SHA-256\0" + struct.pack("!i", len(bare) + 3) + b"n,," + bare.encode()))
    server_first = messages(bytes(out.data))[0][1][4:].decode()
    attrs = dict(p.split("=", 1) for p in server_first.split(","))
    final = f"c=biws,r={attrs['r']}"
    proof, _ = scram.client_proof(password, base64.b64decode(attrs["s"]), int(attrs["i"]), f"{bare},{server_first},{final}".encode())
    return connection, connection.receive(typed(b"p", f"{final},p={base64.b64encode(proof).decode()}".encode()))


def test_ssl_and_gss_requests_are_declined_without_tls(context: ServerContext) -> None:
    connection = PgConnection(context, pid=1)
    assert bytes(connection.receive(untyped(struct.pack("!i", codec.SSL_REQUEST))).data) == b"N"
    assert bytes(connection.receive(untyped(struct.pack("!i", codec.GSSENC_REQUEST))).data) == b"N"
    assert connection.state == "startup"


def test_login_then_simple_queries(context: ServerContext) -> None:
    connection, out = login(context)
    kinds = [k for k, _ in messages(bytes(out.data))]
    assert kinds[:2] == [b"R", b"R"] and kinds[-2:] == [b"K", b"Z"] and b"S" in kinds
    out = connection.receive(typed(b"Q", b"BEGIN; SHOW server_version\0"))
    replies = messages(bytes(out.data))
    assert [k for k, _ in replies] == [b"C", b"T", b"D", b"C", b"Z"]
    assert replies[2][1] == struct.pack("!hi", 1, 4) + b"15.0" and replies[-1][1] == b"T"
    out = connection.receive(typed(b"Q", b"SELECT income FROM people\0"))
    replies = messages(bytes(out.data))
    assert [k for k, _ in replies] == [b"E", b"Z"] and replies[-1][1] == b"E"
    assert b"C0A000\0" in replies[0][1] and b"P8\0" in replies[0][1]
    connection.close()


def test_wrong_password_is_fatal(context: ServerContext) -> None:
    connection, out = login(context, password="nope")
    (kind, body), = messages(bytes(out.data))
    assert kind == b"E" and b"SFATAL\0" in body and b"C28P01\0" in body and out.close


def test_errors_in_extended_mode_skip_to_sync(context: ServerContext) -> None:
    connection, _ = login(context)
    parse = typed(b"P", b"\0SELECT * FROM people\0\0\0")
    describe = typed(b"D", b"S\0")
    out = connection.receive(parse + describe + typed(b"E", b"\0\0\0\0\0") + typed(b"S"))
    assert [k for k, _ in messages(bytes(out.data))] == [b"1", b"E", b"Z"]
    connection.close()

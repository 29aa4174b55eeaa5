"""A pgwire fuzz test against a real `dpsql serve`: random, truncated and corrupted messages
before and after login (fixed seed, a few hundred cases, well under a minute). Whatever arrives,
the server must answer with well-framed messages, send only ERROR or FATAL ErrorResponses with a
SQLSTATE that is never an internal error (XX000), or close the connection; it must stay up, keep
serving a logged-in client, stay within a memory bound and never log a traceback."""

from __future__ import annotations

import random
import socket
import struct
import time
from collections import Counter

import pandas as pd
import pytest

from dpsql.server import codec
from tests.integration.server import rawclient
from tests.security.server_harness import PASSWORDS, error_fields, frontend, start_server, startup_packet

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")

SEED = 20261125
PRE_LOGIN_CASES = 250
POST_LOGIN_CASES = 450
QUIET = 0.15  # seconds of silence after which the server is taken to wait for more bytes
MAX_GROWTH_MIB = 96
BUDGET_SECONDS = 50


def _framed(data: bytes) -> list[tuple[bytes, bytes]]:
    messages = []
    while data:
        assert len(data) >= 5, data
        (length,) = struct.unpack("!i", data[1:5])
        assert 4 <= length <= len(data) - 1, (data[:1], length)
        messages.append((data[:1], data[5 : 1 + length]))
        data = data[1 + length :]
    return messages


def _exchange(sock: socket.socket, data: bytes, *, ssl_answers: int = 0) -> tuple[list[tuple[bytes, bytes]], bool]:
    """Send, then read until the server closes, answers ReadyForQuery, or goes quiet."""
    try:
        sock.sendall(data)
    except OSError:
        return [], True
    sock.settimeout(QUIET)
    buffer, closed = b"", False
    while True:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        except OSError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        buffer += chunk
        body = buffer[ssl_answers:]
        if len(body) >= 6 and body[-6:-5] == b"Z" and body[-5:-1] == struct.pack("!i", 5):
            break
    skipped = buffer[:ssl_answers]
    assert all(b in b"SN" for b in skipped), skipped
    return _framed(buffer[ssl_answers:]), closed


def _check(messages: list[tuple[bytes, bytes]], case: str, seen: Counter[str]) -> None:
    for kind, payload in messages:
        if kind == b"E":
            fields = error_fields(payload)
            assert fields.get("S") in ("ERROR", "FATAL"), (case, fields)
            assert len(fields.get("C", "")) == 5 and fields["C"] != "XX000", (case, fields)
            seen[f"{fields['S']} {fields['C']}"] += 1


# --- case generators -------------------------------------------------------------------------------
def _pre_login_case(rng: random.Random) -> tuple[str, bytes, int]:
    """(name, bytes to send on a fresh socket, one-byte SSL answers expected first)."""
    kind = rng.randrange(7)
    noise = rng.randbytes(rng.randrange(0, 200))
    if kind == 0:
        return "random bytes", noise, 0
    if kind == 1:  # a framed body with a random code, its length honest, short or long
        body = struct.pack("!i", rng.choice([codec.SSL_REQUEST, codec.CANCEL_REQUEST, codec.GSSENC_REQUEST,
                                             codec.PROTOCOL_V3, rng.getrandbits(32) - 2**31])) + noise
        length = len(body) + 4 + rng.choice([0, 0, -rng.randrange(1, 8), rng.randrange(1, 20000)])
        return "framed code", struct.pack("!i", length) + body, 0
    if kind == 2:  # a startup packet with random parameters
        params = b"".join(rng.randbytes(rng.randrange(0, 12)) + b"\0" for _ in range(rng.randrange(0, 8)))
        body = struct.pack("!i", codec.PROTOCOL_V3 + rng.choice([0, 0, 1, 2])) + b"user\0alice\0" + params + b"\0"
        return "startup params", struct.pack("!i", len(body) + 4) + body, 0
    if kind == 3:  # a valid startup packet, then random SASL messages
        payload = rng.choice([noise, b"SCRAM-SHA-256\0" + noise, b"SCRAM-SHA-256\0" + struct.pack("!i", len(noise)) + noise])
        return "sasl", startup_packet(rng.choice(["alice", "bob", "mallory"])) + frontend(b"p", payload), 0
    if kind == 4:  # a startup packet, then a message of a random type
        return "typed before login", startup_packet() + frontend(bytes([rng.randrange(256)]), noise), 0
    if kind == 5:  # SSLRequest answered 'N', then garbage
        return "ssl then garbage", struct.pack("!ii", 8, codec.SSL_REQUEST) + noise, 1
    packet = startup_packet()  # a valid startup packet cut anywhere
    return "truncated startup", packet[: rng.randrange(1, len(packet))], 0


_TYPES = b"QPBDECSHXpdcfFx?\0"


def _post_login_case(rng: random.Random) -> tuple[str, bytes]:
    kind = rng.randrange(5)
    noise = rng.randbytes(rng.randrange(0, 120))
    if kind == 0:  # a random type and body, honest length
        return "random typed", frontend(bytes([rng.choice(_TYPES)]), noise) + rawclient.SYNC
    if kind == 1:  # a valid extended-query batch with bytes flipped inside its bodies (lengths kept)
        batch = bytearray(rawclient.parse("", "SELECT COUNT(*) FROM people WHERE age > $1") + rawclient.bind("", "", ["40"])
                          + rawclient.describe("P", "") + rawclient.execute(""))
        for _ in range(rng.randrange(1, 6)):
            index = rng.randrange(len(batch))
            if batch[index : index + 1] not in (b"P", b"B", b"D", b"E"):  # keep the framing parseable mostly
                batch[index] = rng.randrange(256)
        return "flipped batch", bytes(batch) + rawclient.SYNC
    if kind == 2:  # a body cut short but framed honestly (decoders must not run past it)
        message = rng.choice([rawclient.bind("p", "", ["1", "2"]), rawclient.parse("s", "SELECT 1"), rawclient.describe("S", "x"),
                              rawclient.execute("p")])
        cut = rng.randrange(0, len(message) - 5)
        body = message[5 : 5 + cut]
        return "cut body", message[:1] + struct.pack("!i", len(body) + 4) + body + rawclient.SYNC
    if kind == 3:  # SQL of random bytes
        return "random sql", frontend(b"Q", noise.replace(b"\0", b" ") + b"\0")
    return "bad length", rng.choice([b"Q", b"P", b"B"]) + struct.pack("!i", rng.choice([-1, 0, 3, 2**31 - 1]))


@pytest.mark.slow
def test_pgwire_fuzz(tmp_path, people_frame: pd.DataFrame) -> None:
    server = start_server(tmp_path, people_frame, "authentication_timeout = 5\n")
    rng = random.Random(SEED)  # test inputs only; no noise is drawn here
    seen: Counter[str] = Counter()
    started = time.monotonic()
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as con:  # warm
            con.execute("SELECT COUNT(*) FROM people").fetchall()
        before = server.rss_kib()
        for number in range(PRE_LOGIN_CASES):
            name, data, ssl_answers = _pre_login_case(rng)
            with server.connect() as sock:
                messages, _ = _exchange(sock, data, ssl_answers=ssl_answers)
            _check(messages, f"pre-login #{number} {name}: {data[:60]!r}", seen)
        client: rawclient.RawClient | None = None
        for number in range(POST_LOGIN_CASES):
            if client is None:
                client = rawclient.RawClient(server.host, server.port, "alice", PASSWORDS["alice"])
            name, data = _post_login_case(rng)
            messages, closed = _exchange(client.sock, data)
            _check(messages, f"post-login #{number} {name}: {data[:60]!r}", seen)
            if closed or not messages or messages[-1][0] != b"Z":
                client.sock.close()  # closed by the server, or waiting for bytes that never come
                client = None
        if client is not None:
            client.close()
        assert server.alive()
        with psycopg.connect(server.dsn("bob"), autocommit=True) as con:  # still serving
            assert con.execute("SELECT COUNT(*) FROM people").fetchone()[0] > 0
        growth_mib = (server.rss_kib() - before) / 1024
        print(f"fuzz: {PRE_LOGIN_CASES + POST_LOGIN_CASES} cases in {time.monotonic() - started:.1f} s, RSS +{growth_mib:.1f} MiB; "
              f"errors seen: {dict(sorted(seen.items()))}")
        assert seen["FATAL 08P01"] and seen["ERROR 0A000"]  # the cases reach both phases' error paths
        assert growth_mib < MAX_GROWTH_MIB
        assert time.monotonic() - started < BUDGET_SECONDS
    finally:
        stderr = server.stop()
    assert "Traceback" not in stderr and "exception was never retrieved" not in stderr, stderr

"""Attacks on the pgwire server before (and just after) login, through a real `dpsql serve`
process and raw sockets: oversize and truncated startup-phase messages, oversize SASL messages,
sockets that never log in, and the post-login message cap. Each must end in FATAL 08P01 (or the
PostgreSQL answer named) and a closed connection, never a dead task or a buffered body."""

from __future__ import annotations

import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from dpsql.server import codec
from tests.integration.server import rawclient
from tests.security.server_harness import (
    PASSWORDS,
    ServerProcess,
    errors_of,
    frontend,
    read_messages,
    start_server,
    startup_packet,
)

AUTH_TIMEOUT = 3
MAX_MESSAGE = 50_000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, people_frame: pd.DataFrame) -> Iterator[ServerProcess]:
    directory = tmp_path_factory.mktemp("startup_limits")
    process = start_server(directory, people_frame, f"authentication_timeout = {AUTH_TIMEOUT}\nmax_message_bytes = {MAX_MESSAGE}\n")
    yield process
    stderr = process.stop()
    assert "Traceback" not in stderr, stderr  # no connection task died


def _fatal_and_closed(server: ServerProcess, data: bytes, sqlstate: str = "08P01") -> dict[str, str]:
    """Send `data` on a fresh socket; the answer must be one FATAL with `sqlstate`, then EOF."""
    with server.connect() as sock:
        sock.sendall(data)
        messages, closed = read_messages(sock, timeout=10)
    assert closed, messages
    errors = errors_of(messages)
    assert len(errors) == 1 and errors[0]["S"] == "FATAL" and errors[0]["C"] == sqlstate, messages
    return errors[0]


@pytest.mark.parametrize("length", [10_001, 64 * 1024 * 1024, 2**31 - 1])
def test_oversize_startup_packet_is_refused_from_its_length_alone(server: ServerProcess, length: int) -> None:
    # Only the 4-byte length is sent: the refusal cannot have waited for (or buffered) the body.
    _fatal_and_closed(server, struct.pack("!i", length))


@pytest.mark.parametrize("code", [codec.SSL_REQUEST, codec.CANCEL_REQUEST, codec.PROTOCOL_V3])
def test_oversize_ssl_cancel_and_startup_requests(server: ServerProcess, code: int) -> None:
    _fatal_and_closed(server, struct.pack("!ii", 20_000, code) + b"\0" * 100)


@pytest.mark.parametrize(
    "packet",
    [
        struct.pack("!ii", 12, codec.CANCEL_REQUEST) + b"\0\0\0\1",  # CancelRequest without its key (struct.error before)
        struct.pack("!ii", 8, codec.CANCEL_REQUEST),  # nothing after the code
        struct.pack("!iii", 12, codec.SSL_REQUEST, 0),  # SSLRequest with a trailing field
        struct.pack("!ii", 4, 0),  # length below the minimum
        struct.pack("!ii", 14, codec.PROTOCOL_V3) + b"user\0al",  # unterminated
        struct.pack("!ii", 17, codec.PROTOCOL_V3) + b"user\0\xff\xfe\0\0",  # not UTF-8
        struct.pack("!ii", 8, 0x00020000),  # protocol 2
    ],
    ids=["cancel-short", "cancel-empty", "ssl-long", "tiny", "unterminated", "not-utf8", "protocol-2"],
)
def test_truncated_or_malformed_startup_bodies_get_fatal_08P01(server: ServerProcess, packet: bytes) -> None:
    _fatal_and_closed(server, packet)


def test_oversize_and_truncated_sasl_messages(server: ServerProcess) -> None:
    for payload in (struct.pack("!i", 20_000 + 4),):  # a SASLInitialResponse announcing 20 kB: refused from its length
        _fatal_and_closed(server, startup_packet() + b"p" + payload)
    truncated = frontend(b"p", b"SCRAM-SHA-256\0\0\0")  # the response length cut short
    _fatal_and_closed(server, startup_packet() + truncated)
    # A well-formed initial response, then a SASLResponse over the cap.
    first = b"n,,n=,r=abc"
    initial = frontend(b"p", b"SCRAM-SHA-256\0" + struct.pack("!i", len(first)) + first)
    _fatal_and_closed(server, startup_packet() + initial + b"p" + struct.pack("!i", 10_001))


def test_sasl_garbage_is_a_failed_login_not_a_crash(server: ServerProcess) -> None:
    # A non-ASCII nonce (UnicodeEncodeError before) and a non-UTF-8 message: 28P01, like a wrong password.
    for first in ("n,,n=,r=ü".encode(), b"n,,n=,r=\xff"):
        initial = frontend(b"p", b"SCRAM-SHA-256\0" + struct.pack("!i", len(first)) + first)
        _fatal_and_closed(server, startup_packet() + initial, sqlstate="28P01")


def test_plaintext_after_ssl_request_is_not_read_as_tls(server: ServerProcess) -> None:
    # Without TLS the server answers 'N' and reads on in clear text; the startup packet queued
    # behind the SSLRequest is then a normal startup packet (the TLS case is refused, see protocol.py).
    with server.connect() as sock:
        sock.sendall(struct.pack("!ii", 8, codec.SSL_REQUEST) + startup_packet())
        messages, _ = read_messages(sock, timeout=2, ssl_answer=True)
    assert messages[0] == (b"N", b"") and messages[1][0] == b"R"


@pytest.mark.slow
def test_authentication_timeout_closes_idle_and_stalled_sockets(server: ServerProcess) -> None:
    idle = server.connect()
    stalled = server.connect()
    stalled.sendall(startup_packet())  # then never answers the SASL challenge
    trickle = server.connect()
    trickle.sendall(struct.pack("!i", 9_000))  # a startup packet under the cap, sent a byte at a time
    started = time.monotonic()
    try:
        for _ in range(AUTH_TIMEOUT * 2 + 2):
            try:
                trickle.sendall(b"x")
            except OSError:
                break
            time.sleep(0.5)
        for sock in (idle, stalled, trickle):
            messages, closed = read_messages(sock, timeout=AUTH_TIMEOUT + 10)
            assert closed
            assert errors_of(messages)[-1]["C"] == "57014", messages  # canceling authentication due to timeout
        assert time.monotonic() - started < AUTH_TIMEOUT + 10
    finally:
        for sock in (idle, stalled, trickle):
            sock.close()


@pytest.mark.slow
def test_login_before_the_timeout_is_not_cut(server: ServerProcess) -> None:
    client = rawclient.RawClient(server.host, server.port, "alice", PASSWORDS["alice"])
    try:
        time.sleep(AUTH_TIMEOUT + 0.5)  # idle after login: no authentication timeout any more
        replies = client.exchange(frontend(b"Q", b"SELECT 1\0"))
        assert [k for k, _ in replies][-1] == b"Z"
    finally:
        client.close()


def test_post_login_cap_is_larger_and_configurable(server: ServerProcess) -> None:
    client = rawclient.RawClient(server.host, server.port, "alice", PASSWORDS["alice"])
    try:
        # 20 kB: over the pre-login cap, under max_message_bytes: answered.
        sql = b"SELECT 1 /*" + b"x" * 20_000 + b"*/\0"
        assert [k for k, _ in client.exchange(frontend(b"Q", sql))][-1] == b"Z"
        client.sock.sendall(b"Q" + struct.pack("!i", MAX_MESSAGE + 1))
        messages, closed = read_messages(client.sock, timeout=10)
        assert closed and errors_of(messages)[0]["C"] == "08P01" and errors_of(messages)[0]["S"] == "FATAL"
    finally:
        client.sock.close()


@pytest.mark.slow
def test_tls_server_refuses_queued_plaintext_and_drops_stalled_handshakes(tmp_path: Path, people_frame: pd.DataFrame) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                           "-days", "1", "-subj", "/CN=127.0.0.1"], capture_output=True, check=False)  # fmt: skip
    if made.returncode != 0:
        pytest.skip("openssl cannot make a test certificate here")
    tls = start_server(tmp_path, people_frame, "authentication_timeout = 1\n", ("--tls-cert", str(cert), "--tls-key", str(key)))
    try:
        # CVE-2021-23214: a startup packet queued behind the SSLRequest must not be read as if it came through TLS.
        _fatal_and_closed(tls, struct.pack("!ii", 8, codec.SSL_REQUEST) + startup_packet())
        with tls.connect() as sock:  # 'S', then no handshake: dropped at the authentication timeout
            sock.sendall(struct.pack("!ii", 8, codec.SSL_REQUEST))
            started = time.monotonic()
            assert sock.recv(1) == b"S"
            sock.settimeout(15)
            assert sock.recv(1024) == b""  # closed by the server
            assert time.monotonic() - started < 10
    finally:
        stderr = tls.stop()
    assert "Traceback" not in stderr, stderr

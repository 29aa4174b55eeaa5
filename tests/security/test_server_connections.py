"""Resource attacks on `dpsql serve` through real sockets and a real psycopg client: more
connections than max_connections, and unauthenticated slow-loris sockets against memory."""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Iterator

import pandas as pd
import pytest

from tests.security.server_harness import ServerProcess, errors_of, read_messages, start_server

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")

QUERY = "SELECT dept, COUNT(*) AS n FROM people GROUP BY dept"


@pytest.fixture
def small_server(tmp_path, people_frame: pd.DataFrame) -> Iterator[ServerProcess]:
    process = start_server(tmp_path, people_frame, "max_connections = 3\n")
    yield process
    stderr = process.stop()
    assert "Traceback" not in stderr, stderr


def test_connection_over_max_connections_gets_53300(small_server: ServerProcess) -> None:
    held = [small_server.connect() for _ in range(3)]  # three unauthenticated sockets fill the server
    try:
        time.sleep(0.5)
        with small_server.connect() as extra:
            messages, closed = read_messages(extra, timeout=5)
        assert closed and [(e["S"], e["C"]) for e in errors_of(messages)] == [("FATAL", "53300")]
        with pytest.raises(psycopg.OperationalError, match="too many clients"):
            psycopg.connect(small_server.dsn(), connect_timeout=10)
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.5)  # the slots are free again
    with psycopg.connect(small_server.dsn(), autocommit=True) as con:
        assert len(con.execute(QUERY).fetchall()) == 12


# --- slow loris ------------------------------------------------------------------------------------
SOCKETS = 30
ANNOUNCED = 64 * 1024 * 1024  # what each socket says its startup packet holds
SENT_PER_SOCKET = 8 * 1024 * 1024  # what it tries to send (30 x 8 MiB = 240 MiB if buffered)
MAX_GROWTH_MIB = 64  # the bound: far below what buffering 30 such packets would take


def _loris(server: ServerProcess, announced: int, total: int, pause: float, stop: threading.Event) -> None:
    """Announce a big startup packet and trickle its body until refused, stopped or done."""
    try:
        with server.connect(timeout=30) as sock:
            sock.sendall(struct.pack("!i", announced))
            sent, chunk = 0, b"\x01" * 65536
            while sent < total and not stop.is_set():
                sock.sendall(chunk)
                sent += len(chunk)
                time.sleep(pause)
            stop.wait()
    except OSError:
        pass  # refused and closed by the server: what should happen to the oversize ones


@pytest.mark.slow
def test_slow_loris_sockets_keep_memory_bounded_and_logins_served(tmp_path, people_frame: pd.DataFrame) -> None:
    server = start_server(tmp_path, people_frame, "authentication_timeout = 30\n")
    stop = threading.Event()
    threads: list[threading.Thread] = []
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as con:  # warm: one Session opened and used
            con.execute(QUERY).fetchall()
        before = server.rss_kib()
        # 30 sockets announcing 64 MiB and pushing 8 MiB each, and 30 classic slow-loris sockets
        # that stay under the 10 kB cap and send a byte at a time.
        for _ in range(SOCKETS):
            threads.append(threading.Thread(target=_loris, args=(server, ANNOUNCED, SENT_PER_SOCKET, 0.01, stop)))
            threads.append(threading.Thread(target=_trickle, args=(server, stop)))
        for thread in threads:
            thread.start()
        peak = before
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            peak = max(peak, server.rss_kib())
            time.sleep(0.1)
        with psycopg.connect(server.dsn("bob"), autocommit=True, connect_timeout=10) as con:  # still served
            assert len(con.execute(QUERY).fetchall()) == 12
        peak = max(peak, server.rss_kib())
        growth_mib = (peak - before) / 1024
        print(f"server RSS before {before / 1024:.1f} MiB, peak under attack {peak / 1024:.1f} MiB (+{growth_mib:.1f} MiB)")
        assert growth_mib < MAX_GROWTH_MIB
        assert server.alive()
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        stderr = server.stop()
    assert "Traceback" not in stderr, stderr


def _trickle(server: ServerProcess, stop: threading.Event) -> None:
    """A startup packet under the cap (9,000 bytes), one byte every 50 ms: held until the auth timeout."""
    try:
        with server.connect(timeout=30) as sock:
            sock.sendall(struct.pack("!i", 9_000))
            while not stop.is_set():
                sock.sendall(b"\x01")
                time.sleep(0.05)
    except OSError:
        pass

"""A `dpsql serve` process for the server attack tests: started as a subprocess (so its memory is
its own, read from /proc/<pid>/status), with raw-socket helpers for pre-login attacks.

Analysts alice and bob (passwords in PASSWORDS) over the shared small people table; `[server]`
limits are given per test.
"""

from __future__ import annotations

import os
import re
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dpsql.backend.auxiliary.files import write_parquet
from dpsql.server import codec
from dpsql.server.scram import make_verifier
from tests.conftest import make_policy_text

ROOT = Path(__file__).resolve().parents[2]
PASSWORDS = {"alice": "alice-pw", "bob": "bob-pw"}
_LISTENING = re.compile(r"listening on [\d.]+:(\d+)")


def policy_text(source: str, server: str = "", extra: str = "") -> str:
    """The test policy: the demo tables over `source`, two analysts, a [server] table, and `extra`
    TOML (more tables). Replays are off: these attacks repeat a statement and read each run's
    charge and timing (a replayed answer is free and instant; tests/integration covers replays)."""
    analysts = "\n".join(f'[analysts.{name}]\npassword = "{make_verifier(pw)}"\n' for name, pw in PASSWORDS.items())
    return make_policy_text(source=source, extra=analysts + ("\n[server]\n" + server if server else "") + extra,
                            replay_seconds=0)


@dataclass
class ServerProcess:
    """A running `python -m dpsql serve` subprocess."""

    process: subprocess.Popen[bytes]
    port: int
    directory: Path
    host: str = "127.0.0.1"

    def rss_kib(self) -> int:
        """Resident memory of the server process now (VmRSS, KiB)."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1))  # type: ignore[union-attr]

    def alive(self) -> bool:
        return self.process.poll() is None

    def dsn(self, user: str = "alice") -> str:
        return f"host={self.host} port={self.port} user={user} password={PASSWORDS[user]} dbname=x sslmode=disable"

    def connect(self, timeout: float = 10) -> socket.socket:
        sock = socket.create_connection((self.host, self.port), timeout=timeout)
        return sock

    def stop(self) -> str:
        """Stop the server; return what it wrote to stderr."""
        self.process.terminate()
        try:
            _, err = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return err.decode("utf-8", "replace")


def start_server(directory: Path, people: pd.DataFrame | None, server: str = "", extra_args: tuple[str, ...] = (),
                 prelude: str = "", tables: dict[str, pd.DataFrame] | None = None, extra_policy: str = "") -> ServerProcess:
    """Write the data and policy into `directory` and start the server on a free port.

    `people` None: `directory/people.parquet` is already written (a large table written by DuckDB).
    `prelude`: Python run in the server process before the CLI (a negative control's deliberately
    broken build, such as a rule taken out); the real `dpsql serve` otherwise. `tables`: more
    frames, each written to `<name>.parquet` (declare them in `extra_policy`)."""
    if people is not None:
        write_parquet(people, directory / "people.parquet")
    for name, frame in (tables or {}).items():
        write_parquet(frame, directory / f"{name}.parquet")
    policy = directory / "policy.toml"
    policy.write_text(policy_text("people.parquet", server, extra_policy), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    entry = ["-c", f"{prelude}\nimport sys\nfrom dpsql.cli import main\nsys.exit(main())"] if prelude else ["-m", "dpsql"]
    command = [sys.executable, *entry, "serve", "--policy", str(policy), "--port", "0",
               "--ledger", str(directory / "ledger.sqlite"), *extra_args]  # fmt: skip
    process = subprocess.Popen(command, cwd=directory, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    deadline = time.monotonic() + 60
    seen = b""
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        seen += line
        match = _LISTENING.search(line.decode("utf-8", "replace"))
        if match:
            return ServerProcess(process, int(match.group(1)), directory)
        if not line and process.poll() is not None:
            break
    process.kill()
    raise AssertionError(f"the server did not start: {seen.decode('utf-8', 'replace')}")


# --- raw protocol helpers --------------------------------------------------------------------------
def startup_packet(user: str = "alice") -> bytes:
    body = struct.pack("!i", codec.PROTOCOL_V3) + f"user\0{user}\0database\0x\0\0".encode()
    return struct.pack("!i", len(body) + 4) + body


def frontend(kind: bytes, body: bytes = b"") -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def read_messages(sock: socket.socket, timeout: float = 5.0, *, ssl_answer: bool = False) -> tuple[list[tuple[bytes, bytes]], bool]:
    """Backend messages until the server closes or goes quiet for `timeout`; (messages, closed).

    Every message must be well framed (a type byte and a length of at least 4), else AssertionError.
    `ssl_answer`: the first byte is the one-byte answer to an SSLRequest.
    """
    sock.settimeout(timeout)
    buffer, closed = b"", False
    while True:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        except (ConnectionResetError, BrokenPipeError):
            closed = True
            break
        if not chunk:
            closed = True
            break
        buffer += chunk
    messages = []
    if ssl_answer and buffer:
        messages.append((buffer[:1], b""))
        buffer = buffer[1:]
    while buffer:
        assert len(buffer) >= 5, buffer
        (length,) = struct.unpack("!i", buffer[1:5])
        assert 4 <= length <= len(buffer) - 1, (buffer[:1], length, len(buffer))
        messages.append((buffer[:1], buffer[5 : 1 + length]))
        buffer = buffer[1 + length :]
    return messages, closed


def error_fields(payload: bytes) -> dict[str, str]:
    """The fields of an ErrorResponse body by their one-letter codes."""
    return {f[:1].decode(): f[1:].decode("utf-8", "replace") for f in payload.split(b"\0") if f}


def errors_of(messages: list[tuple[bytes, bytes]]) -> list[dict[str, str]]:
    return [error_fields(payload) for kind, payload in messages if kind == b"E"]

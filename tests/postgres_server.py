"""A throwaway PostgreSQL server for the ledger tests: Debian's initdb and pg_ctl in a temp dir.

It listens on 127.0.0.1 on a free port with SCRAM password authentication. PostgreSQL refuses to
run as root, so under root (CI) it runs as the `postgres` user the Debian package creates
(`runuser`), with the data directory owned by that user. Each test gets a fresh database.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg import sql

SUPERUSER = "dpsql_test"
PASSWORD = "ledger pw:@/?%"  # characters a URL must escape, so the tests exercise quoting
SERVER_USER = "postgres"  # who runs the server when the tests run as root


def server_bindir() -> Path | None:
    """The newest /usr/lib/postgresql/<version>/bin with initdb and pg_ctl, else one on PATH."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(Path(d).parent.name) if Path(d).parent.name.isdigit() else 0)
    for directory in reversed(candidates):
        if (Path(directory) / "initdb").exists() and (Path(directory) / "pg_ctl").exists():
            return Path(directory)
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb and shutil.which("pg_ctl") else None


def missing_reason() -> str | None:
    """Why no server can be started here, or None."""
    if server_bindir() is None:
        return "PostgreSQL server binaries not found (apt-get install postgresql; .ci/run installs it)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            return f"running as root and there is no '{SERVER_USER}' user to run PostgreSQL as"
        if shutil.which("runuser") is None:
            return "running as root and runuser (util-linux) is missing"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """One server in its own directory; `start`/`stop` may be called again (restart tests)."""

    def __init__(self) -> None:
        bindir = server_bindir()
        assert bindir is not None, missing_reason()
        self.bindir = bindir
        # Under root the server user must reach the directory: /tmp, whatever TMPDIR says.
        self.directory = Path(tempfile.mkdtemp(prefix="dpsql-pg-", dir="/tmp" if os.geteuid() == 0 else None))
        self.data = self.directory / "data"
        self.log = self.directory / "server.log"
        self.port = 0
        self._databases = itertools.count(1)
        pwfile = self.directory / "pwfile"
        pwfile.write_text(PASSWORD + "\n", encoding="utf-8")
        if os.geteuid() == 0:
            user = pwd.getpwnam(SERVER_USER)
            for path in (self.directory, pwfile):
                os.chown(path, user.pw_uid, user.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, f"--pwfile={pwfile}", "--auth-host=scram-sha-256",
                  "--auth-local=trust", "-E", "UTF8", "--locale=C", "--no-sync")

    def _run(self, program: str, *args: str) -> None:
        argv = [str(self.bindir / program), *args]
        if os.geteuid() == 0:
            argv = ["runuser", "-u", SERVER_USER, "--", *argv]
        done = subprocess.run(argv, cwd=self.directory, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            log = self.log.read_text(encoding="utf-8", errors="replace")[-3000:] if self.log.exists() else ""
            raise RuntimeError(f"{program} failed ({done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}\n{log}")

    def start(self) -> None:
        """Start (again) on the same port once one was chosen, else on a free one."""
        for attempt in range(3):
            port = self.port or _free_port()
            options = f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={self.directory} -c max_connections=60"
            try:
                self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o", options, "start")
            except RuntimeError:
                if self.port or attempt == 2:
                    raise
                continue  # the free port was taken meanwhile: pick another
            self.port = port
            return

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (its clients' connections drop)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def destroy(self) -> None:
        """Stop and delete everything."""
        try:
            self.stop("immediate")
        except RuntimeError:
            pass  # already stopped
        shutil.rmtree(self.directory, ignore_errors=True)

    def url(self, dbname: str = "postgres") -> str:
        """A postgresql:// URL (password percent-encoded)."""
        return f"postgresql://{SUPERUSER}:{quote(PASSWORD, safe='')}@127.0.0.1:{self.port}/{dbname}"

    def admin(self) -> psycopg.Connection:
        """An autocommit superuser connection to the maintenance database."""
        return psycopg.connect(self.url(), autocommit=True)

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        name = f"ledger_{next(self._databases)}"
        with self.admin() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

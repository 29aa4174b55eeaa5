"""A dpsql server on 127.0.0.1, port 0, over a small people table, with SCRAM analysts.

Analysts: alice (the policy budget, epsilon 10), bob (his own: epsilon 1, delta 1e-6) and carol
(epsilon 0.25: three default queries exhaust her). Every client test connects to the same server;
tests that count budget compare before/after for their own analyst.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import Ledger
from dpsql.backend.auxiliary.files import write_parquet
from dpsql.server.scram import make_verifier
from dpsql.server.transport import ServerConfig, ServerThread
from tests.conftest import make_policy_text

PASSWORDS = {"alice": "alice-pw", "bob": "bob pw ü", "carol": "carol-pw"}
QUERY = "SELECT dept, COUNT(*) AS n FROM people GROUP BY dept"


@dataclass(frozen=True)
class PgServer:
    """Where the test server listens and what it holds."""

    host: str
    port: int
    ledger: Path
    policy: Path
    directory: Path

    def spent(self, analyst: str) -> PrivacyCost:
        """What `analyst` has spent so far, read from the server's ledger file."""
        with Ledger(self.ledger) as ledger:
            return ledger.spent(analyst)

    def dsn(self, user: str = "alice", password: str | None = None, dbname: str = "anydb") -> str:
        """A libpq connection string."""
        secret = PASSWORDS[user] if password is None else password
        return f"host={self.host} port={self.port} user={user} password='{secret}' dbname={dbname} sslmode=disable"


def _analysts() -> str:
    lines = []
    for name, password in PASSWORDS.items():
        lines.append(f'[analysts.{name}]\npassword = "{make_verifier(password)}"')
    lines[1] += "\nepsilon = 1.0\ndelta = 1e-6"
    lines[2] += "\nepsilon = 0.25\ndelta = 1e-6"
    return "\n\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory, people_frame: pd.DataFrame) -> Iterator[PgServer]:
    """The running server (stopped at the end of the session)."""
    directory = tmp_path_factory.mktemp("pgwire")
    write_parquet(people_frame, directory / "people.parquet")
    policy = directory / "policy.toml"
    # Replay off: these tests count the charges of repeated statements (replay has its own
    # server in test_replay_server.py).
    policy.write_text(make_policy_text(source="people.parquet", extra=_analysts(), replay_seconds=0), encoding="utf-8")
    config = ServerConfig(policy=policy, port=0, ledger=directory / "ledger.sqlite")
    with ServerThread(config) as server:
        yield PgServer("127.0.0.1", server.port, config.ledger_path, policy, directory)


def executable(name: str) -> str | None:
    """A program from this Python's bin directory first (pip-installed clients), else from PATH."""
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else shutil.which(name)

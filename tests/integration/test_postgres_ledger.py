"""One PostgreSQL ledger behind several front ends: DB-API connections and `dpsql serve` processes.

Two servers (separate processes, as on two hosts) share one analyst's budget: together they
answer exactly as many queries as the budget pays for. A ledger server that goes away fails
closed: the query raises LedgerError and nothing is answered.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import psycopg
import pytest

import dpsql
from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import open_ledger
from dpsql.backend.auxiliary.files import write_parquet
from dpsql.errors import BudgetExhaustedError, LedgerError
from dpsql.server.scram import make_verifier
from tests.conftest import make_policy_text
from tests.postgres_server import PASSWORD

ROOT = Path(__file__).resolve().parents[2]
QUERY = "SELECT COUNT(*) AS n FROM people"
ANALYST, ANALYST_PASSWORD = "dana", "dana-pw"


def test_dbapi_connections_charge_one_postgres_budget(connect: Any, policy_file: Any, postgres_url: str) -> None:
    policy = policy_file(epsilon=0.3, default_epsilon=0.1, replay_seconds=0)  # every repeat charged
    first, second = connect(policy=policy, ledger=postgres_url), connect(policy=policy, ledger=postgres_url)
    answered = 0
    for con in (first, second, first, second):
        try:
            con.cursor().execute(QUERY)
            answered += 1
        except BudgetExhaustedError:
            pass
    assert answered == 3
    # Three charges of 0.1: the filter holds them at epsilon 0.3 (a hair less at its delta share).
    assert first.budget[0] < 1e-4 and abs(second.session.spent.epsilon - Fraction(3, 10)) < Fraction(1, 10**4)
    assert [e.query for e in first.ledger()] == [QUERY] * 3


@pytest.mark.slow
def test_a_stopped_ledger_server_fails_closed_through_dbapi(connect: Any, postgres_server: Any, postgres_url: str) -> None:
    con = connect(ledger=postgres_url)
    cur = con.cursor()
    cur.execute(QUERY)
    assert len(cur.fetchall()) == 1
    postgres_server.stop()
    try:
        with pytest.raises(dpsql.OperationalError) as info:
            cur.execute(QUERY)
        assert isinstance(info.value, LedgerError)
        assert PASSWORD not in str(info.value)
        with pytest.raises(dpsql.Error):
            cur.fetchall()  # nothing was answered
    finally:
        postgres_server.start()
    cur.execute(QUERY)  # the same connection works again once the server is back
    assert cur.result.replay is not None  # the first answer, kept in the PostgreSQL ledger: replayed, free
    assert len(con.ledger()) == 1
    cur.execute(QUERY.replace("FROM people", "FROM people WHERE age > 30"))
    assert len(con.ledger()) == 2


def _serve(policy: Path, url: str, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    """`dpsql serve --ledger URL` in its own process; its port, read from its log line."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    handle = log.open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "dpsql", "serve", "--policy", str(policy), "--port", "0",
                             "--ledger", url], cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT)
    handle.close()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        match = re.search(r"listening on 127\.0\.0\.1:(\d+)", log.read_text(encoding="utf-8", errors="replace"))
        if match:
            return proc, int(match.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"dpsql serve did not start: {log.read_text(encoding='utf-8', errors='replace')[-2000:]}")


@pytest.mark.slow
def test_two_servers_sharing_a_postgres_ledger_cannot_overspend(
    tmp_path: Path, people_frame: pd.DataFrame, postgres_url: str
) -> None:
    write_parquet(people_frame, tmp_path / "people.parquet")
    policy = tmp_path / "policy.toml"
    analysts = f'[analysts.{ANALYST}]\npassword = "{make_verifier(ANALYST_PASSWORD)}"\nepsilon = 1.0\ndelta = 1e-6\n'
    policy.write_text(make_policy_text(source="people.parquet", default_epsilon=0.1, extra=analysts, replay_seconds=0),
                      encoding="utf-8")
    servers = [_serve(policy, postgres_url, tmp_path / f"server{i}.log") for i in range(2)]
    outcomes: list[str] = []
    try:
        barrier = threading.Barrier(4)

        def client(port: int) -> None:
            dsn = f"host=127.0.0.1 port={port} user={ANALYST} password={ANALYST_PASSWORD} dbname=x sslmode=disable"
            with psycopg.connect(dsn, autocommit=True) as conn:
                barrier.wait(timeout=60)
                for _ in range(6):
                    try:
                        rows = conn.execute(QUERY).fetchall()
                        outcomes.append("answered" if len(rows) == 1 else "wrong")
                    except psycopg.Error as err:
                        outcomes.append("refused" if err.sqlstate == BudgetExhaustedError.sqlstate else repr(err))

        threads = [threading.Thread(target=client, args=(port,)) for _, port in servers for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    finally:
        for proc, _ in servers:
            proc.terminate()
        for proc, _ in servers:
            proc.wait(timeout=30)
    assert sorted(outcomes) == ["answered"] * 10 + ["refused"] * 14  # epsilon 1 pays for ten 0.1 queries
    with open_ledger(postgres_url) as ledger:
        assert ledger.spent(ANALYST) == PrivacyCost(1)
        sessions = {entry.session for entry in ledger.entries(ANALYST)}
    assert len(sessions) >= 2  # several clients' sessions (a client runs 6 queries) charged the one ledger
    for i in range(2):
        log = (tmp_path / f"server{i}.log").read_text(encoding="utf-8")
        assert "postgresql://dpsql_test:***@127.0.0.1" in log and PASSWORD not in log

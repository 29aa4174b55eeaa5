"""Replayed answers through `dpsql serve` with psycopg, as a BI tool with a connection per query
(Superset's NullPool) sends them: the second identical statement, on a new connection, returns
identical values, says "replayed" in its notice and `dpsql.last_query`, and adds no ledger row
(docs/privacy-model.md, "Replayed answers").

Negative controls (each must add a ledger row, or the replay ignored that part of its key): a
changed parameter, a changed data version (the Parquet source rewritten), a different analyst,
and a server whose policy has `replay_seconds = 0`. The ledger is read from the server's file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from dpsql.accounting.ledger import Ledger
from dpsql.backend.auxiliary.files import write_parquet
from dpsql.server.scram import make_verifier
from dpsql.server.transport import ServerConfig, ServerThread
from tests.conftest import make_policy_text

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")

PASSWORDS = {"alice": "alice-pw", "bob": "bob-pw"}
QUERY = "SELECT dept, COUNT(*) AS n, AVG(income) AS avg_income FROM people GROUP BY dept"


@dataclass(frozen=True)
class Served:
    port: int
    ledger: Path
    source: Path

    def dsn(self, user: str = "alice") -> str:
        return f"host=127.0.0.1 port={self.port} user={user} password='{PASSWORDS[user]}' dbname=db sslmode=disable"

    def charges(self, analyst: str) -> int:
        with Ledger(self.ledger) as ledger:
            return len(ledger.entries(analyst))


def _serve(directory: Path, frame: pd.DataFrame, replay_seconds: float | None) -> Iterator[Served]:
    directory.mkdir()
    write_parquet(frame, directory / "people.parquet")
    analysts = "\n".join(f'[analysts.{name}]\npassword = "{make_verifier(pw)}"\n' for name, pw in PASSWORDS.items())
    policy = directory / "policy.toml"
    policy.write_text(make_policy_text(source="people.parquet", extra=analysts, replay_seconds=replay_seconds), encoding="utf-8")
    config = ServerConfig(policy=policy, port=0, ledger=directory / "ledger.sqlite")
    with ServerThread(config) as server:
        yield Served(server.port, directory / "ledger.sqlite", directory / "people.parquet")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, people_frame: pd.DataFrame) -> Iterator[Served]:
    yield from _serve(tmp_path_factory.mktemp("replay") / "on", people_frame, None)


def _run(served: Served, sql: str, params: Any = None, user: str = "alice") -> tuple[list[tuple[Any, ...]], list[str]]:
    """One statement on a fresh connection (a BI pool's next query): its rows and notices."""
    notices: list[str] = []
    with psycopg.connect(served.dsn(user), autocommit=True) as con:
        con.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
        rows = con.execute(sql, params).fetchall()
    return rows, notices


def test_second_identical_query_is_replayed_identical_and_uncharged(served: Served) -> None:
    before = served.charges("alice")
    rows, notices = _run(served, QUERY)
    assert served.charges("alice") == before + 1 and not any("replayed" in n for n in notices)
    again, notices = _run(served, QUERY)  # a new connection, as Superset opens for every chart view
    assert again == rows
    assert served.charges("alice") == before + 1
    assert any("replayed: the answer released to you at" in n and "no cost now" in n for n in notices)
    with psycopg.connect(served.dsn(), autocommit=True) as con:  # the analyst's last answer, from any connection
        last = con.execute("SELECT DISTINCT replayed, epsilon FROM dpsql.last_query").fetchall()
        assert last == [(True, 0.0)]
        explain = "\n".join(r[0] for r in con.execute("EXPLAIN " + QUERY).fetchall())
        assert "Replay: replayed" in explain
    assert served.charges("alice") == before + 1


def test_changed_parameter_is_charged_anew(served: Served) -> None:
    sql = "SELECT COUNT(*) FROM people WHERE age > %s"
    before = served.charges("alice")
    first, _ = _run(served, sql, [30])
    assert _run(served, sql, [30])[0] == first and served.charges("alice") == before + 1
    _run(served, sql, [41])
    assert served.charges("alice") == before + 2


def test_different_analyst_is_charged_anew(served: Served) -> None:
    sql = "SELECT COUNT(*) AS n FROM people WHERE age < 50"
    _run(served, sql, user="alice")
    before = served.charges("bob")
    _, notices = _run(served, sql, user="bob")
    assert served.charges("bob") == before + 1 and not any("replayed" in n for n in notices)
    with psycopg.connect(served.dsn("bob"), autocommit=True) as con:  # bob sees his own last answer only
        assert con.execute("SELECT DISTINCT statement, replayed FROM dpsql.last_query").fetchall() == [(sql, False)]


def test_changed_data_version_is_charged_anew(served: Served) -> None:
    sql = "SELECT COUNT(*) AS n FROM people WHERE age >= 60"
    _run(served, sql)
    before = served.charges("alice")
    stat = served.source.stat()
    os.utime(served.source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # the source rewritten
    _, notices = _run(served, sql)
    assert served.charges("alice") == before + 1 and not any("replayed" in n for n in notices)


def test_zero_window_is_charged_anew(tmp_path: Path, people_frame: pd.DataFrame) -> None:
    for served in _serve(tmp_path / "off", people_frame, 0):
        _run(served, QUERY)
        _, notices = _run(served, QUERY)
        assert served.charges("alice") == 2 and not any("replayed" in n for n in notices)

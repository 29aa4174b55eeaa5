"""A SQLite ledger whose file is removed or replaced under an open connection refuses every charge.

Without the check, the open connection keeps charging the unlinked file: every later session
(or a restart) reads a fresh budget from the new file, and the old charges are gone.
"""

from __future__ import annotations

import os
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import Ledger
from dpsql.accounting.sqlite_ledger import SqliteStore
from dpsql.errors import LedgerError
from tests.conftest import make_policy_text

BUDGET = PrivacyCost(1)
HALF = PrivacyCost(Fraction(1, 2))


def charge(ledger: Ledger, cost: PrivacyCost = HALF) -> None:
    ledger.charge(analyst="alice", session="s", query="q", plan_hash="h", mechanism="laplace",
                  params={}, cost=cost, budget=BUDGET)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "ledger.sqlite"


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def test_an_untouched_ledger_keeps_charging(path: Path) -> None:
    # Negative control: the identity check passes while the file is the one opened, also when
    # other connections open, write, checkpoint and close the same file meanwhile.
    with Ledger(path) as led:
        charge(led, PrivacyCost(Fraction(1, 4)))
        for _ in range(3):
            with Ledger(path) as other:
                charge(other, PrivacyCost(Fraction(1, 8)))
            with sqlite3.connect(path) as raw:
                raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        charge(led, PrivacyCost(Fraction(1, 4)))
        assert led.spent("alice") == PrivacyCost(Fraction(7, 8))
        assert len(led.entries()) == 5


def test_deleting_the_file_under_an_open_ledger_refuses_the_next_charge(path: Path) -> None:
    with Ledger(path) as led:
        charge(led)
        _remove(path)
        for call in (lambda: charge(led), lambda: led.spent("alice"), led.entries):
            with pytest.raises(LedgerError, match="removed or replaced"):
                call()
    assert not path.exists()


def test_deleting_only_the_database_file_refuses(path: Path) -> None:
    with Ledger(path) as led:
        charge(led)
        path.unlink()
        with pytest.raises(LedgerError):
            charge(led)


def test_deleting_only_the_wal_refuses(path: Path) -> None:
    # Charges committed into an unlinked WAL would be lost to every other connection.
    with Ledger(path) as led:
        charge(led)
        Path(f"{path}-wal").unlink()
        with pytest.raises(LedgerError):
            charge(led)


def test_replacing_the_file_with_a_fresh_ledger_refuses(path: Path) -> None:
    with Ledger(path) as led:
        charge(led)
        _remove(path)
        Ledger(path).close()  # a fresh, empty ledger at the same path
        with pytest.raises(LedgerError):
            charge(led)
    with Ledger(path) as fresh:
        assert fresh.entries() == []  # the refused charge went nowhere


def test_renaming_another_ledger_over_the_file_refuses(path: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    Ledger(other).close()
    with Ledger(path) as led:
        charge(led)
        os.replace(other, path)
        with pytest.raises(LedgerError):
            charge(led)


def test_dropping_the_identity_refuses(path: Path) -> None:
    with Ledger(path) as led:
        charge(led)
        with sqlite3.connect(path) as raw:
            raw.execute("UPDATE ledger_identity SET ledger_id = 'someone else'")
        with pytest.raises(LedgerError):
            charge(led)
        with sqlite3.connect(path) as raw:
            raw.execute("DROP TABLE ledger_identity")
        with pytest.raises(LedgerError):
            charge(led)


def test_a_ledger_from_before_the_identity_gets_one_and_keeps_its_charges(path: Path) -> None:
    with Ledger(path) as led:
        charge(led)
    with sqlite3.connect(path) as raw:
        raw.execute("DROP TABLE ledger_identity")
    with Ledger(path) as led:
        assert led.spent("alice") == HALF
        charge(led)
    with sqlite3.connect(path) as raw:
        assert len(raw.execute("SELECT ledger_id FROM ledger_identity").fetchall()) == 1


def test_without_the_check_a_deleted_ledger_would_overspend(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Negative control: the same deletion against a store that skips the check charges on, and
    # a new ledger at the path then grants the whole budget again.
    monkeypatch.setattr(SqliteStore, "verify", lambda self: None)
    with Ledger(path) as led:
        charge(led)
        charge(led)
        _remove(path)
        charge(led, PrivacyCost(0))  # accepted: the unlinked file still takes writes
        with Ledger(path) as fresh:
            charge(fresh)
            charge(fresh)


def test_issue_scenario_four_halves_against_one_through_dpsql_connect(path: Path, connect: Any) -> None:
    """4 x 0.5 epsilon against a budget of 1 with the ledger file deleted after the first answer:
    every later query is refused with LedgerError, before the engine runs."""
    policy = path.parent / "policy.toml"
    policy.write_text(make_policy_text(epsilon=1.0), encoding="utf-8")
    con = connect(policy=policy, ledger=str(path))
    cur = con.cursor()
    query = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) COUNT(*) AS n FROM people"
    cur.execute(query)
    assert len(cur.fetchall()) == 1
    _remove(path)
    for _ in range(3):
        with pytest.raises(LedgerError):
            cur.execute(query)
    with pytest.raises(LedgerError):
        con.budget  # noqa: B018 - the remaining budget is not read from a vanished ledger either

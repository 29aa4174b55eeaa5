"""The ledger's constant-time "changed since I looked" check (SQLite's PRAGMA data_version).

A charge trusts its cached composition without reading the analyst's row count only while the
store's version is the one recorded for that cache entry. Each test below fails if that shortcut
trusted a stale cache: another ledger object's charges, rows deleted or rewritten by another
connection, a write whose outcome is unknown, charges of the same analyst under another
accountant. The negative controls break the check and show the same scenario overspends.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.accounting.filters import Filter, History, charge_of
from dpsql.accounting.ledger import Ledger, charge_record, open_ledger
from dpsql.accounting.sqlite_ledger import _INSERT, SqliteStore
from dpsql.errors import BudgetExhaustedError, LedgerError
from tests.conftest import POSTGRES

BUDGET = PrivacyCost(1, Fraction(1, 10**6))
TENTH = PrivacyCost.of(PrivacyLoss("discrete_laplace", "laplace", Fraction(1, 10), Fraction(0),
                                   sensitivity=Fraction(1), scale=Fraction(10)))
HUNDREDTH = PrivacyCost.of(PrivacyLoss("discrete_laplace", "laplace", Fraction(1, 100), Fraction(0),
                                       sensitivity=Fraction(1), scale=Fraction(100)))


def charge(led: Ledger, name: str = "basic", cost: PrivacyCost = TENTH, analyst: str = "alice",
           budget: PrivacyCost = BUDGET) -> None:
    led.charge(analyst=analyst, session="s", query="SELECT COUNT(*) FROM t", plan_hash="h", mechanism="laplace",
               params={"losses": [x.record() for x in cost.losses]}, cost=cost, budget=budget, accountant=name)


def charged_until_refused(led: Ledger, name: str = "basic", **kw: Any) -> int:
    n = 0
    while True:
        try:
            charge(led, name, **kw)
        except BudgetExhaustedError:
            return n
        n += 1


def fits_of(name: str, cost: PrivacyCost) -> int:
    history, n, chosen = History(), 0, Filter(name, BUDGET)  # type: ignore[arg-type]
    while chosen.admits(after := history.add(charge_of(cost.losses))):
        history, n = after, n + 1
    return n


class Summaries:
    """Counts the O(history) summary reads of one ledger object's store."""

    def __init__(self, led: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = led._store.summary

        def counted(analyst: str) -> tuple[int, int]:
            self.calls += 1
            return real(analyst)

        monkeypatch.setattr(led._store, "summary", counted)


def raw_insert(path: Path, rows: int, cost: PrivacyCost = TENTH, analyst: str = "alice") -> None:
    """Charges written by another connection, through the store's own INSERT."""
    record = charge_record("laplace", {"losses": [x.record() for x in cost.losses]}, cost)
    row = (analyst, "other", 0.0, "q", "h", "laplace", record.params_json, *record.fractions)
    with sqlite3.connect(path) as raw:
        raw.executemany(_INSERT, [row] * rows)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "ledger.sqlite"


# --- the shortcut is taken -------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["file", "memory"])
def test_own_charges_never_reread_the_summary(target: str, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_ledger(path if target == "file" else None) as led:
        charge(led)  # the first charge reads the summary and records the version
        summaries = Summaries(led, monkeypatch)
        assert charged_until_refused(led) == 9  # exactly the budget: ten tenths
        assert summaries.calls == 0  # constant-time: the history's size was never read again
        assert len(led.entries("alice")) == 10 and led._cache["alice"][:2] == (10, 10)


def test_another_connections_commit_makes_the_next_charge_reread(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Ledger(path) as led, Ledger(path) as other:
        charge(led)
        summaries = Summaries(led, monkeypatch)
        charge(other, analyst="bob")  # another analyst: alice's cache is still exact after the re-read
        charge(led)
        charge(led)
        assert summaries.calls == 1


# --- the shortcut never trusts a stale cache -------------------------------------------------------


@pytest.fixture(params=["sqlite", POSTGRES])
def target(request: pytest.FixtureRequest, path: Path) -> str:
    """A SQLite file, or a PostgreSQL database (no cheap check there: version() is None)."""
    return str(request.getfixturevalue("postgres_url")) if request.param == "postgres" else str(path)


@pytest.mark.parametrize("name", ["basic", "adaptive"])
def test_two_ledger_objects_alternating_near_the_limit_never_overspend(name: str, target: str) -> None:
    cost = TENTH if name == "basic" else HUNDREDTH
    fits = fits_of(name, cost)
    with open_ledger(target) as first, open_ledger(target) as second:
        for _ in range(fits - 2):
            charge(first, name, cost)
        charge(second, name, cost)
        charge(first, name, cost)  # the last one that fits, seen by first's check only through the version
        with pytest.raises(BudgetExhaustedError):
            charge(second, name, cost)
        with pytest.raises(BudgetExhaustedError):
            charge(first, name, cost)
        assert len(first.entries("alice")) == fits


def test_negative_control_a_check_that_always_says_unchanged_overspends(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Ledger(path) as first, Ledger(path) as second:
        monkeypatch.setattr(first._store, "version", lambda analyst: 7)  # "nobody else wrote", whatever happens
        for _ in range(5):
            charge(first)
        assert charged_until_refused(second) == 5
        charge(first)  # the stale cache (five charges) admits a sixth tenth...
        assert sum(e.cost.epsilon for e in first.entries("alice")) == Fraction(11, 10)  # ...over the budget


def test_a_row_deleted_by_another_connection_is_seen_and_refused(path: Path) -> None:
    with Ledger(path) as led:
        assert charged_until_refused(led) == 10
        with sqlite3.connect(path) as raw:
            raw.execute("DELETE FROM charges WHERE id = 4")
        # The version changed, so the summary is read: one charge fewer than this object saw is a
        # refund, refused (a stale cache would refuse with "exhausted"; a rebuild would admit one more).
        with pytest.raises(LedgerError, match="lost charges"):
            charge(led)
        assert len(led.entries("alice")) == 9


def test_rows_rewritten_by_another_connection_are_refused(path: Path) -> None:
    with Ledger(path) as led:
        for _ in range(5):
            charge(led)
        with sqlite3.connect(path) as raw:
            raw.execute("DELETE FROM charges")
        raw_insert(path, 9)  # nine tenths under new ids: more rows than before, but not the ones written here
        with pytest.raises(LedgerError, match="lost charges"):
            charge(led)
        assert len(led.entries("alice")) == 9


def test_rows_inserted_by_another_connection_are_composed(path: Path) -> None:
    with Ledger(path) as led:
        for _ in range(3):
            charge(led, "adaptive", HUNDREDTH)
        raw_insert(path, fits_of("adaptive", HUNDREDTH) - 3, HUNDREDTH)
        with pytest.raises(BudgetExhaustedError):
            charge(led, "adaptive", HUNDREDTH)


def test_other_analysts_sharing_the_file_keep_their_own_budgets(path: Path) -> None:
    with Ledger(path) as first, Ledger(path) as second:
        for _ in range(5):
            charge(first, analyst="alice")
            charge(first, analyst="bob")
        assert charged_until_refused(second, analyst="bob") == 5
        assert charged_until_refused(first, analyst="alice") == 5
        with pytest.raises(BudgetExhaustedError):
            charge(first, analyst="bob")  # first's bob cache is stale; the version says so


def test_charges_under_another_filter_are_in_the_same_history(path: Path) -> None:
    # One history per analyst, whatever filter reads it: charges admitted by one filter count for
    # every other.
    fits = fits_of("adaptive", HUNDREDTH)
    with Ledger(path) as led:
        for _ in range(fits - 5):
            charge(led, "adaptive", HUNDREDTH)
        for _ in range(5):
            charge(led, "basic", HUNDREDTH, budget=PrivacyCost(100, Fraction(1, 10**6)))
        with pytest.raises(BudgetExhaustedError):
            charge(led, "adaptive", HUNDREDTH)  # the pld cache (fits - 5 charges) would have admitted it


def test_two_ledger_objects_on_one_store_object_never_overspend(path: Path) -> None:
    store = SqliteStore(path)  # one connection under both: data_version alone would see no change
    try:
        first, second = Ledger(store=store), Ledger(store=store)
        for _ in range(5):
            charge(first)
        assert charged_until_refused(second) == 5
        with pytest.raises(BudgetExhaustedError):
            charge(first)
    finally:
        store.close()


def test_a_write_whose_outcome_is_unknown_rereads_the_summary(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Ledger(path) as led:
        for _ in range(8):
            charge(led)
        store, real = led._store, led._store.charging

        @contextmanager
        def committed_then_failed(analyst: str) -> Iterator[None]:
            with real(analyst):
                yield
            raise sqlite3.OperationalError("disk I/O error")  # the COMMIT went through; the caller cannot know

        monkeypatch.setattr(store, "charging", committed_then_failed)
        with pytest.raises(LedgerError):
            charge(led)
        monkeypatch.undo()
        charge(led)  # the tenth: the ninth is in the file
        with pytest.raises(BudgetExhaustedError):
            charge(led)  # an eleventh tenth (a cache that trusted the version would have missed the ninth)
        assert len(led.entries("alice")) == 10


def test_a_ledger_file_replaced_by_an_older_copy_of_itself_refuses(path: Path, tmp_path: Path) -> None:
    with Ledger(path) as led:
        charge(led)
        with sqlite3.connect(path) as raw:
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        shutil.copy(path, tmp_path / "old.sqlite")  # the same ledger id, one charge
        for _ in range(8):
            charge(led)
        (tmp_path / "old.sqlite").replace(path)
        with pytest.raises(LedgerError):
            charge(led)  # the warm cache is not trusted over a file that is not the one opened


def test_reads_follow_another_connections_charges(path: Path) -> None:
    with Ledger(path) as led, Ledger(path) as other:
        charge(led, "adaptive", HUNDREDTH)
        before = led.more("alice", HUNDREDTH, BUDGET, "adaptive")
        charge(other, "adaptive", HUNDREDTH)
        assert led.more("alice", HUNDREDTH, BUDGET, "adaptive") == before - 1
        assert led.spent("alice", BUDGET, "zcdp") == other.spent("alice", BUDGET, "zcdp")


def test_a_charge_record_is_the_same_row_as_a_charge(path: Path) -> None:
    with Ledger(path) as led:
        params = {"losses": [x.record() for x in TENTH.losses], "kind": "count"}
        led.charge(analyst="a", session="s", query="q", plan_hash="h", mechanism="laplace", params=params,
                   cost=TENTH, budget=BUDGET)
        record = charge_record("laplace", params, TENTH)
        entry = led.charge_record(record, analyst="a", session="s", query="q", plan_hash="h", budget=BUDGET)
        rows = led._store.rows("a")
        assert [r[1:3] + r[4:] for r in rows[:1]] == [r[1:3] + r[4:] for r in rows[1:]]  # all but the time
        assert entry.params == params and entry.cost == TENTH and entry.mechanism == "laplace"


def test_budget_reads_are_constant_time_and_follow_other_connections(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Ledger(path) as led, Ledger(path) as other:
        charge(led)
        summaries = Summaries(led, monkeypatch)
        for _ in range(3):
            assert led.spent("alice") == PrivacyCost(Fraction(1, 10))  # basic: the exact sums
            assert led.remaining("alice", BUDGET, "basic") == PrivacyCost(Fraction(9, 10), BUDGET.delta)
        assert summaries.calls == 0
        charge(other)
        charge(other, cost=PrivacyCost(Fraction(1, 3), Fraction(1, 10**7)))
        assert led.spent("alice") == PrivacyCost(Fraction(1, 5) + Fraction(1, 3), Fraction(1, 10**7))
        assert led.more("alice", TENTH, BUDGET) == 4  # floor((1 - 1/5 - 1/3) / (1/10))
        assert summaries.calls == 1


def test_a_ledger_overwritten_in_place_by_an_older_copy_refuses(path: Path) -> None:
    # A restored backup, rsync --inplace, a snapshot: same file (inode), same ledger id, fewer rows.
    with Ledger(path) as led:
        charge(led)
        with sqlite3.connect(path) as raw:
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        old = path.read_bytes()
        for _ in range(8):
            charge(led)
        with sqlite3.connect(path) as raw:
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        with open(path, "r+b") as file:  # in place: the inode the ledger checks does not change
            file.write(old)
            file.truncate()
        with pytest.raises(LedgerError, match="lost charges"):
            charge(led)
        with pytest.raises(LedgerError, match="lost charges"):
            led.remaining("alice", BUDGET, "basic")


def test_negative_control_without_the_high_water_mark_the_older_copy_refunds(path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    with Ledger(path) as led:
        charge(led)
        with sqlite3.connect(path) as raw:
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        old = path.read_bytes()
        for _ in range(8):
            charge(led)
        with sqlite3.connect(path) as raw:
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        with open(path, "r+b") as file:
            file.write(old)
            file.truncate()
        monkeypatch.setattr(led, "_check_grown", lambda *args: None)
        monkeypatch.setattr(led, "_cache", {})  # what the rebuild path did before
        assert charged_until_refused(led) == 9  # nine tenths refunded: what the test above refuses

"""The SQLite store of the ledger: one file (WAL mode), or memory.

``charging`` runs in ``BEGIN IMMEDIATE``: the write lock is taken before the analyst's total is
read, so two processes cannot overspend, and a COMMIT with ``synchronous = FULL`` survives a
killed process. Inside that transaction the file at the path must still be the one opened (same
device and inode, for the database and its WAL) and hold the random ledger id read at open:
a ledger whose file was deleted or replaced under an open connection would otherwise keep
charging a file nobody else sees (and the next session would start from a fresh budget).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dpsql.accounting.store import (
    CHARGE_FIELDS,
    SCHEMA_VERSION,
    ChargeRow,
    GroupRow,
    HistoryRow,
    LedgerStore,
    new_ledger_id,
)
from dpsql.errors import LedgerError

_BUSY_TIMEOUT_S = 30.0
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE IF NOT EXISTS charges (
        id INTEGER PRIMARY KEY AUTOINCREMENT, analyst TEXT NOT NULL, session TEXT NOT NULL,
        time REAL NOT NULL, query TEXT NOT NULL, plan_hash TEXT NOT NULL, mechanism TEXT NOT NULL,
        params TEXT NOT NULL, eps_num TEXT NOT NULL, eps_den TEXT NOT NULL,
        delta_num TEXT NOT NULL, delta_den TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS charges_by_analyst ON charges (analyst, id)",
    # Added after schema version 1 without changing it: older files get an id when next opened.
    "CREATE TABLE IF NOT EXISTS ledger_identity (ledger_id TEXT NOT NULL)",
    # Added the same way: answers kept for replay (dpsql/execution/replay.py), one per analyst and key.
    """CREATE TABLE IF NOT EXISTS replays (
        analyst TEXT NOT NULL, key TEXT NOT NULL, time REAL NOT NULL, answer TEXT NOT NULL,
        PRIMARY KEY (analyst, key))""",
)
_FIELDS = ", ".join(CHARGE_FIELDS)
_INSERT = f"INSERT INTO charges ({_FIELDS}) VALUES ({', '.join('?' * len(CHARGE_FIELDS))})"
_SELECT = f"SELECT id, {_FIELDS} FROM charges"
_SUMMARY = "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM charges WHERE analyst = ?"
_HISTORY = (
    "SELECT id, params, eps_num, eps_den, delta_num, delta_den FROM charges "
    "WHERE analyst = ? AND id > ? ORDER BY id"
)
# Identical charges (a repeated query) grouped: a cold rebuild composes each group once.
_GROUPS = (
    "SELECT params, eps_num, eps_den, delta_num, delta_den, COUNT(*), MIN(id) FROM charges WHERE analyst = ? "
    "GROUP BY params, eps_num, eps_den, delta_num, delta_den"
)
_LAST = ("SELECT params, eps_num, eps_den, delta_num, delta_den FROM charges WHERE analyst = ? AND plan_hash != ? "
         "ORDER BY id DESC LIMIT 1")
_REPLAY_FIND = "SELECT time, answer FROM replays WHERE analyst = ? AND key = ? AND time >= ?"
_REPLAY_FORGET = "DELETE FROM replays WHERE analyst = ? AND time < ?"
# The first answer released in a window stays (a concurrent second release of the same statement,
# charged too, does not replace it); an expired one is replaced.
_REPLAY_KEEP = ("INSERT INTO replays (analyst, key, time, answer) VALUES (?, ?, ?, ?) ON CONFLICT (analyst, key) "
                "DO UPDATE SET time = excluded.time, answer = excluded.answer WHERE replays.time < ?")
_GONE = "the budget ledger file was removed or replaced since it was opened; the query was not run"

FileIds = tuple[tuple[int, int], tuple[int, int] | None]


def _file_ids(path: Path) -> FileIds:
    """(device, inode) of the database file and of its WAL (None when there is no WAL)."""
    db = os.stat(path)
    try:
        wal = os.stat(f"{path}-wal")
    except FileNotFoundError:
        return (db.st_dev, db.st_ino), None
    return (db.st_dev, db.st_ino), (wal.st_dev, wal.st_ino)


class SqliteStore(LedgerStore):
    """A SQLite ledger file, or an in-memory one (``path`` None or ":memory:").

    Raises:
        LedgerError: the file cannot be opened, is not a ledger, or has another schema version.
    """

    driver_errors = (sqlite3.Error, OSError)

    def __init__(self, path: str | Path | None = None) -> None:
        self._path = None if path is None or str(path) == ":memory:" else Path(path).expanduser()
        self._writes: dict[str, int] = {}  # charges written per analyst through this connection (see version)
        try:
            if self._path is not None:
                self._path.parent.mkdir(parents=True, exist_ok=True)
            target = ":memory:" if self._path is None else str(self._path)
            # timeout= is SQLite's busy timeout: a concurrent writer makes us wait, not fail.
            self._conn = sqlite3.connect(target, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        except (sqlite3.Error, OSError) as err:
            raise LedgerError("the budget ledger could not be opened") from err
        try:
            self._open_schema()
        except BaseException as err:
            self._conn.close()
            if isinstance(err, (sqlite3.Error, OSError)):
                raise LedgerError("the budget ledger could not be opened") from err
            raise

    def _open_schema(self) -> None:
        # Switching a new file to WAL needs an exclusive lock, and SQLite answers "locked" at once
        # (no busy wait) when another process opens the same new file in the same instant: retry
        # within the busy timeout rather than fail to open.
        deadline = time.monotonic() + _BUSY_TIMEOUT_S
        while True:
            try:
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute("PRAGMA synchronous = FULL")
                with self._transaction():
                    self._ledger_id = self._create_schema()
                    # Taken with the write lock held: nobody can swap the file between open and here.
                    self._files = None if self._path is None else _file_ids(self._path)
                return
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or time.monotonic() > deadline:
                    raise
            time.sleep(0.05)

    @property
    def path(self) -> Path | None:
        return self._path

    @contextmanager
    def charging(self, analyst: str) -> Iterator[None]:
        with self._transaction():
            self.verify()
            yield

    def summary(self, analyst: str) -> tuple[int, int]:
        count, max_id = self._conn.execute(_SUMMARY, (analyst,)).fetchone()
        return int(count), int(max_id)

    def version(self, analyst: str) -> tuple[int, int]:
        # SQLite's data_version: constant time, per connection, changed by another connection's
        # commit (another process, another Ledger object on the file), never by this one's; so
        # this store's own writes of the analyst's charges are counted next to it. In BEGIN
        # IMMEDIATE the write lock is already held: it describes the state being charged.
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0]), self._writes.get(analyst, 0)

    def history(self, analyst: str, after_id: int) -> list[HistoryRow]:
        return self._conn.execute(_HISTORY, (analyst, after_id)).fetchall()

    def history_groups(self, analyst: str) -> list[GroupRow]:
        return [(*row[:5], int(row[5]), int(row[6])) for row in self._conn.execute(_GROUPS, (analyst,)).fetchall()]

    def insert(self, row: tuple[object, ...]) -> int:
        analyst = str(row[0])  # CHARGE_FIELDS order; counted first, whatever the write's outcome
        self._writes[analyst] = self._writes.get(analyst, 0) + 1
        row_id = self._conn.execute(_INSERT, row).lastrowid
        assert row_id is not None
        return row_id

    def written(self, row_id: int) -> tuple[str, float] | None:
        row = self._conn.execute("SELECT analyst, time FROM charges WHERE id = ?", (row_id,)).fetchone()
        return None if row is None else (str(row[0]), float(row[1]))

    def last_charge(self, analyst: str, excluding_plan_hash: str) -> tuple[str, str, str, str, str] | None:
        row = self._conn.execute(_LAST, (analyst, excluding_plan_hash)).fetchone()
        return None if row is None else (row[0], row[1], row[2], row[3], row[4])

    def replay_find(self, analyst: str, key: str, since: float) -> tuple[float, str] | None:
        row = self._conn.execute(_REPLAY_FIND, (analyst, key, since)).fetchone()
        return None if row is None else (float(row[0]), str(row[1]))

    def replay_keep(self, analyst: str, key: str, time: float, answer: str, since: float) -> None:
        # A stored answer need not survive a power loss: losing it only makes the next identical
        # statement be charged again (the safe direction), so this commit skips the fsync (WAL,
        # synchronous = NORMAL: still atomic; the next charge's FULL commit syncs the WAL with it).
        # Charges keep synchronous = FULL.
        self._conn.execute("PRAGMA synchronous = NORMAL")
        try:
            with self._transaction():
                self.verify()
                self._conn.execute(_REPLAY_FORGET, (analyst, since))
                self._conn.execute(_REPLAY_KEEP, (analyst, key, time, answer, since))
        finally:
            self._conn.execute("PRAGMA synchronous = FULL")

    def rows(self, analyst: str | None) -> list[ChargeRow]:
        if analyst is None:
            return self._conn.execute(f"{_SELECT} ORDER BY id").fetchall()
        return self._conn.execute(f"{_SELECT} WHERE analyst = ? ORDER BY id", (analyst,)).fetchall()

    def verify(self) -> None:
        if self._path is not None and self._files is not None:
            try:
                db, wal = _file_ids(self._path)
            except OSError as err:
                raise LedgerError(_GONE) from err
            # A WAL that did not exist at open may appear; one that did must not change.
            if db != self._files[0] or (self._files[1] is not None and wal != self._files[1]):
                raise LedgerError(_GONE)
        if self._conn.execute("SELECT ledger_id FROM ledger_identity").fetchall() != [(self._ledger_id,)]:
            raise LedgerError(_GONE)

    def close(self) -> None:
        self._conn.close()

    def _create_schema(self) -> str:
        for statement in _SCHEMA:
            self._conn.execute(statement)
        versions = [v for (v,) in self._conn.execute("SELECT version FROM schema_version")]
        if not versions:
            self._conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        elif versions != [SCHEMA_VERSION]:
            raise LedgerError("the budget ledger has an unsupported schema version")
        ids = [i for (i,) in self._conn.execute("SELECT ledger_id FROM ledger_identity")]
        if not ids:
            ids = [new_ledger_id()]
            self._conn.execute("INSERT INTO ledger_identity (ledger_id) VALUES (?)", ids)
        if len(ids) != 1 or not isinstance(ids[0], str):
            raise LedgerError("the budget ledger has an invalid identity")
        return ids[0]

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT; roll back on any exception."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

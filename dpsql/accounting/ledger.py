"""The budget ledger: one SQLite row per charge, checked and written in one transaction.

The file is separate from the data (DESIGN section 7). ``charge`` runs inside ``BEGIN IMMEDIATE``,
so two processes of the same analyst cannot overspend, a crash after the COMMIT loses no charge
and a restart does not reset spending. Epsilon and delta are stored exactly, as the decimal text
of a Fraction's numerator and denominator, and summed in Python. Every sqlite3 failure becomes a
``LedgerError``: the ledger fails closed.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TypeVar

from dpsql.accounting.cost import PrivacyCost
from dpsql.errors import BudgetExhaustedError, LedgerError

_T = TypeVar("_T")
SCHEMA_VERSION = 1
_BUSY_TIMEOUT_S = 30.0
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE IF NOT EXISTS charges (
        id INTEGER PRIMARY KEY AUTOINCREMENT, analyst TEXT NOT NULL, session TEXT NOT NULL,
        time REAL NOT NULL, query TEXT NOT NULL, plan_hash TEXT NOT NULL, mechanism TEXT NOT NULL,
        params TEXT NOT NULL, eps_num TEXT NOT NULL, eps_den TEXT NOT NULL,
        delta_num TEXT NOT NULL, delta_den TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS charges_by_analyst ON charges (analyst, id)",
)
_FIELDS = "analyst, session, time, query, plan_hash, mechanism, params, eps_num, eps_den, delta_num, delta_den"
_INSERT = f"INSERT INTO charges ({_FIELDS}) VALUES ({', '.join('?' * 11)})"
_SELECT = f"SELECT id, {_FIELDS} FROM charges"
# Grouped by exact cost, so the sum stays cheap when the same costs repeat.
_SPENT = (
    "SELECT eps_num, eps_den, delta_num, delta_den, COUNT(*) FROM charges WHERE analyst = ? "
    "GROUP BY eps_num, eps_den, delta_num, delta_den"
)


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One recorded charge: ``id`` grows in charge order, ``time`` is in unix seconds.

    ``params`` holds the mechanism's JSON-serialisable parameters (kind, sensitivity, noise
    scale...), so that a tighter accountant can later re-read the history (DESIGN section 7).
    """

    id: int
    analyst: str
    session: str
    time: float
    query: str
    plan_hash: str
    mechanism: str
    params: Mapping[str, object]
    cost: PrivacyCost


def _cost(eps_num: str, eps_den: str, delta_num: str, delta_den: str) -> PrivacyCost:
    try:
        return PrivacyCost(Fraction(int(eps_num), int(eps_den)), Fraction(int(delta_num), int(delta_den)))
    except (ValueError, TypeError, ZeroDivisionError) as err:
        raise LedgerError("the budget ledger holds an invalid cost") from err


def _total(rows: Iterable[tuple[str, str, str, str, int]]) -> tuple[Fraction, Fraction]:
    eps, delta = Fraction(0), Fraction(0)
    for eps_num, eps_den, delta_num, delta_den, count in rows:
        cost = _cost(eps_num, eps_den, delta_num, delta_den)
        eps, delta = eps + cost.epsilon * count, delta + cost.delta * count
    return eps, delta


def _num(value: Fraction) -> str:
    return format(float(value), ".12g")


class Ledger:
    """A persistent (or in-memory) privacy ledger under basic composition; thread-safe.

    Args:
        path: the SQLite file; parent directories and the schema are created if missing.
            None (or ":memory:") keeps the ledger in memory for the life of the object.

    Raises:
        LedgerError: the file cannot be opened, is not a ledger, or has another schema version.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self._lock = threading.Lock()
        self._path = None if path is None or str(path) == ":memory:" else Path(path).expanduser()
        try:
            if self._path is not None:
                self._path.parent.mkdir(parents=True, exist_ok=True)
            target = ":memory:" if self._path is None else str(self._path)
            # timeout= is SQLite's busy timeout: a concurrent writer makes us wait, not fail.
            self._conn = sqlite3.connect(target, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        except (sqlite3.Error, OSError) as err:
            raise LedgerError("the budget ledger could not be opened") from err
        try:
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = FULL")
            self._transaction(self._create_schema)
        except BaseException as err:
            self._conn.close()
            if isinstance(err, sqlite3.Error):
                raise LedgerError("the budget ledger could not be opened") from err
            raise

    @property
    def path(self) -> Path | None:
        """The ledger file, or None when the ledger is in memory."""
        return self._path

    def charge(
        self,
        *,
        analyst: str,
        session: str,
        query: str,
        plan_hash: str,
        mechanism: str,
        params: Mapping[str, object],
        cost: PrivacyCost,
        budget: PrivacyCost,
    ) -> LedgerEntry:
        """Record ``cost`` for ``analyst`` if their total stays within ``budget``.

        Returns:
            The recorded entry, committed before this returns.

        Raises:
            BudgetExhaustedError: spent + cost would pass the budget; nothing was recorded.
            LedgerError: the ledger could not be read or written; the query must not run.
        """
        if not isinstance(cost, PrivacyCost) or not isinstance(budget, PrivacyCost):
            raise TypeError("cost and budget must be PrivacyCost values")
        try:
            params_json = json.dumps(dict(params), sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise LedgerError("the mechanism parameters are not JSON-serialisable") from err
        eps, delta = cost.epsilon, cost.delta

        def check_and_insert() -> LedgerEntry:
            spent_eps, spent_delta = _total(self._conn.execute(_SPENT, (analyst,)))
            if spent_eps + eps > budget.epsilon or spent_delta + delta > budget.delta:
                left = budget - PrivacyCost(spent_eps, min(spent_delta, budget.delta))
                raise BudgetExhaustedError(
                    f"privacy budget exhausted: requested epsilon={_num(eps)}, delta={_num(delta)}; "
                    f"remaining epsilon={_num(left.epsilon)}, delta={_num(left.delta)}",
                    requested=cost,
                    remaining=left,
                )
            now = time.time()
            fractions = (str(eps.numerator), str(eps.denominator), str(delta.numerator), str(delta.denominator))
            row = (analyst, session, now, query, plan_hash, mechanism, params_json, *fractions)
            row_id = self._conn.execute(_INSERT, row).lastrowid
            assert row_id is not None
            stored = json.loads(params_json)
            return LedgerEntry(row_id, analyst, session, now, query, plan_hash, mechanism, stored, cost)

        with self._lock:
            try:
                return self._transaction(check_and_insert)
            except sqlite3.Error as err:
                raise LedgerError("the budget ledger could not be updated; the query was not run") from err

    def spent(self, analyst: str) -> PrivacyCost:
        """The exact total charged to ``analyst`` so far (basic composition)."""
        eps, delta = _total(self._fetch(_SPENT, (analyst,)))
        if delta >= 1:
            raise LedgerError("the budget ledger holds an invalid total")
        return PrivacyCost(eps, delta)

    def remaining(self, analyst: str, budget: PrivacyCost) -> PrivacyCost:
        """What is left of ``budget`` for ``analyst``, never negative."""
        return budget - self.spent(analyst)

    def entries(self, analyst: str | None = None) -> list[LedgerEntry]:
        """Every recorded charge (of one analyst, or of all), in charge order."""
        if analyst is None:
            rows = self._fetch(f"{_SELECT} ORDER BY id", ())
        else:
            rows = self._fetch(f"{_SELECT} WHERE analyst = ? ORDER BY id", (analyst,))
        try:
            return [LedgerEntry(*row[:7], json.loads(row[7]), _cost(*row[8:])) for row in rows]
        except ValueError as err:
            raise LedgerError("the budget ledger holds invalid parameters") from err

    def close(self) -> None:
        """Close the connection; idempotent. An in-memory ledger is lost."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _create_schema(self) -> None:
        for statement in _SCHEMA:
            self._conn.execute(statement)
        versions = [v for (v,) in self._conn.execute("SELECT version FROM schema_version")]
        if not versions:
            self._conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        elif versions != [SCHEMA_VERSION]:
            raise LedgerError("the budget ledger has an unsupported schema version")

    def _transaction(self, body: Callable[[], _T]) -> _T:
        """Run ``body`` in BEGIN IMMEDIATE ... COMMIT; roll back on any exception."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            result = body()
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise
        return result

    def _fetch(self, sql: str, args: tuple[object, ...]) -> list[tuple[str, ...]]:
        with self._lock:
            try:
                return self._conn.execute(sql, args).fetchall()
            except sqlite3.Error as err:
                raise LedgerError("the budget ledger could not be read") from err

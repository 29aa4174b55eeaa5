"""The budget ledger: one row per charge, checked and written in one transaction.

The storage is separate from the data (DESIGN section 7): a SQLite file (``Ledger(path)``, or
memory), or a PostgreSQL database shared by several servers (``open_ledger("postgresql://...")``).
This module holds what both share: the check-and-charge (inside the store's ``charging``
transaction, which serialises one analyst's charges across processes and hosts and checks the
storage is still the one opened), the exact composition of costs and the refusals. Epsilon and
delta are stored exactly, as the decimal text of a Fraction's numerator and denominator, and
summed in Python. Every storage failure becomes a ``LedgerError``: the ledger fails closed.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TypeVar

from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.sqlite_ledger import SqliteStore
from dpsql.accounting.store import (
    SCHEMA_VERSION,
    LedgerStore,
    TotalRow,
    is_postgres_url,
    redact,
)
from dpsql.errors import BudgetExhaustedError, LedgerError

__all__ = ["SCHEMA_VERSION", "Ledger", "LedgerEntry", "LedgerStore", "open_ledger", "redact"]

_T = TypeVar("_T")


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


def _total(rows: Iterable[TotalRow]) -> tuple[Fraction, Fraction]:
    eps, delta = Fraction(0), Fraction(0)
    for eps_num, eps_den, delta_num, delta_den, count in rows:
        cost = _cost(eps_num, eps_den, delta_num, delta_den)
        eps, delta = eps + cost.epsilon * count, delta + cost.delta * count
    return eps, delta


def _num(value: Fraction) -> str:
    return format(float(value), ".12g")


def open_ledger(target: str | Path | None = None) -> Ledger:
    """The ledger a front end names: None or ":memory:" (in memory), a SQLite file path, or a
    ``postgresql://user:password@host:port/dbname`` URL (needs the ``postgres`` extra).

    Raises:
        LedgerError: the ledger cannot be opened (or psycopg 3 is missing for a URL).
    """
    if is_postgres_url(target):
        from dpsql.accounting.postgres_ledger import (
            PostgresStore,  # psycopg only when asked for
        )

        return Ledger(store=PostgresStore(str(target).strip()))
    return Ledger(target)


class Ledger:
    """A persistent (or in-memory) privacy ledger under basic composition; thread-safe.

    Args:
        path: the SQLite file; parent directories and the schema are created if missing.
            None (or ":memory:") keeps the ledger in memory for the life of the object.
        store: another storage instead of ``path`` (``open_ledger`` passes the PostgreSQL one).

    Raises:
        LedgerError: the file cannot be opened, is not a ledger, or has another schema version.
    """

    def __init__(self, path: str | Path | None = None, *, store: LedgerStore | None = None) -> None:
        if store is not None and path is not None:
            raise TypeError("give a ledger path or a store, not both")
        self._lock = threading.Lock()
        self._store = store if store is not None else SqliteStore(path)

    @property
    def path(self) -> Path | None:
        """The ledger file, or None when the ledger is in memory or on a server."""
        return self._store.path

    def describe(self) -> str:
        """Where the ledger is, safe to log: a path, "in memory", or a URL without its password."""
        return self._store.describe()

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
            LedgerError: the ledger could not be read or written, or is no longer the one
                opened (its file removed or replaced); the query must not run.
        """
        if not isinstance(cost, PrivacyCost) or not isinstance(budget, PrivacyCost):
            raise TypeError("cost and budget must be PrivacyCost values")
        try:
            params_json = json.dumps(dict(params), sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise LedgerError("the mechanism parameters are not JSON-serialisable") from err
        eps, delta = cost.epsilon, cost.delta
        store = self._store

        def check_and_insert() -> LedgerEntry:
            # The store's transaction serialises this analyst's charges and verified the storage.
            spent_eps, spent_delta = _total(store.totals(analyst))
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
            row_id = store.insert((analyst, session, now, query, plan_hash, mechanism, params_json, *fractions))
            stored = json.loads(params_json)
            return LedgerEntry(row_id, analyst, session, now, query, plan_hash, mechanism, stored, cost)

        def charged() -> LedgerEntry:
            with store.charging(analyst):
                entry = check_and_insert()
            return entry  # only once the transaction has committed

        return self._locked(charged, "the budget ledger could not be updated; the query was not run")

    def spent(self, analyst: str) -> PrivacyCost:
        """The exact total charged to ``analyst`` so far (basic composition)."""
        eps, delta = _total(self._read(lambda: self._store.totals(analyst)))
        if delta >= 1:
            raise LedgerError("the budget ledger holds an invalid total")
        return PrivacyCost(eps, delta)

    def remaining(self, analyst: str, budget: PrivacyCost) -> PrivacyCost:
        """What is left of ``budget`` for ``analyst``, never negative."""
        return budget - self.spent(analyst)

    def entries(self, analyst: str | None = None) -> list[LedgerEntry]:
        """Every recorded charge (of one analyst, or of all), in charge order."""
        rows = self._read(lambda: self._store.rows(analyst))
        try:
            return [LedgerEntry(*row[:7], json.loads(row[7]), _cost(*row[8:])) for row in rows]  # type: ignore[arg-type, call-arg]
        except ValueError as err:
            raise LedgerError("the budget ledger holds invalid parameters") from err

    def close(self) -> None:
        """Close the connection; idempotent. An in-memory ledger is lost."""
        with self._lock:
            self._store.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, body: Callable[[], _T]) -> _T:
        """A read, after checking the storage is still the one opened (a vanished ledger is not read)."""

        def checked() -> _T:
            self._store.verify()
            return body()

        return self._locked(checked, "the budget ledger could not be read")

    def _locked(self, body: Callable[[], _T], message: str) -> _T:
        """Run ``body`` under the lock; every driver error becomes a LedgerError with ``message``."""
        with self._lock:
            try:
                return body()
            except self._store.driver_errors as err:
                raise LedgerError(message) from err

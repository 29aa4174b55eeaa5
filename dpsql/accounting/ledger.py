"""The budget ledger: one row per charge, checked and written in one transaction.

The storage is separate from the data (docs/privacy-model.md): a SQLite file (``Ledger(path)``, or
memory), or a PostgreSQL database shared by several servers (``open_ledger("postgresql://...")``).
This module holds what both share: the check-and-charge (inside the store's ``charging``
transaction, which serialises one analyst's charges across processes and hosts and checks the
storage is still the one opened), the exact composition of costs and the refusals. Epsilon and
delta are stored exactly, as the decimal text of a Fraction's numerator and denominator, and
summed in Python. Every storage failure becomes a ``LedgerError``: the ledger fails closed.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import TypeVar

from dpsql.accounting.accountant import losses_of
from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.accounting.filters import MORE_LIMIT, Filter, History, charge_of, filter_name
from dpsql.accounting.sqlite_ledger import SqliteStore
from dpsql.accounting.store import (
    SCHEMA_VERSION,
    GroupRow,
    HistoryRow,
    LedgerStore,
    is_postgres_url,
    redact,
)
from dpsql.errors import BudgetExhaustedError, LedgerError

__all__ = ["MORE_LIMIT", "SCHEMA_VERSION", "ChargeRecord", "Ledger", "LedgerEntry", "LedgerStore", "charge_record",
           "open_ledger", "redact"]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One recorded charge: ``id`` grows in charge order, ``time`` is in unix seconds.

    ``params`` holds the mechanism's JSON-serialisable parameters (kind, sensitivity, noise
    scale...), so that a tighter accountant can later re-read the history (docs/privacy-model.md).
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


@dataclass(frozen=True, slots=True, eq=False)
class ChargeRecord:
    """What a charge writes besides who, when and which query, rendered once: a repeated query
    charges the same record again (``Ledger.charge_record``) without re-rendering or re-parsing it.

    Built only by ``charge_record``, so its parts always agree: ``params_json`` is the params
    column, ``fractions`` the exact cost columns, ``losses`` the terms a re-read of that row composes.
    """

    mechanism: str
    params_json: str
    params: Mapping[str, object]  # read-only: shared by every entry charged from this record
    cost: PrivacyCost
    fractions: tuple[str, str, str, str]
    losses: tuple[PrivacyLoss, ...]


def charge_record(mechanism: str, params: Mapping[str, object], cost: PrivacyCost) -> ChargeRecord:
    """The ledger row's content for a charge of ``cost`` by ``mechanism`` with ``params``.

    Raises:
        LedgerError: the params are not JSON-serialisable (nothing can be charged).
    """
    if not isinstance(cost, PrivacyCost):
        raise TypeError("cost must be a PrivacyCost value")
    try:
        params_json = json.dumps(dict(params), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise LedgerError("the mechanism parameters are not JSON-serialisable") from err
    eps, delta = cost.epsilon, cost.delta
    fractions = (str(eps.numerator), str(eps.denominator), str(delta.numerator), str(delta.denominator))
    return ChargeRecord(mechanism, params_json, MappingProxyType(json.loads(params_json)), cost, fractions,
                        _row_losses(params_json, *fractions))  # exactly what a later re-read composes


def _cost(eps_num: str, eps_den: str, delta_num: str, delta_den: str) -> PrivacyCost:
    try:
        return PrivacyCost(Fraction(int(eps_num), int(eps_den)), Fraction(int(delta_num), int(delta_den)))
    except (ValueError, TypeError, ZeroDivisionError) as err:
        raise LedgerError("the budget ledger holds an invalid cost") from err


def _history_losses(rows: Iterable[HistoryRow]) -> list[tuple[PrivacyLoss, ...]]:
    """Each row's loss terms (an unreadable params column fails closed)."""
    try:
        return [_row_losses(params, *fractions) for _, params, *fractions in rows]
    except (ValueError, TypeError) as err:
        raise LedgerError("the budget ledger holds invalid parameters") from err


def _group_losses(rows: Iterable[GroupRow]) -> list[tuple[tuple[PrivacyLoss, ...], int]]:
    """Each group's loss terms and how many charges it holds (unreadable params fail closed)."""
    try:
        return [(_row_losses(params, *fractions), count) for params, *fractions, count, _ in rows]
    except (ValueError, TypeError) as err:
        raise LedgerError("the budget ledger holds invalid parameters") from err


def _terms(cost: PrivacyCost) -> tuple[PrivacyLoss, ...]:
    """The terms a charge of ``cost`` records, as a re-read composes them (memoised: a repeated
    query asks for the same ones before every charge)."""
    return _cost_terms(cost.epsilon, cost.delta, cost.losses)


@functools.lru_cache(maxsize=256)
def _cost_terms(epsilon: Fraction, delta: Fraction, losses: tuple[PrivacyLoss, ...]) -> tuple[PrivacyLoss, ...]:
    return losses_of({"losses": [x.record() for x in losses]}, PrivacyCost(epsilon, delta, losses))


@functools.lru_cache(maxsize=1024)
def _row_losses(params: str, eps_num: str, eps_den: str, delta_num: str, delta_den: str) -> tuple[PrivacyLoss, ...]:
    """One row's terms; repeated queries repeat their rows' text, so a rebuild parses each once."""
    return losses_of(json.loads(params), _cost(eps_num, eps_den, delta_num, delta_den))


# A cached history: (charges read, largest id read, the history).
_Cached = tuple[int, int, History]


_LOST = ("the budget ledger lost charges since it was read (rows deleted, or an older copy restored); "
         "the query was not run")


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


def _filter(name: str, budget: PrivacyCost) -> Filter:
    try:
        return Filter(filter_name(name), budget)
    except ValueError as err:
        raise TypeError(str(err)) from err


def _exhausted(cost: PrivacyCost, left: PrivacyCost) -> BudgetExhaustedError:
    return BudgetExhaustedError(
        f"privacy budget exhausted: requested epsilon={_num(cost.epsilon)}, delta={_num(cost.delta)}; "
        f"remaining epsilon={_num(left.epsilon)}, delta={_num(left.delta)}",
        requested=cost,
        remaining=left,
    )


class Ledger:
    """A persistent (or in-memory) privacy ledger whose charges a privacy filter admits; thread-safe.

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
        # Per analyst: the history of the charges read (the same whatever the filter: a filter only
        # reads it), never the source of truth.
        self._cache: dict[str, _Cached] = {}
        # Per analyst: the store's version of the analyst (store.version) at which that cache entry
        # was last known exact; while the store answers the same version, no charge of the analyst
        # was written since but those the entry holds.
        self._versions: dict[str, Hashable] = {}
        # Per analyst: the most charges and the largest id this object has seen, and the id and
        # time of the last charge it wrote. A ledger only grows: fewer charges, a smaller largest id
        # or a missing own charge means rows were deleted or an older copy restored (a refund).
        self._high: dict[str, tuple[int, int]] = {}
        self._own: dict[str, tuple[int, float]] = {}

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
        accountant: str = "basic",
    ) -> LedgerEntry:
        """Record ``cost`` for ``analyst`` if the filter ``accountant`` ("adaptive", "zcdp" or
        "basic"; ``dpsql.accounting.filters``) admits their history plus ``cost`` within ``budget``.

        Returns:
            The recorded entry, committed before this returns.

        Raises:
            BudgetExhaustedError: the filter refuses; nothing was recorded.
            LedgerError: the ledger could not be read or written, is no longer the one opened
                (its file removed or replaced), or lost charges; the query must not run.
        """
        if not isinstance(cost, PrivacyCost) or not isinstance(budget, PrivacyCost):
            raise TypeError("cost and budget must be PrivacyCost values")
        return self.charge_record(charge_record(mechanism, params, cost), analyst=analyst, session=session,
                                  query=query, plan_hash=plan_hash, budget=budget, accountant=accountant)

    def charge_record(self, record: ChargeRecord, *, analyst: str, session: str, query: str, plan_hash: str,
                      budget: PrivacyCost, accountant: str = "basic") -> LedgerEntry:
        """``charge`` with the row's content already rendered (``charge_record(...)``, kept by a
        caller that charges the same kind of query again); the same check, row and errors."""
        if not isinstance(record, ChargeRecord) or not isinstance(budget, PrivacyCost):
            raise TypeError("a ChargeRecord and a PrivacyCost budget are needed")
        chosen = _filter(accountant, budget)
        store = self._store
        charge = charge_of(record.losses)

        def charged() -> LedgerEntry:
            with store.charging(analyst):
                history = self._history(analyst, in_charge=True)
                after = history.add(charge)
                free = record.cost.epsilon == 0 and record.cost.delta == 0  # no loss added: always fits
                if not free and not chosen.admits(after):
                    raise _exhausted(record.cost, budget - chosen.spent(history))
                count, max_id = self._cache[analyst][:2]
                # Forgotten before writing (the write changes the version anyway): whatever interrupts
                # from here on (a failed COMMIT of unknown outcome, a signal) leaves the summary read next.
                self._versions.pop(analyst, None)
                entry = self._insert(analyst, session, query, plan_hash, record)
                version = store.version(analyst)  # still under the write lock: exactly our own row added
            # Committed: the cache now covers the new row too (ids only grow).
            if entry.id > max_id:
                self._cache[analyst] = (count + 1, entry.id, after)
                self._high[analyst] = (count + 1, entry.id)
                self._own[analyst] = (entry.id, entry.time)
                if version is not None:
                    self._versions[analyst] = version
            return entry

        return self._locked(charged, "the budget ledger could not be updated; the query was not run")

    def history(self, analyst: str) -> History:
        """What the filters read of the analyst's charges (a read)."""
        return self._read(lambda: self._history(analyst, in_charge=False))

    def spent(self, analyst: str, budget: PrivacyCost | None = None, accountant: str = "basic") -> PrivacyCost:
        """What ``analyst`` has spent so far: the exact totals under "basic"; under another filter,
        the smallest epsilon at which one of its classes still holds the history (``budget`` is
        then required), which is <= the budget's epsilon exactly while the filter admits it."""
        history = self.history(analyst)
        if history.delta >= 1:
            raise LedgerError("the budget ledger holds an invalid total")
        if accountant == "basic":
            return PrivacyCost(history.epsilon, history.delta)
        if budget is None:
            raise TypeError("spent under a filter other than basic needs the budget")
        return _filter(accountant, budget).spent(history)

    def spent_after(self, analyst: str, cost: PrivacyCost, budget: PrivacyCost, accountant: str = "basic") -> PrivacyCost:
        """What ``analyst`` would have spent after one more charge of ``cost`` (EXPLAIN's view; a read)."""
        after = self.history(analyst).add(charge_of(_terms(cost)))
        if accountant == "basic":
            return PrivacyCost(after.epsilon, after.delta)
        return _filter(accountant, budget).spent(after)

    def remaining(self, analyst: str, budget: PrivacyCost, accountant: str = "basic") -> PrivacyCost:
        """What is left of ``budget`` for ``analyst`` under ``accountant``, never negative."""
        return budget - self.spent(analyst, budget, accountant)

    def fits(self, analyst: str, cost: PrivacyCost, budget: PrivacyCost, accountant: str = "basic") -> bool:
        """Whether ``cost`` would fit now (a read: ``charge`` checks again, atomically). A cost of
        zero always fits: it adds no privacy loss (a ledger spent past today's filter, written
        under an older accountant, still answers what is free)."""
        if cost.epsilon == 0 and cost.delta == 0:
            return True
        return _filter(accountant, budget).admits(self.history(analyst).add(charge_of(_terms(cost))))

    def more(self, analyst: str, cost: PrivacyCost, budget: PrivacyCost, accountant: str = "basic") -> int:
        """How many more charges of ``cost`` (its terms, as a query charges them) the filter would
        admit now, counted up to MORE_LIMIT (1000: "1000" reads "at least 1000"): public facts only
        (the ledger's costs and the budget). A read: charges re-check."""
        if cost.epsilon == 0 and cost.delta == 0:
            raise ValueError("a cost of zero fits without limit")
        return _filter(accountant, budget).more(self.history(analyst), charge_of(_terms(cost)), MORE_LIMIT)

    def entries(self, analyst: str | None = None) -> list[LedgerEntry]:
        """Every recorded charge (of one analyst, or of all), in charge order."""
        rows = self._read(lambda: self._store.rows(analyst))
        try:
            return [LedgerEntry(*row[:7], json.loads(row[7]), _cost(*row[8:])) for row in rows]  # type: ignore[arg-type, call-arg]
        except ValueError as err:
            raise LedgerError("the budget ledger holds invalid parameters") from err

    def last_cost(self, analyst: str, excluding_plan_hash: str) -> PrivacyCost | None:
        """The cost of the analyst's most recent charge (every session and process of the ledger)
        but those recorded under ``excluding_plan_hash``; None before the first."""
        found = self._read(lambda: self._store.last_charge(analyst, excluding_plan_hash))
        if found is None:
            return None
        cost = _cost(*found[1:])
        try:  # with the loss terms it was charged for, as a re-read composes them
            return PrivacyCost(cost.epsilon, cost.delta, _row_losses(*found))
        except (ValueError, TypeError) as err:
            raise LedgerError("the budget ledger holds invalid parameters") from err

    def check(self) -> None:
        """Raise LedgerError unless the storage is still the ledger that was opened (a replay
        held elsewhere is given only while its ledger is sound: the ledger fails closed)."""
        self._read(lambda: None)

    def replayed(self, analyst: str, key: str, since: float) -> tuple[float, str] | None:
        """(release time, answer) kept for replay under ``key`` for the analyst, released at or
        after ``since``; None when there is none (a read)."""
        return self._read(lambda: self._store.replay_find(analyst, key, since))

    def keep_replay(self, analyst: str, key: str, time: float, answer: str, since: float) -> None:
        """Keep an answer released (and charged) at ``time`` for replay under ``key``, unless an
        answer released at or after ``since`` is kept there already; the analyst's answers
        released before ``since`` are forgotten.

        Raises:
            LedgerError: the storage could not be written (the answer is simply not kept).
        """
        self._locked(lambda: self._store.replay_keep(analyst, key, time, answer, since),
                     "the answer could not be kept for replay")

    def _history(self, analyst: str, *, in_charge: bool) -> History:
        """The history of the analyst's charges (call under the lock).

        When the store's version of the analyst is the one recorded for the cache entry, no charge
        of the analyst was written since but those the entry holds: it is exact, and nothing else
        is read (constant time, whatever the history's size).
        Otherwise the count and largest id are read: the rows after the cached largest id are
        added when they account for every new charge; a cold cache reads every row, grouped.
        A ledger never moves backwards: fewer charges or a smaller largest id than this object has
        seen, a missing charge it wrote, or rows that vanished below the cached largest id refuse
        (LedgerError) instead of rebuilding from what is left (which would refund the budget).
        Inside a charge every read is in the charge's transaction, so the history is exactly the
        one being checked. Outside one the version is read before the summary: a commit in between
        can only make the next version differ (a needless re-check), never make a stale entry current.
        """
        store = self._store
        version = store.version(analyst)
        cached = self._cache.get(analyst)
        if cached is not None and version is not None and self._versions.get(analyst) == version:
            return cached[2]
        count, max_id = store.summary(analyst)
        self._check_grown(analyst, count, max_id)
        if cached is not None and cached[:2] == (count, max_id):
            self._remember_version(analyst, version)
            return cached[2]
        # Rows past the summary's largest id were committed by another process after the summary
        # was read (outside a charge nothing holds the analyst's lock): left for the next read.
        rows = [r for r in store.history(analyst, cached[1]) if r[0] <= max_id] if cached is not None else []
        if cached is not None and cached[0] + len(rows) != count:
            if in_charge and cached[0] + len(rows) > count:
                raise LedgerError(_LOST)  # under the analyst's lock: charges at or below the cached largest id vanished
            # Otherwise growth the cache cannot place (a concurrent charge with a smaller id
            # committed late, or between the summary and this read): read the whole history again.
            cached = None
        if cached is not None:
            history = cached[2]
            for losses in _history_losses(rows):
                history = history.add(charge_of(losses))
            seen = (count, rows[-1][0] if rows else cached[1])
        else:
            # Identical charges grouped (the sums depend on the multiset), the group holding the
            # first charge first (it fixes the homogeneous unit); read in the same transaction as
            # the summary when charging, so the two agree.
            groups = sorted(store.history_groups(analyst), key=lambda group: group[6])
            history = History()
            for losses, times in _group_losses(groups):
                history = history.add(charge_of(losses), times)
            seen = (sum(group[5] for group in groups), max_id)
        if seen == (count, max_id):
            self._cache[analyst] = (count, max_id, history)
            self._high[analyst] = (count, max_id)
            self._remember_version(analyst, version)
        elif in_charge:
            raise LedgerError("the budget ledger changed during a charge; the query was not run")
        else:
            self._cache.pop(analyst, None)
            self._versions.pop(analyst, None)
        return history

    def _check_grown(self, analyst: str, count: int, max_id: int) -> None:
        """Refuse a ledger that moved backwards since this object last read or wrote it."""
        high = self._high.get(analyst)
        if high is not None and (count < high[0] or max_id < high[1]):
            raise LedgerError(_LOST)
        own = self._own.get(analyst)
        if own is not None and self._store.written(own[0]) != (analyst, own[1]):
            raise LedgerError(_LOST)

    def _remember_version(self, analyst: str, version: Hashable | None) -> None:
        if version is not None:
            self._versions[analyst] = version
        else:
            self._versions.pop(analyst, None)

    def _insert(self, analyst: str, session: str, query: str, plan_hash: str, record: ChargeRecord) -> LedgerEntry:
        now = time.time()
        row_id = self._store.insert((analyst, session, now, query, plan_hash, record.mechanism, record.params_json,
                                     *record.fractions))
        return LedgerEntry(row_id, analyst, session, now, query, plan_hash, record.mechanism, record.params, record.cost)

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

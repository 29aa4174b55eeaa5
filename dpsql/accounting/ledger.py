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

from dpsql.accounting.accountant import Accountant, Composition, accountant, losses_of
from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.accounting.sqlite_ledger import SqliteStore
from dpsql.accounting.store import (
    SCHEMA_VERSION,
    LedgerStore,
    GroupRow,
    HistoryRow,
    is_postgres_url,
    redact,
)
from dpsql.errors import BudgetExhaustedError, LedgerError

__all__ = ["SCHEMA_VERSION", "ChargeRecord", "Ledger", "LedgerEntry", "LedgerStore", "charge_record", "open_ledger",
           "redact"]

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
        return [_row_losses(params, *fractions) for _, params, *fractions in rows]  # type: ignore[misc]
    except (ValueError, TypeError) as err:
        raise LedgerError("the budget ledger holds invalid parameters") from err


def _group_losses(rows: Iterable[GroupRow]) -> list[tuple[tuple[PrivacyLoss, ...], int]]:
    """Each group's loss terms and how many charges it holds (unreadable params fail closed)."""
    try:
        return [(_row_losses(params, *fractions), count) for params, *fractions, count in rows]  # type: ignore[misc]
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


# A cached composition: (charges composed, largest id composed, the composition).
_Cached = tuple[int, int, Composition]
# Known-fitting multisets, per (analyst, accountant, budget epsilon, budget delta): for each kind
# of charge (its terms' tally), the history it was computed on plus as many copies of the kind as
# fit. Any history these cover fits too (a sub-multiset of a fitting one), so a charge they cover
# is admitted without composing anything; they are facts about multisets and never go stale.
_KnownKey = tuple[str, str, Fraction, Fraction]
_MAX_KINDS = 32
# How many more charges of a kind fit is shown up to MORE_LIMIT ("at least 1000"); a search stops
# at twice that (its cost grows with the count), so a capped certificate is searched again only
# after MORE_LIMIT charges, and a count below MORE_LIMIT is always exact.
MORE_LIMIT = 1000
_SEARCH_LIMIT = 2 * MORE_LIMIT


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


def _accountant(name: str) -> Accountant:
    try:
        return accountant(name)
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
    """A persistent (or in-memory) privacy ledger, composing under a chosen accountant; thread-safe.

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
        # Per (analyst, accountant): the composition of the charges seen, never the source of truth.
        self._cache: dict[tuple[str, str], _Cached] = {}
        # Per (analyst, accountant): the store's version of the analyst (store.version) at which
        # that cache entry was last known exact; while the store answers the same version, no
        # charge of the analyst was written since but those the entry holds.
        self._versions: dict[tuple[str, str], Hashable] = {}
        # Per kind: (the known-fitting multiset, whether its search stopped at _SEARCH_LIMIT).
        self._known: dict[_KnownKey, dict[frozenset[tuple[object, int]], tuple[Composition, bool]]] = {}
        # Per (analyst, accountant): the last `more` answer and what it was computed from.
        self._more_memo: dict[tuple[str, str], tuple[Composition, tuple[PrivacyLoss, ...], PrivacyCost, int]] = {}

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
        """Record ``cost`` for ``analyst`` if their history plus ``cost`` stays within ``budget``
        under ``accountant``: basic composition (exact sums, the default), or "zcdp" / "pld",
        where the composition's epsilon at the budget's delta must be <= the budget's epsilon.

        Returns:
            The recorded entry, committed before this returns.

        Raises:
            BudgetExhaustedError: spent + cost would pass the budget; nothing was recorded.
            LedgerError: the ledger could not be read or written, or is no longer the one
                opened (its file removed or replaced); the query must not run.
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
        # Every accountant, basic included, charges through the cached composition: the check
        # reads whether the ledger changed (and then only the analyst's row count, largest id and
        # the rows not yet composed), never the whole history; basic composition is still exact.
        return self._charge_composed(analyst, session, query, plan_hash, record, budget, _accountant(accountant))

    def spent(self, analyst: str, budget: PrivacyCost | None = None, accountant: str = "basic") -> PrivacyCost:
        """What ``analyst`` has spent so far: the exact totals under basic composition; under
        "zcdp" or "pld", the composition's epsilon at ``budget``'s delta and the deltas its terms
        consume outright (``budget`` is then required)."""
        if accountant == "basic":
            # The exact sums of the charged costs: each row's terms add up to its cost exactly
            # (losses_of), so the basic composition's sums are the totals, read like any history.
            history = self._read(lambda: self._composition(analyst, _accountant("basic"), in_charge=False))
            if history.basic_delta >= 1:
                raise LedgerError("the budget ledger holds an invalid total")
            return PrivacyCost(history.basic_epsilon, history.basic_delta)
        if budget is None:
            raise TypeError("spent under a composing accountant needs the budget (its delta)")
        chosen = _accountant(accountant)
        return self._read(lambda: self._composition(analyst, chosen, in_charge=False)).spent(budget)

    def spent_after(self, analyst: str, cost: PrivacyCost, budget: PrivacyCost, accountant: str = "basic") -> PrivacyCost:
        """What ``analyst`` would have spent after one more charge of ``cost`` (EXPLAIN's view; a read)."""
        if accountant == "basic":
            return self.spent(analyst) + PrivacyCost(cost.epsilon, cost.delta)
        chosen = _accountant(accountant)
        losses = _terms(cost)
        return self._read(lambda: self._composition(analyst, chosen, in_charge=False).add(losses)).spent(budget)

    def remaining(self, analyst: str, budget: PrivacyCost, accountant: str = "basic") -> PrivacyCost:
        """What is left of ``budget`` for ``analyst`` under ``accountant``, never negative."""
        return budget - self.spent(analyst, budget, accountant)

    def fits(self, analyst: str, cost: PrivacyCost, budget: PrivacyCost, accountant: str = "basic") -> bool:
        """Whether ``cost`` would fit now (a read: ``charge`` checks again, atomically)."""
        if accountant == "basic":
            return cost.fits_in(self.remaining(analyst, budget))
        chosen = _accountant(accountant)
        losses = _terms(cost)
        return self._read(lambda: self._fits(analyst, chosen, self._composition(analyst, chosen, in_charge=False),
                                             losses, budget))

    def more(self, analyst: str, cost: PrivacyCost, budget: PrivacyCost, accountant: str = "basic") -> int:
        """How many more charges of ``cost`` (its terms, as a query charges them) would fit now under
        ``accountant``, counted up to MORE_LIMIT (1000: "1000" reads "at least 1000"): public facts
        only (the ledger's costs and the budget). A read: charges re-check."""
        if cost.epsilon == 0 and cost.delta == 0:
            raise ValueError("a cost of zero fits without limit")
        if accountant == "basic":
            left = self.remaining(analyst, budget)
            counts = [left.epsilon // cost.epsilon if cost.epsilon else None, left.delta // cost.delta if cost.delta else None]
            return min(MORE_LIMIT, int(min(c for c in counts if c is not None)))
        chosen = _accountant(accountant)
        losses = _terms(cost)

        def count() -> int:
            history = self._composition(analyst, chosen, in_charge=False)
            # Asked again with nothing charged since (the REPL asks after every query): the same
            # cached history object, so the same answer.
            memo = self._more_memo.get((analyst, chosen.name))
            if memo is not None and memo[0] is history and memo[1] == losses and memo[2] == budget:
                return memo[3]
            fit = counted(history)
            self._more_memo[(analyst, chosen.name)] = (history, losses, budget, fit)
            return fit

        def counted(history: Composition) -> int:
            kind = chosen.empty().add(losses)
            known, capped = self._known.get((analyst, chosen.name, budget.epsilon, budget.delta), {}).get(
                frozenset(kind.tally.items()), (None, False))
            if known is not None and known.covers(history):
                # Exact when the history grew only by this kind since the search (the usual case).
                left = {key: known.tally.get(key, 0) - history.tally.get(key, 0) for key in known.tally}
                if all(left[key] % n == 0 for key, n in kind.tally.items()) and \
                        all(v == 0 for key, v in left.items() if key not in kind.tally):
                    per = {left[key] // n for key, n in kind.tally.items()}
                    fit = per.pop() if len(per) == 1 else None
                    # A capped search's count is a floor: good enough for "at least MORE_LIMIT" only.
                    if fit is not None and (not capped or fit >= MORE_LIMIT):
                        return min(fit, MORE_LIMIT)
            j = history.headroom(losses, budget, _SEARCH_LIMIT)
            if j:
                self._remember(analyst, chosen, budget, kind, history.add(losses, j), j == _SEARCH_LIMIT)
            return min(j, MORE_LIMIT)

        return self._read(count)

    def _fits(self, analyst: str, chosen: Accountant, history: Composition, losses: tuple[PrivacyLoss, ...],
              budget: PrivacyCost, after: Composition | None = None) -> bool:
        """Whether history + losses (``after``, when the caller has it) fits ``budget`` (call under the
        lock): covered by a known-fitting multiset, or else the largest number of such charges that
        fit is searched once and kept."""
        after = history.add(losses) if after is None else after
        known = self._known.get((analyst, chosen.name, budget.epsilon, budget.delta), {}).values()
        if any(fitting.covers(after) for fitting, _ in known):
            return True
        if chosen.name == "basic" or not after.count:
            return after.fits(budget)
        j = history.headroom(losses, budget, _SEARCH_LIMIT)
        if j:
            self._remember(analyst, chosen, budget, chosen.empty().add(losses), history.add(losses, j), j == _SEARCH_LIMIT)
        return j > 0

    def _remember(self, analyst: str, chosen: Accountant, budget: PrivacyCost, kind: Composition,
                  fitting: Composition, capped: bool) -> None:
        kinds = self._known.setdefault((analyst, chosen.name, budget.epsilon, budget.delta), {})
        if len(kinds) >= _MAX_KINDS:
            kinds.clear()
        kinds[frozenset(kind.tally.items())] = (fitting, capped)

    def entries(self, analyst: str | None = None) -> list[LedgerEntry]:
        """Every recorded charge (of one analyst, or of all), in charge order."""
        rows = self._read(lambda: self._store.rows(analyst))
        try:
            return [LedgerEntry(*row[:7], json.loads(row[7]), _cost(*row[8:])) for row in rows]  # type: ignore[arg-type, call-arg]
        except ValueError as err:
            raise LedgerError("the budget ledger holds invalid parameters") from err

    def _charge_composed(self, analyst: str, session: str, query: str, plan_hash: str, record: ChargeRecord,
                         budget: PrivacyCost, chosen: Accountant) -> LedgerEntry:
        """The check-and-charge under a composing accountant, in the store's one transaction."""
        store = self._store
        key = (analyst, chosen.name)
        cost, new_losses = record.cost, record.losses

        def charged() -> LedgerEntry:
            with store.charging(analyst):
                history = self._composition(analyst, chosen, in_charge=True)
                after = history.add(new_losses)
                if not self._fits(analyst, chosen, history, new_losses, budget, after):
                    raise _exhausted(cost, budget - history.spent(budget))
                count, max_id = self._cache[key][:2]
                # Forgotten before writing (the write changes the version anyway): whatever interrupts
                # from here on (a failed COMMIT of unknown outcome, a signal) leaves the summary read next.
                self._versions.pop(key, None)
                entry = self._insert(analyst, session, query, plan_hash, record)
                version = store.version(analyst)  # still under the write lock: exactly our own row added
            # Committed: the cache now covers the new row too (ids only grow); the analyst's caches
            # under other accountants do not, and the version they recorded no longer matches.
            if entry.id > max_id:
                self._cache[key] = (count + 1, entry.id, after)
                if version is not None:
                    self._versions[key] = version
            return entry

        return self._locked(charged, "the budget ledger could not be updated; the query was not run")

    def _composition(self, analyst: str, chosen: Accountant, *, in_charge: bool) -> Composition:
        """The composition of the analyst's whole history (call under the lock).

        When the store's version of the analyst is the one recorded for the cache entry, no charge
        of the analyst was written since but those the entry holds: it is exact, and nothing else
        is read (constant time, whatever the history's size).
        Otherwise the cache is used only when the count and largest id of the analyst's charges,
        read now, show it has seen every charge; rows it has not seen are composed onto it, and
        anything else (a row removed, ids out of order) rebuilds from all rows. Inside a charge
        every read is in the charge's transaction, so the cache is exactly the history being checked.
        Outside one the version is read before the summary: a commit in between can only make the
        next version differ (a needless re-check), never make a stale entry look current.
        """
        store = self._store
        key = (analyst, chosen.name)
        version = store.version(analyst)
        cached = self._cache.get(key)
        if cached is not None and version is not None and self._versions.get(key) == version:
            return cached[2]
        count, max_id = store.summary(analyst)
        if cached is not None and cached[:2] == (count, max_id):
            self._remember_version(key, version)
            return cached[2]
        composition: Composition | None = None
        if cached is not None and cached[1] <= max_id:
            rows = store.history(analyst, cached[1])
            seen = (cached[0] + len(rows), rows[-1][0] if rows else cached[1])
            if seen == (count, max_id):
                composition = cached[2].add([x for entry in _history_losses(rows) for x in entry])
        if composition is None:
            # Identical charges grouped (the composition depends on the multiset alone); read in the
            # same transaction as the summary when charging, so the two agree.
            groups = store.history_groups(analyst)
            seen = (sum(n for *_, n in groups), max_id)
            composition = chosen.compose_counted(_group_losses(groups))
        if seen == (count, max_id):
            self._cache[key] = (count, max_id, composition)
            self._remember_version(key, version)
        elif in_charge:
            raise LedgerError("the budget ledger changed during a charge; the query was not run")
        else:
            self._cache.pop(key, None)
            self._versions.pop(key, None)
        return composition

    def _remember_version(self, key: tuple[str, str], version: Hashable | None) -> None:
        if version is not None:
            self._versions[key] = version
        else:
            self._versions.pop(key, None)

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

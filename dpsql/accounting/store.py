"""What a ledger's storage must do; the charge logic itself lives in ``ledger.Ledger``.

A store keeps the charges table (and the answers kept for replay, written after their charge
committed) and knows one thing the shared logic cannot: how to open a
transaction that serialises the charges of one analyst across processes and hosts, and how to
tell that the storage is still the one that was opened (fail closed when it vanished or was
replaced). SQLite (``sqlite_ledger``) and PostgreSQL (``postgres_ledger``) implement it.
"""

from __future__ import annotations

import hashlib
import secrets
from abc import ABC, abstractmethod
from collections.abc import Hashable
from contextlib import AbstractContextManager
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

SCHEMA_VERSION = 1
# Column order of a charge row: the shared logic builds rows in this order, stores write them.
CHARGE_FIELDS = (
    "analyst", "session", "time", "query", "plan_hash", "mechanism", "params",
    "eps_num", "eps_den", "delta_num", "delta_den",
)  # fmt: skip
POSTGRES_SCHEMES = ("postgresql://", "postgres://")

# (id, *CHARGE_FIELDS)
ChargeRow = tuple[object, ...]
# (id, params, eps_num, eps_den, delta_num, delta_den): what an accountant re-reads of a charge.
HistoryRow = tuple[int, str, str, str, str, str]
# (params, eps_num, eps_den, delta_num, delta_den, count, first id): identical charges of one analyst.
GroupRow = tuple[str, str, str, str, str, int, int]


class LedgerStore(ABC):
    """The storage under a Ledger. Not thread-safe: the Ledger holds a lock around every call.

    Methods raise the driver's own errors (listed in ``driver_errors``), which the Ledger turns
    into LedgerError, or LedgerError directly when the storage is not the one opened.
    """

    driver_errors: tuple[type[Exception], ...] = ()

    @property
    def path(self) -> Path | None:
        """The ledger file, or None (in memory, or a server)."""
        return None

    @abstractmethod
    def charging(self, analyst: str) -> AbstractContextManager[None]:
        """A transaction in which a check-and-charge of ``analyst`` runs alone.

        Entered: no other process or host can charge ``analyst`` until it ends, and the storage
        was checked to be the one opened. Left normally: committed (durably) before it returns.
        Left by an exception: rolled back, nothing recorded.
        """

    @abstractmethod
    def summary(self, analyst: str) -> tuple[int, int]:
        """(number of charges, largest id or 0) of the analyst: tells a cached composition stale."""

    def version(self, analyst: str) -> Hashable | None:
        """A constant-time "may the analyst's charges have changed since I last asked": a token that
        differs between two calls whenever another connection committed anything, or this store
        wrote a charge of ``analyst``, in between. Read inside ``charging`` it describes the state
        the charge checks and writes. None: no such check (the Ledger reads ``summary`` every time).
        """
        return None

    @abstractmethod
    def history(self, analyst: str, after_id: int) -> list[HistoryRow]:
        """The analyst's charges with id > ``after_id``, in id order, as the accountant reads them."""

    def history_groups(self, analyst: str) -> list[GroupRow]:
        """The analyst's charges grouped by identical (params, cost), with how many of each and the
        smallest id: what a filter re-reads to rebuild its history (the sums depend on the
        multiset, the homogeneous chain on which charge came first)."""
        groups: dict[tuple[str, str, str, str, str], list[int]] = {}
        for row_id, *content in self.history(analyst, 0):
            key = tuple(content)
            seen = groups.setdefault(key, [0, row_id])  # type: ignore[arg-type]
            seen[0] += 1
        return [(*key, n, first) for key, (n, first) in groups.items()]

    @abstractmethod
    def written(self, row_id: int) -> tuple[str, float] | None:
        """(analyst, time) of the charge with that id, or None when there is none: whether a charge
        this process wrote is still there (a ledger never moves backwards)."""

    @abstractmethod
    def insert(self, row: tuple[object, ...]) -> int:
        """Write one charge (values in CHARGE_FIELDS order) in the open transaction; its id."""

    @abstractmethod
    def last_charge(self, analyst: str, excluding_plan_hash: str) -> tuple[str, str, str, str, str] | None:
        """(params, eps_num, eps_den, delta_num, delta_den) of the analyst's most recent charge
        whose plan_hash is not ``excluding_plan_hash``, or None when there is none."""

    @abstractmethod
    def replay_find(self, analyst: str, key: str, since: float) -> tuple[float, str] | None:
        """(time, answer) of the analyst's kept answer under ``key`` released at or after
        ``since`` (unix seconds), or None (replay.py in dpsql/execution says what is kept)."""

    @abstractmethod
    def replay_keep(self, analyst: str, key: str, time: float, answer: str, since: float) -> None:
        """Keep ``answer`` (released at ``time``) under ``key`` unless an answer released at or
        after ``since`` is kept there already (the first release in a window stays), and forget
        the analyst's answers released before ``since``; in one transaction of its own."""

    @abstractmethod
    def rows(self, analyst: str | None) -> list[ChargeRow]:
        """Every charge (of one analyst, or of all) in id order: (id, *CHARGE_FIELDS)."""

    @abstractmethod
    def verify(self) -> None:
        """Raise LedgerError unless the storage is still the ledger that was opened."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection; idempotent."""

    def describe(self) -> str:
        """Where the ledger is, safe to log (no password)."""
        return "in memory" if self.path is None else str(self.path)


def new_ledger_id() -> str:
    """A random identity written once into a new ledger and compared at every charge."""
    return secrets.token_hex(16)


def analyst_lock_key(analyst: str) -> int:
    """A signed 64-bit key per analyst, the same on every host (Python's hash() is salted).

    A collision only makes two analysts' charges queue behind each other.
    """
    digest = hashlib.blake2b(analyst.encode("utf-8"), digest_size=8, person=b"dpsql-ledger").digest()
    return int.from_bytes(digest, "big", signed=True)


def is_postgres_url(target: object) -> bool:
    """True for a ``postgresql://`` or ``postgres://`` URL (only a str: a Path would lose the //)."""
    return isinstance(target, str) and target.strip().lower().startswith(POSTGRES_SCHEMES)


def redact(target: object) -> str:
    """A ledger target for logs and messages: a URL without its password, a path as is."""
    if not is_postgres_url(target):
        return "in memory" if target is None or str(target) == ":memory:" else str(target)
    parts = urlsplit(str(target).strip())
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hosts = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:***@{hosts}" if ":" in userinfo else f"{user}@{hosts}"
    query = [(k, "***" if k.lower() in ("password", "sslpassword") else v) for k, v in parse_qsl(parts.query)]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="*"), ""))

"""Replayed answers: the same analyst's same statement, over the same policy and data, within the
policy's window (`[budget] replay_seconds`), gets the answer released before, unchanged and free.

Why it is free (docs/privacy-model.md, "Replayed answers"): the answer was released to this
analyst, and charged, when it was first computed. Giving the same analyst the same values again
is post-processing of that release: it reveals nothing the analyst does not hold already, so it
costs nothing under any accountant. Fresh noise on a repeat would be a new release, and is
charged: that is what the analyst pays for once the window has passed. A repeat-averaging attack
(send a statement many times, average the noise away) gets the same values every time.

What keys an answer (`Replays.key`): the statement's plan (its canonical form, ir/identity.py,
without the SQL text it was compiled from: what is computed, over which declared tables and
bounds, with which noise, epsilon and bound parameter values; two spellings of one plan, or the
plan under EXPLAIN, are one statement), the policy's version (a digest of all of it), the data's
version (backend/engines/data_version.py: the files read, by size and modification time; an in-memory
frame by this process's counter) and the analyst (a column of its own). A session whose data has
no version (remote sources, Spark catalog tables) keeps its answers in memory, for itself only; a
session with `random_seed` (tests) neither replays nor keeps.

Where answers are kept: in the ledger's storage (a `replays` table beside the charges, SQLite or
PostgreSQL), so every connection and every server process of the analyst sharing that ledger
replays them. An answer is kept only after its charge committed and its answer was computed: a
kept answer always has its charge; a crash in between leaves a charge without a kept answer, and
the next identical statement is simply charged again (the safe direction). The first answer
released in a window stays: two connections racing on the same new statement are both charged,
and later repeats get the first one's values. The ledger holds no row for a replay (nothing was
charged); the answer says it was replayed (EXPLAIN, the notice, the renderer).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from dataclasses import dataclass

from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import Ledger
from dpsql.catalog.policy import Policy
from dpsql.errors import LedgerError
from dpsql.execution.replay_codec import Unstorable, dumps, loads
from dpsql.ir.identity import canonical_form
from dpsql.result import NoisyResult, Replay

log = logging.getLogger("dpsql.replay")
VERSION = b"dpsql-replay-1"
MAX_KEPT_CHARS = 4 * 1024 * 1024  # a larger answer is not kept (its repeats are charged)
MAX_LOCAL = 256  # answers a session keeps for itself (data without a file version)


def now() -> float:
    """The wall clock (unix seconds); tests move it to pass a window."""
    return time.time()


@dataclass(frozen=True, slots=True)
class ReplayScope:
    """What a session's answers are kept under besides the statement and the analyst."""

    window: float  # seconds an answer is given again after its release; 0: never
    policy: str  # the policy's version (policy_version)
    data: str | None  # the data's version; None: the session's own answers only, in memory


def policy_version(policy: Policy) -> str | None:
    """A digest of the whole policy (where its file lies left out: the same content anywhere);
    None when it cannot be computed (then nothing is replayed)."""
    try:
        form = canonical_form(dataclasses.replace(policy, path=None))
    except TypeError:
        return None
    return hashlib.sha256(b"dpsql-policy-1\x1f" + form.encode("utf-8", "surrogatepass")).hexdigest()


def scope_for(policy: Policy, data: str | None, seeded: bool) -> ReplayScope | None:
    """A session's scope: None (no replay) with a random seed, a zero window or a policy without
    a version."""
    version = policy_version(policy)
    if seeded or version is None or policy.budget.replay_seconds <= 0:
        return None
    return ReplayScope(float(policy.budget.replay_seconds), version, data)


class Replays:
    """One session's replays: its analyst, ledger and scope (None: off)."""

    def __init__(self, ledger: Ledger | None, analyst: str, scope: ReplayScope | None, reason: str | None = None) -> None:
        self._ledger = ledger
        self._analyst = analyst
        self.scope = scope
        self.reason = reason  # why replays are off (EXPLAIN), when they are; None: EXPLAIN says nothing (a seeded session)
        self._local: dict[str, tuple[float, str]] = {}

    @property
    def enabled(self) -> bool:
        return self.scope is not None and self.scope.window > 0

    def key(self, *parts: object) -> str | None:
        """The key of a statement given as its plan values (a plan; a post-processing query and its
        plans); None when replays are off."""
        scope = self.scope
        if scope is None or scope.window <= 0:
            return None
        digest = hashlib.sha256(VERSION)
        for part in (canonical_form(*(_textless(part) for part in parts)), scope.policy, scope.data or "session"):
            digest.update(b"\x1f" + part.encode("utf-8", "surrogatepass"))
        return digest.hexdigest()

    def find(self, key: str | None) -> NoisyResult | None:
        """The kept answer under `key`, marked replayed and free; None when there is none."""
        found = self._kept(key)
        if found is None:
            return None
        released_at, text = found
        try:
            answer = loads(text)
        except Unstorable:
            log.warning("a kept answer could not be read; the statement is answered anew")
            return None
        return dataclasses.replace(answer, cost=PrivacyCost.zero(), replay=Replay(released_at, answer.cost))

    def released_at(self, key: str | None) -> float | None:
        """When the answer kept under `key` was released (EXPLAIN), or None."""
        found = self._kept(key)
        return None if found is None else found[0]

    def keep(self, key: str | None, result: NoisyResult) -> None:
        """Keep a just released (and charged) answer. A storage failure only means it is not kept."""
        scope = self.scope
        if key is None or scope is None or result.kind != "query" or result.replay is not None:
            return
        try:
            text = dumps(result)
        except Unstorable:
            return
        if len(text) > MAX_KEPT_CHARS:
            return
        released = now()
        since = released - scope.window
        if scope.data is None or self._ledger is None:
            kept = self._local.get(key)
            if kept is None or kept[0] < since:
                if len(self._local) >= MAX_LOCAL:
                    self._local.pop(next(iter(self._local)))
                self._local[key] = (released, text)
            return
        try:
            self._ledger.keep_replay(self._analyst, key, released, text, since)
        except LedgerError:
            log.warning("an answer could not be kept for replay; its repeats will be charged")

    def explain_lines(self, key: str | None) -> list[str]:
        """EXPLAIN's line about replay for a statement with this key (none when off without a reason)."""
        scope = self.scope
        if key is None or scope is None:
            if self.reason is None:
                return []
            return [f"Replay: off{self.reason}; every run of this statement is charged and noised anew"]
        window = _duration(scope.window)
        released = self.released_at(key)
        if released is not None:
            return [f"Replay: replayed: the answer released to you at {_utc(released)} is given again, unchanged and "
                    f"free, until {_utc(released + scope.window)} (no data is read, nothing is charged)"]
        mine = " in this session" if scope.data is None else ""
        return [f"Replay: the answer will be kept {window}{mine}: this statement again (same parameters, policy and data) "
                "gets it again, unchanged and free"]

    def _kept(self, key: str | None) -> tuple[float, str] | None:
        scope = self.scope
        if key is None or scope is None:
            return None
        since = now() - scope.window
        if scope.data is None or self._ledger is None:
            kept = self._local.get(key)
            if kept is None or kept[0] < since:
                return None
            if self._ledger is not None:
                self._ledger.check()  # the ledger fails closed, for replays kept in memory too
            return kept
        return self._ledger.replayed(self._analyst, key, since)


def _textless(value: object) -> object:
    """A plan (or post-processing query, or tuple of them) without the SQL text it was compiled
    from: what it computes already identifies the statement, and the text differs between spellings
    of one statement (whitespace, case, the `EXPLAIN` in front of it)."""
    if isinstance(value, tuple):
        return tuple(_textless(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = {field.name for field in dataclasses.fields(value)}
        if "sql" in names:
            return dataclasses.replace(value, sql="")
        query = value.query if "query" in names else None  # type: ignore[attr-defined]
        if dataclasses.is_dataclass(query):
            return dataclasses.replace(value, query=_textless(query))
    return value


def _utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def _duration(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        hours = int(seconds // 3600)
        return f"for {hours} hour{'s' if hours != 1 else ''}"
    if seconds >= 60 and seconds % 60 == 0:
        minutes = int(seconds // 60)
        return f"for {minutes} minute{'s' if minutes != 1 else ''}"
    return f"for {seconds:g} second{'s' if seconds != 1 else ''}"

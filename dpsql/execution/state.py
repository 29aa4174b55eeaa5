"""A session's state: what it sets, and what it derives from compiled statements while running them.

Compiled statements are immutable values (execution/compiled.py) that several sessions may hold.
What one session learns about one (its engine SQL rendered for this session's engine, the robust
requests for that engine's capabilities, whether its dry runs passed on this engine, its ledger
entry, the released tables' schemas of a post-processing query) is kept here, in one typed record
per statement, by the session's Executor. All of it is derived from the statement, the policy
and the engine alone (no data, nothing random), so keeping it changes no answer and no refusal.
Records live as long as their statement does (weak keys: the session's plan cache decides).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field

from sqlglot import exp

from dpsql.accounting.cost import PrivacyCost
from dpsql.backend.auxiliary.released_db import ReleasedTable
from dpsql.backend.sql.engine_dialects import render
from dpsql.backend.sql.robust_sql import RobustQuery
from dpsql.execution.charge import PlannedCharge
from dpsql.execution.compiled import CompiledPost, CompiledQuery
from dpsql.result import NoiseInfo, ResultColumn


@dataclass(eq=False)
class QueryState:
    """One session's record of one CompiledQuery."""

    dialect: str
    capabilities: frozenset[str]
    texts: dict[exp.Expr, str] = field(default_factory=dict)
    robust: tuple[RobustQuery, ...] | None = None
    dry_runs_passed: bool = False
    charge: PlannedCharge | None = None
    noise: tuple[NoiseInfo | None, ...] | None = None  # noise_info's plan-only part
    post: tuple[ReleasedTable, str] | None = None  # the released aggregates' schema and the post-processing SQL over it
    replay_key: str | None = None  # execution/replay.py (None: replays off), once `replay_keyed`
    replay_keyed: bool = False

    def text(self, select: exp.Expr) -> str:
        """A statement's SQL text for this session's engine, rendered once. Keyed by the statement
        (sqlglot caches its hash; the lookup finds the same object first)."""
        found = self.texts.get(select)
        if found is None:
            found = self.texts[select] = render(select, self.dialect)
        return found


@dataclass(eq=False)
class PostState:
    """One session's record of one CompiledPost (its releases have their own QueryState)."""

    tables: tuple[ReleasedTable, ...] | None = None  # the released tables' schemas (no rows)
    outer_sql: str | None = None
    outer_columns: tuple[ResultColumn, ...] | None = None  # checked over empty released tables (DP127)
    charge: PlannedCharge | None = None
    replay_key: str | None = None  # execution/replay.py (None: replays off), once `replay_keyed`
    replay_keyed: bool = False


class SessionState:
    """Everything a session sets or derives while it runs statements: its default per-query budget
    (SET dpsql.epsilon / dpsql.delta) and one record per compiled statement it has met."""

    def __init__(self, dialect: str, capabilities: frozenset[str], default_budget: PrivacyCost) -> None:
        self.dialect = dialect
        self.capabilities = capabilities
        self.default_budget = default_budget
        self._queries: weakref.WeakKeyDictionary[CompiledQuery, QueryState] = weakref.WeakKeyDictionary()
        self._posts: weakref.WeakKeyDictionary[CompiledPost, PostState] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()  # EXPLAIN and cost_of may run outside the session's lock

    def query(self, compiled: CompiledQuery) -> QueryState:
        """This session's record of a compiled query (a fresh one on first sight)."""
        with self._lock:
            found = self._queries.get(compiled)
            if found is None:
                found = self._queries[compiled] = QueryState(self.dialect, self.capabilities)
            return found

    def post(self, compiled: CompiledPost) -> PostState:
        """This session's record of a compiled post-processing query (a fresh one on first sight)."""
        with self._lock:
            found = self._posts.get(compiled)
            if found is None:
                found = self._posts[compiled] = PostState()
            return found

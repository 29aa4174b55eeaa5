"""The only caller of the engine: statements over private data, dry runs, and the public or
released-value statements around them.

Private data are read only here, and only through the session's bounded relation of a table,
whose secret seed is drawn once per session and table (see backend/engines/engine.py for why caching
it is private). Released values and public domain tables go to the engine's local DuckDB.
"""

from __future__ import annotations

import atexit
import threading
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from dpsql.backend.engines.engine import BackendFailure, Engine, EngineResult, bounded_name, keyed_name
from dpsql.catalog.policy import Table
from dpsql.errors import Error
from dpsql.ir.join import JoinedTable
from dpsql.mechanisms.rng import RandomSource

if TYPE_CHECKING:
    import numpy

SEED_BOUND = 2**62


class Preparation:
    """One table's bounded relation, built in a background thread from connect on.

    Its error (a sanitized dpsql error: the engine's own text never leaves Engine) is kept, not
    lost, and raised by the first query that needs the relation, after that query's own charge,
    exactly where building it there would have raised; nothing is charged for the background work
    itself, and the error is raised once (a later query builds the relation again)."""

    def __init__(self, engine: Engine, table: Table, seed: int) -> None:
        self.error: Error | None = None
        self._engine, self._table, self._seed = engine, table, seed
        self.thread = threading.Thread(target=self._run, name=f"dpsql-prepare-{table.name}", daemon=True)

    def _run(self) -> None:
        try:
            self._engine.prepare_dry_runs()
            self._engine.ensure_bounded(self._table, self._seed)
        except Error as error:  # EngineError/CatalogError, already sanitized by Engine
            self.error = error
        except BackendFailure:  # never expected here (Engine sanitizes); the query rebuilds it
            pass


_PREPARING: weakref.WeakSet[EngineCalls] = weakref.WeakSet()


@atexit.register
def _stop_preparations() -> None:
    """At interpreter exit, stop background preparations of sessions never closed: a daemon thread
    still inside DuckDB when the interpreter finalises aborts the process ("terminate called
    after throwing an instance of ''", then SIGABRT)."""
    for calls in list(_PREPARING):
        calls.close()


class EngineCalls:
    """A session's engine, as execution uses it."""

    def __init__(self, engine: Engine, rng: RandomSource) -> None:
        self.engine = engine
        self._rng = rng
        self.seeds: dict[str, int] = {}
        self._preparing: dict[str, Preparation] = {}
        self.prepared_at_connect: set[str] = set()

    def prepare(self, tables: list[Table]) -> None:
        """Start building these tables' bounded relations in the background (connect time). The
        seeds are drawn here, in this thread and in policy order, so a seeded session stays
        deterministic; the relation is the one the first query would build (same seed, same SQL)."""
        for table in tables:
            if table.name not in self.seeds:
                self.seeds[table.name] = self._rng.randbelow(SEED_BOUND)
            job = Preparation(self.engine, table, self.seeds[table.name])
            self._preparing[table.name] = job
            self.prepared_at_connect.add(table.name)
            _PREPARING.add(self)
            job.thread.start()

    def preparation_state(self, table: Table) -> str:
        """For EXPLAIN: how the table's bounded relation is (being) built (no data: timing only).

        With a database shared by the process's sessions (the server) the text is the same
        whatever exists: whether a relation is built would show what other connections ran
        (backend/engines/shared_duckdb.py)."""
        if self.engine.shared is not None:
            if isinstance(table, JoinedTable):
                return ("built once for this analyst's connections, by the first of their queries that reads it (other "
                        "analysts build their own)")
            return "shared by every connection of this process: built at startup, or by the first query that reads it"
        job = self._preparing.get(table.name)
        if job is not None and job.thread.is_alive():
            return "being prepared in the background since connect (the query waits for the rest)"
        if self.engine.has_relation(bounded_name(table)):
            return "prepared at connect" if table.name in self.prepared_at_connect else "prepared by an earlier query"
        return "built by the first query that reads it"

    def keyed_state(self, table: Table, keys: tuple[str, ...]) -> str:
        """For EXPLAIN: whether the keyed relation of a grouping exists yet (no data: timing only);
        with a shared database, the same text whatever exists (see preparation_state)."""
        if self.engine.shared is not None:
            return ("built once for this analyst's connections, by the first of their queries that groups by these "
                    "columns, after the bounded relation (other analysts build their own)")
        if self.engine.has_relation(keyed_name(table, keys)):
            return "built by an earlier query"
        return "built by the first query that groups by these columns, after the bounded relation (once per session)"

    def _wait(self, table: Table) -> None:
        job = self._preparing.pop(table.name, None)
        if job is None:
            return
        job.thread.join()
        if job.error is not None:
            raise job.error

    def close(self) -> None:
        """Stop background preparation (interrupt the engine's statement) before the engine closes."""
        jobs = [job for job in self._preparing.values() if job.thread.is_alive()]
        if jobs:
            self.engine.interrupt()
        for job in jobs:
            job.thread.join()
        self._preparing.clear()

    @property
    def dialect(self) -> str:
        return self.engine.dialect

    @property
    def capabilities(self) -> frozenset[str]:
        return self.engine.capabilities

    # --- private data (after the charge) -------------------------------------------------------
    def bounded(self, table: Table) -> str:
        """The session's bounded relation of a table (its secret seed drawn once per session). A
        join's private tables are bounded first, each with its own seed, then the joined rows."""
        if isinstance(table, JoinedTable):
            for part in table.private_parts:
                self.bounded(part)
        self._wait(table)
        if table.name not in self.seeds:
            self.seeds[table.name] = self._rng.randbelow(SEED_BOUND)
        return self.engine.ensure_bounded(table, self.seeds[table.name])

    def keyed(self, table: Table, keys: tuple[str, ...]) -> str:
        """The session's keyed relation of a table and grouping-column set (its own secret seed,
        drawn once per session, table and key set: the kept keys agree across the session's queries)."""
        self.bounded(table)
        slot = "\x00".join((table.name, *keys))
        if slot not in self.seeds:
            self.seeds[slot] = self._rng.randbelow(SEED_BOUND)
        return self.engine.ensure_keyed(table, keys, self.seeds[table.name], self.seeds[slot])

    def run(self, sql: str, params: Mapping[str, Any] | None = None) -> EngineResult:
        """One engine statement over bounded relations (rendered for this engine)."""
        return self.engine.run(sql, params)

    def private_arrays(self, select: exp.Expr) -> dict[str, numpy.ndarray]:
        """A statement over a bounded relation, as numpy columns (the Median Mechanism's histogram)."""
        return self.engine.private_arrays(select)

    # --- before the charge: no data ------------------------------------------------------------
    def dry_run(self, table: Table, select: exp.Expr, params: Mapping[str, Any] | None = None, keys: tuple[str, ...] = (),
                text: str | None = None) -> None:
        """A statement as it will run (over the bounded relation of `table`, or its keyed relation
        of `keys`; `text`: its rendered SQL, when the caller has it), over empty tables of the same
        schema: query-only errors, uncharged."""
        self.engine.dry_run(table, select, params, keys, text)

    # --- public data ---------------------------------------------------------------------------------
    def run_public(self, tree: exp.Expr, tables: tuple[Table, ...]) -> EngineResult:
        return self.engine.run_public(tree, tables)

    def describe_public(self, tree: exp.Expr, tables: tuple[Table, ...]) -> EngineResult:
        return self.engine.describe_public(tree, tables)

    def ensure_public_table(self, name: str, create: exp.Create) -> str:
        return self.engine.ensure_public_table(name, create)

    def public_arrays(self, select: exp.Expr) -> dict[str, numpy.ndarray] | None:
        return self.engine.public_arrays(select)

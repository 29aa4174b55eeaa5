"""One DuckDB database for every session of a process (the server), so a private table is bounded
once per server instead of once per connection.

BI tools open several connections (a pool) and reconnect often; with a database per session each
connection paid the bounding pass again on its first query (about 0.7 s at 10M rows, 15 s at
100M) and held its own copy of the bounded relation in memory. Here every session reads through
its own DuckDB connection to one in-memory database (`connection()`: its temporary views, dry-run
tables, public-domain tables and statements stay its own), and the bounded and keyed relations
are ordinary tables of that database, each built once by the first session that needs it
(`once`) and read by all. The server also starts building the bounded relations at startup, so
the first query of the first connection waits only for what is left (`prepare`).

Privacy. A bounded (or keyed) relation is a stable per-person transformation of the data for a
fixed secret seed (backend/engines/engine.py, plan_sql.keyed_select); it does not matter which session's
query triggers it, nor that several analysts' queries read the same one: each query is still
charged to its analyst before it reads anything, and its noise is its own. The seeds here are
drawn once per relation from the operating system's CSPRNG, never from a session's source (a
seeded test session never shares).

Isolation between analysts. Only the bounded relations of the policy's own tables are shared by
everyone (they depend on the policy alone, and the server builds them at startup). A relation
that exists because of a query (a join's rows, whose name hashes the join and its IN-subqueries'
literals, and the keyed relation of a GROUP BY column set) is built in a schema of the analyst
(`scope`): their own connections share it, another analyst's query builds its own and never
finds it built, so neither its timing nor anything else tells one analyst what another ran. A
session's temporary views and dry-run tables are its connection's own; its DuckDB search path
reads its analyst's schema, then the shared one. EXPLAIN does not say whether a shared relation
exists yet (execution/engine_calls.py). What one analyst can still observe of another is the
load they put on the machine: the startup build of the policy's tables finishing, concurrent
queries slowing each other down, and the shared memory limit.
"""

from __future__ import annotations

import atexit
import hashlib
import secrets
import threading
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import duckdb
from sqlglot import exp

from dpsql.backend.engines.dry_duckdb import open_database
from dpsql.backend.engines.engine import BackendFailure, bounded_name
from dpsql.backend.sql.engine_dialects import render
from dpsql.catalog.policy import Policy, Table
from dpsql.errors import CatalogError, Error

DIALECT = "duckdb"
SEED_BOUND = 2**62
DB_ALIAS = "__dpsql_db"  # the attached database file (read only)
SHARED_SCHEMA = "main"  # the policy's tables' bounded relations, shared by every analyst
ANALYST_SCHEMA = "__dpsql_analyst_"  # + a digest of the analyst's name: the relations their queries create


def configure(connection: duckdb.DuckDBPyConnection, policy: Policy) -> None:
    """The settings every dpsql DuckDB database gets (all database-wide in DuckDB)."""
    # DuckDB 2.0 rewrites `row_number() OVER (PARTITION BY unit ...) <= k` into a per-unit
    # top-N aggregate that is 1.7-2.6x slower for contribution bounding (bench/).
    connection.execute("SET disabled_optimizers = 'top_n_window_elimination'")
    # The policy's resource limits ([engine]): one session cannot take the whole machine.
    # temp_directory: larger-than-memory sorts, joins and aggregates spill there instead of
    # failing at memory_limit (a 100M-row table bounded under 4GB).
    for setting, value in (("memory_limit", policy.engine.memory_limit), ("threads", policy.engine.threads),
                           ("temp_directory", policy.engine.temp_directory)):
        if value is not None:
            connection.execute(render(exp.Set(expressions=[exp.SetItem(this=exp.EQ(
                this=exp.var(setting), expression=exp.Literal.string(str(value)) if isinstance(value, str) else exp.Literal.number(value)))]),
                DIALECT))


# Settings for building the session's relations (bounded, keyed), restored after each one:
# - preserve_insertion_order = false: the rows of a relation may be stored in any order (every
#   statement over them aggregates, and order-sensitive steps order by values explicitly), so
#   DuckDB inserts in parallel without re-ordering: 10-20% of the bounding pass at 10M rows.
# - perfect_ht_threshold = 24: GROUP BY a dense integer unit (ids spanning < 2^24, from the column
#   statistics) counts rows per person in an array instead of a hash table: the count per person
#   of bounding took 4x less at 10M rows. Connection-wide it would also size warm queries' tables.
# Neither changes what a statement computes, only how, so the relations and answers are the same.
MATERIALIZE_SETTINGS: Mapping[str, Any] = {"preserve_insertion_order": False, "perfect_ht_threshold": 24}


def current_settings(connection: duckdb.DuckDBPyConnection, names: Mapping[str, Any]) -> dict[str, Any]:
    """The current values of these settings."""
    current = exp.select(*[exp.func("current_setting", exp.Literal.string(s)) for s in names])
    return dict(zip(names, connection.execute(render(current, DIALECT)).fetchall()[0]))


def attach_statement(database: Path) -> str:
    """ATTACH the data owner's database file read only, under DB_ALIAS."""
    return render(exp.Attach(this=exp.alias_(exp.Literal.string(str(database)), DB_ALIAS),
                             expressions=[exp.AttachOption(this=exp.var("READ_ONLY"))]), DIALECT)


class SharedDuckDB:
    """The process's database, its shared relations and their seeds (see the module doc)."""

    def __init__(self, policy: Policy, database: str | Path | None = None) -> None:
        self.policy = policy
        self.root = duckdb.connect(":memory:")
        configure(self.root, policy)
        self.defaults = current_settings(self.root, MATERIALIZE_SETTINGS)  # before any session toggles them
        self.database = Path(database).expanduser().resolve() if database else None
        if self.database is not None:
            if not self.database.exists():
                self.root.close()
                raise CatalogError(f"database file not found: {self.database}", code="DP002")
            failed = None
            try:
                self.root.execute(attach_statement(self.database))  # once: attachments are database-wide
            except duckdb.Error as err:
                failed = type(err).__name__
            if failed is not None:  # outside the except block: the engine's error is not kept as __context__
                self.root.close()
                raise CatalogError(f"could not open the data source ({failed})", code="DP002")
        self._guard = threading.Lock()
        # The relations every analyst shares: the bounded relations of the policy's private tables.
        self.shared_names = frozenset(bounded_name(t) for t in policy.tables.values() if not t.public)
        self._schemas: set[str] = set()
        self._locks: dict[str, threading.Lock] = {}
        self._built: set[str] = set()
        self._seeds: dict[str, int] = {}
        self._preparing: threading.Thread | None = None
        self._stop: Callable[[], None] | None = None
        self._closed = False

    def connection(self) -> duckdb.DuckDBPyConnection:
        """A session's own connection to the shared database."""
        return self.root.cursor()

    def scope(self, analyst: str | None) -> SharedScope:
        """An analyst's view of the database (its schema created once): what their sessions use."""
        schema = ANALYST_SCHEMA + hashlib.sha256((analyst or "").encode()).hexdigest()[:16]
        with self._guard:
            if schema not in self._schemas:
                self.root.execute(render(exp.Create(this=exp.to_identifier(schema, quoted=True), kind="SCHEMA", exists=True),
                                         DIALECT))
                self._schemas.add(schema)
        return SharedScope(self, schema)

    def seed(self, name: str) -> int:
        """The secret seed of a shared relation, drawn once from the OS CSPRNG."""
        with self._guard:
            if name not in self._seeds:
                self._seeds[name] = secrets.randbelow(SEED_BOUND)
            return self._seeds[name]

    def has(self, name: str) -> bool:
        """Whether the relation is built (no data read; for EXPLAIN)."""
        with self._guard:
            return name in self._built

    def once(self, name: str, build: Callable[[], None]) -> None:
        """Build the relation unless it is built: one builder at a time per relation, the others
        wait for it. A failed build leaves it unbuilt (the next caller builds it again)."""
        with self._guard:
            lock = self._locks.setdefault(name, threading.Lock())
        with lock:
            if self.has(name):
                return
            build()
            with self._guard:
                self._built.add(name)

    def prepare(self, tables: list[Table], run: Callable[[Table], object], stop: Callable[[], None]) -> None:
        """Build these tables' bounded relations in a background thread (server startup). Errors
        are dropped: the first query that needs a relation builds it again and reports its own."""

        def work() -> None:
            try:
                open_database()  # the dry runs' database (backend/engines/dry_duckdb.py), before any query
            except duckdb.Error:
                pass  # the first dry run opens it again, and reports its own error
            for table in tables:
                if self._closed:
                    return
                try:
                    run(table)
                except (Error, BackendFailure):  # sanitized; a query rebuilds the relation and reports its own
                    continue

        self._stop = stop
        self._preparing = threading.Thread(target=work, name="dpsql-server-prepare", daemon=True)
        _OPEN.add(self)
        self._preparing.start()

    def wait_prepared(self) -> None:
        """Wait until the startup preparation has finished (benchmarks, tests)."""
        if self._preparing is not None:
            self._preparing.join()

    def stop_preparing(self) -> None:
        """Interrupt and wait for the startup preparation (idempotent)."""
        self._closed = True
        if self._preparing is not None and self._preparing.is_alive():
            if self._stop is not None:
                self._stop()
            self._preparing.join()

    def close(self) -> None:
        """Stop the startup preparation, then close the database (every session must be closed)."""
        self.stop_preparing()
        self.root.close()


class SharedScope:
    """One analyst's sessions' view of the shared database (SharedRelations for the engine): the
    policy's tables' bounded relations are everyone's (schema main), every other relation is built
    in the analyst's schema, keyed and seeded per analyst (see the module doc)."""

    def __init__(self, shared: SharedDuckDB, schema: str) -> None:
        self.shared = shared
        self.schema = schema
        self.policy = shared.policy
        self.database = shared.database
        self.defaults = shared.defaults
        self._building: list[str] = []  # the schema of the relation being built now (its tables go there)

    def _place(self, name: str) -> str:
        return SHARED_SCHEMA if name in self.shared.shared_names else self.schema

    def _key(self, name: str) -> str:
        place = self._place(name)
        return name if place == SHARED_SCHEMA else f"{place}.{name}"

    def connection(self) -> duckdb.DuckDBPyConnection:
        """A session's own connection, reading its analyst's schema first, then the shared one."""
        connection = self.shared.connection()
        path = exp.Set(expressions=[exp.SetItem(this=exp.EQ(this=exp.var("search_path"),
                                                            expression=exp.Literal.string(f"{self.schema},{SHARED_SCHEMA}")))])
        connection.execute(render(path, DIALECT))
        return connection

    def seed(self, name: str) -> int:
        """The relation's secret seed (per analyst for the analyst's relations)."""
        return self.shared.seed(self._key(name))

    def has(self, name: str) -> bool:
        """Whether the relation is built, for this analyst."""
        return self.shared.has(self._key(name))

    def once(self, name: str, build: Callable[[], None]) -> None:
        """Build the relation unless built (SharedDuckDB.once), its tables in its schema (`target`)."""
        place = self._place(name)

        def placed() -> None:
            self._building.append(place)
            try:
                build()
            finally:
                self._building.pop()

        self.shared.once(self._key(name), placed)

    def target(self) -> str:
        """The schema the tables of the relation being built go to."""
        return self._building[-1] if self._building else SHARED_SCHEMA


_OPEN: weakref.WeakSet[SharedDuckDB] = weakref.WeakSet()


@atexit.register
def _stop_preparations() -> None:
    """At interpreter exit, stop startup preparations never stopped: a daemon thread still inside
    DuckDB when the interpreter finalises aborts the process."""
    for shared in list(_OPEN):
        shared.stop_preparing()

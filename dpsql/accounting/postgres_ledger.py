"""The PostgreSQL store of the ledger: one budget shared by several servers (psycopg 3).

Why an advisory lock per analyst rather than SERIALIZABLE with retries: a check-and-charge reads
one analyst's total and inserts one row, so exactly the charges of the same analyst conflict.
``pg_advisory_xact_lock(key(analyst))`` queues those and only those (other analysts charge in
parallel), and needs no retry loop: SERIALIZABLE would abort one of two racing charges with a
serialization failure, and a retry after an ambiguous COMMIT could charge twice, while under
contention near the budget limit retries can starve. The lock is safe only because the
transaction runs at READ COMMITTED (set explicitly, whatever the server's default): each
statement takes a new snapshot, so the total read after the lock is granted includes every
charge committed before it (PostgreSQL publishes a commit before it releases the committer's
locks). At REPEATABLE READ the snapshot would predate the wait. The lock is released at COMMIT
or ROLLBACK, and by the server when the client's session ends (a killed process);
``idle_in_transaction_session_timeout`` bounds how long a frozen client can hold it.

A COMMIT that returned is durable (``synchronous_commit = on`` for this session, whatever the
server's default), so a process killed after a charge loses nothing. The ledger's random id,
written once in ``dpsql_ledger``, is checked inside every charge: a dropped and recreated ledger,
or a URL that now reaches another database, fails closed. A broken connection raises
LedgerError for the operation that met it (nothing is retried: the query is not run) and is
reopened by the next one. Every psycopg error becomes LedgerError, without the server's text.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from dpsql.accounting.store import (
    CHARGE_FIELDS,
    SCHEMA_VERSION,
    ChargeRow,
    GroupRow,
    HistoryRow,
    LedgerStore,
    analyst_lock_key,
    new_ledger_id,
    redact,
)
from dpsql.errors import LedgerError

if TYPE_CHECKING:
    import psycopg

    _Connection = psycopg.Connection[tuple[Any, ...]]

MISSING_DRIVER = (
    "a postgresql:// ledger needs psycopg 3: install the postgres extra (pip install 'dpsql[postgres]')"
)
# One key for creating the schema, so that servers starting together do not race on CREATE TABLE.
_SCHEMA_LOCK_KEY = analyst_lock_key("\x00dpsql ledger schema")
# Connection settings a URL may override (libpq keywords).
_CONNECT_DEFAULTS = {"connect_timeout": "10", "keepalives": "1", "keepalives_idle": "30",
                     "keepalives_interval": "10", "keepalives_count": "3",
                     "application_name": "dpsql-ledger"}  # fmt: skip
_SESSION_SETTINGS = (
    "SET synchronous_commit = on",
    "SET idle_in_transaction_session_timeout = '60s'",
    "SET statement_timeout = '60s'",
)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS dpsql_ledger (version INTEGER NOT NULL, ledger_id TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS dpsql_charges (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, analyst TEXT NOT NULL,
        session TEXT NOT NULL, time DOUBLE PRECISION NOT NULL, query TEXT NOT NULL,
        plan_hash TEXT NOT NULL, mechanism TEXT NOT NULL, params TEXT NOT NULL,
        eps_num TEXT NOT NULL, eps_den TEXT NOT NULL, delta_num TEXT NOT NULL, delta_den TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS dpsql_charges_by_analyst ON dpsql_charges (analyst, id)",
    # Answers kept for replay (dpsql/execution/replay.py), one per analyst and key.
    """CREATE TABLE IF NOT EXISTS dpsql_replays (
        analyst TEXT NOT NULL, key TEXT NOT NULL, time DOUBLE PRECISION NOT NULL, answer TEXT NOT NULL,
        PRIMARY KEY (analyst, key))""",
)
_FIELDS = ", ".join(CHARGE_FIELDS)
_INSERT = f"INSERT INTO dpsql_charges ({_FIELDS}) VALUES ({', '.join(['%s'] * len(CHARGE_FIELDS))}) RETURNING id"
_SELECT = f"SELECT id, {_FIELDS} FROM dpsql_charges"
_SUMMARY = "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM dpsql_charges WHERE analyst = %s"
_HISTORY = (
    "SELECT id, params, eps_num, eps_den, delta_num, delta_den FROM dpsql_charges "
    "WHERE analyst = %s AND id > %s ORDER BY id"
)
# Identical charges (a repeated query) grouped: a cold rebuild composes each group once.
_GROUPS = (
    "SELECT params, eps_num, eps_den, delta_num, delta_den, COUNT(*), MIN(id) FROM dpsql_charges WHERE analyst = %s "
    "GROUP BY params, eps_num, eps_den, delta_num, delta_den"
)
_LAST = ("SELECT params, eps_num, eps_den, delta_num, delta_den FROM dpsql_charges WHERE analyst = %s AND plan_hash != %s "
         "ORDER BY id DESC LIMIT 1")
_REPLAY_FIND = "SELECT time, answer FROM dpsql_replays WHERE analyst = %s AND key = %s AND time >= %s"
_REPLAY_FORGET = "DELETE FROM dpsql_replays WHERE analyst = %s AND time < %s"
# The first answer released in a window stays; an expired one is replaced.
_REPLAY_KEEP = ("INSERT INTO dpsql_replays (analyst, key, time, answer) VALUES (%s, %s, %s, %s) ON CONFLICT (analyst, key) "
                "DO UPDATE SET time = EXCLUDED.time, answer = EXCLUDED.answer WHERE dpsql_replays.time < %s")
_GONE = "the budget ledger database is not the one opened (dropped or replaced); the query was not run"


def _psycopg() -> Any:
    """psycopg 3, or a LedgerError naming the extra that installs it (imported only for a URL)."""
    try:
        import psycopg
    except ImportError as err:
        raise LedgerError(MISSING_DRIVER) from err
    return psycopg


class PostgresStore(LedgerStore):
    """The ledger's tables in the PostgreSQL database a ``postgresql://`` URL names.

    The tables (``dpsql_ledger``, ``dpsql_charges``) are created in the first schema of the
    connection's search_path when missing (``?options=-csearch_path%3Dledger`` picks another).

    Raises:
        LedgerError: psycopg is missing, the server cannot be reached, or the database holds
            another schema version.
    """

    def __init__(self, url: str) -> None:
        psycopg = _psycopg()
        self._psycopg = psycopg
        self.driver_errors = (psycopg.Error,)
        self._url = url
        self._closed = False
        self._charging = False
        try:
            params = psycopg.conninfo.conninfo_to_dict(url)
            self._params = {**_CONNECT_DEFAULTS, **{k: v for k, v in params.items() if v is not None}}
            self._conn = self._connect()
            with self._conn.transaction():
                self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK_KEY,))
                self._ledger_id = self._create_schema()
        except psycopg.Error as err:
            if getattr(self, "_conn", None) is not None:
                self._conn.close()
            # The URL without its password: the operator's own setting, never data.
            raise LedgerError(f"the budget ledger {redact(url)} could not be opened") from err
        except LedgerError:
            self._conn.close()
            raise

    def describe(self) -> str:
        return redact(self._url)

    @contextmanager
    def charging(self, analyst: str) -> Iterator[None]:
        conn = self._connection()
        self._charging = True  # no reconnecting inside: every statement must run under the lock
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (analyst_lock_key(analyst),))
                self._check_identity()
                yield
        finally:
            self._charging = False

    def summary(self, analyst: str) -> tuple[int, int]:
        row = self._connection().execute(_SUMMARY, (analyst,)).fetchone()
        assert row is not None  # an aggregate without GROUP BY returns one row
        count, max_id = row
        return int(count), int(max_id)

    def history(self, analyst: str, after_id: int) -> list[HistoryRow]:
        return self._connection().execute(_HISTORY, (analyst, after_id)).fetchall()

    def history_groups(self, analyst: str) -> list[GroupRow]:
        return [(*row[:5], int(row[5]), int(row[6])) for row in self._connection().execute(_GROUPS, (analyst,)).fetchall()]

    def insert(self, row: tuple[object, ...]) -> int:
        result = self._connection().execute(_INSERT, row).fetchone()
        assert result is not None
        return int(result[0])

    def written(self, row_id: int) -> tuple[str, float] | None:
        row = self._connection().execute("SELECT analyst, time FROM dpsql_charges WHERE id = %s", (row_id,)).fetchone()
        return None if row is None else (str(row[0]), float(row[1]))

    def last_charge(self, analyst: str, excluding_plan_hash: str) -> tuple[str, str, str, str, str] | None:
        row = self._connection().execute(_LAST, (analyst, excluding_plan_hash)).fetchone()
        return None if row is None else (row[0], row[1], row[2], row[3], row[4])

    def replay_find(self, analyst: str, key: str, since: float) -> tuple[float, str] | None:
        row = self._connection().execute(_REPLAY_FIND, (analyst, key, since)).fetchone()
        return None if row is None else (float(row[0]), str(row[1]))

    def replay_keep(self, analyst: str, key: str, time: float, answer: str, since: float) -> None:
        conn = self._connection()
        with conn.transaction():
            self._check_identity()
            conn.execute(_REPLAY_FORGET, (analyst, since))
            conn.execute(_REPLAY_KEEP, (analyst, key, time, answer, since))

    def rows(self, analyst: str | None) -> list[ChargeRow]:
        if analyst is None:
            return self._connection().execute(f"{_SELECT} ORDER BY id").fetchall()
        return self._connection().execute(f"{_SELECT} WHERE analyst = %s ORDER BY id", (analyst,)).fetchall()

    def verify(self) -> None:
        self._connection()
        self._check_identity()

    def close(self) -> None:
        self._closed = True
        self._conn.close()

    def _connect(self) -> _Connection:
        conn: _Connection = self._psycopg.connect(**self._params, autocommit=True)
        try:
            # Explicit, whatever the server's default: the advisory lock relies on READ COMMITTED.
            conn.isolation_level = self._psycopg.IsolationLevel.READ_COMMITTED
            for statement in _SESSION_SETTINGS:
                conn.execute(statement)
        except BaseException:
            conn.close()
            raise
        return conn

    def _connection(self) -> _Connection:
        """The open connection; a broken one is replaced between operations, never inside a
        charge (the caller's operation then re-verifies the identity)."""
        if self._closed:
            raise LedgerError("the budget ledger is closed")
        if not self._charging and (self._conn.closed or self._conn.broken):
            self._conn.close()
            self._conn = self._connect()
        return self._conn

    def _check_identity(self) -> None:
        rows = self._conn.execute("SELECT version, ledger_id FROM dpsql_ledger").fetchall()
        if rows != [(SCHEMA_VERSION, self._ledger_id)]:
            raise LedgerError(_GONE)

    def _create_schema(self) -> str:
        for statement in _SCHEMA:
            self._conn.execute(statement)
        rows = self._conn.execute("SELECT version, ledger_id FROM dpsql_ledger").fetchall()
        if not rows:
            rows = [(SCHEMA_VERSION, new_ledger_id())]
            self._conn.execute("INSERT INTO dpsql_ledger (version, ledger_id) VALUES (%s, %s)", rows[0])
        if len(rows) != 1:
            raise LedgerError("the budget ledger has an invalid identity")
        if rows[0][0] != SCHEMA_VERSION:
            raise LedgerError("the budget ledger has an unsupported schema version")
        return str(rows[0][1])

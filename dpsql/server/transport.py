"""The asyncio transport of `dpsql serve`: sockets, TLS and threads around PgConnection.

Each authenticated connection gets one Session (`open_session(..., analyst=<user>,
ledger=<the server's ledger>)`), so every answer is charged to that analyst's budget in one
shared ledger: a SQLite file, or a PostgreSQL database that several servers share. Protocol work
(and so the Session's blocking engine calls) runs in a thread pool; the event loop only moves
bytes. The transport enforces the connection limit and the authentication timeout of `[server]`
(the message caps and timeouts of statements are the protocol's and the catalog's).
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import itertools
import logging
import os
import ssl
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from dpsql.accounting.ledger import Ledger, open_ledger, redact
from dpsql.catalog.loader import load_policy
from dpsql.catalog.policy import Policy, ServerSettings
from dpsql.server import codec
from dpsql.server.catalog_emulation import CatalogEmulation
from dpsql.server.protocol import PgConnection, ServerContext
from dpsql.session import Session, SessionOptions, choose_ledger, open_shared, start_spark

log = logging.getLogger("dpsql.server")
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5433
READ_SIZE = 64 * 1024
REFUSAL_LINGER = 2.0  # seconds a refused connection is drained, so the client reads the refusal


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Where the policy, data and ledger are, and where to listen."""

    policy: Path
    database: Path | None = None
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    ledger: str | Path | None = None  # a SQLite file, or a postgresql:// URL (a str)
    tls_cert: Path | None = None
    tls_key: Path | None = None
    workers: int = 32
    engine: str = "duckdb"
    spark_master: str | None = None
    spark_remote: str | None = None
    # Overrides of the policy's [server] limits (the CLI's flags); None keeps the policy's value.
    max_connections: int | None = None
    authentication_timeout: float | None = None
    statement_timeout: float | None = None

    def limits(self, policy: Policy) -> ServerSettings:
        """The policy's [server] limits with this config's overrides."""
        overrides = {key: getattr(self, key) for key in ("max_connections", "authentication_timeout", "statement_timeout")}
        return dataclasses.replace(policy.server, **{k: v for k, v in overrides.items() if v is not None})

    @property
    def ledger_path(self) -> str | Path:
        """The shared ledger when the policy fixes none: --ledger (a file or a postgresql:// URL),
        else `<policy stem>.ledger.sqlite` beside the policy (see `ledger_for`).

        Never in-memory: a per-connection ledger would hand out a fresh budget on every login.
        """
        if self.ledger is not None:
            return self.ledger
        return self.policy.with_name(self.policy.stem + ".ledger.sqlite")

    def ledger_for(self, policy: Policy) -> str | Path:
        """The ledger the server charges: the policy's `[budget] ledger` if the data owner fixed
        one (a different --ledger is refused), else `ledger_path`."""
        chosen = choose_ledger(policy, self.ledger, self.ledger_path)
        assert not isinstance(chosen, Ledger)
        return chosen if chosen is not None else self.ledger_path


def build_context(config: ServerConfig, policy: Policy | None = None) -> ServerContext:
    """Load the policy once and wire the per-analyst Session factory."""
    loaded = policy if policy is not None else load_policy(config.policy)
    # One Ledger for the whole server: concurrent connections of an analyst then queue on its
    # lock instead of SQLite's busy-wait backoff (p99 tails in bench/server.py); BEGIN IMMEDIATE
    # still guards against other processes sharing the file (or the advisory lock, other servers
    # sharing a PostgreSQL ledger).
    ledger = open_ledger(config.ledger_for(loaded))
    # One SparkSession for the server, started before the first login; each connection's Session
    # gets its own child session (temp views, settings) and bounded relations.
    spark = start_spark(config.spark_master, config.spark_remote) if config.engine == "spark" else None

    # DuckDB: one database for every connection, so each private table is bounded once per server
    # (not once per login: BI tools open pools of connections and reconnect often), starting now
    # in the background; each connection reads it through its own DuckDB connection.
    shared = open_shared(loaded, config.database) if config.engine == "duckdb" else None
    def close() -> None:
        if shared is not None:
            shared.close()

    def session_for(analyst: str) -> Session:
        # No background bounding per connection: the shared database prepares the tables once.
        return SessionOptions(config.database, loaded, analyst=analyst, ledger=ledger, engine=config.engine, spark=spark,
                              prepare=False, shared=shared).open()

    limits = config.limits(loaded)
    return ServerContext(loaded, CatalogEmulation(loaded, limits), session_for, tls=config.tls_cert is not None, limits=limits,
                         close=close, wait_prepared=shared.wait_prepared if shared is not None else None)


def _tls_context(config: ServerConfig) -> ssl.SSLContext | None:
    if config.tls_cert is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(config.tls_cert), str(config.tls_key) if config.tls_key else None)
    return context


class PgServer:
    """A running server: `await start()`, then `port`; `await stop()` closes it."""

    def __init__(self, config: ServerConfig, context: ServerContext | None = None) -> None:
        self.config = config
        self.context = context if context is not None else build_context(config)
        self._tls = _tls_context(config)
        self._pool = ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="dpsql-conn")
        self._pids = itertools.count(os.getpid() * 1000 % 2**30 + 1)
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._open = 0  # connections being served (logged in or not), for max_connections
        self._refusing = 0  # refused connections still lingering (at most max_connections)
        self.port = config.port

    async def start(self) -> None:
        """Listen (port 0 picks a free port; `port` holds the one bound)."""
        self._server = await asyncio.start_server(self._handle, self.config.host, self.config.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def serve_forever(self) -> None:
        """Serve until cancelled."""
        assert self._server is not None
        async with self._server:
            await self._server.serve_forever()

    async def stop(self) -> None:
        """Stop listening, end open connections and release their Sessions."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._pool.shutdown(wait=True)
        self.context.emulation.close()
        if self.context.close is not None:
            self.context.close()

    @property
    def connections(self) -> int:
        """Connections being served now (logged in or not)."""
        return self._open

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            if self._open >= self.context.limits.max_connections:
                await self._refuse(reader, writer)
                return
            self._open += 1
            try:
                await self._serve(reader, writer)
            finally:
                self._open -= 1
        finally:
            self._tasks.discard(task)  # last: stop() waits for every task still in the set

    async def _refuse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """FATAL 53300 to a connection over max_connections, then close it (PostgreSQL's answer).

        The refusal is sent at once (libpq reads it as the answer to its SSLRequest or startup
        packet); what the client sends meanwhile is read and dropped for a moment, so closing does
        not reset the connection before the client has read the refusal.
        """
        limit = self.context.limits.max_connections
        try:
            writer.write(codec.error_response("53300", f"sorry, too many clients already (max_connections = {limit})",
                                              severity="FATAL"))
            await writer.drain()
            writer.write_eof()
            if self._refusing < limit:  # a flood of refused sockets is closed at once
                self._refusing += 1
                try:
                    await self._drain_for(reader, REFUSAL_LINGER)
                finally:
                    self._refusing -= 1
        except (ConnectionError, ssl.SSLError, OSError, TimeoutError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, OSError, asyncio.CancelledError):
                pass

    @staticmethod
    async def _drain_for(reader: asyncio.StreamReader, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while (remaining := deadline - loop.time()) > 0:
            if not await asyncio.wait_for(reader.read(READ_SIZE), remaining):
                return

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        connection = PgConnection(self.context, next(self._pids))
        login_deadline = loop.time() + self.context.limits.authentication_timeout
        try:
            while True:
                if connection.authenticated:
                    data = await reader.read(READ_SIZE)
                else:
                    data = await self._read_before_login(reader, writer, login_deadline - loop.time())
                if not data:
                    break
                out = await loop.run_in_executor(self._pool, connection.receive, data)
                writer.write(bytes(out.data))
                await writer.drain()
                if out.start_tls and self._tls is not None:
                    # The handshake counts against the login time too (a stalled one is dropped).
                    await asyncio.wait_for(writer.start_tls(self._tls), max(0.0, login_deadline - loop.time()))
                if out.close:
                    break
        except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError, TimeoutError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            try:
                await loop.run_in_executor(self._pool, connection.close)
                writer.close()
                await writer.wait_closed()
            except (ConnectionError, ssl.SSLError, RuntimeError, asyncio.CancelledError):
                pass

    async def _read_before_login(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, remaining: float) -> bytes:
        """Read before the login completes; past authentication_timeout (counted from the accept),
        FATAL 57014 and b"" (close): a socket that never logs in holds no slot for long."""
        try:
            if remaining <= 0:
                raise TimeoutError
            return await asyncio.wait_for(reader.read(READ_SIZE), remaining)
        except TimeoutError:
            writer.write(codec.error_response("57014", "canceling authentication due to timeout", severity="FATAL"))
            await writer.drain()
            return b""


class ServerThread:
    """A server on its own event loop in a background thread (tests, benchmarks, embedding)."""

    def __init__(self, config: ServerConfig) -> None:
        self.server = PgServer(config)
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="dpsql-server", daemon=True)

    @property
    def port(self) -> int:
        """The bound port."""
        return self.server.port

    def start(self) -> ServerThread:
        """Start and wait until the server listens."""
        self._thread.start()
        self._started.wait()
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self.server.start())
        except BaseException as err:  # noqa: BLE001 - reported to the starting thread
            self._error = err
            self._started.set()
            return
        self._started.set()
        self._loop.run_forever()

    def stop(self) -> None:
        """Stop the server and its thread."""
        if not self._thread.is_alive():
            return
        future = asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop)
        future.result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def run(config: ServerConfig) -> None:
    """Serve until interrupted, logging where."""
    server = PgServer(config)
    await server.start()
    # What start-up built (modules, the policy, sqlglot's dialect tables: ~150k objects) lives as
    # long as the process: out of the cyclic collector's full passes, which otherwise stall a
    # query for 50-80 ms every hundred or so (measured on a stream of 200 distinct queries).
    gc.freeze()
    tls = "TLS available" if config.tls_cert else "no TLS"
    log.warning("dpsql serve: listening on %s:%d (%s); ledger %s", config.host, server.port, tls,
                redact(config.ledger_for(server.context.policy)))
    try:
        await server.serve_forever()
    finally:
        await server.stop()

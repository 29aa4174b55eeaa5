"""One pgwire connection as a sans-IO state machine: bytes in, bytes out, a Session behind it.

Startup -> SCRAM-SHA-256 -> ready. Statements go to the catalog emulation (probes, SET/SHOW,
transaction no-ops) or to the analyst's Session; this module holds no privacy logic, rewrites no
analyst SQL and does no budget arithmetic. Describe answers from `Session.describe` (plan only:
it never runs a private query or charges). Blocking work (the Session) happens inside
`receive`, so the caller runs it off the event loop.
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dpsql import errors
from dpsql.backend.engines.watchdog import WATCHDOG
from dpsql.catalog.policy import Policy, ServerSettings
from dpsql.errors import ServerError
from dpsql.render import rounded
from dpsql.result import CI_SUFFIXES, NoisyResult
from dpsql.server import codec, noise_report, pgtypes, scram, session_views
from dpsql.server import pg_catalog as pgc
from dpsql.server.backends import BackendRegistry, signal_call, signal_pid
from dpsql.server.catalog_emulation import Answer, CatalogEmulation, ClientState
from dpsql.server.statements import Utility, is_empty, split_statements, utility
from dpsql.session import Session

log = logging.getLogger("dpsql.server")
NO_DATA = "NO_DATA"
CI_COLUMNS = "dpsql.ci_columns"
ROUND = "dpsql.round"  # released values rounded to their interval's precision (render.rounded)
CONNECTION_SETTINGS = (CI_COLUMNS, ROUND)  # the connection's own dpsql settings, defaults in [server]
_CURSOR_KINDS = frozenset({"declare", "fetch", "move", "close"})
CANCEL_REPEAT = 0.05  # seconds between the interrupts of a cancelled statement


@dataclass
class ServerContext:
    """What every connection of one server shares."""

    policy: Policy
    emulation: CatalogEmulation
    open_session: Callable[[str], Session]
    tls: bool = False
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    limits: ServerSettings = field(default_factory=ServerSettings)
    close: Callable[[], None] | None = None  # releases what the connections shared (after they ended)
    wait_prepared: Callable[[], None] | None = None  # waits for the startup preparation (benchmarks, tests)
    backends: BackendRegistry = field(default_factory=BackendRegistry)  # logged-in connections by pid (cancel)
    last: session_views.LastAnswers = field(default_factory=session_views.LastAnswers)  # dpsql.last_query, per analyst


@dataclass
class Output:
    """What `receive` asks the transport to do: send bytes, then maybe start TLS or close."""

    data: bytearray = field(default_factory=bytearray)
    start_tls: bool = False
    close: bool = False


@dataclass
class Prepared:
    """A Parse'd statement."""

    sql: str
    param_types: tuple[int, ...]
    inferred: tuple[int, ...] | None = None  # inferred parameter OIDs, once asked


@dataclass
class Portal:
    """A Bind'ed statement: parameters, result formats, and once run, its answer."""

    statement: Prepared
    params: list[Any]
    formats: tuple[int, ...]
    columns: tuple[tuple[str, int], ...] | None = None
    answer: Answer | None = None
    sent: int = 0


class PgConnection:
    """The protocol state of one client connection."""

    def __init__(self, context: ServerContext, pid: int) -> None:
        self.ctx = context
        self.pid = pid
        self.key = secrets.randbits(31)
        self.decoder = codec.Decoder(context.limits.max_message_bytes)
        self.state = "startup"
        self.client: ClientState | None = None
        self.session: Session | None = None
        self.tx = "I"
        self._scram: scram.ScramServer | None = None
        self._known_user = False
        self._skip_to_sync = False
        self._statements: dict[str, Prepared] = {}
        self._portals: dict[str, Portal] = {}
        self._cursors: dict[str, Portal] = {}  # DECLAREd cursors over released answers
        # Cancellation from another thread (a CancelRequest, or pg_cancel_backend from the analyst's
        # other connection): only while a Session statement runs, so it never lands on the next one.
        self._cancel_lock = threading.Lock()
        self._running = False
        self._cancelled = False
        self._terminate = False

    @property
    def authenticated(self) -> bool:
        """Whether the client has logged in (the transport's authentication timeout stops here)."""
        return self.state == "ready"

    # --- input ------------------------------------------------------------------------------------
    def receive(self, data: bytes) -> Output:
        """Handle received bytes; return what to send and what to do next."""
        out = Output()
        self.decoder.feed(data)
        try:
            for message in self.decoder.messages():
                if self._terminate:
                    self._fatal(out, "57P01", "terminating connection due to pg_terminate_backend()")
                    break
                self._dispatch(message, out)
                if out.close or out.start_tls:
                    break
        except codec.ProtocolViolation as err:
            self._fatal(out, "08P01", str(err))
        return out

    @property
    def user(self) -> str | None:
        """The analyst logged in on this connection (None before the login)."""
        return self.client.user if self.client is not None and self.state == "ready" else None

    def cancel_running(self, terminate: bool) -> None:
        """Stop the Session statement running now, if any (it ends in 57014); `terminate` also
        closes the connection at its next message. Called from another connection's thread.

        A statement has several engine steps (the bounded relation, the plan, post-processing),
        and one may start after the interrupt: the interrupt is repeated until the statement ends."""
        with self._cancel_lock:
            self._terminate = self._terminate or terminate
            if not self._running or self.session is None or self._cancelled:
                return
            self._cancelled = True
        threading.Thread(target=self._interrupt_until_done, name="dpsql-cancel", daemon=True).start()

    def _interrupt_until_done(self) -> None:
        while True:
            with self._cancel_lock:
                if not self._running or self.session is None:
                    return
                self.session.interrupt()
            time.sleep(CANCEL_REPEAT)

    def close(self) -> None:
        """Release the Session (idempotent)."""
        self.ctx.backends.remove(self)
        if self.session is not None:
            self.session.close()
            self.session = None

    def _dispatch(self, message: codec.FrontendMessage, out: Output) -> None:
        if self.state == "startup":
            self._startup(message, out)
        elif self.state in ("sasl_first", "sasl_final"):
            self._authenticate(message, out)
        elif isinstance(message, codec.Terminate):
            out.close = True
        elif self._skip_to_sync and not isinstance(message, codec.Sync):
            return
        else:
            self._ready(message, out)

    # --- startup and authentication -------------------------------------------------------------
    def _startup(self, message: codec.FrontendMessage, out: Output) -> None:
        if isinstance(message, codec.SSLRequest):
            if self.ctx.tls and self.decoder.pending:
                # Bytes sent before the TLS handshake would be read as if they came through TLS
                # (CVE-2021-23214): PostgreSQL refuses them too.
                self._fatal(out, "08P01", "received unencrypted data after SSL request")
                return
            out.data += b"S" if self.ctx.tls else b"N"
            out.start_tls = self.ctx.tls
            self.decoder.expect_startup()
            return
        if isinstance(message, codec.GSSEncRequest):
            out.data += b"N"
            self.decoder.expect_startup()
            return
        if isinstance(message, codec.CancelRequest):
            self.ctx.backends.cancel_request(message.pid, message.key)  # answered by closing, as PostgreSQL does
            out.close = True
            return
        if not isinstance(message, codec.Startup):
            out.close = True  # garbage
            return
        user = message.parameters.get("user", "")
        if not user:
            self._fatal(out, "28000", "no user name specified in the startup packet")
            return
        self.client = ClientState(user=user, database=message.parameters.get("database") or user, pid=self.pid)
        try:
            self._apply_startup_settings(message.parameters)
        except errors.Error as err:
            self._fatal(out, err.sqlstate, _message(err))
            return
        unsupported = [name for name in message.parameters if name.startswith("_pq_.")]
        if message.version & 0xFFFF or unsupported:  # a newer 3.x or protocol options: answer in 3.0
            out.data += codec.negotiate_protocol_version(0, unsupported)
        analyst = self.ctx.policy.analysts.get(user)
        verifier = None
        if analyst is not None and analyst.password:
            try:
                verifier = scram.parse_verifier(analyst.password)
            except scram.ScramError:
                log.warning("analyst %r has an invalid SCRAM verifier in the policy; login refused", user)
        self._known_user = verifier is not None
        # Unknown users get a mock exchange: a failed login looks the same whether or not the user exists.
        self._scram = scram.ScramServer(verifier or scram.mock_verifier(self.ctx.secret, user))
        out.data += codec.auth_sasl([scram.MECHANISM])
        self.state = "sasl_first"

    def _apply_startup_settings(self, parameters: dict[str, str]) -> None:
        assert self.client is not None
        for name, value in parameters.items():
            if name in ("user", "database", "replication") or name.startswith("_pq_."):
                continue
            if name == "options":
                for item in _startup_options(value):
                    self.client.set(*item)
                continue
            self.client.set(name, value)

    def _authenticate(self, message: codec.FrontendMessage, out: Output) -> None:
        assert self._scram is not None and self.client is not None
        if not isinstance(message, codec.PasswordData):
            self._fatal(out, "08P01", "expected a SASL response")
            return
        try:
            if self.state == "sasl_first":
                mechanism, initial = codec.parse_sasl_initial(message.payload)
                if mechanism != scram.MECHANISM:
                    self._fatal(out, "28000", f"SASL mechanism {mechanism!r} is not supported; use SCRAM-SHA-256")
                    return
                out.data += codec.auth_sasl_continue(self._scram.first(initial))
                self.state = "sasl_final"
                return
            final = self._scram.final(message.payload)
        except codec.ProtocolViolation:
            self._fatal(out, "08P01", "malformed SASL message")  # the framing, the same for every user
            return
        except scram.ScramError:
            final = None
        if final is None or not self._known_user:
            self._fatal(out, "28P01", f'password authentication failed for user "{self.client.user}"')
            return
        self._login(final, out)

    def _login(self, server_final: bytes, out: Output) -> None:
        assert self.client is not None
        try:
            self.session = self.ctx.open_session(self.client.user)
        except errors.Error as err:
            self._fatal(out, err.sqlstate, _message(err))
            return
        self.decoder.authenticated()
        out.data += codec.auth_sasl_final(server_final) + codec.auth_ok()
        self.client.settings["session_authorization"] = self.client.user
        for name in pgc.REPORTED_SETTINGS:
            value = self.client.setting(name)
            if value is not None:
                out.data += codec.parameter_status(name, value)
        out.data += codec.backend_key_data(self.pid, self.key) + codec.ready_for_query("I")
        self.state = "ready"
        self.ctx.backends.add(self)

    def _fatal(self, out: Output, sqlstate: str, text: str) -> None:
        out.data += codec.error_response(sqlstate, text, severity="FATAL")
        out.close = True

    # --- ready: simple and extended query -------------------------------------------------------
    def _ready(self, message: codec.FrontendMessage, out: Output) -> None:
        handlers: dict[type, Callable[[Any, Output], None]] = {
            codec.Query: self._simple_query, codec.Parse: self._parse, codec.Bind: self._bind,
            codec.Describe: self._describe, codec.Execute: self._execute, codec.Close: self._close,
            codec.Sync: self._sync, codec.Flush: lambda m, o: None,
        }  # fmt: skip
        handler = handlers.get(type(message))
        try:
            if handler is None:
                kind = getattr(message, "type", type(message).__name__)
                raise ServerError("0A000", f"protocol message {kind!r} is not supported by dpsql (COPY and function calls are not)")
            handler(message, out)
        except Exception as err:  # noqa: BLE001 - every failure becomes an ErrorResponse, never a dropped connection
            self._error(out, err)
            if not isinstance(message, codec.Query):
                self._skip_to_sync = True

    def _error(self, out: Output, err: BaseException, offset: int = 0) -> None:
        if self.tx == "T":
            self.tx = "E"
        if isinstance(err, errors.Error):
            position = err.span.start + 1 + offset if err.span is not None else None
            out.data += codec.error_response(err.sqlstate, _message(err), hint=err.hint, position=position)
            return
        log.exception("internal error while answering a client")
        out.data += codec.error_response("XX000", f"internal error ({type(err).__name__}); see the server log")

    def _simple_query(self, message: codec.Query, out: Output) -> None:
        statements = list(split_statements(message.sql))
        if not statements:
            out.data += codec.empty_query_response()
        for offset, sql in statements:
            try:
                answer = self._run(sql, [])
            except Exception as err:  # noqa: BLE001
                self._error(out, err, offset)
                break
            if answer.columns:
                out.data += codec.row_description([_field(n, oid, 0) for n, oid in answer.columns])
            self._send_rows(out, answer, answer.columns, (0,), 0, len(answer.rows))
            if answer.notice:
                out.data += codec.notice_response(answer.notice)
            out.data += codec.command_complete(answer.tag)
        out.data += codec.ready_for_query(self.tx)

    def _parse(self, message: codec.Parse, out: Output) -> None:
        if message.name and message.name in self._statements:
            raise ServerError("42P05", f'prepared statement "{message.name}" already exists')
        self._statements[message.name] = Prepared(message.sql, message.param_types)
        out.data += codec.parse_complete()

    def _bind(self, message: codec.Bind, out: Output) -> None:
        statement = self._statement(message.statement)
        if len(statement.param_types) > len(message.params):
            raise ServerError("08P01", f"bind message supplies {len(message.params)} parameters, "
                              f"but prepared statement requires {len(statement.param_types)}")  # fmt: skip
        types = self._param_types(statement, len(message.params))
        formats = _expand(message.param_formats, len(message.params))
        try:
            params = [pgtypes.decode_parameter(oid, value, fmt) for oid, value, fmt in zip(types, message.params, formats, strict=True)]
        except ValueError as err:
            raise errors.ParameterError(f"invalid parameter value: {err}", code="DP118") from None
        self._portals[message.portal] = Portal(statement, params, message.result_formats)
        out.data += codec.bind_complete()

    def _describe(self, message: codec.Describe, out: Output) -> None:
        if message.kind == "S":
            statement = self._statement(message.name)
            count = max(len(statement.param_types), _placeholder_count(statement.sql))
            types = self._param_types(statement, count)
            columns = self._columns(statement.sql, None, count)  # first: a failure sends no partial answer
            out.data += codec.parameter_description(types)
            formats: tuple[int, ...] = (0,)
        else:
            portal = self._portal(message.name)
            if portal.columns is None:
                portal.columns = self._columns(portal.statement.sql, portal.params, len(portal.params))
            columns, formats = portal.columns, portal.formats
        if not columns:
            out.data += codec.no_data()
            return
        out.data += codec.row_description([_field(n, oid, f) for (n, oid), f in zip(columns, _expand(formats, len(columns)), strict=True)])

    def _execute(self, message: codec.Execute, out: Output) -> None:
        portal = self._portal(message.portal)
        if portal.answer is None:
            if is_empty(portal.statement.sql):
                out.data += codec.empty_query_response()
                return
            portal.answer = self._run(portal.statement.sql, portal.params)
        answer = portal.answer
        columns = portal.columns if portal.columns else answer.columns
        end = len(answer.rows) if message.max_rows <= 0 else min(len(answer.rows), portal.sent + message.max_rows)
        self._send_rows(out, answer, columns, portal.formats, portal.sent, end)
        portal.sent = end
        if end < len(answer.rows):
            out.data += codec.portal_suspended()
        else:
            if answer.notice:
                out.data += codec.notice_response(answer.notice)
            out.data += codec.command_complete(answer.tag)

    def _close(self, message: codec.Close, out: Output) -> None:
        (self._statements if message.kind == "S" else self._portals).pop(message.name, None)
        out.data += codec.close_complete()

    def _sync(self, message: codec.Sync, out: Output) -> None:
        self._skip_to_sync = False
        self._portals.pop("", None)
        out.data += codec.ready_for_query(self.tx)

    def _statement(self, name: str) -> Prepared:
        statement = self._statements.get(name)
        if statement is None:
            raise ServerError("26000", f'prepared statement "{name}" does not exist')
        return statement

    def _portal(self, name: str) -> Portal:
        portal = self._portals.get(name) or self._cursors.get(name)
        if portal is None:
            raise ServerError("34000", f'portal "{name}" does not exist')
        return portal

    # --- statements ---------------------------------------------------------------------------------
    def _run(self, sql: str, params: Sequence[Any]) -> Answer:
        """Answer one statement: a utility, a catalog probe, or the Session's."""
        assert self.client is not None and self.session is not None
        if is_empty(sql):
            return Answer((), [], "EMPTY")
        command = utility(sql)
        if self.tx == "E" and (command is None or command.kind not in ("commit", "rollback")):
            raise ServerError("25P02", "current transaction is aborted, commands ignored until end of transaction block")
        if command is not None and command.kind in _CURSOR_KINDS:
            return self._cursor(command, params)
        if command is not None and not _is_session_setting(command):
            return self._utility(command)
        route, tree = self.ctx.emulation.route(sql) if command is None else ("session", None)
        signal = signal_call(tree) if route == "catalog" else None
        if signal is not None:  # SQL Lab's Stop: the analyst's own statement only
            pid = signal_pid(signal, params, self.pid)
            done = pid is not None and self.ctx.backends.signal(self.client.user, pid, signal.terminate)
            rows: list[tuple[Any, ...]] = [] if signal.from_activity and not done else [(done,)]
            return Answer(((signal.output, pgtypes.BOOL),), rows, f"SELECT {len(rows)}")
        if route == "catalog" and tree is not None:
            return self.ctx.emulation.query(tree, self.client, params)  # bounded by the catalog's own limits
        if route == "views" and tree is not None:
            columns, rows = session_views.query(tree, self.session, self.ctx.last.get(self.client.user), self.ctx.limits, params,
                                                round_values=self._round)
            return Answer(columns, rows, f"SELECT {len(rows)}")
        with self._cancellable(), _statement_timeout(self.ctx.limits.statement_timeout, self.session.interrupt):
            result = self.session.execute(sql, list(params))
        if result.kind == "probe":  # a column probe: the columns, no rows, and a notice saying why
            answer = _answer(result, False)
            return Answer(answer.columns, [], "SELECT 0", result.message)
        if result.kind != "query":
            return _answer(result, False)
        self.ctx.last.set(self.client.user, session_views.LastStatement(sql, result))
        round_values = self._round
        answer = _answer(rounded(result) if round_values else result, self._ci_columns)
        left = self.session.queries_like(result.replay.cost if result.replay is not None else None)
        return Answer(answer.columns, answer.rows, answer.tag, noise_report.notice_text(
            result, self.session.remaining, left, round_values))

    @contextmanager
    def _cancellable(self) -> Iterator[None]:
        """Run a Session statement that another connection may cancel (57014 then, whatever the
        statement answered: the charge it made stays)."""
        with self._cancel_lock:
            self._running, self._cancelled = True, False
        error: errors.Error | None = None
        try:
            yield
        except errors.Error as err:
            error = err
        finally:
            with self._cancel_lock:
                self._running = False
                cancelled = self._cancelled
        if cancelled:
            raise ServerError("57014", "canceling statement due to user request")  # outside the except: no chained engine error
        if error is not None:
            raise error

    @property
    def _ci_columns(self) -> bool:
        """`SET dpsql.ci_columns = on`: `<col>_ci95`, `<col>_ci_low` and `<col>_ci_high` after each noisy column
        (default: `[server] ci_columns`)."""
        return self._flag(CI_COLUMNS, self.ctx.limits.ci_columns)

    @property
    def _round(self) -> bool:
        """`SET dpsql.round = on`: released values rounded to their interval's precision (default: `[server] round`)."""
        return self._flag(ROUND, self.ctx.limits.round)

    def _flag(self, name: str, default: bool) -> bool:
        assert self.client is not None
        value = self.client.setting(name)
        return default if value is None else value.strip().lower() in _ON

    def _cursor(self, command: Utility, params: Sequence[Any]) -> Answer:
        """DECLARE runs its query once (charged, noised and released like any other); FETCH and
        MOVE then page through that released answer, forward only, and CLOSE drops it."""
        if command.kind == "close":
            if command.name is None:
                self._cursors.clear()
            elif self._cursors.pop(command.name, None) is None:
                raise ServerError("34000", f'cursor "{command.name}" does not exist')
            return Answer((), [], command.tag)
        if command.name is None or command.value is None:
            raise ServerError("42601", f"{command.tag} statement not accepted by dpsql: expected DECLARE name CURSOR FOR query, "
                                       "FETCH [FORWARD] [count | ALL] [FROM] name, or CLOSE name")  # fmt: skip
        if command.kind == "declare":
            if command.name in self._cursors:
                raise ServerError("42P03", f'cursor "{command.name}" already exists')
            answer = self._run(command.value, params)
            if not answer.columns:
                raise ServerError("42601", "DECLARE CURSOR not accepted by dpsql: the cursor's statement must return rows")
            self._cursors[command.name] = Portal(Prepared(command.value, ()), list(params), (0,), answer.columns, answer)
            return Answer((), [], command.tag, answer.notice)
        cursor = self._cursors.get(command.name)
        if cursor is None or cursor.answer is None:
            raise ServerError("34000", f'cursor "{command.name}" does not exist')
        if command.value == "BACKWARD":
            raise ServerError("0A000", f"{command.tag} not accepted by dpsql: cursors move forward only (FETCH [FORWARD] count | ALL)")
        rows = cursor.answer.rows
        end = len(rows) if command.value == "ALL" else min(len(rows), cursor.sent + int(command.value))
        start, cursor.sent = cursor.sent, end
        if command.kind == "move":
            return Answer((), [], f"MOVE {end - start}")
        return Answer(cursor.answer.columns, rows[start:end], f"FETCH {end - start}")

    def _utility(self, command: Utility) -> Answer:  # noqa: C901 - the pgwire state machine: one branch per utility command
        assert self.client is not None
        if command.kind == "begin":
            self.tx = "T"
        elif command.kind in ("commit", "rollback"):
            tag = "ROLLBACK" if self.tx == "E" else command.tag
            self.tx = "I"
            return Answer((), [], tag)
        elif command.kind == "set" and (command.name or "").lower() in CONNECTION_SETTINGS and command.value is not None:
            name = (command.name or "").lower()
            if command.value.strip().lower() == "default":  # the server's default ([server])
                self.client.settings.pop(name, None)
            else:
                self.client.set(name, _on_off(command.value, name))
        elif command.kind == "reset" and (command.name or "").lower() in CONNECTION_SETTINGS:
            self.client.settings.pop((command.name or "").lower(), None)
        elif command.kind == "show" and (command.name or "").lower().startswith("dpsql."):
            assert self.session is not None
            name = command.name.lower()  # type: ignore[union-attr]
            return Answer(((name, pgtypes.TEXT),), [(session_views.show(name, self.session, self._ci_columns, self._round),)],
                          "SHOW")
        elif command.kind == "set" and command.name is not None and command.value is not None:
            value = pgc.DEFAULT_SETTINGS.get(command.name, "") if command.value.upper() == "DEFAULT" else command.value
            self.client.set(command.name, value)
        elif command.kind == "reset" and command.name is not None:
            if command.name.upper() == "ALL":
                self.client.settings.update(pgc.DEFAULT_SETTINGS)
            elif command.name in pgc.DEFAULT_SETTINGS:
                self.client.set(command.name, pgc.DEFAULT_SETTINGS[command.name])
        elif command.kind == "show" and command.name is not None:
            return self.ctx.emulation.show(command.name, self.client)
        elif command.kind == "deallocate" and command.name is not None:
            if command.name.upper() == "ALL":
                self._statements.clear()
            else:
                self._statements.pop(command.name, None)
        return Answer((), [], command.tag)

    def _columns(self, sql: str, params: Sequence[Any] | None, count: int) -> tuple[tuple[str, int], ...]:
        """The columns a statement returns, without running a private query or charging."""
        assert self.client is not None and self.session is not None
        if is_empty(sql):
            return ()
        command = utility(sql)
        if command is not None and not _is_session_setting(command):
            return self._utility_columns(command)
        route, tree = self.ctx.emulation.route(sql) if command is None else ("session", None)
        signal = signal_call(tree) if route == "catalog" else None
        if signal is not None:
            return ((signal.output, pgtypes.BOOL),)
        if route == "catalog" and tree is not None:
            # Metadata only: running the probe is harmless (no data, no budget).
            if params is None:
                return self.ctx.emulation.query(tree, self.client, [None] * count, describe_only=True).columns
            return self.ctx.emulation.query(tree, self.client, params).columns
        if route == "views" and tree is not None:
            values = [None] * count if params is None else list(params)
            return session_views.query(tree, self.session, None, self.ctx.limits, values, describe_only=True)[0]
        description = self.session.describe(sql, list(params) if params is not None else None)
        columns = tuple((c.name, pgtypes.oid_for_engine_type(c.type_name)) for c in description.columns)
        if not self._ci_columns or not any(description.noisy):
            return columns
        expanded = []
        for (name, oid), flag in zip(columns, list(description.noisy) + [False] * len(columns)):
            expanded.append((name, oid))
            if flag:
                expanded += [(name + suffix, pgtypes.FLOAT8) for suffix in CI_SUFFIXES]
        return tuple(expanded)

    def _utility_columns(self, command: Utility) -> tuple[tuple[str, int], ...]:
        assert self.client is not None
        if command.kind == "show" and (command.name or "").lower().startswith("dpsql."):
            return ((command.name.lower(), pgtypes.TEXT),)  # type: ignore[union-attr]
        if command.kind == "fetch" and command.name in self._cursors:
            return self._cursors[command.name].columns or ()
        if command.kind == "show" and command.name is not None:
            return self.ctx.emulation.show(command.name, self.client).columns
        return ()

    def _param_types(self, statement: Prepared, count: int) -> list[int]:
        """Parameter OIDs: as the client declared them, else inferred from the policy, else text."""
        assert self.session is not None
        declared = list(statement.param_types) + [0] * (count - len(statement.param_types))
        if all(declared):
            return declared
        if statement.inferred is None:
            route = self.ctx.emulation.route(statement.sql)[0] if utility(statement.sql) is None else "utility"
            if route == "session":
                statement.inferred = tuple(pgtypes.POLICY_TYPES.get(t or "", pgtypes.TEXT) for t in self.session.parameter_types(statement.sql))
            else:
                statement.inferred = tuple(self.ctx.emulation.parameter_types(statement.sql)) if route == "catalog" else ()
        guesses = list(statement.inferred) + [pgtypes.TEXT] * count
        return [oid or guesses[i] for i, oid in enumerate(declared)]

    def _send_rows(self, out: Output, answer: Answer, columns: Sequence[tuple[str, int]], formats: Sequence[int],
                   start: int, end: int) -> None:  # fmt: skip
        oids = [oid for _, oid in columns]
        fmts = _expand(formats, len(oids))
        for row in answer.rows[start:end]:
            out.data += codec.data_row([pgtypes.encode(oid, value, fmt) for oid, value, fmt in zip(oids, row, fmts, strict=True)])


@contextmanager
def _statement_timeout(seconds: float, interrupt: Callable[[], None]) -> Iterator[None]:
    """Cancel a statement that runs longer than `seconds`: the engine is interrupted and the client
    gets 57014, whatever the statement would have answered. A charge made before stays (never
    refunded). Whether a charged query finishes in time can depend on the data: that is the timing
    channel, out of scope (docs/privacy-model.md); the default is generous so honest queries never meet it."""
    alarm = WATCHDOG.arm(seconds, interrupt)
    error: errors.Error | None = None
    fired = False
    try:
        yield
    except errors.Error as err:
        error = err  # an interrupted engine fails: re-raised below unless the alarm fired
    finally:
        fired = alarm.disarm()  # waits for a firing interrupt: none lands on the next statement
    if fired:
        # Raised outside the except block: the engine's failure is not kept as __context__.
        raise ServerError("57014", "canceling statement due to statement timeout")
    if error is not None:
        raise error


def _field(name: str, oid: int, fmt: int) -> codec.FieldDescription:
    return codec.FieldDescription(name, oid, pgtypes.type_size(oid), -1, fmt)


def _expand(formats: Sequence[int], count: int) -> list[int]:
    if not formats:
        return [0] * count
    if len(formats) == 1:
        return [formats[0]] * count
    return list(formats)[:count] + [0] * (count - len(formats))


def _message(err: errors.Error) -> str:
    return f"{err.code}: {err.message}" if err.code else err.message


def _is_session_setting(command: Utility) -> bool:
    """`SET dpsql.<name> = ...` belongs to the Session (its privacy settings); dpsql.ci_columns is the connection's."""
    name = (command.name or "").lower()
    return command.kind == "set" and name.startswith("dpsql.") and name not in ("dpsql.random_seed", "dpsql.seed", *CONNECTION_SETTINGS)


_ON = frozenset({"on", "true", "yes", "1", "t"})


def _on_off(value: str, name: str = CI_COLUMNS) -> str:
    lowered = value.strip().lower()
    if lowered in _ON:
        return "on"
    if lowered in ("off", "false", "no", "0", "f"):
        return "off"
    raise ServerError("22023", f'parameter "{name}" requires a Boolean value (on or off)')


def _answer(result: NoisyResult, ci_columns: bool) -> Answer:
    tag = {"set": "SET", "explain": "EXPLAIN"}.get(result.kind, f"SELECT {len(result.rows)}")
    if ci_columns:
        columns, rows = noise_report.with_ci_columns(result)
        return Answer(tuple((c.name, pgtypes.oid_for_engine_type(c.type_name)) for c in columns), rows, tag)
    return Answer(tuple((c.name, pgtypes.oid_for_engine_type(c.type_name)) for c in result.columns), result.rows, tag)


def _placeholder_count(sql: str) -> int:
    numbers = [int(m) for m in re.findall(r"\$(\d+)", sql)]
    return max(numbers, default=0)


def _startup_options(options: str) -> list[tuple[str, str]]:
    """`-c name=value` and `--name=value` items of the startup `options` parameter."""
    items, words = [], options.replace("\\ ", "\0").split()
    index = 0
    while index < len(words):
        word = words[index].replace("\0", " ")
        if word == "-c" and index + 1 < len(words):
            word, index = "--" + words[index + 1].replace("\0", " "), index + 1
        if word.startswith("--") and "=" in word:
            name, value = word[2:].split("=", 1)
            items.append((name.replace("-", "_"), value))
        index += 1
    return items

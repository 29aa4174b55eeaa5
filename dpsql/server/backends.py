"""The server's live connections by process id: cancelling a statement, the analyst's own only.

A client stops a running statement in one of two ways. libpq and JDBC send a CancelRequest on a
fresh socket with the process id and secret key of BackendKeyData (only the connection that
received the key can name it); BI tools such as Superset's SQL Lab run
`SELECT pg_terminate_backend(<pid>)` (or `pg_cancel_backend`) on another logged-in connection,
with the pid they read from `pg_backend_pid()`. The second way is honoured only between
connections of the same analyst: another analyst's pid is answered exactly like a pid that does
not exist (false), so it neither stops their work nor tells that it runs.

A cancelled statement ends in 57014 like a statement timeout: a charge made before stays (never
refunded), and the answer is withheld whatever the engine had computed.
"""

from __future__ import annotations

import hmac
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlglot import exp

SIGNALS = ("pg_cancel_backend", "pg_terminate_backend")


class Backend(Protocol):
    """What the registry needs of a connection (dpsql.server.protocol.PgConnection)."""

    pid: int
    key: int

    @property
    def user(self) -> str | None: ...

    def cancel_running(self, terminate: bool) -> None: ...


class BackendRegistry:
    """The logged-in connections of one server, by pid (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_pid: dict[int, Backend] = {}

    def add(self, backend: Backend) -> None:
        """Register a logged-in connection."""
        with self._lock:
            self._by_pid[backend.pid] = backend

    def remove(self, backend: Backend) -> None:
        """Forget a connection (idempotent)."""
        with self._lock:
            if self._by_pid.get(backend.pid) is backend:
                del self._by_pid[backend.pid]

    def cancel_request(self, pid: int, key: int) -> None:
        """A CancelRequest: cancel the statement of the connection whose pid and secret key match
        (nothing happens otherwise, and the requester is told nothing, as in PostgreSQL)."""
        with self._lock:
            backend = self._by_pid.get(pid)
        if backend is not None and hmac.compare_digest(backend.key.to_bytes(4, "big"), (key & 0xFFFFFFFF).to_bytes(4, "big")):
            backend.cancel_running(terminate=False)

    def signal(self, user: str, pid: int, terminate: bool) -> bool:
        """pg_cancel_backend / pg_terminate_backend from `user`: True when `pid` is one of that
        analyst's connections (its running statement, if any, is cancelled; terminate also closes
        it at its next message); False for any other pid, another analyst's included."""
        with self._lock:
            backend = self._by_pid.get(pid)
        if backend is None or backend.user != user:
            return False
        backend.cancel_running(terminate)
        return True


@dataclass(frozen=True, slots=True)
class SignalCall:
    """`SELECT pg_cancel_backend(pid)` or `SELECT pg_terminate_backend(pid)` as a client sends it:
    with a pid literal or parameter, or (Superset's SQL Lab) over `pg_stat_activity WHERE pid = '<pid>'`."""

    function: str
    output: str  # the column name (the alias, else the function's name)
    pid: exp.Expr  # an integer (or quoted integer) literal, or a $n parameter
    from_activity: bool = False  # one row when the pid is the analyst's own backend, none otherwise

    @property
    def terminate(self) -> bool:
        """pg_terminate_backend: the connection also closes."""
        return self.function == "pg_terminate_backend"


def signal_call(tree: exp.Expr | None) -> SignalCall | None:
    """The signal call a catalog-routed statement is, or None."""
    if not isinstance(tree, exp.Select) or len(tree.expressions) != 1:
        return None
    if any(tree.args.get(key) for key in ("joins", "group", "having", "with_", "order", "laterals")):
        return None
    item = tree.expressions[0]
    call = _unqualified(item.this if isinstance(item, exp.Alias) else item)
    if not isinstance(call, exp.Anonymous) or call.name.lower() not in SIGNALS or len(call.expressions) not in (1, 2):
        return None
    output = item.alias if isinstance(item, exp.Alias) else call.name.lower()
    pid = _uncast(call.expressions[0])
    source = tree.args.get("from_")
    if source is None:
        if tree.args.get("where") is not None or not (isinstance(pid, (exp.Literal, exp.Placeholder, exp.Parameter)) or _own_pid(pid)):
            return None
        return SignalCall(call.name.lower(), output, pid)
    table = source.this
    activity = isinstance(table, exp.Table) and table.name.lower() == "pg_stat_activity" and table.db.lower() in ("", "pg_catalog")
    where = tree.args.get("where")
    if not activity or source.expressions or not isinstance(pid, exp.Column) or pid.name.lower() != "pid" or where is None:
        return None
    condition = where.this
    if not isinstance(condition, exp.EQ):
        return None
    sides = [_uncast(condition.this), _uncast(condition.expression)]
    named = [s for s in sides if isinstance(s, exp.Column) and s.name.lower() == "pid"]
    values = [s for s in sides if isinstance(s, (exp.Literal, exp.Placeholder, exp.Parameter))]
    if len(named) != 1 or len(values) != 1:
        return None
    return SignalCall(call.name.lower(), output, values[0], from_activity=True)


def _own_pid(node: exp.Expr) -> bool:
    node = _unqualified(node)
    return isinstance(node, exp.Anonymous) and node.name.lower() == "pg_backend_pid" and not node.expressions


def _uncast(node: exp.Expr) -> exp.Expr:
    while isinstance(node, (exp.Cast, exp.Paren)):
        node = node.this
    return node


def _unqualified(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Dot) and isinstance(node.this, exp.Identifier) and node.this.name.lower() == "pg_catalog":
        name: exp.Expr = node.expression
        return name
    return node


def signal_pid(call: SignalCall, params: Sequence[Any], own: int) -> int | None:
    """The pid a signal call names (`own` for pg_backend_pid(); None when it is not an integer)."""
    node = call.pid
    if _own_pid(node):
        return own
    if isinstance(node, exp.Literal):
        text = node.this
    else:
        number = node.this.this if isinstance(node.this, exp.Literal) else node.this
        index = int(str(number)) - 1 if str(number).isdigit() else -1
        text = params[index] if 0 <= index < len(params) else None
    try:
        return int(str(text)) if text is not None else None
    except ValueError:
        return None

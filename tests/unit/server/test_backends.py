"""Cancelling a running statement over pgwire: which SQL shapes are signal calls (SQL Lab's Stop,
pg_cancel_backend), and that the registry signals the analyst's own connections only."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import sqlglot

from dpsql.server.backends import BackendRegistry, signal_call, signal_pid


def _tree(sql: str) -> sqlglot.exp.Expr:
    return sqlglot.parse_one(sql, read="postgres")


@pytest.mark.parametrize(("sql", "function", "pid", "from_activity"), [
    ("SELECT pg_terminate_backend(4242)", "pg_terminate_backend", 4242, False),
    ("select pg_catalog.pg_cancel_backend(4242)", "pg_cancel_backend", 4242, False),
    ("SELECT pg_cancel_backend(4242::int) AS stopped", "pg_cancel_backend", 4242, False),
    # Superset's PostgresEngineSpec.cancel_query
    ("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid='4242'", "pg_terminate_backend", 4242, True),
    ("SELECT pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity WHERE '4242' = pid", "pg_terminate_backend", 4242, True),
])
def test_signal_shapes(sql: str, function: str, pid: int, from_activity: bool) -> None:
    call = signal_call(_tree(sql))
    assert call is not None and call.function == function and call.from_activity == from_activity
    assert signal_pid(call, [], own=1) == pid


def test_own_pid_and_parameters() -> None:
    call = signal_call(_tree("SELECT pg_cancel_backend(pg_backend_pid())"))
    assert call is not None and signal_pid(call, [], own=77) == 77
    call = signal_call(_tree("SELECT pg_cancel_backend($1)"))
    assert call is not None and signal_pid(call, ["4242"], own=1) == 4242


@pytest.mark.parametrize("sql", [
    "SELECT pg_backend_pid()", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity",  # every backend: not a signal call
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'bob'", "SELECT 1, pg_cancel_backend(3)",
    "SELECT pg_cancel_backend(3) FROM people",
])
def test_other_shapes_are_not_signal_calls(sql: str) -> None:
    assert signal_call(_tree(sql)) is None


@dataclass
class _Connection:
    """A registered connection: what the registry calls (the real PgConnection's surface)."""

    pid: int
    key: int
    user: str | None
    cancelled: list[bool] = field(default_factory=list)

    def cancel_running(self, terminate: bool) -> None:
        self.cancelled.append(terminate)


def test_registry_signals_the_analysts_own_connections_only() -> None:
    registry = BackendRegistry()
    alice, bob = _Connection(10, 111, "alice"), _Connection(11, 222, "bob")
    registry.add(alice)
    registry.add(bob)
    assert registry.signal("alice", 10, terminate=True) is True and alice.cancelled == [True]
    # Negative control: another analyst's pid, and a pid that does not exist, answer alike (False) and signal nothing.
    assert registry.signal("alice", 11, terminate=False) is False and bob.cancelled == []
    assert registry.signal("alice", 99, terminate=False) is False
    registry.cancel_request(11, 999)  # a wrong secret key: nothing
    assert bob.cancelled == []
    registry.cancel_request(11, 222)  # BackendKeyData's key: the statement is cancelled
    assert bob.cancelled == [False]
    registry.remove(alice)
    assert registry.signal("alice", 10, terminate=False) is False

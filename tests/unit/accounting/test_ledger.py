"""The budget ledger: exact sums, refusals, persistence, concurrency and crash safety.

Behaviour tests run on both storages where they apply: `ledger` is an in-memory SQLite ledger or
a fresh PostgreSQL database, `backend` gives fresh persistent targets (a SQLite file or a
postgresql:// URL) and raw SQL access to them. The PostgreSQL server is real (tests/postgres_server.py).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import threading
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import Ledger, LedgerEntry, open_ledger
from dpsql.errors import BudgetExhaustedError, LedgerError
from tests.conftest import POSTGRES

SPAWN = multiprocessing.get_context("spawn")
PARAMS = {"kind": "laplace", "sensitivity": 1, "scale": 10.0}


def charge(ledger: Ledger, cost: PrivacyCost, budget: PrivacyCost, analyst: str = "alice") -> LedgerEntry:
    return ledger.charge(
        analyst=analyst,
        session="s1",
        query="SELECT COUNT(*) FROM people",
        plan_hash="h1",
        mechanism="laplace",
        params=PARAMS,
        cost=cost,
        budget=budget,
    )


class Backend:
    """Fresh persistent ledger targets of one storage, and raw SQL on them (`{charges}`, `{meta}`)."""

    def __init__(self, name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
        self.name = name
        self._tmp = tmp_path
        self._server = request.getfixturevalue("postgres_server") if name == "postgres" else None
        self._count = 0

    def target(self) -> str:
        """A new, empty ledger location: a file path or a postgresql:// URL."""
        self._count += 1
        if self._server is not None:
            return self._server.new_database()
        return str(self._tmp / f"ledger{self._count}" / "l.db")

    def execute(self, target: str, statement: str, args: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one statement outside dpsql (an operator, or an attacker with write access)."""
        if self.name == "postgres":
            import psycopg

            statement = statement.format(charges="dpsql_charges", meta="dpsql_ledger").replace("?", "%s")
            with psycopg.connect(target, autocommit=True) as raw:
                cursor = raw.execute(statement, args)
                return cursor.fetchall() if cursor.description else []
        statement = statement.format(charges="charges", meta="schema_version")
        with sqlite3.connect(target) as raw:
            return raw.execute(statement, args).fetchall()


@pytest.fixture(params=["sqlite", POSTGRES])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return Backend(request.param, tmp_path, request)


@pytest.fixture(params=["memory", POSTGRES])
def ledger(request: pytest.FixtureRequest) -> Iterator[Ledger]:
    target = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    with open_ledger(target) as led:
        yield led


# --- exact arithmetic ---------------------------------------------------------------------


def test_ten_tenths_fit_in_one_and_the_eleventh_is_refused(ledger: Ledger) -> None:
    budget = PrivacyCost(1.0)
    for _ in range(10):
        charge(ledger, PrivacyCost(0.1), budget)
    assert ledger.spent("alice") == PrivacyCost(Fraction(1))
    assert ledger.remaining("alice", budget) == PrivacyCost.zero()
    with pytest.raises(BudgetExhaustedError):
        charge(ledger, PrivacyCost(0.1), budget)
    assert len(ledger.entries("alice")) == 10


def test_three_thirds_exactly_exhaust_one(ledger: Ledger) -> None:
    budget = PrivacyCost(1)
    for _ in range(3):
        charge(ledger, PrivacyCost(Fraction(1, 3)), budget)
    assert ledger.spent("alice").epsilon == Fraction(1)
    with pytest.raises(BudgetExhaustedError):
        charge(ledger, PrivacyCost(Fraction(1, 10**30)), budget)


def test_sum_that_float_rounding_would_push_over_the_budget_is_accepted(ledger: Ledger) -> None:
    # In floats 0.1 + 0.2 + 0.7 == 1.0000000000000002 > 1; exactly it is 1.
    for eps in (0.1, 0.2, 0.7):
        charge(ledger, PrivacyCost(eps), PrivacyCost(1.0))
    assert ledger.spent("alice").epsilon == 1


def test_costs_wider_than_64_bits_round_trip_exactly(backend: Backend) -> None:
    cost = PrivacyCost(Fraction(2**80 + 1, 3**60), Fraction(1, 7**40))
    budget = PrivacyCost(10, Fraction(1, 2))
    target = backend.target()
    with open_ledger(target) as led:
        charge(led, cost, budget)
        charge(led, cost, budget)
    with open_ledger(target) as led:
        assert [e.cost for e in led.entries()] == [cost, cost]
        assert led.spent("alice") == cost + cost
    if backend.name == "sqlite":
        types = backend.execute(target, "SELECT typeof(eps_num), typeof(eps_den), typeof(delta_num), typeof(delta_den) FROM charges")
        assert set(types) == {("text", "text", "text", "text")}
    else:
        types = backend.execute(target, "SELECT pg_typeof(eps_num)::text, pg_typeof(eps_den)::text, "
                                "pg_typeof(delta_num)::text, pg_typeof(delta_den)::text FROM {charges}")
        assert set(types) == {("text", "text", "text", "text")}
    assert backend.execute(target, "SELECT eps_num, delta_den FROM {charges}")[0] == (str(2**80 + 1), str(7**40))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    costs=st.lists(st.fractions(min_value=0, max_value=1, max_denominator=1000), max_size=25),
    budget=st.fractions(min_value=0, max_value=5, max_denominator=1000),
)
def test_a_charge_is_accepted_iff_the_exact_total_fits(backend: Backend, costs: list[Fraction], budget: Fraction) -> None:
    # The fixture is shared by the examples, so each example opens a fresh target.
    with (Ledger() if backend.name == "sqlite" else open_ledger(backend.target())) as led:
        total = Fraction(0)
        for eps in costs:
            if total + eps <= budget:
                charge(led, PrivacyCost(eps), PrivacyCost(budget))
                total += eps
            else:
                with pytest.raises(BudgetExhaustedError):
                    charge(led, PrivacyCost(eps), PrivacyCost(budget))
        assert led.spent("alice") == PrivacyCost(total)


# --- refusals ------------------------------------------------------------------------------


def test_refusal_inserts_nothing_and_carries_requested_and_remaining(ledger: Ledger) -> None:
    budget = PrivacyCost(1, Fraction(1, 10**6))
    charge(ledger, PrivacyCost(Fraction(6, 10)), budget)
    with pytest.raises(BudgetExhaustedError) as info:
        charge(ledger, PrivacyCost(Fraction(1, 2)), budget)
    err = info.value
    assert err.requested == PrivacyCost(Fraction(1, 2))
    assert err.remaining == PrivacyCost(Fraction(2, 5), Fraction(1, 10**6))
    assert "0.5" in err.message and "0.4" in err.message and "1e-06" in err.message
    assert "alice" not in str(err) and "people" not in str(err)
    assert len(ledger.entries()) == 1
    assert ledger.spent("alice") == PrivacyCost(Fraction(6, 10))


def test_delta_is_budgeted_too_even_when_the_sum_would_reach_one(ledger: Ledger) -> None:
    budget = PrivacyCost(10, Fraction(9, 10))
    charge(ledger, PrivacyCost(1, Fraction(1, 2)), budget)
    with pytest.raises(BudgetExhaustedError):  # 1/2 + 6/10 >= 1: must refuse, not crash
        charge(ledger, PrivacyCost(1, Fraction(6, 10)), budget)
    with pytest.raises(BudgetExhaustedError):
        charge(ledger, PrivacyCost(0, Fraction(41, 100)), budget)
    charge(ledger, PrivacyCost(0, Fraction(4, 10)), budget)
    assert ledger.spent("alice") == PrivacyCost(1, Fraction(9, 10))


def test_zero_cost_is_recorded_even_with_an_exhausted_budget(ledger: Ledger) -> None:
    charge(ledger, PrivacyCost(1), PrivacyCost(1))
    entry = charge(ledger, PrivacyCost.zero(), PrivacyCost(1))
    assert entry.cost == PrivacyCost.zero()
    assert [e.id for e in ledger.entries()] == [1, entry.id]


def test_zero_cost_fits_a_history_past_the_budget(ledger: Ledger) -> None:
    # A history spent past today's budget (written under a looser accountant or a larger budget):
    # a free statement still fits and is recorded; control: any positive cost is refused.
    charge(ledger, PrivacyCost(2), PrivacyCost(5))
    assert ledger.fits("alice", PrivacyCost.zero(), PrivacyCost(1))
    charge(ledger, PrivacyCost.zero(), PrivacyCost(1))
    assert not ledger.fits("alice", PrivacyCost(Fraction(1, 1000)), PrivacyCost(1))
    with pytest.raises(BudgetExhaustedError):
        charge(ledger, PrivacyCost(Fraction(1, 1000)), PrivacyCost(1))


def test_entry_records_everything(ledger: Ledger) -> None:
    entry = charge(ledger, PrivacyCost(Fraction(1, 4)), PrivacyCost(1))
    (stored,) = ledger.entries("alice")
    assert stored == entry
    assert (stored.analyst, stored.session, stored.plan_hash, stored.mechanism) == ("alice", "s1", "h1", "laplace")
    assert stored.query == "SELECT COUNT(*) FROM people" and stored.params == PARAMS
    assert stored.time > 1.6e9


def test_separate_analysts_have_separate_totals(ledger: Ledger) -> None:
    budget = PrivacyCost(1)
    charge(ledger, PrivacyCost(1), budget, analyst="alice")
    with pytest.raises(BudgetExhaustedError):
        charge(ledger, PrivacyCost(Fraction(1, 100)), budget, analyst="alice")
    charge(ledger, PrivacyCost(Fraction(1, 4)), budget, analyst="bob")
    assert ledger.spent("alice") == PrivacyCost(1)
    assert ledger.spent("bob") == PrivacyCost(Fraction(1, 4))
    assert ledger.spent("carol") == PrivacyCost.zero()
    assert [e.analyst for e in ledger.entries()] == ["alice", "bob"]
    assert [e.analyst for e in ledger.entries("bob")] == ["bob"]


# --- persistence and failing closed --------------------------------------------------------


def test_restart_does_not_reset_spending(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dirs" / "ledger.db"
    with Ledger(path) as led:
        assert led.path == path
        charge(led, PrivacyCost(Fraction(7, 10)), PrivacyCost(1))
    with Ledger(str(path)) as led:
        assert led.spent("alice") == PrivacyCost(Fraction(7, 10))
        with pytest.raises(BudgetExhaustedError):
            charge(led, PrivacyCost(Fraction(4, 10)), PrivacyCost(1))
        assert [e.params for e in led.entries()] == [PARAMS]
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert raw.execute("SELECT version FROM schema_version").fetchall() == [(1,)]


def test_reopening_does_not_reset_spending(backend: Backend) -> None:
    target = backend.target()
    with open_ledger(target) as led:
        charge(led, PrivacyCost(Fraction(7, 10)), PrivacyCost(1))
    with open_ledger(target) as led:
        assert led.spent("alice") == PrivacyCost(Fraction(7, 10))
        with pytest.raises(BudgetExhaustedError):
            charge(led, PrivacyCost(Fraction(4, 10)), PrivacyCost(1))
        assert [e.params for e in led.entries()] == [PARAMS]
    assert backend.execute(target, "SELECT version FROM {meta}") == [(1,)]


def test_in_memory_ledger_has_no_path(ledger: Ledger) -> None:
    assert ledger.path is None


def test_other_schema_version_is_refused(backend: Backend) -> None:
    target = backend.target()
    open_ledger(target).close()
    backend.execute(target, "UPDATE {meta} SET version = 99")
    with pytest.raises(LedgerError):
        open_ledger(target)


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    (tmp_path / "l.db").write_bytes(b"not a sqlite database at all" * 100)
    with pytest.raises(LedgerError):
        Ledger(tmp_path / "l.db")


@pytest.mark.parametrize("row", [("1", "0", "0", "1"), ("-5", "1", "0", "1"), ("x", "1", "0", "1")])
def test_a_corrupt_cost_fails_closed(backend: Backend, row: tuple[str, ...]) -> None:
    target = backend.target()
    with open_ledger(target) as led:
        charge(led, PrivacyCost(Fraction(1, 2)), PrivacyCost(1))
    backend.execute(target, "UPDATE {charges} SET eps_num = ?, eps_den = ?, delta_num = ?, delta_den = ?", row)
    with open_ledger(target) as led:
        for call in (lambda: led.spent("alice"), led.entries, lambda: charge(led, PrivacyCost(0), PrivacyCost(1))):
            with pytest.raises(LedgerError):
                call()


def test_a_closed_ledger_raises_ledger_error(backend: Backend) -> None:
    led = open_ledger(backend.target())
    led.close()
    led.close()
    with pytest.raises(LedgerError):
        charge(led, PrivacyCost(0), PrivacyCost(1))
    with pytest.raises(LedgerError):
        led.spent("alice")
    with pytest.raises(LedgerError):
        led.entries()


def test_unserialisable_params_are_refused_before_charging(ledger: Ledger) -> None:
    with pytest.raises(LedgerError):
        ledger.charge(analyst="a", session="s", query="q", plan_hash="h", mechanism="m",
                      params={"scale": object()}, cost=PrivacyCost(1), budget=PrivacyCost(1))
    assert ledger.entries() == []


# --- concurrency and crashes ---------------------------------------------------------------


def _charge_many(target: str, start: object, analysts: list[str], budget: PrivacyCost, results: object) -> None:
    led = open_ledger(target)
    ok = refused = 0
    errors: list[str] = []
    start.wait(timeout=60)  # type: ignore[attr-defined]  # a Barrier: both processes begin together
    for analyst in analysts:
        try:
            charge(led, PrivacyCost(Fraction(1, 100)), budget, analyst=analyst)
            ok += 1
        except BudgetExhaustedError:
            refused += 1
        except Exception as err:  # noqa: BLE001 - reported to the parent
            errors.append(repr(err))
    led.close()
    results.put((ok, refused, errors))  # type: ignore[attr-defined]


def _run_processes(target: str, analysts: list[str], budget: PrivacyCost, count: int = 2) -> tuple[int, int]:
    start, results = SPAWN.Barrier(count), SPAWN.Queue()
    procs = [SPAWN.Process(target=_charge_many, args=(target, start, analysts, budget, results)) for _ in range(count)]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
        assert proc.exitcode == 0
    assert [errors for _, _, errors in outcomes] == [[]] * count
    return sum(ok for ok, _, _ in outcomes), sum(refused for _, refused, _ in outcomes)


@pytest.mark.slow  # several processes
def test_two_processes_cannot_overspend(backend: Backend) -> None:
    target = backend.target()
    assert _run_processes(target, ["alice"] * 200, PrivacyCost(3.0)) == (300, 100)
    with open_ledger(target) as led:
        assert led.spent("alice") == PrivacyCost(3)
        assert len(led.entries()) == 300


@pytest.mark.slow  # several processes
def test_two_processes_race_for_many_last_slots(backend: Backend) -> None:
    # Every analyst can afford exactly one charge and both processes try each one at the same
    # moment: 200 budget boundaries, so a check outside the write transaction shows up.
    target = backend.target()
    analysts = [f"analyst{i}" for i in range(200)]
    assert _run_processes(target, analysts, PrivacyCost(Fraction(1, 100))) == (200, 200)
    with open_ledger(target) as led:
        assert all(led.spent(a) == PrivacyCost(Fraction(1, 100)) for a in analysts)


def test_threads_cannot_overspend_an_in_memory_ledger(ledger: Ledger) -> None:
    barrier = threading.Barrier(8)
    outcomes: list[bool] = []

    def work() -> None:
        barrier.wait()
        for _ in range(50):
            try:
                charge(ledger, PrivacyCost(0.01), PrivacyCost(3.0))
                outcomes.append(True)
            except BudgetExhaustedError:
                outcomes.append(False)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count(True) == 300 and outcomes.count(False) == 100
    assert ledger.spent("alice") == PrivacyCost(3)


def _charge_then_hang(target: str, charged: object) -> None:
    led = open_ledger(target)
    charge(led, PrivacyCost(Fraction(1, 4)), PrivacyCost(1))
    charged.set()  # type: ignore[attr-defined]
    threading.Event().wait(120)


@pytest.mark.slow  # several processes
def test_a_process_killed_after_charging_keeps_its_charge(backend: Backend) -> None:
    path = backend.target()
    charged = SPAWN.Event()
    proc = SPAWN.Process(target=_charge_then_hang, args=(path, charged))
    proc.start()
    try:
        assert charged.wait(timeout=60)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.join(timeout=30)
    assert proc.exitcode == -signal.SIGKILL
    with open_ledger(path) as led:
        assert led.spent("alice") == PrivacyCost(Fraction(1, 4))
        assert len(led.entries()) == 1

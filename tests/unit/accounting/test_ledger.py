"""The budget ledger: exact sums, refusals, persistence and in-process concurrency.

Several processes sharing a ledger file, and crashes, are in tests/slow/test_ledger_processes.py."""

from __future__ import annotations

import sqlite3
import threading
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import Ledger, LedgerEntry
from dpsql.errors import BudgetExhaustedError, LedgerError

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


@pytest.fixture
def ledger():
    with Ledger() as led:
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


def test_costs_wider_than_64_bits_round_trip_exactly(tmp_path: Path) -> None:
    cost = PrivacyCost(Fraction(2**80 + 1, 3**60), Fraction(1, 7**40))
    budget = PrivacyCost(10, Fraction(1, 2))
    with Ledger(tmp_path / "l.db") as led:
        charge(led, cost, budget)
        charge(led, cost, budget)
    with Ledger(tmp_path / "l.db") as led:
        assert [e.cost for e in led.entries()] == [cost, cost]
        assert led.spent("alice") == cost + cost
    with sqlite3.connect(tmp_path / "l.db") as raw:
        types = raw.execute("SELECT typeof(eps_num), typeof(eps_den), typeof(delta_num), typeof(delta_den) FROM charges")
        assert set(types.fetchall()) == {("text", "text", "text", "text")}


@settings(max_examples=40, deadline=None)
@given(
    costs=st.lists(st.fractions(min_value=0, max_value=1, max_denominator=1000), max_size=25),
    budget=st.fractions(min_value=0, max_value=5, max_denominator=1000),
)
def test_a_charge_is_accepted_iff_the_exact_total_fits(costs: list[Fraction], budget: Fraction) -> None:
    with Ledger() as led:
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


def test_in_memory_ledger_has_no_path(ledger: Ledger) -> None:
    assert ledger.path is None


def test_other_schema_version_is_refused(tmp_path: Path) -> None:
    Ledger(tmp_path / "l.db").close()
    with sqlite3.connect(tmp_path / "l.db") as raw:
        raw.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(LedgerError):
        Ledger(tmp_path / "l.db")


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    (tmp_path / "l.db").write_bytes(b"not a sqlite database at all" * 100)
    with pytest.raises(LedgerError):
        Ledger(tmp_path / "l.db")


@pytest.mark.parametrize("row", [("1", "0", "0", "1"), ("-5", "1", "0", "1"), ("x", "1", "0", "1")])
def test_a_corrupt_cost_fails_closed(tmp_path: Path, row: tuple[str, ...]) -> None:
    with Ledger(tmp_path / "l.db") as led:
        charge(led, PrivacyCost(Fraction(1, 2)), PrivacyCost(1))
    with sqlite3.connect(tmp_path / "l.db") as raw:
        raw.execute("UPDATE charges SET eps_num = ?, eps_den = ?, delta_num = ?, delta_den = ?", row)
    with Ledger(tmp_path / "l.db") as led:
        for call in (lambda: led.spent("alice"), led.entries, lambda: charge(led, PrivacyCost(0), PrivacyCost(1))):
            with pytest.raises(LedgerError):
                call()


def test_a_closed_ledger_raises_ledger_error(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "l.db")
    led.close()
    led.close()
    with pytest.raises(LedgerError):
        charge(led, PrivacyCost(0), PrivacyCost(1))
    with pytest.raises(LedgerError):
        led.spent("alice")


def test_unserialisable_params_are_refused_before_charging(ledger: Ledger) -> None:
    with pytest.raises(LedgerError):
        ledger.charge(analyst="a", session="s", query="q", plan_hash="h", mechanism="m",
                      params={"scale": object()}, cost=PrivacyCost(1), budget=PrivacyCost(1))
    assert ledger.entries() == []


# --- concurrency and crashes ---------------------------------------------------------------


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

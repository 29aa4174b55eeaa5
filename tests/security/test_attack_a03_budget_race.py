"""A3: budget race. 32 connections of one analyst, sharing one ledger file, fire one query each at
the same moment when only 5 fit in what is left of the budget.

Pass criterion: exactly 5 are answered, 27 are refused with DP200, and the ledger's total is the
budget, never more (the check and the insert are one `BEGIN IMMEDIATE` transaction). Negative
control: a ledger that reads the total, then inserts in a second step (a check-then-act race), is
caught by the same harness: more than 5 answers and a total over the budget.
The two-process version (2 processes x 4 threads x 50 queries) is
tests/integration/test_security.py::test_two_processes_of_200_charges_spend_exactly_the_budget.
"""

from __future__ import annotations

import threading
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import dpsql
from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import Ledger
from dpsql.errors import BudgetExhaustedError

CONNECTIONS = 32
SQL = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) COUNT(*) FROM people"


def race(connect, policy: Path, ledger: Path) -> tuple[int, int, list[str], Fraction]:
    """Pre-spend 0.5 of a budget of 1, then 32 concurrent queries at 0.1; (answered, refused, other, spent)."""
    first = connect(policy, ledger=ledger, analyst="alice", random_seed=1)
    first.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) COUNT(*) FROM people").fetchall()
    cons = [connect(policy, ledger=ledger, analyst="alice", random_seed=i) for i in range(CONNECTIONS)]
    barrier = threading.Barrier(CONNECTIONS)
    results: list[str] = []
    lock = threading.Lock()

    def one(con: dpsql.Connection) -> None:
        barrier.wait()
        try:
            con.execute(SQL).fetchall()
            result = "answered"
        except BudgetExhaustedError:
            result = "refused"
        except dpsql.Error as error:
            result = repr(error)
        with lock:
            results.append(result)

    threads = [threading.Thread(target=one, args=(c,)) for c in cons]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    with Ledger(ledger) as led:
        spent = led.spent("alice").epsilon
    other = [r for r in results if r not in ("answered", "refused")]
    return results.count("answered"), results.count("refused"), other, spent


def test_a03_thirty_two_concurrent_queries_never_overspend(connect, policy_file, tmp_path: Path) -> None:
    answered, refused, other, spent = race(connect, policy_file(epsilon=1.0), tmp_path / "ledger.sqlite")
    assert other == []
    assert (answered, refused) == (5, 27)
    assert spent == Fraction(1)  # exactly the budget: 0.5 + 5 x 0.1


def test_a03_negative_control_check_then_insert_overspends(connect, policy_file, tmp_path: Path, monkeypatch) -> None:
    # Every charge enters the ledger through charge_record (Ledger.charge delegates to it).
    charge_record = Ledger.charge_record

    def racy(self: Ledger, record: Any, **kwargs: Any) -> Any:
        budget, cost = kwargs["budget"], record.cost
        if self.spent(kwargs["analyst"]).epsilon + cost.epsilon > budget.epsilon:  # check ...
            raise BudgetExhaustedError("privacy budget exhausted", requested=cost, remaining=PrivacyCost(0, 0))
        time.sleep(0.2)  # ... then act: the window every other connection reads in
        return charge_record(self, record, **{**kwargs, "budget": PrivacyCost(10**9, Fraction(1, 2))})

    monkeypatch.setattr(Ledger, "charge_record", racy)
    answered, _, other, spent = race(connect, policy_file(epsilon=1.0), tmp_path / "ledger.sqlite")
    assert other == []
    assert answered > 5 and spent > 1  # what the main test rules out

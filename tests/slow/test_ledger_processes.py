"""The budget ledger across processes: two processes cannot overspend one file, and a process
killed after charging keeps its charge (slow: spawned processes)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from fractions import Fraction
from pathlib import Path

import pytest

from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import Ledger
from dpsql.errors import BudgetExhaustedError
from tests.unit.accounting.test_ledger import charge

pytestmark = pytest.mark.slow
SPAWN = multiprocessing.get_context("spawn")


def _charge_many(path: str, start: object, analysts: list[str], budget: PrivacyCost, results: object) -> None:
    led = Ledger(path)
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


def _run_two_processes(path: str, analysts: list[str], budget: PrivacyCost) -> tuple[int, int]:
    start, results = SPAWN.Barrier(2), SPAWN.Queue()
    procs = [SPAWN.Process(target=_charge_many, args=(path, start, analysts, budget, results)) for _ in range(2)]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
        assert proc.exitcode == 0
    assert [errors for _, _, errors in outcomes] == [[], []]
    return sum(ok for ok, _, _ in outcomes), sum(refused for _, refused, _ in outcomes)


def test_two_processes_cannot_overspend(tmp_path: Path) -> None:
    path = str(tmp_path / "l.db")
    assert _run_two_processes(path, ["alice"] * 200, PrivacyCost(3.0)) == (300, 100)
    with Ledger(path) as led:
        assert led.spent("alice") == PrivacyCost(3)
        assert len(led.entries()) == 300


def test_two_processes_race_for_many_last_slots(tmp_path: Path) -> None:
    # Every analyst can afford exactly one charge and both processes try each one at the same
    # moment: 200 budget boundaries, so a check outside the write transaction shows up.
    path = str(tmp_path / "l.db")
    analysts = [f"analyst{i}" for i in range(200)]
    assert _run_two_processes(path, analysts, PrivacyCost(Fraction(1, 100))) == (200, 200)
    with Ledger(path) as led:
        assert all(led.spent(a) == PrivacyCost(Fraction(1, 100)) for a in analysts)


def _charge_then_hang(path: str, charged: object) -> None:
    led = Ledger(path)
    charge(led, PrivacyCost(Fraction(1, 4)), PrivacyCost(1))
    charged.set()  # type: ignore[attr-defined]
    threading.Event().wait(120)


def test_a_process_killed_after_charging_keeps_its_charge(tmp_path: Path) -> None:
    path = str(tmp_path / "l.db")
    charged = SPAWN.Event()
    proc = SPAWN.Process(target=_charge_then_hang, args=(path, charged))
    proc.start()
    try:
        assert charged.wait(timeout=60)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.join(timeout=30)
    assert proc.exitcode == -signal.SIGKILL
    with Ledger(path) as led:
        assert led.spent("alice") == PrivacyCost(Fraction(1, 4))
        assert len(led.entries()) == 1

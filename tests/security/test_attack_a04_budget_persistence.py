"""A4: budget persistence. Restart the client (close and reopen the DB-API connection, or run the
CLI again as a new process) and hope the spent budget is forgotten.

Pass criterion: what an analyst spent is read back from the ledger file by every new connection
and every new process; an exhausted budget stays exhausted, and the refusal comes before the
engine runs. Negative control: the same harness run without a ledger file (the in-process
default, an in-memory ledger: documented as no security boundary in docs/trust-model.md) sees
the budget reset, so the harness can see a reset. A process killed between the charge and the
answer is tests/integration/test_security.py::test_charge_persists_when_the_process_is_killed_before_the_result.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpsql.backend.auxiliary.files import write_duckdb
from dpsql.errors import BudgetExhaustedError
from tests.security.attack_support import forbid_engine

ROOT = Path(__file__).resolve().parents[2]
SQL = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) COUNT(*) FROM people"


def spend_then_reopen(connect, policy: Path, ledger: Path | None) -> tuple[float, float]:
    """Spend 3 x 0.1 on one connection, close it, reopen: (remaining before close, after reopen)."""
    con = connect(policy, ledger=ledger, analyst="alice", random_seed=1)
    for _ in range(3):
        con.execute(SQL).fetchall()
    before = con.budget[0]
    con.close()
    return before, connect(policy, ledger=ledger, analyst="alice", random_seed=2).budget[0]


def test_a04_reconnecting_does_not_reset_the_budget(connect, policy_file, tmp_path: Path) -> None:
    before, after = spend_then_reopen(connect, policy_file(epsilon=1.0), tmp_path / "ledger.sqlite")
    assert before == after == pytest.approx(0.7, abs=1e-4)  # 3 x 0.1 (a hair less at the filter's delta share)


def test_a04_negative_control_an_in_memory_ledger_resets(connect, policy_file) -> None:
    before, after = spend_then_reopen(connect, policy_file(epsilon=1.0), None)
    assert before == pytest.approx(0.7, abs=1e-4) and after == 1.0  # what the test above rules out


def test_a04_an_exhausted_budget_stays_exhausted_after_reconnect(connect, policy_file, tmp_path: Path, monkeypatch) -> None:
    policy, ledger = policy_file(epsilon=0.2), tmp_path / "ledger.sqlite"
    con = connect(policy, ledger=ledger, analyst="alice", random_seed=1)
    con.execute(SQL).fetchall()
    con.execute(SQL).fetchall()
    con.close()
    again = connect(policy, ledger=ledger, analyst="alice", random_seed=2)
    calls = forbid_engine(again, monkeypatch)
    with pytest.raises(BudgetExhaustedError):
        again.execute(SQL)
    assert calls == [] and len(again.ledger()) == 2


def run_cli(database: Path, policy: Path, ledger: Path, sql: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "dpsql", str(database), "--policy", str(policy), "--ledger", str(ledger),
                           "--analyst", "alice", "-c", sql], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)


@pytest.mark.slow
def test_a04_each_cli_process_reads_what_the_previous_ones_spent(policy_file, people_frame, tmp_path: Path) -> None:
    database, ledger = tmp_path / "people.duckdb", tmp_path / "ledger.sqlite"
    write_duckdb(people_frame, database, "people")
    policy = policy_file(epsilon=0.2)
    # Three different statements: the same one again would be a replay of its answer (free, and
    # nothing new: docs/privacy-model.md, "Replayed answers"), checked last.
    statements = [f"{SQL} WHERE age > {18 + i}" for i in range(3)]
    first, second, third = (run_cli(database, policy, ledger, sql) for sql in statements)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert third.returncode == 1 and "DP200" in third.stderr and "budget" in third.stderr, third.stderr
    again = run_cli(database, policy, ledger, statements[0])  # exhausted, but this answer was released already
    assert again.returncode == 0 and "replayed" in again.stdout and again.stdout.split("(1 row)")[0] == first.stdout.split("(1 row)")[0]

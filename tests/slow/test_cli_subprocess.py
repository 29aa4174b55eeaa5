"""The minimal CLI as a subprocess: statements from -c and stdin, aligned output with ±, non-zero
exit on refusal (slow: a Python process per test)."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def run(args: list[str], stdin: str | None = None, tmp_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DPSQL_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "dpsql", *args], input=stdin, capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120, check=False)


def test_demo_count_prints_interval_and_budget(tmp_path: Path) -> None:
    result = run(["-c", "SELECT COUNT(*) FROM people"], tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "±" in result.stdout and "budget remaining: epsilon 9.9" in result.stdout
    assert not any(tmp_path.glob("*.parquet")), "the demo must not be written to the current directory"


def test_refusal_exits_nonzero_without_traceback(tmp_path: Path) -> None:
    result = run([], stdin="SELECT COUNT(*) FROM people;\nSELECT * FROM people;\n", tmp_path=tmp_path)
    assert result.returncode == 1
    assert "DP104" in result.stderr and "^" in result.stderr and "Traceback" not in result.stderr
    assert "±" in result.stdout


def test_a_spent_demo_budget_says_how_to_start_afresh(tmp_path: Path) -> None:
    # The demo's ledger survives runs: spend almost all of it, and the next run says where the
    # ledger is and how to get a fresh budget (and a run with budget left says nothing).
    spend = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 9.95) COUNT(*) FROM people"
    first = run(["-c", spend], tmp_path=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "budget is spent" not in first.stderr
    second = run(["-c", "SELECT COUNT(*) FROM people"], tmp_path=tmp_path)
    assert second.returncode == 1 and "DP200" in second.stderr
    assert "the demo's privacy budget is spent" in second.stderr
    assert str(tmp_path / "cache") in second.stderr and "--ledger :memory:" in second.stderr
    fresh = run(["--ledger", ":memory:", "-c", "SELECT COUNT(*) FROM people"], tmp_path=tmp_path)
    assert fresh.returncode == 0 and "budget is spent" not in fresh.stderr

"""Replayed answers in-process (dpsql.connect): the same analyst's same statement over the same
policy and data, within `[budget] replay_seconds`, gets the answer released before, identical and
uncharged (docs/privacy-model.md, "Replayed answers").

Hypothesis: a replay returns the first answer's exact values and adds no ledger row. Each
negative control changes one part of the key (a parameter, the data's version, the analyst, the
window, the policy) and must be charged anew: a replay that ignored that part would give the
stored answer and no new ledger row, and the control would fail. No noise is compared
statistically: two fresh draws of a discrete Laplace count at scale 30 coincide with
probability < 0.02, so the controls assert the ledger, not the values.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dpsql
from dpsql.accounting.ledger import Ledger
from dpsql.backend.auxiliary.files import write_parquet
from dpsql.execution import replay

QUERY = "SELECT dept, COUNT(*) AS n, AVG(income) AS avg_income FROM people GROUP BY dept"


@pytest.fixture
def setup(tmp_path: Path, policy_file, people_frame: pd.DataFrame):
    """open_(analyst="alice", **policy) -> a connection over a Parquet source with a shared SQLite ledger."""
    write_parquet(people_frame, tmp_path / "people.parquet")
    ledger = tmp_path / "ledger.sqlite"
    opened: list[dpsql.Connection] = []

    def open_(analyst: str = "alice", replay_seconds: float | None = None, **kwargs: Any) -> dpsql.Connection:
        policy = policy_file(name="replay.toml", source="people.parquet", replay_seconds=replay_seconds)
        con = dpsql.connect(policy=policy, tables={}, ledger=ledger, analyst=analyst, **kwargs)
        opened.append(con)
        return con

    yield open_
    for con in opened:
        con.close()


def test_repeat_is_replayed_identical_and_free_across_connections(setup) -> None:
    first = setup()
    cur = first.execute(QUERY)
    rows = cur.fetchall()
    assert cur.result.replay is None and len(first.ledger()) == 1
    again = first.execute("select dept, count(*) as n, avg(income) as avg_income\n  from people group by dept")
    assert again.fetchall() == rows  # another spelling of the same statement
    assert again.result.replay is not None and again.result.cost.epsilon == 0
    other = setup()  # a new connection of the same analyst (a BI pool's next query)
    assert other.execute(QUERY).fetchall() == rows
    assert len(other.ledger()) == 1  # nothing charged for the repeats
    explain = "\n".join(r[0] for r in other.execute("EXPLAIN " + QUERY).fetchall())
    assert "Replay: replayed" in explain and "Budget after this query" not in explain


def test_replayed_answer_keeps_intervals(setup) -> None:
    con = setup()
    first = con.execute(QUERY).result
    second = con.execute(QUERY).result
    assert second.cell_ci95 == first.cell_ci95 and second.noise_info == first.noise_info
    assert [second.interval(r, 2) for r in range(len(second.rows))] == [first.interval(r, 2) for r in range(len(first.rows))]


def test_answer_without_a_noise_scale_is_replayed(setup) -> None:
    # MAX by the exponential mechanism has no noise scale and no ci95 (None): its kept answer must
    # read back (it did not: every repeat was charged and noised anew). Control: the first run.
    con = setup()
    sql = "SELECT dept, MAX(income) FROM people GROUP BY dept"
    first = con.execute(sql)
    rows = first.fetchall()
    assert first.result.replay is None and first.result.noise_info[1]["scale"] is None
    again = con.execute(sql)
    assert again.fetchall() == rows and again.result.replay is not None
    assert again.result.noise_info == first.result.noise_info
    assert len(con.ledger()) == 1


def test_changed_parameter_is_charged_anew(setup) -> None:
    con = setup()
    sql = "SELECT COUNT(*) FROM people WHERE age > ?"
    con.execute(sql, [30]).fetchall()
    con.execute(sql, [30]).fetchall()
    assert len(con.ledger()) == 1
    con.execute(sql, [40]).fetchall()
    assert len(con.ledger()) == 2


def test_changed_data_version_is_charged_anew(setup, tmp_path: Path) -> None:
    con = setup()
    con.execute(QUERY).fetchall()
    source = tmp_path / "people.parquet"
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # the file rewritten (same bytes)
    fresh = setup()
    assert fresh.execute(QUERY).result.replay is None
    assert len(fresh.ledger()) == 2


def test_different_analyst_is_charged_anew(setup) -> None:
    setup("alice").execute(QUERY).fetchall()
    bob = setup("bob")
    assert bob.execute(QUERY).result.replay is None
    assert len(bob.ledger()) == 1  # bob's own first charge; alice's answer was not given to him


def test_zero_window_is_charged_anew(setup) -> None:
    off = setup(replay_seconds=0)
    off.execute(QUERY).fetchall()
    off.execute(QUERY).fetchall()
    assert len(off.ledger()) == 2
    assert "Replay: off ([budget] replay_seconds = 0)" in "\n".join(r[0] for r in off.execute("EXPLAIN " + QUERY).fetchall())


def test_expired_answer_is_charged_anew(setup, monkeypatch: pytest.MonkeyPatch) -> None:
    con = setup()
    con.execute(QUERY).fetchall()
    released = replay.now()
    monkeypatch.setattr(replay, "now", lambda: released + 86_400 + 1)
    assert con.execute(QUERY).result.replay is None
    assert len(con.ledger()) == 2


def test_changed_policy_is_charged_anew(setup) -> None:
    setup().execute(QUERY).fetchall()
    fresh = setup(replay_seconds=3600)  # any change to the policy is a new version
    assert fresh.execute(QUERY).result.replay is None and len(fresh.ledger()) == 2


def test_frames_replay_by_object_version(tmp_path: Path, policy_file, people_frame: pd.DataFrame) -> None:
    """An in-memory table: the same frame object across connections replays; a new frame is a new version."""
    policy, ledger = policy_file(), tmp_path / "ledger.sqlite"
    with dpsql.connect(policy=policy, tables={"people": people_frame}, ledger=ledger) as one, \
            dpsql.connect(policy=policy, tables={"people": people_frame}, ledger=ledger) as two:
        rows = one.execute(QUERY).fetchall()
        assert two.execute(QUERY).fetchall() == rows and len(two.ledger()) == 1
    with dpsql.connect(policy=policy, tables={"people": people_frame.copy()}, ledger=ledger) as three:
        assert three.execute(QUERY).result.replay is None and len(three.ledger()) == 2


def test_seeded_session_never_replays(setup) -> None:
    con = setup(random_seed=3)
    con.execute(QUERY).fetchall()
    con.execute(QUERY).fetchall()
    assert len(con.ledger()) == 2


def test_show_budget_and_queries_left_are_per_analyst(setup) -> None:
    """A BI pool's new connection sees how many queries like the analyst's last one fit (from the
    ledger), not nothing; another analyst sees their own (none charged yet)."""
    first = setup()
    first.execute("SELECT COUNT(*) FROM people WHERE age > 20").fetchall()
    other = setup()
    assert other.queries_left == first.queries_left is not None and other.queries_left > 0
    assert other.execute("SHOW dpsql.budget").fetchall() == first.execute("SHOW dpsql.budget").fetchall()
    bob = setup("bob")
    assert bob.queries_left is None and "more queries like the last" not in bob.execute("SHOW dpsql.budget").fetchone()[0]


@pytest.mark.slow
def test_replayed_across_processes_sharing_a_ledger_file(tmp_path: Path, policy_file, people_frame: pd.DataFrame) -> None:
    """Two CLI processes on one SQLite ledger: the second gets the first's answer, uncharged."""
    write_parquet(people_frame, tmp_path / "people.parquet")
    policy, ledger = policy_file(name="cli.toml", source="people.parquet"), tmp_path / "ledger.sqlite"
    command = [sys.executable, "-m", "dpsql", "--policy", str(policy), "--ledger", str(ledger), "-c", QUERY]
    first = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
    second = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
    assert "cost: epsilon 0.1" in first and "replayed" not in first
    assert "replayed: the answer released to you at" in second
    assert first.split("(12 rows)")[0] == second.split("(12 rows)")[0]  # the same table, cell for cell
    with Ledger(ledger) as opened:
        assert len(opened.entries("analyst")) == 1

"""The REPL driven through prompt_toolkit's pipe input: keys in, printed answers and the ledger out."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

import dpsql
from dpsql.repl.prompt import Repl, history_path
from dpsql.session import Session

Connect = Callable[..., dpsql.Connection]
ENTER = "\r"
EXPENSIVE = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 4) COUNT(*) FROM people;"


@dataclass
class Run:
    status: int
    out: str
    err: str
    repl: Repl


def drive(session: Session, keys: str, **kwargs: object) -> Run:
    """Type `keys` into a REPL over `session` and run it to the end (keys must end by quitting)."""
    out, err = io.StringIO(), io.StringIO()
    kwargs.setdefault("history", InMemoryHistory())
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        repl = Repl(session, input=pipe, output=DummyOutput(), out=out, err=err, **kwargs)  # type: ignore[arg-type]
        status = repl.run()
    return Run(status, out.getvalue(), err.getvalue(), repl)


@pytest.fixture
def session(connect: Connect) -> Session:
    return connect().session


def test_scripted_session_query_describe_budget(session: Session) -> None:
    keys = ENTER.join(["SELECT dept, COUNT(*)", "FROM people", "GROUP BY dept;", "\\d people", "\\budget", "\\q", ""])
    run = drive(session, keys)
    assert run.status == 0 and run.err == ""
    assert run.out.startswith("dpsql: differentially private SQL. Analyst analyst: epsilon 10 of 10")
    table = run.out.split("\n", 2)[2]
    assert table.splitlines()[0].split("|")[0].strip() == "dept"
    assert "engineering" in table and " ± " in table and "(12 rows)  cost: epsilon 0.1" in table
    assert 'Table "people": private; privacy unit person_id' in run.out and "[0, 500000]" in run.out
    assert "remaining |     9.9 | 1e-05" in run.out and "SELECT dept, COUNT(*) FROM people GROUP BY dept" in run.out
    entries = session.ledger_entries()
    assert len(entries) == 1 and entries[0].query == "SELECT dept, COUNT(*)\nFROM people\nGROUP BY dept"
    toolbar = run.repl.toolbar()
    assert "analyst analyst" in toolbar and "remaining epsilon 9.9 of 10" in toolbar
    assert "last query epsilon 0.1, delta 0" in toolbar


def test_confirmation_no_does_not_charge_and_yes_does(session: Session) -> None:
    declined = drive(session, ENTER.join([EXPENSIVE, "n", "\\q", ""]))
    assert "Not run: nothing was charged." in declined.out and "±" not in declined.out
    assert session.ledger_entries() == [] and session.remaining == session.total_budget
    accepted = drive(session, ENTER.join([EXPENSIVE, "y", "\\q", ""]))
    assert "±" in accepted.out and "cost: epsilon 4" in accepted.out
    assert [e.cost.epsilon for e in session.ledger_entries()] == [4]
    # 4 of the remaining 6 is above the default share: Enter alone (the default answer) declines
    # (another statement: the same one again would be a replay of its answer, free and not asked).
    again = drive(session, ENTER.join([EXPENSIVE.replace("FROM people", "FROM people WHERE age > 20"), "", "\\q", ""]))
    assert "Not run" in again.out and len(session.ledger_entries()) == 1
    replayed = drive(session, ENTER.join([EXPENSIVE, "\\q", ""]))
    assert "Not run" not in replayed.out and "replayed" in replayed.out and len(session.ledger_entries()) == 1


def test_confirm_share_threshold(session: Session) -> None:
    run = drive(session, ENTER.join([EXPENSIVE, "\\q", ""]), confirm_share=0.5)
    assert "Not run" not in run.out and "±" in run.out and len(session.ledger_entries()) == 1


def test_errors_show_the_caret_and_the_session_goes_on(session: Session) -> None:
    run = drive(session, ENTER.join(["SELECT income FROM people;", "SELECT COUNT(*) FROM people;", "\\nope", "\\q", ""]))
    assert run.status == 0
    error_lines = run.err.splitlines()
    assert error_lines[0].startswith("ERROR: DP1")
    line, caret = error_lines[1], error_lines[2]
    assert line.strip() == "SELECT income FROM people"
    assert line[caret.index("^") :].startswith("income")
    assert "unknown command \\nope" in run.err
    assert "±" in run.out and len(session.ledger_entries()) == 1


def test_explain_and_backslash_explain_spend_nothing(session: Session) -> None:
    run = drive(session, ENTER.join(["EXPLAIN SELECT AVG(income) FROM people;", "\\explain SELECT COUNT(*) FROM people", "\\q", ""]))
    assert run.out.count("QUERY PLAN") == 2 and "Cost: epsilon 0.1" in run.out
    assert session.ledger_entries() == []


def test_timing_and_several_statements_per_input(session: Session) -> None:
    run = drive(session, ENTER.join(["\\timing", "SELECT COUNT(*) FROM people; SELECT SUM(age) FROM people;", "quit", ""]))
    assert "Timing is on." in run.out and run.out.count("Time: ") == 2 and len(session.ledger_entries()) == 2


def test_end_of_input_quits(session: Session) -> None:
    assert drive(session, "\x04").status == 0  # Ctrl-D on an empty line


def test_history_file_from_the_environment(session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPSQL_HISTORY", str(tmp_path / "h" / "history"))
    drive(session, ENTER.join(["SELECT COUNT(*) FROM people;", "\\q", ""]), history=None)
    saved = (tmp_path / "h" / "history").read_text(encoding="utf-8")
    assert "+SELECT COUNT(*) FROM people;" in saved
    assert (tmp_path / "h" / "history").stat().st_mode & 0o077 == 0, "the history file is private to its owner"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG paths are for Linux")
def test_history_path_precedence(tmp_path: Path) -> None:
    assert history_path({"DPSQL_HISTORY": str(tmp_path / "x"), "DPSQL_CACHE_DIR": "/c"}) == tmp_path / "x"
    assert history_path({"DPSQL_CACHE_DIR": str(tmp_path)}) == tmp_path / "history"
    assert history_path({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "dpsql" / "history"

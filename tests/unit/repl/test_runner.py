"""The runner: the confirmation prompt decides nothing about privacy, timing, scripts' exit status."""

from __future__ import annotations

import io
from collections.abc import Callable
from fractions import Fraction

import dpsql
from dpsql.accounting.cost import PrivacyCost
from dpsql.repl.backslash import ReplState
from dpsql.repl.runner import Runner, needs_confirmation, run_script

Connect = Callable[..., dpsql.Connection]
EXPENSIVE = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 3) COUNT(*) FROM people"


def test_needs_confirmation_compares_with_a_share_of_the_remaining_epsilon() -> None:
    remaining = PrivacyCost(10, Fraction(1, 10**5))
    assert needs_confirmation(PrivacyCost(Fraction(26, 10)), remaining, 0.25)
    assert not needs_confirmation(PrivacyCost(Fraction(25, 10)), remaining, 0.25)
    assert needs_confirmation(PrivacyCost(Fraction(1, 10)), remaining, 0.0)
    assert not needs_confirmation(PrivacyCost.zero(), remaining, 0.0), "free statements never ask"
    assert not needs_confirmation(PrivacyCost(11), remaining, 0.25), "the Session refuses it with its own message"


def test_declined_query_is_not_charged_and_accepted_one_is(connect: Connect) -> None:
    session = connect().session
    questions: list[str] = []
    answers = iter([False, True])

    def confirm(question: str) -> bool:
        questions.append(question)
        return next(answers)

    runner = Runner(session, ReplState(confirm_share=0.25), confirm=confirm)
    declined = runner.run(EXPENSIVE)
    assert declined.ok and "nothing was charged" in declined.text
    assert session.ledger_entries() == [] and session.remaining == session.total_budget
    accepted = runner.run(EXPENSIVE)
    assert "±" in accepted.text
    assert [e.cost.epsilon for e in session.ledger_entries()] == [3]
    assert "epsilon 3" in questions[0] and "remaining epsilon 10" in questions[0]
    assert runner.state.last_cost == PrivacyCost(3)


def test_cheap_free_and_refused_statements_do_not_ask(connect: Connect) -> None:
    session = connect().session

    def confirm(question: str) -> bool:
        raise AssertionError(f"asked: {question}")

    runner = Runner(session, ReplState(confirm_share=0.25), confirm=confirm)
    assert runner.run("SELECT COUNT(*) FROM people").ok
    assert runner.run("EXPLAIN " + EXPENSIVE).ok
    refused = runner.run("SELECT * FROM people")
    assert not refused.ok and refused.error.startswith("ERROR: DP104") and "^" in refused.error


def test_timing_line(connect: Connect) -> None:
    session = connect().session
    ticks = iter([1.0, 1.25])
    runner = Runner(session, ReplState(timing=True), clock=lambda: next(ticks))
    assert runner.run("SELECT COUNT(*) FROM people").text.endswith("Time: 250.0 ms")


def test_script_runs_commands_and_reports_failures(connect: Connect) -> None:
    session = connect().session
    out, err = io.StringIO(), io.StringIO()
    status = run_script(session, "\\d people\nSELECT COUNT(*) FROM people;\nSELECT * FROM people;\n\\budget\n", out, err)
    assert status == 1
    text = out.getvalue()
    assert "[18, 90]" in text and "±" in text and "budget remaining: epsilon 9.9" in text and "#1" in text
    assert "DP104" in err.getvalue()


def test_script_stops_at_quit_and_succeeds(connect: Connect) -> None:
    session = connect().session
    out, err = io.StringIO(), io.StringIO()
    assert run_script(session, "SELECT COUNT(*) FROM people;\n\\q\nSELECT * FROM people;\n", out, err) == 0
    assert err.getvalue() == "" and len(session.ledger_entries()) == 1

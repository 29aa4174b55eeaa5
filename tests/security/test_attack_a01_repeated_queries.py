"""A1: repeated and equivalent queries (averaging attack).

Attack: run the same noisy COUNT many times, or many syntactically different queries with the same
meaning, and average the answers until the noise cancels.

Pass criterion: every execution that draws noise is charged to the ledger before it is answered,
equivalent spellings are charged like repeats, and once the budget is spent nothing more is
answered, so the average of all answers is itself a composition within the budget. With replay
on (the default for unseeded sessions: docs/privacy-model.md, "Replayed answers") a repeat within
the window is free but is the same draw: averaging gets the first answer back. Negative control:
a build whose ledger lets a repeated plan through for free (charge skipped when the plan hash was
seen) is caught by the same counting helper; with replay off, the same repeats draw fresh noise
(the replay check sees a difference when there is one).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

import dpsql
from dpsql.accounting.ledger import Ledger
from dpsql.errors import BudgetExhaustedError

OPT = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01) "
SQL = OPT + "COUNT(*) FROM people WHERE age > 30"

# Fifty spellings of "how many people are older than 30": ten predicates, five surface forms.
PREDICATES = (
    "age > 30", "age >= 31", "NOT age <= 30", "NOT (age < 31)", "30 < age", "31 <= age",
    "age - 30 > 0", "age > 30 AND true", "age BETWEEN 31 AND 1000", "age + 0 > 29 + 1",
)
FORMS = (
    OPT + "COUNT(*) FROM people WHERE {p}",
    OPT + "count(1) FROM people WHERE ({p})",
    OPT + "COUNT(*)  FROM  people  /* again */ WHERE {p}",
    OPT + "COUNT(person_id) FROM people AS q WHERE {p}",
    OPT.lower() + "COUNT(*) AS n FROM people WHERE {p} LIMIT 10",
)
EQUIVALENTS = [form.format(p=p) for form in FORMS for p in PREDICATES]


def executions_and_charges(con: dpsql.Connection, statements: list[str]) -> tuple[int, int, list[Any]]:
    """Run each statement; (answered, ledger entries added, answers)."""
    before = len(con.ledger())
    answers = [con.execute(sql).fetchone()[0] for sql in statements]
    return len(answers), len(con.ledger()) - before, answers


def test_a01_every_repeat_is_charged_and_the_budget_stops_the_averaging(connect, policy_file) -> None:
    con = connect(policy_file(epsilon=1.0, accountant="basic"), random_seed=11)
    answered = refused = 0
    answers = []
    for _ in range(1000):
        try:
            answers.append(con.execute(SQL).fetchone()[0])
            answered += 1
        except BudgetExhaustedError:
            refused += 1
    assert (answered, refused) == (100, 900)  # 100 x 0.01 = 1 exactly (Fractions)
    entries = con.ledger()
    assert len(entries) == 100 and sum(e.cost.epsilon for e in entries) == Fraction(1)
    assert con.budget[0] == 0.0
    assert len(set(answers)) > 10  # fresh noise each time, not one cached answer charged again and again


@pytest.mark.parametrize("replay_seconds", [None, 0])
def test_a01_replayed_repeats_are_one_draw(connect, policy_file, replay_seconds) -> None:
    con = connect(policy_file(epsilon=1.0, accountant="basic", replay_seconds=replay_seconds))  # unseeded: replay on by default
    answers = [con.execute(SQL).fetchone()[0] for _ in range(50)]
    if replay_seconds is None:
        assert len(set(answers)) == 1 and len(con.ledger()) == 1  # averaging 50 repeats gives the first answer
    else:  # the control: without replay every repeat is charged and noised anew
        assert len(set(answers)) > 10 and len(con.ledger()) == 50


def test_a01_fifty_equivalent_spellings_are_each_charged(connect, policy_file) -> None:
    assert len(set(EQUIVALENTS)) == 50
    con = connect(policy_file(epsilon=1.0, accountant="basic"), random_seed=12)
    answered, charges, answers = executions_and_charges(con, EQUIVALENTS)
    assert answered == charges == 50
    assert con.budget[0] == pytest.approx(0.5, abs=1e-12)


def test_a01_cte_and_subquery_wrapped_equivalents_are_charged_like_repeats(connect) -> None:
    # Row-level CTEs and subqueries are accepted (they are inlined over the table): each wrapped
    # spelling is one more charged execution, exactly as a repeat of the flat query.
    con = connect(random_seed=13)
    wrapped = ["WITH p AS (SELECT * FROM people WHERE age > 30) " + OPT + "COUNT(*) FROM p",
               OPT + "COUNT(*) FROM (SELECT * FROM people) AS v WHERE age > 30",
               OPT + "COUNT(*) FROM main.people WHERE age > 30"]
    answered, charges, _ = executions_and_charges(con, [SQL, *wrapped])
    assert answered == charges == 4
    assert {entry.cost for entry in con.ledger()} == {con.ledger()[0].cost}


def test_a01_negative_control_free_repeats_are_caught(connect, policy_file, monkeypatch) -> None:
    # A build that charges a plan only the first time it sees it (a "free cache" without the
    # cached answer): the same helper sees fewer charges than answers.
    seen: set[tuple[str, str]] = set()
    # Every charge enters the ledger through charge_record (Ledger.charge delegates to it).
    charge_record = Ledger.charge_record

    def charge_once(self: Ledger, record: Any, **kwargs: Any) -> Any:
        key = (kwargs["analyst"], kwargs["plan_hash"])
        if key in seen:
            return None
        seen.add(key)
        return charge_record(self, record, **kwargs)

    monkeypatch.setattr(Ledger, "charge_record", charge_once)
    con = connect(policy_file(epsilon=1.0), random_seed=14)
    answered, charges, _ = executions_and_charges(con, [SQL] * 20)
    assert answered == 20 and charges == 1  # the check `answered == charges` above would fail

"""Backslash commands: pure text from the policy and the ledger, plus their dispatch over a Session."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import dpsql
from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import LedgerEntry
from dpsql.catalog.policy import Policy
from dpsql.repl.backslash import ReplState, budget_text, describe_table, describe_tables, history_text, run_command

Connect = Callable[..., dpsql.Connection]


def entry(n: int, eps: str, query: str, delta: str = "0") -> LedgerEntry:
    return LedgerEntry(id=n, analyst="ann", session="s", time=1_700_000_000 + n, query=query, plan_hash="h",
                       mechanism="laplace", params={}, cost=PrivacyCost(Fraction(eps), Fraction(delta)))


def test_describe_tables_lists_kind_unit_and_limits(policy: Policy) -> None:
    lines = describe_tables(policy).splitlines()
    assert lines[0].split(" | ")[:3] == ["table ", "kind   ", "privacy unit"]
    rows = {line.split("|")[0].strip(): [c.strip() for c in line.split("|")] for line in lines[2:]}
    assert rows["people"] == ["people", "private", "person_id", "3", "2", "5"]
    assert rows["visits"] == ["visits", "private", "patient_id", "5", "1", "3"]
    assert rows["wards"] == ["wards", "public", "", "", "", "2"]


def test_describe_table_shows_bounds_domain_and_unit(policy: Policy) -> None:
    text = describe_table(policy.tables["visits"])
    head, *table = text.splitlines()
    assert "private" in head and "privacy unit patient_id" in head and "max_rows 5" in head and "max_groups 1" in head
    rows = {line.split("|")[0].strip(): [c.strip() for c in line.split("|")] for line in table[2:]}
    assert rows["cost"][1:3] == ["float", "[0, 1000] step 0.01"]
    assert rows["ward"][3] == "a, b, c, d, e, … (7 values)"
    assert "public domain" in rows["ward"][4]
    assert "privacy unit" in rows["patient_id"][4] and rows["patient_id"][2] == ""
    people = describe_table(policy.tables["people"])
    assert "[18, 90]" in people and "[0, 500000]" in people and "engineering" in people


def test_describe_public_table(policy: Policy) -> None:
    text = describe_table(policy.tables["wards"])
    assert "public" in text.splitlines()[0] and "no noise" in text
    assert "floor" in text and "privacy unit" not in text


def test_budget_text_numbers_and_bars() -> None:
    entries = [entry(1, "1/10", "SELECT COUNT(*) FROM people"), entry(2, "2/5", "SELECT\n  AVG(income)\nFROM people")]
    text = budget_text("ann", PrivacyCost(10, Fraction(1, 100000)), PrivacyCost(Fraction(1, 2)),
                       PrivacyCost(Fraction(19, 2), Fraction(1, 100000)), entries)
    lines = text.splitlines()
    assert lines[0] == "Budget of analyst ann:"
    assert [c.strip() for c in lines[3].split("|")] == ["total", "10", "1e-05"]
    assert [c.strip() for c in lines[4].split("|")] == ["spent", "0.5", "0"]
    assert [c.strip() for c in lines[5].split("|")] == ["remaining", "9.5", "1e-05"]
    assert "5.0%" in text
    first, second = (line for line in lines if line.lstrip().startswith("#"))
    assert first.count("█") * 4 == second.count("█"), "bars are proportional to epsilon"
    assert second.endswith("SELECT AVG(income) FROM people"), "queries on one line"


def test_budget_text_without_charges() -> None:
    text = budget_text("ann", PrivacyCost(1), PrivacyCost.zero(), PrivacyCost(1), [])
    assert "No queries charged yet." in text and "0.0%" in text


def test_budget_text_charts_only_the_newest_queries() -> None:
    entries = [entry(n, "1/10", f"SELECT {n}") for n in range(1, 31)]
    text = budget_text("ann", PrivacyCost(10), PrivacyCost(3), PrivacyCost(7), entries)
    assert "30 charged, newest 15" in text and "#16" in text and "#30" in text and "#15 " not in text


def test_history_text_is_the_ledger_in_order() -> None:
    text = history_text([entry(1, "1/10", "SELECT 1"), entry(2, "1/2", "SELECT 2", delta="1/1000000")])
    lines = text.splitlines()
    assert lines[0].split(" | ")[0].strip() == "#"
    assert [c.strip() for c in lines[2].split("|")][2:] == ["0.1", "0", "laplace", "SELECT 1"]
    assert [c.strip() for c in lines[3].split("|")][2:] == ["0.5", "1e-06", "laplace", "SELECT 2"]
    assert history_text([]).startswith("The ledger is empty")


def test_dispatch_over_a_session(connect: Connect) -> None:
    session = connect().session
    state = ReplState()
    assert "people" in run_command("\\d", session, state).text
    assert "[18, 90]" in run_command("\\d people;", session, state).text
    missing = run_command("\\d nosuch", session, state)
    assert not missing.ok and "unknown table" in missing.error
    assert run_command("\\q", session, state).quit
    unknown = run_command("\\frobnicate", session, state)
    assert not unknown.ok and "\\help" in unknown.error
    assert "\\budget" in run_command("\\help", session, state).text


def test_timing_toggles(connect: Connect) -> None:
    session = connect().session
    state = ReplState()
    assert run_command("\\timing", session, state).text == "Timing is on." and state.timing
    assert run_command("\\timing", session, state).text == "Timing is off." and not state.timing
    assert run_command("\\timing on", session, state).text == "Timing is on."
    assert not run_command("\\timing maybe", session, state).ok


def test_budget_and_history_read_the_ledger(connect: Connect) -> None:
    session = connect().session
    state = ReplState()
    assert "No queries charged yet." in run_command("\\budget", session, state).text
    session.execute("SELECT COUNT(*) FROM people")
    budget = run_command("\\budget", session, state).text
    assert "#1" in budget and "SELECT COUNT(*) FROM people" in budget and "1.0%" in budget
    history = run_command("\\history", session, state).text
    assert "SELECT COUNT(*) FROM people" in history and len(history.splitlines()) == 3


def test_explain_command_spends_nothing(connect: Connect) -> None:
    session = connect().session
    before = session.remaining
    text = run_command("\\explain SELECT COUNT(*) FROM people", session, ReplState()).text
    assert "Cost: epsilon 0.1" in text and "QUERY PLAN" in text
    assert session.remaining == before and session.ledger_entries() == []
    refused = run_command("\\explain SELECT * FROM people", session, ReplState())
    assert not refused.ok and "DP104" in refused.error and "^" in refused.error
    assert not run_command("\\explain", session, ReplState()).ok


def test_budget_text_names_a_filter_other_than_basic() -> None:
    entries = [entry(1, "1/10", "SELECT COUNT(*) FROM people")]
    args = ("ann", PrivacyCost(10, Fraction(1, 100000)), PrivacyCost(Fraction(1, 20)), PrivacyCost(Fraction(199, 20)), entries)
    assert "the adaptive privacy filter holds all charges at delta 1e-05" in budget_text(*args, "adaptive")
    assert "filter" not in budget_text(*args, "basic") and "filter" not in budget_text(*args)


def test_budget_text_marks_a_median_mechanism_reservation() -> None:
    plain = entry(1, "1/10", "SELECT COUNT(*) FROM people")
    layer = LedgerEntry(id=2, analyst="ann", session="s", time=1_700_000_002, query="SELECT COUNT(*) FROM people WHERE age > 30",
                        plan_hash="median-mechanism", mechanism="median_mechanism", params={}, cost=PrivacyCost(Fraction(3, 10)))
    text = budget_text("ann", PrivacyCost(10), PrivacyCost(Fraction(2, 5)), PrivacyCost(Fraction(48, 5)), [plain, layer])
    lines = text.splitlines()
    assert "[median mechanism reservation] SELECT COUNT(*) FROM people WHERE age > 30" in lines[-1]
    assert "[median mechanism reservation]" not in lines[-2]

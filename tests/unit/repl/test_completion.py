"""Completion: the right kind of word for the SQL context, and only what the policy declares."""

from __future__ import annotations

import re

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from dpsql.catalog.policy import Policy
from dpsql.repl.completion import PolicyCompleter, suggest
from dpsql.session import Session

FUNCTIONS = Session.sql_functions()
PEOPLE = ["person_id", "age", "income", "dept", "region"]
VISITS = ["patient_id", "cost", "ward"]


def words(text: str, policy: Policy, after: str = "") -> list[str]:
    return [s.text for s in suggest(text, policy, FUNCTIONS, after)]


def declared_columns(policy: Policy) -> set[str]:
    return {c for t in policy.tables.values() for c in t.columns}


def test_statement_start_offers_statements(policy: Policy) -> None:
    assert words("", policy) == ["SELECT", "EXPLAIN", "SET"]
    assert words("sel", policy) == ["select"]
    assert words("EXPLAIN ", policy) == ["SELECT"]


def test_after_from_only_tables(policy: Policy) -> None:
    assert words("SELECT COUNT(*) FROM ", policy) == ["people", "visits", "wards"]
    assert words("SELECT COUNT(*) FROM vi", policy) == ["visits"]
    assert words("SELECT COUNT(*) FROM VI", policy) == ["visits"]


def test_after_a_table_clause_keywords(policy: Policy) -> None:
    got = words("SELECT COUNT(*) FROM people ", policy)
    assert "WHERE" in got and "GROUP BY" in got
    assert not set(got) & declared_columns(policy)


@pytest.mark.parametrize("clause", ["SELECT ", "SELECT COUNT(*) FROM visits WHERE ", "SELECT ward, COUNT(*) FROM visits GROUP BY ",
                                    "SELECT ward, COUNT(*) FROM visits GROUP BY ward ORDER BY ", "SELECT COUNT(*) FROM visits HAVING "])
def test_expression_clauses_offer_the_from_tables_columns(policy: Policy, clause: str) -> None:
    after = "" if "FROM" in clause else " FROM visits"
    got = words(clause, policy, after)
    columns = [w for w in got if w in declared_columns(policy)]
    assert columns == VISITS, "only the FROM table's columns, in policy order"
    assert {"COUNT", "SUM", "AVG", "ABS", "COALESCE"} <= set(got)


def test_the_from_table_is_found_after_the_cursor(policy: Policy) -> None:
    assert [w for w in words("SELECT SUM(", policy, ") FROM people") if w in declared_columns(policy)] == PEOPLE


def test_prefix_filters_columns_functions_and_keywords(policy: Policy) -> None:
    assert words("SELECT COUNT(*) FROM people WHERE ag", policy) == ["age"]
    # approx_quantile is an aggregate with a mechanism since the quantile spellings were mapped
    assert words("SELECT a", policy, " FROM people") == ["age", "approx_quantile", "avg", "abs", "ascii", "and", "as", "asc"]
    assert words("SELECT A", policy, " FROM people")[2:4] == ["AVG", "ABS"]


def test_aggregates_come_before_scalar_functions(policy: Policy) -> None:
    got = [s for s in suggest("SELECT ", policy, FUNCTIONS, " FROM people") if s.meta.endswith("function")]
    kinds = [s.meta for s in got]
    n_aggregates = kinds.count("aggregate function")
    assert kinds == ["aggregate function"] * n_aggregates + ["scalar function"] * (len(kinds) - n_aggregates)
    assert {"COUNT", "SUM", "AVG"} <= {s.text for s in got[:n_aggregates]}


def test_refused_and_forbidden_functions_are_never_offered(policy: Policy) -> None:
    got = {w.lower() for w in words("SELECT ", policy, " FROM people")}
    assert not got & {"corr", "string_agg", "read_csv", "random", "getenv", "error"}
    assert "stddev" in got  # STDDEV has a mechanism now (mechanisms/variance.py)
    assert {"min", "max"} <= got  # approximate MIN/MAX have a mechanism (the fine-grid exponential mechanism)
    functions = {s.text for s in suggest("SELECT ", policy, FUNCTIONS, " FROM people") if s.meta.endswith("function")}
    assert not functions & {"AND", "OR", "CASE"}, "connectives are keywords, not calls"


def test_qualified_columns_through_table_and_alias(policy: Policy) -> None:
    assert words("SELECT v.", policy, " FROM visits v") == VISITS
    assert words("SELECT COUNT(*) FROM visits AS v WHERE v.c", policy) == ["cost"]
    assert words("SELECT people.", policy) == PEOPLE
    assert words("SELECT nosuch.", policy, " FROM people") == []


def test_never_suggests_a_column_outside_the_policy(policy: Policy) -> None:
    contexts = ["SELECT ", "SELECT x", "SELECT COUNT(*) FROM people WHERE ", "SELECT p.", "SELECT COUNT(*) FROM nosuch WHERE ",
                "SELECT s", "SELECT dept, COUNT(*) FROM people GROUP BY ", "SELECT COUNT(*) FROM people p WHERE p."]
    keywords_and_functions = {w.lower() for w in FUNCTIONS} | {"select", "explain", "set"}
    for text in contexts:
        for s in suggest(text, policy, FUNCTIONS, " FROM people p"):
            if s.meta.startswith(("people", "visits", "wards")):
                table = s.meta.split(":")[0]
                assert s.text in policy.tables[table].columns, (text, s)
            else:
                assert s.meta in ("keyword", "aggregate function", "scalar function", "table", "public table"), (text, s)
                assert s.text.lower() in keywords_and_functions or re.fullmatch(r"[A-Za-z_ ]+", s.text), (text, s)


def test_an_undeclared_table_falls_back_to_declared_columns(policy: Policy) -> None:
    got = suggest("SELECT COUNT(*) FROM secrets WHERE ", policy, FUNCTIONS)
    columns = {s.text for s in got if ":" in s.meta}
    assert columns == declared_columns(policy)


def test_privacy_unit_is_marked(policy: Policy) -> None:
    metas = {s.text: s.meta for s in suggest("SELECT ", policy, FUNCTIONS, " FROM people")}
    assert metas["person_id"] == "people: privacy unit"
    assert metas["income"] == "people: float"


def test_options_and_settings(policy: Policy) -> None:
    assert words("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (eps", policy) == ["epsilon"]
    got = words("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*), in", policy, " FROM people")
    assert got[0] == "income" and "epsilon" not in got
    assert words("SET ", policy) == ["dpsql.epsilon", "dpsql.delta"]
    assert words("SET dpsql.d", policy) == ["delta"]


def test_nothing_inside_strings_and_comments(policy: Policy) -> None:
    assert words("SELECT COUNT(*) FROM people WHERE dept = 'eng", policy) == []
    assert words("SELECT COUNT(*) FROM people -- peo", policy) == []


def test_only_the_current_statement_counts(policy: Policy) -> None:
    got = words("SELECT COUNT(*) FROM visits; SELECT COUNT(*) FROM people WHERE ", policy)
    assert [w for w in got if w in declared_columns(policy)] == PEOPLE


def test_backslash_commands_and_their_tables(policy: Policy) -> None:
    assert words("\\bu", policy) == ["\\budget"]
    assert "\\d" in words("\\", policy) and "\\q" in words("\\", policy)
    assert words("\\d ", policy) == ["people", "visits", "wards"]
    assert words("\\d pe", policy) == ["people"]
    got = words("\\explain SELECT COUNT(*) FROM visits WHERE w", policy)
    assert got[0] == "ward" and "where" in got


def test_start_position_replaces_the_partial_word(policy: Policy) -> None:
    (only,) = suggest("SELECT COUNT(*) FROM people WHERE inc", policy, FUNCTIONS)
    assert (only.text, only.start) == ("income", -3)
    (qualified,) = suggest("SELECT p.inc", policy, FUNCTIONS, " FROM people p")
    assert (qualified.text, qualified.start) == ("income", -3)


def test_prompt_toolkit_adapter_is_quiet_until_a_word_starts(policy: Policy) -> None:
    completer = PolicyCompleter(policy, FUNCTIONS)
    typing = CompleteEvent(text_inserted=True)
    assert list(completer.get_completions(Document("SELECT COUNT(*) FROM "), typing)) == []
    assert [c.text for c in completer.get_completions(Document("SELECT COUNT(*) FROM "), CompleteEvent(completion_requested=True))] == [
        "people", "visits", "wards"]
    (people,) = completer.get_completions(Document("SELECT COUNT(*) FROM peo"), typing)
    assert (people.text, people.start_position) == ("people", -3)

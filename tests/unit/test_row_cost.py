"""DP125's work bound (dpsql/analysis/row_cost.py, pattern_size.py): honest row expressions pass,
expressions that can cost one row seconds are refused before the charge with a caret under the
call, and the bound follows the model written in grammar/semantic_rules.md."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot

import dpsql
from dpsql.analysis import row_cost
from dpsql.analysis.function_arguments import check_bounded_expressions, length_bound
from dpsql.analysis.pattern_size import CLASS, UNICODE_CLASS, regex_program_size
from dpsql.errors import UnsupportedQueryError

WHERE = "SELECT COUNT(*) FROM people WHERE "
PAD = "lpad(region || '1', 65536, 'ab')"


def work(predicate: str) -> row_cost.Work:
    sql = WHERE + predicate
    memo: dict[int, object] = {}
    return row_cost.work_of(sqlglot.parse_one(sql, read="duckdb"), lambda node: length_bound(node, sql, memo))  # type: ignore[arg-type]


def refusal(predicate: str) -> UnsupportedQueryError:
    sql = WHERE + predicate
    with pytest.raises(UnsupportedQueryError) as info:
        check_bounded_expressions(sqlglot.parse_one(sql, read="duckdb"), sql)
    return info.value


@pytest.mark.parametrize(("pattern", "at_least"), [
    ("abc", 3),
    ("[ab]*a[ab]{999}c", 999 * CLASS),  # each copy of the class is compiled
    ("(a{10}){10}", 100),  # nested counts multiply
    ("(?i)abc", 9),  # case folding: each letter three ways
    ("\\pL+", UNICODE_CLASS),
    ("x{2,50}", 50),
    ("a{5,}", 6),
])
def test_regex_program_size_is_at_least_what_the_pattern_compiles_to(pattern: str, at_least: int) -> None:
    assert regex_program_size(pattern) >= at_least


@pytest.mark.parametrize("pattern", ["(ab", "ab)", "[ab", "a{3", "\\", "(?P<n", "a{,5}", "\\p{Greek", "\\Qab"])
def test_regex_program_size_never_fails_on_malformed_patterns(pattern: str) -> None:
    assert regex_program_size(pattern) > 0  # DP123 refuses them before the charge; pricing must not crash


@pytest.mark.parametrize("predicate", [
    "regexp_matches(region, '^(north|south|east|west)$')",
    "region LIKE '%or%' AND region ILIKE 'N%'",
    "regexp_full_match(lower(region), '[a-z]+')",
    "contains(region, 'th') OR strpos(dept, 'ale') > 0",
    "length(lpad(region, 65536, 'x')) > 0",  # A12's heaviest accepted expression stays accepted
    "age IN (" + ", ".join(str(i) for i in range(200)) + ")",
    "CASE " + " ".join(f"WHEN age < {i} THEN {i}" for i in range(200)) + " END > 3",
])
def test_honest_row_expressions_fit_the_caps(predicate: str) -> None:
    sql = WHERE + predicate
    check_bounded_expressions(sqlglot.parse_one(sql, read="duckdb"), sql)


@pytest.mark.parametrize(("predicate", "caret"), [
    (f"regexp_matches({PAD}, '[ab]*a[ab]{{999}}c')", "regexp_matches("),
    (f"{PAD} SIMILAR TO '%a{'_' * 99}c%'", "region"),  # an operator: the caret under what it reads
    (f"{PAD} LIKE '%{'_' * 20}%'", "region"),
    ("contains(region, dept)", "contains("),  # quadratic in the row's strings
    ("age IN (" + ", ".join(str(i) for i in range(1000)) + ")", "age IN"),
    ("regexp_matches(region, '(a|b)*a(a|b){999}c')", "regexp_matches("),  # over the growth cap on a column
])
def test_expressions_that_can_cost_one_row_seconds_are_refused_with_a_caret(predicate: str, caret: str) -> None:
    error = refusal(predicate)
    assert error.code == "DP125" and "steps of engine work" in error.message
    assert error.span is not None and (WHERE + predicate)[error.span.start:].startswith(caret), error


def test_calls_under_the_cap_add_up_over_it_and_the_caret_points_at_their_sum() -> None:
    one = "regexp_matches(lpad(region || '1', 1024, 'ab'), 'a(a|b){8}c')"
    assert work(one).fits()
    calls = " OR ".join([one.replace("{8}", f"{{{8 + i}}}") for i in range(8)])
    assert not work(calls).fits()
    error = refusal(f"({calls})")
    assert error.code == "DP125" and error.span is not None
    assert error.span.end - error.span.start > len(one) * 2  # under the whole OR, not one call


def test_nested_calls_pay_for_the_length_the_calls_below_them_build() -> None:
    regex = row_cost.REGEX_STEP * regex_program_size("ab")  # per character of its input
    assert work("regexp_matches(region, 'ab')").growth >= regex
    assert work("regexp_matches(repeat(region, 60), 'ab')").growth >= 60 * regex  # repeat multiplies the input
    assert work(f"regexp_matches({PAD}, 'ab')").constant >= 65536 * regex  # a padding is its length


def test_the_attack_is_refused_before_the_charge(tmp_path: Path) -> None:
    from tests.conftest import make_policy_text
    from tests.security.attack_support import SECRET_ID, with_secret_person

    policy = tmp_path / "policy.toml"
    policy.write_text(make_policy_text(), encoding="utf-8")
    from dpsql.demo.people import generate_people

    con = dpsql.connect(policy=policy, tables={"people": with_secret_person(generate_people(200), rows=1, age=60)})
    sql = (f"SELECT COUNT(*) FROM people WHERE CASE WHEN person_id = {SECRET_ID} AND age > 40 THEN "
           f"regexp_matches({PAD}, '[ab]*a[ab]{{999}}c') ELSE false END")
    with pytest.raises(dpsql.ProgrammingError) as info:
        con.execute(sql)
    assert getattr(info.value, "code", None) == "DP125"
    assert con.ledger() == []  # nothing charged
    con.close()

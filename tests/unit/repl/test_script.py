"""Splitting input into statements and backslash commands, and when Enter submits."""

from __future__ import annotations

import pytest

from dpsql.repl.script import is_complete, split_script, split_statements


def test_commands_run_to_the_end_of_their_line() -> None:
    text = "\\d people\nSELECT COUNT(*)\nFROM people;\n  \\budget\n-- note\n\\q\nSELECT 2"
    assert list(split_script(text)) == ["\\d people", "SELECT COUNT(*)\nFROM people", "\\budget", "\\q", "SELECT 2"]


def test_backslash_inside_a_statement_or_string_is_sql() -> None:
    text = "SELECT COUNT(*) FROM people\n\\d\n;SELECT '\n\\x' FROM t;"
    assert list(split_script(text)) == ["SELECT COUNT(*) FROM people\n\\d", "SELECT '\n\\x' FROM t"]


def test_command_after_a_semicolon_on_the_same_line() -> None:
    assert list(split_script("SELECT 1; \\budget\n")) == ["SELECT 1", "\\budget"]


def test_split_statements_keeps_backslashes_as_sql() -> None:
    assert list(split_statements("\\d people\nSELECT 1;")) == ["\\d people\nSELECT 1"]
    assert list(split_statements("SELECT 'a;b' FROM t; -- c; d\nSELECT 2;;")) == ["SELECT 'a;b' FROM t", "-- c; d\nSELECT 2"]


@pytest.mark.parametrize(
    ("text", "complete"),
    [
        ("", True), ("   ", True), ("\\d people", True), ("\\q", True), ("quit", True), ("exit", True),
        ("SELECT COUNT(*)", False), ("SELECT COUNT(*)\nFROM people", False), ("SELECT COUNT(*)\nFROM people;", True),
        ("SELECT 1;  \n", True), ("SELECT ';", False), ("SELECT ';'", False), ("SELECT ';';", True),
        ("SELECT 1; -- done", True), ("SELECT 1 -- not yet;", False), ("SELECT 1;\n\\d", False),
    ],
)  # fmt: skip
def test_is_complete(text: str, complete: bool) -> None:
    assert is_complete(text) is complete

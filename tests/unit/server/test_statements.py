"""Utility statements recognised without a parser, and simple-query splitting."""

from __future__ import annotations

import pytest

from dpsql.server.statements import Utility, is_empty, split_statements, utility


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("BEGIN", Utility("begin", "BEGIN")),
        ("start transaction read only", Utility("begin", "BEGIN")),
        ("COMMIT", Utility("commit", "COMMIT")),
        ("end", Utility("commit", "COMMIT")),
        ("ROLLBACK", Utility("rollback", "ROLLBACK")),
        ("ROLLBACK TO SAVEPOINT a", Utility("savepoint", "ROLLBACK")),
        ("SAVEPOINT a", Utility("savepoint", "SAVEPOINT")),
        ("RELEASE SAVEPOINT a", Utility("savepoint", "RELEASE")),
        ("SET extra_float_digits = 3", Utility("set", "SET", "extra_float_digits", "3")),
        ("SET application_name TO 'my app'", Utility("set", "SET", "application_name", "my app")),
        ("set time zone 'UTC'", Utility("set", "SET", "TimeZone", "UTC")),
        ("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED", Utility("noop", "SET")),
        ("SET dpsql.epsilon = 0.2", Utility("set", "SET", "dpsql.epsilon", "0.2")),
        ("SHOW transaction isolation level", Utility("show", "SHOW", "transaction isolation level")),
        ("-- hi\nSHOW server_version;", Utility("show", "SHOW", "server_version")),
        ("RESET ALL", Utility("reset", "RESET", "ALL")),
        ("DISCARD ALL", Utility("noop", "DISCARD ALL")),
        ("DEALLOCATE PREPARE s1", Utility("deallocate", "DEALLOCATE", "s1")),
    ],
)
def test_utility_statements(sql: str, expected: Utility) -> None:
    assert utility(sql) == expected


@pytest.mark.parametrize("sql", ["SELECT 1", "EXPLAIN SELECT COUNT(*) FROM people", "INSERT INTO t VALUES (1)", "start"])
def test_other_statements_are_not_utilities(sql: str) -> None:
    assert utility(sql) is None


def test_split_respects_quotes_comments_and_dollar_quotes() -> None:
    text = "SELECT ';' AS a; -- c;\nSELECT $$;$$; /* ; */ SHOW x;;"
    assert [s.strip() for _, s in split_statements(text)] == ["SELECT ';' AS a", "-- c;\nSELECT $$;$$", "/* ; */ SHOW x"]
    offsets = [o for o, _ in split_statements("SELECT 1; SELECT 2")]
    assert offsets == [0, 9]


def test_empty_text() -> None:
    assert is_empty(" ; -- nothing\n/* here */ ")
    assert list(split_statements(";;")) == []


@pytest.mark.parametrize(
    "sql, expected",
    [
        ('DECLARE "c 1" CURSOR WITHOUT HOLD FOR SELECT 1', ("declare", "c 1", "SELECT 1")),
        ("declare C no scroll cursor for select x from t where a = $1", ("declare", "c", "select x from t where a = $1")),
        ('FETCH FORWARD 10 FROM "c 1"', ("fetch", "c 1", "10")),
        ("FETCH FORWARD ALL FROM c", ("fetch", "c", "ALL")),
        ("FETCH ALL IN c", ("fetch", "c", "ALL")),
        ("FETCH c", ("fetch", "c", "1")),
        ("FETCH PRIOR FROM c", ("fetch", "c", "BACKWARD")),
        ("MOVE ABSOLUTE 3 FROM c", ("move", "c", "BACKWARD")),
        ("CLOSE c", ("close", "c", "ALL")),
        ("CLOSE ALL", ("close", None, "ALL")),
        ("DECLARE x", ("declare", None, None)),
    ],
)
def test_cursor_statements(sql: str, expected: tuple[str, str | None, str | None]) -> None:
    command = utility(sql)
    assert command is not None and (command.kind, command.name, command.value) == expected

"""psycopg's %s and %(name)s placeholders in the DB-API: rewritten to ? outside quotes and comments
(the values still bound as literals by the parser), and clear DP118 errors naming ? otherwise."""

from __future__ import annotations

import pytest

from dpsql.dbapi.placeholders import to_qmark, uses_pyformat
from dpsql.errors import ParameterError


@pytest.mark.parametrize(("sql", "params", "expected", "values"), [
    ("SELECT COUNT(*) FROM people WHERE age > %s AND dept = %s", [40, "hr"],
     "SELECT COUNT(*) FROM people WHERE age > ? AND dept = ?", [40, "hr"]),
    ("SELECT COUNT(*) FROM people WHERE age > %(a)s AND age < %(b)s OR age = %(a)s", {"a": 40, "b": 60},
     "SELECT COUNT(*) FROM people WHERE age > ? AND age < ? OR age = ?", [40, 60, 40]),
    # quotes and comments are not rewritten; %% is a literal % only where placeholders are
    ("SELECT COUNT(*) FROM people WHERE dept LIKE 'a%s' AND age > %s -- %s\n", [3],
     "SELECT COUNT(*) FROM people WHERE dept LIKE 'a%s' AND age > ? -- %s\n", [3]),
    ("SELECT age %% 10 AS d, COUNT(*) FROM people WHERE age > %s GROUP BY d", [1], "SELECT age % 10 AS d, COUNT(*) FROM people WHERE age > ? GROUP BY d", [1]),
    ("SELECT COUNT(*) FROM people WHERE age > ?", [3], "SELECT COUNT(*) FROM people WHERE age > ?", [3]),
    ("SELECT COUNT(*) FROM people WHERE age % 2 = 0", None, "SELECT COUNT(*) FROM people WHERE age % 2 = 0", None),
])
def test_placeholders_become_qmarks(sql: str, params: object, expected: str, values: object) -> None:
    assert to_qmark(sql, params) == (expected, values)  # type: ignore[arg-type]


@pytest.mark.parametrize(("sql", "params", "says"), [
    ("SELECT COUNT(*) FROM people WHERE age > ?", {"a": 1}, "mapping needs %(name)s"),
    ("SELECT COUNT(*) FROM people WHERE age > %(a)s", {"b": 1}, "%(a)s has no value"),
    ("SELECT COUNT(*) FROM people WHERE age > %s AND age < %(b)s", {"b": 1}, "cannot be mixed"),
    ("SELECT COUNT(*) FROM people WHERE age > %s", {"a": 1}, "take a sequence"),
    ("SELECT COUNT(*) FROM people WHERE age > %s AND age < %s", [1], "2 %s placeholder(s) but 1 value(s)"),
])
def test_mismatches_are_refused_naming_the_placeholders(sql: str, params: object, says: str) -> None:
    with pytest.raises(ParameterError) as info:
        to_qmark(sql, params)  # type: ignore[arg-type]
    assert info.value.code == "DP118" and says in info.value.message and "?" in (info.value.hint or "")


def test_pyformat_inside_quotes_is_not_a_placeholder() -> None:
    assert not uses_pyformat("SELECT COUNT(*) FROM people WHERE dept = '%s' /* %(x)s */")
    assert uses_pyformat("SELECT COUNT(*) FROM people WHERE dept = %s")


def test_through_a_connection(connect) -> None:
    con = connect(random_seed=1)
    qmark = con.execute("SELECT COUNT(*) FROM people WHERE age > ? AND dept <> ?", [40, "hr"]).fetchall()
    assert con.execute("SELECT COUNT(*) FROM people WHERE age > %s AND dept <> %s", [40, "hr"]).fetchall()
    assert con.execute("SELECT COUNT(*) FROM people WHERE age > %(a)s AND dept <> %(d)s", {"a": 40, "d": "hr"}).fetchall()
    assert len(con.ledger()) == 3 and qmark
    with pytest.raises(ParameterError) as info:  # placeholders without values: the error names them, not a parser's
        con.execute("SELECT COUNT(*) FROM people WHERE age > %s")
    assert "%s placeholders" in info.value.message and "?" in (info.value.hint or "")
    assert len(con.ledger()) == 3

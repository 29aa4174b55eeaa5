"""Uncorrelated scalar subqueries over private rows (analysis/scalar_subqueries.py), through dpsql.connect.

What must hold: the statement is two releases, the subquery's first; the second reads the first's
released value as a constant, so its answer is the answer of the same query with that value
written in (the same seed draws the same noise: the "by hand" statements below); both are charged
once, for their sum, before the engine reads any row; NULL (no row) keeps no row; and a
correlated subquery, or one that returns several rows or columns, is refused before the charge.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dpsql
from dpsql.errors import Error
from tests.conftest import make_policy_text

AVERAGE = "SELECT AVG(income) FROM people"
ABOVE = f"SELECT dept, COUNT(*) AS n FROM people WHERE income > ({AVERAGE}) GROUP BY dept"
# The second release by hand: the same query with the first release's value as a parameter.
ABOVE_BY_HAND = "SELECT dept, COUNT(*) AS n FROM people WHERE income > CAST(? AS DOUBLE) GROUP BY dept"


def connect(people: pd.DataFrame, policy: Path, seed: int = 7) -> dpsql.Connection:
    return dpsql.connect(tables={"people": people}, policy=policy, random_seed=seed)


def by_hand(people: pd.DataFrame, policy: Path, first: str, second: str,
            value: Callable[[Any], Any] = lambda v: v) -> tuple[Any, list[tuple[Any, ...]]]:
    """The two releases as two statements of one session, in the same order (the same seed draws
    the same noise): the first's value (through `value`) bound as the second's parameter."""
    with connect(people, policy) as con:
        (released,), = con.execute(first).fetchall()
        return released, con.execute(second, [value(released)]).fetchall()


def test_rows_above_the_released_average_are_the_second_release(people: pd.DataFrame, policy_path: Path) -> None:
    with connect(people, policy_path) as con:
        rows = con.execute(ABOVE).fetchall()
        entries = con.ledger()
    released, expected = by_hand(people, policy_path, AVERAGE, ABOVE_BY_HAND)
    assert rows == expected
    assert len(entries) == 1 and entries[0].cost.epsilon == Fraction(1, 5)  # 0.1 + 0.1, one entry
    assert len(entries[0].params["releases"]) == 2
    # Negative control: the exact average instead of the released one gives another answer (the
    # same noise draws, other rows), so the comparison above tells the two thresholds apart.
    exact = float(people["income"].mean())
    assert abs(exact - released) > 1  # the noise moved the threshold
    _, with_exact = by_hand(people, policy_path, AVERAGE, ABOVE_BY_HAND, value=lambda _: exact)
    assert with_exact != rows


def test_both_releases_are_charged_once_before_the_engine_reads_a_row(people: pd.DataFrame, policy_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with connect(people, policy_path) as con:
        engine = con.session._engine
        seen: list[tuple[str, int, Any]] = []  # (call, ledger entries at that moment, the scalar parameter)
        for name in ("run", "ensure_bounded"):
            original = getattr(engine, name)

            def spy(*args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
                params = args[1] if len(args) > 1 else kwargs.get("params")
                seen.append((_name, len(con.ledger()), (params or {}).get("dpsql_scalar0") if _name == "run" else None))
                return _original(*args, **kwargs)
            monkeypatch.setattr(engine, name, spy)
        rows = con.execute(ABOVE).fetchall()
        entries = con.ledger()
    assert rows and len(entries) == 1 and entries[0].cost.epsilon == Fraction(1, 5)
    assert seen and all(charged == 1 for _, charged, _ in seen), seen  # every engine read after the one charge
    runs = [value for name, _, value in seen if name == "run"]
    assert runs[0] is None and isinstance(runs[-1], float)  # the average's statement first, then the count's with it
    # Control: the spy sees a statement charged later (a second query after the first's charge).
    with connect(people, policy_path) as con:
        engine = con.session._engine
        counts: list[int] = []
        original_run = engine.run
        monkeypatch.setattr(engine, "run", lambda *a, **k: (counts.append(len(con.ledger())), original_run(*a, **k))[1])
        con.execute(AVERAGE).fetchall()
        con.execute("SELECT COUNT(*) FROM people").fetchall()
    assert counts == [1, 2]


def test_a_null_value_keeps_no_row(people: pd.DataFrame, policy_path: Path) -> None:
    # HAVING on a count that is never negative: the subquery has no row, its value is NULL.
    none = "SELECT AVG(income) FROM people HAVING COUNT(*) < 0"
    sql = f"SELECT COUNT(*) AS n FROM people WHERE income > ({none})"
    with connect(people, policy_path) as con:
        rows = con.execute(sql).fetchall()
    with connect(people, policy_path) as con:
        assert con.execute(none).fetchall() == []
        expected = con.execute("SELECT COUNT(*) AS n FROM people WHERE income > CAST(NULL AS DOUBLE)").fetchall()
        unfiltered = con.execute("SELECT COUNT(*) AS n FROM people").fetchall()
    assert rows == expected
    assert abs(rows[0][0]) < 200 < unfiltered[0][0]  # a noisy zero (scale 30), not the table's count


def test_having_and_select_list_compare_released_values(people: pd.DataFrame, policy_path: Path) -> None:
    share = "SELECT COUNT(*) / 12 FROM people"
    lifted = (f"SELECT dept, COUNT(*) AS n, COUNT(*) - ({share}) AS excess FROM people GROUP BY dept "
              f"HAVING COUNT(*) > ({share}) ORDER BY n DESC")
    # By hand: the same releases in the same order, as an outer query over the aggregated query.
    outer = (f"SELECT dept, n, n - ({share}) AS excess FROM (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) t "
             f"WHERE n > ({share}) ORDER BY n DESC")
    with connect(people, policy_path) as con:
        rows = con.execute(lifted).fetchall()
        cost = con.ledger()[0].cost.epsilon
    with connect(people, policy_path) as con:
        expected = con.execute(outer).fetchall()
    assert rows == expected and 0 < len(rows) < 12
    assert cost == Fraction(1, 5)  # the groups, and the subquery once however often it is written


def test_one_threshold_for_a_cte_read_twice_and_for_every_grouping_set(people: pd.DataFrame, policy_path: Path) -> None:
    cte = (f"WITH rich AS (SELECT * FROM people WHERE income > ({AVERAGE})) "
           "SELECT (SELECT COUNT(*) FROM rich) AS a, (SELECT SUM(age) FROM rich) AS b")
    rollup = f"SELECT dept, region, COUNT(*) FROM people WHERE income > ({AVERAGE}) GROUP BY ROLLUP (dept, region)"
    with connect(people, policy_path) as con:
        assert con.session.cost_of(cte).epsilon == Fraction(3, 10)  # the threshold once, then two releases
        text = "\n".join(r[0] for r in con.execute(f"EXPLAIN {rollup}").fetchall())
        assert con.ledger() == []
    assert text.count("(scalar subquery)") == 1 and "Parameter $dpsql_scalar0" in text
    assert "dpsql_scalar1" not in text


def test_explain_shows_both_releases_and_their_shares_and_spends_nothing(people: pd.DataFrame, policy_path: Path) -> None:
    with connect(people, policy_path) as con:
        assert con.session.cost_of(ABOVE).epsilon == Fraction(1, 5)
        text = "\n".join(r[0] for r in con.execute(f"EXPLAIN {ABOVE}").fetchall())
        assert con.ledger() == []
    assert "Release 1 of 2: __dpsql_released_0 (scalar subquery)" in text
    assert "Release 2 of 2: __dpsql_released_1 (the query, reading $dpsql_scalar0)" in text
    assert "income > CAST($dpsql_scalar0 AS DOUBLE)" in text
    assert "Budget split: epsilon 0.1 (release 1) + epsilon 0.1 (release 2)" in text


@pytest.mark.parametrize(("sql", "words"), [
    # correlated: a value per outer row over other persons' rows, without noise
    ("SELECT COUNT(*) FROM people p WHERE income > (SELECT AVG(q.income) FROM people q WHERE q.dept = p.dept)", "correlated"),
    ("SELECT dept, COUNT(*) FROM people p GROUP BY dept HAVING COUNT(*) > (SELECT COUNT(*) FROM people q WHERE q.dept = p.dept)",
     "correlated"),
    # several rows or columns
    ("SELECT COUNT(*) FROM people WHERE income > (SELECT AVG(income) FROM people GROUP BY dept)", "GROUP BY"),
    ("SELECT COUNT(*) FROM people WHERE income > (SELECT AVG(income), COUNT(*) FROM people)", "2 columns"),
    ("SELECT COUNT(*) FROM people WHERE income > (SELECT AVG(income) FROM people UNION ALL SELECT 1)", "set operation"),
    ("SELECT COUNT(*) FROM people WHERE income > (SELECT income FROM people LIMIT 1)", "row-level"),
    ("SELECT COUNT(*) FROM people WHERE dept = (SELECT MODE(dept) || 'x' FROM people)", "cannot type"),
])
def test_unsafe_or_unclear_subqueries_are_refused_before_the_charge(people: pd.DataFrame, policy_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch, sql: str, words: str) -> None:
    with connect(people, policy_path) as con:
        engine = con.session._engine
        for name in ("run", "ensure_bounded"):
            monkeypatch.setattr(engine, name, lambda *a, **k: pytest.fail("the engine read data for a refused query"))
        with pytest.raises(Error) as refused:
            con.execute(sql)
        assert refused.value.code == "DP110" and words in str(refused.value), str(refused.value)
        assert con.ledger() == []


def test_a_statement_answered_and_a_refused_neighbour(people: pd.DataFrame, policy_path: Path) -> None:
    # Control for the refusals above: the uncorrelated neighbour of the first one is answered.
    with connect(people, policy_path) as con:
        assert con.execute("SELECT COUNT(*) FROM people p WHERE income > (SELECT AVG(q.income) FROM people q)").fetchall()
        assert len(con.ledger()) == 1


DEPTS = """
[tables.depts]
public = true
[tables.depts.columns]
name = { type = "text" }
floor = { type = "int" }
"""


def test_a_subquery_over_public_rows_is_read_exactly_and_free(people: pd.DataFrame, tmp_path: Path) -> None:
    policy = tmp_path / "public.toml"
    policy.write_text(make_policy_text(accountant="basic", extra=DEPTS), encoding="utf-8")
    tables = {"people": people, "depts": pd.DataFrame({"name": ["a", "b", "c"], "floor": [2, 4, 5]})}
    sql = "SELECT COUNT(*) FROM people WHERE age > (SELECT MAX(floor) * 10 FROM depts)"
    by_hand = "SELECT COUNT(*) FROM people WHERE age > CAST(? AS DOUBLE)"
    with dpsql.connect(tables=tables, policy=policy, random_seed=3) as con:
        rows = con.execute(sql).fetchall()
        assert [e.cost.epsilon for e in con.ledger()] == [Fraction(1, 10)]  # the count only: public rows are free
    answers = {}
    for value in (50.0, 40.0):  # the exact MAX(floor) * 10, and a control value
        with dpsql.connect(tables=tables, policy=policy, random_seed=3) as con:
            answers[value] = con.execute(by_hand, [value]).fetchall()
    assert rows == answers[50.0] != answers[40.0]
    # Public rows filtered by a released value, and aggregated, are post-processing too.
    with dpsql.connect(tables=tables, policy=policy, random_seed=3) as con:
        (count,), = con.execute("SELECT COUNT(*) FROM depts WHERE floor * 10 > (SELECT AVG(age) FROM people)").fetchall()
        assert count in (0, 1, 2, 3) and [e.cost.epsilon for e in con.ledger()] == [Fraction(1, 10)]

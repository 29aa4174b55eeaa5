"""A8: data-dependent errors. A row expression that fails only on the target's value (a cast of
their text, a division by (person_id - T), integer overflow, a square root or logarithm of a
negative, `error()`) turns the answer/error distinction into the target's bit.

Pass criterion: on D (the target present, holding the failing value) and D' (the target removed)
each attack is either refused before the charge with the same code and text, or answered on both,
charged once on both, never refunded; no error text carries data (the text checks are in
tests/integration/test_security.py, A8 block). Negative control: a build without the TRY guard
around the row predicate fails with DP300 on D and answers on D' (still charged: no refund), and
the same comparison catches it.
"""

from __future__ import annotations

import pandas as pd
import pytest

from dpsql.backend.sql import plan_sql as sqlgen
from tests.security.attack_support import SECRET, SECRET_ID, Outcome, outcome, with_secret_person, without_person

T = SECRET_ID
ANSWERED_ON_BOTH = [
    f"SELECT COUNT(*) FROM people WHERE 1 // (person_id - {T}) >= 0",
    f"SELECT COUNT(*) FROM people WHERE 1 % (person_id - {T}) >= 0",
    f"SELECT COUNT(*) FROM people WHERE 1 / (person_id - {T}) >= 0",
    f"SELECT COUNT(*) FROM people WHERE CASE WHEN person_id = {T} THEN age * 9223372036854775807 > 0 ELSE true END",
    f"SELECT COUNT(*) FROM people WHERE CASE WHEN person_id = {T} THEN age + 9223372036854775807 > 0 ELSE true END",
    f"SELECT COUNT(*) FROM people WHERE CASE WHEN person_id = {T} THEN sqrt(0 - age) > 0 ELSE true END",
    f"SELECT COUNT(*) FROM people WHERE CASE WHEN person_id = {T} THEN ln(0 - age) > 0 ELSE true END",
]
REFUSED_ON_BOTH = [  # (query, code): refused before the charge whatever the data
    (f"SELECT COUNT(*) FROM people WHERE CASE WHEN person_id = {T} THEN error('x') ELSE true END", "DP113"),
    (f"SELECT SUM(age * 9223372036854775807) FROM people WHERE person_id = {T}", "DP115"),
    ("SELECT SUM(sqrt(0 - age)) FROM people", "DP115"),
    # chr has no BIGINT overload on DuckDB: a type error, found by the dry run on no data
    (f"SELECT COUNT(*) FROM people WHERE CASE WHEN person_id = {T} THEN chr(age * 100000) = 'x' ELSE true END", "DP113"),
    (f"SELECT COUNT(*) FROM people WHERE CASE WHEN person_id = {T} THEN regexp_matches(region, region) ELSE false END", "DP125"),
    # text read as a number or date, and chr, differ between engines: refused from the SQL alone (DP142, DP113)
    (f"SELECT COUNT(*) FROM people WHERE CASE WHEN person_id = {T} THEN CAST(region AS INT) = 1 ELSE false END", "DP142"),
    (f"SELECT COUNT(*) FROM people WHERE CASE WHEN person_id = {T} THEN CAST(region AS DATE) > DATE '2000-01-01' ELSE true END", "DP142"),
    (f"SELECT COUNT(*) FROM people WHERE CASE WHEN person_id = {T} THEN chr(CAST(age * 100000 AS INTEGER)) = 'x' ELSE true END", "DP113"),
    (f"SELECT SUM(income) FROM people WHERE CASE WHEN person_id = {T} THEN CAST(region AS DOUBLE) > 0 ELSE true END", "DP142"),
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) dept, COUNT(*) FROM people "
     f"WHERE CASE WHEN person_id = {T} THEN CAST(region AS INT) > 0 ELSE true END GROUP BY dept", "DP142"),
]


@pytest.fixture
def neighbours(people_frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    d = with_secret_person(people_frame, region=SECRET)  # text that no cast accepts
    return {"D": d, "D2": without_person(d)}


def outcomes(connect, neighbours: dict[str, pd.DataFrame], sql: str) -> tuple[Outcome, Outcome]:
    return tuple(outcome(connect(tables={"people": neighbours[n]}, random_seed=1), sql) for n in ("D", "D2"))


@pytest.mark.parametrize("sql", ANSWERED_ON_BOTH)
def test_a08_failing_values_answer_on_both_neighbours_and_are_charged(connect, neighbours, sql: str) -> None:
    on_d, on_d2 = outcomes(connect, neighbours, sql)
    assert on_d == on_d2
    assert on_d.kind == "answered" and on_d.charges == 1


@pytest.mark.parametrize(("sql", "code"), REFUSED_ON_BOTH)
def test_a08_error_constructions_are_refused_alike_before_the_charge(connect, neighbours, sql: str, code: str) -> None:
    on_d, on_d2 = outcomes(connect, neighbours, sql)
    assert on_d == on_d2
    assert on_d.kind == code and on_d.charges == 0


def test_a08_negative_control_without_the_try_guard_the_bit_leaks(connect, neighbours, monkeypatch) -> None:
    monkeypatch.setattr(sqlgen, "Guarded", lambda this: this)  # the row predicate no longer inside TRY(...)
    leaks = []
    for sql in ANSWERED_ON_BOTH[:2]:  # integer // and % by zero fail in the engine (x / 0 is inf; overflow widens)
        on_d, on_d2 = outcomes(connect, neighbours, sql)
        assert on_d.charges == on_d2.charges == 1  # charged before the failure, and not refunded
        leaks.append((on_d.kind, on_d2.kind))
    assert leaks == [("DP300", "answered")] * 2  # the comparison in the main test would fail

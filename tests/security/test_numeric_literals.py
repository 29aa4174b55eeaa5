"""Extreme numeric literals anywhere an analyst can write one raise only dpsql errors (PEP 249
callers catch `dpsql.Error`), never a bare OverflowError or ValueError: `OPTIONS (epsilon =
1e-4000)` once overflowed a float conversion after compiling, and a 5,000-digit literal hit
Python's int-to-str digit limit. Property: for random literals in every numeric position, an
execution either answers or raises a dpsql.Error; nothing else escapes.
"""

from __future__ import annotations

import decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpsql

TEMPLATES = (
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = {x}) COUNT(*) FROM people",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01, delta = {x}) region, COUNT(*) FROM people GROUP BY region",
    "SET dpsql.epsilon = {x}",
    "SET dpsql.delta = {x}",
    "SELECT COUNT(*) FROM people LIMIT {x}",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01) QUANTILE(age, {x}) FROM people",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01) COUNT(*) FROM people WHERE age > {x}",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01) COUNT(*) FROM people WHERE repeat(region, {x}) = 'x'",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01) SUM(income) FROM people GROUP BY {x}",
)

digits = st.text(alphabet="0123456789", min_size=1, max_size=6000)
literals = st.one_of(
    st.builds(lambda m, e: f"{m}e{e}", st.integers(1, 9), st.integers(-100_000, 100_000)),
    st.builds(lambda d: f"0.{d}", digits),
    digits,
    st.builds(lambda d, e: f"{d}.5e{e}", digits, st.integers(-5000, 5000)),
    st.sampled_from(["0", "-0", "1e-4000", "1e4000", "1e-15", "0.1", "-1", "1", "0.5"]),
)


@pytest.fixture(scope="module")
def con() -> dpsql.Connection:
    connection = dpsql.connect(random_seed=7)
    yield connection
    connection.close()


def _run(con: dpsql.Connection, sql: str, parameters: list[object] | None = None) -> None:
    try:
        con.execute(sql, parameters or []).fetchall() if sql.lstrip().upper().startswith("SELECT") else con.execute(sql, parameters or [])
    except dpsql.Error:
        pass
    finally:
        con.execute("SET dpsql.epsilon = 0.0001")  # keep the session's default query cheap
        con.execute("SET dpsql.delta = 1e-9")


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(template=st.sampled_from(TEMPLATES), literal=literals)
def test_random_numeric_literals_raise_only_dpsql_errors(con: dpsql.Connection, template: str, literal: str) -> None:
    _run(con, template.format(x=literal))


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**4000), 10**4000),
                       st.decimals(allow_nan=True, allow_infinity=True)))
def test_random_numeric_parameters_raise_only_dpsql_errors(con: dpsql.Connection, value: object) -> None:
    with decimal.localcontext() as context:
        context.prec = 6000
        _run(con, "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = ?) COUNT(*) FROM people WHERE age > ?", [value, value])


@pytest.mark.parametrize("sql", [
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e-4000) COUNT(*) FROM people",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0." + "1" * 5000 + ") COUNT(*) FROM people",
    "SET dpsql.epsilon = 1e-4000",
])
def test_absurd_privacy_options_are_refused_with_dp120(con: dpsql.Connection, sql: str) -> None:
    before = con.ledger()
    with pytest.raises(dpsql.errors.InvalidOptionError) as info:
        con.execute(sql)
    assert info.value.code == "DP120"
    assert con.ledger() == before

"""Interval arithmetic over the policy's bounds (analysis/value_bounds.py)."""

from __future__ import annotations

import tomllib
from fractions import Fraction

import pytest
from sqlglot import exp

from dpsql.analysis.value_bounds import NoBounds, value_bounds
from dpsql.catalog.loader import policy_from_dict
from dpsql.demo.people import policy_text
from dpsql.frontend.parse import parse_tree


def _table():  # the demo policy: age int in [18, 90], income float in [0, 500000], person_id unbounded
    return policy_from_dict(tomllib.loads(policy_text(None))).table("people")


def _bounds(text: str) -> tuple[Fraction, Fraction, bool]:
    select = parse_tree(f"SELECT SUM({text}) FROM people")
    arg = select.expressions[0].this
    assert isinstance(select.expressions[0], exp.Sum)
    interval = value_bounds(arg, _table())
    return interval.lower, interval.upper, interval.integer


@pytest.mark.parametrize(("text", "expected"), [
    ("1", (1, 1, True)),
    ("age", (18, 90, True)),
    ("-age", (-90, -18, True)),
    ("age * 2 + 1", (37, 181, True)),
    ("90 - age", (0, 72, True)),
    ("income / 12", (0, Fraction(500000, 12), False)),
    ("income / age", (0, Fraction(500000, 18), False)),
    ("age * (age - 50)", (-32 * 90, 40 * 90, True)),
    ("CASE WHEN dept = 'x' THEN 1 ELSE 0 END", (0, 1, True)),
    ("CASE WHEN age > 30 THEN age END", (18, 90, True)),
    ("CASE WHEN age > 30 THEN 2.5 WHEN age > 20 THEN -1 ELSE age END", (-1, 90, False)),
    ("IF(age > 30, 1, 0)", (0, 1, True)),
    ("GREATEST(LEAST(person_id, 100), 0)", (0, 100, True)),
    ("LEAST(age, 40)", (18, 40, True)),
    ("GREATEST(age, 40)", (40, 90, True)),
    ("GREATEST(LEAST(sqrt(income), 10), 0)", (0, 10, False)),
    # Qrlew's SUM(CAST(x AS float) / 1e5): a cast to a float or decimal type keeps the interval.
    ("CAST(income AS REAL) / 100000.", (0, 5, False)),
    ("CAST(age AS DOUBLE)", (18, 90, False)),
    ("CAST(age AS DECIMAL(10, 2))", (18, 90, False)),
    ("CAST(age AS SMALLINT)", (18, 90, True)),
])
def test_bounds(text: str, expected: tuple) -> None:
    lower, upper, integer = expected
    assert _bounds(text) == (Fraction(lower), Fraction(upper), integer)


@pytest.mark.parametrize(("text", "why"), [
    ("person_id * 2", "no declared bounds"),
    ("income / (age - 18)", "divisor may be 0"),
    ("income / 0", "divisor may be 0"),
    ("sqrt(income - 1)", "SQRT needs an argument at or above 0"),
    ("ln(income)", "LN needs an argument above 0"),
    ("log(age, 2)", "no bounds through LOG"),  # a base that is not a literal
    ("CAST(income AS INTEGER)", "CAST"),  # a float rounded to an integer: no bounds through it (engines round differently)
    ("CAST(age * 10 AS TINYINT)", "CAST"),  # 900 overflows TINYINT: an error on some rows only
    ("CAST(age AS VARCHAR)", "CAST"),
    ("LEAST(person_id, 100)", "no declared bounds"),
    ("CASE WHEN age > 3 THEN NULL END", "NULL on every row"),
    ("CASE WHEN age > 3 THEN dept END", "not a numeric column"),
    ("age * 100000000000000", "10^15"),
    ("'a'", "string"),
])
def test_no_bounds(text: str, why: str) -> None:
    with pytest.raises(NoBounds) as info:
        _bounds(text)
    assert why in info.value.reason

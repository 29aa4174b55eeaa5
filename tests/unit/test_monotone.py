"""Bounds and key domains through LN, LOG, EXP, SQRT, CBRT and POWER (analysis/monotone.py,
value_bounds.py, group_domains.py).

Hypotheses: (1) the derived interval of f(x) holds every value DuckDB computes for x on a dense
grid of its bounds (both ends and their neighbouring DOUBLEs included), and is tight (within
1e-12 of f at the ends); (2) a key through f of listed values lists exactly what DuckDB computes
for each value, and the engine form of the key (exact_key) computes those same DOUBLEs.
Negative controls: an interval taken from a slightly narrower argument range is caught by the
same DuckDB check, and a key list off by one unit in the last place is caught by the key check.
Refused neighbours: an argument range reaching outside the function's domain (LN at 0, SQRT
below 0), and a base or exponent that is not a literal.
"""

from __future__ import annotations

import math
import tomllib
from fractions import Fraction

import duckdb
import pytest

from dpsql.analysis.group_domains import derive_key, exact_key
from dpsql.analysis.monotone import image, monotone_call
from dpsql.analysis.value_bounds import NoBounds, value_bounds
from dpsql.backend.engines.duckdb_engine import render
from dpsql.catalog.loader import policy_from_dict
from dpsql.catalog.policy import Table
from dpsql.frontend.parse import parse_tree

POLICY = """
[budget]
epsilon = 1
delta = 1e-6
default_query_epsilon = 1
default_query_delta = 1e-8
[tables.t]
privacy_unit = "id"
max_rows = 1
[tables.t.columns]
id = { type = "int" }
x = { type = "float", lower = 0.25, upper = 40 }
n = { type = "int", lower = -6, upper = 9 }
w = { type = "float", lower = -3.5, upper = 2 }
"""
TABLE: Table = policy_from_dict(tomllib.loads(POLICY)).table("t")  # type: ignore[assignment]
GRID = 2001

BOUNDED = [  # (expression, the column it reads)
    ("LN(x)", "x"), ("LOG(x)", "x"), ("LOG10(x)", "x"), ("LOG2(x)", "x"), ("LOG(3, x)", "x"), ("LOG(0.5, x)", "x"),
    ("EXP(x / 4)", "x"), ("EXP(w)", "w"), ("SQRT(x)", "x"), ("CBRT(w)", "w"), ("POWER(w, 2)", "w"), ("POWER(w, 3)", "w"),
    ("POWER(x, 0.5)", "x"), ("POWER(x, -1)", "x"), ("x ^ 2", "x"), ("LN(n + 7)", "n"), ("LOG(POWER(n, 2) + 1)", "n"),
    ("LN(x) * 2 + 1", "x"),
]


def expression(text: str):  # type: ignore[no-untyped-def]
    tree = parse_tree(f"SELECT {text} FROM t")
    assert tree is not None
    return tree.expressions[0]


def duckdb_values(text: str, column: str) -> list[float]:
    """DuckDB's values of the expression over a dense grid of the column's bounds."""
    col = TABLE.column(column)
    assert col is not None and col.lower is not None and col.upper is not None
    low, high = float(col.lower), float(col.upper)
    if col.type == "int":
        points = [float(v) for v in range(int(low), int(high) + 1)]
    else:
        points = [low + (high - low) * i / (GRID - 1) for i in range(GRID)]
        points += [math.nextafter(low, math.inf), math.nextafter(high, -math.inf), low, high] + ([0.0] if low <= 0 <= high else [])
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT unnest(?::DOUBLE[]) AS {column}", [points])
    values = [row[0] for row in con.execute(f"SELECT {render(expression(text))} FROM t").fetchall()]
    con.close()
    return values


@pytest.mark.parametrize(("text", "column"), BOUNDED)
def test_the_interval_holds_every_value_duckdb_computes_and_is_tight(text: str, column: str) -> None:
    interval = value_bounds(expression(text), TABLE)
    values = duckdb_values(text, column)
    assert all(interval.lower <= Fraction(v) <= interval.upper for v in values), text  # type: ignore[operator]
    assert float(interval.lower) >= min(values) - 1e-12 * max(1.0, abs(min(values))), text  # type: ignore[arg-type]
    assert float(interval.upper) <= max(values) + 1e-12 * max(1.0, abs(max(values))), text  # type: ignore[arg-type]


def test_control_an_interval_of_a_narrower_argument_is_caught() -> None:
    call = monotone_call(expression("LN(x)"))
    assert call is not None
    narrow = image(call, Fraction(1, 4) + Fraction(1, 10**6), Fraction(40))  # the argument's range cut by 1e-6
    assert not isinstance(narrow, str)
    values = duckdb_values("LN(x)", "x")
    assert any(not narrow[0] <= Fraction(v) <= narrow[1] for v in values)


@pytest.mark.parametrize(("text", "why"), [
    ("LN(x - 0.25)", "LN needs an argument above 0, and its lower bound is 0"),
    ("LOG(w + 3.5)", "LOG needs an argument above 0"),
    ("LOG10(n)", "LOG10 needs an argument above 0"),
    ("SQRT(w)", "SQRT needs an argument at or above 0"),
    ("POWER(w, 0.5)", "at or above 0"),
    ("POWER(n, -1)", "above 0"),
    ("EXP(x * 100)", "EXP is infinite"),
    ("EXP(x)", "10^15"),  # e^40: finite, beyond the magnitude cap
    ("LOG(x, 2)", "no bounds through LOG"),  # the base is a column
    ("POWER(x, n)", "no bounds through POW"),
])
def test_refused_neighbours_say_why(text: str, why: str) -> None:
    with pytest.raises(NoBounds) as caught:
        value_bounds(expression(text), TABLE)
    assert why in caught.value.reason, caught.value.reason


def test_a_clamp_around_a_refused_argument_bounds_it() -> None:
    interval = value_bounds(expression("GREATEST(LEAST(LN(x - 0.25), 3), -2)"), TABLE)
    assert (interval.lower, interval.upper) == (-2, 3)


# --- keys through them, value by value ----------------------------------------------------------

KEYS = ["LN(n + 7)", "LOG(CASE WHEN n < 3 THEN 50 ELSE 1 END)", "EXP(n / 10)", "SQRT(n + 6)", "POWER(n, 3)",
        "ROUND(LN(n + 7) * 10)", "LN(LN(n + 8))"]


def duckdb_keys(sql_expression: str) -> set[float]:
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT range::INTEGER AS n FROM range(-6, 10)")
    keys = {row[0] for row in con.execute(f"SELECT DISTINCT {sql_expression} FROM t").fetchall()}
    con.close()
    return {k for k in keys if k is not None and not (isinstance(k, float) and math.isnan(k))}


@pytest.mark.parametrize("text", KEYS)
def test_a_key_lists_what_duckdb_computes_and_its_engine_form_computes_it(text: str) -> None:
    node = expression(text)
    listed = derive_key(node, TABLE).column.values
    assert listed is not None
    assert set(listed) == duckdb_keys(render(node)), text
    engine = exact_key(node, TABLE)
    assert set(listed) == duckdb_keys(render(engine)), text
    if "ROUND" not in text:
        assert engine is not node and "CASE" in render(engine)  # the literals, not the call


def test_control_a_key_list_off_by_one_unit_is_caught() -> None:
    node = expression("LN(n + 7)")
    listed = derive_key(node, TABLE).column.values
    assert listed is not None
    shifted = {math.nextafter(v, math.inf) if v == max(listed) else v for v in listed}
    assert shifted != duckdb_keys(render(node))


def test_keys_without_listed_operands_keep_the_call() -> None:
    node = expression("LN(x)")  # a float column: too many values to list
    assert derive_key(node, TABLE).column.values is None
    assert exact_key(node, TABLE) is node

"""Consistent grouping sets (execution/consistency.py): totals equal the sum of their parts exactly,
for free; `consistent = false` (the negative control) leaves the sets as released."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dpsql
from dpsql.demo.people import REGIONS
from tests.conftest import make_policy_text

AGGREGATES = {"n": "COUNT(*)", "s": "SUM(income)"}


@pytest.fixture
def public_regions(tmp_path: Path) -> Path:
    """The demo policy with a public domain for region too (every set's keys declared)."""
    text = make_policy_text(accountant="basic")
    values = ", ".join(f'"{r}"' for r in REGIONS)
    text, count = re.subn(r'(?m)^region\s*=\s*\{ type = "text" \}', f'region = {{ type = "text", values = [{values}] }}', text)
    assert count == 1
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def private_regions(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(make_policy_text(accountant="basic"), encoding="utf-8")
    return path


def _query(grouping: str, options: str = "", where: str = "") -> str:
    """Rows (dept, region, n, s, g): region is NULL throughout when the grouping has no region."""
    hint = f"WITH DIFFERENTIAL_PRIVACY OPTIONS ({options}) " if options else ""
    if "region" in grouping:
        return (f"SELECT {hint}dept, region, COUNT(*) AS n, SUM(income) AS s, GROUPING(dept, region) AS g "
                f"FROM people {where} GROUP BY {grouping}")
    return (f"SELECT {hint}dept, COUNT(*) AS n, SUM(income) AS s, GROUPING(dept) AS g FROM people {where} "
            f"GROUP BY {grouping}")


def _rows(con: dpsql.Connection, sql: str) -> list[tuple[Any, ...]]:
    rows = con.execute(sql).fetchall()
    return [r if len(r) == 5 else (r[0], None, *r[1:]) for r in rows]


def _mismatches(rows: list[tuple[Any, ...]], column: int) -> list[str]:
    """Every coarser cell compared with the sum of the finest cells it covers (exact ==)."""
    finest = [r for r in rows if r[4] == min(x[4] for x in rows)]
    out = []
    for row in rows:
        if row in finest:
            continue
        parts = [f[column] for f in finest if (row[0] is None or f[0] == row[0]) and (row[1] is None or f[1] == row[1])]
        if sum(parts) != row[column]:
            out.append(f"{row[:2]}: {row[column]!r} != {sum(parts)!r}")
    return out


@pytest.mark.parametrize("grouping", ["ROLLUP(dept)", "ROLLUP(dept, region)", "CUBE(dept, region)"])
@pytest.mark.parametrize("column", [2, 3], ids=["count", "sum"])
def test_totals_equal_the_sum_of_their_parts(people: pd.DataFrame, public_regions: Path, grouping: str, column: int) -> None:
    with dpsql.connect(tables={"people": people}, policy=public_regions, random_seed=11) as con:
        rows = _rows(con, _query(grouping))
    assert len(rows) > 2
    assert _mismatches(rows, column) == []
    assert all(r[2] >= 0 for r in rows) and all(r[3] >= 0 for r in rows)  # clamping default: in range


@pytest.mark.parametrize("grouping", ["ROLLUP(dept)", "CUBE(dept, region)"])
def test_negative_control_consistent_false_leaves_totals_apart(people: pd.DataFrame, public_regions: Path,
                                                               grouping: str) -> None:
    with dpsql.connect(tables={"people": people}, policy=public_regions, random_seed=11) as con:
        rows = _rows(con, _query(grouping, "consistent = false"))
        cur = con.execute(_query(grouping, "consistent = false"))
        assert "reconciled" not in cur.noise_info[-3]["mechanism"]
    assert _mismatches(rows, 2) and _mismatches(rows, 3)


def test_the_reconciliation_spends_nothing(people: pd.DataFrame, public_regions: Path) -> None:
    """The ledger charge of the same statement with and without reconciliation is identical."""
    charges = []
    for options in ("", "consistent = false", "consistent = true"):
        with dpsql.connect(tables={"people": people}, policy=public_regions, random_seed=5) as con:
            con.execute(_query("CUBE(dept, region)", options)).fetchall()
            entries = con.session.ledger_entries()
            assert len(entries) == 1
            charges.append((entries[0].cost.epsilon, entries[0].cost.delta, con.budget))
    assert charges[0] == charges[1] == charges[2]


def test_intervals_are_recomputed_and_narrower(people: pd.DataFrame, public_regions: Path) -> None:
    with dpsql.connect(tables={"people": people}, policy=public_regions, random_seed=3) as con:
        on = con.execute(_query("ROLLUP(dept)")).noise_info[1]
        off = con.execute(_query("ROLLUP(dept)", "consistent = false")).noise_info[1]
    assert on["mechanism"].endswith("reconciled by least squares")
    widths = on["ci95"] if isinstance(on["ci95"], tuple) else (on["ci95"],)
    # 12 parts and a total: each cell's variance falls to 12/13; a cell the bounds move (a small
    # count pushed up to 0) adds that move to its width, so the median is compared.
    assert sorted(widths)[len(widths) // 2] < off["ci95"]


def test_partition_selection_sets_are_left_as_released(people: pd.DataFrame, private_regions: Path) -> None:
    """region without declared values: (dept, region) is left as released; (dept) and () agree."""
    sql = _query("ROLLUP(dept, region)", "delta = 1e-6")
    with dpsql.connect(tables={"people": people}, policy=private_regions, random_seed=11) as con:
        rows = _rows(con, sql)
        lines = [r[0] for r in con.execute("EXPLAIN " + sql).fetchall()]
    depts = [r for r in rows if r[4] == 1]
    total = next(r for r in rows if r[4] == 3)
    assert sum(r[2] for r in depts) == total[2] and sum(r[3] for r in depts) == total[3]
    assert any("partition selection" in line and "left as released" in line for line in lines), lines


def test_explain_states_the_reconciliation_and_what_is_left(people: pd.DataFrame, public_regions: Path) -> None:
    sql = "SELECT dept, COUNT(*) AS n, AVG(income) AS a, MEDIAN(age) AS m FROM people GROUP BY ROLLUP(dept)"
    with dpsql.connect(tables={"people": people}, policy=public_regions, random_seed=1) as con:
        lines = [r[0] for r in con.execute("EXPLAIN " + sql).fetchall()]
        off = [r[0] for r in con.execute("EXPLAIN " + sql.replace("SELECT", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS "
                                                                   "(consistent = false)", 1)).fetchall()]
        assert con.session.ledger_entries() == []
    text = "\n".join(lines)
    assert "Totals reconciled by least squares (free): n" in text
    assert "a is left as released" in text and "AVG is released from its own" in text
    assert "m is left as released" in text
    assert any("not reconciled (OPTIONS (consistent = false))" in line for line in off)


def test_consistent_takes_a_boolean(people: pd.DataFrame, public_regions: Path) -> None:
    with dpsql.connect(tables={"people": people}, policy=public_regions, random_seed=1) as con:
        with pytest.raises(dpsql.Error) as info:
            con.execute(_query("ROLLUP(dept)", "consistent = 3"))
        assert info.value.code == "DP120"  # type: ignore[attr-defined]
        assert con.session.ledger_entries() == []


def test_tiny_groups_stay_in_range_and_add_up(people: pd.DataFrame, public_regions: Path) -> None:
    with dpsql.connect(tables={"people": people}, policy=public_regions, random_seed=2) as con:
        rows = _rows(con, _query("CUBE(dept, region)", "epsilon = 0.01", "WHERE age > 88"))
        unclamped = _rows(con, _query("CUBE(dept, region)", "epsilon = 0.01, clamp = false", "WHERE age > 88"))
    assert min(r[2] for r in rows) >= 0 and min(r[3] for r in rows) >= 0
    assert _mismatches(rows, 2) == [] and _mismatches(unclamped, 2) == [] and _mismatches(unclamped, 3) == []
    assert min(r[2] for r in unclamped) < 0  # control: without bounds the plain least squares leaves the range


def test_reconciled_intervals_are_clipped_to_the_range(people: pd.DataFrame, public_regions: Path) -> None:
    """A reconciled COUNT's 95% interval never reaches below 0 with clamping on (a clipped cell
    shows [low, high]); control: clamp = false leaves intervals symmetric, some below 0."""
    sql = _query("CUBE(dept, region)", "epsilon = 0.01", "WHERE age > 88")
    with dpsql.connect(tables={"people": people}, policy=public_regions, random_seed=2) as con:
        cur = con.execute(sql)
        result = cur.result
        count = 2 if len(result.columns) == 5 else 1
        lows = [result.interval(r, count)[0] for r in range(len(result.rows))]
        control = con.execute(_query("CUBE(dept, region)", "epsilon = 0.01, clamp = false", "WHERE age > 88")).result
        control_lows = [control.interval(r, count)[0] for r in range(len(control.rows))]
    assert min(lows) >= 0 and any(low == 0 for low in lows)
    assert min(control_lows) < 0

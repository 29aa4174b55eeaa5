"""GROUP BY expressions, timestamp columns, STDDEV/VARIANCE and EXPLAIN's expected intervals
through dpsql.connect: the exact part is right (a huge epsilon leaves the exact answer), every
key of a derived domain is released in the domain's order, and EXPLAIN shows the domain and the
expected interval before anything is charged."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpsql
from dpsql.errors import Error

PRECISE = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 100000) "


def test_decade_counts_are_exact_and_every_key_is_released(connect, policy_file, people_frame: pd.DataFrame) -> None:
    con = connect(policy_file(epsilon=1e7), random_seed=1)
    rows = con.execute(PRECISE + "age // 10 * 10 AS decade, COUNT(*) FROM people GROUP BY decade").fetchall()
    assert [r[0] for r in rows] == [10, 20, 30, 40, 50, 60, 70, 80, 90]  # the derived domain, in order
    exact = (people_frame.age // 10 * 10).value_counts()
    for decade, count in rows:
        assert abs(count - int(exact.get(decade, 0))) <= 1, decade


def test_case_bands_alias_position_and_repeated_expression_agree(connect, policy_file, people_frame: pd.DataFrame) -> None:
    con = connect(policy_file(epsilon=1e7), random_seed=2)
    band = "CASE WHEN age < 30 THEN 'young' WHEN age < 60 THEN 'middle' END"
    by_alias = con.execute(PRECISE + f"{band} AS b, SUM(income) FROM people GROUP BY b").fetchall()
    by_position = con.execute(PRECISE + f"{band} AS b, SUM(income) FROM people GROUP BY 1").fetchall()
    repeated = con.execute(PRECISE + f"{band}, SUM(income) FROM people GROUP BY {band} ORDER BY {band}").fetchall()
    assert [r[0] for r in by_alias] == ["middle", "young", None]  # NULL: rows no WHEN matches (no ELSE)
    assert [r[0] for r in by_position] == [r[0] for r in by_alias]
    assert sorted(r[0] or "" for r in repeated) == sorted(r[0] or "" for r in by_alias)
    young = float(people_frame.income[people_frame.age < 30].sum())
    assert math.isclose(dict(by_alias)["young"], young, rel_tol=1e-4)


def test_upper_of_a_public_domain_and_of_a_private_one(connect, policy_file) -> None:
    con = connect(policy_file(epsilon=1e7), random_seed=3)
    rows = con.execute(PRECISE + "upper(dept) AS d, COUNT(*) FROM people GROUP BY d").fetchall()
    assert len(rows) == 12 and all(r[0] == r[0].upper() for r in rows)
    selected = con.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1000, delta = 1e-6) upper(region) AS r, "
                           "COUNT(*) FROM people GROUP BY r").fetchall()
    assert {r[0] for r in selected} <= {"NORTH", "SOUTH", "EAST", "WEST", "CENTRAL"} and selected


def test_group_by_the_unit_in_an_expression_is_refused_before_the_charge(connect) -> None:
    con = connect(random_seed=4)
    with pytest.raises(Error) as info:
        con.execute("SELECT person_id % 10 AS shard, COUNT(*) FROM people GROUP BY shard")
    assert info.value.code == "DP114"
    assert con.ledger() == []


def test_stddev_and_variance_are_exact_at_a_huge_epsilon(connect, policy_file, people_frame: pd.DataFrame) -> None:
    con = connect(policy_file(epsilon=1e7), random_seed=5)
    (sd, var_pop, var_samp), = con.execute(PRECISE + "STDDEV(income), VAR_POP(age), VARIANCE(age) FROM people").fetchall()
    assert math.isclose(sd, float(people_frame.income.clip(0, 500000).std(ddof=1)), rel_tol=1e-2)
    assert math.isclose(var_pop, float(people_frame.age.var(ddof=0)), rel_tol=1e-2)
    assert math.isclose(var_samp, float(people_frame.age.var(ddof=1)), rel_tol=1e-2)


def test_stddev_cells_carry_an_interval_and_stay_in_the_clamp(connect) -> None:
    con = connect(random_seed=6)
    cur = con.execute("SELECT dept, STDDEV(age) AS s FROM people GROUP BY dept")
    rows = cur.fetchall()
    assert all(0 <= r[1] <= 36 for r in rows)  # [0, (90 - 18) / 2]
    info = cur.noise_info[1]
    assert info is not None and info["ci95"] is not None and info["mechanism"].startswith("laplace (variance")
    widths = info["ci95"] if isinstance(info["ci95"], tuple) else (info["ci95"],)
    assert all(0 < w <= 36 for w in widths)


def test_explain_shows_the_domain_and_expected_intervals_without_charging(connect) -> None:
    con = connect(random_seed=7)
    lines = [r[0] for r in con.execute(
        "EXPLAIN SELECT age // 10 * 10 AS d, COUNT(*), AVG(income), STDDEV(age), MEDIAN(age) FROM people GROUP BY d").fetchall()]
    text = "\n".join(lines)
    assert "derived domain: {10, 20, 30, 40, 50, 60, ..., 90} (9 keys)" in text
    assert "Expected 95% intervals (public, before any data is read):" in text
    assert any(line.startswith("  COUNT(*): ±") for line in lines)
    assert any(line.startswith("  AVG(income): about ±") and "/ n" in line for line in lines)
    assert any(line.startswith("  STDDEV(age): within [0, 36]") for line in lines)
    assert any(line.startswith("  MEDIAN(age): within") and "ranks" in line for line in lines)
    assert con.ledger() == []


EVENTS_POLICY = """
[budget]
epsilon = 10000000.0
delta = 1e-3
default_query_epsilon = 1.0
default_query_delta = 1e-8

[tables.events]
privacy_unit = "user_id"
max_rows = 2
max_groups = 2
source = "events.parquet"

[tables.events.columns]
user_id = { type = "int" }
day = { type = "date", lower = 2024-01-01, upper = 2024-12-31 }
seen_at = { type = "timestamp", lower = 2024-01-01T00:00:00, upper = 2024-06-30T23:59:59 }
amount = { type = "float", lower = 0, upper = 100 }
"""


@pytest.fixture
def events(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(1)  # synthetic test data, not privacy noise
    n = 2000
    frame = pd.DataFrame({
        "user_id": np.arange(n) // 2,
        "day": [dt.date(2024, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 366, n)],
        "seen_at": [dt.datetime(2024, 1, 1) + dt.timedelta(seconds=int(s)) for s in rng.integers(0, 181 * 86400, n)],
        "amount": rng.uniform(0, 100, n),
    })
    frame.to_parquet(tmp_path / "events.parquet")
    policy = tmp_path / "policy.toml"
    policy.write_text(EVENTS_POLICY, encoding="utf-8")
    return policy, frame


def test_timestamp_columns_filter_and_group(events: tuple[Path, pd.DataFrame]) -> None:
    policy, frame = events
    with dpsql.connect(policy=str(policy), random_seed=8, ledger=":memory:") as con:
        q = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 100000) "
        (count,), = con.execute(q + "COUNT(*) FROM events WHERE seen_at < TIMESTAMP '2024-02-01 00:00:00'").fetchall()
        assert abs(count - int((frame.seen_at < dt.datetime(2024, 2, 1)).sum())) <= 1
        months = con.execute(q + "date_trunc('month', seen_at) AS m, COUNT(*) FROM events GROUP BY m").fetchall()
        assert [m for m, _ in months] == [dt.datetime(2024, k, 1) for k in range(1, 7)]
        exact = frame.seen_at.dt.to_period("M").value_counts()
        assert all(abs(c - int(exact[pd.Period(m, "M")])) <= 1 for m, c in months)
        days = con.execute(q + "date_trunc('month', day) AS m, EXTRACT(quarter FROM day) AS q, COUNT(*) FROM events GROUP BY 1, 2").fetchall()
        assert len(days) == 12 * 4 and isinstance(days[0][0], dt.date)
        with pytest.raises(Error) as info:
            con.execute("SELECT MEDIAN(seen_at) FROM events")
        assert info.value.code == "DP117" and "timestamp" in str(info.value)


def test_a_timestamp_bound_with_an_offset_is_refused(tmp_path: Path) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text(EVENTS_POLICY.replace("2024-01-01T00:00:00", "2024-01-01T00:00:00+02:00"), encoding="utf-8")
    with pytest.raises(Error) as info:
        dpsql.connect(policy=str(policy), ledger=":memory:")
    assert info.value.code == "DP001" and "offset" in str(info.value)

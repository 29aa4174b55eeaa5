"""End to end through dpsql.connect on DuckDB: DataFrames, Parquet, CSV and a DuckDB file.

Accuracy bounds come from the discrete Laplace tail: with p = exp(-1/b),
P(|X| >= k) = 2 p^k / (1 + p) <= 2 exp(-k / b), so |X| < b * ln(2 / ALPHA) with probability at
least 1 - ALPHA. Every accuracy check uses ALPHA = 1e-9 per noisy value; the seeds are fixed, so
the checks are deterministic, and a correct implementation fails one of them with probability
below 1e-7 for a fresh seed. Equalities between two runs at the same seed are exact: the same
data and the same plan draw the same noise.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dpsql
from dpsql.accounting.cost import PrivacyCost
from dpsql.backend.auxiliary.files import write_duckdb, write_parquet
from dpsql.demo.people import DEPTS, REGIONS
from dpsql.errors import ParameterError
from dpsql.mechanisms.sampling import discrete_laplace_ci

ALPHA = 1e-9
HIGH_EPS = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1000) "


def half_width(scale: float) -> float:
    """|noise| < half_width(scale) with probability >= 1 - ALPHA (module docstring)."""
    return scale * math.log(2 / ALPHA)


def rows_of(con: dpsql.Connection, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    return con.execute(sql, params).fetchall()


# --- data sources ---------------------------------------------------------------------------

SOURCES = ("frame", "parquet", "csv", "duckdb")


@pytest.fixture
def open_source(tmp_path: Path, policy_file, connect, people_frame: pd.DataFrame):
    """open_source(kind, frame=None, seed=...) -> a connection reading `frame` from that kind of source."""

    def open_(kind: str, frame: pd.DataFrame | None = None, seed: int = 7, **policy: Any) -> dpsql.Connection:
        frame = people_frame if frame is None else frame
        policy.setdefault("epsilon", 1e6)
        policy.setdefault("delta", 0.5)
        directory = tmp_path / f"{kind}-{seed}-{len(frame)}"
        directory.mkdir(exist_ok=True)
        if kind == "frame":
            return connect(policy_file(name=f"{directory.name}.toml", **policy), tables={"people": frame}, random_seed=seed)
        if kind == "parquet":
            write_parquet(frame, directory / "people.parquet")
            return connect(policy_file(name=f"{directory.name}/p.toml", source="people.parquet", **policy), tables={},
                           random_seed=seed)
        if kind == "csv":
            frame.to_csv(directory / "people.csv", index=False)
            return connect(policy_file(name=f"{directory.name}/p.toml", source="people.csv", **policy), tables={},
                           random_seed=seed)
        if kind == "duckdb":
            write_duckdb(frame, directory / "data.duckdb", "people")
            return connect(policy_file(name=f"{directory.name}/p.toml", **policy), database=directory / "data.duckdb",
                           random_seed=seed)
        raise AssertionError(kind)

    return open_


SAME_SEED_QUERIES = (
    "SELECT COUNT(*), SUM(income), AVG(age) FROM people",
    "SELECT dept, COUNT(*) AS n, AVG(income) FROM people WHERE age > 40 GROUP BY dept",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) region, COUNT(*) FROM people GROUP BY region",
)


@pytest.mark.parametrize("kind", SOURCES[1:])
def test_every_source_answers_exactly_like_the_dataframe_at_the_same_seed(open_source, kind: str) -> None:
    # Same rows, same declared types, same plan, same seed: the same bounded relation, the same
    # exact aggregates and the same noise draws, so the answers must be identical.
    reference = open_source("frame")
    other = open_source(kind)
    for sql in SAME_SEED_QUERIES:
        assert rows_of(other, sql) == rows_of(reference, sql), sql


@pytest.mark.parametrize("kind", SOURCES)
def test_count_sum_avg_are_within_their_noise_bounds(open_source, people_frame: pd.DataFrame, kind: str) -> None:
    con = open_source(kind)
    cur = con.execute(HIGH_EPS + "COUNT(*), SUM(income), AVG(age), COUNT(income), SUM(age) FROM people WHERE age >= 30")
    (count, income_sum, age_avg, income_count, age_sum), = cur.fetchall()
    info = cur.noise_info
    truth = people_frame[people_frame["age"] >= 30]
    n = len(truth)  # 1-3 rows per person: bounding to max_rows = 3 drops nothing

    assert abs(count - n) < half_width(info[0]["scale"])
    assert abs(income_count - n) < half_width(info[3]["scale"])
    assert abs(age_sum - int(truth["age"].sum())) < half_width(info[4]["scale"])
    # income lies in [0, 500000] already, so clamping changes nothing; summing on the grid moves
    # each value by at most half a grid step (2^-12 for these bounds): n * 2^-13 in all.
    assert abs(income_sum - float(truth["income"].sum())) < half_width(info[1]["scale"]) + n * 2.0**-13
    # AVG = mid + (centered sum + X) / (count + Y) with mid = 54 for age in [18, 90].
    sum_scale, count_scale = info[2]["scale"]
    hx, hy = half_width(sum_scale), half_width(count_scale)
    centered = float(truth["age"].sum()) - 54 * n
    worst = max(abs((centered + sx * hx) / (n + sy * hy) - centered / n) for sx in (-1, 1) for sy in (-1, 1))
    assert abs(age_avg - truth["age"].mean()) < worst
    assert all(isinstance(v, int) for v in (count, income_count, age_sum)) and isinstance(income_sum, float)


# --- GROUP BY ---------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["where", "data"])
def test_group_by_public_domain_releases_all_12_keys_including_an_empty_one(open_source, people_frame, how: str) -> None:
    frame = people_frame[people_frame["dept"] != "legal"] if how == "data" else people_frame
    where = " WHERE dept <> 'legal'" if how == "where" else ""
    con = open_source("frame", frame=frame)
    cur = con.execute(HIGH_EPS + f"dept, COUNT(*) AS n FROM people{where} GROUP BY dept")
    rows = cur.fetchall()
    assert len(rows) == 12 and sorted(r[0] for r in rows) == sorted(DEPTS)
    truth = people_frame[people_frame["dept"] != "legal"]["dept"].value_counts()
    bound = half_width(cur.noise_info[1]["scale"])
    for dept, n in rows:
        assert abs(n - int(truth.get(dept, 0))) < bound, dept
    # At the default epsilon (0.1) the empty key is still released, with noise around 0.
    rows = rows_of(con, f"SELECT dept, COUNT(*) FROM people{where} GROUP BY dept")
    assert sorted(r[0] for r in rows) == sorted(DEPTS)


def test_group_by_position_equals_group_by_name(open_source) -> None:
    by_name = rows_of(open_source("frame", seed=11), "SELECT dept, COUNT(*) AS n, SUM(age) FROM people GROUP BY dept")
    by_position = rows_of(open_source("frame", seed=11), "SELECT dept, COUNT(*) AS n, SUM(age) FROM people GROUP BY 1")
    assert by_position == by_name and len(by_name) == 12


def test_having_order_by_limit_post_process_the_noisy_table(open_source) -> None:
    # Same seed: the same noisy table, then HAVING/ORDER BY/LIMIT applied to released values only.
    full_con = open_source("frame", seed=5)
    full = rows_of(full_con, "SELECT dept, COUNT(*) AS n FROM people GROUP BY dept")
    post_con = open_source("frame", seed=5)
    cur = post_con.execute("SELECT dept, COUNT(*) AS n FROM people GROUP BY dept HAVING n > 100 ORDER BY n DESC LIMIT 3")
    expected = sorted([r for r in full if r[1] > 100], key=lambda r: -r[1])[:3]
    assert cur.fetchall() == expected
    # Post-processing costs nothing extra: both queries cost the default epsilon once.
    assert post_con.ledger()[0].cost == full_con.ledger()[0].cost == PrivacyCost(Fraction(1, 10), 0)
    # ORDER BY a noisy aggregate ascending, LIMIT 0 (still charged: the query ran).
    assert rows_of(post_con, "SELECT dept, COUNT(*) AS n FROM people GROUP BY dept ORDER BY n LIMIT 0") == []
    assert len(post_con.ledger()) == 2


def test_private_domain_group_by_releases_only_existing_keys(open_source) -> None:
    con = open_source("frame")
    rows = rows_of(con, "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) region, COUNT(*) "
                        "FROM people GROUP BY region")
    # ~120+ persons per region against a threshold of a few dozen: all five are released.
    assert sorted(r[0] for r in rows) == sorted(REGIONS)


# --- privacy options, SET, EXPLAIN -------------------------------------------------------


def test_options_epsilon_and_delta_are_charged_exactly(connect, policy_file) -> None:
    con = connect(policy_file(epsilon=10.0, delta=1e-5, accountant="basic"), random_seed=1)
    con.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.37, delta = 1e-7) region, COUNT(*) "
                "FROM people GROUP BY region").fetchall()
    con.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25) COUNT(*), SUM(income) FROM people")
    first, second = con.ledger()
    assert first.cost == PrivacyCost(Fraction("0.37"), Fraction("1e-7"))
    assert second.cost.epsilon == Fraction(1, 4)
    assert second.cost.delta == 0  # Laplace only: nothing uses delta
    spent = Fraction("0.37") + Fraction(1, 4)
    assert con.budget == (float(10 - spent), float(Fraction("1e-5") - Fraction("1e-7")))
    # The per-column epsilons of noise_info add up to the query's epsilon.
    assert sum(i["epsilon"] for i in con.execute(
        "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) COUNT(*), SUM(age), AVG(income) FROM people"
    ).noise_info) == pytest.approx(0.5, abs=1e-12)
    assert con.ledger()[-1].cost.epsilon == Fraction(1, 2)


def test_set_epsilon_changes_the_next_default_charge_only_in_this_session(connect, policy_file, tmp_path) -> None:
    policy = policy_file()
    ledger = tmp_path / "ledger.sqlite"
    con = connect(policy, ledger=ledger, random_seed=1)
    cur = con.execute("SET dpsql.epsilon = 0.25")
    assert cur.description is None and cur.rowcount == -1 and con.ledger() == []
    con.execute("SELECT COUNT(*) FROM people")
    con.execute("SET dpsql.delta = 1e-7")
    con.execute("SELECT region, COUNT(*) FROM people GROUP BY region")
    assert [e.cost for e in con.ledger()] == [PrivacyCost(Fraction(1, 4), 0), PrivacyCost(Fraction(1, 4), Fraction("1e-7"))]
    other = connect(policy, ledger=ledger, random_seed=2)  # same analyst and ledger, its own settings
    other.execute("SELECT COUNT(*) FROM people")
    assert other.ledger()[-1].cost == PrivacyCost(Fraction(1, 10), 0)


def test_explain_shows_engine_sql_only_when_verbose_and_charges_nothing(connect) -> None:
    con = connect(random_seed=1)
    engine = con.session._engine

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("EXPLAIN must not run the engine")

    before = con.budget
    for name in ("run", "ensure_bounded"):
        setattr(engine, name, refuse)
    sql = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) dept, COUNT(*) FROM people GROUP BY dept"
    plain = [r[0] for r in con.execute("EXPLAIN " + sql).fetchall()]
    assert not any(line.startswith("Engine SQL") or "__dpsql_" in line for line in plain)  # an analyst's plan
    assert max(len(line) for line in plain) < 200
    assert any("Cost: epsilon 0.5" in line for line in plain)
    for verbose in ("EXPLAIN (VERBOSE) ", "explain verbose ", "EXPLAIN ( verbose true ) "):
        cur = con.execute(verbose + sql)
        lines = [r[0] for r in cur.fetchall()]
        assert set(plain[1:]) <= set(lines)  # the same plan, and the engine SQL
        assert any(line.startswith("Engine SQL") for line in lines)
    assert cur.description[0][0] == "QUERY PLAN"
    assert any("Cost: epsilon 0.5" in line for line in lines)
    assert any("scale" in line for line in lines)
    assert con.ledger() == [] and con.budget == before


# --- DB-API surface -------------------------------------------------------------------------


def test_qmark_parameters_bind_like_literals(open_source) -> None:
    literal = rows_of(open_source("frame", seed=3), "SELECT dept, COUNT(*) FROM people WHERE age > 40 AND region = 'north' GROUP BY dept")
    con = open_source("frame", seed=3)
    bound = rows_of(con, "SELECT dept, COUNT(*) FROM people WHERE age > ? AND region = ? GROUP BY dept", [40, "north"])
    assert bound == literal
    charged = len(con.ledger())
    with pytest.raises(ParameterError):
        con.execute("SELECT COUNT(*) FROM people WHERE age > ?", [40, 50])
    with pytest.raises(ParameterError):
        con.execute("SELECT COUNT(*) FROM people WHERE age > ?")
    with pytest.raises(ParameterError):
        con.cursor().execute("SELECT COUNT(*) FROM people WHERE age > ?", {"age": 40})  # type: ignore[arg-type]
    assert len(con.ledger()) == charged


def test_description_and_fetch_methods(connect) -> None:
    con = connect(random_seed=4)
    cur = con.cursor()
    cur.execute("SELECT dept, COUNT(*) AS n, AVG(income) AS mean_income FROM people GROUP BY dept")
    assert [d[0] for d in cur.description] == ["dept", "n", "mean_income"]
    assert all(len(d) == 7 for d in cur.description)
    assert cur.description[0][1] == dpsql.STRING
    assert cur.description[1][1] == dpsql.NUMBER and cur.description[2][1] == dpsql.NUMBER
    assert cur.rowcount == 12
    rows = cur.result.rows
    assert cur.fetchone() == rows[0]
    assert cur.fetchmany(5) == rows[1:6]
    assert cur.fetchmany() == rows[6:7]  # arraysize defaults to 1
    cur.arraysize = 2
    assert cur.fetchmany() == rows[7:9]
    assert list(cur) == rows[9:]
    assert cur.fetchone() is None and cur.fetchall() == [] and cur.fetchmany(3) == []


def test_fetchdf_carries_the_noise_metadata(connect) -> None:
    con = connect(random_seed=4)
    cur = con.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.4) dept, COUNT(*) AS n, SUM(age) AS s "
                      "FROM people GROUP BY dept")
    rows = cur.result.rows
    df = cur.fetchdf()
    assert list(df.columns) == ["dept", "n", "s"] and len(df) == 12
    assert [tuple(r) for r in df.itertuples(index=False)] == rows
    assert df.attrs["epsilon"] == pytest.approx(0.4) and df.attrs["delta"] == 0.0
    assert df.attrs["noise_info"] == cur.noise_info
    assert len(df.attrs["ci95"]) == 12 and df.attrs["ci95"][0][0] is None


def test_noise_info_keys_scales_and_intervals(connect) -> None:
    con = connect(random_seed=4)
    cur = con.execute("SELECT dept, COUNT(*) AS n, SUM(income) AS s, AVG(age) AS a FROM people GROUP BY dept")
    key, count, total, avg = cur.noise_info
    assert key is None
    for info in (count, total, avg):
        assert {"mechanism", "scale", "ci95", "epsilon", "delta"} <= set(info)
        assert info["delta"] == 0.0
    # 4 releases (COUNT, SUM, AVG's sum and count) share epsilon 0.1: 0.025 each.
    assert count["mechanism"] == "laplace" and count["epsilon"] == pytest.approx(0.025)
    assert count["scale"] == pytest.approx(3 / 0.025)  # sensitivity max_rows = 3
    assert count["ci95"] == discrete_laplace_ci(Fraction(120))
    assert total["scale"] == pytest.approx(3 * 500000 / 0.025)  # max_rows * max(|L|, |U|)
    assert avg["epsilon"] == pytest.approx(0.05) and len(avg["scale"]) == 2
    for row_widths in cur.cell_ci95:
        assert row_widths[0] is None and row_widths[1] == count["ci95"]


def test_budget_decreases_and_survives_a_reconnect(connect, policy_file, tmp_path) -> None:
    policy, ledger = policy_file(epsilon=1.0), tmp_path / "ledger.sqlite"
    con = connect(policy, ledger=ledger, random_seed=1, analyst="alice")
    assert con.budget == (1.0, 1e-5)
    con.execute("SELECT COUNT(*) FROM people")
    con.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.3) COUNT(*) FROM people")
    assert con.budget == (0.6, 1e-5)
    con.close()
    again = connect(policy, ledger=ledger, analyst="alice")
    assert again.budget == (0.6, 1e-5) and len(again.ledger()) == 2
    assert connect(policy, ledger=ledger, analyst="bob").budget == (1.0, 1e-5)  # per analyst


# --- public tables ----------------------------------------------------------------------------

PUBLIC_DEPTS = """
[tables.depts]
public = true
source = "depts.csv"

[tables.depts.columns]
dept  = { type = "text" }
floor = { type = "int" }
"""


def test_public_table_answers_exactly_without_charge(connect, policy_file, tmp_path) -> None:
    floors = pd.DataFrame({"dept": list(DEPTS), "floor": [i % 4 + 1 for i in range(len(DEPTS))]})
    floors.to_csv(tmp_path / "depts.csv", index=False)
    con = connect(policy_file(extra=PUBLIC_DEPTS), random_seed=1)
    before = con.budget
    cur = con.execute("SELECT dept, floor FROM depts WHERE floor >= ? ORDER BY dept", [3])
    expected = sorted((d, f) for d, f in zip(floors["dept"], floors["floor"]) if f >= 3)
    assert cur.fetchall() == expected
    assert cur.noise_info == [None, None]
    assert rows_of(con, "SELECT floor, COUNT(*) FROM depts GROUP BY floor ORDER BY floor") == [(1, 3), (2, 3), (3, 3), (4, 3)]
    # Aliases and qualified columns bind to the public table.
    assert rows_of(con, "SELECT d.dept FROM depts AS d WHERE d.floor = 1 ORDER BY d.dept") == sorted(
        (d,) for d, f in zip(floors["dept"], floors["floor"]) if f == 1
    )
    assert con.ledger() == [] and con.budget == before

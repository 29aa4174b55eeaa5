"""MEDIAN / QUANTILE / IQR / MODE end to end through dpsql.connect: edge cases and the ⊥ channel.

Each test states what a careful user expects: a refusal (⊥) is a NULL cell whose noise_info says
"refused" with a sentence of public facts only, the full cost is charged whether or not the answer
is ⊥, released SMed values are exact (and equal DuckDB's quantile_disc, the lower median), and
A_samp never releases a confident wrong mode on near-tied data. Attacks A14 (the ⊥ channel):
a refusal reads the same and costs the same whatever the data.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

import dpsql
from dpsql.render import render_table

POLICY = """
[budget]
epsilon = 1000.0
delta = 0.5
accountant = "basic"
default_query_epsilon = 1.0
default_query_delta = 1e-6

[tables.t]
privacy_unit = "pid"
max_rows = {max_rows}
max_groups = 1

[tables.t.columns]
pid = {{ type = "int" }}
x = {{ type = "int", lower = 0, upper = 100 }}
y = {{ type = "float", lower = 0, upper = 1000, precision = 1 }}
z = {{ type = "float" }}
d = {{ type = "date", lower = 2000-01-01, upper = 2030-12-31 }}
c = {{ type = "text" }}
g = {{ type = "text", values = ["a", "b"] }}
"""

EPS1 = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) "
# Cases about the PTR family (SMed, Scale) and its ⊥ channel pin it: bounded columns default to the
# exponential mechanism (tests/integration/test_robust_defaults.py).
PTR1 = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, quantile_mechanism = 'smed') "
# Cases about A_samp pin it too: a column without declared values defaults to the stable-histogram
# mode at max_rows = 1 (aggregates/mode.py); 200 is A_samp's default B at epsilon 1.
ASAMP1 = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, mode_blocks = 200) "
PTR_ASAMP1 = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, quantile_mechanism = 'smed', mode_blocks = 200) "


def frame(x: Any, y: Any = None, c: Any = None, g: Any = None, d: Any = None, z: Any = None, rows_per_person: int = 1) -> pd.DataFrame:
    x = np.asarray(x)
    n = len(x)
    return pd.DataFrame({
        "pid": np.arange(n) // rows_per_person,
        "x": x,
        "y": np.asarray(y if y is not None else np.zeros(n), dtype=float),
        "z": np.asarray(z if z is not None else np.zeros(n), dtype=float),
        "d": d if d is not None else [dt.date(2020, 1, 1)] * n,
        "c": c if c is not None else ["u"] * n,
        "g": g if g is not None else ["a"] * n,
    })


@pytest.fixture
def open_table(tmp_path: Path) -> Iterator[Callable[..., dpsql.Connection]]:
    opened: list[dpsql.Connection] = []

    def open_(data: pd.DataFrame, seed: int = 1, max_rows: int = 1) -> dpsql.Connection:
        path = tmp_path / f"policy{len(opened)}.toml"
        path.write_text(POLICY.format(max_rows=max_rows), encoding="utf-8")
        con = dpsql.connect(policy=path, tables={"t": data}, random_seed=seed)
        opened.append(con)
        return con

    yield open_
    for con in opened:
        con.close()


def answer(con: dpsql.Connection, sql: str) -> tuple[list[tuple], list[dict | None]]:
    cur = con.cursor()
    cur.execute(sql)
    return cur.fetchall(), cur.noise_info


# --- SMed -------------------------------------------------------------------------------------------


def test_all_equal_values_release_the_exact_value(open_table) -> None:
    rows, info = answer(open_table(frame([37] * 400)), PTR1 + "MEDIAN(x), IQR(x) FROM t")
    assert rows == [(37, 0.0)]
    # SMed's release is exact on the unit grid of an int column: ci95 0 (was None before intervals were reported)
    assert info[0]["mechanism"] == "smed" and info[0]["refused"] is False and info[0]["ci95"] == 0.0
    assert info[1]["mechanism"] == "scale" and info[1]["refused"] is False


def test_even_n_releases_the_lower_median_like_duckdb_quantile_disc(open_table) -> None:
    values = [10] * 200 + [20] * 200  # n = 400: the lower median is x_(200) = 10; quantile_cont would say 15
    data = frame(values)
    rows, _ = answer(open_table(data), PTR1 + "MEDIAN(x), PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY x) FROM t WHERE x <= 10 OR x >= 20")
    expected = duckdb.sql("SELECT quantile_disc(x, 0.5) FROM data").fetchall()[0][0]
    # x_(200) sits at the upper edge of its tie block: unstable, so ⊥ is the only safe answer here;
    # with one more 10 the block contains rank 200 with room to spare and the value is released.
    assert rows == [(None, None)]
    more = frame([10] * 300 + [20] * 200)
    rows, _ = answer(open_table(more), PTR1 + "MEDIAN(x) FROM t")
    assert rows == [(duckdb.sql("SELECT quantile_disc(x, 0.5) FROM more").fetchall()[0][0],)] == [(10,)]
    assert expected == 10


def test_heavy_ties_release_the_true_lower_median(open_table) -> None:
    rng = np.random.default_rng(3)
    data = frame(rng.choice([1, 2, 3, 4], size=5000, p=[0.2, 0.5, 0.15, 0.15]))
    for seed in range(5):
        rows, _ = answer(open_table(data, seed=seed), PTR1 + "MEDIAN(x), QUANTILE(x, 0.9) FROM t")
        truth = duckdb.sql("SELECT quantile_disc(x, 0.5), quantile_disc(x, 0.9) FROM data").fetchall()[0]
        assert rows[0] == truth


def test_bimodal_data_refuses_the_median(open_table) -> None:
    data = frame([25] * 500 + [70] * 500)
    for seed in range(5):
        rows, info = answer(open_table(data, seed=seed), PTR1 + "MEDIAN(x) FROM t")
        assert rows == [(None,)] and info[0]["refused"] is True


def test_float_column_median_on_the_precision_grid(open_table) -> None:
    rng = np.random.default_rng(5)
    y = np.round(rng.normal(500, 3, size=20000), 3)
    rows, info = answer(open_table(frame(np.zeros(len(y), dtype=int), y=y)), EPS1 + "MEDIAN(y) FROM t")
    truth = float(np.sort(y)[math.ceil(len(y) / 2) - 1])
    assert rows[0][0] is not None and abs(rows[0][0] - truth) <= 0.5 + 1e-9  # rounded to the grid 1
    assert rows[0][0] == round(rows[0][0])


def test_date_column_median(open_table) -> None:
    days = [dt.date(2021, 3, 1)] * 1900 + [dt.date(2021, 3, 2)] * 100
    rows, info = answer(open_table(frame([0] * 2000, d=days)), EPS1 + "MEDIAN(d), IQR(d) FROM t")
    assert rows == [(dt.date(2021, 3, 1), 0.0)]  # a date, and an IQR in days


# --- edge cases: empty, NULL, NaN, one row ------------------------------------------------------------


@pytest.mark.parametrize("where", ["x < 0", "x IS NULL"])
def test_empty_input_refuses_and_charges(open_table, where: str) -> None:
    con = open_table(frame([5] * 50))
    before = con.budget
    rows, info = answer(con, PTR1 + f"MEDIAN(x), IQR(x), MODE(c), QUANTILE(y, 0.5) FROM t WHERE {where}")
    assert rows == [(None, None, None, None)]
    assert all(i["refused"] is True for i in info)
    after = con.budget
    assert before[0] - after[0] == pytest.approx(1.0) and before[1] - after[1] == pytest.approx(1e-6)


def test_all_null_and_nan_values_are_dropped(open_table) -> None:
    z = np.full(300, np.nan)
    z[:200] = 7.0  # NaN rows are dropped before ranking: 200 sevens remain
    rows, _ = answer(open_table(frame([1] * 300, z=z)), EPS1 + "MEDIAN(z, 1), MODE(z) FROM t")
    assert rows[0][1] == 7.0
    assert rows[0][0] is not None and abs(rows[0][0] - 7.0) < 40  # PTR-Laplace: 7 + Laplace(2 b / eps)
    empty = frame([1] * 100, z=np.full(100, np.nan))
    rows, info = answer(open_table(empty), EPS1 + "MEDIAN(z, 1), MODE(z), IQR(z) FROM t")
    assert rows == [(None, None, None)]


def test_one_row_is_refused(open_table) -> None:
    for seed in range(10):
        rows, _ = answer(open_table(frame([42]), seed=seed), PTR1 + "MEDIAN(x), IQR(x), MODE(x) FROM t")
        assert rows == [(None, None, None)]


def test_iqr_zero_releases_zero(open_table) -> None:
    data = frame([3] * 100 + [5] * 800 + [9] * 100)
    rows, _ = answer(open_table(data), EPS1 + "IQR(x) FROM t")
    assert rows == [(0.0,)]


def test_iqr_is_close_on_a_large_sample(open_table) -> None:
    rng = np.random.default_rng(11)
    y = np.clip(rng.lognormal(6, 0.5, size=200_000), 0, 1000)
    # eps' = 4 * 0.9 / 4 = 0.9 per step: the factor beta^Lap(1/0.9) stays within 1.1 at 95%.
    sql = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 4, delta = 1e-6) IQR(y) FROM t"
    rows, info = answer(open_table(frame(np.zeros(len(y), dtype=int), y=y)), sql)
    truth = float(np.quantile(y, 0.75, method="inverted_cdf") - np.quantile(y, 0.25, method="inverted_cdf"))
    assert rows[0][0] is not None and abs(rows[0][0] / truth - 1) < 0.2


# --- MODE ---------------------------------------------------------------------------------------------


def test_mode_on_zipf_text_is_correct_when_released(open_table) -> None:
    rng = np.random.default_rng(2)
    labels = np.array([f"k{i:02d}" for i in range(20)])
    weights = 1 / np.arange(1, 21) ** 1.2
    c = rng.choice(labels, size=5000, p=weights / weights.sum())
    released = 0
    for seed in range(8):
        rows, info = answer(open_table(frame(np.zeros(5000, dtype=int), c=list(c)), seed=seed), ASAMP1 + "MODE(c) FROM t")
        assert rows[0][0] in (None, "k00")
        released += rows[0][0] == "k00"
        assert info[0]["mechanism"] == "asamp"
    assert released >= 7


def test_mode_on_zipf_text_by_default_is_the_histogram_and_always_right(open_table) -> None:
    rng = np.random.default_rng(2)
    labels = np.array([f"k{i:02d}" for i in range(20)])
    weights = 1 / np.arange(1, 21) ** 1.2
    c = rng.choice(labels, size=5000, p=weights / weights.sum())
    for seed in range(8):
        rows, info = answer(open_table(frame(np.zeros(5000, dtype=int), c=list(c)), seed=seed), EPS1 + "MODE(c) FROM t")
        assert rows[0][0] == "k00" and info[0]["mechanism"] == "stable-histogram" and info[0]["confidence"] > 0.99


def test_near_tied_mode_is_refused_never_confidently_wrong(open_table) -> None:
    c = ["p"] * 2020 + ["q"] * 1980
    outcomes = Counter()
    for seed in range(12):
        rows, _ = answer(open_table(frame(np.zeros(4000, dtype=int), c=c), seed=seed), ASAMP1 + "MODE(c) FROM t")
        outcomes[rows[0][0]] += 1
    assert outcomes["q"] == 0
    assert outcomes[None] >= 11, outcomes


def test_near_tied_mode_by_the_histogram_answers_with_a_low_confidence(open_table) -> None:
    # A_samp refuses this (above); the histogram answers: p leads q by 40 rows, 20 times its noise
    # scale 2k/eps = 2, so it is right, and a wrong answer would have to claim less than 90%.
    c = ["p"] * 2020 + ["q"] * 1980
    for seed in range(12):
        rows, info = answer(open_table(frame(np.zeros(4000, dtype=int), c=c), seed=seed), EPS1 + "MODE(c) FROM t")
        assert rows[0][0] in ("p", "q") and info[0]["mechanism"] == "stable-histogram"
        assert rows[0][0] == "p" or info[0]["confidence"] < 0.9


def test_mode_with_ties_inside_small_subsamples_is_not_the_smallest_label(open_table) -> None:
    # Uniform over 4 labels with n = 800 and B = 200: 4 persons per subsample, ties everywhere.
    # A first-label tie-break would give "a" nearly every vote and release it confidently.
    c = ["a", "b", "c", "d"] * 200
    for seed in range(5):
        rows, _ = answer(open_table(frame(np.zeros(800, dtype=int), c=c), seed=seed),
                         "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, mode_blocks = 200) MODE(c) FROM t")
        assert rows == [(None,)]


# --- grouped -------------------------------------------------------------------------------------------


def test_grouped_median_over_a_public_domain_releases_every_key(open_table) -> None:
    g = ["a"] * 3000 + ["b"] * 10
    x = [40] * 3000 + [70] * 10
    rows, info = answer(open_table(frame(x, g=g)), PTR1 + "g, MEDIAN(x), MODE(x) FROM t GROUP BY g")
    assert rows == [("a", 40, 40), ("b", None, None)]
    assert info[1]["refused"] == (False, True)


def test_exponential_mechanism_never_refuses_and_is_close(open_table) -> None:
    rng = np.random.default_rng(8)
    x = rng.integers(20, 60, size=20000)
    rows, info = answer(open_table(frame(x)), "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, quantile_mechanism = 'exponential') "
                                              "MEDIAN(x) FROM t WHERE x < 0")
    assert rows[0][0] is not None and 0 <= rows[0][0] <= 100  # empty input: a uniform candidate, never ⊥
    assert info[0]["mechanism"] == "exponential" and "refused" not in info[0] and info[0]["delta"] == 0
    rows, _ = answer(open_table(frame(x)), "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, quantile_mechanism = 'exponential') "
                                           "MEDIAN(x) FROM t")
    assert abs(rows[0][0] - int(np.sort(x)[9999])) <= 1


# --- the ⊥ channel (A14) ----------------------------------------------------------------------------------


def test_refusal_reads_the_same_whatever_the_data(open_table) -> None:
    sql = PTR_ASAMP1 + "MEDIAN(x), IQR(y), MODE(c) FROM t"
    # The median in the gap of a bimodal column; Q1 at the last of 250 zeros (one more row moves it
    # to 999); a near-tied text column.
    bimodal = frame([25] * 500 + [70] * 500, y=[0.0] * 250 + [999.0] * 750, c=["a", "b"] * 500)
    tiny = frame([3, 9], y=[1.0, 2.0], c=["a", "b"])
    texts = []
    for data in (bimodal, tiny):
        rows, info = answer(open_table(data), sql)
        assert rows == [(None, None, None)]
        texts.append([i["refusal"] for i in info])
    assert texts[0] == texts[1]
    for text in texts[0]:
        assert "refused" in text and "was spent" in text
        for leak in ("1000", "500", "25", "70", "999", "distance", "tau", "n ="):
            assert leak not in text.replace("epsilon 0.333", "").replace("epsilon 0.3", ""), (leak, text)


def test_refused_cells_render_as_bottom_with_the_sentence(open_table) -> None:
    con = open_table(frame([25] * 500 + [70] * 500))
    cur = con.cursor()
    cur.execute(PTR1 + "MEDIAN(x), COUNT(*) FROM t")
    text = render_table(cur._result)  # the REPL/CLI renderer
    assert "⊥" in text and "MEDIAN(x) refused: the median is not stable on this data" in text
    assert "Budget" not in text or "was spent" in text


def test_ledger_records_the_mechanisms_and_charges_on_refusal(open_table) -> None:
    con = open_table(frame([42]))
    answer(con, PTR_ASAMP1 + "MEDIAN(x), MODE(c) FROM t")
    entry = con.ledger()[-1]
    assert entry.mechanism == "smed+asamp"
    answer(con, PTR1 + "MEDIAN(x), MODE(c) FROM t")  # MODE's default without declared values at max_rows = 1
    assert con.ledger()[-1].mechanism == "smed+stable-histogram"
    assert float(entry.cost.epsilon) == pytest.approx(1.0) and float(entry.cost.delta) == pytest.approx(1e-6)


def test_explain_shows_which_mechanism_runs(open_table) -> None:
    con = open_table(frame([1, 2, 3]))
    cur = con.cursor()
    # x bounded: the EM by default; y with a bound: PTR-Laplace; z unbounded: Scale (changed with the EM default)
    cur.execute("EXPLAIN (VERBOSE) " + EPS1 + "MEDIAN(x), MEDIAN(y, 5), IQR(z), MODE(c) FROM t")  # with the engine requests
    plan = "\n".join(r[0] for r in cur.fetchall())
    cur.execute("EXPLAIN (VERBOSE) " + PTR1 + "MEDIAN(x) FROM t")
    plan += "\n".join(r[0] for r in cur.fetchall())
    cur.execute("EXPLAIN (VERBOSE) " + ASAMP1 + "MODE(c) FROM t")
    plan += "\n".join(r[0] for r in cur.fetchall())
    for word in ("SMed", "exponential mechanism", "PTR-Laplace", "Scale", "A_samp", "request 0", "RESERVOIR_QUANTILE",
                 "ARG_MIN(__v", "stable-histogram mode", "MODE without declared values"):
        assert word in plan, word
    cur.execute("EXPLAIN SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (quantile_mechanism = 'exponential') MEDIAN(x) FROM t")
    assert any("exponential mechanism" in r[0] for r in cur.fetchall())
    assert con.budget == (1000.0, 0.5)  # EXPLAIN is free


def test_windowed_and_exact_paths_agree(open_table) -> None:
    # y is a float column with a fine grid: PTR-Laplace and Scale read rank windows; a forced
    # bracket miss must give the same answer through the exact fallback.
    from dpsql.backend.sql import robust_sql as backend

    rng = np.random.default_rng(4)
    y = np.round(rng.normal(500, 50, size=30000), 2)
    data = frame(np.zeros(len(y), dtype=int), y=y, g=list(rng.choice(["a", "b"], size=len(y))))
    for sql in (EPS1 + "MEDIAN(y, 3), IQR(y) FROM t",                 # ungrouped: bracket, then a bound scan
                EPS1 + "g, MEDIAN(y, 3), IQR(y) FROM t GROUP BY g"):  # grouped: one statement
        first, _ = answer(open_table(data, seed=9), sql)
        original = backend._windows
        backend._windows = lambda *args: None  # every bracket "misses"
        try:
            second, _ = answer(open_table(data, seed=9), sql)
        finally:
            backend._windows = original
        assert first == second and all(v is not None for row in first for v in row)


def test_values_outside_the_bounds_are_clamped_for_every_mechanism(open_table) -> None:
    # x is declared in [0, 100]: a median of 500s is released as 100, the clamped value, by SMed,
    # the EM (whose candidates are 0..100) and PTR-Laplace alike.
    data = frame([500] * 3000)
    rows, _ = answer(open_table(data), EPS1 + "MEDIAN(x), IQR(x), MODE(x) FROM t")
    assert rows == [(100, 0.0, 500)]  # MODE releases a value of the data: no bounds involved
    rows, _ = answer(open_table(data), "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, quantile_mechanism = 'exponential') MEDIAN(x) FROM t")
    assert rows[0][0] in (99, 100)
    rows, _ = answer(open_table(data), EPS1 + "MEDIAN(x, 1) FROM t")
    assert rows[0][0] is not None and abs(rows[0][0] - 100) < 30


def test_extreme_values_cannot_make_the_engine_fail_after_the_charge(open_table) -> None:
    # A float far beyond any grid (1e300 / precision overflows BIGINT) and infinite dates: the
    # mapping clamps before casting and drops infinite dates, so no error can depend on data.
    data = frame([1] * 50, y=[1e300] * 25 + [1.0] * 25, d=[dt.date(2020, 1, 1)] * 50)
    rows, _ = answer(open_table(data), EPS1 + "MEDIAN(y), QUANTILE(y, 0.9), MEDIAN(y, 1), IQR(y) FROM t")
    assert len(rows) == 1
    rows, _ = answer(open_table(data), "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, quantile_mechanism = 'exponential') "
                                       "QUANTILE(y, 0.123456789123) FROM t")
    assert rows[0][0] is not None

"""MODE's mechanism: report-noisy-max over declared values, else the stable-histogram mode or A_samp
chosen from public facts (aggregates/mode.py); the choice is data-free and EXPLAIN says it;
every MODE release states its confidence in noise_info, the REPL table and the wire notice."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

import dpsql
from dpsql.accounting.cost import PrivacyCost
from dpsql.aggregates.mode import choose
from dpsql.mechanisms.histogram_mode import HistogramModeSpec
from dpsql.mechanisms.ptr import PTRTest
from dpsql.mechanisms.subsample import ASampSpec, default_blocks
from dpsql.render import format_confidence, render_table
from dpsql.server.noise_report import notice_text

POLICY = """
[budget]
epsilon = 20.0
delta = 1e-4
default_query_epsilon = 1
default_query_delta = 1e-6

[tables.t]
privacy_unit = "pid"
max_rows = {max_rows}
max_groups = 1

[tables.t.columns]
pid = {{ type = "int" }}
city = {{ type = "text" }}
region = {{ type = "text", values = ["north", "south"] }}
"""

DELTA = Fraction(1, 10**6)


def frame(persons: int = 3000, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"pid": np.arange(persons), "city": rng.choice(["a", "b", "c"], persons, p=[0.6, 0.3, 0.1]),
                         "region": rng.choice(["north", "south"], persons, p=[0.7, 0.3])})


def connect(tmp_path: Path, data: pd.DataFrame, max_rows: int = 1, seed: int = 1) -> dpsql.Connection:
    path = tmp_path / f"p{max_rows}.toml"
    path.write_text(POLICY.format(max_rows=max_rows), encoding="utf-8")
    return dpsql.connect(policy=path, tables={"t": data}, random_seed=seed)


def specs(eps: Fraction, k: int) -> tuple[HistogramModeSpec, ASampSpec]:
    test = PTRTest(eps, DELTA)
    return HistogramModeSpec(eps, DELTA, k), ASampSpec(test, blocks=default_blocks(test))


def test_the_rule_prefers_the_histogram_at_few_rows_per_person_and_a_samp_at_many() -> None:
    for eps in (Fraction(1, 10), Fraction(1)):
        assert choose(*specs(eps, 1)).mechanism == "stable-histogram"
        assert choose(*specs(eps, 3)).mechanism == "stable-histogram"
        assert choose(*specs(eps, 100)).mechanism == "asamp"  # T grows with k; A_samp's subsamples do not
    choice = choose(*specs(Fraction(1, 10), 3))
    assert choice.histogram_rows < (choice.asamp_rows or 0)
    assert f"~{choice.histogram_rows:,} rows" in choice.note and "30%" in choice.note


def test_a_known_row_count_switches_to_the_mechanism_that_can_answer() -> None:
    histogram, asamp = specs(Fraction(1), 100)
    choice = choose(histogram, asamp)
    assert choice.mechanism == "asamp" and choice.asamp_rows is not None
    assert choose(histogram, asamp, rows=choice.asamp_rows - 1).mechanism == "asamp"  # neither can: keep the rule's pick
    histogram3, asamp3 = specs(Fraction(1), 3)
    small = choose(histogram3, asamp3)
    assert choose(histogram3, asamp3, rows=small.histogram_rows).mechanism == "stable-histogram"


def test_planner_picks_per_column_and_options(tmp_path: Path) -> None:
    with connect(tmp_path, frame()) as con:
        cur = con.cursor()
        cur.execute("SELECT MODE(city), MODE(region) FROM t")
        assert [i["mechanism"] for i in cur.noise_info] == ["stable-histogram", "noisy-max"]
        cur.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (mode_blocks = 50) MODE(city) FROM t")
        assert cur.noise_info[0]["mechanism"] == "asamp"
    with connect(tmp_path, frame(), max_rows=100) as con:
        cur = con.cursor()
        cur.execute("EXPLAIN SELECT MODE(city) FROM t")
        text = "\n".join(row[0] for row in cur.fetchall())
        assert "MODE without declared values: A_samp, chosen from public facts" in text


def test_the_choice_is_the_same_for_neighbouring_tables(tmp_path: Path) -> None:
    data = frame()
    plans = []
    for table in (data, data.iloc[1:]):  # one person removed
        for k in (1, 100):
            with connect(tmp_path, table, max_rows=k) as con:
                cur = con.cursor()
                cur.execute("EXPLAIN SELECT MODE(city) FROM t")
                plans.append([row[0] for row in cur.fetchall()])
    assert plans[0] == plans[2] and plans[1] == plans[3]
    assert any("stable-histogram mode" in line for line in plans[0])
    assert any("A_samp" in line and "Release" in line for line in plans[1])


def test_every_mode_release_states_its_confidence(tmp_path: Path) -> None:
    with connect(tmp_path, frame(), seed=4) as con:
        cur = con.cursor()
        cur.execute("SELECT MODE(city), MODE(region) FROM t")
        assert cur.fetchall() == [("a", "north")]
        assert all(info["confidence"] > 0.999 for info in cur.noise_info)  # leads of ~900 and ~1200 rows
        table = render_table(cur.result)
        assert "a (mode with > 99.9% confidence)" in table and "north (mode with > 99.9% confidence)" in table
        notice = notice_text(cur.result, PrivacyCost(1, 0))
        assert notice is not None and "MODE(city) mode with > 99.9% confidence" in notice
        cur.execute("SELECT region, MODE(city) FROM t GROUP BY region ORDER BY region")
        rows = cur.fetchall()
        sure = cur.noise_info[1]["confidence"]
        assert isinstance(sure, tuple) and len(sure) == len(rows) == 2
        cur.execute("SELECT COUNT(*) FROM t")
        assert "confidence" not in cur.noise_info[0]


def test_confidence_is_shown_rounded_down() -> None:
    assert format_confidence(0.95349) == "95.3%" and format_confidence(0.9999) == "> 99.9%" and format_confidence(0.5) == "50.0%"

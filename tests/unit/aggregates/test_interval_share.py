"""OPTIONS (interval_share = s): the share of a quantile's epsilon that buys its 95% interval
(aggregates/quantiles.py); the value gets the rest, the charge is the same, and a share outside
[0.1, 0.9] is refused before anything runs."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpsql
from dpsql.mechanisms.window_exponential import IQRIntervalSpec, QuantileIntervalSpec

POLICY = """
[budget]
epsilon = 20.0
delta = 1e-4
default_query_epsilon = 1
default_query_delta = 1e-6

[tables.t]
privacy_unit = "pid"
max_rows = 1
max_groups = 1

[tables.t.columns]
pid = { type = "int" }
x = { type = "int", lower = 0, upper = 1000 }
"""


@pytest.fixture()
def con(tmp_path: Path) -> dpsql.Connection:
    path = tmp_path / "p.toml"
    path.write_text(POLICY, encoding="utf-8")
    data = pd.DataFrame({"pid": np.arange(2000), "x": np.arange(2000) % 1000})
    return dpsql.connect(policy=path, tables={"t": data}, random_seed=3)


def _specs(con: dpsql.Connection, sql: str) -> list[object]:
    return [release.spec for release in con.session.compile(sql).compiled.plan.robust]  # type: ignore[attr-defined]


def test_the_value_gets_what_the_interval_does_not(con: dpsql.Connection) -> None:
    options = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, interval_share = 0.25)"
    median, quantile, iqr, smallest = _specs(con, f"{options} MEDIAN(x), QUANTILE(x, 0.9), IQR(x), MIN(x) FROM t")
    assert isinstance(median, QuantileIntervalSpec) and median.share == Fraction(3, 4)
    assert isinstance(quantile, QuantileIntervalSpec) and quantile.share == Fraction(3, 4)  # tails too: the analyst's choice
    assert isinstance(smallest, QuantileIntervalSpec) and smallest.share == Fraction(3, 4)
    assert isinstance(iqr, IQRIntervalSpec) and iqr.value_share == Fraction(3, 4)
    assert median.width.epsilon == Fraction(1, 4) * median.epsilon  # the interval's draw


def test_the_default_shares_and_the_charge_stay(con: dpsql.Connection) -> None:
    plain = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) MEDIAN(x), QUANTILE(x, 0.9) FROM t"
    median, quantile = _specs(con, plain)
    assert isinstance(median, QuantileIntervalSpec) and median.share == Fraction(2, 5)
    assert isinstance(quantile, QuantileIntervalSpec) and quantile.share == Fraction(3, 5)
    shared = plain.replace("(epsilon = 1)", "(epsilon = 1, interval_share = 0.5)")
    assert con.session.compile(shared).compiled.plan.cost == con.session.compile(plain).compiled.plan.cost  # type: ignore[attr-defined]


@pytest.mark.parametrize("share", ["0.05", "0.95", "1", "0"])
def test_a_share_outside_the_range_is_refused(con: dpsql.Connection, share: str) -> None:
    before = con.session.remaining
    with pytest.raises(dpsql.Error, match="DP120|interval_share must be"):
        con.execute(f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (interval_share = {share}) MEDIAN(x) FROM t").fetchall()
    assert con.session.remaining == before


def test_a_larger_value_share_answers_with_its_interval(con: dpsql.Connection) -> None:
    cur = con.cursor()
    cur.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, interval_share = 0.25) MEDIAN(x) FROM t")
    (value,), = cur.fetchall()
    assert 0 <= value <= 1000 and cur.noise_info[0]["ci95"] is not None

"""SUM(DISTINCT x) and AVG(DISTINCT x) (issue 30: Qrlew's `SUM(DISTINCT age)`), against the same
release written by hand.

Hypothesis: where no value repeats within a group, the distinct values are the rows' values, so
`SUM(DISTINCT x)` and `AVG(DISTINCT x)` are `SUM(x)` and `AVG(x)` with the same sensitivities
(k * max(|L|, |U|); AVG's centred sum and count): with the same seed (same noise draws) they
release exactly the same values. Negative control: on data where values repeat within a group,
the same pair releases different values (the DISTINCT is really applied, on the engine). Refused
neighbours: STDDEV/VARIANCE(DISTINCT ...), two arguments, a column without bounds, FILTER, and
DISTINCT in other aggregates.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpsql

POLICY = """
[budget]
epsilon = 1000
delta = 1e-3
default_query_epsilon = 1
default_query_delta = 1e-8
[tables.t]
privacy_unit = "pid"
max_rows = 2
[tables.t.columns]
pid = { type = "int" }
g = { type = "text", values = ["a", "b"] }
x = { type = "int", lower = 0, upper = 5000 }
y = { type = "float", lower = -10, upper = 30 }
w = { type = "int" }
"""
rng = np.random.default_rng(9)  # test data only, not noise
N = 2000
UNIQUE = pd.DataFrame({"pid": np.arange(N) // 2, "g": np.where(np.arange(N) % 2 == 0, "a", "b"),
                       "x": rng.permutation(5001)[:N], "y": rng.permutation(N) / 100 - 5, "w": np.arange(N)})
REPEATED = UNIQUE.assign(x=UNIQUE.x % 50, y=(UNIQUE.y * 4).round() / 4)
PAIRS = [
    ("SELECT g, SUM(DISTINCT x) AS s, AVG(DISTINCT y) AS a FROM t GROUP BY g", "SELECT g, SUM(x) AS s, AVG(y) AS a FROM t GROUP BY g"),
    ("SELECT SUM(DISTINCT y) AS s, AVG(DISTINCT x) AS a FROM t", "SELECT SUM(y) AS s, AVG(x) AS a FROM t"),
]


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "t.toml"
    path.write_text(POLICY, encoding="utf-8")
    return path


def answer(policy: Path, frame: pd.DataFrame, sql: str) -> list[tuple[object, ...]]:
    with dpsql.connect(policy=str(policy), tables={"t": frame}, random_seed=21, ledger=":memory:") as con:
        return con.execute(sql).fetchall()


@pytest.mark.parametrize(("distinct", "plain"), PAIRS)
def test_distinct_over_distinct_values_is_the_plain_release(policy: Path, distinct: str, plain: str) -> None:
    assert UNIQUE.x.is_unique and UNIQUE.y.is_unique  # so within every group too
    assert answer(policy, UNIQUE, distinct) == answer(policy, UNIQUE, plain)


@pytest.mark.parametrize(("distinct", "plain"), PAIRS)
def test_control_repeated_values_are_summed_once(policy: Path, distinct: str, plain: str) -> None:
    assert answer(policy, REPEATED, distinct) != answer(policy, REPEATED, plain)


def test_explain_states_the_distinct_releases(policy: Path) -> None:
    with dpsql.connect(policy=str(policy), tables={"t": UNIQUE}, random_seed=21, ledger=":memory:") as con:
        text = "\n".join(r[0] for r in con.execute("EXPLAIN SELECT SUM(DISTINCT x), AVG(DISTINCT x) FROM t").fetchall())
    assert "SUM(DISTINCT round(clamp(x, 0, 5000) / 1) - 0): discrete Laplace, sensitivity 10000," in text
    assert "SUM(DISTINCT round(clamp(x, 0, 5000) / 1) - 2500): discrete Laplace, sensitivity 5000," in text
    assert "COUNT(DISTINCT x finite): discrete Laplace, sensitivity 2," in text


@pytest.mark.parametrize(("sql", "code"), [
    ("SELECT VARIANCE(DISTINCT x) FROM t", "DP116"),
    ("SELECT STDDEV(DISTINCT x) FROM t", "DP116"),
    ("SELECT SUM(DISTINCT x, y) FROM t", "DP116"),
    ("SELECT MEDIAN(DISTINCT x) FROM t", "DP116"),
    ("SELECT SUM(DISTINCT w) FROM t", "DP106"),
    ("SELECT AVG(DISTINCT g) FROM t", "DP117"),
    ("SELECT SUM(DISTINCT x) FILTER (WHERE y > 0) FROM t", "DP115"),
])
def test_refused_neighbours(policy: Path, sql: str, code: str) -> None:
    with pytest.raises(dpsql.Error) as caught:
        answer(policy, UNIQUE, sql)
    assert caught.value.code == code

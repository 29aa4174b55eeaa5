"""TRIMMED_MEAN(col, p) (aggregates/trimmed_mean.py, mechanisms/trimmed_mean.py): binding and its
refusals, the plan (one share of epsilon, no delta, a histogram request on the coarse EM grid),
the exact in-window sum and count, the estimate and interval arithmetic, and an answer through a
session. Statistical properties (privacy audit, coverage) are in tests/statistical/test_trimmed_mean.py.
"""

from __future__ import annotations

import tomllib
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.aggregates import registry
from dpsql.aggregates.trimmed_mean import TRIMMED_MEAN
from dpsql.analysis.context import AnalysisContext
from dpsql.analysis.functions import allowed_function_names
from dpsql.catalog.loader import policy_from_dict
from dpsql.demo.people import policy_text
from dpsql.errors import Error
from dpsql.execution.compiled import CompiledQuery, compile_statement
from dpsql.mechanisms import trimmed_mean
from dpsql.mechanisms.ranks import Histogram
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.mechanisms.trimmed_mean import STEPS, Draw, TrimmedMeanSpec, bracket, estimate, in_window
from tests.conftest import make_policy_text


def compiled(sql: str) -> CompiledQuery:
    policy = policy_from_dict(tomllib.loads(policy_text(None)))
    _, out = compile_statement(sql, None, AnalysisContext(policy, policy.budget.default_query))
    assert isinstance(out, CompiledQuery)
    return out


def refusal(sql: str) -> Error:
    with pytest.raises(Error) as info:
        compiled(sql)
    return info.value


# --- binding -------------------------------------------------------------------------------------------


def test_it_is_registered_under_its_spelling() -> None:
    call = compiled("SELECT TRIMMED_MEAN(income, 0.1) FROM people").plan.query.aggregates[0]
    assert call.kind == "trimmed_mean" and call.p == Fraction(1, 10) and call.column is not None and call.column.name == "income"
    assert registry.for_call(call) is TRIMMED_MEAN  # found by its kind
    assert allowed_function_names()["TRIMMED_MEAN"] == "aggregate"  # completion and help list it


@pytest.mark.parametrize(("sql", "code"), [
    ("SELECT TRIMMED_MEAN(income) FROM people", "DP124"),
    ("SELECT TRIMMED_MEAN(income, 0.1, 2) FROM people", "DP124"),
    ("SELECT TRIMMED_MEAN(income, 0.5) FROM people", "DP124"),
    ("SELECT TRIMMED_MEAN(income, 0) FROM people", "DP124"),
    ("SELECT TRIMMED_MEAN(income, age) FROM people", "DP124"),
    ("SELECT TRIMMED_MEAN(dept, 0.1) FROM people", "DP117"),
    ("SELECT TRIMMED_MEAN(income + 1, 0.1) FROM people", "DP115"),
    ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (ci95 = 10) TRIMMED_MEAN(income, 0.1) FROM people", "DP145"),
])
def test_refusals(sql: str, code: str) -> None:
    assert refusal(sql).code == code


# --- planning ------------------------------------------------------------------------------------------


def test_plan_one_share_no_delta_and_a_histogram_request() -> None:
    plan = compiled("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*), TRIMMED_MEAN(income, 0.1) FROM people").plan
    assert plan.cost.epsilon == 1 and plan.cost.delta == 0
    assert len(plan.releases) == 1 and len(plan.robust) == 1  # COUNT(*) and the trimmed mean: one half each
    spec = plan.robust[0].spec
    assert isinstance(spec, TrimmedMeanSpec) and spec.epsilon == Fraction(1, 2) and spec.max_rows == 3
    assert trimmed_mean.cost(spec).epsilon == Fraction(1, 2)
    assert [q.epsilon for q in spec.quantiles] == [Fraction(1, 8)] * 2 and spec.total.epsilon == spec.count.epsilon == Fraction(1, 8)
    assert spec.total.sensitivity == 3 * STEPS and spec.count.sensitivity == 3
    request = plan.requests[plan.robust[0].request]
    assert request.histogram and request.values.grid == 10  # the coarse EM grid of income: 50,001 candidates
    assert plan.estimates[1].output_type(plan) == "DOUBLE"


def test_explain_states_the_split_and_the_expected_interval() -> None:
    lines = compiled("SELECT TRIMMED_MEAN(age, 0.25) FROM people").explain_lines()
    text = "\n".join(lines)
    assert "trimmed mean between two exponential-mechanism quantiles (p=0.25, 1-p; 73 public candidates" in text
    assert "epsilon 4 x 0.025, delta 0" in text and "Cost: epsilon 0.1, delta 0" in text
    assert "TRIMMED_MEAN(age, 0.25): the mean of the values inside a window" in text


# --- the mechanism's arithmetic -------------------------------------------------------------------------


def test_in_window_sum_and_count_are_exact() -> None:
    hist = Histogram.from_counts([(10, 2), (20, 3), (30, 4), (40, 1)])
    # Window [20, 40]: m = 30, W = 10: y(20) = -2^20, y(30) = 0, y(40) = 2^20; 10 is outside.
    assert in_window(hist, 20, 40) == (3 * -STEPS + 4 * 0 + 1 * STEPS, 8)
    assert in_window(hist, 30, 30) == (0, 4)  # a one-value window: y = 0
    assert in_window(hist, 41, 50) == (0, 0)


def test_estimate_is_the_in_window_mean_and_stays_in_the_window() -> None:
    spec = TrimmedMeanSpec(Fraction(1), Fraction(1, 10), 1, 0, 100)
    total, count = in_window(Histogram.from_counts([(20, 3), (30, 4), (40, 1)]), 20, 40)
    assert estimate(spec, 20, 40, total, count) == Fraction(20 * 3 + 30 * 4 + 40, 8)
    assert estimate(spec, 20, 40, 100 * STEPS, 1) == 40 and estimate(spec, 20, 40, -100 * STEPS, 1) == 20  # clamped
    assert estimate(spec, 20, 40, 5, 0) == 30 + Fraction(10 * 5, STEPS)  # max(C, 1)


def test_interval_holds_the_estimate_and_widens_with_the_level() -> None:
    spec = TrimmedMeanSpec(Fraction(1), Fraction(1, 10), 3, 0, 100)
    drawn = Draw(20, 40, STEPS // 2, 200)
    wide, narrow = bracket(spec, drawn), bracket(spec, drawn, level=0.5)
    assert wide.low <= wide.value <= wide.high and wide.low >= 20 and wide.high <= 40
    assert wide.high - wide.low > narrow.high - narrow.low > 0


def test_release_is_reproducible_and_orders_the_window() -> None:
    spec = TrimmedMeanSpec(Fraction(1, 100), Fraction(1, 10), 1, 0, 100)  # a tiny epsilon: the quantiles may cross
    hist = Histogram.from_counts([(v, 5) for v in range(0, 101)])
    one = [trimmed_mean.draw(spec, hist, SeededRandomSource(s)) for s in range(50)]
    two = [trimmed_mean.draw(spec, hist, SeededRandomSource(s)) for s in range(50)]
    assert one == two and all(d.low <= d.high for d in one)


# --- through a session ----------------------------------------------------------------------------------


def test_answers_with_an_interval_near_the_trimmed_mean(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(make_policy_text(), encoding="utf-8")
    ages = [40] * 1500 + [60] * 1500 + [18] * 150 + [90] * 150  # 300 outliers at the bounds
    people = pd.DataFrame({"person_id": range(len(ages)), "age": ages, "income": [1000.0] * len(ages),
                           "dept": ["sales"] * len(ages), "region": ["north"] * len(ages)})
    with dpsql.connect(tables={"people": people}, policy=policy, random_seed=3) as con:
        cur = con.cursor()
        cur.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 2) TRIMMED_MEAN(age, 0.2) AS t, "
                    "TRIMMED_MEAN(age, 0.2) / 2 AS h FROM people")
        (value, half), = cur.fetchall()
        info = cur.noise_info
    assert abs(value - 50) < 1 and half == pytest.approx(value / 2)
    assert info[0]["mechanism"] == "trimmed-mean" and 0 < info[0]["ci95"] < 2 and info[0]["epsilon"] == 2
    assert info[1]["mechanism"] == "trimmed-mean (post-processed)" and info[1]["ci95"] is None

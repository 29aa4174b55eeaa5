"""Coverage of the clipped 95% intervals of clamped COUNT and SUM releases (dpsql/aggregates/base.py).

Hypothesis: H0 "the released interval [CI_LOW, CI_HIGH] (value ∓ half-width cut at 0, around the
value clamped at 0) holds the true value in at least 95% of releases", on the cells where clipping
matters most: empty groups (true COUNT and SUM 0, on the bound) and a tiny group (true COUNT 2,
SUM 170, just above it), at epsilon 0.01 (a half-width of ~900 for the COUNT). 200 seeded
releases of 12 groups (11 empty, 1 tiny), COUNT and SUM each: 2,400 intervals per aggregate
(groups are released with independent noise). H0 is rejected when the one-sided Clopper-Pearson
upper confidence bound on the coverage, at confidence 1 - 1e-6, is below 0.95 (the binomial
p-value of the count under p = 0.95 is at most 1e-6), as in test_interval_coverage.py.
Negative control: the interval clipped to the released value only ([v, v]) is rejected: it holds
a true 0 only when the value was clamped to 0 (about half the time).
"""

from __future__ import annotations

import tomllib

import pandas as pd
import pytest
from scipy import stats

import dpsql
from dpsql.catalog.loader import policy_from_dict
from tests.conftest import make_policy_text

pytestmark = [pytest.mark.statistical, pytest.mark.slow]

SQL = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01) dept, COUNT(*) AS n, CI_LOW(COUNT(*)), CI_HIGH(COUNT(*)), "
       "SUM(age) AS s, CI_LOW(SUM(age)), CI_HIGH(SUM(age)) FROM people WHERE age > 80 GROUP BY dept")
RUNS = 200
LEVEL = 1e-6
AGES = [30] * 20 + [85] * 2  # sales: 2 rows over 80 (COUNT 2, SUM 170); every other department: none


@pytest.fixture(scope="module")
def releases() -> list[tuple[str, int, float, float, int, float, float]]:
    policy = policy_from_dict(tomllib.loads(make_policy_text(epsilon=1000, replay_seconds=0)))
    people = pd.DataFrame({"person_id": range(len(AGES)), "age": AGES, "income": [1000.0] * len(AGES),
                           "dept": ["sales"] * len(AGES), "region": ["north"] * len(AGES)})
    out = []
    with dpsql.connect(tables={"people": people}, policy=policy, random_seed=41) as con:
        cur = con.cursor()
        for _ in range(RUNS):
            rows = cur.execute(SQL).fetchall()
            assert len(rows) == 12
            out += rows
    return out


def rejected(count: int, total: int) -> bool:
    """H0 coverage >= 0.95 rejected: the Clopper-Pearson upper bound at 1 - LEVEL is below 0.95."""
    return bool(stats.binom.cdf(count, total, 0.95) <= LEVEL)


def truth(dept: str) -> tuple[int, int]:
    return (2, 170) if dept == "sales" else (0, 0)


def test_clipped_intervals_cover_the_truth_in_95_percent_of_releases(releases: list[tuple]) -> None:
    counts = [low <= truth(dept)[0] <= high for dept, _, low, high, _, _, _ in releases]
    sums = [low <= truth(dept)[1] <= high for dept, _, _, _, _, low, high in releases]
    assert all(low >= 0 for _, _, low, _, _, slow, _ in releases for low in (low, slow))  # clipped: never below 0
    assert sum(n == 0 for _, n, *_ in releases) > len(releases) // 3  # the clamp did act
    for covered in (counts, sums):
        assert not rejected(sum(covered), len(covered)), (sum(covered), len(covered))


def test_control_an_interval_clipped_to_the_released_value_only_is_caught(releases: list[tuple]) -> None:
    counts = [n == truth(dept)[0] for dept, n, *_ in releases]
    sums = [s == truth(dept)[1] for dept, _, _, _, s, _, _ in releases]
    assert rejected(sum(counts), len(counts)) and rejected(sum(sums), len(sums))

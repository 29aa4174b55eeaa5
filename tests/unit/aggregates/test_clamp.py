"""Releases inside their possible range (OPTIONS clamp, on by default).

Hypothesis: with clamping on, no COUNT is below 0 and no SUM of a non-negative column is below 0,
over many seeded releases on empty and tiny groups at a small epsilon (where the noise is
hundreds of times the value); the interval is kept (never ±0). Negative control: the same
releases with OPTIONS (clamp = false) go below 0 (unbiased noise on a true 0 is negative about
half the time: 12 groups x 20 seeds with none below 0 would have probability < 2^-100)."""

from __future__ import annotations

import tomllib

import pandas as pd
import pytest

import dpsql
from dpsql.catalog.loader import policy_from_dict
from tests.conftest import make_policy_text

SQL = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01{extra}) dept, COUNT(*) AS n, SUM(age) AS s, AVG(age) AS a "
       "FROM people WHERE age > 80 GROUP BY dept")


def releases(clamp: str) -> list[tuple]:
    policy = policy_from_dict(tomllib.loads(make_policy_text(epsilon=100)))
    ages = [30] * 20 + [85] * 2  # one tiny group (sales, 2 rows over 80), every other group empty
    people = pd.DataFrame({"person_id": range(len(ages)), "age": ages, "income": [1000.0] * len(ages),
                           "dept": ["sales"] * len(ages), "region": ["north"] * len(ages)})
    rows = []
    for seed in range(20):
        with dpsql.connect(tables={"people": people}, policy=policy, random_seed=seed, ci_columns=True) as con:
            cur = con.cursor()
            cur.execute(SQL.format(extra=clamp))
            names = [d[0] for d in cur.description]
            assert names == ["dept", "n", "n_ci95", "n_ci_low", "n_ci_high", "s", "s_ci95", "s_ci_low", "s_ci_high",
                             "a", "a_ci95", "a_ci_low", "a_ci_high"]
            rows += [(dept, n, s, a, (nw, sw), ((nl, nh), (sl, sh))) for dept, n, nw, nl, nh, s, sw, sl, sh, a, *_ in cur.fetchall()]
    return rows


@pytest.fixture(scope="module")
def clamped() -> list[tuple]:
    return releases("")


def test_no_count_or_sum_of_a_non_negative_column_leaves_its_range(clamped: list[tuple]) -> None:
    assert len(clamped) == 20 * 12
    assert all(n >= 0 and s >= 0 and 18 <= a <= 90 for _, n, s, a, _, _ in clamped)
    assert sum(n == 0 for _, n, _, _, _, _ in clamped) > 60  # the clamp did act (true 0, noise below 0)


def test_the_interval_is_kept_when_the_value_is_clamped(clamped: list[tuple]) -> None:
    widths = {w for *_, w, _ in clamped}  # the release's half-width in every cell, clamped or not
    assert len(widths) == 1 and all(v is not None and v > 100 for v in next(iter(widths)))


def test_the_interval_is_clipped_to_the_range_around_the_released_value(clamped: list[tuple]) -> None:
    """Its ends: [value - ci95, value + ci95] cut at 0 (`<col>_ci_low`, `<col>_ci_high`)."""
    for _, n, s, _, widths, ends in clamped:
        for value, width, (low, high) in zip((n, s), widths, ends):
            assert low == max(value - width, 0) and high == value + width
    assert sum(ends[0] == (0, widths[0]) for _, n, _, _, widths, ends in clamped if n == 0) > 60  # [0, ci95] at a clamped 0


def test_negative_control_clamp_false_releases_below_zero() -> None:
    unclamped = releases(", clamp = false")
    assert any(n < 0 for _, n, _, _, _, _ in unclamped) and any(s < 0 for _, _, s, _, _, _ in unclamped)
    # Unclamped: symmetric intervals, reaching below 0.
    assert all(ends == ((n - nw, n + nw), (s - sw, s + sw)) for _, n, s, _, (nw, sw), ends in unclamped)
    assert any(ends[0][0] < 0 for *_, ends in unclamped)

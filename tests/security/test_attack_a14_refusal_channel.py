"""A14: the ⊥ channel of PTR and A_samp. MEDIAN, IQR and MODE answer ⊥ ("not stable enough") when a
noisy stability test fails. If ⊥ were free, worded by the data, or more (or less) frequent than the
analysis says, the refusal itself would carry the target's bit.

Pass criteria:
* ⊥ is charged like an answer, and everything the analyst receives with it (row, description,
  noise information, interval cells) is the same whatever the data: the full demo table, an empty
  table, one row, two rows in a tie;
* near the threshold the ⊥ rate matches the analysis: MODE (A_samp, epsilon 1, delta 0.05, tau = 3)
  on the pair of tests/statistical/test_robust_dp.py whose distances are tau on D and tau - 1 on D'
  refuses with probability 1 - P(Z >= 0) on D and 1 - P(Z >= 1) on D' (Z discrete Laplace of scale
  1); N = 4,000 runs each, two-sided Clopper-Pearson at 1 - 1e-6 must cover the exact values.
  The (epsilon, delta) audit of the same pairs is in tests/statistical/test_robust_dp.py.
Negative control: A_samp's gap normalised by T instead of 2T (the build test_robust_dp.py also
catches) moves both rates far outside their intervals.
"""

from __future__ import annotations

import pandas as pd
import pytest

from dpsql.mechanisms import subsample
from tests.security.attack_support import cp_lower, cp_upper
from tests.statistical.test_robust_dp import REFUSED, mode_prepared, tail, tmp  # noqa: F401  (tmp: a fixture)

pytestmark = pytest.mark.statistical

QUERIES = [
    # dept has declared values (MODE defaults to report-noisy-max, never ⊥): pin A_samp with its default B
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01, delta = 1e-8, mode_blocks = 17392) MODE(dept) FROM people",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01, delta = 1e-8, quantile_mechanism = 'smed') MEDIAN(age) FROM people",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01, delta = 1e-8, quantile_mechanism = 'smed') IQR(income) FROM people",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01, delta = 1e-8, quantile_mechanism = 'smed') dept, MEDIAN(age) FROM people GROUP BY dept",
]
RUNS = 4000
ALPHA = 5e-7  # per side: two-sided 1 - 1e-6 per rate


def datasets(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    tie = frame.iloc[:2].copy()
    tie["dept"] = ["sales", "hr"]  # one vote each
    return {"demo": frame, "empty": frame.iloc[:0], "one": frame.iloc[:1], "tie": tie}


@pytest.mark.parametrize("sql", QUERIES)
def test_a14_bottom_is_charged_and_reads_the_same_whatever_the_data(connect, people_frame, sql: str) -> None:
    seen = set()
    for name, frame in datasets(people_frame).items():
        con = connect(tables={"people": frame}, random_seed=31)
        cur = con.execute(sql)
        rows = cur.fetchall()
        infos = [i for i in cur.noise_info if i is not None]
        assert infos and all(i["refused"] for i in infos), (name, infos)  # ⊥ here, at epsilon 0.01
        assert len(con.ledger()) == 1 and con.ledger()[0].cost.epsilon > 0  # charged on ⊥
        seen.add(repr((rows, cur.description, cur.noise_info, cur.cell_ci95, con.ledger()[0].cost)))
    assert len(seen) == 1, seen


def refusal_rates(directory, runs: int) -> tuple[int, int]:
    d, d2 = mode_prepared(directory, 8, 2)
    assert d.stats() == {"y": 9, "x": 2} and d2.stats() == {"y": 8, "x": 3}  # d = tau = 3 and tau - 1
    return (sum(v == REFUSED for v in d.outputs(runs, 0)), sum(v == REFUSED for v in d2.outputs(runs, 50_000)))


def covers(hits: int, p: float) -> bool:
    return cp_lower(hits, RUNS, ALPHA) <= p <= cp_upper(hits, RUNS, ALPHA)


def test_a14_refusal_rate_near_the_threshold_matches_the_analysis(tmp) -> None:  # noqa: F811
    on_d, on_d2 = refusal_rates(tmp, RUNS)
    assert covers(on_d, 1 - tail(1, 0)), (on_d, 1 - tail(1, 0))
    assert covers(on_d2, 1 - tail(1, 1)), (on_d2, 1 - tail(1, 1))


def test_a14_negative_control_a_wrong_normaliser_shifts_the_rate(tmp, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setattr(subsample.ASampSpec, "normaliser", property(lambda spec: spec.copies))
    on_d, on_d2 = refusal_rates(tmp, RUNS)
    assert not covers(on_d, 1 - tail(1, 0)) and not covers(on_d2, 1 - tail(1, 1)), (on_d, on_d2)

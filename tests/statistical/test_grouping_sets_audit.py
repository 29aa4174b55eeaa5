"""Grouping sets compose: the (epsilon, delta) inequality for ROLLUP, end to end through SQL.

Query: `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) dept, COUNT(*) AS n FROM people
GROUP BY ROLLUP(dept)`: two grouping sets, (dept) and (), each a release; dpsql splits the
query's epsilon evenly, so each count gets epsilon 1/2 and discrete Laplace noise of scale
b = max_rows / (1/2) = 6, and the statement costs epsilon 1.

Databases: D' = generate_people(3000) and D = D' plus one person with 3 rows (= max_rows) in
dept 'sales'. That person moves two released counts by 3 each: n(sales) and the total.

Event (fixed in advance from the exact counts, public in this test):
S_hi = {noisy n(sales) >= n_D(sales) and noisy total >= n_D(total)}. The two noises are
independent, and with q = e^(-1/b), P(X >= k) = q^k / (1 + q), so
  P_D(S_hi) = (1 / (1 + q))^2,   P_D'(S_hi) = (q^3 / (1 + q))^2,
a ratio of q^-6 = e^(6/b) = e^1 exactly: the inequality P_D(S) <= e^eps P_D'(S) + delta holds
with equality at eps = 1 when the split is right (S_lo, all below D' counts, is the mirror).

Negative control: a planner that gives every set the query's whole epsilon (which is what
charging a ROLLUP as one set amounts to: b = 3 for each count, one epsilon on the bill). The
ratio becomes e^2 and the check at epsilon 1 must fail. Check and confidence as in
test_end_to_end_dp.py: one-sided Clopper-Pearson bounds at 1 - 2.5e-7 each (family 1 - 1e-6);
`runs_needed` computes the smallest run count that flags the control even at the unlucky 1e-6
quantiles of both binomials, and RUNS is above it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from fractions import Fraction

import pandas as pd
import pytest
from scipy import stats

from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import Ledger
from dpsql.analysis import post_processing as post
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.session import Session
from tests.statistical.test_end_to_end_dp import NEW_ID, Neighbours, build_neighbours, duckdb_engine, violates

pytestmark = pytest.mark.statistical

SQL = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) dept, COUNT(*) AS n FROM people GROUP BY ROLLUP(dept)"
RUNS = 1_000  # the correct split is never flagged at any run count (equality); the sample checks need ~10^3
CONTROL_RUNS = 2_750  # = runs_needed(scale=3.0): the control is flagged even at the unlucky 1e-6 quantiles
SEED_D, SEED_D2 = 1, 2


def event_probabilities(scale: float) -> tuple[float, float]:
    """(P_D(S_hi), P_D'(S_hi)) for independent discrete Laplace noise of `scale` on both counts."""
    q = math.exp(-1 / scale)
    return (1 / (1 + q)) ** 2, (q**3 / (1 + q)) ** 2


def runs_needed(scale: float, quantile: float = 1e-6) -> int:
    p_d, p_d2 = event_probabilities(scale)
    for n in range(50, 100_000, 50):
        low = int(stats.binom.ppf(quantile, n, p_d))
        high = int(stats.binom.ppf(1 - quantile, n, p_d2))
        if violates(low, high, n):
            return n
    raise AssertionError("no run count detects the control")


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neighbours]:
    neighbours = build_neighbours(tmp_path_factory.mktemp("rollup-dp"))
    # D: the added person's 3 rows all in 'sales' (the shared builder spreads them over two depts).
    for engine in neighbours.engines.values():
        engine.close()
    d2 = neighbours.frames["D2"]
    person = pd.DataFrame({"person_id": [NEW_ID] * 3, "age": [30, 40, 50], "income": [1e4, 2e4, 3e4],
                           "dept": ["sales"] * 3, "region": ["north"] * 3}).astype(d2.dtypes.to_dict())
    neighbours.frames["D"] = pd.concat([d2, person], ignore_index=True)
    # One session per database runs every query (one seeded stream of draws, so the runs are
    # independent): a budget that never runs out.
    budget = dataclasses.replace(neighbours.policy.budget, total=PrivacyCost(Fraction(10**9), Fraction(1, 2)), accountant="basic")
    neighbours.policy = dataclasses.replace(neighbours.policy, budget=budget)
    neighbours.engines = {name: duckdb_engine(neighbours.policy, frame) for name, frame in neighbours.frames.items()}
    yield neighbours
    for engine in neighbours.engines.values():
        engine.close()


def _counts(db: Neighbours, name: str) -> tuple[int, int]:
    frame = db.frames[name]
    return int((frame["dept"] == "sales").sum()), len(frame)


def _draws(db: Neighbours, name: str, seed: int, runs: int) -> list[tuple[int, int]]:
    """(noisy n(sales), noisy total) of each run, through Session.execute (the SQL path)."""
    session = Session(db.policy, db.engines[name], Ledger(None), rng=SeededRandomSource(seed))
    out = []
    for _ in range(runs):
        result = session.execute(SQL)
        assert result.cost.epsilon == Fraction(1)  # the statement costs the query's epsilon
        rows = {row[0]: row[1] for row in result.rows}
        out.append((rows["sales"], rows[None]))
    return out


def _events(db: Neighbours, runs: int) -> dict[str, tuple[int, int]]:
    sales_d, total_d = _counts(db, "D")
    sales_d2, total_d2 = _counts(db, "D2")
    assert (sales_d - sales_d2, total_d - total_d2) == (3, 3)
    out_d = _draws(db, "D", SEED_D, runs)
    out_d2 = _draws(db, "D2", SEED_D2, runs)

    def hi(v: tuple[int, int]) -> bool:
        return v[0] >= sales_d and v[1] >= total_d

    def lo(v: tuple[int, int]) -> bool:
        return v[0] <= sales_d2 and v[1] <= total_d2

    return {"hi": (sum(map(hi, out_d)), sum(map(hi, out_d2))), "lo": (sum(map(lo, out_d)), sum(map(lo, out_d2)))}


def test_run_count_detects_the_control() -> None:
    assert runs_needed(scale=3.0) <= CONTROL_RUNS
    p_d, p_d2 = event_probabilities(6.0)  # the correct split: equality, never flagged at the unlucky quantiles
    low = int(stats.binom.ppf(1e-6, RUNS, p_d2))
    high = int(stats.binom.ppf(1 - 1e-6, RUNS, p_d))
    assert not violates(high, low, RUNS)


def test_rollup_satisfies_the_dp_inequality_at_the_query_epsilon(databases: Neighbours) -> None:
    counts = _events(databases, RUNS)
    hi_d, hi_d2 = counts["hi"]
    lo_d, lo_d2 = counts["lo"]
    assert not violates(hi_d, hi_d2, RUNS), counts
    assert not violates(lo_d2, lo_d, RUNS), counts
    # The sample follows the intended distribution (two-sided binomial tests at 1e-6).
    big, small = event_probabilities(6.0)
    for hits, p in ((hi_d, big), (hi_d2, small), (lo_d2, big), (lo_d, small)):
        assert stats.binomtest(hits, RUNS, p).pvalue > 1e-6, (hits, p, counts)


def test_negative_control_rollup_charged_as_one_set_is_detected(databases: Neighbours, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(post, "set_share", lambda count: Fraction(1))
    monkeypatch.setattr(Session, "execute", _bill_one_epsilon(Session.execute))
    counts = _events(databases, CONTROL_RUNS)
    hi_d, hi_d2 = counts["hi"]
    lo_d, lo_d2 = counts["lo"]
    assert violates(hi_d, hi_d2, CONTROL_RUNS), counts
    assert violates(lo_d2, lo_d, CONTROL_RUNS), counts


def _bill_one_epsilon(execute):  # type: ignore[no-untyped-def]
    """The broken planner's bill: one set's epsilon (the query's), whatever the sets spent."""
    def run(self: Session, sql: str, parameters: object = None):  # type: ignore[no-untyped-def]
        result = execute(self, sql, parameters)
        return type(result)(result.kind, result.columns, result.rows, result.noise_info, result.cell_ci95,
                            result.cost.scale(Fraction(1, 2)), result.message)
    return run


def test_rollup_rows_are_the_sets_with_null_keys(databases: Neighbours) -> None:
    session = Session(databases.policy, databases.engines["D"], Ledger(None), rng=SeededRandomSource(1))
    result = session.execute(SQL)
    keys = [row[0] for row in result.rows]
    assert keys[-1] is None and None not in keys[:-1] and len(keys) == len(set(keys)) == 13
    assert result.noise_info[1]["scale"] == (6.0, 6.0)  # epsilon 1/2 per set, sensitivity 3

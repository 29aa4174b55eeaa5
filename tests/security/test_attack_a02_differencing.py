"""A2: differencing. The analyst asks `COUNT(*)` and `COUNT(*) WHERE person_id <> T` and subtracts:
without noise the difference is the target's row count, i.e. whether T is in the data.

Databases: D' = generate_people(3000) and D = D' plus person T with 3 rows (= max_rows, so the
first count moves by its full sensitivity 3; the second does not move). Each run is one session
answering both queries at epsilon = 1 each, so the ledger charges 2 epsilon for the pair.

Hypothesis H0 (what the charge claims): the joint output (y1, y2) is (2 epsilon, 0)-DP:
P_D(S) <= e^2 P_D'(S) for every event S, both directions. Events fixed in advance: on the
attacker's statistic y1 - y2 (>= 3, >= 0, <= 0, <= -3) and on y1 alone (>= n_D, <= n_D'). For
correct noise the worst of them has ratio e^1 (y2 carries no information on T; y1 - y2 = 3 + X1 -
X2 on D and X1 - X2 on D'), so the check at e^2 holds with room; it is the charge being checked.

Check: N = 400 runs per database, fixed seeds; flag when a one-sided Clopper-Pearson lower bound
on one side exceeds e^2 times the upper bound on the other, each bound at level 1 - 1e-7: under
H0 a flag has probability <= 2e-7 per event and direction (< 3e-6 over the 12 checks).

Negative control: noise re-drawn from the same seed for both queries (a source re-seeded per query,
or noise derived from the analyst and the data): X1 = X2, so y1 - y2 is exactly 3 on D and 0 on
D', and the event {y1 - y2 >= 3} has probability 1 against 0: flagged at any epsilon.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest

from dpsql.accounting.ledger import Ledger
from dpsql.backend.engines.duckdb_engine import DuckDBEngine
from dpsql.catalog.loader import load_policy
from dpsql.catalog.policy import Policy
from dpsql.demo.people import generate_people, policy_text
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.session import Session
from tests.security.attack_support import dp_violations

pytestmark = pytest.mark.statistical

TARGET = 10**7
OPT = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) "
ALL = OPT + "COUNT(*) FROM people"
ALL_BUT_TARGET = OPT + f"COUNT(*) FROM people WHERE person_id <> {TARGET}"
RUNS = 400
ALPHA = 1e-7


@pytest.fixture(scope="module")
def neighbours(tmp_path_factory) -> Iterator[tuple[Policy, dict[str, DuckDBEngine], dict[str, int]]]:
    path = tmp_path_factory.mktemp("a02") / "policy.toml"
    path.write_text(policy_text(None), encoding="utf-8")  # epsilon 10 per analyst: a fresh ledger per run
    policy = load_policy(path)
    d2 = generate_people(3000, seed=5)
    target = pd.DataFrame({"person_id": [TARGET] * 3, "age": [30] * 3, "income": [1e4] * 3,
                           "dept": ["sales"] * 3, "region": ["north"] * 3}).astype(d2.dtypes.to_dict())
    frames = {"D": pd.concat([d2, target], ignore_index=True), "D2": d2}
    assert d2.groupby("person_id").size().max() <= 3  # bounding keeps every row
    engines = {name: DuckDBEngine(policy, None, {"people": frame}) for name, frame in frames.items()}
    yield policy, engines, {name: len(frame) for name, frame in frames.items()}
    for engine in engines.values():
        engine.close()


def pairs(policy: Policy, engine: DuckDBEngine, seeds: range, reseeded: bool = False) -> list[tuple[int, int]]:
    """(y1, y2) per run: both queries in one session (one analyst, one ledger, one noise source).
    `reseeded` is the negative control: each query gets a source re-seeded with the run's seed."""
    out = []
    for seed in seeds:
        ledger = Ledger(None)
        session = Session(policy, engine, ledger, rng=SeededRandomSource(seed))
        y1 = session.execute(ALL).rows[0][0]
        if reseeded:
            session = Session(policy, engine, ledger, rng=SeededRandomSource(seed))
        y2 = session.execute(ALL_BUT_TARGET).rows[0][0]
        assert sum(e.cost.epsilon for e in ledger.entries()) == 2  # both charged: 2 epsilon for the pair
        out.append((y1, y2))
    return out


def events(n_d: int, n_d2: int) -> dict:
    return {
        "y1-y2>=3": lambda p: p[0] - p[1] >= 3, "y1-y2>=0": lambda p: p[0] - p[1] >= 0,
        "y1-y2<=0": lambda p: p[0] - p[1] <= 0, "y1-y2<=-3": lambda p: p[0] - p[1] <= -3,
        "y1>=n_D": lambda p: p[0] >= n_d, "y1<=n_D'": lambda p: p[0] <= n_d2,
    }


@pytest.mark.slow
def test_a02_differencing_pair_is_within_the_charged_two_epsilon(neighbours) -> None:
    policy, engines, n = neighbours
    out_d = pairs(policy, engines["D"], range(0, RUNS))
    out_d2 = pairs(policy, engines["D2"], range(50_000, 50_000 + RUNS))
    assert n["D"] - n["D2"] == 3
    assert not dp_violations(out_d, out_d2, events(n["D"], n["D2"]), 2.0, 0.0, ALPHA)
    # Not vacuous: the two answers really differ run to run (independent noise on each query).
    assert sum(y1 - y2 == 3 for y1, y2 in out_d) < RUNS / 2


@pytest.mark.slow
def test_a02_negative_control_noise_reused_across_the_two_queries_is_caught(neighbours) -> None:
    policy, engines, n = neighbours
    runs = 200  # 200/200 against 0/200 is flagged at e^2 from n = 128 on (alpha^(1/n) > e^2 / (1 + e^2))
    out_d = pairs(policy, engines["D"], range(0, runs), reseeded=True)
    out_d2 = pairs(policy, engines["D2"], range(50_000, 50_000 + runs), reseeded=True)
    assert {y1 - y2 for y1, y2 in out_d} == {3} and {y1 - y2 for y1, y2 in out_d2} == {0}
    found = dp_violations(out_d, out_d2, events(n["D"], n["D2"]), 2.0, 0.0, ALPHA)
    assert ("y1-y2>=3", "D>D'", runs, 0) in found, found

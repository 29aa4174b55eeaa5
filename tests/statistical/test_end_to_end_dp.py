"""The (epsilon, delta) inequality end to end, through the SQL path, on neighbouring databases.

Databases: D' = generate_people(3000) and D = D' plus one person with 3 rows (= max_rows, so
COUNT(*) moves by its full sensitivity 3). Query: `SELECT COUNT(*) FROM people` at epsilon = 1,
delta = 0: discrete Laplace noise of scale b = 3 on the exact counts n_D = n_D' + 3.

Hypothesis H0 (the DP claim): for every event S, P_D(S) <= e^eps P_D'(S) + delta, and the same
with D and D' swapped. We test two events fixed in advance from the two medians (the exact
counts, public in this test): S_hi = {output >= n_D} and S_lo = {output <= n_D'}.
With q = e^(-1/b), P(X >= k) = q^k / (1 + q) for k >= 0, so
  P_D(S_hi) = P(X >= 0) = 1 / (1 + q),   P_D'(S_hi) = P(X >= 3) = q^3 / (1 + q),
and their ratio is q^-3 = e^(3/b) = e^eps exactly (S_lo is the mirror image). These events make
the inequality an equality for a correct mechanism: the worst case, so the check is as sharp as
it can be, and any mechanism with less noise breaks it.

Check: with N runs per database (seeds 0..N-1 for D, 10000.. for D'), a one-sided Clopper-Pearson
lower bound L on P_D(S) and upper bound U on P_D'(S), each at confidence 1 - 2.5e-7, and we
require L <= e^eps U + delta. Under H0 with equality, the check fails only if L > P_D(S) or
U < P_D'(S): probability <= 5e-7 per event, <= 1e-6 for both events (family confidence 1 - 1e-6).

Negative control: the Laplace scale patched to half (b = 1.5). Then
P_D(S_hi) = 1 / (1 + q') ~ 0.661 and P_D'(S_hi) = q'^3 / (1 + q') ~ 0.0894 with q' = e^(-2/3), a
ratio of e^2, and the check must fail. `runs_needed_for_control` computes the smallest N at which
the check fails even for counts at the unlucky 1e-6 quantiles of both binomials: 1,150 (900 at
the 1e-4 quantiles). N = 1,200 is above it, so the control detects the violation with probability
> 1 - 2e-6 (and, seeds being fixed, deterministically here).

Runs go through the real session path (parse, analyse, plan, charge, engine SQL, release, post-
processing) via `Session.execute`. One DuckDB engine per database is shared by the runs, each run
a fresh Session with its own SeededRandomSource and in-memory ledger: dpsql.connect per run costs
~50 ms (4,000 runs would take minutes). Sharing the engine fixes the bounding seed of the cached
bounded relation, which changes nothing here (no person has more than max_rows rows) and is
covered by the DP argument for each fixed seed anyway (see dpsql/backend/engines/duckdb_engine.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from scipy import stats

import dpsql
from dpsql.accounting.ledger import Ledger
from dpsql.backend.engines.duckdb_engine import DuckDBEngine
from dpsql.catalog.loader import load_policy
from dpsql.catalog.policy import Policy
from dpsql.demo.people import generate_people, policy_text
from dpsql.mechanisms.laplace import LaplaceSpec
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.session import Session

pytestmark = pytest.mark.statistical

EPSILON = 1.0
DELTA = 0.0
SQL = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM people"
RUNS = 2_000
CONTROL_RUNS = 1_200
ALPHA = 2.5e-7  # per one-sided bound; 4 bounds -> family confidence 1 - 1e-6
SEEDS_D, SEEDS_D2 = 0, 10_000
NEW_ID = 10**7


def clopper_pearson_lower(hits: int, n: int, alpha: float = ALPHA) -> float:
    return 0.0 if hits == 0 else float(stats.beta.ppf(alpha, hits, n - hits + 1))


def clopper_pearson_upper(hits: int, n: int, alpha: float = ALPHA) -> float:
    return 1.0 if hits == n else float(stats.beta.ppf(1 - alpha, hits + 1, n - hits))


def violates(hits_d: int, hits_d2: int, n: int) -> bool:
    """True when the data show P_D(S) > e^eps P_D'(S) + delta at the stated confidence.

    `hits_d` counts S on the database on the left of the inequality, `hits_d2` on the right.
    """
    return clopper_pearson_lower(hits_d, n) > math.exp(EPSILON) * clopper_pearson_upper(hits_d2, n) + DELTA


def runs_needed_for_control(scale: float, quantile: float = 1e-6) -> int:
    """Smallest N (multiple of 50) at which the check flags S_hi under noise of `scale`, for
    counts at the unlucky `quantile` of each binomial (low for D, high for D')."""
    q = math.exp(-1 / scale)
    p_d, p_d2 = 1 / (1 + q), q**3 / (1 + q)
    for n in range(50, 100_000, 50):
        low = int(stats.binom.ppf(quantile, n, p_d))
        high = int(stats.binom.ppf(1 - quantile, n, p_d2))
        if violates(low, high, n):
            return n
    raise AssertionError("no run count detects the control")


@dataclass
class Neighbours:
    """D and D' (D2): their frames, exact counts, and one shared engine per database."""

    policy_path: Path
    policy: Policy
    frames: dict[str, pd.DataFrame]
    engines: dict[str, DuckDBEngine]

    def count(self, name: str) -> int:
        return len(self.frames[name])


EngineFactory = Callable[[Policy, pd.DataFrame], Any]


def duckdb_engine(policy: Policy, frame: pd.DataFrame) -> DuckDBEngine:
    return DuckDBEngine(policy, None, {"people": frame})


def build_neighbours(directory: Path, make_engine: EngineFactory = duckdb_engine) -> Neighbours:
    """D, D' and one engine per database (DuckDB here; tests/spark runs the same audit on Spark)."""
    path = directory / "policy.toml"
    path.write_text(policy_text(None), encoding="utf-8")  # each run has its own ledger: 10 >= 1 per run
    policy = load_policy(path)
    d2 = generate_people(3000, seed=5)
    person = pd.DataFrame({"person_id": [NEW_ID] * 3, "age": [30, 30, 30], "income": [1e4, 2e4, 3e4],
                           "dept": ["sales", "hr", "sales"], "region": ["north"] * 3})
    d = pd.concat([d2, person.astype(d2.dtypes.to_dict())], ignore_index=True)
    assert d2.groupby("person_id").size().max() <= 3  # bounding keeps every row
    frames = {"D": d, "D2": d2}
    engines = {name: make_engine(policy, frame) for name, frame in frames.items()}
    return Neighbours(path, policy, frames, engines)


@pytest.fixture(scope="module")
def databases(tmp_path_factory) -> Iterator[Neighbours]:
    neighbours = build_neighbours(tmp_path_factory.mktemp("e2e-dp"))
    yield neighbours
    for engine in neighbours.engines.values():
        engine.close()


def outputs(db: Neighbours, name: str, seeds: range) -> list[int]:
    values = []
    for seed in seeds:
        session = Session(db.policy, db.engines[name], Ledger(None), rng=SeededRandomSource(seed))
        result = session.execute(SQL)
        assert result.cost.epsilon == Fraction(EPSILON) and result.noise_info[0]["scale"] > 0
        values.append(result.rows[0][0])
    return values


Outputs = Callable[[Neighbours, str, range], list[int]]


def event_counts(db: Neighbours, runs: int, draw: Outputs = outputs) -> dict[str, tuple[int, int]]:
    """{event: (hits on D, hits on D')} for S_hi = {out >= n_D} and S_lo = {out <= n_D'}.

    `draw` gives the outputs of runs with the given seeds (default: full Session.execute runs).
    """
    out_d = draw(db, "D", range(SEEDS_D, SEEDS_D + runs))
    out_d2 = draw(db, "D2", range(SEEDS_D2, SEEDS_D2 + runs))
    n_d, n_d2 = db.count("D"), db.count("D2")
    return {
        "hi": (sum(v >= n_d for v in out_d), sum(v >= n_d for v in out_d2)),
        "lo": (sum(v <= n_d2 for v in out_d), sum(v <= n_d2 for v in out_d2)),
    }


def test_count_satisfies_the_dp_inequality_on_neighbouring_databases(databases: Neighbours) -> None:
    assert databases.count("D") - databases.count("D2") == 3
    assert_dp_inequality_holds(event_counts(databases, RUNS))


def assert_dp_inequality_holds(counts: dict[str, tuple[int, int]]) -> None:
    """The check on RUNS runs per database (shared with the Spark suite, tests/spark)."""
    hi_d, hi_d2 = counts["hi"]
    lo_d, lo_d2 = counts["lo"]
    assert not violates(hi_d, hi_d2, RUNS), counts  # P_D(S_hi) <= e^eps P_D'(S_hi) + delta
    assert not violates(lo_d2, lo_d, RUNS), counts  # P_D'(S_lo) <= e^eps P_D(S_lo) + delta
    # Sanity of the sample itself: the event rates match the exact discrete Laplace values
    # (two-sided binomial tests at 1e-6), so the check above ran on the intended distribution.
    q = math.exp(-1 / 3)
    big, small = 1 / (1 + q), q**3 / (1 + q)
    for hits, p in ((hi_d, big), (hi_d2, small), (lo_d2, big), (lo_d, small)):
        assert stats.binomtest(hits, RUNS, p).pvalue > 1e-6, (hits, p, counts)


def test_shared_engine_runs_equal_dpsql_connect_runs(databases: Neighbours) -> None:
    # The shortcut above is the connect path: dpsql.connect(random_seed=s) gives the same outputs.
    for name, first in (("D", SEEDS_D), ("D2", SEEDS_D2)):
        seeds = range(first, first + 5)
        via_connect = []
        for seed in seeds:
            with dpsql.connect(policy=databases.policy_path, tables={"people": databases.frames[name]}, random_seed=seed) as con:
                via_connect.append(con.execute(SQL).fetchone()[0])
        assert via_connect == outputs(databases, name, seeds)


def test_control_run_count_suffices() -> None:
    needed = runs_needed_for_control(scale=1.5)
    assert needed <= CONTROL_RUNS, needed
    # And the correct scale is not flagged even at the unlucky quantiles, at any run count: the
    # inequality is an equality there, so detection would be a false alarm.
    q = math.exp(-1 / 3)
    for n in (CONTROL_RUNS, RUNS):
        low = int(stats.binom.ppf(1e-6, n, q**3 / (1 + q)))
        high = int(stats.binom.ppf(1 - 1e-6, n, 1 / (1 + q)))
        assert not violates(high, low, n)


def test_negative_control_half_the_laplace_scale_is_detected(databases: Neighbours, monkeypatch) -> None:
    true_scale = LaplaceSpec.scale
    monkeypatch.setattr(LaplaceSpec, "scale", property(lambda spec: true_scale.fget(spec) / 2))
    assert_violation_detected(event_counts(databases, CONTROL_RUNS))


def assert_violation_detected(counts: dict[str, tuple[int, int]]) -> None:
    """The negative control's check on CONTROL_RUNS runs per database (shared with tests/spark)."""
    hi_d, hi_d2 = counts["hi"]
    lo_d, lo_d2 = counts["lo"]
    assert violates(hi_d, hi_d2, CONTROL_RUNS), counts
    assert violates(lo_d2, lo_d, CONTROL_RUNS), counts

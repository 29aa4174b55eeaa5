"""Utility of the Median Mechanism layer on a correlated workload (the issue's utility target).

Claim: at the same total ε and the same 95% accuracy target A, the layer answers at least 10x more
counting queries than per-query Laplace under basic composition. The Laplace count k_L is exact:
the largest k whose discrete Laplace noise of scale k·Δ/ε has a 95% half-width <= A. The layer
must answer >= 10·k_L queries of the workload (without halting) and keep its 95% promise on them:
at least 1 − β − 2% = 93% within A (docs/mechanisms.md, "The Median Mechanism layer").

Workload: drill-downs (a 2-D range on a column pair, then an equality on a third column, then a
range on the fourth) and overlapping 2-D ranges on a few column pairs, over 4 columns, fixed seeds.

* The bundled demo: `generate_people(100_000)` (max_rows = 3, so Δ = 3) through a real session
  (policy, reservation, histogram of the bounded relation); X = dept x region x age x income bins
  (63,492 cells); zCDP, ε = 3, δ = 1e-6, A = 3,000, calibrated for 10,000 expected queries. The
  numpy masks of the workload are checked against the SQL masks of the same queries.
* A latent-class dataset of 10^6 rows, one row per person (Δ = 1), 4 columns, 15,147 cells;
  zCDP, ε = 0.5, δ = 1e-6, A = 10,000 (1% of n), margin-only calibration.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpsql
from bench.workloads import conj_mask, workload
from dpsql.demo.people import DEPTS, REGIONS, generate_people
from dpsql.mechanisms.median_mechanism.core import LayerCore, SecretHistogram
from dpsql.mechanisms.median_mechanism.domain import QueryShape
from dpsql.mechanisms.median_mechanism.strategy import plan_layer
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.mechanisms.sampling import discrete_laplace_ci
from dpsql.planner.measurable import measurable
from tests.unit.mechanisms.median_mechanism.support import tiny_domain, write_policy

pytestmark = pytest.mark.statistical

INCOME_EDGES = [0, 10000, 20000, 30000, 40000, 50000, 75000, 100000, 150000, 250000, 500001]


def laplace_queries(epsilon: Fraction, accuracy: int, sensitivity: int) -> int:
    """k_L: the most queries per-query Laplace (basic composition) answers within A at 95%."""
    k = 0
    while discrete_laplace_ci(Fraction(sensitivity * (k + 1)) / epsilon) <= accuracy:
        k += 1
    return k


def run(core: LayerCore, sizes: list[int], queries: list, counts: np.ndarray, accuracy: int) -> dict[str, int]:
    tally = {"answered": 0, "within": 0, "easy": 0, "hard": 0, "repeat": 0, "measured": 0}
    for sets in queries:
        shape = QueryShape(conj_mask(sizes, sets))
        release = core.answer(shape)
        if release is None:
            break
        tally["answered"] += 1
        tally[release.kind] += 1
        tally["within"] += abs(int(release.values[0]) - int(counts[shape.mask].sum())) <= accuracy
    return tally


def check(tally: dict[str, int], k_laplace: int, cap: int) -> None:
    assert tally["answered"] >= 10 * k_laplace, tally
    assert tally["within"] >= 0.93 * tally["answered"], tally
    assert tally["hard"] <= cap and tally["repeat"] < tally["easy"] + tally["measured"], tally


def sql_for(sets: list[list[int] | None]) -> str:
    parts = []
    if sets[0] is not None:
        parts.append("dept IN (" + ", ".join(f"'{DEPTS[c]}'" for c in sets[0]) + ")")
    if sets[1] is not None:
        parts.append("region IN (" + ", ".join(f"'{REGIONS[c]}'" for c in sets[1]) + ")")
    if sets[2] is not None:
        parts.append(f"age BETWEEN {sets[2][0] + 18} AND {sets[2][-1] + 18}")
    if sets[3] is not None:
        parts.append(f"income >= {INCOME_EDGES[sets[3][0]]} AND income < {INCOME_EDGES[sets[3][-1] + 1]}")
    return "SELECT COUNT(*) FROM people" + (" WHERE " + " AND ".join(parts) if parts else "")


def test_ten_times_laplace_on_the_bundled_demo(tmp_path: Path) -> None:
    epsilon, accuracy = Fraction(3), 3000
    policy = write_policy(tmp_path, columns=["dept", "region", "age", "income"], bins={"income": INCOME_EDGES},
                          epsilon=3.0, accuracy=accuracy, mode="zcdp", delta=1e-6, expected_queries=10000, public_seed=5)
    frame: pd.DataFrame = generate_people(100_000)
    con = dpsql.connect(policy=policy, tables={"people": frame}, random_seed=17)
    try:
        cur = con.cursor()
        cur.execute("SELECT COUNT(*) FROM people")  # reserves the layer and builds its histogram
        assert cur.noise_info[0]["mechanism"] == "median_mechanism"
        layer = con.session.median_mechanism.layer("people")
        sizes = [12, 5, 73, 10]
        k_laplace = laplace_queries(epsilon, accuracy, sensitivity=3)
        queries = workload(sizes, 10 * k_laplace + 200, seed=21, pairs=[(0, 2), (1, 2), (2, 3), (0, 3)])
        for sets in queries[:40]:  # the numpy masks are the SQL queries' masks
            compiled = con.session.compile(sql_for(sets)).compiled
            shape = layer.shape(measurable(compiled.plan.query, layer.config))
            assert np.array_equal(shape.mask, conj_mask(sizes, sets)), sql_for(sets)
        counts = layer.core._data._counts  # the bounded data's histogram, for scoring only
        check(run(layer.core, sizes, queries, counts, accuracy), k_laplace, layer.calibration.cap)
    finally:
        con.close()


def latent_class(sizes: list[int], n: int, seed: int) -> np.ndarray:
    """A histogram (NULL cells empty) from a 10-class mixture with skewed Dirichlet(0.3) marginals."""
    rng = np.random.default_rng(seed)
    classes = rng.choice(10, size=n, p=rng.dirichlet(np.ones(10)))
    x = np.zeros(n, dtype=np.int64)
    for size in sizes:
        cumulative = np.cumsum(rng.dirichlet(np.full(size, 0.3), size=10), axis=1)[classes]
        codes = np.minimum((rng.random(n)[:, None] > cumulative).sum(axis=1), size - 1)
        x = x * (size + 1) + codes
    return np.bincount(x, minlength=int(np.prod([s + 1 for s in sizes]))).astype(np.int64)


def test_ten_times_laplace_on_a_generated_dataset() -> None:
    epsilon, accuracy, sizes = Fraction(1, 2), 10_000, [16, 10, 8, 8]
    counts = latent_class(sizes, 10**6, seed=7)
    domain = tiny_domain(*sizes)
    plan = plan_layer(mode="zcdp", epsilon=epsilon, delta=Fraction(1, 10**6), accuracy=Fraction(accuracy), sensitivity=1,
                      sizes=domain.sizes)
    cal = plan.calibration
    core = LayerCore(plan, domain, SecretHistogram(counts), SeededRandomSource(3))
    k_laplace = laplace_queries(epsilon, accuracy, sensitivity=1)
    queries = workload(sizes, 10 * k_laplace + 200, seed=3, pairs=[(0, 1), (1, 2), (0, 3), (2, 3)])
    check(run(core, sizes, queries, counts, accuracy), k_laplace, cal.cap)

"""VARIANCE / STDDEV (mechanisms/variance.py): sensitivity on neighbours through the engine SQL,
95% interval coverage and error, and an (epsilon, 0) audit of the release, each with a negative
control.

Neighbours: D' = generate_people(300); D = D' plus one person with max_rows = 3 rows at the far
end of the bounds (age 90 and income 500,000: |x - mid| is the largest possible). The engine SQL
dpsql generates for the plan runs on DuckDB over each table (the bounded relation is the table
itself: nobody has more than 3 rows), giving the exact raw sums.

1. Sensitivity: each raw sum moves by at most its release's sensitivity (in grid units) between
   D and D'. Control: the same sum of squares without centring (center 0) moves by 3 * 90^2 =
   24,300 > 3,888 = 3 * 36^2, the centred sensitivity: a planner that priced the centred sum
   but summed uncentred squares is caught.
2. Coverage and error: N = 2,000 releases (seeded) of VAR_POP, VAR_SAMP, STDDEV_POP and
   STDDEV_SAMP of age on D at epsilon 1; the interval `bounds` must hold the exact statistic
   of the clamped values in at least B = the 1e-6 quantile of Binomial(N, 0.95) runs (a correct
   95% interval fails this with probability <= 1e-6), and the estimate lies inside its own
   interval, so |estimate - exact| <= the reported half-width on those runs. Control: the same
   interval built from each release's 50% half-width (a mis-stated level) covers far less
   often and fails the check.
3. Audit: events S = {estimate >= t}, t the midpoint of the exact statistics of D and D', fixed
   in advance. For (1, 0)-DP, P_D(S) <= e P_D'(S) and the reverse. With N runs per side,
   Clopper-Pearson bounds at 1 - 2.5e-7 each: the check fails for a correct mechanism with
   probability <= 1e-6. Control: all three noise scales divided by 50; the outputs separate and
   the check fails.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from fractions import Fraction

import duckdb
import pandas as pd
import pytest
from scipy import stats
from sqlglot import exp

from dpsql.analysis.context import AnalysisContext
from dpsql.backend.engines.duckdb_engine import render
from dpsql.backend.sql.plan_sql import engine_select, fixed_point_selects
from dpsql.catalog.loader import policy_from_dict
from dpsql.demo.people import generate_people, policy_text
from dpsql.execution.compiled import CompiledQuery, compile_statement
from dpsql.ir.plan import Plan
from dpsql.mechanisms import laplace
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.mechanisms.variance import Variance, VarianceSpec, bounds, estimate, widths

pytestmark = pytest.mark.statistical

RUNS = 2_000
ALPHA = 2.5e-7
KINDS = ("VAR_POP", "VAR_SAMP", "STDDEV_POP", "STDDEV_SAMP")


def neighbours() -> tuple[pd.DataFrame, pd.DataFrame]:
    without = generate_people(300)
    person = pd.DataFrame({"person_id": [10**7] * 3, "age": [90] * 3, "income": [500_000.0] * 3,
                           "dept": ["security"] * 3, "region": ["north"] * 3})
    return pd.concat([without, person], ignore_index=True), without


def compiled(sql: str) -> CompiledQuery:
    policy = policy_from_dict(tomllib.loads(policy_text(None)))
    _, query = compile_statement(sql, None, AnalysisContext(policy, policy.budget.default_query))
    assert isinstance(query, CompiledQuery)
    return query


def raws(plan: Plan, frame: pd.DataFrame) -> list[int]:
    con = duckdb.connect()
    con.register("__people", frame)
    # the bounded relation carries the prepared fixed-point columns that SUM/AVG read
    view = exp.select("*", *fixed_point_selects(plan.query.table)).from_("__people")
    con.execute(f"CREATE VIEW __dpsql_bounded_people AS {render(view)}")
    row = con.execute(render(engine_select(plan, "__dpsql_bounded_people"))).fetchone()
    assert row is not None
    return [int(row[i]) for i in range(len(plan.releases))]


def exact(spec: VarianceSpec, values: pd.Series) -> float:
    clamped = values.clip(lower=18, upper=90).astype(float)
    var = float(clamped.var(ddof=1 if spec.sample else 0))
    return math.sqrt(var) if spec.root else var


SQL = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) VAR_POP(age), STDDEV(income) FROM people"


def test_raw_sums_move_by_at_most_their_sensitivity() -> None:
    plan = compiled(SQL).plan
    with_person, without = neighbours()
    for release, a, b in zip(plan.releases, raws(plan, with_person), raws(plan, without)):
        assert abs(a - b) <= release.spec.sensitivity, (release.raw.kind, a - b, release.spec.sensitivity)


def test_negative_control_uncentred_squares_exceed_the_centred_sensitivity() -> None:
    plan = compiled(SQL).plan
    squares = next(i for i, r in enumerate(plan.releases) if r.raw.kind == "sumsq_grid" and r.raw.column.name == "age")  # type: ignore[union-attr]
    broken_raw = dataclasses.replace(plan.releases[squares].raw, center_units=0)
    broken = dataclasses.replace(plan, releases=(dataclasses.replace(plan.releases[squares], raw=broken_raw),))
    with_person, without = neighbours()
    moved = abs(raws(broken, with_person)[0] - raws(broken, without)[0])
    assert moved > plan.releases[squares].spec.sensitivity  # the sensitivity test above would catch it


def spec_of(kind: str) -> VarianceSpec:
    plan = compiled(f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) {kind}(age) FROM people").plan
    spec = plan.estimates[0].variance
    assert spec is not None
    return spec


def noisy(spec: VarianceSpec, raw: list[int], rng: SeededRandomSource) -> tuple[float, float, float]:
    squares, total, count = (laplace.release(s, v, rng) for s, v in zip((spec.squares, spec.total, spec.count), raw))
    return float(count), float(Fraction(total) * spec.grid), float(Fraction(squares) * spec.square_grid)


def coverage(kind: str, level: float | None = None) -> tuple[int, int]:
    """(covered runs, runs whose error is within the reported half-width)."""
    spec = spec_of(kind)
    with_person, _ = neighbours()
    plan = compiled(f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) {kind}(age) FROM people").plan
    raw = raws(plan, with_person)  # squares, sum, count (the estimate's release order)
    truth = exact(spec, with_person.age)
    half = widths(spec)
    if level is not None:  # the negative control: each release's half-width at another level
        half = (float(laplace.half_width(spec.count, level)), float(laplace.half_width(spec.total, level) * spec.grid),
                float(laplace.half_width(spec.squares, level) * spec.square_grid))
    rng = SeededRandomSource(11)
    covered = within = 0
    for _ in range(RUNS):
        count, total, squares = noisy(spec, raw, rng)
        value = estimate(spec, count, total, squares)
        low, high = bounds(spec, count, total, squares, half)
        covered += low <= truth <= high
        within += abs(value - truth) <= max(high - value, value - low)
    return covered, within


def required() -> int:
    return int(stats.binom.ppf(1e-6, RUNS, 0.95))


@pytest.mark.parametrize("kind", KINDS)
def test_interval_covers_and_bounds_the_error(kind: str) -> None:
    covered, within = coverage(kind)
    assert covered >= required(), (kind, covered)
    assert within >= covered


def test_negative_control_an_interval_at_the_half_level_undercovers() -> None:
    covered, _ = coverage("VAR_POP", level=0.5)
    assert covered < required()


def lower(hits: int, n: int) -> float:
    return 0.0 if hits == 0 else float(stats.beta.ppf(ALPHA, hits, n - hits + 1))


def upper(hits: int, n: int) -> float:
    return 1.0 if hits == n else float(stats.beta.ppf(1 - ALPHA, hits + 1, n - hits))


def violated(spec: VarianceSpec, scale_divisor: int = 1) -> bool:
    """Whether the audit finds P_D(S) > e^eps P_D'(S) (or the reverse) at the stated confidence."""
    if scale_divisor != 1:
        def shrink(s: laplace.LaplaceSpec) -> laplace.LaplaceSpec:
            return laplace.LaplaceSpec(s.sensitivity / scale_divisor, s.epsilon)
        spec = dataclasses.replace(spec, count=shrink(spec.count), total=shrink(spec.total), squares=shrink(spec.squares))
    eps = float(Variance().cost(spec_of("VAR_POP")).epsilon)
    plan = compiled("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) VAR_POP(age) FROM people").plan
    with_person, without = neighbours()
    raw_d, raw_d2 = raws(plan, with_person), raws(plan, without)
    mech = Variance()
    t = (exact(spec, with_person.age) + exact(spec, without.age)) / 2
    rng_d, rng_d2 = SeededRandomSource(1), SeededRandomSource(2)
    hits_d = sum(mech.release(spec, (raw_d[2], raw_d[1], raw_d[0]), rng_d) >= t for _ in range(RUNS))
    hits_d2 = sum(mech.release(spec, (raw_d2[2], raw_d2[1], raw_d2[0]), rng_d2) >= t for _ in range(RUNS))
    bound = math.exp(eps)
    return (lower(hits_d, RUNS) > bound * upper(hits_d2, RUNS)
            or lower(RUNS - hits_d2, RUNS) > bound * upper(RUNS - hits_d, RUNS)
            or lower(hits_d2, RUNS) > bound * upper(hits_d, RUNS)
            or lower(RUNS - hits_d, RUNS) > bound * upper(RUNS - hits_d2, RUNS))


def test_epsilon_audit_on_neighbours() -> None:
    spec = spec_of("VAR_POP")
    assert Variance().cost(spec).epsilon == 1  # the three releases compose to the query's epsilon
    assert not violated(spec)


def test_negative_control_fifty_times_less_noise_is_caught() -> None:
    assert violated(spec_of("VAR_POP"), scale_divisor=50)

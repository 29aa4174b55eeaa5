"""Choose a mechanism per aggregate, derive sensitivities from the policy, split the budget.

Sensitivities come from the policy only (bounds, max_rows, max_groups), never from data:
- COUNT(*), COUNT(col), AVG's count: max_rows (a person keeps at most max_rows rows in all).
- SUM(col): max_rows * max(|lower|, |upper|) on the column's grid. An aggregate over an
  expression (SUM(1), AVG(income / 12)) uses the bounds the analysis derived for it from the
  policy by interval arithmetic, and the engine clamps each row's value into them.
- AVG(col): a centered sum, max_rows * max(|lower - mid|, |upper - mid|), plus a count.
- COUNT(DISTINCT unit): 1 without GROUP BY; max_rows with it (a person is in at most
  max_rows groups, since they keep at most max_rows rows).
The query's epsilon is split equally over its Laplace releases, its robust aggregates (MEDIAN,
QUANTILE, IQR, MODE: planner/robust_aggregates.py) and partition selection (when a key has no public
domain); delta is split equally over the parts that spend it (partition selection and every
robust aggregate but the exponential-mechanism quantile).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import replace
from fractions import Fraction
from typing import cast

from dpsql.accounting.cost import PrivacyCost
from dpsql.errors import InvalidOptionError
from dpsql.ir.plan import Bounding, Estimate, Plan, RawAggregate, Release, square_units
from dpsql.ir.query import VARIANCE_KINDS, AggregateCall, BoundQuery
from dpsql.mechanisms import registry
from dpsql.mechanisms.gaussian import GaussianSpec
from dpsql.mechanisms.laplace import LaplaceSpec
from dpsql.mechanisms.partition import PartitionSelectionSpec
from dpsql.mechanisms.variance import VarianceSpec
from dpsql.planner import accuracy
from dpsql.planner.robust_aggregates import RobustPlanner, needs_delta, person_groups


def plan_query(query: BoundQuery) -> Plan:
    """The plan for a bound query, with its cost computed before any data is read."""
    table = query.table
    assert table.privacy_unit is not None
    bounding = Bounding(unit=table.privacy_unit, max_rows=table.max_rows, max_groups=table.max_groups)
    raws: list[tuple[RawAggregate, Fraction]] = []
    robust_calls = [i for i, call in enumerate(query.aggregates) if call.robust]
    estimates = [None if call.robust else _estimate(call, query, bounding, raws) for call in query.aggregates]
    needs_selection = any(not key.public for key in query.keys)
    shares = len(raws) + len(robust_calls) + (1 if needs_selection else 0)
    if shares == 0:  # GROUP BY public keys only, no aggregate: the keys are public, nothing is released
        return Plan(query, bounding, (), tuple(estimates), None, PrivacyCost.zero(), ("only public keys are released: no cost",))  # type: ignore[arg-type]
    # STDDEV/VARIANCE estimates and intervals are derived for Laplace releases: such a query keeps
    # Laplace noise even when Gaussian is asked for (the plan says so in a note).
    variance = any(e is not None and e.kind == "variance" for e in estimates)
    gaussian = query.noise == "gaussian" and bool(raws) and not variance
    if gaussian and query.budget.delta <= 0:
        raise InvalidOptionError("noise = 'gaussian' needs delta > 0: the Gaussian mechanism is (epsilon, delta)-DP",
                                 code="DP143", sql=query.sql, hint="set delta in OPTIONS (e.g. delta = 1e-8), or use noise = 'laplace'")
    delta_users = sum(needs_delta(query.aggregates[i], query) for i in robust_calls) + (1 if needs_selection else 0) \
        + (len(raws) if gaussian else 0)
    share = query.budget.epsilon / shares
    epsilons = [share] * len(raws)
    if query.ci95 is not None:
        epsilons = _accuracy_first(query, raws, delta_users)
        share = max(epsilons)  # partition selection, if any, gets as much as the largest release
        query = replace(query, budget=PrivacyCost(sum(epsilons, Fraction(0)) + (share if needs_selection else 0), query.budget.delta),
                        explicit_budget=True)
    if gaussian:
        release_delta = query.budget.delta / delta_users
        releases = [Release(raw=raw, spec=GaussianSpec(sensitivity=sens, epsilon=eps, delta=release_delta))
                    for (raw, sens), eps in zip(raws, epsilons)]
    else:
        releases = [Release(raw=raw, spec=LaplaceSpec(sensitivity=sens, epsilon=eps)) for (raw, sens), eps in zip(raws, epsilons)]
    estimates = [_variance_spec(e, query.aggregates[i], releases) if e is not None and e.kind == "variance" else e
                 for i, e in enumerate(estimates)]
    if delta_users and query.budget.delta <= 0:
        raise InvalidOptionError(
            "GROUP BY a column without a public domain needs delta > 0 for partition selection" if needs_selection else
            f"{query.aggregates[robust_calls[0]].label} needs delta > 0: its stability test passes an unstable answer with probability delta",
            code="DP122", sql=query.sql,
            hint="set delta in OPTIONS (e.g. delta = 1e-8)" + (", or declare the column's values in the policy" if needs_selection else
                                                               ", or use quantile_mechanism = 'exponential' for a quantile"),
        )
    delta_share = query.budget.delta / delta_users if delta_users else Fraction(0)
    planner = RobustPlanner(query, bounding, releases, person_groups(query, bounding))
    robust = []
    for position, index in enumerate(robust_calls):
        call = query.aggregates[index]
        robust.append(planner.plan(index, call, share, delta_share if needs_delta(call, query) else Fraction(0)))
        estimates[index] = Estimate("robust", (), call.column, robust=position)
    selection = None
    if needs_selection:
        selection = PartitionSelectionSpec(max_groups=bounding.max_groups, epsilon=share, delta=delta_share)
    specs: list[object] = [r.spec for r in releases] + [r.spec for r in robust] + ([selection] if selection is not None else [])
    cost = sum((registry.cost(spec) for spec in specs), PrivacyCost.zero())
    return Plan(query, bounding, tuple(releases), tuple(estimates), selection, cost,  # type: ignore[arg-type]
                _notes(query, bounding) + tuple(planner.notes), planner.finish(), tuple(robust))


def _accuracy_first(query: BoundQuery, raws: list[tuple[RawAggregate, Fraction]], delta_users: int) -> list[Fraction]:
    """Each release's smallest epsilon giving it a 95% half-width <= ci95 (public facts only:
    sensitivities and units from the policy; the binder refused what has none). The query's
    epsilon is their sum: the smallest total that gives every cell the interval."""
    assert query.ci95 is not None
    delta_share = query.budget.delta / delta_users if delta_users else Fraction(0)
    needed: list[Fraction] = []
    for raw, sens in raws:
        unit = raw.grid if raw.kind == "sum_grid" else Fraction(1)
        epsilon = accuracy.epsilon_for(query.noise, sens, query.ci95 / unit, delta_share)
        if epsilon is None:
            raise InvalidOptionError(f"no epsilon gives a 95% half-width of {float(query.ci95):g}: it is below what "
                                     "integer noise on this aggregate's grid can reach", code="DP144", sql=query.sql,
                                     hint="ask for a wider ci95, or name an epsilon instead")
        needed.append(max(epsilon, Fraction(1, 10**6)))  # no noise needed (sensitivity 0): a token share
    return needed


def _estimate(call: AggregateCall, query: BoundQuery, bounding: Bounding, raws: list[tuple[RawAggregate, Fraction]]) -> Estimate:
    rows = Fraction(bounding.max_rows)
    if call.kind == "count_rows":
        return Estimate("count", (_add(raws, RawAggregate("count_rows"), rows),))
    if call.kind == "count":
        return Estimate("count", (_add(raws, RawAggregate("count_values", call.column, expr=call.expr), rows),), call.column)
    if call.kind == "count_units":
        sens = Fraction(1) if not query.keys else rows
        return Estimate("count", (_add(raws, RawAggregate("count_units", call.column), sens),), call.column)
    column = call.column
    assert column is not None and column.lower is not None and column.upper is not None
    grid = column.grid()
    lower, upper = _units(column.lower, grid, math.ceil), _units(column.upper, grid, math.floor)
    if call.kind == "sum":
        raw = RawAggregate("sum_grid", column, grid, lower, upper, 0, call.expr)
        return Estimate("sum", (_add(raws, raw, rows * max(abs(lower), abs(upper))),), column)
    center = (lower + upper) // 2
    raw = RawAggregate("sum_grid", column, grid, lower, upper, center, call.expr)
    if call.kind in VARIANCE_KINDS:
        # Centred on the bounds' midpoint: the sum's and the squares' sensitivities are those of
        # values in [-R/2, R/2] (mechanisms/variance.py); the VarianceSpec is set once epsilon is split.
        squares = RawAggregate("sumsq_grid", column, grid, lower, upper, center, call.expr)
        deviation = max(abs(lower - center), abs(upper - center))
        releases = (_add(raws, squares, rows * square_units(squares)), _add(raws, raw, rows * deviation),
                    _add(raws, RawAggregate("count_finite", column, expr=call.expr), rows))
        return Estimate("variance", releases, column, center * grid)
    total = _add(raws, raw, rows * max(abs(lower - center), abs(upper - center)))
    count = _add(raws, RawAggregate("count_finite", column, expr=call.expr), rows)
    return Estimate("avg", (total, count), column, center * grid)


def _variance_spec(estimate: Estimate, call: AggregateCall, releases: list[Release]) -> Estimate:
    squares, total, count = (releases[r] for r in estimate.releases)
    # plan_query keeps Laplace noise for a query with STDDEV/VARIANCE (their intervals assume it)
    assert all(registry.mechanism_for(r.spec).name == "laplace" for r in (count, total, squares))
    raw = total.raw
    spec = VarianceSpec(count=cast(LaplaceSpec, count.spec), total=cast(LaplaceSpec, total.spec), squares=cast(LaplaceSpec, squares.spec), grid=raw.grid, square_grid=squares.unit,
                        half_range=Fraction(raw.upper_units - raw.lower_units) * raw.grid / 2,
                        sample=call.kind.endswith("_samp"), root=call.kind.startswith("stddev"))
    return dataclasses.replace(estimate, variance=spec)


def _units(bound: Fraction, grid: Fraction, rounding: object) -> int:
    # Clamp bounds on the grid lie inside the declared bounds, so sensitivities stay as declared.
    return int(rounding(bound / grid))  # type: ignore[operator]


def _add(raws: list[tuple[RawAggregate, Fraction]], raw: RawAggregate, sensitivity: Fraction) -> int:
    for index, (existing, _) in enumerate(raws):
        if existing == raw:
            return index
    raws.append((raw, sensitivity))
    return len(raws) - 1


def _notes(query: BoundQuery, bounding: Bounding) -> tuple[str, ...]:
    notes = [f"each {bounding.unit} keeps at most {bounding.max_rows} row(s), chosen at random (secret seed)"]
    for key in query.keys:
        if key.public:
            notes.append(f"GROUP BY {key.column.name}: all {len(key.column.values or ())} public keys released, empty ones too")
        else:
            notes.append(f"GROUP BY {key.column.name}: keys chosen by partition selection "
                         f"(each {bounding.unit} counts in at most {bounding.max_groups} key(s))")
    if any(call.robust and needs_delta(call, query) for call in query.aggregates):
        notes.append("MEDIAN/QUANTILE, IQR and MODE may answer NULL (⊥: not stable enough); their budget is charged either way")
    if query.noise == "gaussian" and any(call.kind in VARIANCE_KINDS for call in query.aggregates):
        notes.append("STDDEV/VARIANCE are derived from Laplace releases: this query uses Laplace noise, not Gaussian")
    return tuple(notes)


"""Split a query's budget over its aggregates and build its plan, asking each aggregate's module.

Each aggregate (dpsql/aggregates/, found in its registry) says what it needs: the Laplace releases
it reads, with sensitivities from the policy only (bounds, max_rows, max_groups), never from data,
and whether it takes a share of epsilon of its own (MEDIAN, QUANTILE, IQR, MODE) and spends delta.
The query's epsilon is split equally over its distinct Laplace releases (one release read by two
aggregates is one share), the aggregates with a share of their own, and partition selection (when
a key has no public domain); delta is split equally over the parts that spend it (partition
selection, the aggregates that say so, and every release under Gaussian noise). With OPTIONS
(ci95 = h) each release gets the smallest epsilon giving it that half-width instead. Then each
aggregate plans its estimate with its share (aggregates/base.py, phase 2).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from dpsql.accounting.cost import PrivacyCost
from dpsql.aggregates import registry as aggregates
from dpsql.aggregates.base import Aggregate, Needs, Share
from dpsql.aggregates.planning import PlanBuilder, person_groups
from dpsql.errors import InvalidOptionError
from dpsql.ir.plan import Bounding, Plan, RawAggregate, Release
from dpsql.ir.query import AggregateCall, BoundQuery
from dpsql.mechanisms import registry
from dpsql.mechanisms.partition import PartitionSelectionSpec
from dpsql.planner import accuracy


def plan_query(query: BoundQuery) -> Plan:
    """The plan for a bound query, with its cost computed before any data is read."""
    table = query.table
    assert table.privacy_unit is not None
    bounding = Bounding(unit=table.privacy_unit, max_rows=table.max_rows, max_groups=table.max_groups)
    families = [aggregates.for_call(call) for call in query.aggregates]
    needs = [needs_of(family, call, query, bounding) for family, call in zip(families, query.aggregates)]
    raws: list[tuple[RawAggregate, Fraction]] = []
    for need in needs:
        for raw, sensitivity in need.releases:
            if all(existing != raw for existing, _ in raws):  # one release however many aggregates read it
                raws.append((raw, sensitivity))
    own_shares = [i for i, need in enumerate(needs) if need.share]
    needs_selection = any(not key.public for key in query.keys)
    shares = len(raws) + len(own_shares) + (1 if needs_selection else 0)
    if shares == 0:  # GROUP BY public keys only, no aggregate: the keys are public, nothing is released
        return Plan(query, bounding, (), (), None, PrivacyCost.zero(), ("only public keys are released: no cost",))
    # Some estimates and intervals (STDDEV/VARIANCE) are derived for Laplace releases: such a query
    # keeps Laplace noise even when Gaussian is asked for (its aggregate adds a note).
    gaussian = registry.spends_delta(query.noise) and bool(raws) and not any(need.laplace_only for need in needs)
    if gaussian and query.budget.delta <= 0:
        raise InvalidOptionError("noise = 'gaussian' needs delta > 0: the Gaussian mechanism is (epsilon, delta)-DP",
                                 code="DP143", sql=query.sql, hint="set delta in OPTIONS (e.g. delta = 1e-8), or use noise = 'laplace'")
    delta_users = sum(need.delta for need in needs) + (1 if needs_selection else 0) + (len(raws) if gaussian else 0)
    share = query.budget.epsilon / shares
    epsilons = [share] * len(raws)
    if query.ci95 is not None:
        epsilons = _accuracy_first(query, raws, delta_users)
        share = max(epsilons)  # partition selection, if any, gets as much as the largest release
        query = replace(query, budget=PrivacyCost(sum(epsilons, Fraction(0)) + (share if needs_selection else 0), query.budget.delta),
                        explicit_budget=True)
    noise = query.noise if gaussian else registry.DEFAULT_NOISE
    release_delta = query.budget.delta / delta_users if gaussian else Fraction(0)
    releases = [Release(raw=raw, spec=registry.noise_spec(noise, sens, eps, release_delta)) for (raw, sens), eps in zip(raws, epsilons)]
    if delta_users and query.budget.delta <= 0:
        raise InvalidOptionError(
            "GROUP BY a column without a public domain needs delta > 0 for partition selection" if needs_selection else
            f"{query.aggregates[own_shares[0]].label} needs delta > 0: its stability test passes an unstable answer with probability delta",
            code="DP122", sql=query.sql,
            hint="set delta in OPTIONS (e.g. delta = 1e-8)" + (", or declare the column's values in the policy" if needs_selection else
                                                               ", or use quantile_mechanism = 'exponential' for a quantile"),
        )
    delta_share = query.budget.delta / delta_users if delta_users else Fraction(0)
    builder = PlanBuilder(query, bounding, releases, person_groups(query, bounding))
    estimates = tuple(family.plan(call, index, builder, Share(share, delta_share if need.delta else Fraction(0)))
                      for index, (family, call, need) in enumerate(zip(families, query.aggregates, needs)))
    selection = None
    if needs_selection:
        selection = PartitionSelectionSpec(max_groups=bounding.max_groups, epsilon=share, delta=delta_share)
    specs: list[object] = [r.spec for r in releases] + [r.spec for r in builder.robust_releases] + ([selection] if selection else [])
    cost = sum((registry.cost(spec) for spec in specs), PrivacyCost.zero())
    notes = _notes(query, bounding) + tuple(dict.fromkeys(note for need in needs for note in need.notes)) + tuple(builder.notes)
    return Plan(query, bounding, tuple(releases), estimates, selection, cost, notes, builder.requests(),
                tuple(builder.robust_releases))


def needs_of(family: Aggregate, call: AggregateCall, query: BoundQuery, bounding: Bounding) -> Needs:
    """Phase 1 of one aggregate's planning: its releases with their sensitivities (policy only),
    its own share of epsilon and of delta (aggregates/base.py)."""
    return family.needs(call, query, bounding)


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


def _notes(query: BoundQuery, bounding: Bounding) -> tuple[str, ...]:
    notes = [f"each {bounding.unit} keeps at most {bounding.max_rows} row(s), chosen at random (secret seed)"]
    for key in query.keys:
        if key.public:
            kind = "keys the WHERE lists (constants of the query)" if key.expr is None and key.derivation else "public keys"
            notes.append(f"GROUP BY {key.column.name}: all {len(key.column.values or ())} {kind} released, empty ones too")
        else:
            notes.append(f"GROUP BY {key.column.name}: keys chosen by partition selection "
                         f"(each {bounding.unit} counts in at most {bounding.max_groups} key(s))")
    return tuple(notes)

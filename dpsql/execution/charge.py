"""The budget charge: the only code that writes to the ledger.

A query is charged once, atomically, before its engine statements run; a Median Mechanism
layer's reservation is charged the same way, once per session. A charge is never refunded.
The ledger entry records the mechanisms and their public parameters, and every PrivacyLoss
term (noise family and parameters) so that a tighter accountant can re-read the history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import MORE_LIMIT, ChargeRecord, Ledger, charge_record
from dpsql.errors import BudgetExhaustedError
from dpsql.execution.compiled import CompiledPost, CompiledQuery
from dpsql.ir.plan import Plan, RobustRelease
from dpsql.mechanisms import registry
from dpsql.mechanisms.sparse_vector import MedianMechanismReservation

LAYER_PLAN_HASH = "median-mechanism"
LAYER_MECHANISM = MedianMechanismReservation.name  # a layer's reservation in the ledger


@dataclass(frozen=True, slots=True)
class PlannedCharge:
    """A statement's ledger entry but who and when: its content (mechanisms, public parameters,
    cost, loss terms) and its plan identity. The same for every charge of that compiled statement
    (the executor keeps it per session: execution/state.py)."""

    record: ChargeRecord
    plan_hash: str

    @property
    def cost(self) -> PrivacyCost:
        return self.record.cost


def query_charge(compiled: CompiledQuery) -> PlannedCharge:
    """A query's whole cost in one entry: its plan's public description (no data)."""
    plan = compiled.plan
    return PlannedCharge(charge_record("+".join(_mechanisms(plan)) or "laplace", query_params(plan), plan.cost),
                         compiled.plan_hash())


def post_charge(compiled: CompiledPost) -> PlannedCharge:
    """Every release of a post-processing query in ONE entry: their summed cost, all loss terms."""
    plans = [query.plan for query in compiled.inputs]
    mechanisms = sorted({m for plan in plans for m in _mechanisms(plan)})
    params = {"releases": [query_params(plan) for plan in plans], "losses": [loss.record() for loss in compiled.cost.losses]}
    return PlannedCharge(charge_record("+".join(mechanisms) or "laplace", params, compiled.cost), compiled.plan_hash())


class Charger:
    """One analyst's charges in one session: `budget` is the analyst's whole budget (a value, set
    again by the session when its policy changes), and `accountant` ("adaptive", "zcdp" or
    "basic": dpsql.accounting.filters) names the privacy filter that admits charges against it."""

    def __init__(self, ledger: Ledger, analyst: str, session: str, budget: PrivacyCost,
                 accountant: str = "basic") -> None:
        self.ledger = ledger
        self._analyst = analyst
        self._session = session
        self.budget = budget
        self.accountant = accountant
        # The cost of this session's last charged statement (its kind: a plain query or a
        # post-processing one; a layer's reservation is not one): what "queries left" counts.
        self.last_cost: PrivacyCost | None = None

    def total(self) -> PrivacyCost:
        """The analyst's whole budget."""
        return self.budget

    @property
    def analyst(self) -> str:
        """The analyst this Charger charges (public)."""
        return self._analyst

    def remaining(self) -> PrivacyCost:
        """What the analyst may still spend under the accountant (epsilon at the budget's delta;
        read from the ledger, shared across processes)."""
        return self.ledger.remaining(self._analyst, self.budget, self.accountant)

    def spent(self) -> PrivacyCost:
        """What the analyst has spent under the accountant (epsilon at the budget's delta)."""
        return self.ledger.spent(self._analyst, self.budget, self.accountant)

    def spent_after(self, cost: PrivacyCost) -> PrivacyCost:
        """What the analyst would have spent after ``cost`` under the accountant (EXPLAIN; a read)."""
        return self.ledger.spent_after(self._analyst, cost, self.budget, self.accountant)

    def more(self, cost: PrivacyCost | None = None) -> int | None:
        """How many more charges like ``cost`` (default: this session's last, else the analyst's
        last statement in the ledger, from any session or process: a BI tool's pool opens a new
        connection per query) fit now, from the ledger's costs and the budget alone; None when
        there is no such cost (or it is free)."""
        if cost is None:
            cost = self.last_cost if self.last_cost is not None else self.ledger.last_cost(self._analyst, LAYER_PLAN_HASH)
        if cost is None or (cost.epsilon == 0 and cost.delta == 0):
            return None
        return self.ledger.more(self._analyst, cost, self.budget, self.accountant)

    def check(self, cost: PrivacyCost) -> None:
        """Fail fast, before the engine is touched, when `cost` cannot fit (the charge re-checks)."""
        if self.ledger.fits(self._analyst, cost, self.budget, self.accountant):
            return
        raise self._exhausted(cost)

    def _exhausted(self, cost: PrivacyCost) -> BudgetExhaustedError:
        remaining = self.remaining()
        return BudgetExhaustedError(
            f"privacy budget exhausted: requested epsilon={float(cost.epsilon):g}, delta={float(cost.delta):g}; "
            f"remaining epsilon={float(remaining.epsilon):g}, delta={float(remaining.delta):g}",
            requested=cost, remaining=remaining,
        )

    def charge_statement(self, planned: PlannedCharge, query: str) -> None:
        """Charge a statement's whole cost in one ledger entry, atomically (raises before any data
        is read): a plain query's, or every release of a post-processing query at once."""
        refused = False
        try:
            self.ledger.charge_record(planned.record, analyst=self._analyst, session=self._session, query=query,
                                      plan_hash=planned.plan_hash, budget=self.budget, accountant=self.accountant)
        except BudgetExhaustedError:
            refused = True
        if refused:  # the same words as the fail-fast check's refusal (a query may skip that check)
            raise self._exhausted(planned.cost)
        self.last_cost = planned.cost  # a statement's kind (a layer's reservation is not one)

    def charge_reservation(self, query: str, params: dict[str, Any], cost: PrivacyCost) -> None:
        """Charge a Median Mechanism layer's whole reservation: one entry, before any data."""
        params = {**params, "losses": [loss.record() for loss in cost.losses]}
        self.ledger.charge(analyst=self._analyst, session=self._session, query=query, plan_hash=LAYER_PLAN_HASH,
                           mechanism=LAYER_MECHANISM, params=params, cost=cost, budget=self.budget,
                           accountant=self.accountant)


def _mechanisms(plan: Plan) -> list[str]:
    return ([registry.mechanism_for(plan.releases[0].spec).name] if plan.releases else []) + [r.mechanism for r in plan.robust] \
        + (["partition_selection"] if plan.selection else [])


def more_text(more: int) -> str:
    """How many more queries fit, as shown: the count stops at MORE_LIMIT ("at least 1000")."""
    return f"at least {more}" if more >= MORE_LIMIT else str(more)


def query_params(plan: Plan) -> dict[str, Any]:
    """The ledger's record of a plan: releases, robust releases, selection and loss terms (no data)."""
    params: dict[str, Any] = {
        "releases": [
            {"kind": r.raw.kind, "column": r.raw.column.name if r.raw.column else None,
             "sensitivity": str(r.spec.sensitivity * r.unit), "scale": str(r.spec.scale * r.unit), "epsilon": str(r.spec.epsilon)}
            for r in plan.releases
        ],
        "max_rows": plan.bounding.max_rows,
        "losses": [loss.record() for loss in plan.cost.losses],  # per release, for a tighter accountant
    }
    if plan.robust:
        params["robust"] = [robust_params(plan, r) for r in plan.robust]
    if plan.selection is not None:
        params["partition_selection"] = {"scale": str(plan.selection.scale), "threshold": plan.selection.threshold,
                                         "epsilon": str(plan.selection.epsilon), "delta": str(plan.selection.delta)}
    return params


def robust_params(plan: Plan, release: RobustRelease) -> dict[str, Any]:
    """The ledger's record of a robust release: mechanism and public parameters (no data)."""
    cost = registry.cost(release.spec)
    record: dict[str, Any] = {"mechanism": release.mechanism, "aggregate": plan.query.aggregates[release.aggregate].label,
                              "epsilon": str(cost.epsilon), "delta": str(cost.delta)}
    record.update(registry.parameters(release.spec))
    return record

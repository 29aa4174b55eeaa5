"""The Median Mechanism layers' orchestration: one per enabled table, asked before the ordinary path.

`MedianMechanismLayers.take(compiled)` (execution/layers.py, the session's hook) returns a NoisyResult when the layer answers the query,
or None when the ordinary per-query path should (the table has no layer, the query is not
measurable over X, the calibration gives too few hard slots, the reservation does not fit the
budget, or the layer has halted with `after_halt = "laplace"`). Every one of these decisions
depends on the query, the policy, the budget and the released transcript only.

On the first query it takes in a session, a table's layer charges its whole reservation through
the session's Charger (one ledger entry, mode and parameters recorded), then reads the bounded
data once into a histogram over X. Easy, hard and repeated answers cost nothing more. The
algorithm is in dpsql.mechanisms.median_mechanism, the measurability check in
dpsql.planner.measurable.
"""

from __future__ import annotations

import functools
import math
import threading
import warnings
from typing import Any

import numpy as np
from sqlglot import exp

from dpsql.accounting.cost import PrivacyCost
from dpsql.backend.auxiliary.released_db import ReleasedDatabase
from dpsql.backend.sql.median_layer_sql import (
    COUNT,
    X_ID,
    domain_create,
    domain_name,
    histogram_select,
    mask_select,
)
from dpsql.catalog.policy import MedianMechanismConfig, Table
from dpsql.errors import (
    BudgetExhaustedError,
    MedianMechanismHaltedError,
    MedianMechanismWarning,
)
from dpsql.execution.assemble import assemble_layer
from dpsql.execution.charge import Charger
from dpsql.execution.compiled import CompiledQuery
from dpsql.execution.engine_calls import EngineCalls
from dpsql.mechanisms.median_mechanism.core import LayerCore, SecretHistogram, measured_width
from dpsql.mechanisms.median_mechanism.domain import DomainIndex, QueryShape
from dpsql.mechanisms.median_mechanism.public_model import PublicModel
from dpsql.mechanisms.median_mechanism.strategy import LayerPlan, plan_layer, turn_on_hint
from dpsql.mechanisms.rng import RandomSource
from dpsql.mechanisms.sparse_vector import SVTCalibration
from dpsql.planner.measurable import MMQuery
from dpsql.result import NoisyResult

MASK_CACHE_BYTES = 64 * 2**20

# Session chaining across sessions (after_halt = "renew"): the public model an analyst's layer
# learned, kept in this process, keyed by (analyst, table, policy section, max_rows). The model
# is a function of what that analyst was released, so handing it to the same analyst's next
# session is post-processing; a session that starts from it buys no warm start.
_LEARNED: dict[tuple[str, str, MedianMechanismConfig, int], tuple[PublicModel, LayerPlan, list[np.ndarray]]] = {}
_LEARNED_LOCK = threading.Lock()


@functools.lru_cache(maxsize=64)
def plan_for(config: MedianMechanismConfig, max_rows: int, renewal: bool = False) -> LayerPlan:
    """The layer's public plan: strategy and calibration (cached: it depends on the policy only).
    A renewal (session chaining) keeps the learned model, so it buys no warm start."""
    return plan_layer(mode=config.mode, epsilon=config.epsilon, delta=config.delta, accuracy=config.accuracy,
                      sensitivity=max_rows, sizes=tuple(d.size for d in config.domains), beta=config.beta,
                      expected_queries=config.expected_queries, renewal=renewal,
                      strategy=None if config.strategy == "auto" else config.strategy)


def calibration_for(config: MedianMechanismConfig, max_rows: int) -> SVTCalibration:
    """The layer's public calibration."""
    return plan_for(config, max_rows).calibration


def _fmt(value: object) -> str:
    return f"{float(value):.6g}"  # type: ignore[arg-type]


class TableLayer:
    """The Median Mechanism layer of one table in one session."""

    def __init__(self, table: Table, config: MedianMechanismConfig, engine: EngineCalls, rng: RandomSource,
                 charger: Charger, released: ReleasedDatabase) -> None:
        self.table = table
        self.config = config
        self.domain = DomainIndex(config)
        self.plan = plan_for(config, table.max_rows)
        self.calibration = self.plan.calibration
        self.enabled = self.plan.decide(config.min_hard_slots)[0]
        self.core: LayerCore | None = None
        self.reservations = 0  # reservations charged in this session (more than one: renewed after halting)
        self.unaffordable = False
        self.data_reads = 0  # engine queries over private data (the histogram, once per session)
        self._engine = engine
        self._released = released  # where post-processing of its answers runs (released values only)
        self._rng = rng
        self._charger = charger
        self._masks: dict[str, np.ndarray | None] = {}
        self._warned = False
        self._domain_ready = False
        self._chain_key = (charger.analyst, table.name, config, table.max_rows)
        if config.after_halt == "renew" and self.plan.strategy == "pmw":
            with _LEARNED_LOCK:
                if self._chain_key in _LEARNED:  # continue the model of an earlier session (no warm start)
                    self.plan = plan_for(config, table.max_rows, True)
                    self.calibration = self.plan.calibration
                    self.enabled = self.plan.decide(config.min_hard_slots)[0]

    # --- public state ---------------------------------------------------------------------------
    @property
    def halted(self) -> bool:
        """Whether the session's layer used all its hard slots (public)."""
        return self.core is not None and self.core.halted

    @property
    def slots_left(self) -> int:
        """Hard answers still allowed in this session (public)."""
        return self.core.slots_left if self.core is not None else self.calibration.cap

    def status(self) -> str:
        """disabled | unaffordable | ready (not reserved yet) | active | halted."""
        if not self.enabled:
            return "disabled"
        if self.unaffordable:
            return "unaffordable"
        if self.core is None:
            return "ready"
        return "halted" if self.core.halted else "active"

    # --- masks (public: the predicate over the domain table, no data) ---------------------------
    def shape(self, query: MMQuery) -> QueryShape | None:
        """The query's shape over X, or None when the engine rejects the predicate."""
        mask = self._mask(query)
        if mask is None:
            return None
        named = {c.name.lower() for c in query.predicate.find_all(exp.Column)} if query.predicate is not None else set()
        named |= set(query.keys) | ({query.not_null} if query.not_null else set())
        columns = tuple(i for i, name in enumerate(self.config.columns) if name in named)
        return self.domain.shape(mask, query.keys, columns)

    def _mask(self, query: MMQuery) -> np.ndarray | None:
        text = query.text
        if text in self._masks:
            return self._masks[text]
        if not self._domain_ready:
            self._engine.ensure_public_table(domain_name(self.table), domain_create(self.table, self.config))
            self._domain_ready = True
        fetched = self._engine.public_arrays(mask_select(self.table, query.predicate, query.not_null))
        mask = self.domain.mask_from_ids(fetched[X_ID]) if fetched is not None else None
        if len(self._masks) * self.domain.cells >= MASK_CACHE_BYTES:
            self._masks.pop(next(iter(self._masks)))
        self._masks[text] = mask
        return mask

    # --- answering ----------------------------------------------------------------------------
    def warn_disabled(self) -> None:
        """Warn once per session that the layer is configured but not used."""
        if self._warned:
            return
        self._warned = True
        warnings.warn(self.disabled_reason(), MedianMechanismWarning, stacklevel=4)

    def disabled_reason(self) -> str:
        """Why the layer does not answer (public)."""
        cal = self.calibration
        if not self.enabled:
            _, why = self.plan.decide(self.config.min_hard_slots)
            config = self.config
            hint = turn_on_hint(mode=config.mode, epsilon=config.epsilon, delta=config.delta, accuracy=config.accuracy,
                                sensitivity=self.table.max_rows, sizes=tuple(d.size for d in config.domains),
                                beta=config.beta, expected_queries=config.expected_queries,
                                min_hard_slots=config.min_hard_slots)
            return (f"the Median Mechanism layer of '{self.table.name}' is off: {why} (epsilon {_fmt(cal.epsilon)}, "
                    f"accuracy {cal.accuracy}, mode {cal.mode}); per-query noise answers its counting queries; {hint}")
        return (f"the Median Mechanism layer of '{self.table.name}' is off for this session: its reservation "
                f"(epsilon {_fmt(cal.cost.epsilon)}, delta {float(cal.cost.delta):.3g}) does not fit the remaining "
                "budget; per-query noise answers its counting queries")

    def renewing(self, shape: QueryShape) -> bool:
        """Whether this query would renew a halted layer (after_halt = "renew"; public)."""
        return (self.config.after_halt == "renew" and self.core is not None and self.core.halted
                and self.core.cached(shape) is None)

    def answer(self, compiled: CompiledQuery, query: MMQuery, shape: QueryShape) -> NoisyResult | None:
        """Answer through the layer, reserving on first use; None to fall back to the ordinary path."""
        cost = PrivacyCost.zero()
        if self.core is None or self.renewing(shape):
            renewal = self.core is not None
            plan = plan_for(self.config, self.table.max_rows, renewal) if renewal else self.plan
            try:
                self._charger.charge_reservation(compiled.statement.sql, self._ledger_params(plan), plan.calibration.cost)
            except BudgetExhaustedError:
                if renewal:
                    return None  # the halted layer stays halted: the ordinary path answers
                self.unaffordable = True
                self.warn_disabled()
                return None
            cost = plan.calibration.cost
            self.reservations += 1
            self.core = self._start(plan, self.core)
        release = self.core.answer(shape)
        if release is None:
            if self.config.after_halt == "refuse":
                raise MedianMechanismHaltedError(
                    f"the Median Mechanism layer of '{self.table.name}' has used all {self.calibration.cap} hard slots "
                    "and the policy refuses further counting queries on it in this session (after_halt = \"refuse\")")
            return None
        return assemble_layer(compiled, release, self.calibration, self._released, cost)

    def _start(self, plan: LayerPlan, previous: LayerCore | None) -> LayerCore:
        """After the charge: read the bounded data once into the secret histogram over X (a renewal
        reuses it and keeps the learned public model)."""
        if previous is not None:
            self.calibration = plan.calibration
            return LayerCore(plan, self.domain, previous._data, self._rng, model=previous.model,
                             measurement=(previous.measured_plan, previous.measured))
        bounded = self._engine.bounded(self.table)
        self.data_reads += 1
        fetched = self._engine.private_arrays(histogram_select(self.config, bounded))
        counts = np.zeros(self.domain.cells, dtype=np.int64)
        ids = np.asarray(fetched[X_ID], dtype=np.int64)
        counts[ids] = np.asarray(fetched[COUNT], dtype=np.int64)
        chained = _LEARNED.get(self._chain_key) if self.config.after_halt == "renew" and plan.strategy == "pmw" else None
        core = LayerCore(plan, self.domain, SecretHistogram(counts), self._rng,
                         model=chained[0] if chained is not None else None,
                         measurement=(chained[1], chained[2]) if chained is not None else None)
        if self.config.after_halt == "renew" and plan.strategy == "pmw":
            with _LEARNED_LOCK:
                _LEARNED[self._chain_key] = (core.model, core.measured_plan, core.measured)  # public parts only
        return core

    def _ledger_params(self, plan: LayerPlan) -> dict[str, Any]:
        params = plan.calibration.ledger_params()
        params.update({"table": self.table.name, "columns": list(self.config.columns), "cells": self.domain.cells,
                       "strategy": plan.strategy, "measurement": plan.measurement,
                       "after_halt": self.config.after_halt, "renewal": self.core is not None or not plan.axes})
        return params

    # --- EXPLAIN ------------------------------------------------------------------------------
    def explain(self, query: MMQuery | str) -> list[str]:
        """EXPLAIN lines for a query on this table (public state only)."""
        plan = self.plan
        head = f"Median Mechanism layer ({self.table.name}, {self.calibration.mode} mode): "
        if isinstance(query, str):
            return [head + f"not used: {query}; the plan above answers it"]
        if self.status() in ("disabled", "unaffordable"):
            return [head + self.disabled_reason()]
        shape = self.shape(query)
        if shape is None:
            return [head + "not used: the predicate does not run over the domain table; the plan above answers it"]
        repeat = self.core is not None and self.core.cached(shape) is not None
        accountant = self._charger.accountant
        if self.halted and not repeat:
            if self.config.after_halt == "renew":
                renewal = plan_for(self.config, self.table.max_rows, True).calibration
                return [head + f"halted after {self.calibration.cap} hard answers; this query renews it: a new reservation "
                        f"(epsilon {_fmt(renewal.epsilon)}) with the learned public model kept (session chaining)"]
            after = ("refused (after_halt = \"refuse\")" if self.config.after_halt == "refuse"
                     else f"answered by the plan above with per-query noise, charged as shown under the {accountant} privacy filter")
            return [head + f"halted after {self.calibration.cap} hard answers; this query is {after}"]
        cal = self.calibration
        lines = [head + "answers this query instead of the plan above; no cost beyond the reservation"]
        lines.append(f"  Strategy: {plan.strategy}: {plan.reason}")
        lines.append("  Domain X: " + " x ".join(_domain_text(d) for d in self.config.domains) + f" = {self.domain.cells} cells "
                     "(values outside a range or bins clamped; NULL, NaN and undeclared values in the NULL cell)")
        charged = "charged in this session" if self.core is not None else "charged on the first answer"
        budget = f"epsilon {_fmt(cal.epsilon)}" + (f", delta {float(cal.delta):.3g} (rho {_fmt(cal.rho)})" if cal.mode == "zcdp" else "")
        lines.append(f"  Reservation: {budget}, once per session ({charged}); admitted by the {accountant} privacy filter"
                     + (" at its rho" if cal.mode == "zcdp" and accountant != "basic" else ""))
        noise = (f"discrete Gaussian sigma {_fmt(math.sqrt(float(cal.warm_sigma2)))}" if cal.mode == "zcdp"
                 else f"discrete Laplace scale {_fmt(cal.warm_scale)}") if plan.axes else "none"
        lines.append(f"  Measurement: noisy {plan.measurement} ({len(plan.axes)} vector(s), {noise} per cell), released once")
        if plan.strategy == "identity":
            lines.append("  Answers: the sum of the query's cells in the noisy histogram (post-processing, no data read, "
                         "never halts); +-1.96 sigma sqrt(cells) at 95%")
            lines.append("  This query: " + ("a repeat: the released answer, no data read" if repeat
                                              else "post-processing of the histogram, no data read"))
            return lines
        tnoise = (f"threshold noise discrete Laplace scale {_fmt(cal.threshold_scale)}"
                  + (" (redrawn after each hard answer)" if cal.mode == "zcdp" else " (drawn once)")
                  + f", query noise discrete Laplace scale {_fmt(cal.query_scale)}")
        lines.append(f"  Test: e = max |COUNT - model answer| (sensitivity {cal.sensitivity}), "
                     f"hard when e + noise >= {cal.threshold} + noise; {tnoise}")
        answer = (f"discrete Laplace scale {_fmt(cal.answer_scale)}" if cal.mode == "pure"
                  else f"discrete Gaussian sigma {_fmt(math.sqrt(cal.answer_sigma2 or 0))}")
        lines.append(f"  Answers: easy = the learned model's answer (free, +-{cal.accuracy} at 95%); hard = COUNT + fresh {answer} "
                     f"(+-{cal.answer_ci95}), then a multiplicative-weights update; repeat = the released answer again")
        after = {"refuse": "refused", "renew": "a new reservation that keeps the learned model (session chaining)"}.get(
            self.config.after_halt, f"the plan above with per-query noise under the {accountant} privacy filter")
        lines.append(f"  Hard slots: {self.slots_left} of {cal.cap} left; after they are used: {after}")
        width = measured_width(self.domain, self.core.measured_plan if self.core is not None else plan, shape)
        this = ("a repeat: the released answer, no data read" if repeat
                else f"answered from the measurement (post-processing, +-{width} at 95%, no data read)"
                if width is not None and width <= cal.accuracy else "tested by the sparse vector (easy or hard)")
        lines.append("  This query: " + this)
        return lines


def _domain_text(domain: Any) -> str:
    if domain.kind == "bins":
        return f"{domain.column} ({domain.size - 1} bins + NULL)"
    if domain.kind == "range":
        return f"{domain.column} ({domain.values[0]}..{domain.values[-1]} + NULL)"
    return f"{domain.column} ({domain.size - 1} values + NULL)"

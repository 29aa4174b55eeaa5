"""Which queries a Median Mechanism layer takes (the session's hook, asked before the ordinary path).

The layer itself (execution/median_layer.py, with numpy and the algorithm of
dpsql.mechanisms.median_mechanism) is imported only when a query reaches a table whose policy
enables one: a session over other tables never loads it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from dpsql.accounting.cost import PrivacyCost
from dpsql.backend.auxiliary.released_db import ReleasedDatabase
from dpsql.catalog.policy import Policy
from dpsql.execution.charge import Charger
from dpsql.execution.compiled import CompiledQuery
from dpsql.execution.engine_calls import EngineCalls
from dpsql.mechanisms.rng import RandomSource
from dpsql.planner.measurable import MMQuery, measurable
from dpsql.result import NoisyResult

if TYPE_CHECKING:
    from dpsql.execution.median_layer import TableLayer


class MedianMechanismLayers:
    """The session hook: which queries the Median Mechanism layers take, and their EXPLAIN lines."""

    def __init__(self, policy: Policy, engine: EngineCalls, rng: RandomSource, charger: Charger,
                 released: ReleasedDatabase) -> None:
        self._policy = policy
        self._engine = engine
        self._released = released  # where the layers' answers are post-processed
        self._rng = rng
        self._charger = charger
        self._layers: dict[str, TableLayer] = {}
        self._lock = threading.Lock()  # EXPLAIN and cost_of may run outside the session's lock

    def layer(self, table: str) -> TableLayer | None:
        """The layer of a table in this session (created on first use), or None."""
        declared = self._policy.table(table)
        if declared is None or declared.median_mechanism is None:
            return None
        with self._lock:
            if declared.name not in self._layers:
                from dpsql.execution.median_layer import TableLayer  # numpy and the layer's algorithm: only here

                self._layers[declared.name] = TableLayer(declared, declared.median_mechanism, self._engine, self._rng,
                                                         self._charger, self._released)
            return self._layers[declared.name]

    def _route(self, compiled: object) -> tuple[TableLayer, MMQuery | str] | None:
        if not isinstance(compiled, CompiledQuery):
            return None
        bound = compiled.plan.query
        layer = self.layer(bound.table.name)
        if layer is None:
            return None
        return layer, measurable(bound, layer.config)

    def take(self, compiled: object) -> NoisyResult | None:
        """The layer's answer to a compiled query, or None for the ordinary per-query path."""
        routed = self._route(compiled)
        if routed is None:
            return None
        layer, query = routed
        if isinstance(query, str):
            return None
        if layer.status() in ("disabled", "unaffordable"):
            layer.warn_disabled()
            return None
        shape = layer.shape(query)
        if shape is None:
            return None
        assert isinstance(compiled, CompiledQuery)
        return layer.answer(compiled, query, shape)

    def cost_of(self, compiled: object) -> PrivacyCost | None:
        """What executing would charge when the layer takes the query (its reservation on first use,
        else nothing); None when the ordinary path would answer. Public state only, no data."""
        routed = self._route(compiled)
        if routed is None:
            return None
        layer, query = routed
        if isinstance(query, str):
            return None
        if layer.status() in ("disabled", "unaffordable"):
            return None
        shape = layer.shape(query)
        if shape is None:
            return None
        if layer.core is None:
            return layer.calibration.cost
        if layer.renewing(shape):
            from dpsql.execution.median_layer import plan_for

            return plan_for(layer.config, layer.table.max_rows, True).calibration.cost
        if layer.core.cached(shape) is None and layer.halted:
            return None
        return PrivacyCost.zero()

    def explain_lines(self, compiled: object) -> list[str]:
        """EXPLAIN lines about the layer for this query (none for tables without a layer)."""
        routed = self._route(compiled)
        if routed is None:
            return []
        layer, query = routed
        return layer.explain(query)

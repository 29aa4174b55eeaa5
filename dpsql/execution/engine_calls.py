"""The only caller of the engine: statements over private data, dry runs, and the public or
released-value statements around them.

Private data are read only here, and only through the session's bounded relation of a table,
whose secret seed is drawn once per session and table (see backend/engine.py for why caching
it is private). Released values and public domain tables go to the engine's local DuckDB.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy
from sqlglot import exp

from dpsql.backend.engine import Engine, EngineResult
from dpsql.catalog.model import Table
from dpsql.mechanisms.rng import RandomSource

SEED_BOUND = 2**62


class EngineCalls:
    """A session's engine, as execution uses it."""

    def __init__(self, engine: Engine, rng: RandomSource) -> None:
        self.engine = engine
        self._rng = rng
        self.seeds: dict[str, int] = {}

    @property
    def dialect(self) -> str:
        return self.engine.dialect

    @property
    def capabilities(self) -> frozenset[str]:
        return self.engine.capabilities

    # --- private data (after the charge) -------------------------------------------------------
    def bounded(self, table: Table) -> str:
        """The session's bounded relation of a table (its secret seed drawn once per session)."""
        if table.name not in self.seeds:
            self.seeds[table.name] = self._rng.randbelow(SEED_BOUND)
        return self.engine.ensure_bounded(table, self.seeds[table.name])

    def keyed(self, table: Table, keys: tuple[str, ...]) -> str:
        """The session's keyed relation of a table and grouping-column set (its own secret seed,
        drawn once per session, table and key set: the kept keys agree across the session's queries)."""
        self.bounded(table)
        slot = "\x00".join((table.name, *keys))
        if slot not in self.seeds:
            self.seeds[slot] = self._rng.randbelow(SEED_BOUND)
        return self.engine.ensure_keyed(table, keys, self.seeds[table.name], self.seeds[slot])

    def run(self, sql: str, params: Mapping[str, Any] | None = None) -> EngineResult:
        """One engine statement over bounded relations (rendered for this engine)."""
        return self.engine.run(sql, params)

    def private_arrays(self, select: exp.Expr) -> dict[str, numpy.ndarray]:
        """A statement over a bounded relation, as numpy columns (the Median Mechanism's histogram)."""
        return self.engine.private_arrays(select)

    # --- before the charge: no data ------------------------------------------------------------
    def dry_run(self, table: Table, select: exp.Expr, params: Mapping[str, Any] | None = None) -> None:
        """The statement over an empty table of the same schema: query-only errors, uncharged."""
        self.engine.dry_run(table, select, params)

    # --- public data and released values --------------------------------------------------------
    def postprocess(self, columns: dict[str, list[Any]], types: dict[str, str], select: exp.Select) -> EngineResult:
        """Post-processing SQL over released values only."""
        return self.engine.postprocess(columns, types, select)

    def run_public(self, tree: exp.Expr, tables: tuple[Table, ...]) -> EngineResult:
        return self.engine.run_public(tree, tables)

    def describe_public(self, tree: exp.Expr, tables: tuple[Table, ...]) -> EngineResult:
        return self.engine.describe_public(tree, tables)

    def ensure_public_table(self, name: str, create: exp.Create) -> str:
        return self.engine.ensure_public_table(name, create)

    def public_arrays(self, select: exp.Expr) -> dict[str, numpy.ndarray] | None:
        return self.engine.public_arrays(select)

"""One statement after compilation, in one direction (fail closed):

    dry runs (no data) -> charge (execution.charge) -> bounded relation -> engine statements
    (execution.engine_calls) -> release (execution.release: all noise, through the mechanism
    registry) -> post-processing (released values only) -> assembly (execution.assemble).

A Median Mechanism layer (execution.median_layer) may take a counting query first; it charges
through the same Charger and reads data through the same EngineCalls. Refusals raise before the
charge; a charged query is never refunded, whatever happens after the charge.
"""

from __future__ import annotations

from dpsql.accounting.cost import PrivacyCost
from dpsql.backend.engine import Engine
from dpsql.backend.released_db import ReleasedDatabase
from dpsql.catalog.model import Policy
from dpsql.errors import EngineError, UnsupportedQueryError
from dpsql.execution.assemble import assemble, assemble_simple
from dpsql.execution.charge import Charger, more_text
from dpsql.execution.compiled import CompiledQuery
from dpsql.execution.engine_calls import SEED_BOUND, EngineCalls
from dpsql.execution.compiled_post import CompiledPost
from dpsql.execution.layers import MedianMechanismLayers
from dpsql.execution.post_run import describe_post, run_post
from dpsql.execution.release import noisy_types, release_robust_rows, release_rows
from dpsql.ir.query import ColumnRef, PublicQuery
from dpsql.mechanisms.base import fmt
from dpsql.mechanisms.rng import RandomSource
from dpsql.result import NoisyResult, ResultColumn


class Executor:
    """Runs a session's compiled statements: the engine, the charges and the noise of one session."""

    def __init__(self, policy: Policy, engine: Engine, charger: Charger, rng: RandomSource, *, prepare: bool = False) -> None:
        self.calls = EngineCalls(engine, rng)
        self.released = ReleasedDatabase()  # post-processing queries' released rows only (backend/released_db.py)
        self.charger = charger
        self._rng = rng
        # Counting queries on tables with a [median_mechanism] policy go to the layer first (docs/mechanisms.md).
        self.layers = MedianMechanismLayers(policy, self.calls, rng, charger)
        if prepare:
            # Cold start: the bounded relations of the private tables whose source the policy names
            # are built in the background from now on; the first query waits only for the rest.
            # Privacy: the same relation (same seed, same SQL) the first query would build; no
            # answer is released and nothing is charged until a query asks (engine_calls.Preparation).
            self.calls.prepare([t for t in policy.tables.values() if not t.public and t.source is not None])

    def close(self) -> None:
        """Stop background work before the engine closes."""
        self.calls.close()
        self.released.close()

    # --- without data or budget -------------------------------------------------------------------
    def cost_of(self, compiled: CompiledQuery) -> PrivacyCost:
        """What executing would charge (a layer's reservation, nothing, or the plan's cost)."""
        layer_cost = self.layers.cost_of(compiled)
        return layer_cost if layer_cost is not None else compiled.plan.cost

    def explain_lines(self, compiled: CompiledQuery, verbose: bool = True) -> list[str]:
        """EXPLAIN of a private query on this session's engine, with the layer's lines (the engine SQL if verbose)."""
        lines = compiled.explain_lines(self.calls.dialect, self.calls.capabilities, verbose) + self.layers.explain_lines(compiled)
        table = compiled.plan.query.table
        # The budget's view right under the query's own cost (the plan's "Cost:" line).
        at = next((i + 1 for i, line in enumerate(lines) if line.startswith("Cost: ")), len(lines))
        lines[at:at] = self.budget_lines(self.cost_of(compiled))
        lines.append(f"Bounded relation of {table.name}: {self.calls.preparation_state(table)}")
        if compiled.keyed_columns:  # partition selection with key bounding: the keyed relation too
            lines.append(f"Keyed relation of {table.name} ({', '.join(compiled.keyed_columns)}): "
                         f"{self.calls.keyed_state(table, compiled.keyed_columns)}")
        return lines

    def budget_lines(self, cost: PrivacyCost) -> list[str]:
        """EXPLAIN's view of the budget: the analyst's total after this query under the policy's
        privacy filter (the smallest epsilon at which it still holds the charges), and how many such
        queries fit now. A read of the ledger's costs and the budget: public facts, nothing is spent."""
        charger, total = self.charger, self.charger.total()
        after = charger.spent_after(cost)
        line = (f"Budget after this query ({charger.accountant} privacy filter): epsilon {fmt(after.epsilon)} spent at delta "
                f"{float(total.delta):.3g}, of epsilon {fmt(total.epsilon)}")
        more = charger.more(cost)
        if more == 0:
            return [line + "; it does not fit: the query would be refused"]
        return [line + ("" if more is None else f"; {more_text(more)} such queries fit now")]

    def describe_public(self, query: PublicQuery) -> tuple[ResultColumn, ...]:
        result = self.calls.describe_public(query.tree, query.tables)
        return tuple(ResultColumn(n, t) for n, t in zip(result.names, result.types))

    def describe_private(self, compiled: CompiledQuery) -> tuple[ResultColumn, ...]:
        """Output columns of a private query: post-processing over an EMPTY noisy table (no release)."""
        outputs = compiled.plan.query.outputs
        names, types = noisy_types(compiled)
        if compiled.simple_outputs:
            return tuple(ResultColumn(o.name, t) for o, t in zip(outputs, types))
        post = self.calls.postprocess({n: [] for n in names}, dict(zip(names, types)), compiled.post)
        position = {name: i for i, name in enumerate(post.names)}
        return tuple(ResultColumn(o.name, post.types[position[ColumnRef("output", i).name]]) for i, o in enumerate(outputs))

    # --- answers ------------------------------------------------------------------------------------
    def public(self, query: PublicQuery) -> NoisyResult:
        """A query over public tables only: exact, no noise, no cost."""
        result = self.calls.run_public(query.tree, query.tables)
        columns = tuple(ResultColumn(n, t) for n, t in zip(result.names, result.types))
        return NoisyResult("public", columns, result.rows, tuple(None for _ in columns),
                           [tuple(None for _ in columns) for _ in result.rows])

    def execute(self, compiled: CompiledQuery) -> NoisyResult:
        """Answer a private query: through a Median Mechanism layer, or the plan."""
        taken = self.layers.take(compiled)
        if taken is not None:
            return taken
        if self.calls.dialect not in compiled.dry_runs_passed:
            self.charger.check(compiled.plan.cost)  # fail fast, before the dry runs touch the engine
            self._dry_runs(compiled)
        # (A plan whose dry runs passed goes straight to the charge: it checks the budget itself,
        # atomically, and refuses in the same words.)
        self.charger.charge_query(compiled)
        # Charged: from here on, nothing is refunded, whatever happens.
        return self._answer(compiled)

    # --- post-processing over several releases (execution/post_run.py) ------------------------------
    def execute_post(self, compiled: CompiledPost) -> NoisyResult:
        """Answer a post-processing query: its releases (one charge), then the outer query."""
        return run_post(self, compiled)

    def describe_post(self, compiled: CompiledPost) -> tuple[tuple[ResultColumn, ...], tuple[bool, ...]]:
        """Output columns of a post-processing query and which are noisy (no data, no budget)."""
        return describe_post(self, compiled)

    def dry_runs(self, compiled: CompiledQuery) -> None:
        """A release's query-only checks, before the charge."""
        self._dry_runs(compiled)

    def answer(self, compiled: CompiledQuery) -> NoisyResult:
        """A release's answer: ONLY after its charge (run_post charges all releases first)."""
        return self._answer(compiled)

    def _dry_runs(self, compiled: CompiledQuery) -> None:
        """Refuse query-only errors before the charge (no data is present in a dry run)."""
        dialect = self.calls.dialect
        if dialect in compiled.dry_runs_passed:
            return
        table = compiled.plan.query.table
        self.calls.dry_run(table, compiled.dry_run_engine, {"seed": 0} if compiled.uses_seed else None)
        for select, params in compiled.robust_dry_runs(self.calls.capabilities):  # MEDIAN/IQR/MODE, on the empty table too
            self.calls.dry_run(table, select, params)
        if compiled.plan.robust and not compiled.simple_outputs:
            self._dry_run_post(compiled)
        compiled.dry_runs_passed.add(dialect)

    def _dry_run_post(self, compiled: CompiledQuery) -> None:
        """Post-processing over an EMPTY noisy table, before the charge: arithmetic the engine cannot
        type (e.g. a number divided by a text MODE) is refused uncharged (DP123)."""
        names, types = noisy_types(compiled)
        try:
            self.calls.postprocess({n: [] for n in names}, dict(zip(names, types)), compiled.post)
            return
        except EngineError:
            pass  # raised below, outside the except block
        raise UnsupportedQueryError("the engine cannot compute this query's outputs from the released values",
                                    code="DP123", hint="check the arithmetic over MEDIAN, IQR and MODE; nothing was charged")

    def _answer(self, compiled: CompiledQuery) -> NoisyResult:
        """After the charge: bounded relation, engine statements, release, post-processing, assembly."""
        calls = self.calls
        bounded = calls.bounded(compiled.plan.query.table)
        assert bounded
        if compiled.keyed_columns:
            calls.keyed(compiled.plan.query.table, compiled.keyed_columns)
        engine_sql = compiled.render_once(compiled.engine, calls.dialect)
        raw = calls.run(engine_sql, {"seed": self._rng.randbelow(SEED_BOUND)} if compiled.uses_seed else None)
        columns, types = release_rows(compiled, raw, self._rng)
        release_robust_rows(compiled, columns, types, calls.run, self._rng,  # MEDIAN/IQR/MODE: value or ⊥
                            calls.dialect, calls.capabilities)
        if compiled.simple_outputs:
            return assemble_simple(compiled, columns, types)
        post = calls.postprocess(columns, types, compiled.post)
        return assemble(compiled, post.names, post.types, post.rows)

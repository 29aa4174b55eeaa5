"""One statement after compilation, in one direction (fail closed):

    dry runs (no data) -> charge (execution.charge) -> bounded relation -> engine statements
    (execution.engine_calls) -> release (execution.release: all noise, through the mechanism
    registry) -> post-processing (released values only) -> assembly (execution.assemble).

A Median Mechanism layer (execution.median_layer) may take a counting query first; it charges
through the same Charger and reads data through the same EngineCalls. Refusals raise before the
charge; a charged query is never refunded, whatever happens after the charge.

Multi-step reads (MEDIAN/IQR/MODE requests whose next statement depends on the rows of the last)
are generators in the backend (backend/sql/robust_sql.reads) that yield each statement and receive its
rows: the executor runs every engine statement itself, the backend only decides and decodes.
"""

from __future__ import annotations

from typing import Any

from dpsql.accounting.cost import PrivacyCost
from dpsql.backend.auxiliary.released_db import ReleasedDatabase, ReleasedTable
from dpsql.backend.engines.engine import Engine
from dpsql.backend.sql.robust_sql import GroupKey, Reads, RobustQuery, reads
from dpsql.catalog.policy import Policy
from dpsql.errors import EngineError, UnsupportedQueryError
from dpsql.execution.assemble import assemble_post, assemble_simple, released_table, table_types
from dpsql.execution.charge import Charger, more_text, post_charge, query_charge
from dpsql.execution.compiled import CompiledPost, CompiledQuery
from dpsql.execution.engine_calls import SEED_BOUND, EngineCalls
from dpsql.execution.layers import MedianMechanismLayers
from dpsql.execution.noise import plan_noise_info
from dpsql.execution.post_run import (
    filled,
    first_value,
    noisy_outputs,
    post_result,
    reconciled,
    released_schemas,
    scalar_values,
    unknown_values,
    with_values,
)
from dpsql.execution.public_inputs import public_rows, public_schemas
from dpsql.execution.release import release_robust_rows, release_rows
from dpsql.execution.replay import Replays
from dpsql.execution.state import PostState, QueryState, SessionState
from dpsql.ir.query import ColumnRef, PublicQuery
from dpsql.mechanisms.base import fmt
from dpsql.mechanisms.rng import RandomSource
from dpsql.result import NoiseInfo, NoisyResult, ResultColumn, with_interval_ends


class Executor:
    """Runs a session's compiled statements: the engine, the charges, the noise and the state of one
    session (execution/state.py: what it derives from the statements it runs; they never change)."""

    def __init__(self, policy: Policy, engine: Engine, charger: Charger, rng: RandomSource, *, prepare: bool = False,
                 replays: Replays | None = None) -> None:
        self.calls = EngineCalls(engine, rng)
        # Answers released before, given again free (execution/replay.py); off unless the session says.
        self.replays = replays if replays is not None else Replays(None, charger.analyst, None)
        self.released = ReleasedDatabase()  # released values only: all post-processing runs there (backend/auxiliary/released_db.py)
        self.charger = charger
        self.state = SessionState(engine.dialect, engine.capabilities, policy.budget.default_query)
        self._rng = rng
        # Counting queries on tables with a [median_mechanism] policy go to the layer first (docs/mechanisms.md).
        self.layers = MedianMechanismLayers(policy, self.calls, rng, charger, self.released)
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
        """What executing would charge (nothing for a replay, a layer's reservation, or the plan's cost)."""
        if self.replays.released_at(self._replay_key(compiled)) is not None:
            return PrivacyCost.zero()
        layer_cost = self.layers.cost_of(compiled)
        return layer_cost if layer_cost is not None else compiled.plan.cost

    def explain_lines(self, compiled: CompiledQuery, verbose: bool = True) -> list[str]:
        """EXPLAIN of a private query on this session's engine, with the layer's lines (the engine SQL if verbose)."""
        state = self.state.query(compiled)
        lines = compiled.explain_lines(state.dialect, state.capabilities, verbose, state.text) + self.layers.explain_lines(compiled)
        table = compiled.plan.query.table
        # The budget's view right under the query's own cost (the plan's "Cost:" line), then replay's.
        at = next((i + 1 for i, line in enumerate(lines) if line.startswith("Cost: ")), len(lines))
        key = self._replay_key(compiled)
        replayed = self.replays.released_at(key) is not None
        lines[at:at] = ([] if replayed else self.budget_lines(self.cost_of(compiled))) + self.replays.explain_lines(key)
        lines.append(f"Bounded relation of {table.name}: {self.calls.preparation_state(table)}")
        if compiled.keyed_columns:  # partition selection with key bounding: the keyed relation too
            lines.append(f"Keyed relation of {table.name} ({', '.join(compiled.keyed_columns)}): "
                         f"{self.calls.keyed_state(table, compiled.keyed_columns)}")
        return lines

    def explain_post(self, compiled: CompiledPost, verbose: bool = True) -> list[str]:
        """EXPLAIN of a post-processing query on this session's engine (the engine SQL if verbose)."""
        return compiled.explain_lines(self.state.dialect, self.state.capabilities, verbose) + \
            self.replays.explain_lines(self._post_replay_key(compiled))

    def cost_of_post(self, compiled: CompiledPost) -> PrivacyCost:
        """What executing a post-processing query would charge (nothing for a replay)."""
        if self.replays.released_at(self._post_replay_key(compiled)) is not None:
            return PrivacyCost.zero()
        return compiled.cost

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
        _, types = table_types(compiled)
        if compiled.simple_outputs:
            return tuple(ResultColumn(o.name, t) for o, t in zip(outputs, types))
        post = self.released.evaluate(*self._post(self.state.query(compiled), compiled))
        position = {name: i for i, name in enumerate(post.names)}
        return tuple(ResultColumn(o.name, post.types[position[ColumnRef("output", i).name]]) for i, o in enumerate(outputs))

    def noisy_private(self, compiled: CompiledQuery) -> tuple[bool, ...]:
        """Which output columns of a private query are noisy (no data, no budget)."""
        return tuple(info is not None for info in self._noise(self.state.query(compiled), compiled))

    def describe_post(self, compiled: CompiledPost) -> tuple[tuple[ResultColumn, ...], tuple[bool, ...]]:
        """Output columns of a post-processing query and which are noisy (no data, no budget)."""
        columns = self._outer_columns(compiled, self.state.post(compiled))
        return columns, noisy_outputs(compiled, columns)

    # --- answers ------------------------------------------------------------------------------------
    def public(self, query: PublicQuery) -> NoisyResult:
        """A query over public tables only: exact, no noise, no cost."""
        result = self.calls.run_public(query.tree, query.tables)
        columns = tuple(ResultColumn(n, t) for n, t in zip(result.names, result.types))
        return NoisyResult("public", columns, result.rows, tuple(None for _ in columns),
                           [tuple(None for _ in columns) for _ in result.rows])

    def execute(self, compiled: CompiledQuery) -> NoisyResult:
        """Answer a private query: replayed (execution/replay.py), or through a Median Mechanism
        layer or the plan, and then kept for replay."""
        key = self._replay_key(compiled)
        replayed = self.replays.find(key)
        if replayed is not None:
            return replayed
        result = with_interval_ends(self._execute(compiled))
        self.replays.keep(key, result)
        return result

    def _execute(self, compiled: CompiledQuery) -> NoisyResult:
        taken = self.layers.take(compiled)
        if taken is not None:
            return taken
        state = self.state.query(compiled)
        if not state.dry_runs_passed:
            self.charger.check(compiled.plan.cost)  # fail fast, before the dry runs touch the engine
            self._dry_runs(compiled, state)
        # (A plan whose dry runs passed goes straight to the charge: it checks the budget itself,
        # atomically, and refuses in the same words.)
        if state.charge is None:
            state.charge = query_charge(compiled)
        self.charger.charge_statement(state.charge, compiled.statement.sql)
        # Charged: from here on, nothing is refunded, whatever happens.
        return self._answer(compiled, state)

    def execute_post(self, compiled: CompiledPost) -> NoisyResult:
        """Answer a post-processing query: replayed, or computed (`_execute_post`) and kept."""
        key = self._post_replay_key(compiled)
        replayed = self.replays.find(key)
        if replayed is not None:
            return replayed
        result = with_interval_ends(self._execute_post(compiled))
        self.replays.keep(key, result)
        return result

    def _execute_post(self, compiled: CompiledPost) -> NoisyResult:
        """Answer a post-processing query (execution/post_run.py): budget check, every release's dry
        runs and the outer query over empty released tables, ONE charge for all releases, then each
        release answered as the query on its own would be, and the outer query over their rows."""
        state = self.state.post(compiled)
        self.charger.check(compiled.cost)  # fail fast, without touching the engine
        unknown = unknown_values(compiled)  # scalar subqueries' values: NULL of their type in the dry runs
        for query in compiled.inputs:
            self._dry_runs(query, self.state.query(query), unknown)
        columns = self._outer_columns(compiled, state)
        assert state.tables is not None and state.outer_sql is not None
        releases = len(compiled.inputs)
        public = public_rows(compiled.query, state.tables[releases:], self.calls)  # exact and free; DP129 uncharged
        if state.charge is None:
            state.charge = post_charge(compiled)
        self.charger.charge_statement(state.charge, compiled.statement.sql)
        # Charged: from here on, nothing is refunded, whatever happens.
        raws: list[dict[str, list[Any]]] = []
        # Scalar subqueries' values, read by the releases after them: exact public ones first (free).
        values: dict[str, Any] = {p.name: first_value(p, self.public(p.public)) for p in compiled.query.parameters
                                  if p.public is not None}
        results: list[NoisyResult] = []
        for index, query in enumerate(compiled.inputs):
            results.append(self._answer(query, self.state.query(query), raws, values))
            values.update(scalar_values(compiled, index, results[-1]))
        results = reconciled(compiled, raws, results)  # grouping sets: totals equal their parts (free)
        out = self.released.run([*filled(state.tables[:releases], results), *public], state.outer_sql)
        return post_result(compiled, columns, out.types, out.rows, results)

    # --- the steps -----------------------------------------------------------------------------------
    def _replay_key(self, compiled: CompiledQuery) -> str | None:
        state = self.state.query(compiled)
        if not state.replay_keyed:
            state.replay_key, state.replay_keyed = self.replays.key(compiled.plan), True
        return state.replay_key

    def _post_replay_key(self, compiled: CompiledPost) -> str | None:
        state = self.state.post(compiled)
        if not state.replay_keyed:
            state.replay_key = self.replays.key(compiled.query, tuple(query.plan for query in compiled.inputs))
            state.replay_keyed = True
        return state.replay_key

    def _dry_runs(self, compiled: CompiledQuery, state: QueryState, values: dict[str, Any] | None = None) -> None:
        """Refuse query-only errors before the charge (no data is present in a dry run; `values`:
        the scalar subqueries' parameters, NULL)."""
        if state.dry_runs_passed:
            return
        table = compiled.plan.query.table
        # The statements that will run after the charge, each over empty tables of the same schema.
        # Each with the text that runs after the charge (rendered once, kept in the session's state).
        self.calls.dry_run(table, compiled.engine, with_values(values, compiled.engine, {"seed": 0} if compiled.uses_seed else None),
                           compiled.keyed_columns, state.text(compiled.engine))
        for query in self._robust(compiled, state):  # MEDIAN/IQR/MODE: every statement a read may need
            for select, params in query.statements():
                self.calls.dry_run(table, select, with_values(values, select, params), text=state.text(select))
        if compiled.plan.robust and not compiled.simple_outputs:
            self._dry_run_post(compiled, state)
        state.dry_runs_passed = True

    def _dry_run_post(self, compiled: CompiledQuery, state: QueryState) -> None:
        """Post-processing over an EMPTY noisy table, before the charge: arithmetic the engine cannot
        type (e.g. a number divided by a text MODE) is refused uncharged (DP123)."""
        try:
            self.released.evaluate(*self._post(state, compiled))
            return
        except EngineError:
            pass  # raised below, outside the except block
        raise UnsupportedQueryError("the engine cannot compute this query's outputs from the released values",
                                    code="DP123", hint="check the arithmetic over MEDIAN, IQR and MODE; nothing was charged")

    def _outer_columns(self, compiled: CompiledPost, state: PostState) -> tuple[ResultColumn, ...]:
        """The outer query over empty released tables: its output columns, or DP127 (uncharged)."""
        if state.outer_columns is None:
            if state.tables is None:
                state.tables = released_schemas(compiled, [self.describe_private(query) for query in compiled.inputs]) \
                    + public_schemas(compiled.query, self.calls)  # public tables beside them (no rows yet)
            if state.outer_sql is None:
                state.outer_sql = self.released.render(state.tables, compiled.query.outer)
            result = self.released.check(state.tables, state.outer_sql)
            state.outer_columns = tuple(ResultColumn(n, t) for n, t in zip(result.names, result.types))
        return state.outer_columns

    def _answer(self, compiled: CompiledQuery, state: QueryState, raws: list[dict[str, list[Any]]] | None = None,
                values: dict[str, Any] | None = None) -> NoisyResult:
        """ONLY after the charge: bounded relation, engine statements, release, post-processing, assembly
        (`raws`: where to keep the noisy table, for grouping sets' reconciliation; `values`: the
        scalar subqueries' released values, engine parameters of the statements that read them)."""
        calls = self.calls
        bounded = calls.bounded(compiled.plan.query.table)
        assert bounded
        if compiled.keyed_columns:
            calls.keyed(compiled.plan.query.table, compiled.keyed_columns)
        raw = calls.run(state.text(compiled.engine),
                        with_values(values, compiled.engine, {"seed": self._rng.randbelow(SEED_BOUND)} if compiled.uses_seed else None))
        columns, types = release_rows(compiled, raw, self._rng)
        if raws is not None:
            raws.append(columns)
        if compiled.plan.robust:  # MEDIAN/IQR/MODE: their requests' reads, then a value or ⊥ each
            release_robust_rows(compiled, columns, types, self._robust_reads(compiled, state, values), self._rng)
        # Every aggregate's estimate and interval, once, by its module (execution/assemble.py); the
        # analyst's outputs, HAVING, ORDER BY and LIMIT over them in the released-values database.
        template = self._noise(state, compiled)
        if compiled.simple_outputs:
            return assemble_simple(compiled, columns, types, template)
        table, sql = self._post(state, compiled)
        return assemble_post(compiled, self.released.evaluate(released_table(compiled, columns, table), sql), template)

    def _robust_reads(self, compiled: CompiledQuery, state: QueryState, values: dict[str, Any] | None = None) -> list[dict[GroupKey, Any]]:
        """Each robust request's exact reads over the bounded relation (after the charge). A
        request's secret seeds are drawn first, in request order, as its statements need them."""
        data = []
        for query in self._robust(compiled, state):
            params = {"mode_seed": self._rng.randbelow(SEED_BOUND), "tie_seed": self._rng.randbelow(SEED_BOUND)} if query.seeded else {}
            data.append(self._drive(reads(query, compiled.plan, params), state, values))
        return data

    def _drive(self, steps: Reads, state: QueryState, values: dict[str, Any] | None = None) -> dict[GroupKey, Any]:
        """Run a request's statements one at a time, each answered with its rows; the request
        (backend/sql/robust_sql.reads) decides from them which statement comes next, the executor runs it."""
        select, params = next(steps)
        while True:
            result = self.calls.run(state.text(select), with_values(values, select, params))
            try:
                select, params = steps.send((result.names, result.rows))
            except StopIteration as done:
                read: dict[GroupKey, Any] = done.value
                return read

    def _robust(self, compiled: CompiledQuery, state: QueryState) -> tuple[RobustQuery, ...]:
        if state.robust is None:
            state.robust = compiled.robust_queries_for(state.capabilities) if compiled.plan.robust else ()
        return state.robust

    def _post(self, state: QueryState, compiled: CompiledQuery) -> tuple[ReleasedTable, str]:
        """The released aggregates' table (no rows) and the post-processing SQL over it, rendered once."""
        if state.post is None:
            table = compiled.post_table
            state.post = (table, ReleasedDatabase.render_own(table, compiled.post))
        return state.post

    def _noise(self, state: QueryState, compiled: CompiledQuery) -> tuple[NoiseInfo | None, ...]:
        if state.noise is None:
            state.noise = tuple(plan_noise_info(compiled))
        return state.noise

"""Session: one analyst's connection to private data. Every front end is a thin adapter over it.

Order of a query (fail closed): compile (pure) -> charge the ledger (atomic; raises before any
data is read) -> run engine SQL -> release noise -> post-process -> NoisyResult. A charge is
never refunded, whatever happens after it.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Sequence

from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import Ledger, LedgerEntry
from dpsql.analysis.context import AnalysisContext
from dpsql.analysis.functions import allowed_function_names
from dpsql.backend.duckdb_engine import DuckDBEngine
from dpsql.backend.engine import Engine
from dpsql.catalog.loader import load_policy
from dpsql.catalog.model import Policy, Table
from dpsql.demo.people import ensure_demo
from dpsql.errors import BudgetExhaustedError, EngineError, InterfaceError, UnsupportedQueryError
from dpsql.frontend.params import parameter_types, stand_ins
from dpsql.ir.query import PublicQuery, SetStatement
from dpsql.mechanisms.rng import RandomSource, SeededRandomSource, default_source
from dpsql.mmlayer.layer import MedianMechanismLayers
from dpsql.pipeline import (
    CompiledQuery,
    compile_statement,
    noise_info,
    noisy_types,
    release_robust_rows,
    release_rows,
    simple_rows,
)
from dpsql.result import NoisyResult, ResultColumn
from dpsql.robust import robust_params

DEFAULT_ANALYST = "analyst"
PLAN_CACHE_SIZE = 256


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """Where a session's policy, data and ledger come from."""

    policy: Path
    database: Path | None = None
    analyst: str = DEFAULT_ANALYST
    ledger: Path | None = None


@dataclass(frozen=True, slots=True)
class Description:
    """What a statement returns and takes, known without data or budget (pgwire Describe).

    `parameter_types` holds policy type names ("int", "float", "text", "bool", "date") or None.
    """

    columns: tuple[ResultColumn, ...]
    parameter_types: tuple[str | None, ...]


class Session:
    """A private database session: policy, engine, ledger, randomness and per-session settings."""

    def __init__(self, policy: Policy, engine: Engine, ledger: Ledger, *, analyst: str = DEFAULT_ANALYST,
                 rng: RandomSource | None = None, owns_ledger: bool = True) -> None:
        self.policy = policy
        self._owns_ledger = owns_ledger
        self.analyst = analyst
        self.id = uuid.uuid4().hex[:12]
        self._engine = engine
        self._ledger = ledger
        self._rng = rng if rng is not None else default_source()
        self._lock = threading.RLock()
        self._default = policy.budget.default_query
        self._session_seeds: dict[str, int] = {}
        self._plans: dict[tuple[Any, ...], Any] = {}
        # Plans whose dry run passed, held strongly so an id is never reused while recorded.
        self._dry_run_ok: dict[int, CompiledQuery] = {}
        # Counting queries on tables with a [median_mechanism] policy go to the layer first (DESIGN 6.6).
        self.median_mechanism = MedianMechanismLayers(policy, engine, self._rng, reserve=self._reserve_layer,
                                                      bounded=self._bounded_relation)
        self.closed = False

    # --- budget -----------------------------------------------------------------------------
    @property
    def total_budget(self) -> PrivacyCost:
        """The analyst's whole budget."""
        return self.policy.budget_for(self.analyst)

    @property
    def remaining(self) -> PrivacyCost:
        """What the analyst may still spend (read from the ledger, shared across processes)."""
        return self._ledger.remaining(self.analyst, self.total_budget)

    @property
    def default_query_budget(self) -> PrivacyCost:
        """The (epsilon, delta) a query spends when it names none (SET dpsql.epsilon changes it)."""
        return self._default

    def ledger_entries(self) -> list[LedgerEntry]:
        """This analyst's charges, oldest first."""
        return self._ledger.entries(self.analyst)

    @property
    def spent(self) -> PrivacyCost:
        """What the analyst has spent so far (all sessions of the ledger)."""
        return self._ledger.spent(self.analyst)

    def cost_of(self, sql: str, parameters: Sequence[object] | None = None) -> PrivacyCost:
        """What executing the statement would charge, without data or budget (zero for EXPLAIN, SET, public)."""
        statement, compiled = self.compile(sql, parameters)
        if statement.kind == "explain" or not isinstance(compiled, CompiledQuery):
            return PrivacyCost.zero()
        layer_cost = self.median_mechanism.cost_of(compiled)
        return layer_cost if layer_cost is not None else compiled.plan.cost

    def explain(self, sql: str, parameters: Sequence[object] | None = None) -> NoisyResult:
        """The plan of a statement (with or without a leading EXPLAIN): no data, no budget."""
        self._check_open()
        _, compiled = self.compile(sql, parameters)
        return self._explain(compiled)

    @staticmethod
    def sql_functions() -> Mapping[str, str]:
        """Function names an analyst may call, upper-case, to their kind ("aggregate" or "scalar")."""
        return allowed_function_names()

    # --- statements ---------------------------------------------------------------------------
    def compile(self, sql: str, parameters: Sequence[object] | None = None) -> Any:
        """Parse, analyse and plan without data or budget.

        Compiling is pure in (SQL, parameters, policy, session defaults), so plans are cached:
        a repeated query skips parsing and rendering, never the charge or the noise.
        """
        try:
            key = (sql, tuple(parameters or ()), self._default)
            hash(key)
        except TypeError:
            return compile_statement(sql, parameters, AnalysisContext(self.policy, self._default))
        compiled = self._plans.get(key)
        if compiled is None:
            compiled = compile_statement(sql, parameters, AnalysisContext(self.policy, self._default))
            if len(self._plans) >= PLAN_CACHE_SIZE:
                self._plans.pop(next(iter(self._plans)))
            self._plans[key] = compiled
        return compiled

    def parameter_types(self, sql: str) -> tuple[str | None, ...]:
        """Policy type names of a statement's parameters (None when unknown), from the policy alone."""
        return parameter_types(sql, self.policy)

    def describe(self, sql: str, parameters: Sequence[object] | None = None) -> Description:
        """The output columns and parameter types of a statement. Never runs it, never charges.

        Without parameters, the statement is planned with neutral stand-ins of the inferred
        parameter types (output types do not depend on parameter values); with them, the
        parameter types are not inferred (empty).
        """
        self._check_open()
        types = parameter_types(sql, self.policy) if parameters is None else ()
        with self._lock:
            statement, compiled = self.compile(sql, parameters if parameters is not None else stand_ins(types))
            if statement.kind == "explain":
                columns: tuple[ResultColumn, ...] = (ResultColumn("QUERY PLAN", "VARCHAR"),)
            elif isinstance(compiled, SetStatement):
                columns = ()
            elif isinstance(compiled, PublicQuery):
                result = self._engine.describe_public(compiled.tree, compiled.tables)
                columns = tuple(ResultColumn(n, t) for n, t in zip(result.names, result.types))
            else:
                columns = self._describe_private(compiled)
        return Description(columns, types)

    def _describe_private(self, compiled: CompiledQuery) -> tuple[ResultColumn, ...]:
        outputs = compiled.plan.query.outputs
        names, types = noisy_types(compiled)
        if compiled.simple_outputs:
            return tuple(ResultColumn(o.name, t) for o, t in zip(outputs, types))
        # Post-processing over an EMPTY noisy table: its output types, no data, no release.
        post = self._engine.postprocess({n: [] for n in names}, dict(zip(names, types)), compiled.post)
        position = {name: i for i, name in enumerate(post.names)}
        return tuple(ResultColumn(o.name, post.types[position[f"__o{i}"]]) for i, o in enumerate(outputs))

    def execute(self, sql: str, parameters: Sequence[object] | None = None) -> NoisyResult:
        """Answer one statement. Refusals raise before any charge; a charged query is never refunded."""
        self._check_open()
        with self._lock:
            statement, compiled = self.compile(sql, parameters)
            if statement.kind == "explain":
                return self._explain(compiled)
            if isinstance(compiled, SetStatement):
                return self._set(compiled)
            if isinstance(compiled, PublicQuery):
                return self._public(compiled)
            taken = self.median_mechanism.take(compiled)
            if taken is not None:
                return taken
            return self._answer(compiled)

    def _explain(self, compiled: CompiledQuery | PublicQuery | SetStatement) -> NoisyResult:
        if isinstance(compiled, CompiledQuery):
            lines = compiled.explain_lines(self._engine.dialect, self._engine.capabilities) \
                + self.median_mechanism.explain_lines(compiled)
        elif isinstance(compiled, PublicQuery):
            lines = [f"Query: {compiled.sql}", "Public tables only: runs exactly, no noise, no cost", "Cost: epsilon 0, delta 0"]
        else:
            lines = [f"SET dpsql.{compiled.name}: a session setting, no cost"]
        return NoisyResult("explain", (ResultColumn("QUERY PLAN", "VARCHAR"),), [(line,) for line in lines],
                           (None,), [(None,) for _ in lines])

    def _set(self, statement: SetStatement) -> NoisyResult:
        value = statement.value
        assert isinstance(value, Fraction)
        if statement.name == "epsilon":
            self._default = PrivacyCost(value, self._default.delta)
        else:
            self._default = PrivacyCost(self._default.epsilon, value)
        return NoisyResult("set", (), [], (), [], message=f"SET dpsql.{statement.name} = {float(value):g}")

    def _public(self, query: PublicQuery) -> NoisyResult:
        result = self._engine.run_public(query.tree, query.tables)
        columns = tuple(ResultColumn(n, t) for n, t in zip(result.names, result.types))
        return NoisyResult("public", columns, result.rows, tuple(None for _ in columns),
                           [tuple(None for _ in columns) for _ in result.rows])

    def _reserve_layer(self, query: str, params: dict[str, Any], cost: PrivacyCost) -> None:
        """Charge a Median Mechanism layer's whole reservation: one ledger entry, before any data."""
        self._ledger.charge(analyst=self.analyst, session=self.id, query=query, plan_hash="median-mechanism",
                            mechanism="median_mechanism", params=params, cost=cost, budget=self.total_budget)

    def _bounded_relation(self, table: Table) -> str:
        """The session's bounded relation of a table (its secret seed drawn once per session)."""
        if table.name not in self._session_seeds:
            self._session_seeds[table.name] = self._rng.randbelow(2**62)
        return self._engine.ensure_bounded(table, self._session_seeds[table.name])

    def _dry_run_post(self, compiled: CompiledQuery) -> None:
        """Post-processing over an EMPTY noisy table, before the charge: arithmetic the engine cannot
        type (e.g. a number divided by a text MODE) is refused uncharged (DP123)."""
        names, types = noisy_types(compiled)
        try:
            self._engine.postprocess({n: [] for n in names}, dict(zip(names, types)), compiled.post)
            return
        except EngineError:
            pass  # raised below, outside the except block
        raise UnsupportedQueryError("the engine cannot compute this query's outputs from the released values",
                                    code="DP123", hint="check the arithmetic over MEDIAN, IQR and MODE; nothing was charged")

    def _answer(self, compiled: CompiledQuery) -> NoisyResult:
        plan = compiled.plan
        table = plan.query.table
        if not plan.cost.fits_in(self.remaining):
            # Fail fast without touching the engine; the atomic charge below re-checks anyway.
            remaining = self.remaining
            raise BudgetExhaustedError(
                f"privacy budget exhausted: requested epsilon={float(plan.cost.epsilon):g}, delta={float(plan.cost.delta):g}; "
                f"remaining epsilon={float(remaining.epsilon):g}, delta={float(remaining.delta):g}",
                requested=plan.cost, remaining=remaining,
            )
        if id(compiled) not in self._dry_run_ok:
            # Refuses query-only errors before the charge (no data is present in the dry run).
            self._engine.dry_run(table, compiled.dry_run_engine, {"seed": 0} if compiled.uses_seed else None)
            for select, params in compiled.robust_dry_runs(self._engine.capabilities):  # MEDIAN/IQR/MODE, on the empty table too
                self._engine.dry_run(table, select, params)
            if plan.robust and not compiled.simple_outputs:
                self._dry_run_post(compiled)
            if len(self._dry_run_ok) >= 2 * PLAN_CACHE_SIZE:
                self._dry_run_ok.clear()
            self._dry_run_ok[id(compiled)] = compiled
        self._ledger.charge(
            analyst=self.analyst,
            session=self.id,
            query=compiled.statement.sql,
            plan_hash=compiled.plan_hash,
            mechanism="+".join((["laplace"] if plan.releases else []) + [r.mechanism for r in plan.robust]
                               + (["partition_selection"] if plan.selection else [])) or "laplace",
            params=_ledger_params(compiled),
            cost=plan.cost,
            budget=self.total_budget,
        )
        # Charged: from here on, nothing is refunded, whatever happens.
        if table.name not in self._session_seeds:
            self._session_seeds[table.name] = self._rng.randbelow(2**62)
        seed = self._session_seeds[table.name]
        bounded = self._engine.ensure_bounded(table, seed)
        assert bounded
        engine_sql = compiled.render_once(compiled.engine, self._engine.dialect)
        raw = self._engine.run(engine_sql, {"seed": self._rng.randbelow(2**62)} if compiled.uses_seed else None)
        columns, types = release_rows(compiled, raw, self._rng)
        release_robust_rows(compiled, columns, types, self._engine.run, self._rng,  # MEDIAN/IQR/MODE: value or ⊥
                            self._engine.dialect, self._engine.capabilities)
        if compiled.simple_outputs:
            names, out_types, rows, cells = simple_rows(compiled, columns, types)
            result_columns = tuple(ResultColumn(n, t) for n, t in zip(names, out_types))
            infos = _fill_ci(noise_info(compiled, rows), cells)
            return NoisyResult("query", result_columns, rows, tuple(infos), cells, plan.cost)
        post = self._engine.postprocess(columns, types, compiled.post)
        return _assemble(compiled, post.names, post.types, post.rows)

    # --- lifecycle ----------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.closed:
            raise InterfaceError("the session is closed")

    @property
    def engine_name(self) -> str:
        """The engine that holds the data: 'duckdb' or 'spark'."""
        return self._engine.dialect

    @property
    def engine(self) -> Engine:
        """The session's engine (for progress callbacks and parity checks; it never returns raw rows to analysts)."""
        return self._engine

    def close(self) -> None:
        """Release the engine and the ledger."""
        if not self.closed:
            self.closed = True
            self._engine.close()
            if self._owns_ledger:
                self._ledger.close()


def _ledger_params(compiled: CompiledQuery) -> dict[str, Any]:
    plan = compiled.plan
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


def _assemble(compiled: CompiledQuery, names: tuple[str, ...], types: tuple[str, ...], rows: list[tuple[Any, ...]]) -> NoisyResult:
    outputs = compiled.plan.query.outputs
    position = {name: i for i, name in enumerate(names)}
    columns = tuple(ResultColumn(o.name, types[position[f"__o{i}"]]) for i, o in enumerate(outputs))
    values, cells = [], []
    for row in rows:
        values.append(tuple(row[position[f"__o{i}"]] for i in range(len(outputs))))
        cells.append(tuple(_half_width(row, position, i) for i in range(len(outputs))))
    infos = _fill_ci(noise_info(compiled, values), cells)
    return NoisyResult("query", columns, values, tuple(infos), cells, compiled.plan.cost)


def _fill_ci(infos: list[dict[str, Any] | None], cells: list[tuple[float | None, ...]]) -> list[dict[str, Any] | None]:
    """ci95 of derived columns: one number when equal across rows, else the per-row tuple."""
    for i, info in enumerate(infos):
        if info is not None and info["ci95"] is None and cells:
            widths = {c[i] for c in cells}
            info["ci95"] = widths.pop() if len(widths) == 1 else tuple(c[i] for c in cells)
    return infos


def _half_width(row: tuple[Any, ...], position: Mapping[str, int], i: int) -> float | None:
    if f"__lo{i}" not in position:
        return None
    value, low, high = row[position[f"__o{i}"]], row[position[f"__lo{i}"]], row[position[f"__hi{i}"]]
    if value is None or low is None or high is None:
        return None
    return float(max(high - value, value - low))


ENGINES = ("duckdb", "spark")


def start_spark(master: str | None = None, remote: str | None = None) -> Any:
    """A SparkSession for engine='spark' sessions to share (the server starts one per process)."""
    from dpsql.backend.spark_engine import start_spark as start

    return start(master, remote)


def _engine(policy: Policy, name: str, database: str | Path | None, tables: Mapping[str, Any] | None, spark: Any,
            master: str | None, remote: str | None, progress: Any) -> Engine:
    if name == "duckdb":
        if spark is not None or master is not None or remote is not None:
            raise InterfaceError("spark=, master= and remote= need engine='spark'")
        return DuckDBEngine(policy, database, tables)
    if name == "spark":
        if database is not None:
            raise InterfaceError("database= is a DuckDB file; with engine='spark' name Parquet paths or Spark tables in the policy")
        from dpsql.backend.spark_engine import SparkEngine

        return SparkEngine(policy, spark, master=master, remote=remote, frames=tables, progress=progress)
    raise InterfaceError(f"unknown engine '{name}': use one of {', '.join(ENGINES)}")


def open_session(
    database: str | Path | None = None,
    policy: str | Path | Policy | None = None,
    *,
    analyst: str | None = None,
    ledger: str | Path | Ledger | None = None,
    tables: Mapping[str, Any] | None = None,
    random_seed: int | None = None,
    engine: str = "duckdb",
    spark: Any = None,
    master: str | None = None,
    remote: str | None = None,
    progress: Any = None,
) -> Session:
    """Open a session; with neither database, policy nor tables, the bundled demo.

    `engine="spark"` runs the same plans on Apache Spark: a given SparkSession (`spark=`), or one
    dpsql starts (`master="local[2]"`, `"spark://host:7077"`, or Spark Connect `remote="sc://host"`).
    `progress` receives Spark stage-progress lines during long jobs.
    """
    if policy is None and database is None and not tables:
        policy = ensure_demo()
    if policy is None:
        raise InterfaceError("a policy file is required with a database or tables (policy='policy.toml')")
    loaded = policy if isinstance(policy, Policy) else load_policy(policy)
    runner = _engine(loaded, engine, database, tables, spark, master, remote, progress)
    # A seeded source is for tests and explicitly marked experiments only (DESIGN 8).
    rng = SeededRandomSource(random_seed) if random_seed is not None else None
    if isinstance(ledger, Ledger):
        # A ledger shared by many sessions of one process (the server): its lock serialises
        # charges in-process, and the session must not close it.
        return Session(loaded, runner, ledger, analyst=analyst or DEFAULT_ANALYST, rng=rng, owns_ledger=False)
    return Session(loaded, runner, Ledger(ledger), analyst=analyst or DEFAULT_ANALYST, rng=rng)

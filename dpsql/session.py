"""Session: one analyst's connection to private data. Every front end is a thin adapter over it.

A session holds the connection (policy, ledger, analyst, plan cache) and compiles statements
(pure, cached) into execution.statements.Statement values; its Executor (dpsql.execution) runs
them and keeps the session's state (settings, what it derived from the statements it ran): dry
runs -> charge -> engine -> noise -> post-processing -> NoisyResult, never refunding a charge.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import Ledger, LedgerEntry, open_ledger
from dpsql.accounting.store import is_postgres_url, redact
from dpsql.analysis.context import AnalysisContext
from dpsql.analysis.functions import allowed_function_names
from dpsql.analysis.public_facts import with_source_columns
from dpsql.backend.engines import choice as engines
from dpsql.backend.engines.data_version import data_version
from dpsql.backend.engines.engine import Engine
from dpsql.backend.engines.public_tables import EnginePublicFacts
from dpsql.catalog.loader import load_policy
from dpsql.catalog.policy import Policy
from dpsql.demo.people import ensure_demo
from dpsql.errors import InterfaceError, InvalidOptionError, ProgrammingError
from dpsql.execution.charge import Charger, more_text
from dpsql.execution.executor import Executor
from dpsql.execution.layers import MedianMechanismLayers
from dpsql.execution.probe import check_policy_views
from dpsql.execution.replay import Replays, ReplayScope, policy_version, scope_for
from dpsql.execution.statements import Statement, plan_result, prepare
from dpsql.frontend.params import parameter_types, stand_ins
from dpsql.mechanisms.rng import RandomSource, SeededRandomSource, default_source
from dpsql.result import NoisyResult, ResultColumn

DEFAULT_ANALYST = "analyst"
DEMO_LEDGER = "ledger.sqlite"  # beside the demo's data in the user cache directory
PLAN_CACHE_SIZE = 256
# `SHOW dpsql.<name>`: the same settings in every door (the server adds its connection's dpsql.ci_columns).
SHOW_SETTINGS = ("dpsql.budget", "dpsql.epsilon", "dpsql.delta", "dpsql.remaining", "dpsql.ci_columns", "dpsql.round")
_SHOW = re.compile(r"^\s*SHOW\s+(?P<name>dpsql\.\w+)\s*;?\s*$", re.IGNORECASE)
# The presentation settings a session keeps for its door (nothing charged or noised changes).
_SET_DISPLAY = re.compile(r"^\s*SET\s+dpsql\.(?P<name>ci_columns|round)\s*(?:=|\s+TO\s+)\s*'?(?P<value>\w+)'?\s*;?\s*$",
                          re.IGNORECASE)
_ON, _OFF = frozenset({"on", "true", "yes", "1", "t"}), frozenset({"off", "false", "no", "0", "f", "default"})


@dataclass(frozen=True, slots=True)
class Description:
    """What a statement returns and takes, known without data or budget (pgwire Describe).

    `parameter_types` holds policy type names ("int", "float", "text", "bool", "date") or None;
    `noisy` flags the columns an answer adds noise to (they get a NoiseInfo and a ± interval).
    """

    columns: tuple[ResultColumn, ...]
    parameter_types: tuple[str | None, ...]
    noisy: tuple[bool, ...] = ()


class Session:
    """A private database session: policy, engine, ledger, randomness and per-session settings."""

    def __init__(self, policy: Policy, engine: Engine, ledger: Ledger, *, analyst: str = DEFAULT_ANALYST,
                 rng: RandomSource | None = None, owns_ledger: bool = True, prepare: bool = False, ci_columns: bool = False,
                 replay: ReplayScope | None = None, replay_off: str | None = None, round_values: bool | None = None) -> None:
        self._policy = policy
        # `SET dpsql.ci_columns = on`: front ends that show columns add `<col>_ci95`, `_ci_low`, `_ci_high` after each noisy one.
        self.ci_columns = ci_columns
        # `SET dpsql.round = on | off`: released values rounded to their interval's precision (render.rounded);
        # None: each door's default (rounded where values are displayed: the REPL, the CLI, a
        # notebook's table; exact in fetched rows).
        self.round: bool | None = round_values
        self._owns_ledger = owns_ledger
        self.analyst = analyst
        self.id = uuid.uuid4().hex[:12]
        self._engine = engine
        self._ledger = ledger
        self._lock = threading.RLock()
        self._plans: dict[tuple[Any, ...], Statement] = {}  # compiled statements; see compile
        self._facts = EnginePublicFacts(engine)  # joins read public tables' fan-outs and domains (free)
        # Public tables declared without [columns] take their source's (public: free to read).
        policy = self._policy = with_source_columns(policy, self._facts)
        charger = Charger(ledger, analyst, self.id, policy.budget_for(analyst), policy.budget.accountant)
        # Answers released to this analyst before, given again free (execution/replay.py); `replay`
        # None: off (`replay_off` says why, in EXPLAIN).
        replays = Replays(ledger, analyst, replay, replay_off)
        self._executor = Executor(policy, engine, charger, rng if rng is not None else default_source(), prepare=prepare,
                                  replays=replays)
        self.closed = False

    @property
    def policy(self) -> Policy:
        """The session's policy."""
        return self._policy

    @policy.setter
    def policy(self, policy: Policy) -> None:
        """Another policy (tests; a plan is only valid for the policy it was made for, and the
        analyst's budget is read from it)."""
        self._policy = with_source_columns(policy, self._facts)
        self._plans.clear()
        self._executor.charger.budget = policy.budget_for(self.analyst)
        replays = self._executor.replays
        if replays.scope is not None:  # the new policy's version and window (off when it has none)
            version = policy_version(policy)
            replays.scope = None if version is None or policy.budget.replay_seconds <= 0 else \
                ReplayScope(float(policy.budget.replay_seconds), version, replays.scope.data)

    @property
    def median_mechanism(self) -> MedianMechanismLayers:
        """The session's Median Mechanism layers (public state: status, slots left)."""
        return self._executor.layers

    # --- budget -----------------------------------------------------------------------------
    @property
    def total_budget(self) -> PrivacyCost:
        """The analyst's whole budget."""
        return self.policy.budget_for(self.analyst)

    @property
    def remaining(self) -> PrivacyCost:
        """What the analyst may still spend (read from the ledger, shared across processes)."""
        return self._executor.charger.remaining()

    @property
    def queries_left(self) -> int | None:
        """How many more queries like this session's last charged one fit the remaining budget under
        the policy's accountant (computed from the ledger's costs and the budget: public facts);
        None before the first charge."""
        return self._executor.charger.more()

    @property
    def default_query_budget(self) -> PrivacyCost:
        """The (epsilon, delta) a query spends when it names none (SET dpsql.epsilon changes it)."""
        return self._executor.state.default_budget

    def queries_like(self, cost: PrivacyCost | None) -> int | None:
        """How many more queries of `cost` fit now (None: like the last charged one, `queries_left`)."""
        return self._executor.charger.more(cost)

    def ledger_entries(self) -> list[LedgerEntry]:
        """This analyst's charges, oldest first."""
        return self._ledger.entries(self.analyst)

    @property
    def spent(self) -> PrivacyCost:
        """What the analyst has spent so far (all sessions of the ledger), under the policy's
        accountant: epsilon at the budget's delta (exact sums under "basic")."""
        return self._executor.charger.spent()

    def show(self, name: str) -> str:
        """`SHOW dpsql.<name>`: the default query epsilon or delta, or the remaining budget (with
        how many more queries like the last charged one fit). Public facts: nothing is charged.

        Raises:
            InvalidOptionError: not one of SHOW_SETTINGS (DP120).
        """
        key = name.lower().removeprefix("dpsql.")
        if key == "ci_columns":
            return "on" if self.ci_columns else "off"
        if key == "round":
            return {True: "on", False: "off"}.get(self.round, "on for displayed tables, off for fetched rows")  # type: ignore[arg-type]
        if key in ("epsilon", "delta"):
            return f"{float(getattr(self.default_query_budget, key)):g}"
        if key in ("budget", "remaining"):
            left, remaining, total = self.queries_left, self.remaining, self.total_budget
            return (f"remaining epsilon {float(remaining.epsilon):.6g}, delta {float(remaining.delta):.3g} (of epsilon "
                    f"{float(total.epsilon):.6g}, delta {float(total.delta):.3g})"
                    + (f"; {more_text(left)} more queries like the last fit" if left is not None else ""))
        raise InvalidOptionError(f'unrecognized configuration parameter "{name}"', code="DP120",
                                 hint="dpsql settings: " + ", ".join(SHOW_SETTINGS))

    def cost_of(self, sql: str, parameters: Sequence[object] | None = None) -> PrivacyCost:
        """What executing the statement would charge, without data or budget (zero for EXPLAIN, SET, public)."""
        return self.compile(sql, parameters).cost(self._executor)

    def explain(self, sql: str, parameters: Sequence[object] | None = None) -> NoisyResult:
        """The plan of a statement (with or without a leading EXPLAIN): no data, no budget."""
        self._check_open()
        statement = self.compile(sql, parameters)
        return plan_result(statement.explain(self._executor, statement.parsed.verbose))

    @staticmethod
    def sql_functions() -> Mapping[str, str]:
        """Function names an analyst may call, upper-case, to their kind ("aggregate" or "scalar")."""
        return allowed_function_names()

    # --- statements ---------------------------------------------------------------------------
    def compile(self, sql: str, parameters: Sequence[object] | None = None) -> Statement:
        """Parse, analyse and plan without data or budget.

        Compiling is pure in (SQL, parameters, policy, session defaults), so plans are cached:
        a repeated query skips parsing and rendering, never the charge or the noise. A cached
        plan holds nothing secret or random: the bounded relations' seeds live in the session's
        engine calls, and per-query seeds and noise are drawn at execution, after the charge.
        A statement that reads the clock (now(), current_date) is not cached: each compilation
        reads it again, so a repeat is planned at its own time.
        A compiled statement is immutable; what the session derives from it lives in its executor.
        """
        default = self.default_query_budget
        try:
            key = (sql, tuple(parameters or ()), default)
            hash(key)
        except TypeError:
            return prepare(sql, parameters, AnalysisContext(self.policy, default, facts=self._facts))
        statement = self._plans.get(key)
        if statement is None:
            statement = prepare(sql, parameters, AnalysisContext(self.policy, default, facts=self._facts))
            if statement.parsed.clock is not None:
                return statement  # it read the clock: the next execution reads it again (frontend/clock.py)
            if len(self._plans) >= PLAN_CACHE_SIZE:
                self._plans.pop(next(iter(self._plans)))
            self._plans[key] = statement
        return statement

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
            statement = self.compile(sql, parameters if parameters is not None else stand_ins(types))
            columns, noisy = statement.describe(self._executor)
        return Description(columns, types, noisy)

    def execute(self, sql: str, parameters: Sequence[object] | None = None) -> NoisyResult:
        """Answer one statement. Refusals raise before any charge; a charged query is never refunded."""
        self._check_open()
        shown = _SHOW.match(sql)
        if shown is not None:  # SHOW dpsql.<name>: a session setting, read without the planner
            name = shown.group("name").lower()
            return NoisyResult("show", (ResultColumn(name, "VARCHAR"),), [(self.show(name),)], (None,), [(None,)])
        display = _SET_DISPLAY.match(sql)
        if display is not None:
            name, value = display.group("name").lower(), display.group("value").lower()
            if value not in _ON | _OFF:
                raise InvalidOptionError(f'parameter "dpsql.{name}" requires a Boolean value (on or off)', code="DP120")
            if name == "ci_columns":
                self.ci_columns = self.policy.server.ci_columns if value == "default" else value in _ON
            else:
                self.round = None if value == "default" else value in _ON
            return NoisyResult("set", (), [], (), [], message=f"SET dpsql.{name} = {self.show(name)}")
        with self._lock:
            return self.compile(sql, parameters).run(self._executor)

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

    def interrupt(self) -> None:
        """Stop the statement running now, in the engine or in the released-rows database of
        post-processing queries (called from another thread: the server's statement_timeout)."""
        self._engine.interrupt()
        self._executor.released.interrupt()

    def close(self) -> None:
        """Release the engine and the ledger."""
        if not self.closed:
            self.closed = True
            self._executor.close()
            self._engine.close()
            if self._owns_ledger:
                self._ledger.close()


def open_shared(policy: Policy, database: str | Path | None = None, *, prepare: bool = True) -> Any:
    """One DuckDB database for many sessions of this process (SessionOptions(shared=...)): each
    private table is bounded once for all of them; `prepare` starts bounding the policy's sources
    in the background now. Close it (`.close()`) after every session using it."""
    shared = engines.open_shared(policy, database)
    if prepare:
        engines.prepare_shared(shared)
    return shared


def start_spark(master: str | None = None, remote: str | None = None) -> Any:
    """A SparkSession for engine='spark' sessions to share (the server starts one per process)."""
    return engines.start_spark(master, remote)


@dataclass(frozen=True)
class SessionOptions:
    """How to open a session: the one list of options of `dpsql.connect`, `open_session`, the
    CLI and the pgwire server. With neither database, policy nor tables: the bundled demo.

    `database`: a DuckDB file (engine="duckdb"); `policy`: the policy file or a loaded Policy;
    `analyst`: whose budget is charged; `ledger`: the ledger file, or a Ledger shared by many
    sessions of one process (the server), which the session then does not close; `tables`:
    pandas (or Spark) DataFrames by table name; `random_seed`: reproducible noise, for tests and
    marked experiments only (docs/privacy-model.md); `engine`: "duckdb" or "spark"; with Spark, a given
    SparkSession (`spark`), or one dpsql starts (`master="local[2]"`, `"spark://host:7077"`, or
    Spark Connect `remote="sc://host"`); `progress` receives Spark stage-progress lines;
    `prepare`: start building the bounded relations of the private tables whose source the
    policy names at connect, in the background (the first query waits only for what is left).
    """

    database: str | Path | None = None
    policy: str | Path | Policy | None = None
    analyst: str | None = None
    ledger: str | Path | Ledger | None = None
    tables: Mapping[str, Any] | None = None
    random_seed: int | None = None
    engine: str = "duckdb"
    spark: Any = None
    master: str | None = None
    remote: str | None = None
    progress: Any = None
    prepare: bool = True  # build the policy's bounded relations in the background from connect on
    shared: Any = None  # the process's shared DuckDB database (open_shared; the server), else the session's own
    # `<col>_ci95`, `_ci_low` and `_ci_high` after each noisy one (DB-API, REPL); SET dpsql.ci_columns changes it.
    # None: the policy's `[server] ci_columns` (off unless the data owner turned it on).
    ci_columns: bool | None = None
    # Released values rounded to their interval's precision (SET dpsql.round); None: the door's default.
    round: bool | None = None

    def __post_init__(self) -> None:
        if self.random_seed is not None and not isinstance(self.random_seed, int):
            raise ProgrammingError("random_seed must be an int")

    def open(self) -> Session:
        """A new session with these options."""
        policy = self.policy
        demo_ledger = None
        if policy is None and self.database is None and not self.tables:
            policy = ensure_demo()
            demo_ledger = policy.parent / DEMO_LEDGER  # the demo's budget survives runs (":memory:" for a throwaway one)
        if policy is None:
            raise InterfaceError("a policy file is required with a database or tables (policy='policy.toml')")
        loaded = policy if isinstance(policy, Policy) else load_policy(policy)
        check_policy_views(loaded)  # [views.<name>]: row-level SELECTs over the policy's tables (checked once per policy)
        analyst = self.analyst or DEFAULT_ANALYST
        runner = engines.open_engine(loaded, self.engine, self.database, self.tables, self.spark, self.master, self.remote, self.progress,
                                     engines.analyst_scope(self.shared, analyst))
        # A seeded source is for tests and explicitly marked experiments only (docs/privacy-model.md).
        rng = SeededRandomSource(self.random_seed) if self.random_seed is not None else None
        # Replay (execution/replay.py): off with a seed; in memory for this session alone when the
        # data has no file version (DataFrames, remote sources).
        replay = scope_for(loaded, data_version(loaded, self.database, self.tables, self.engine), rng is not None)
        ci_columns = loaded.server.ci_columns if self.ci_columns is None else self.ci_columns
        # Why EXPLAIN says replay is off (a seeded session, for tests, says nothing).
        off = None if rng is not None else " ([budget] replay_seconds = 0)" if loaded.budget.replay_seconds <= 0 else ""
        try:
            target = choose_ledger(loaded, self.ledger, demo_ledger)
        except InterfaceError:
            runner.close()
            raise
        if isinstance(target, Ledger):
            # A ledger shared by many sessions of one process (the server): its lock serialises
            # charges in-process, and the session must not close it.
            return Session(loaded, runner, target, analyst=analyst, rng=rng, owns_ledger=False, prepare=self.prepare,
                           ci_columns=ci_columns, replay=replay, replay_off=off, round_values=self.round)
        # A path (SQLite), None (in memory) or a postgresql:// URL shared with other processes and hosts.
        return Session(loaded, runner, open_ledger(target), analyst=analyst, rng=rng, prepare=self.prepare, ci_columns=ci_columns,
                       replay=replay, replay_off=off, round_values=self.round)


def choose_ledger(policy: Policy, requested: str | Path | Ledger | None, default: str | Path | None = None) -> str | Path | Ledger | None:
    """The ledger a session charges: the policy's `[budget] ledger` when the data owner fixed one
    (a different one asked for is refused: an analyst must not pick a fresh budget), else the
    one asked for (":memory:" is a throwaway one), else `default` (None: in memory).

    Raises:
        InterfaceError: the policy fixes the ledger and another one was asked for.
    """
    fixed = policy.budget.ledger
    if fixed is None:
        if requested is None:
            return default
        return None if isinstance(requested, str) and requested.strip() == ":memory:" else requested
    if requested is None or isinstance(requested, Ledger):  # a Ledger object: opened by the caller (the server) from this rule
        return fixed if requested is None else requested
    if not _same_ledger(requested, fixed):
        raise InterfaceError(
            f"the policy fixes the budget ledger ([budget] ledger = {redact(fixed)}); another ledger ({redact(requested)}) "
            "is not accepted", hint="omit --ledger (or ledger=): the policy's ledger is used",
        )  # fmt: skip
    return fixed


def _same_ledger(requested: str | Path, fixed: str) -> bool:
    if is_postgres_url(fixed) or is_postgres_url(requested):
        return str(requested).strip() == fixed
    if str(requested).strip() == ":memory:":
        return False
    return Path(requested).expanduser().resolve() == Path(fixed)


def open_session(*args: Any, **kwargs: Any) -> Session:
    """Open a session: `open_session(database=None, policy=None, *, analyst=None, ...)`, the
    fields of SessionOptions in their order."""
    return SessionOptions(*args, **kwargs).open()

"""The backend boundary: one `Engine` (the privacy-relevant logic, identical for every engine) over
a `Backend` (one per engine: register a table, run SQL rendered for its dialect, return Arrow).

The Engine registers the policy's tables as typed source views, caches each table's bounded
relation per session, dry-runs plans on an empty table before the charge, runs plans and
normalises every result to the same Python values whatever the engine, and maps every engine
error to a sanitized dpsql error. Released values (post-processing) and the Median Mechanism's
public domain tables always go to a local DuckDB: they hold no private data, and one engine for
them makes the answers identical across backends.

Why caching the bounded relation keeps privacy intact: the bounded relation keeps, for each
person, at most max_rows of their rows, chosen by a keyed hash of the row and a secret session
seed. For any fixed seed this is a stable transformation: removing one person from the data
removes at most max_rows rows from the relation and changes no other person's rows. Every
answer is a DP mechanism applied to that relation with the sensitivities the planner derives
from max_rows, so the answers of a session compose as DP answers on it for each fixed seed, and
mixing over the secret seed preserves the guarantee. Reusing the relation across queries only
makes their bounding choices agree; it never raises any query's sensitivity.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import hashlib
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sqlglot import exp

from dpsql.analysis.function_arguments import constant_probes
from dpsql.backend.sql.bounding import Step, bounding_steps
from dpsql.backend.sql.engine_dialects import UnknownRelation, render
from dpsql.backend.sql.join_sql import joined_select
from dpsql.backend.sql.plan_sql import (
    TYPE_NAMES,
    UNIT_KEY,
    fixed_point_selects,
    key_heavy_select,
    keyed_select,
    source_select,
)
from dpsql.catalog.policy import Policy, Table
from dpsql.errors import CatalogError, EngineError, UnsupportedQueryError
from dpsql.ir.join import JoinedTable

if TYPE_CHECKING:  # Arrow and numpy are imported where a result needs them, not with the engine
    import numpy
    import pyarrow

ENGINE_FAILED = (
    "the engine failed while computing this answer; the message is withheld because engine "
    "messages can quote private values, and the charge stands"
)
Progress = Callable[[str], None]
DRY_PASSED_MAX = 1024


@dataclass(frozen=True, slots=True)
class EngineResult:
    """Rows from the engine with their column names and (DuckDB-style) type names."""

    names: tuple[str, ...]
    types: tuple[str, ...]
    rows: list[tuple[Any, ...]]


class BackendFailure(Exception):
    """An engine error, reduced to its first line and raised outside the engine's except block
    (so the engine's exception is never kept as __context__). Its text may quote data: only a
    dry run on an empty table may show it."""


class Backend(Protocol):
    """One engine: what differs between DuckDB and Spark, and nothing privacy-relevant."""

    dialect: str
    capabilities: frozenset[str]  # e.g. "reservoir_quantile": DuckDB-only plan shortcuts

    def register(self, table: Table, raw_name: str) -> None:
        """Make the table's data (file, DataFrame, engine table) queryable as `raw_name`."""

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> pyarrow.Table:
        """Run SQL rendered for this dialect; BackendFailure on any engine error."""

    def check(self, sql: str, params: Mapping[str, Any] | None = None) -> None:
        """Run SQL like `execute` and drop its (empty or one-row) result: a dry run or a probe,
        where only whether the engine fails matters."""

    def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> RawRows | pyarrow.Table:
        """Run SQL like `execute`; the result as plain rows with the engine's type names where
        `normalise_rows` gives exactly what `normalise` gives for its Arrow form, else as Arrow.
        (Per-query cost: DuckDB's Arrow conversion takes longer than a small aggregate itself.)"""

    def materialize(self, name: str, select: exp.Expr, params: Mapping[str, Any] | None = None, *, view: bool = False,
                    shared: bool = False) -> None:
        """Keep a SELECT as the session relation `name`: computed once, or a view (BackendFailure on
        error); `shared`: a relation of the process's shared database (SharedRelations), only
        asked of a backend opened with one."""

    def schema(self, name: str) -> pyarrow.Schema:
        """Column names and Arrow types of a registered relation."""

    def refusal(self, tree: exp.Expr) -> str | None:
        """Why this engine refuses a plan before the charge (it could fail on data), or None."""

    def interrupt(self) -> None:
        """Stop the statement running now (called from another thread; a no-op when idle)."""

    def close(self) -> None:
        """Drop the session's relations and release the engine."""


class SharedRelations(Protocol):
    """Relations built once for every session of a process (backend/engines/shared_duckdb.py)."""

    def seed(self, name: str) -> int:
        """The relation's secret seed, drawn once from the OS CSPRNG."""

    def has(self, name: str) -> bool:
        """Whether the relation is built."""

    def once(self, name: str, build: Callable[[], None]) -> None:
        """Run `build` unless the relation is built (one builder at a time; a failure leaves it unbuilt)."""


class ReleasedValues(Protocol):
    """Where public domain tables live (a local DuckDB, backend/engines/local_duckdb.py, for every engine):
    never private rows. Released values are post-processed apart, in backend/auxiliary/released_db.py."""

    def ensure_public_table(self, name: str, create: exp.Create) -> str:
        """Create a session table of public rows once."""

    def public_arrays(self, select: exp.Expr) -> dict[str, numpy.ndarray] | None:
        """Columns of a query over public tables; None when the query is rejected."""

    def reference_check(self, relations: Mapping[str, exp.Select], select: exp.Expr, params: Mapping[str, Any] | None,
                        names: Mapping[str, str]) -> str | None:
        """DuckDB's error text for `select` over empty stand-ins of `relations`, or None (another engine's dry run)."""

    def close(self) -> None:
        """Release the local database if owned."""


def source_name(table: Table) -> str:
    """The view that exposes a policy table's declared columns with their declared types."""
    return f"__dpsql_source_{table.name}"


def raw_name(table: Table) -> str:
    """The backend's registration of a table's data as stored (before the typed view)."""
    return f"__dpsql_raw_{table.name}"


def empty_name(table: Table) -> str:
    """An empty table with the bounded relation's schema, for dry runs before the charge."""
    return f"__dpsql_empty_{table.name}"


def bounded_name(table: Table) -> str:
    """The session's cached bounded relation of a private table."""
    return f"__dpsql_bounded_{table.name}"


def bounded_heavy_name(table: Table) -> str:
    """The persons with more than max_rows rows (plan_sql.row_heavy_select), computed once per session."""
    return f"{bounded_name(table)}_heavy"


def keyed_name(table: Table, keys: tuple[str, ...]) -> str:
    """The session's keyed relation of a table for one grouping-column set (plan_sql.keyed_select).
    A query may lower max_groups (OPTIONS (max_groups_contributed = k)): its relation keeps fewer
    keys per person, so the name holds max_groups: a relation is never read under another limit."""
    digest = hashlib.sha256("\x00".join(keys).encode()).hexdigest()[:16]
    return f"__dpsql_keyed_{table.name}_{digest}_g{table.max_groups}"


def empty_keyed_name(table: Table) -> str:
    """An empty keyed relation (the bounded schema plus the person-key flag), for dry runs."""
    return f"__dpsql_empty_keyed_{table.name}"


def reference_relations(table: Table) -> dict[str, exp.Select]:
    """A table's dry-run relations built from the policy alone, no rows: the bounded relation's
    columns (the policy's types, as the typed source view casts them, then the prepared
    fixed-point columns) under empty_name, and the keyed relation's (plus the person-key flag)
    under empty_keyed_name. For a database that holds nothing else (DuckDB's dry runs, Spark's
    reference check)."""
    typed = exp.select(*[exp.alias_(exp.cast(exp.Null(), TYPE_NAMES[c.type]), c.name, quoted=True)
                         for c in table.columns.values()]).limit(0)
    prepared = fixed_point_selects(table)
    empty = exp.select("*", *prepared).from_(typed.subquery("__dry")) if prepared else typed
    keyed = exp.select("*", exp.alias_(exp.false(), UNIT_KEY, quoted=True)).from_(empty.copy().subquery("__dry_keyed"))
    return {empty_name(table): empty, empty_keyed_name(table): keyed}


# --- the result normaliser -------------------------------------------------------------------------

@functools.cache
def _arrow_types() -> tuple[tuple[Callable[[pyarrow.DataType], bool], str], ...]:
    import pyarrow.types as t  # on the first Arrow result (most DuckDB results come as plain rows)

    return (
        (t.is_boolean, "BOOLEAN"),
        (t.is_int8, "TINYINT"),
        (t.is_int16, "SMALLINT"),
        (t.is_int32, "INTEGER"),
        (t.is_int64, "BIGINT"),
        (t.is_uint64, "UBIGINT"),
        (t.is_float32, "FLOAT"),
        (t.is_float64, "DOUBLE"),
        (t.is_date, "DATE"),
        (t.is_timestamp, "TIMESTAMP"),
        (lambda x: t.is_string(x) or t.is_large_string(x) or t.is_string_view(x), "VARCHAR"),
        (t.is_null, "NULL"),
    )


def type_name(arrow_type: pyarrow.DataType) -> str:
    """The DuckDB-style name of an Arrow type (integral DECIMAL(38, 0) is HUGEINT: exact sums)."""
    import pyarrow.types as t

    if t.is_decimal(arrow_type):
        return "HUGEINT" if arrow_type.scale == 0 and arrow_type.precision >= 38 else f"DECIMAL({arrow_type.precision},{arrow_type.scale})"
    if t.is_list(arrow_type) or t.is_large_list(arrow_type):
        return f"{type_name(arrow_type.value_type)}[]"
    return next((name for test, name in _arrow_types() if test(arrow_type)), str(arrow_type).upper())


def _integral(arrow_type: pyarrow.DataType) -> bool:
    """Integral decimals (DuckDB HUGEINT, Spark DECIMAL(38, 0) sums) come back as Python ints, so
    both engines' exact aggregates compare equal and the noise sees an int."""
    import pyarrow.types as t

    if t.is_list(arrow_type) or t.is_large_list(arrow_type):
        return _integral(arrow_type.value_type)
    return bool(t.is_decimal(arrow_type) and arrow_type.scale == 0)


def _python(value: Any) -> Any:
    if isinstance(value, list):
        return [_python(v) for v in value]
    return int(value) if isinstance(value, decimal.Decimal) else value


_DECLARED: dict[str, Callable[[Any], Any]] = {
    "BIGINT": int, "HUGEINT": int, "INTEGER": int, "DOUBLE": float, "VARCHAR": str, "BOOLEAN": bool,
    "DATE": lambda v: v if isinstance(v, datetime.date) else datetime.date.fromisoformat(str(v)),
}


def normalise(table: pyarrow.Table, declared: Sequence[str | None] | None = None) -> EngineResult:
    """Rows of an engine's Arrow result as plain Python values, cast to `declared` types if given.

    Every engine's output passes here, so HUGEINT/DECIMAL(38, 0)/INT32 differences never reach
    the DP layer: an exact aggregate is an int, a key is the policy type's Python value.
    """
    names = tuple(table.column_names)
    types = [type_name(field.type) for field in table.schema]
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    for i, values in enumerate(columns):
        target = declared[i] if declared is not None and i < len(declared) else None
        convert = _DECLARED.get(target) if target else None
        if target is not None and convert is not None:
            columns[i] = [None if v is None else convert(v) for v in values]
            types[i] = target
        elif _integral(table.schema.field(i).type):
            columns[i] = [None if v is None else _python(v) for v in values]
    rows = list(zip(*columns)) if columns else []
    return EngineResult(names, tuple(types), rows)


# --- the engine ------------------------------------------------------------------------------------

# One row of public values per policy type, for dry runs on engines that check constants late.
_DUMMY: dict[str, exp.Expr] = {
    "int": exp.Literal.number(1), "float": exp.Literal.number("1.5"), "text": exp.Literal.string("a"),
    "bool": exp.true(), "date": exp.Literal.string("2000-01-01"),
    "timestamp": exp.Literal.string("2000-01-01 00:00:00"),
}


# DuckDB type names whose plain Python values (DB-API fetchall) are exactly what `normalise` makes
# of the same column through Arrow (DECIMAL(p, s) and lists of these are handled apart): a
# backend returns plain rows only when every column has one of them (checked before fetching).
# DATE and TIMESTAMP are not among them: DuckDB's ±infinity become date.max/min as rows but fail
# in Arrow's conversion, so they keep the Arrow path.
ROW_TYPES = frozenset({"BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UBIGINT", "DOUBLE", "VARCHAR"})
_DECIMAL = re.compile(r"DECIMAL\((\d+),(\d+)\)")


@dataclass(frozen=True, slots=True)
class RawRows:
    """A result as the engine's DB-API gives it: names, the engine's type names, rows."""

    names: tuple[str, ...]
    types: tuple[str, ...]
    rows: list[tuple[Any, ...]]


def row_type(engine_type: str) -> tuple[str, bool] | None:
    """(the name `type_name` gives the same column's Arrow type, whether its values are integral
    decimals to turn into ints), or None when plain rows of this type are not known to match."""
    if engine_type in ROW_TYPES:
        return engine_type, False
    if engine_type.endswith("[]"):
        inner = row_type(engine_type[:-2])
        return None if inner is None else (f"{inner[0]}[]", inner[1])
    match = _DECIMAL.fullmatch(engine_type)
    if match is None:
        return None
    precision, scale = int(match.group(1)), int(match.group(2))
    return ("HUGEINT" if scale == 0 and precision >= 38 else engine_type), scale == 0


def normalise_rows(raw: RawRows, declared: Sequence[str | None] | None = None) -> EngineResult:
    """`normalise` for plain rows (RawRows of ROW_TYPES, DECIMAL and lists of them): the same names,
    type names and Python values as the Arrow path."""
    kinds = [row_type(t) for t in raw.types]
    if any(k is None for k in kinds):
        raise ValueError("plain rows of a type without a known Arrow equivalent")
    types = [k[0] for k in kinds if k is not None]
    converters: list[Callable[[Any], Any] | None] = []
    for i, kind in enumerate(kinds):
        assert kind is not None
        target = declared[i] if declared is not None and i < len(declared) else None
        convert = _DECLARED.get(target) if target else None
        if convert is not None and target is not None:
            types[i] = target
        converters.append(convert if convert is not None else (_python if kind[1] else None))
    rows = raw.rows
    if any(c is not None for c in converters):
        rows = [tuple(v if c is None or v is None else c(v) for c, v in zip(converters, row)) for row in rows]
    return EngineResult(raw.names, tuple(types), rows)


def _sanitized(action: Callable[[], Any], error: Callable[[], Exception]) -> Any:
    """action(), with a BackendFailure replaced by error(). Raised outside the except block: never
    chain the engine's exception, not even as __context__ (which `raise ... from None` still sets),
    because its text can quote private values."""
    failed = False
    try:
        return action()
    except BackendFailure:
        failed = True
    if failed:
        raise error()


class Engine:
    """The privacy-relevant engine logic over one Backend; the private data stays in the backend."""

    def __init__(self, policy: Policy, backend: Backend, local: ReleasedValues, shared: SharedRelations | None = None) -> None:
        self._policy = policy
        self.backend = backend
        self.shared = shared  # the process's shared bounded and keyed relations (the server), else None
        self.local = local  # released values and public domain tables only
        self._lock = threading.RLock()
        self._relations: set[str] = set()
        self._dry_passed: set[tuple[str, tuple[tuple[str, str], ...]]] = set()  # dry-run texts that passed (see dry_run)

    @property
    def dialect(self) -> str:
        """The sqlglot dialect engine SQL is rendered in."""
        return self.backend.dialect

    @property
    def capabilities(self) -> frozenset[str]:
        """Engine-specific plan shortcuts the planner may use."""
        return self.backend.capabilities

    def has_relation(self, name: str) -> bool:
        """Whether this session already holds the relation, or the shared database does (no data
        read; for EXPLAIN)."""
        return name in self._relations or (self.shared is not None and self.shared.has(name))

    def render(self, expression: exp.Expr) -> str:
        """Engine SQL text for this engine."""
        return render(expression, self.dialect)

    # --- sources and bounded relations ---------------------------------------------------------
    def ensure_source(self, table: Table) -> str:
        """Register the table and create its typed source view once per session; return the view."""
        with self._lock:
            name = source_name(table)
            if name not in self._relations and isinstance(table, JoinedTable):
                # A join's rows: its private parts' bounded relations (built first by the caller,
                # with their own seeds) and its public tables' sources (ir/join.py: why bounded).
                assert all(bounded_name(t) in self._relations for t in table.private_parts)
                select = joined_select(table, self._join_relations(table, bounded_name))
                self._private(lambda: self.backend.materialize(name, select, view=True))
                self._relations.add(name)
            if name not in self._relations:
                self.backend.register(table, raw_name(table))
                select = source_select(table, exp.to_identifier(raw_name(table), quoted=True))
                self._setup(lambda: self.backend.materialize(name, select, view=True))
                self._check_source(name, table)
                self._relations.add(name)
            return name

    def _setup(self, action: Callable[[], Any]) -> Any:
        return _sanitized(action, lambda: CatalogError("could not open the data source", code="DP002"))

    def _check_source(self, name: str, table: Table) -> None:
        # Binding a LIMIT 0 query checks that every declared column exists, without reading data.
        probe = exp.select("*").from_(exp.to_identifier(name, quoted=True)).limit(0)
        failed = False
        try:
            self.backend.check(self.render(probe))
        except BackendFailure:
            failed = True
        if failed:
            raise CatalogError(f"table '{table.name}': the data source lacks a column declared in the policy", code="DP002")

    def ensure_bounded(self, table: Table, seed: int) -> str:
        """Materialise the bounded relation of a private table once per session (see module doc)."""
        with self._lock:
            name = bounded_name(table)
            if name not in self._relations:
                source = self.ensure_source(table)
                steps = bounding_steps(table, source, name, bounded_heavy_name(table))
                self._build(name, steps, seed)
                self._relations.add(name)
            return name

    def prepare_dry_runs(self) -> None:
        """Open what the dry runs need before the first query (a background preparation calls it;
        nothing here by default)."""

    def _build(self, name: str, steps: Sequence[Step], seed: int) -> None:
        """Run a relation's steps; with a shared database, once for every session, with the
        shared relation's own seed (backend/engines/shared_duckdb.py: why that is private)."""
        shared = self.shared
        if shared is None:
            for step in steps:
                # On private data: errors come back sanitized, never as setup errors.
                self._private(functools.partial(self._run_step, step, seed, shared=False))
            return

        def build() -> None:
            for step in steps:
                self._private(functools.partial(self._run_step, step, shared.seed(name), shared=True))

        shared.once(name, build)

    def _run_step(self, step: Step, seed: int, *, shared: bool) -> None:
        params = {"seed": seed} if step.seeded else None
        if step.table is not None:
            self.backend.materialize(step.table, step.sql, params, shared=shared)
        else:
            self.backend.check(self.render(step.sql), params)

    def ensure_keyed(self, table: Table, keys: tuple[str, ...], bounded_seed: int, seed: int) -> str:
        """Materialise the keyed relation of a table and grouping-column set once per session: the
        bounded relation with each person's kept keys flagged (plan_sql.keyed_select: why it is private)."""
        with self._lock:
            name = keyed_name(table, keys)
            if name not in self._relations:
                bounded = self.ensure_bounded(table, bounded_seed)
                heavy = f"{name}_heavy"
                # Two steps: as one statement, DuckDB 2.0 plans the persons' subquery 4x slower.
                self._build(name, (Step(key_heavy_select(table, bounded, keys), heavy),
                                   Step(keyed_select(table, bounded, keys, heavy), name, seeded=True)), seed)
                self._relations.add(name)
            return name

    def dry_run(self, table: Table, select: exp.Expr, params: Mapping[str, Any] | None = None, keys: tuple[str, ...] = (),
                text: str | None = None) -> None:
        """Run a plan's statement against empty tables of the same schema, before any charge.

        `select` is the statement as it runs after the charge: over the session's bounded relation
        of `table` (or its keyed relation of `keys`); `text`, when the caller has it, is its
        rendered SQL (the text that runs after the charge). The statement runs over empty
        stand-ins of those relations (`_dry_text`: how each engine gets them); a statement that
        reads any other session relation is refused here (fail closed: a dry run never reads
        data). Errors that depend only on the query (a type mismatch, an invalid regular
        expression) surface with no data present, so the query is refused before it is charged
        (docs/privacy-model.md). A text that passed once passes again (same schema, no data):
        it is not run twice in a session.
        """
        with self._lock:
            reason = self.backend.refusal(select)
            if reason is not None:
                raise UnsupportedQueryError(f"the engine rejects this query: {_strip_class(reason)}", code="DP123",
                                            hint="rewrite the expression named above; nothing was charged")
            self._probe_constants(select)
            dry, check = self._dry_text(table, select, keys, text)
            if dry is None:
                raise EngineError("a dry run met a relation it has no empty stand-in for; nothing was charged", code="DP300")
            passed = (dry, tuple(sorted((k, repr(v)) for k, v in (params or {}).items())))
            if passed in self._dry_passed:
                return
            message = None
            try:
                check(dry, dict(params or {}))
            except BackendFailure as failure:
                # No row exists in the tables it reads, so the engine's text cannot quote private data.
                message = engine_reason(failure)
            if message is not None:
                raise UnsupportedQueryError(f"the engine rejects this query: {message}", code="DP123",
                                            hint="fix the expression named above; nothing was charged")
            if len(self._dry_passed) >= DRY_PASSED_MAX:
                self._dry_passed.clear()
            self._dry_passed.add(passed)

    def _dry_text(self, table: Table, select: exp.Expr, keys: tuple[str, ...],
                  text: str | None) -> tuple[str | None, Callable[[str, dict[str, Any]], None]]:
        """The dry run's text and how to run it (None: it reads a session relation without a
        stand-in). Here: the statement rendered again with the session relations replaced by
        empty tables of the same schema on the engine's own connection."""
        name = self._empty(table)
        keyed = empty_keyed_name(table)
        if keyed not in self._relations:
            flagged = exp.select("*", exp.alias_(exp.false(), UNIT_KEY, quoted=True)).from_(exp.to_identifier(name, quoted=True))
            self._setup(lambda: self.backend.materialize(keyed, flagged, view=True))
            self._relations.add(keyed)
        relations = {bounded_name(table): name, name: name, keyed: keyed}
        if keys:
            relations[keyed_name(table, keys)] = keyed
        try:
            return render(select, self.dialect, relations), self.backend.check
        except UnknownRelation:
            return None, self.backend.check

    def _probe_constants(self, select: exp.Expr) -> None:
        """Evaluate each pattern or format function once, bare (not inside TRY), on a constant
        input: an invalid constant pattern, format or escape fails here on every engine and every
        release, whatever TRY catches (it catches an invalid regular expression on DuckDB 2.0.1).
        No data is read, so the engine's text may be shown."""
        probes = constant_probes(select)
        if not probes:
            return
        probe = exp.select(*(exp.alias_(p, f"__probe{i}", quoted=True) for i, p in enumerate(probes)))
        message = None
        try:
            self.backend.check(self.render(probe))
        except BackendFailure as failure:
            message = engine_reason(failure)
        if message is not None:
            raise UnsupportedQueryError(f"the engine rejects this query: {message}", code="DP123",
                                        hint="fix the pattern or format named above; nothing was charged")

    def _join_relations(self, table: JoinedTable, private: Callable[[Table], str]) -> dict[str, str]:
        """The session relation of each table a join reads: `private(t)` for a private table, the
        typed source view for a public one (read exactly)."""
        found = {t.name: private(t) for t in table.private_parts}
        found.update({t.name: self.ensure_source(t) for t in table.public_tables})
        return found

    def _empty(self, table: Table) -> str:
        name = empty_name(table)
        if name not in self._relations:
            self._setup(lambda: self.backend.materialize(name, self._dry_relation(table)))
            self._relations.add(name)
        return name

    def _dry_relation(self, table: Table) -> exp.Select:
        """The dry-run table: empty where the engine checks constants when it binds the query
        (DuckDB), else one row of public dummy values (Spark compiles a constant pattern or format
        only at its first row). Never a row of the data. A join's dry-run table is its join over
        its parts' dry-run tables: the join SQL itself is checked before the charge."""
        dry: exp.Select
        if isinstance(table, JoinedTable):
            joined = joined_select(table, self._join_relations(table, self._empty))
            dry = exp.select("*").from_(joined.subquery("__joined")).limit(0) if "bind_time_checks" in self.capabilities else joined
        elif "bind_time_checks" in self.capabilities:
            dry = exp.select("*").from_(exp.to_identifier(self.ensure_source(table), quoted=True)).limit(0)
        else:
            dry = exp.select(*[exp.alias_(exp.cast(_DUMMY[c.type], TYPE_NAMES[c.type]), c.name, quoted=True) for c in table.columns.values()])
        prepared = fixed_point_selects(table)  # the bounded relation's columns, in its order
        return exp.select("*", *prepared).from_(dry.subquery("__dry")) if prepared else dry

    # --- running plans ---------------------------------------------------------------------------
    def _private(self, action: Callable[[], Any]) -> Any:
        return _sanitized(action, lambda: EngineError(ENGINE_FAILED, code="DP300"))

    def arrow(self, select: exp.Expr | str, params: Mapping[str, Any] | None = None) -> pyarrow.Table:
        """A plan's result as Arrow, exactly as the engine returned it (errors sanitized)."""
        sql = select if isinstance(select, str) else self.render(select)
        with self._lock:
            return self._private(lambda: self.backend.execute(sql, dict(params or {})))

    def run(self, select: exp.Expr | str, params: Mapping[str, Any] | None = None,
            declared: Sequence[str | None] | None = None) -> EngineResult:
        """Run a plan's engine SQL (an expression or its text in this dialect), normalised."""
        sql = select if isinstance(select, str) else self.render(select)
        with self._lock:
            raw = self._private(lambda: self.backend.rows(sql, dict(params or {})))
        return normalise_rows(raw, declared) if isinstance(raw, RawRows) else normalise(raw, declared)

    def private_arrays(self, select: exp.Expr, params: Mapping[str, Any] | None = None) -> dict[str, numpy.ndarray]:
        """Columns of a query over private data as arrays; engine errors come back sanitized."""
        import numpy  # the Median Mechanism's histograms only

        table = self.arrow(select, params)
        return {name: numpy.asarray(table.column(name).to_numpy(zero_copy_only=False)) for name in table.column_names}

    # --- public tables -----------------------------------------------------------------------------
    def run_public(self, tree: exp.Expr, tables: tuple[Table, ...]) -> EngineResult:
        """Run a query over public tables only, exactly (in this engine's dialect)."""
        with self._lock:
            rewritten = tree.copy()
            named = {t.name: t for t in tables}  # the analysis's tables (public columns read from a source included)
            for node in list(rewritten.find_all(exp.Table)):
                table = named.get(node.name.lower()) or self._policy.table(node.name)
                assert table is not None and table.public
                # Keep the name the query uses (its alias, else the table name) so `b.name` still binds.
                alias = node.args.get("alias")
                alias = alias.copy() if alias is not None else exp.TableAlias(this=node.this.copy())
                node.replace(exp.Table(this=exp.to_identifier(self.ensure_source(table), quoted=True), alias=alias))
            return self.run(rewritten)

    def describe_public(self, tree: exp.Expr, tables: tuple[Table, ...]) -> EngineResult:
        """Column names and types of a public query, with no rows (LIMIT 0)."""
        assert isinstance(tree, exp.Query)  # a public query is a SELECT or a set operation
        return self.run_public(exp.select("*").from_(tree.subquery("__dpsql_describe")).limit(0), tables)

    # --- public domains: the local DuckDB --------------------------------------------------------------
    def ensure_public_table(self, name: str, create: exp.Create) -> str:
        """Create a session table that holds public rows only (the Median Mechanism domain), once."""
        return self.local.ensure_public_table(name, create)

    def public_arrays(self, select: exp.Expr) -> dict[str, numpy.ndarray] | None:
        """Columns of a query over public session tables; None when DuckDB rejects the query."""
        return self.local.public_arrays(select)

    def interrupt(self) -> None:
        """Ask the backend to stop the statement it runs now (the server's statement_timeout; from
        another thread, so without the engine's lock). The statement then fails sanitized."""
        self.backend.interrupt()

    def close(self) -> None:
        """Close the backend and the local DuckDB (session relations vanish with them)."""
        with self._lock:
            self.backend.close()
            self.local.close()


_ERROR_CLASS = re.compile(r"^\s*(?:[A-Z][A-Za-z]*\s)*?(?:[A-Z][A-Za-z]*\s)?Error:\s*")


def _strip_class(message: str) -> str:
    """The engine's reason without its own error class ("Invalid Input Error: ") or later lines:
    what the analyst must fix, in words that do not name the engine."""
    first = message.strip().splitlines()[0] if message.strip() else "the query is not valid"
    return _ERROR_CLASS.sub("", first).replace("DuckDB", "the engine").replace("duckdb", "the engine")


def engine_reason(failure: BaseException) -> str:
    """A data-free engine failure (a dry run, a constant probe) as a reason to show the analyst."""
    return _strip_class(str(failure))

"""The policy as frozen values: budget, tables, columns, analysts.

Everything here is public: it comes from the policy file, never from data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from fractions import Fraction
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Literal

from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.filters import DEFAULT_FILTER, FilterName

ColumnType = Literal["int", "float", "text", "bool", "date", "timestamp"]
# The noise families a policy or a query may name for COUNT/SUM/AVG releases (`noise = ...`; the
# mechanisms of those names: dpsql/mechanisms/registry.noise_spec), and what a halted Median
# Mechanism layer does next (`after_halt`).
NOISES = ("laplace", "gaussian")
AFTER_HALT = ("laplace", "refuse", "renew")
# The engine type of each policy column type (engine SQL casts, released values' types).
ENGINE_TYPES: dict[str, str] = {"int": "BIGINT", "float": "DOUBLE", "text": "VARCHAR", "bool": "BOOLEAN", "date": "DATE",
                                "timestamp": "TIMESTAMP"}
COLUMN_TYPES: tuple[str, ...] = ("int", "float", "text", "bool", "date", "timestamp")
Scalar = int | float | str | bool | date | datetime


@dataclass(frozen=True, slots=True)
class Column:
    """One declared column: its type, public bounds and public domain."""

    name: str
    type: ColumnType
    lower: Fraction | None = None
    upper: Fraction | None = None
    values: tuple[Scalar, ...] | None = None
    precision: Fraction | None = None
    # `identifier`: the column identifies rows held by one person (an order key): GROUP BY it would
    # release per-person values (DP140). A name ("order") says what it identifies: columns naming
    # the same identifier in tables of one unit hold the same keys, so equating them joins rows
    # of one person (the join adds the unit equality that enforces it).
    identifier: str | None = None

    @property
    def bounded(self) -> bool:
        """Whether the column may be summed, averaged or ranked."""
        return self.lower is not None and self.upper is not None

    @property
    def public_domain(self) -> bool:
        """Whether every key of a GROUP BY on it is released (empty groups too)."""
        return self.values is not None

    @property
    def numeric(self) -> bool:
        """Whether arithmetic aggregates apply."""
        return self.type in ("int", "float")

    def bound_text(self, value: Fraction, number: Callable[[Fraction], str] | None = None) -> str:
        """A bound as a person reads it: an ISO date (`2020-01-01`) or date-time (`2024-01-31T00:00:00`)
        for date and timestamp columns (stored as day numbers and seconds since 1970), else
        `number(value)` (default: an integer, or up to 10 significant digits)."""
        if self.type == "date":
            return date.fromordinal(int(value)).isoformat()
        if self.type == "timestamp":
            return (datetime(1970, 1, 1) + timedelta(seconds=float(value))).isoformat()
        if number is not None:
            return number(value)
        return str(value.numerator) if value.denominator == 1 else f"{float(value):.10g}"

    def bounds_text(self, number: Callable[[Fraction], str] | None = None) -> str | None:
        """`[lower, upper]` with `bound_text`, or None without bounds."""
        if self.lower is None or self.upper is None:
            return None
        return f"[{self.bound_text(self.lower, number)}, {self.bound_text(self.upper, number)}]"

    def grid(self) -> Fraction:
        """The public fixed-point grid width on which sums of this column are computed.

        Integers sum on the unit grid. Floats use `precision` when declared, else the power of
        two giving about 2^30 steps up to the largest bound, so each clamped value fits in 32
        bits and a HUGEINT sum is exact for any table size.
        """
        if self.type == "int":
            return Fraction(1)
        if self.precision is not None:
            return self.precision
        magnitude = max(abs(self.lower or Fraction(0)), abs(self.upper or Fraction(0)), Fraction(1))
        exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length() - 30
        return Fraction(2) ** exponent


MMMode = Literal["pure", "zcdp"]
MMDomainKind = Literal["values", "bins", "range"]


@dataclass(frozen=True, slots=True)
class MMColumnDomain:
    """The finite domain of one column enabled for the Median Mechanism layer (public).

    `values`: the declared values (or false/true for a bool column); `bins`: half-open numeric
    bins [e_i, e_(i+1)) from the declared edges, values below the first edge counted in the first
    bin and values at or above the last edge in the last bin; `range`: every integer of the
    declared [lower, upper], values outside clamped to the nearest bound. Every domain has one
    more cell, code `size - 1`, for NULL (and NaN, and text values outside the declared list).
    """

    column: str
    type: ColumnType
    kind: MMDomainKind
    values: tuple[Scalar, ...] = ()
    edges: tuple[Fraction, ...] = ()

    @property
    def size(self) -> int:
        """Number of cells, the NULL cell included."""
        return (len(self.edges) - 1 if self.kind == "bins" else len(self.values)) + 1

    @property
    def null_code(self) -> int:
        """The code of the NULL cell (the last one)."""
        return self.size - 1


@dataclass(frozen=True, slots=True)
class MedianMechanismConfig:
    """`[tables.<t>.median_mechanism]`: the layer's domain X, budget and behaviour (all public)."""

    domains: tuple[MMColumnDomain, ...]
    epsilon: Fraction
    accuracy: Fraction
    mode: MMMode = "pure"
    delta: Fraction = Fraction(0)
    beta: Fraction = Fraction(1, 20)
    candidates: int = 9
    expected_queries: int | None = None
    min_hard_slots: int | None = None  # None: decided from public facts (LayerPlan.decide)
    after_halt: Literal["laplace", "refuse", "renew"] = "laplace"  # laplace: the ordinary per-query path
    public_seed: int | None = None  # kept for older policies: the learned model uses no random stream
    strategy: Literal["auto", "identity", "pmw"] = "auto"  # auto: chosen from public facts (docs/mechanisms.md)

    @property
    def columns(self) -> tuple[str, ...]:
        """The enabled columns, in domain order (the first is the most significant digit of x)."""
        return tuple(d.column for d in self.domains)

    @property
    def domain_size(self) -> int:
        """|X|: the product of the column domain sizes."""
        size = 1
        for domain in self.domains:
            size *= domain.size
        return size

    def domain(self, column: str) -> MMColumnDomain | None:
        """The domain of an enabled column, or None."""
        return next((d for d in self.domains if d.column == column.lower()), None)


@dataclass(frozen=True, slots=True)
class Table:
    """One declared table: private (with a privacy unit and contribution limits) or public."""

    name: str
    columns: Mapping[str, Column]
    public: bool = False
    privacy_unit: str | None = None
    max_rows: int = 1
    max_groups: int = 1
    source: Path | str | None = None  # a file path, or a URI a cluster reads (s3a://...)
    median_mechanism: MedianMechanismConfig | None = None
    engine_table: str | None = None  # a table the engine already holds (a Spark catalog table, an attached DuckDB's)
    join_max_rows: int | None = None  # rows kept per person of a join with this table (None: the product of the limits)
    # The name of the kind of person the table protects (`unit = "customer"`): private tables join
    # on their unit columns only when they name the same unit. None: the privacy_unit column's name.
    unit: str | None = None

    def column(self, name: str) -> Column | None:
        """The declared column of that name (case-insensitive), or None."""
        return self.columns.get(name.lower())

    @property
    def unit_name(self) -> str | None:
        """The unit the table protects: `unit`, else its privacy_unit column's name (None: public)."""
        return self.unit if self.unit is not None else self.privacy_unit

    def shares_unit(self, other: Table) -> bool:
        """Whether two private tables protect the same persons: the same unit name and unit column type."""
        if self.public or other.public or self.privacy_unit is None or other.privacy_unit is None:
            return False
        return self.unit_name == other.unit_name and \
            self.columns[self.privacy_unit].type == other.columns[other.privacy_unit].type

    @property
    def source_format(self) -> str | None:
        """'parquet' or 'csv' from the source's suffix; None without a source or for another suffix."""
        if self.source is None:
            return None
        suffix = PurePosixPath(str(self.source).rstrip("/")).suffix.lower()
        return {".parquet": "parquet", ".csv": "csv", ".tsv": "csv"}.get(suffix)

    @property
    def source_is_local(self) -> bool:
        """Whether the source is a path on this machine (a URI is checked by the engine that reads it)."""
        return isinstance(self.source, Path)


@dataclass(frozen=True, slots=True)
class View:
    """`[views.<name>] sql = "..."`: a row-level SELECT over tables of the policy, published under a
    name (BI tools list it as a table). Queries read it as they would a row-level subquery: it is
    inlined, so bounding, sensitivities and cost are those of the base table's."""

    name: str
    sql: str
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Analyst:
    """An analyst of the server: a SCRAM verifier and an optional budget of its own."""

    name: str
    password: str | None = None
    budget: PrivacyCost | None = None


DEFAULT_REPLAY_SECONDS = 86_400.0  # a day: a dashboard's views of one day cost one charge per chart


@dataclass(frozen=True, slots=True)
class Budget:
    """The per-analyst budget and the per-query defaults."""

    total: PrivacyCost
    default_query: PrivacyCost
    # The privacy filter that admits charges against `total` (`[budget] accountant`; valid against
    # an analyst who adapts to every answer): "adaptive" (the default: homogeneous chains, zCDP and
    # basic composition, each on a share of delta), "zcdp", or "basic" (epsilons and deltas add up).
    accountant: FilterName = DEFAULT_FILTER
    # `ledger = "path"`: the data owner fixes where charges are recorded (a SQLite file, resolved
    # against the policy's directory, or a postgresql:// URL); no front end may choose another.
    ledger: str | None = None
    # `noise = "gaussian"`: COUNT/SUM/AVG releases use discrete Gaussian noise unless a query's
    # OPTIONS (noise = 'laplace') says otherwise; "laplace" (the default) keeps discrete Laplace.
    noise: str = "laplace"
    # `replay_seconds`: for how long after its release an answer is given again, unchanged and
    # free, to the same analyst sending the same statement over the same policy and data
    # (docs/privacy-model.md, "Replayed answers"); 0 turns replay off.
    replay_seconds: float = DEFAULT_REPLAY_SECONDS


@dataclass(frozen=True, slots=True)
class EngineLimits:
    """Resources each session's engine may use (`[engine]`): None keeps the engine's default."""

    memory_limit: str | None = None  # e.g. "4GB": DuckDB's memory_limit per session
    threads: int | None = None
    temp_directory: str | None = None  # where DuckDB spills what exceeds memory_limit (absolute path)


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """`[server]`: the limits `dpsql serve` puts on its clients (each one bounds what a client,
    logged in or not, can make the server hold or compute). Times are in seconds."""

    max_connections: int = 100  # open sockets, logged in or not (PostgreSQL's max_connections)
    authentication_timeout: float = 60.0  # from accept to a completed login
    statement_timeout: float = 300.0  # one statement of the analyst's Session
    max_message_bytes: int = 16 * 1024 * 1024  # one protocol message after login
    catalog_timeout: float = 10.0  # one catalog probe in the shared metadata database
    catalog_memory_mb: int = 64  # the metadata database's DuckDB memory_limit (its tables take well under 1 MB)
    catalog_max_rows: int = 100_000  # rows of one catalog answer
    # Defaults of a connection's own settings (SET dpsql.ci_columns / dpsql.round change them):
    # `<col>_ci95`, `_ci_low`, `_ci_high` after each noisy column (also the default of in-process connections
    # that do not choose), and released values rounded to their interval's precision.
    ci_columns: bool = False
    round: bool = True


@dataclass(frozen=True, slots=True)
class Policy:
    """A whole policy file, loaded and checked."""

    budget: Budget
    tables: Mapping[str, Table]
    analysts: Mapping[str, Analyst] = field(default_factory=lambda: MappingProxyType({}))
    path: Path | None = None
    extra: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    engine: EngineLimits = field(default_factory=EngineLimits)
    server: ServerSettings = field(default_factory=ServerSettings)
    views: Mapping[str, View] = field(default_factory=lambda: MappingProxyType({}))

    def table(self, name: str) -> Table | None:
        """The declared table of that name (case-insensitive), or None."""
        return self.tables.get(name.lower())

    def view(self, name: str) -> View | None:
        """The declared view of that name (case-insensitive), or None."""
        return self.views.get(name.lower())

    def budget_for(self, analyst: str | None) -> PrivacyCost:
        """The total budget of an analyst: their own if declared, else the policy's."""
        if analyst is not None:
            declared = self.analysts.get(analyst)
            if declared is not None and declared.budget is not None:
                return declared.budget
        return self.budget.total

"""Read a policy TOML file into a checked Policy. Every error names the file and the key."""

from __future__ import annotations

import itertools
import re
import tomllib
from datetime import date, datetime
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import Any

from dpsql.accounting.cost import PrivacyCost, to_fraction
from dpsql.accounting.filters import ALIASES, DEFAULT_FILTER, FILTERS, filter_name
from dpsql.accounting.store import is_postgres_url
from dpsql.catalog.policy import (
    AFTER_HALT,
    COLUMN_TYPES,
    DEFAULT_REPLAY_SECONDS,
    NOISES,
    Analyst,
    Budget,
    Column,
    EngineLimits,
    MedianMechanismConfig,
    MMColumnDomain,
    Policy,
    ServerSettings,
    Table,
    View,
)
from dpsql.errors import CatalogError

TOP_KEYS = frozenset({"budget", "tables", "analysts", "engine", "server", "views"})
VIEW_KEYS = frozenset({"sql", "description"})
MAX_VIEW_SQL = 100_000  # characters of one view's SELECT
ENGINE_KEYS = frozenset({"memory_limit", "threads", "temp_directory"})
BUDGET_KEYS = frozenset({"epsilon", "delta", "default_query_epsilon", "default_query_delta"})
PRIVATE_TABLE_KEYS = frozenset({"privacy_unit", "unit", "max_rows", "max_groups", "join_max_rows", "source", "table", "columns",
                                "median_mechanism"})
PUBLIC_TABLE_KEYS = frozenset({"public", "source", "table", "columns"})
COLUMN_KEYS = frozenset({"type", "lower", "upper", "values", "precision", "identifier"})
_NAME = re.compile(r"[a-z_][a-z0-9_]*")  # a unit or identifier name: lower-case letters, digits and _
ANALYST_KEYS = frozenset({"password", "epsilon", "delta"})
# Sub-tables owned by later capabilities; also kept verbatim in Policy.extra.
EXTENSION_KEYS = frozenset({"median_mechanism"})
MM_KEYS = frozenset({
    "columns", "bins", "epsilon", "accuracy", "mode", "delta", "beta", "candidates", "expected_queries",
    "min_hard_slots", "after_halt", "public_seed", "strategy",
})
MM_MAX_CELLS = 2_000_000  # |X|: dense candidates cost candidates * |X| * 8 bytes
MM_MAX_CANDIDATE_CELLS = 20_000_000
MM_MAX_RANGE = 100_000  # an int column without bins: at most this many values
# [server]: integer keys with their allowed range, and timeouts in seconds (0 < t <= a day).
SERVER_INTS = {
    "max_connections": (1, 100_000), "max_message_bytes": (10_000, 1 << 30), "catalog_memory_mb": (16, 1 << 20),
    "catalog_max_rows": (1, 100_000_000),
}  # fmt: skip
SERVER_TIMES = frozenset({"authentication_timeout", "statement_timeout", "catalog_timeout"})
SERVER_BOOLS = frozenset({"ci_columns", "round"})
SERVER_KEYS = frozenset(SERVER_INTS) | SERVER_TIMES | SERVER_BOOLS
MAX_TIMEOUT = 86_400
MAX_REPLAY_SECONDS = 366 * 86_400  # [budget] replay_seconds: at most a year


class _Where:
    """The file and key path an error is about."""

    def __init__(self, path: Path | None) -> None:
        self.file = str(path) if path else "<policy>"

    def error(self, key: str, problem: str, hint: str | None = None) -> CatalogError:
        return CatalogError(f"policy {self.file}: key '{key}': {problem}", code="DP001", hint=hint)


def load_policy(path: str | Path) -> Policy:
    """Load and check the policy file at `path`."""
    file = Path(path).expanduser().resolve()
    try:
        with file.open("rb") as handle:
            raw = tomllib.load(handle, parse_float=Decimal)
    except FileNotFoundError as err:
        raise CatalogError(f"policy file not found: {file}", code="DP001") from err
    except tomllib.TOMLDecodeError as err:
        raise CatalogError(f"policy {file} is not valid TOML: {err}", code="DP001") from err
    return policy_from_dict(raw, file)


def policy_from_dict(raw: dict[str, Any], path: Path | None = None) -> Policy:
    """Check a parsed policy document and build the Policy."""
    where = _Where(path)
    _no_unknown(raw, TOP_KEYS, "", where)
    base = path.parent if path else Path.cwd()
    budget = _budget(raw.get("budget", {}), where, base)
    tables_raw = raw.get("tables")
    if not isinstance(tables_raw, dict) or not tables_raw:
        raise where.error("tables", "the policy declares no table", "add a [tables.<name>] section")
    tables = {name.lower(): _table(name, spec, base, where) for name, spec in tables_raw.items()}
    analysts = {name: _analyst(name, spec, where) for name, spec in raw.get("analysts", {}).items()}
    extra = {
        f"tables.{name}.{key}": spec[key] for name, spec in tables_raw.items() for key in EXTENSION_KEYS if key in spec
    }
    return Policy(
        budget=budget,
        tables=MappingProxyType(tables),
        analysts=MappingProxyType(analysts),
        path=path,
        extra=MappingProxyType(extra),
        engine=_engine(raw.get("engine", {}), where, base),
        server=_server(raw.get("server", {}), where),
        views=MappingProxyType(_views(raw.get("views", {}), tables, where)),
    )


_VIEW_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _views(raw: Any, tables: dict[str, Table], where: _Where) -> dict[str, View]:
    """`[views.<name>]`: a name and its SQL text. Whether the SQL is a row-level SELECT over the
    policy's tables is checked by the analysis (dpsql.analysis.views) when a session, the server
    or `dpsql policy check` first reads the policy's views."""
    if not isinstance(raw, dict):
        raise where.error("views", "must be a table of [views.<name>] sections")
    views = {}
    for name, spec in raw.items():
        prefix = f"views.{name}"
        if not isinstance(spec, dict):
            raise where.error(prefix, "must be a table with sql = \"SELECT ...\"")
        _no_unknown(spec, VIEW_KEYS, prefix + ".", where)
        if not _VIEW_NAME.fullmatch(name):
            raise where.error(prefix, "a view's name is a plain identifier (letters, digits and _)")
        if name.lower() in tables:
            raise where.error(prefix, f"a table of the policy is already named {name.lower()!r}", "give the view another name")
        sql, description = spec.get("sql"), spec.get("description")
        if not isinstance(sql, str) or not sql.strip() or len(sql) > MAX_VIEW_SQL:
            raise where.error(f"{prefix}.sql", f"must be a SELECT statement (at most {MAX_VIEW_SQL} characters)")
        if description is not None and not isinstance(description, str):
            raise where.error(f"{prefix}.description", "must be a string")
        views[name.lower()] = View(name=name.lower(), sql=sql.strip().rstrip(";").strip(), description=description)
    return views


_MEMORY = re.compile(r"\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*", re.IGNORECASE)


def _engine(raw: Any, where: _Where, base: Path) -> EngineLimits:
    if not isinstance(raw, dict):
        raise where.error("engine", "must be a table")
    _no_unknown(raw, ENGINE_KEYS, "engine.", where)
    memory, threads = raw.get("memory_limit"), raw.get("threads")
    if memory is not None and (not isinstance(memory, str) or not _MEMORY.fullmatch(memory)):
        raise where.error("engine.memory_limit", "must be a size such as \"4GB\" or \"512MiB\"")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise where.error("engine.threads", "must be an integer >= 1")
    temp = raw.get("temp_directory")
    if temp is not None and (not isinstance(temp, str) or not temp.strip()):
        raise where.error("engine.temp_directory", "must be a directory path")
    spill = str((base / Path(temp.strip()).expanduser()).resolve()) if temp is not None else None
    return EngineLimits(memory_limit=memory.strip() if memory else None, threads=threads, temp_directory=spill)


def _server(raw: Any, where: _Where) -> ServerSettings:
    """`[server]`: the pgwire server's limits (docs/policy-reference.md, `[server]`)."""
    if not isinstance(raw, dict):
        raise where.error("server", "must be a table")
    _no_unknown(raw, SERVER_KEYS, "server.", where)
    values: dict[str, Any] = {}
    for key, (low, high) in SERVER_INTS.items():
        if key in raw:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise where.error(f"server.{key}", f"must be an integer from {low} to {high}")
            values[key] = value
    for key in SERVER_TIMES:
        if key in raw:
            seconds = _number(raw[key], f"server.{key}", where)
            if not 0 < seconds <= MAX_TIMEOUT:
                raise where.error(f"server.{key}", f"must be a number of seconds > 0 and <= {MAX_TIMEOUT}")
            values[key] = float(seconds)
    for key in SERVER_BOOLS:
        if key in raw:
            if not isinstance(raw[key], bool):
                raise where.error(f"server.{key}", "must be true or false")
            values[key] = raw[key]
    return ServerSettings(**values)


def _no_unknown(section: dict[str, Any], allowed: frozenset[str], prefix: str, where: _Where) -> None:
    for key in section:
        if key not in allowed:
            raise where.error(prefix + key, "unknown key", f"allowed here: {', '.join(sorted(allowed))}")


def _number(value: Any, key: str, where: _Where) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, float)):
        raise where.error(key, "must be a number")
    return to_fraction(value)


def _budget(raw: Any, where: _Where, base: Path) -> Budget:
    if not isinstance(raw, dict):
        raise where.error("budget", "must be a table")
    _no_unknown(raw, BUDGET_KEYS | {"accountant", "ledger", "noise", "replay_seconds"}, "budget.", where)
    named = raw.get("accountant", DEFAULT_FILTER)
    if not isinstance(named, str) or (named not in FILTERS and named not in ALIASES):
        raise where.error("budget.accountant", f"must be one of {', '.join(repr(a) for a in FILTERS)}")
    chosen = filter_name(named)  # "pld" (older policies) is the valid "adaptive" filter
    noise = raw.get("noise", "laplace")
    if noise not in NOISES:
        raise where.error("budget.noise", "must be 'laplace' or 'gaussian'")
    for key in BUDGET_KEYS:
        if key not in raw:
            raise where.error(f"budget.{key}", "missing", "declare all of epsilon, delta, default_query_epsilon, default_query_delta")
    values = {key: _number(raw[key], f"budget.{key}", where) for key in BUDGET_KEYS}
    for key in ("epsilon", "default_query_epsilon"):
        if values[key] <= 0:
            raise where.error(f"budget.{key}", "must be > 0")
    for key in ("delta", "default_query_delta"):
        if not 0 <= values[key] < 1:
            raise where.error(f"budget.{key}", "must be in [0, 1)")
    replay = DEFAULT_REPLAY_SECONDS
    if "replay_seconds" in raw:
        seconds = _number(raw["replay_seconds"], "budget.replay_seconds", where)
        if not 0 <= seconds <= MAX_REPLAY_SECONDS:
            raise where.error("budget.replay_seconds", f"must be a number of seconds from 0 (off) to {MAX_REPLAY_SECONDS}")
        replay = float(seconds)
    return Budget(
        total=PrivacyCost(values["epsilon"], values["delta"]),
        default_query=PrivacyCost(values["default_query_epsilon"], values["default_query_delta"]),
        accountant=chosen,
        ledger=_ledger(raw.get("ledger"), base, where),
        noise=noise,
        replay_seconds=replay,
    )


def _ledger(raw: Any, base: Path, where: _Where) -> str | None:
    """`[budget] ledger`: a SQLite file (relative to the policy's directory) or a postgresql:// URL."""
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw.strip() or raw.strip() == ":memory:":
        raise where.error("budget.ledger", "must be a file path or a postgresql:// URL",
                          "an in-memory ledger would hand out a fresh budget on every connection")
    text = raw.strip()
    if is_postgres_url(text):
        return text
    return str((base / Path(text).expanduser()).resolve())


def _table(name: str, spec: Any, base: Path, where: _Where) -> Table:  # noqa: C901 - a flat ladder: one check per key of [tables.<t>], each with its own message
    prefix = f"tables.{name}"
    if not isinstance(spec, dict):
        raise where.error(prefix, "must be a table")
    public = spec.get("public", False)
    if not isinstance(public, bool):
        raise where.error(f"{prefix}.public", "must be true or false")
    _no_unknown(spec, PUBLIC_TABLE_KEYS if public else PRIVATE_TABLE_KEYS, prefix + ".", where)
    columns_raw = spec.get("columns", {})
    if not isinstance(columns_raw, dict):
        raise where.error(f"{prefix}.columns", "must be a table")
    columns = {col.lower(): _column(col, cspec, f"{prefix}.columns.{col}", where) for col, cspec in columns_raw.items()}
    source = spec.get("source")
    if source is not None and not isinstance(source, str):
        raise where.error(f"{prefix}.source", "must be a path string")
    # A URI (s3a://, hdfs://, file://) is for a cluster's readers and stays as written; a plain path
    # is relative to the policy file.
    source_path: Path | str | None = (source if "://" in source else (base / source).resolve()) if source else None
    engine_table = spec.get("table")
    if engine_table is not None and (not isinstance(engine_table, str) or not engine_table.strip()):
        raise where.error(f"{prefix}.table", "must name a table the engine has (e.g. \"db.people\")")
    if engine_table is not None and source is not None:
        raise where.error(f"{prefix}.table", "give either source (a file) or table (an engine table), not both")
    if public:
        for col, column in columns.items():
            if column.identifier is not None:
                raise where.error(f"{prefix}.columns.{col}.identifier", "applies to columns of private tables",
                                  "a public table's keys are not held by persons: remove it")
        return Table(name=name.lower(), columns=MappingProxyType(columns), public=True, source=source_path, engine_table=engine_table)
    unit = spec.get("privacy_unit")
    if not isinstance(unit, str) or not unit:
        raise where.error(f"{prefix}.privacy_unit", "missing", "name the column that identifies a person, or set public = true")
    if unit.lower() not in columns:
        raise where.error(f"{prefix}.privacy_unit", f"names '{unit}', which is not a declared column")
    if columns[unit.lower()].identifier is not None:
        raise where.error(f"{prefix}.columns.{unit.lower()}.identifier", "is set on the privacy unit",
                          "the privacy unit identifies persons already: remove it")
    unit_name = spec.get("unit", unit)
    if not isinstance(unit_name, str) or not _NAME.fullmatch(unit_name.lower()):
        raise where.error(f"{prefix}.unit", "must be a name (letters, digits and _), e.g. \"customer\"",
                          "tables naming the same unit protect the same persons and may be joined on their privacy_unit columns")
    limits = {}
    for key in ("max_rows", "max_groups", "join_max_rows"):
        value = spec.get(key, 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise where.error(f"{prefix}.{key}", "must be an integer >= 1")
        limits[key] = value
    layer = spec.get("median_mechanism")
    mm = _median_mechanism(layer, columns, unit.lower(), f"{prefix}.median_mechanism", where) if layer is not None else None
    return Table(
        name=name.lower(),
        columns=MappingProxyType(columns),
        privacy_unit=unit.lower(),
        max_rows=limits["max_rows"],
        max_groups=limits["max_groups"],
        join_max_rows=limits["join_max_rows"] if "join_max_rows" in spec else None,
        source=source_path,
        engine_table=engine_table,
        median_mechanism=mm,
        unit=unit_name.lower(),
    )


def _median_mechanism(spec: Any, columns: dict[str, Column], unit: str, prefix: str, where: _Where) -> MedianMechanismConfig:  # noqa: C901 - a flat ladder: one check per key of [tables.<t>.median_mechanism], each with its own message
    """`[tables.<t>.median_mechanism]`: the Median Mechanism layer's domain and budget."""
    if not isinstance(spec, dict):
        raise where.error(prefix, "must be a table")
    _no_unknown(spec, MM_KEYS, prefix + ".", where)
    names = spec.get("columns")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise where.error(f"{prefix}.columns", "must be a non-empty list of column names")
    lowered = [n.lower() for n in names]
    if len(set(lowered)) != len(lowered):
        raise where.error(f"{prefix}.columns", "lists a column twice")
    bins = spec.get("bins", {})
    if not isinstance(bins, dict):
        raise where.error(f"{prefix}.bins", "must be a table of column = [edges]")
    for col in bins:
        if col.lower() not in lowered:
            raise where.error(f"{prefix}.bins.{col}", "names a column that is not in columns")
    bins_by_name = {col.lower(): (col, edges) for col, edges in bins.items()}
    domains = []
    for name in lowered:
        if name not in columns:
            raise where.error(f"{prefix}.columns", f"names '{name}', which is not a declared column")
        if name == unit:
            raise where.error(f"{prefix}.columns", f"names the privacy unit '{name}'", "the layer counts rows, not persons")
        domains.append(_mm_domain(columns[name], bins_by_name.get(name), prefix, where))
    epsilon = _number(spec.get("epsilon"), f"{prefix}.epsilon", where) if "epsilon" in spec else None
    if epsilon is None or epsilon <= 0:
        raise where.error(f"{prefix}.epsilon", "must be a number > 0 (the layer's whole reservation)")
    accuracy = _number(spec.get("accuracy"), f"{prefix}.accuracy", where) if "accuracy" in spec else None
    if accuracy is None or accuracy < 2:
        raise where.error(f"{prefix}.accuracy", "must be a number >= 2 (the target absolute error, in rows, at 95%)")
    mode = spec.get("mode", "pure")
    if mode not in ("pure", "zcdp"):
        raise where.error(f"{prefix}.mode", "must be \"pure\" or \"zcdp\"")
    delta = Fraction(0)
    if mode == "zcdp":
        if "delta" not in spec:
            raise where.error(f"{prefix}.delta", "missing", "mode = \"zcdp\" reports (epsilon, delta)-DP: declare delta, e.g. 1e-6")
        delta = _number(spec["delta"], f"{prefix}.delta", where)
        if not 0 < delta < 1:
            raise where.error(f"{prefix}.delta", "must be in (0, 1)")
    elif "delta" in spec:
        raise where.error(f"{prefix}.delta", "applies to mode = \"zcdp\" only", "remove it, or set mode = \"zcdp\"")
    beta = _number(spec.get("beta", Decimal("0.05")), f"{prefix}.beta", where)
    if not 0 < beta < Fraction(1, 2):
        raise where.error(f"{prefix}.beta", "must be in (0, 0.5)")
    ints = {key: spec[key] for key in ("candidates", "expected_queries", "min_hard_slots", "public_seed") if key in spec}
    for key, value in ints.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if key == "public_seed" else 1):
            raise where.error(f"{prefix}.{key}", "must be an integer >= " + ("0" if key == "public_seed" else "1"))
    candidates = ints.get("candidates", 9)
    if candidates > 64:
        raise where.error(f"{prefix}.candidates", "must be at most 64")
    after_halt = spec.get("after_halt", "laplace")
    if after_halt not in AFTER_HALT:
        raise where.error(f"{prefix}.after_halt", "must be \"laplace\", \"refuse\" or \"renew\"")
    strategy = spec.get("strategy", "auto")
    if strategy not in ("auto", "identity", "pmw"):
        raise where.error(f"{prefix}.strategy", "must be \"auto\", \"identity\" or \"pmw\"")
    config = MedianMechanismConfig(
        strategy=strategy,
        domains=tuple(domains), epsilon=epsilon, accuracy=accuracy, mode=mode, delta=delta, beta=beta,
        candidates=candidates, expected_queries=ints.get("expected_queries"), min_hard_slots=ints.get("min_hard_slots"),
        after_halt=after_halt, public_seed=ints.get("public_seed"),
    )
    if config.domain_size > MM_MAX_CELLS or config.domain_size * candidates > MM_MAX_CANDIDATE_CELLS:
        raise where.error(f"{prefix}.columns", f"the domain X has {config.domain_size} cells, too many for {candidates} candidates",
                          f"keep |X| <= {MM_MAX_CELLS} and candidates * |X| <= {MM_MAX_CANDIDATE_CELLS}: "
                          "enable fewer columns or coarsen bins")
    return config


def _mm_domain(column: Column, binned: tuple[str, Any] | None, prefix: str, where: _Where) -> MMColumnDomain:
    key = f"{prefix}.columns"
    if binned is not None:
        label, edges_raw = binned
        bkey = f"{prefix}.bins.{label}"
        if column.type not in ("int", "float"):
            raise where.error(bkey, f"bins apply to int and float columns, not {column.type}")
        if column.values is not None:
            raise where.error(bkey, f"'{column.name}' declares values: use them, or bins, not both")
        if not isinstance(edges_raw, list) or len(edges_raw) < 2:
            raise where.error(bkey, "must be a list of at least two edges")
        edges = tuple(_number(e, bkey, where) for e in edges_raw)
        if any(b <= a for a, b in itertools.pairwise(edges)):
            raise where.error(bkey, "edges must be strictly increasing")
        if column.type == "int" and any(e.denominator != 1 for e in edges):
            raise where.error(bkey, "edges of an int column must be integers")
        return MMColumnDomain(column.name, column.type, "bins", edges=edges)
    if column.values is not None:
        return MMColumnDomain(column.name, column.type, "values", values=column.values)
    if column.type == "bool":
        return MMColumnDomain(column.name, column.type, "values", values=(False, True))
    if column.type == "int" and column.lower is not None and column.upper is not None:
        lower, upper = int(column.lower), int(column.upper)
        if upper - lower + 1 > MM_MAX_RANGE:
            raise where.error(key, f"'{column.name}' has {upper - lower + 1} integer values",
                              f"declare bins for it under {prefix}.bins")
        return MMColumnDomain(column.name, column.type, "range", values=tuple(range(lower, upper + 1)))
    raise where.error(key, f"'{column.name}' has no finite domain",
                      f"declare its values, or (int/float) bins under {prefix}.bins, or (int) lower and upper bounds")


def _column(name: str, spec: Any, key: str, where: _Where) -> Column:  # noqa: C901 - a flat ladder: one check per key of a column, each with its own message
    if not isinstance(spec, dict):
        raise where.error(key, "must be an inline table like { type = \"int\", lower = 0, upper = 10 }")
    _no_unknown(spec, COLUMN_KEYS, key + ".", where)
    ctype = spec.get("type")
    if ctype not in COLUMN_TYPES:
        raise where.error(f"{key}.type", f"must be one of {', '.join(COLUMN_TYPES)}")
    lower = upper = precision = None
    if ("lower" in spec) != ("upper" in spec):
        raise where.error(key, "declare both lower and upper, or neither")
    if "lower" in spec:
        if ctype not in ("int", "float", "date", "timestamp"):
            raise where.error(f"{key}.lower", f"bounds apply to int, float, date and timestamp columns, not {ctype}")
        lower, upper = (_bound(spec[b], ctype, f"{key}.{b}", where) for b in ("lower", "upper"))
        if lower > upper:
            raise where.error(key, "lower is greater than upper")
    if "precision" in spec:
        precision = _number(spec["precision"], f"{key}.precision", where)
        if precision <= 0:
            raise where.error(f"{key}.precision", "must be > 0")
    values = None
    if "values" in spec:
        if not isinstance(spec["values"], list) or not spec["values"]:
            raise where.error(f"{key}.values", "must be a non-empty list")
        values = tuple(_domain_value(v, ctype, f"{key}.values", where) for v in spec["values"])
        if len(set(values)) != len(values):
            raise where.error(f"{key}.values", "lists a value twice")
    identifier = spec.get("identifier")
    if isinstance(identifier, bool):
        identifier = name.lower() if identifier else None  # true: named after the column itself
    elif identifier is not None:
        if not isinstance(identifier, str) or not _NAME.fullmatch(identifier.lower()):
            raise where.error(f"{key}.identifier", "must be true or a name (letters, digits and _), e.g. \"order\"",
                              "columns naming the same identifier hold the same keys (an order key in orders and lineitem)")
        identifier = identifier.lower()
    return Column(name=name.lower(), type=ctype, lower=lower, upper=upper, values=values, precision=precision,
                  identifier=identifier)


def _bound(value: Any, ctype: str, key: str, where: _Where) -> Fraction:
    if ctype == "timestamp":
        return _timestamp_bound(value, key, where)
    if ctype == "date":
        if not isinstance(value, date):
            raise where.error(key, "must be a TOML date (e.g. 2020-01-31)")
        return Fraction(value.toordinal())
    bound = _number(value, key, where)
    if ctype == "int" and bound.denominator != 1:
        raise where.error(key, "must be an integer for an int column")
    return bound


def _timestamp_bound(value: Any, key: str, where: _Where) -> Fraction:
    """A timestamp bound as seconds since 1970-01-01 00:00 (no time zone: TOML local date-times,
    or dates for midnight); an offset date-time would name another instant per session zone."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            raise where.error(key, "must be a TOML local date-time without an offset (e.g. 2024-01-31T00:00:00)")
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    else:
        raise where.error(key, "must be a TOML local date-time (e.g. 2024-01-31T00:00:00) or a date")
    delta = moment - datetime(1970, 1, 1)
    return Fraction(delta.days * 86_400 + delta.seconds) + Fraction(delta.microseconds, 1_000_000)


def _domain_value(value: Any, ctype: str, key: str, where: _Where) -> Any:
    if ctype == "timestamp":
        if not isinstance(value, datetime) or value.tzinfo is not None:
            raise where.error(key, "holds a value that is not a TOML local date-time")
        return value
    types: dict[str, type | tuple[type, ...]] = {"int": int, "float": (int, Decimal, float), "text": str, "bool": bool, "date": date}
    expected = types[ctype]
    if isinstance(value, bool) and ctype != "bool":
        raise where.error(key, f"holds a bool in a {ctype} column")
    if not isinstance(value, expected):
        raise where.error(key, f"holds a value that is not of type {ctype}")
    return float(value) if isinstance(value, Decimal) else value


def _analyst(name: str, spec: Any, where: _Where) -> Analyst:
    prefix = f"analysts.{name}"
    if not isinstance(spec, dict):
        raise where.error(prefix, "must be a table")
    _no_unknown(spec, ANALYST_KEYS, prefix + ".", where)
    password = spec.get("password")
    if password is not None and not isinstance(password, str):
        raise where.error(f"{prefix}.password", "must be a SCRAM-SHA-256 verifier string")
    budget = None
    if "epsilon" in spec or "delta" in spec:
        epsilon = _number(spec.get("epsilon", 0), f"{prefix}.epsilon", where)
        delta = _number(spec.get("delta", 0), f"{prefix}.delta", where)
        if epsilon < 0:
            raise where.error(f"{prefix}.epsilon", "must be >= 0")
        if not 0 <= delta < 1:
            raise where.error(f"{prefix}.delta", "must be in [0, 1)")
        budget = PrivacyCost(epsilon, delta)
    return Analyst(name=name, password=password, budget=budget)

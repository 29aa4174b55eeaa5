"""Read a policy TOML file into a checked Policy. Every error names the file and the key."""

from __future__ import annotations

import tomllib
from datetime import date
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import Any

from dpsql.accounting.cost import PrivacyCost, to_fraction
from dpsql.catalog.model import COLUMN_TYPES, Analyst, Budget, Column, Policy, Table
from dpsql.errors import CatalogError

TOP_KEYS = frozenset({"budget", "tables", "analysts"})
BUDGET_KEYS = frozenset({"epsilon", "delta", "default_query_epsilon", "default_query_delta"})
PRIVATE_TABLE_KEYS = frozenset({"privacy_unit", "max_rows", "max_groups", "source", "columns", "median_mechanism"})
PUBLIC_TABLE_KEYS = frozenset({"public", "source", "columns"})
COLUMN_KEYS = frozenset({"type", "lower", "upper", "values", "precision"})
ANALYST_KEYS = frozenset({"password", "epsilon", "delta"})
# Sub-tables owned by later capabilities; kept verbatim in Policy.extra for them to check.
EXTENSION_KEYS = frozenset({"median_mechanism"})


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
    budget = _budget(raw.get("budget", {}), where)
    tables_raw = raw.get("tables")
    if not isinstance(tables_raw, dict) or not tables_raw:
        raise where.error("tables", "the policy declares no table", "add a [tables.<name>] section")
    base = path.parent if path else Path.cwd()
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
    )


def _no_unknown(section: dict[str, Any], allowed: frozenset[str], prefix: str, where: _Where) -> None:
    for key in section:
        if key not in allowed:
            raise where.error(prefix + key, "unknown key", f"allowed here: {', '.join(sorted(allowed))}")


def _number(value: Any, key: str, where: _Where) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, float)):
        raise where.error(key, "must be a number")
    return to_fraction(value)


def _budget(raw: Any, where: _Where) -> Budget:
    if not isinstance(raw, dict):
        raise where.error("budget", "must be a table")
    _no_unknown(raw, BUDGET_KEYS, "budget.", where)
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
    return Budget(
        total=PrivacyCost(values["epsilon"], values["delta"]),
        default_query=PrivacyCost(values["default_query_epsilon"], values["default_query_delta"]),
    )


def _table(name: str, spec: Any, base: Path, where: _Where) -> Table:
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
    source_path = (base / source).resolve() if source else None
    if public:
        return Table(name=name.lower(), columns=MappingProxyType(columns), public=True, source=source_path)
    unit = spec.get("privacy_unit")
    if not isinstance(unit, str) or not unit:
        raise where.error(f"{prefix}.privacy_unit", "missing", "name the column that identifies a person, or set public = true")
    if unit.lower() not in columns:
        raise where.error(f"{prefix}.privacy_unit", f"names '{unit}', which is not a declared column")
    limits = {}
    for key in ("max_rows", "max_groups"):
        value = spec.get(key, 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise where.error(f"{prefix}.{key}", "must be an integer >= 1")
        limits[key] = value
    return Table(
        name=name.lower(),
        columns=MappingProxyType(columns),
        privacy_unit=unit.lower(),
        max_rows=limits["max_rows"],
        max_groups=limits["max_groups"],
        source=source_path,
    )


def _column(name: str, spec: Any, key: str, where: _Where) -> Column:
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
        if ctype not in ("int", "float", "date"):
            raise where.error(f"{key}.lower", f"bounds apply to int, float and date columns, not {ctype}")
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
    return Column(name=name.lower(), type=ctype, lower=lower, upper=upper, values=values, precision=precision)


def _bound(value: Any, ctype: str, key: str, where: _Where) -> Fraction:
    if ctype == "date":
        if not isinstance(value, date):
            raise where.error(key, "must be a TOML date (e.g. 2020-01-31)")
        return Fraction(value.toordinal())
    bound = _number(value, key, where)
    if ctype == "int" and bound.denominator != 1:
        raise where.error(key, "must be an integer for an int column")
    return bound


def _domain_value(value: Any, ctype: str, key: str, where: _Where) -> Any:
    expected = {"int": int, "float": (int, Decimal, float), "text": str, "bool": bool, "date": date}[ctype]
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
        budget = PrivacyCost(
            _number(spec.get("epsilon", 0), f"{prefix}.epsilon", where),
            _number(spec.get("delta", 0), f"{prefix}.delta", where),
        )
    return Analyst(name=name, password=password, budget=budget)

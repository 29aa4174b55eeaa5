"""A policy skeleton for a data owner (`dpsql policy init`): every table and column of a source with
its type, a guessed privacy unit, the bounds left for the owner to fill in, a budget with how
many typical queries it fits, and a ledger that keeps it across runs.

Bounds are public facts the owner declares (a legal age range, a salary cap), never the data's
own minimum and maximum: those are themselves a disclosure (the richest person's income). Only
with an explicit opt-in (`--suggest`) does the skeleton carry what it read from the data: bounds
rounded outward to a coarse value, `max_rows`/`max_groups` from the 99th percentile of rows and
keys per person, and the values of low-cardinality columns; each is marked in the file as a
disclosure to review.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fractions import Fraction

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.accounting.filters import DEFAULT_FILTER, Filter, History, charge_of


@dataclass(frozen=True, slots=True)
class SourceColumn:
    """A column as the engine sees it: its name and the policy type it maps to (None: unsupported)."""

    name: str
    engine_type: str
    policy_type: str | None


@dataclass(frozen=True, slots=True)
class SourceTable:
    """One table of a source: its name, its file (None for a database table) and its columns."""

    name: str
    source: str | None
    columns: tuple[SourceColumn, ...]


@dataclass(frozen=True, slots=True)
class DataFacts:
    """What `--suggest` read of one table's data (a disclosure the data owner reviews): max_rows
    (rows per person at the 99th percentile), max_groups (distinct keys per person, same), the
    share of rows that max_rows keeps, and the values of low-cardinality columns."""

    max_rows: int
    max_groups: int
    kept_share: float
    values: dict[str, tuple[object, ...]] = field(default_factory=dict)


DELTA = Fraction(1, 10**6)
DEFAULT_QUERY = PrivacyCost(Fraction(1, 10), Fraction(1, 10**8))
EPSILONS = (1, 2, 3, 5, 8, 10, 15, 20, 30, 50)  # the budgets a skeleton proposes, smallest first
TARGET_QUERIES = 100


def typical_queries(budget: PrivacyCost, query: PrivacyCost = DEFAULT_QUERY, accountant: str = DEFAULT_FILTER) -> tuple[int, int]:
    """How many queries at the default cost the budget fits under the filter: (COUNTs with
    discrete Laplace noise at the default epsilon, GROUP BYs with partition selection: the same
    epsilon and the default delta). Counted up to 1000 (the filters' limit)."""
    laplace = PrivacyLoss("discrete_laplace", "laplace", query.epsilon, Fraction(0), Fraction(1), 1 / query.epsilon)
    selection = (PrivacyLoss("discrete_laplace", "laplace", query.epsilon / 2, Fraction(0), Fraction(1), 2 / query.epsilon),
                 PrivacyLoss("approx_dp", "partition_selection", query.epsilon / 2, query.delta))
    chosen = Filter(accountant, budget)  # type: ignore[arg-type]
    return chosen.more(History(), charge_of((laplace,))), chosen.more(History(), charge_of(selection))


def budget_for(queries: int = TARGET_QUERIES, accountant: str = DEFAULT_FILTER) -> PrivacyCost:
    """The smallest epsilon of EPSILONS (delta 1e-6) that fits `queries` COUNTs at the default
    epsilon under the filter (the largest of EPSILONS when none does)."""
    for epsilon in EPSILONS:
        budget = PrivacyCost(Fraction(epsilon), DELTA)
        if typical_queries(budget, accountant=accountant)[0] >= queries:
            return budget
    return PrivacyCost(Fraction(EPSILONS[-1]), DELTA)


_UNIT_NAMES = re.compile(r"^(person|user|customer|patient|member|account|client|employee|individual|subject|"
                         r"student|household|people|visitor|citizen)_?id$|^(pid|uid)$", re.IGNORECASE)


def guess_privacy_unit(table: SourceTable) -> str | None:
    """A column that looks like a person identifier (person_id, user_id, ...), else one ending in id."""
    names = [c.name for c in table.columns]
    return (next((n for n in names if _UNIT_NAMES.match(n)), None)
            or next((n for n in names if n.lower().endswith("_id") or n.lower() == "id"), None))


def round_outward(low: float, high: float) -> tuple[float, float]:
    """[low, high] widened to multiples of a power of ten of the range's magnitude (0 kept as 0)."""
    span = max(abs(low), abs(high), 1.0)
    step = 10.0 ** math.floor(math.log10(span))
    return math.floor(low / step) * step, math.ceil(high / step) * step


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else '"' + name.replace('"', '\\"') + '"'


def _literal(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def scaffold(tables: tuple[SourceTable, ...], source_for: dict[str, str],
             ranges: dict[str, dict[str, tuple[float, float]]] | None = None, facts: dict[str, DataFacts] | None = None,
             ledger: str = "ledger.sqlite", queries: int = TARGET_QUERIES) -> str:
    """The policy TOML text. `source_for` maps a table to the `source` (or `table`) line to write;
    `ranges` and `facts` (opt-in only) hold what was read from the data per table; `ledger`: the
    ledger file the policy fixes (relative to the policy); `queries`: how many default queries
    the proposed budget should fit."""
    budget = budget_for(queries)
    counts, selections = typical_queries(budget)
    lines = [
        "# dpsql policy skeleton, written by `dpsql policy init`. Review every line before use:",
        "# - privacy_unit: the column that identifies a person (adjacent datasets differ by one of them);",
        "# - max_rows / max_groups: how many rows / groups one person may contribute (rows beyond max_rows",
        "#   are dropped at random, so a max_rows below the data's rows per person biases every answer);",
        "# - lower/upper: PUBLIC bounds (a legal or physical range), needed to SUM, AVG or rank a column;",
        "# - values: a PUBLIC list of a column's keys, to release every group (else keys are selected",
        "#   privately and need delta > 0).",
        "# Lines marked REVIEW were read from the data (--suggest): each is a disclosure unless it is public knowledge.",
        "# Check it with `dpsql policy check <this file> --data`.",
        "",
        "[budget]                  # per analyst, for the life of the ledger",
        f"epsilon = {_number(float(budget.epsilon))}               # fits {_more(counts)} COUNT queries at the default epsilon, "
        f"or {_more(selections)} GROUP BYs with private keys,",
        f"delta = {float(budget.delta):g}              # under the {DEFAULT_FILTER} privacy filter (chosen for --queries {queries}: "
        "a smaller epsilon protects more and answers fewer)",
        f"default_query_epsilon = {_number(float(DEFAULT_QUERY.epsilon))}",
        f"default_query_delta = {float(DEFAULT_QUERY.delta):g}",
        f'accountant = "{DEFAULT_FILTER}"',
        f'ledger = "{ledger}"   # where charges are kept (relative to this file): without it every connect() starts a fresh budget',
    ]
    for table in tables:
        unit = guess_privacy_unit(table)
        known = (facts or {}).get(table.name)
        lines += ["", f"[tables.{_key(table.name)}]"]
        if unit is None:
            lines.append('privacy_unit = ""          # TODO: no person identifier found; name one, or set public = true')
        else:
            lines.append(f'privacy_unit = "{unit}"   # guessed from the name: check it')
        if known is None:
            lines += ["max_rows = 1              # TODO: rows per person kept (more are dropped); --suggest reads the data's",
                      "max_groups = 1            # TODO: groups per person in a GROUP BY with private keys (<= max_rows)"]
        else:
            lines += [f"max_rows = {known.max_rows}              # REVIEW: 99% of persons have at most this many rows "
                      f"(keeps {known.kept_share:.1%} of rows); from the data",
                      f"max_groups = {known.max_groups}            # REVIEW: 99% of persons have at most this many keys in a text "
                      "column without values; from the data"]
        lines += [source_for[table.name], "", f"[tables.{_key(table.name)}.columns]"]
        for column in table.columns:
            lines.append(_column_line(column, unit, (ranges or {}).get(table.name, {}), known.values if known else {}))
    return "\n".join(lines) + "\n"


def _more(count: int) -> str:
    return f"at least {count}" if count >= 1000 else str(count)


def _column_line(column: SourceColumn, unit: str | None, ranges: dict[str, tuple[float, float]],
                 values: dict[str, tuple[object, ...]] | None = None) -> str:
    if column.policy_type is None:
        return f"# {_key(column.name)}: engine type {column.engine_type} has no policy type; left out"
    parts = [f'type = "{column.policy_type}"']
    note = ""
    if column.policy_type in ("int", "float") and column.name != unit:
        if column.name in ranges:
            low, high = round_outward(*ranges[column.name])
            parts += [f"lower = {_number(low)}", f"upper = {_number(high)}"]
            note = "  # REVIEW: rounded from the data's own range, a disclosure unless it is public knowledge"
        else:
            note = "  # TODO: lower = ..., upper = ... (public bounds) to SUM, AVG or rank it"
    elif column.policy_type in ("date", "timestamp") and column.name != unit:
        example = "2000-01-01, upper = 2030-12-31" if column.policy_type == "date" else "2000-01-01T00:00:00, upper = 2030-12-31T23:59:59"
        note = f"  # TODO: lower = {example} (public bounds) to rank it or GROUP BY date_trunc/EXTRACT of it"
    elif column.policy_type == "bool" and column.name != unit:
        parts.append("values = [false, true]")  # a bool's domain is public: GROUP BY releases both keys
    elif column.policy_type == "text" and column.name != unit and column.name not in (values or {}):
        note = "  # optional: values = [...] (a public list of keys)"
    if column.name in (values or {}) and column.name != unit and column.policy_type in ("text", "int"):
        parts.append(f"values = [{', '.join(_literal(v) for v in (values or {})[column.name])}]")
        note = (note + ";" if note else "  #") + " REVIEW: the data's keys (each held by 10+ persons): public knowledge?"
    return f"{_key(column.name)} = {{ {', '.join(parts)} }}{note}"

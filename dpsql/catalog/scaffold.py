"""A policy skeleton for a data owner (`dpsql policy init`): every table and column of a source with
its type, a guessed privacy unit, and the bounds left for the owner to fill in.

Bounds are public facts the owner declares (a legal age range, a salary cap), never the data's
own minimum and maximum: those are themselves a disclosure (the richest person's income). Only
with an explicit opt-in does the skeleton carry bounds read from the data, rounded outward to a
coarse value and marked in the file as needing review.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass


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


def scaffold(tables: tuple[SourceTable, ...], source_for: dict[str, str],
             ranges: dict[str, dict[str, tuple[float, float]]] | None = None) -> str:
    """The policy TOML text. `source_for` maps a table to the `source` (or `table`) line to write;
    `ranges` (opt-in only) holds data-derived min/max per table and column."""
    lines = [
        "# dpsql policy skeleton, written by `dpsql policy init`. Review every line before use:",
        "# - privacy_unit: the column that identifies a person (adjacent datasets differ by one of them);",
        "# - max_rows / max_groups: how many rows / groups one person may contribute;",
        "# - lower/upper: PUBLIC bounds (a legal or physical range), needed to SUM, AVG or rank a column;",
        "# - values: a PUBLIC list of a text column's keys, to release every group (else keys are selected",
        "#   privately and need delta > 0).",
        "# Check it with `dpsql policy check <this file>`.",
        "",
        "[budget]                  # per analyst, for the life of the ledger",
        "epsilon = 1.0",
        "delta = 1e-6",
        "default_query_epsilon = 0.1",
        "default_query_delta = 1e-8",
    ]
    for table in tables:
        unit = guess_privacy_unit(table)
        lines += ["", f"[tables.{_key(table.name)}]"]
        if unit is None:
            lines.append('privacy_unit = ""          # TODO: no person identifier found; name one, or set public = true')
        else:
            lines.append(f'privacy_unit = "{unit}"   # guessed from the name: check it')
        lines += ["max_rows = 1", "max_groups = 1", source_for[table.name], "", f"[tables.{_key(table.name)}.columns]"]
        for column in table.columns:
            lines.append(_column_line(column, unit, (ranges or {}).get(table.name, {})))
    return "\n".join(lines) + "\n"


def _column_line(column: SourceColumn, unit: str | None, ranges: dict[str, tuple[float, float]]) -> str:
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
    elif column.policy_type == "text" and column.name != unit:
        note = "  # optional: values = [...] (a public list of keys)"
    return f"{_key(column.name)} = {{ {', '.join(parts)} }}{note}"

"""`dpsql.last_query`, `dpsql.ledger`, `dpsql.budget` and `SHOW dpsql.*`: the analyst's own state as
tables a BI tool can query (error bars, a budget gauge), answered from the analyst's last answer
in this server (whichever connection got it) and the analyst's ledger: never from data, never
charged.

A query over these views runs in a fresh, locked-down metadata database (catalog_db.py) holding
only this analyst's rows, under the same static bounds as catalog probes (catalog_rules.py).
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlglot import exp

from dpsql.backend.auxiliary.catalog_db import MetadataDB
from dpsql.catalog.policy import ServerSettings
from dpsql.errors import CatalogQueryError, InvalidOptionError
from dpsql.render import refusal, rounded
from dpsql.result import NoisyResult
from dpsql.server import pgtypes
from dpsql.server.catalog_rules import check_probe
from dpsql.session import SHOW_SETTINGS, Session

SCHEMA = "dpsql"
VIEW_MEMORY_MB = 16

# (column, DuckDB type) of each view.
VIEWS: dict[str, tuple[tuple[str, str], ...]] = {
    "last_query": (
        ("row_number", "BIGINT"), ("column_name", "VARCHAR"), ("value", "DOUBLE"), ("ci95", "DOUBLE"),
        ("low", "DOUBLE"), ("high", "DOUBLE"), ("mechanism", "VARCHAR"), ("refused", "BOOLEAN"),
        ("refusal", "VARCHAR"), ("statement", "VARCHAR"), ("epsilon", "DOUBLE"), ("delta", "DOUBLE"),
        ("replayed", "BOOLEAN"),
    ),
    "ledger": (
        ("id", "BIGINT"), ("time", "TIMESTAMP"), ("session", "VARCHAR"), ("query", "VARCHAR"),
        ("mechanism", "VARCHAR"), ("epsilon", "DOUBLE"), ("delta", "DOUBLE"),
    ),
    "budget": (
        ("total_epsilon", "DOUBLE"), ("total_delta", "DOUBLE"), ("spent_epsilon", "DOUBLE"), ("spent_delta", "DOUBLE"),
        ("remaining_epsilon", "DOUBLE"), ("remaining_delta", "DOUBLE"), ("query_epsilon", "DOUBLE"),
        ("query_delta", "DOUBLE"), ("queries_left", "BIGINT"),
    ),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class LastStatement:
    """An analyst's last private answer and its SQL (what `dpsql.last_query` shows)."""

    sql: str
    result: NoisyResult


class LastAnswers:
    """Each analyst's last private answer in this server, whichever of their connections got it:
    a BI tool's pool (Superset's NullPool) opens a new connection per query, so a view of the
    connection's own last answer would always be empty. Only the analyst's own answers are read
    back (the login names the analyst)."""

    def __init__(self) -> None:
        self._last: dict[str, LastStatement] = {}
        self._lock = threading.Lock()

    def get(self, analyst: str) -> LastStatement | None:
        with self._lock:
            return self._last.get(analyst)

    def set(self, analyst: str, last: LastStatement) -> None:
        with self._lock:
            self._last[analyst] = last


def is_session_view(table: exp.Table) -> bool:
    """Whether a FROM item is one of the dpsql.* views."""
    return table.db.lower() == SCHEMA and not table.catalog and table.name.lower() in VIEWS


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return None
    return float(value)


def last_query_rows(last: LastStatement | None) -> list[tuple[Any, ...]]:
    """One row per released noisy cell of the last private answer: its value, 95% half-width and
    interval ends (`low`, `high`: not value ∓ ci95 where the interval is not symmetric, e.g. an
    AVG clamped at its bound), and whether the answer was a replay (charged nothing: epsilon 0)."""
    if last is None:
        return []
    result = last.result
    rows = []
    for index, (column, info) in enumerate(zip(result.columns, result.noise_info)):
        if info is None:
            continue
        reason = refusal(info)
        for number, (row, widths) in enumerate(zip(result.rows, result.cell_ci95), start=1):
            value = _number(row[index])
            width = widths[index] if index < len(widths) else None
            width = float(width) if width is not None and value is not None else None
            ends = result.interval(number - 1, index) if value is not None else None
            low, high = ends if ends is not None else (None, None)
            refused = row[index] is None and reason is not None
            rows.append((number, column.name, value, width, low, high, info.get("mechanism"), refused,
                         reason if refused else None, last.sql, float(result.cost.epsilon), float(result.cost.delta),
                         result.replay is not None))  # fmt: skip
    return rows


def ledger_rows(session: Session) -> list[tuple[Any, ...]]:
    """The analyst's charges, oldest first (every session of the ledger)."""
    return [(e.id, datetime.datetime.fromtimestamp(e.time, datetime.UTC).replace(tzinfo=None), e.session, e.query,
             e.mechanism, float(e.cost.epsilon), float(e.cost.delta)) for e in session.ledger_entries()]  # fmt: skip


def budget_rows(session: Session) -> list[tuple[Any, ...]]:
    """One row: the analyst's whole, spent and remaining budget (the accountant's view), the default
    cost of a query, and how many more queries like the session's last charged one fit (NULL before one)."""
    total, spent, remaining, query = session.total_budget, session.spent, session.remaining, session.default_query_budget
    return [(*(float(v) for v in (total.epsilon, total.delta, spent.epsilon, spent.delta, remaining.epsilon,
                                  remaining.delta, query.epsilon, query.delta)), session.queries_left)]  # fmt: skip


def query(tree: exp.Expr, session: Session, last: LastStatement | None, limits: ServerSettings,
          params: Sequence[Any] = (), *, describe_only: bool = False,
          round_values: bool = False) -> tuple[tuple[tuple[str, int], ...], list[tuple[Any, ...]]]:  # fmt: skip
    """Answer a query over the dpsql.* views: (name, OID) columns and rows (`dpsql.last_query`'s
    values rounded like the answer's rows when `round_values`: SET dpsql.round)."""
    if last is not None and round_values:
        last = LastStatement(last.sql, rounded(last.result))
    check_probe(tree)
    db = MetadataDB(memory_mb=VIEW_MEMORY_MB, timeout=limits.catalog_timeout, max_rows=limits.catalog_max_rows)
    try:
        db.create_schema(SCHEMA)
        empty = describe_only
        db.load_table(SCHEMA, "last_query", VIEWS["last_query"], [] if empty else last_query_rows(last))
        db.load_table(SCHEMA, "ledger", VIEWS["ledger"], [] if empty else ledger_rows(session))
        db.load_table(SCHEMA, "budget", VIEWS["budget"], [] if empty else budget_rows(session))
        db.lock()
        result = db.query(tree, list(params))
    finally:
        db.close()
    columns = tuple((name, pgtypes.oid_for_engine_type(type_)) for name, type_ in zip(result.names, result.types, strict=True))
    return columns, result.rows


def show(name: str, session: Session, ci_columns: bool, round_values: bool = True) -> str:
    """SHOW dpsql.ci_columns and dpsql.round (the connection's), or the session's SHOW dpsql.* (Session.show)."""
    if name.lower() == "dpsql.ci_columns":
        return "on" if ci_columns else "off"
    if name.lower() == "dpsql.round":
        return "on" if round_values else "off"
    try:
        return session.show(name)
    except InvalidOptionError:
        pass  # the PostgreSQL error below, outside the except block
    raise CatalogQueryError(f'unrecognized configuration parameter "{name}"', code="DP400",
                            hint="dpsql settings: " + ", ".join(dict.fromkeys((*SHOW_SETTINGS, "dpsql.ci_columns", "dpsql.round"))))

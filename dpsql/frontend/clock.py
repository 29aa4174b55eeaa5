"""The clock in analyst SQL: `now()`, `current_timestamp`, `current_date`, `today()` and their
other spellings, read ONCE when the statement is planned and written into it as a literal.

Why a literal: the time is public (it is not the data), but an engine that reads its own clock
reads it when it runs, in its own time zone (DuckDB's `now()` is a TIMESTAMP WITH TIME ZONE in
the session's zone, Spark's `current_timestamp()` in its session zone), so the same statement
would compute different things on the two engines and at different moments of one run. Read here,
before the analysis, the instant is part of the plan like any constant the analyst wrote: its
identity (the ledger's plan hash, and so the replay of an identical statement: a statement with
`now()` replays an answer only when its literal is the same), its derived GROUP BY domains
(WHERE ranges narrow them, analysis/group_domains.py) and its engine SQL. The clock is UTC, as a
TIMESTAMP without time zone (a DATE for the date clocks): the statement is answered as if the
analyst had written `TIMESTAMP '2026-07-30 12:34:56.789012'` (or `DATE '2026-07-30'`).
"""

from __future__ import annotations

import datetime as dt

from sqlglot import exp

# The clocks: sqlglot's nodes, and the names it leaves as anonymous calls (no arguments).
_TIMESTAMP_NODES: tuple[type[exp.Expr], ...] = (exp.CurrentTimestamp, exp.Localtimestamp, exp.Systimestamp)
_DATE_NODES: tuple[type[exp.Expr], ...] = (exp.CurrentDate,)
TIMESTAMP_NAMES = frozenset({"now", "get_current_timestamp", "transaction_timestamp", "statement_timestamp",
                             "getdate", "getutcdate", "sysdatetime"})
DATE_NAMES = frozenset({"curdate"})
_MAX_PRECISION = 6  # microseconds: the engines' resolution


def utc_now() -> dt.datetime:
    """The wall clock in UTC, without time zone (tests move it)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def clock_kind(node: exp.Expr) -> str | None:
    """"TIMESTAMP" or "DATE" when the node reads the clock, else None."""
    if isinstance(node, _TIMESTAMP_NODES):
        return "TIMESTAMP"
    if isinstance(node, _DATE_NODES):
        return "DATE"
    if isinstance(node, exp.Anonymous) and not node.expressions:
        name = str(node.this).lower()
        return "TIMESTAMP" if name in TIMESTAMP_NAMES else "DATE" if name in DATE_NAMES else None
    return None


def has_clock(tree: exp.Expr) -> bool:
    """Whether the tree reads the clock anywhere."""
    return any(clock_kind(node) is not None for node in tree.walk())


def clock_literal(kind: str, instant: dt.datetime, precision: int = _MAX_PRECISION) -> exp.Expr:
    """The literal a clock of `kind` reads at `instant` (UTC): CAST('...' AS TIMESTAMP | DATE);
    a timestamp with `precision` fractional digits (current_timestamp(3)), cut, not rounded."""
    if kind == "DATE":
        return exp.cast(exp.Literal.string(instant.date().isoformat()), exp.DataType.Type.DATE)
    step = 10 ** (_MAX_PRECISION - precision)
    instant = instant.replace(microsecond=instant.microsecond // step * step)
    return exp.cast(exp.Literal.string(instant.isoformat(sep=" ", timespec="microseconds")), exp.DataType.Type.TIMESTAMP)


def _precision(node: exp.Expr) -> int:
    """current_timestamp(p): p fractional digits (0..6); anything else reads as 6."""
    argument = node.args.get("this") if isinstance(node, exp.CurrentTimestamp) else None
    if isinstance(argument, exp.Literal) and not argument.is_string and str(argument.this).isdigit():
        return min(int(str(argument.this)), _MAX_PRECISION)
    return _MAX_PRECISION


def read_clock(tree: exp.Expr, clock: dt.datetime | None = None) -> tuple[exp.Expr, dt.datetime | None]:
    """The tree with every clock replaced by its literal, all read at one instant (`clock`, or
    the wall clock in UTC now), and that instant; (tree, None), unchanged, when it reads no clock."""
    if not has_clock(tree):
        return tree, None
    instant = clock if clock is not None else utc_now()

    def visit(node: exp.Expr) -> exp.Expr:
        kind = clock_kind(node)
        return node if kind is None else clock_literal(kind, instant, _precision(node))

    return tree.transform(visit), instant

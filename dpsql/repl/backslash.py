r"""Backslash commands: `\d`, `\budget`, `\history`, `\explain`, `\timing`, `\help`, `\q`.

The text of each answer comes from a pure function of public values (the policy, the ledger's
costs), so it is testable without IO. `\d` reads the policy only, never the data.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from dpsql import errors
from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import LedgerEntry
from dpsql.catalog.policy import Column, Policy, Table
from dpsql.execution.charge import LAYER_MECHANISM, more_text
from dpsql.execution.probe import view_tables
from dpsql.render import aligned, render_table
from dpsql.session import Session

DOMAIN_SHOWN = 5  # domain values listed by \d before "…"
BAR_WIDTH = 24
QUERY_WIDTH = 60
BUDGET_ROWS = 15  # queries charted by \budget (the newest)


@dataclass(frozen=True, slots=True)
class Output:
    """What running one item printed: text for stdout, text for stderr, and what to do next."""

    text: str = ""
    error: str = ""
    ok: bool = True
    quit: bool = False


@dataclass(slots=True)
class ReplState:
    """Per-run settings of the front end (no privacy state: the Session holds all of that)."""

    timing: bool = False
    confirm_share: float = 0.25
    last_cost: PrivacyCost | None = None


def number(value: Fraction | float | int) -> str:
    """A bound or a cost as short text: 18, 0.5, 1e-05."""
    if isinstance(value, Fraction) and value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.6g}"


# --- \d --------------------------------------------------------------------------------------
def describe_tables(policy: Policy, views: Mapping[str, Table] | None = None) -> str:
    """The tables of the policy, with their privacy unit and contribution limits, then its views."""
    if not policy.tables:
        return "No tables in the policy."
    rows = [
        [t.name, "public" if t.public else "private", t.privacy_unit or "", *_limits(t), str(len(t.columns))]
        for t in policy.tables.values()
    ] + [[v.name, "view", v.privacy_unit or "", *_limits(v), str(len(v.columns))] for v in (views or {}).values()]
    headers = ["table", "kind", "privacy unit", "max_rows", "max_groups", "columns"]
    return "\n".join(aligned(headers, rows, [False, False, False, True, True, True]))


def _limits(table: Table) -> list[str]:
    return ["", ""] if table.public else [str(table.max_rows), str(table.max_groups)]


def describe_table(table: Table) -> str:
    """One table's columns: type, public bounds, public domain and notes. From the policy only."""
    if table.public:
        head = f'Table "{table.name}": public (read exactly: no noise, no cost)'
    else:
        head = (f'Table "{table.name}": private; privacy unit {table.privacy_unit}; '
                f"max_rows {table.max_rows} per unit; max_groups {table.max_groups} per unit")
    rows = [[c.name, c.type, _bounds(c), _domain(c), _note(table, c)] for c in table.columns.values()]
    return "\n".join([head, *aligned(["column", "type", "bounds", "domain", "notes"], rows)])


def _bounds(column: Column) -> str:
    if not column.bounded:
        return ""
    text = column.bounds_text(number) or ""
    return text + (f" step {number(column.precision)}" if column.precision is not None else "")


def _domain(column: Column) -> str:
    if column.values is None:
        return ""
    shown = ", ".join(str(v) for v in column.values[:DOMAIN_SHOWN])
    more = len(column.values) - DOMAIN_SHOWN
    return f"{shown}, … ({len(column.values)} values)" if more > 0 else shown


def _note(table: Table, column: Column) -> str:
    if table.public:
        return ""
    if column.name == table.privacy_unit:
        return "privacy unit: COUNT(DISTINCT) and filters only"
    notes = []
    if column.numeric and not column.bounded:
        notes.append("no bounds: not summable")
    if column.public_domain:
        notes.append("public domain: every key released")
    elif column.type in ("text", "bool", "date", "timestamp", "int"):
        notes.append("GROUP BY keys: noisy threshold")
    return "; ".join(notes)


# --- \budget and \history --------------------------------------------------------------------
def budget_text(analyst: str, total: PrivacyCost, spent: PrivacyCost, remaining: PrivacyCost,
                entries: Sequence[LedgerEntry], accountant: str | None = None, queries_left: int | None = None) -> str:
    """Remaining and spent budget, and a bar chart of epsilon spent per query (newest last)."""
    rows = [[name, number(c.epsilon), number(c.delta)] for name, c in
            (("total", total), ("spent", spent), ("remaining", remaining))]
    lines = [f"Budget of analyst {analyst}:", *aligned(["", "epsilon", "delta"], rows, [False, True, True])]
    if accountant is not None and accountant != "basic":
        # What the filter holds the charges to is less than the sum of the per-query epsilons below.
        lines.append(f"spent: the smallest epsilon at which the {accountant} privacy filter holds all charges at delta "
                     f"{number(total.delta)} (each query's own epsilon sets its noise)")
    if queries_left is not None:
        lines.append(f"{more_text(queries_left)} more queries like the last one fit")
    share = float(spent.epsilon / total.epsilon) if total.epsilon else 1.0
    lines.append(f"epsilon spent [{_bar(share, 1.0, BAR_WIDTH, '░')}] {share:.1%}")
    if not entries:
        lines.append("No queries charged yet.")
        return "\n".join(lines)
    shown = list(entries)[-BUDGET_ROWS:]
    first = len(entries) - len(shown) + 1
    largest = max(float(e.cost.epsilon) for e in shown) or 1.0
    lines.append(f"epsilon per query ({len(entries)} charged{', newest ' + str(len(shown)) if len(shown) < len(entries) else ''}):")
    width = len(str(len(entries)))
    for n, entry in enumerate(shown, start=first):
        eps = float(entry.cost.epsilon)
        # A Median Mechanism reservation pays for every later answer of its layer in the session.
        what = "[median mechanism reservation] " if entry.mechanism == LAYER_MECHANISM else ""
        lines.append(f"  #{n:<{width}} {number(entry.cost.epsilon):>8} {_bar(eps, largest, BAR_WIDTH, ' ')} {what}{_one_line(entry.query)}")
    return "\n".join(lines)


def _bar(value: float, largest: float, width: int, fill: str) -> str:
    filled = 0 if largest <= 0 else round(width * min(value, largest) / largest)
    if value > 0:
        filled = max(filled, 1)
    return "█" * filled + fill * (width - filled)


def _one_line(query: str, width: int = QUERY_WIDTH) -> str:
    text = " ".join(query.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def history_text(entries: Sequence[LedgerEntry]) -> str:
    """The ledger: every charge of the analyst, oldest first."""
    if not entries:
        return "The ledger is empty: no query has been charged."
    rows = [
        [str(n), time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.time)), number(e.cost.epsilon),
         number(e.cost.delta), e.mechanism, _one_line(e.query)]
        for n, e in enumerate(entries, start=1)
    ]
    headers = ["#", "time", "epsilon", "delta", "mechanism", "query"]
    return "\n".join(aligned(headers, rows, [True, False, True, True, False, False]))


HELP = r"""Statements end with ';' (Enter inserts a newline until then). Examples:
  SELECT dept, COUNT(*), AVG(income) FROM people GROUP BY dept;
  SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) COUNT(*) FROM people;
  SET dpsql.epsilon = 0.2;            -- the default cost of later queries
  EXPLAIN SELECT COUNT(*) FROM people; -- the plan and its cost; spends nothing
Commands (one line, no ';'):
  \d [table]      tables, or a table's columns, bounds, domains and privacy unit (from the policy)
  \budget         remaining and spent budget, with a chart of spending per query
  \history        the ledger: every charge, oldest first
  \explain SQL    the plan, noise scales and cost of SQL, without running it
  \timing [on|off] print how long each statement took
  \help           this text
  \q              quit (also Ctrl-D)
Each noisy value prints as 'value ± half-width' of its 95% interval. A query that would spend
more than a share of the remaining epsilon asks first (--confirm-share)."""


# --- dispatch ----------------------------------------------------------------------------------
Handler = Callable[[Session, ReplState, str], Output]


def _describe(session: Session, state: ReplState, arg: str) -> Output:
    views = view_tables(session.policy) if session.policy.views else {}  # [views.<name>]: listed like tables
    if not arg:
        return Output(describe_tables(session.policy, views))
    table = session.policy.table(arg.strip('"')) or views.get(arg.strip('"').lower())
    if table is None:
        return Output(error=f"unknown table {arg!r}: \\d lists the tables of the policy", ok=False)
    return Output(describe_table(table))


def _budget(session: Session, state: ReplState, arg: str) -> Output:
    return Output(budget_text(session.analyst, session.total_budget, session.spent, session.remaining,
                              session.ledger_entries(), session.policy.budget.accountant, session.queries_left))


def _history(session: Session, state: ReplState, arg: str) -> Output:
    return Output(history_text(session.ledger_entries()))


def _explain(session: Session, state: ReplState, arg: str) -> Output:
    if not arg:
        return Output(error="usage: \\explain SELECT ...", ok=False)
    try:
        return Output(render_table(session.explain(arg)))
    except errors.Error as error:
        return Output(error=f"ERROR: {error}", ok=False)


def _timing(session: Session, state: ReplState, arg: str) -> Output:
    choice = arg.lower()
    if choice not in ("", "on", "off"):
        return Output(error="usage: \\timing [on|off]", ok=False)
    state.timing = not state.timing if not choice else choice == "on"
    return Output(f"Timing is {'on' if state.timing else 'off'}.")


def _help(session: Session, state: ReplState, arg: str) -> Output:
    return Output(HELP)


def _quit(session: Session, state: ReplState, arg: str) -> Output:
    return Output(quit=True)


COMMANDS: dict[str, Handler] = {
    "\\d": _describe, "\\dt": _describe, "\\describe": _describe,
    "\\budget": _budget,
    "\\history": _history,
    "\\explain": _explain,
    "\\timing": _timing,
    "\\help": _help, "\\?": _help, "\\h": _help,
    "\\q": _quit, "\\quit": _quit,
}  # fmt: skip


def run_command(line: str, session: Session, state: ReplState) -> Output:
    r"""Run one backslash command line (`\d people`); a trailing `;` is ignored."""
    name, _, arg = line.strip().rstrip(";").strip().partition(" ")
    handler = COMMANDS.get(name.lower())
    if handler is None:
        return Output(error=f"unknown command {name}: \\help lists the commands", ok=False)
    return handler(session, state, arg.strip())

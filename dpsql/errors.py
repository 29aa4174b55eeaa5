"""The one exception module: the PEP 249 tree, dpsql's classes under it, each with its SQLSTATE.

Nothing here imports from dpsql. Messages never carry data values: the classes that wrap an
engine error (EngineError) are given a fixed, sanitized text by the backend, never the engine's.
"""

from __future__ import annotations

from dataclasses import dataclass

REFERENCE = "docs/sql-reference.md"  # every rule code has an anchor there (#dp104)


def _with_reference(hint: str | None, code: str | None) -> str | None:
    """A hint that ends with the link to its code's row in the SQL reference."""
    if code is None or not code.startswith("DP") or not code[2:].isdigit():
        return hint
    if hint is None:
        return None
    link = f"{REFERENCE}#{code.lower()}"
    return hint if link in hint else f"{hint.rstrip('.')} ({link})"


@dataclass(frozen=True, slots=True)
class Span:
    """Where in the SQL text an error points: 1-based line/col and 0-based [start, end)."""

    start: int
    end: int
    line: int = 1
    col: int = 1


class Warning(Exception):  # noqa: A001 - the name is fixed by PEP 249
    """PEP 249 Warning."""


class Error(Exception):
    """PEP 249 root of every dpsql error.

    Attributes:
        sqlstate: the PostgreSQL SQLSTATE the pgwire server sends.
        code: dpsql's stable rule code (DP1xx for refusals), or None.
        span: where in the SQL the error points, or None.
        hint: how to fix it, one sentence.
    """

    sqlstate: str = "XX000"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        span: Span | None = None,
        sql: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.span = span
        self.sql = sql
        self.hint = _with_reference(hint, code)

    def __str__(self) -> str:
        head = f"{self.code}: {self.message}" if self.code else self.message
        parts = [head]
        caret = self.caret()
        if caret:
            parts.append(caret)
        if self.hint:
            parts.append(f"HINT: {self.hint}")
        return "\n".join(parts)

    def caret(self) -> str:
        """The offending SQL line with a caret under the span (empty without a span)."""
        if self.span is None or not self.sql:
            return ""
        lines = self.sql.split("\n")
        line_no = max(1, min(self.span.line, len(lines)))
        text = lines[line_no - 1]
        # Column of the span start within its line, from the absolute offset.
        line_start = sum(len(x) + 1 for x in lines[: line_no - 1])
        col = max(0, self.span.start - line_start)
        width = max(1, min(self.span.end, line_start + len(text)) - self.span.start)
        return f"  {text}\n  {' ' * col}{'^' * width}"


class InterfaceError(Error):
    """Misuse of a dpsql object (closed cursor or connection, fetch before execute)."""

    sqlstate = "08003"


class DatabaseError(Error):
    """PEP 249 DatabaseError."""

    sqlstate = "XX000"


class DataError(DatabaseError):
    """PEP 249 DataError."""

    sqlstate = "22000"


class OperationalError(DatabaseError):
    """PEP 249 OperationalError."""

    sqlstate = "58000"


class IntegrityError(DatabaseError):
    """PEP 249 IntegrityError (never raised: dpsql does not write)."""

    sqlstate = "23000"


class InternalError(DatabaseError):
    """A dpsql bug or a violated privacy invariant: please report it."""

    sqlstate = "XX000"


class ProgrammingError(DatabaseError):
    """The analyst's query or call is wrong."""

    sqlstate = "42000"


class NotSupportedError(DatabaseError):
    """A DB-API feature dpsql does not support (transactions, rollback)."""

    sqlstate = "0A000"


class SqlSyntaxError(ProgrammingError):
    """The SQL does not parse."""

    sqlstate = "42601"


class UnsupportedQueryError(ProgrammingError):
    """The SQL parses but is outside the accepted subset (a DP1xx rule; grammar/semantic_rules.md)."""

    sqlstate = "0A000"


class UnknownTableError(ProgrammingError):
    """A table that the policy does not declare."""

    sqlstate = "42P01"


class UnknownColumnError(ProgrammingError):
    """A column that the policy does not declare."""

    sqlstate = "42703"


class ParameterError(ProgrammingError):
    """Wrong or missing DB-API parameters."""

    sqlstate = "22023"


class InvalidOptionError(ProgrammingError):
    """A privacy option or session setting with a wrong name or value."""

    sqlstate = "22023"


class BudgetExhaustedError(OperationalError):
    """The query would spend more than the analyst's remaining budget. Nothing was read."""

    sqlstate = "53400"

    def __init__(self, message: str, *, requested: object = None, remaining: object = None) -> None:
        super().__init__(message, code="DP200", hint="Ask the data owner for more budget, or lower the query's epsilon.")
        self.requested = requested
        self.remaining = remaining


class MedianMechanismHaltedError(OperationalError):
    """The Median Mechanism layer used all its hard slots and the policy refuses further counting
    queries on the table (`after_halt = "refuse"`). Nothing was read or charged; the condition is
    public (the number of hard answers is part of what was released)."""

    sqlstate = "53400"

    def __init__(self, message: str) -> None:
        super().__init__(message, code="DP201",
                         hint="ask the data owner to set after_halt = \"laplace\", or open a new session with new budget")


class MedianMechanismWarning(UserWarning):
    """The Median Mechanism layer is configured but not used (too few hard slots, or budget short)."""


class EngineError(OperationalError):
    """The engine failed while running a charged query. The text is fixed: never the engine's."""

    sqlstate = "58000"


class CatalogQueryError(EngineError):
    """A catalog probe of the pgwire server failed in the metadata database (its text names no
    data: there is none)."""

    sqlstate = "42000"


class CatalogLimitError(CatalogQueryError):
    """A catalog probe of the pgwire server passed one of the metadata database's limits (time,
    memory, rows); the SQLSTATE is given per instance."""

    def __init__(self, sqlstate: str, message: str) -> None:
        super().__init__(message, code="DP403", hint="catalog queries are bounded; ask for less (server.catalog_* in the policy)")
        self.sqlstate = sqlstate


class ServerError(DatabaseError):
    """A protocol-level error of the pgwire server itself (its SQLSTATE is given per instance)."""

    def __init__(self, sqlstate: str, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.sqlstate = sqlstate


class CatalogError(DatabaseError):
    """The policy file (or another configuration file) is invalid; names the file and key."""

    sqlstate = "F0000"


class LedgerError(OperationalError):
    """The budget ledger could not be read or written; the query was not run."""

    sqlstate = "58030"


__all__ = [
    "BudgetExhaustedError",
    "CatalogError",
    "CatalogQueryError",
    "DataError",
    "DatabaseError",
    "EngineError",
    "Error",
    "IntegrityError",
    "InterfaceError",
    "InternalError",
    "InvalidOptionError",
    "LedgerError",
    "MedianMechanismHaltedError",
    "MedianMechanismWarning",
    "NotSupportedError",
    "OperationalError",
    "ParameterError",
    "ProgrammingError",
    "ServerError",
    "Span",
    "SqlSyntaxError",
    "UnknownColumnError",
    "UnknownTableError",
    "UnsupportedQueryError",
    "Warning",
]

"""Public tables beside released results: their rows, read exactly, for the post-processing database.

An outer query may join released rows with a PUBLIC table of the policy (analysis/post_processing.py,
PublicInput). Public rows may be read freely and exactly, so they are read through the session's
engine like any public query (no noise, no charge) and handed to the released-values database
(backend/auxiliary/released_db.py) as tables of their own, beside the released ones. A private
table never gets here: the analysis admits a table only when the policy declares it public.

A public table is read whole (its declared columns), at most MAX_PUBLIC_ROWS rows and
MAX_PUBLIC_BYTES of values, before the charge: a larger one is refused (DP129) uncharged. The
refusal depends on public rows only.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from dpsql.backend.auxiliary.released_db import MAX_BYTES, MAX_ROWS, ReleasedTable, value_bytes
from dpsql.errors import UnsupportedQueryError
from dpsql.execution.engine_calls import EngineCalls
from dpsql.ir.post_query import PostQuery, PublicInput

# The same caps as an outer query's result: the post-processing database holds no more.
MAX_PUBLIC_ROWS = MAX_ROWS
MAX_PUBLIC_BYTES = MAX_BYTES


def public_schemas(query: PostQuery, calls: EngineCalls) -> tuple[ReleasedTable, ...]:
    """Each public table's schema (no rows: the engine reads LIMIT 0)."""
    out = []
    for public in query.public:
        described = calls.describe_public(public.read, (public.table,))
        out.append(ReleasedTable(public.name, public.columns, tuple(described.types), []))
    return tuple(out)


def public_rows(query: PostQuery, schemas: tuple[ReleasedTable, ...], calls: EngineCalls) -> list[ReleasedTable]:
    """Each public table with its rows, read exactly; DP129 when one is over the caps."""
    return [ReleasedTable(s.name, s.columns, s.types, _read(public, calls)) for public, s in zip(query.public, schemas)]


def _read(public: PublicInput, calls: EngineCalls) -> list[tuple[Any, ...]]:
    capped = public.read.copy()
    capped.set("limit", exp.Limit(expression=exp.Literal.number(MAX_PUBLIC_ROWS + 1)))
    rows = calls.run_public(capped, (public.table,)).rows
    if len(rows) > MAX_PUBLIC_ROWS or value_bytes(rows) > MAX_PUBLIC_BYTES:
        raise UnsupportedQueryError(
            f"the public table '{public.table.name}' has more than {MAX_PUBLIC_ROWS:,} rows or "
            f"{MAX_PUBLIC_BYTES // 2**20} MiB of values: too large to join with released results; nothing was charged",
            code="DP129", hint="join the released results with a smaller public table, or aggregate the public table in "
            "its own query")
    return rows

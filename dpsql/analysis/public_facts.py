"""What the analysis may read from public tables: facts computed exactly from public rows (a
public table may be read freely), never from private ones. The session implements it over its
engine (backend/public_facts.py); compiling without a session has none, and a join with a public
table is then refused (DP139).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Protocol

from dpsql.catalog.model import Scalar, Table


class PublicFacts(Protocol):
    """Exact facts about public tables."""

    def max_fanout(self, table: Table, columns: tuple[str, ...]) -> int:
        """The largest number of rows sharing one non-NULL value tuple of `columns` (0: none)."""

    def distinct_values(self, table: Table, column: str, limit: int) -> tuple[Scalar, ...] | None:
        """The column's distinct non-NULL values in order, or None when there are more than `limit`."""

    def value_range(self, table: Table, column: str) -> tuple[Fraction, Fraction] | None:
        """The column's smallest and largest non-NULL value, or None when it has none."""

"""What the analysis may read from public tables: facts computed exactly from public rows (a
public table may be read freely), never from private ones. The session implements it over its
engine (backend/engines/public_tables.py); compiling without a session has none, and a join with a public
table is then refused (DP139).

A public table declared without `[columns]` takes its columns from its source's schema when the
session opens (`with_source_columns`): public data, so reading its schema is free.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from fractions import Fraction
from types import MappingProxyType
from typing import Protocol

from dpsql.catalog.policy import Column, Policy, Scalar, Table


class PublicFacts(Protocol):
    """Exact facts about public tables."""

    def max_fanout(self, table: Table, columns: tuple[str, ...]) -> int:
        """The largest number of rows sharing one non-NULL value tuple of `columns` (0: none)."""

    def distinct_values(self, table: Table, column: str, limit: int) -> tuple[Scalar, ...] | None:
        """The column's distinct non-NULL values in order, or None when there are more than `limit`."""

    def value_range(self, table: Table, column: str) -> tuple[Fraction, Fraction] | None:
        """The column's smallest and largest non-NULL value, or None when it has none."""

    def source_columns(self, table: Table) -> Mapping[str, Column] | None:
        """The columns of a public table's source, with the policy types dpsql has for them (others
        left out), or None when the source cannot be read."""


def with_source_columns(policy: Policy, facts: PublicFacts) -> Policy:
    """The policy with every public table declared without columns given its source's columns
    (those that cannot be read stay without: a query naming the table is refused with DP002)."""
    filled = {}
    for name, table in policy.tables.items():
        if table.public and not table.columns:
            columns = facts.source_columns(table)
            if columns:
                filled[name] = dataclasses.replace(table, columns=MappingProxyType(dict(columns)))
    if not filled:
        return policy
    return dataclasses.replace(policy, tables=MappingProxyType({**policy.tables, **filled}))

"""Exact facts of public tables for the analysis (analysis/public_facts.py), read through the
session's engine: public rows may be read freely, and nothing here touches a private table."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from fractions import Fraction

from sqlglot import exp

from dpsql.backend.auxiliary.schema_reader import policy_type
from dpsql.backend.engines.engine import BackendFailure, Engine, type_name
from dpsql.backend.sql.engine_dialects import IsFinite
from dpsql.catalog.policy import Column, Scalar, Table
from dpsql.errors import CatalogError


class EnginePublicFacts:
    """PublicFacts over a session's engine, cached per session (public tables do not change
    under a session)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._cache: dict[tuple[object, ...], object] = {}

    def _run(self, key: tuple[object, ...], select: Callable[[], exp.Select], table: Table) -> list[tuple[object, ...]]:
        """The rows of `select()` over `table`, read once per session (the statement is built only then)."""
        if key not in self._cache:
            self._cache[key] = self._engine.run_public(select(), (table,)).rows
        return self._cache[key]  # type: ignore[return-value]

    def max_fanout(self, table: Table, columns: tuple[str, ...]) -> int:
        def select() -> exp.Select:
            keys = [exp.column(c, quoted=True) for c in columns]
            present = exp.and_(*[exp.Not(this=exp.Is(this=k.copy(), expression=exp.Null())) for k in keys])
            groups = (exp.select(exp.alias_(exp.Count(this=exp.Star()), "n")).from_(exp.Table(this=exp.to_identifier(table.name)))
                      .where(present).group_by(*keys))
            return exp.select(exp.Max(this=exp.column("n"))).from_(groups.subquery("g"))

        rows = self._run(("fanout", table.name, columns), select, table)
        value = rows[0][0] if rows else None
        return int(value) if value is not None else 0  # type: ignore[call-overload]

    def distinct_values(self, table: Table, column: str, limit: int) -> tuple[Scalar, ...] | None:
        def select() -> exp.Select:
            col = exp.column(column, quoted=True)
            return (exp.select(col).distinct().from_(exp.Table(this=exp.to_identifier(table.name)))
                    .where(exp.Not(this=exp.Is(this=col.copy(), expression=exp.Null()))).order_by(col.copy()).limit(limit + 1))

        rows = self._run(("values", table.name, column, limit), select, table)
        if len(rows) > limit:
            return None
        return tuple(_scalar(r[0]) for r in rows)

    def value_range(self, table: Table, column: str) -> tuple[Fraction, Fraction] | None:
        def select() -> exp.Select:
            col = exp.column(column, quoted=True)
            finite = exp.and_(exp.Not(this=exp.Is(this=col.copy(), expression=exp.Null())),
                              IsFinite(this=exp.cast(col.copy(), "DOUBLE"), kind=exp.Literal.string("float")))
            return exp.select(exp.Min(this=col.copy()), exp.Max(this=col.copy())).from_(exp.Table(this=exp.to_identifier(table.name))).where(finite)

        rows = self._run(("range", table.name, column), select, table)
        if not rows or rows[0][0] is None:
            return None
        low, high = rows[0]
        return _fraction(low), _fraction(high)


    def source_columns(self, table: Table) -> dict[str, Column] | None:
        # The schema only (LIMIT 0), under a name of its own: the typed source view the session
        # builds later registers the same data again under the table's raw name.
        probe = f"__dpsql_columns_{table.name}"
        try:
            self._engine.backend.register(table, probe)
            schema = self._engine.backend.schema(probe)
        except (CatalogError, BackendFailure):
            return None
        columns = {}
        for field in schema:
            kind = policy_type(type_name(field.type))
            name = field.name.lower()
            if kind is not None and name not in columns:
                columns[name] = Column(name=name, type=kind)  # type: ignore[arg-type]
        return columns


def _fraction(value: object) -> Fraction:
    if isinstance(value, (int, float, str)):
        return Fraction(value)
    return Fraction(str(value))  # a DECIMAL


def _scalar(value: object) -> Scalar:
    if isinstance(value, (bool, int, float, str, datetime.date)):
        return value
    return str(value)

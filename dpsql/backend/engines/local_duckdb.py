"""The local DuckDB of the process: public domain tables (the Median Mechanism's), for every engine."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import duckdb
from sqlglot import exp

from dpsql.backend.sql.engine_dialects import render as render_for

if TYPE_CHECKING:
    import numpy


def render(expression: exp.Expr) -> str:
    """DuckDB SQL text for an expression."""
    return render_for(expression, "duckdb")


class LocalDuckDB:
    """Public domain tables, in a DuckDB of the process (never private rows): the Median
    Mechanism's masks over its public domain run here for every engine, so they agree across
    engines. (Released values are post-processed in backend/auxiliary/released_db.py.)"""

    def __init__(self, connection: duckdb.DuckDBPyConnection | None = None, lock: threading.RLock | None = None) -> None:
        self._owned = connection is None
        self._con = connection if connection is not None else duckdb.connect(":memory:")
        self._lock = lock or threading.RLock()
        self._tables: set[str] = set()

    def ensure_public_table(self, name: str, create: exp.Create) -> str:
        """Create a session table that holds public rows only (the Median Mechanism domain), once."""
        with self._lock:
            if name not in self._tables:
                self._con.execute(render(create))
                self._tables.add(name)
            return name

    def public_arrays(self, select: exp.Expr) -> dict[str, numpy.ndarray] | None:
        """Columns of a query over public session tables as arrays; None when DuckDB rejects it.

        Only for queries that read no private relation, so a rejection depends on the query alone
        and can route the query elsewhere.
        """
        import numpy  # the Median Mechanism's masks only

        with self._lock:
            try:
                fetched = self._con.execute(render(select)).fetchnumpy()
            except duckdb.Error:
                return None
            return {name: numpy.asarray(values) for name, values in fetched.items()}

    def reference_check(self, relations: Mapping[str, exp.Select], select: exp.Expr, params: Mapping[str, Any] | None,
                        names: Mapping[str, str]) -> str | None:
        """Whether DuckDB (dpsql's reference engine) runs `select` over the empty relations
        `relations` (name -> a SELECT of typed NULLs, no rows): DuckDB's error text, or None.
        `names` maps each session relation the statement reads to its empty stand-in.
        Another engine's dry run asks, so that a statement DuckDB rejects (a type error its
        binder catches) is refused on every engine. No data is present: the text is safe to show."""
        with self._lock:
            failure = None
            try:
                for name, empty in relations.items():
                    self._con.execute(render(exp.Create(this=exp.to_table(name, quoted=True), kind="TABLE", replace=True,
                                                        expression=empty, properties=exp.Properties(expressions=[exp.TemporaryProperty()]))))
                self._con.execute(render_for(select, "duckdb", names), dict(params or {})).fetchall()
            except duckdb.Error as err:
                failure = str(err)
            return failure

    def close(self) -> None:
        """Close the connection if this object opened it."""
        if self._owned:
            with self._lock:
                self._con.close()

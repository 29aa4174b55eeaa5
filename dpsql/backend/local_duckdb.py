"""The local DuckDB of the process: released values and public domain tables, for every engine."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Mapping

import duckdb
from sqlglot import exp

from dpsql.backend.dialects import render as render_for
from dpsql.backend.engine import ENGINE_FAILED, EngineResult
from dpsql.backend.released_lists import list_values, unnest_select
from dpsql.errors import EngineError

if TYPE_CHECKING:
    import numpy

TEXTS_MAX = 256  # post-processing texts remembered per session


def render(expression: exp.Expr) -> str:
    """DuckDB SQL text for an expression."""
    return render_for(expression, "duckdb")


class LocalDuckDB:
    """Released values and public domain tables, in a DuckDB of the process (never private rows).

    Post-processing (outputs, HAVING, ORDER BY over noisy values) and the Median Mechanism's
    masks over its public domain run here for every engine, so they agree across engines.
    """

    def __init__(self, connection: duckdb.DuckDBPyConnection | None = None, lock: threading.RLock | None = None) -> None:
        self._owned = connection is None
        self._con = connection if connection is not None else duckdb.connect(":memory:")
        self._lock = lock or threading.RLock()
        self._tables: set[str] = set()
        self._texts: dict[tuple[exp.Expr, tuple[str, ...], tuple[str, ...]], str] = {}  # see postprocess

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

    def postprocess(self, columns: dict[str, list[Any]], types: dict[str, str], select: exp.Select) -> EngineResult:
        """Evaluate post-processing SQL over the noisy table (released values only), bound as list
        parameters (backend/released_lists.py: no DataFrame)."""
        with self._lock:
            params = {f"__dpsql_v{i}": list_values(values) for i, values in enumerate(columns.values())}
            # The text depends on the statement and the noisy table's names and types only (the
            # values are parameters): rendered once per statement and types, then reused (a
            # query's dry run, describe and answer; a repeated query).
            key = (select, tuple(columns), tuple(types[n] for n in columns))
            text = self._texts.get(key)
            if text is None:
                frame = unnest_select(list(columns), list(params))
                typed = exp.select(
                    *[exp.alias_(exp.cast(exp.column(n, quoted=True), types[n]), n) for n in columns]
                ).from_(frame.subquery("__dpsql_noisy_frame"))
                query = select.copy()
                query.set("from_", exp.From(this=typed.subquery("__dpsql_noisy")))
                if len(self._texts) >= TEXTS_MAX:
                    self._texts.clear()
                text = self._texts[key] = render(query)
            result = None
            try:
                cursor = self._con.execute(text, params)
                names = tuple(d[0] for d in cursor.description)
                result = EngineResult(names, tuple(str(d[1]) for d in cursor.description), cursor.fetchall())
            except duckdb.Error:
                pass  # raised below, outside the except block (no __context__)
            if result is None:
                raise EngineError(ENGINE_FAILED, code="DP300")
            return result

    def close(self) -> None:
        """Close the connection if this object opened it."""
        if self._owned:
            with self._lock:
                self._con.close()

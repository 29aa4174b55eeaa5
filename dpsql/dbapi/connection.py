"""PEP 249 Connection and Cursor over one Session. No privacy logic lives here."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dpsql import errors
from dpsql.accounting.ledger import LedgerEntry
from dpsql.dbapi.placeholders import to_qmark, uses_pyformat
from dpsql.errors import InterfaceError, NotSupportedError, SqlSyntaxError
from dpsql.render import rounded
from dpsql.result import NoisyResult, with_ci_columns
from dpsql.session import Session, SessionOptions

if TYPE_CHECKING:
    import pandas
    from matplotlib.axes import Axes


class Cursor:
    """A PEP 249 cursor. `noise_info` holds one dict per output column (None for group keys)."""

    arraysize = 1

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._result: NoisyResult | None = None
        self._position = 0
        self.closed = False

    @property
    def description(self) -> tuple[tuple[Any, ...], ...] | None:
        """Seven-item column descriptions; None before a query that returns rows."""
        if self._result is None or not self._result.columns:
            return None
        return tuple((c.name, c.type_name, None, None, None, None, None) for c in self._result.columns)

    @property
    def rowcount(self) -> int:
        """Number of rows of the last result, -1 when there is none (or for a column probe: its
        columns are answered, its rows are not available)."""
        if self._result is None or not self._result.columns or self._result.kind == "probe":
            return -1
        return len(self._result.rows)

    @property
    def messages(self) -> list[tuple[type[errors.Warning], str]]:
        """PEP 249's optional messages: why a column probe has no rows."""
        if self._result is not None and self._result.kind == "probe" and self._result.message:
            return [(errors.Warning, self._result.message)]
        return []

    @property
    def noise_info(self) -> list[dict[str, Any] | None]:
        """Per output column: mechanism, scale, ci95 (95% half-width), epsilon, delta."""
        return [dict(i) if i is not None else None for i in self._result.noise_info] if self._result else []

    @property
    def cell_ci95(self) -> list[tuple[float | None, ...]]:
        """95% half-widths per cell of the last result (None for keys and exact values)."""
        return list(self._result.cell_ci95) if self._result else []

    @property
    def cell_ci_low(self) -> list[tuple[float | None, ...]]:
        """Each cell's 95% interval low end (what CI_LOW gives: clipped to the possible range, so not
        always value - ci95; None for keys, exact values and ⊥)."""
        return self._ends(0)

    @property
    def cell_ci_high(self) -> list[tuple[float | None, ...]]:
        """Each cell's 95% interval high end (what CI_HIGH gives; None for keys, exact values and ⊥)."""
        return self._ends(1)

    def _ends(self, side: int) -> list[tuple[float | None, ...]]:
        result = self._result
        if result is None:
            return []
        return [tuple(None if (ends := result.interval(r, c)) is None else ends[side] for c in range(len(row)))
                for r, row in enumerate(result.rows)]

    @property
    def result(self) -> NoisyResult | None:
        """The last NoisyResult (what the REPL and server render)."""
        return self._result

    def _check(self) -> None:
        if self.closed:
            raise InterfaceError("the cursor is closed")
        self.connection._check()

    def execute(self, operation: str, parameters: Sequence[object] | Mapping[str, object] | None = None) -> Cursor:
        """Run one statement with qmark (`?`) parameters; psycopg's `%s` (a sequence) and `%(name)s`
        (a mapping) are accepted too. With `ci_columns` on, `<col>_ci95`, `<col>_ci_low` and
        `<col>_ci_high` columns follow each noisy one."""
        self._check()
        self._result = None
        sql, values = to_qmark(operation, parameters)
        session = self.connection.session
        try:
            result = session.execute(sql, values)
        except SqlSyntaxError as error:
            if parameters is None and uses_pyformat(operation):
                raise errors.ParameterError("the statement has %s placeholders but no parameters were given",
                                            code="DP118", hint="pass the values (execute(sql, [v1, v2])); dpsql's own placeholder is ?") from error
            raise
        if session.round and result.kind == "query":  # SET dpsql.round = on: fetched values rounded too
            result = rounded(result)
        self._result = with_ci_columns(result) if session.ci_columns and result.kind == "query" else result
        self._position = 0
        return self

    def executemany(self, operation: str, seq_of_parameters: Sequence[Sequence[object]]) -> Cursor:
        """Run the statement once per parameter set (each run is charged)."""
        for parameters in seq_of_parameters:
            self.execute(operation, parameters)
        return self

    def _rows(self) -> list[tuple[Any, ...]]:
        self._check()
        if self._result is None or not self._result.columns:
            raise InterfaceError("no result to fetch: execute a query first")
        return self._result.rows

    def fetchone(self) -> tuple[Any, ...] | None:
        """The next row, or None."""
        rows = self._rows()
        if self._position >= len(rows):
            return None
        self._position += 1
        return rows[self._position - 1]

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        """Up to `size` (default arraysize) next rows."""
        rows = self._rows()
        count = self.arraysize if size is None else size
        chunk = rows[self._position : self._position + count]
        self._position += len(chunk)
        return chunk

    def fetchall(self) -> list[tuple[Any, ...]]:
        """All remaining rows."""
        rows = self._rows()
        chunk = rows[self._position :]
        self._position = len(rows)
        return chunk

    def fetchdf(self) -> pandas.DataFrame:
        """The remaining rows as a DataFrame; noise metadata in `df.attrs`."""
        import pandas  # only here: importing it costs a third of a second, `import dpsql` does not pay it

        result = self._result
        rows = self.fetchall()
        assert result is not None
        frame = pandas.DataFrame(rows, columns=[c.name for c in result.columns])
        frame.attrs["noise_info"] = self.noise_info
        frame.attrs["ci95"] = self.cell_ci95
        frame.attrs["ci_low"], frame.attrs["ci_high"] = self.cell_ci_low, self.cell_ci_high  # asymmetric error bars
        frame.attrs["epsilon"] = float(result.cost.epsilon)
        frame.attrs["delta"] = float(result.cost.delta)
        return frame

    def plot(self, x: str | None = None, y: str | Sequence[str] | None = None, **kwargs: Any) -> Axes:
        """The last answer as a bar chart with its 95% intervals as error bars and its cost as a
        caption (needs matplotlib: `pip install 'dpsql[plot]'`; see dpsql.dbapi.notebook.plot)."""
        from dpsql.dbapi.notebook import plot

        if self._result is None or not self._result.columns:
            raise InterfaceError("no result to plot: execute a query first")
        return plot(self._result, x, y, **kwargs)

    def _repr_html_(self) -> str:
        """The last answer in a notebook: values with ±, its cost and the remaining budget."""
        from dpsql.dbapi.notebook import html_table

        if self._result is None:
            return "<p>dpsql cursor: no statement executed yet</p>"
        session = self.connection.session
        remaining = session.remaining if self._result.kind == "query" else None
        left = session.queries_like(self._result.replay.cost if self._result.replay is not None else None) \
            if remaining is not None else None
        return html_table(self._result, remaining, left, session.round is not False)

    def setinputsizes(self, sizes: Any) -> None:
        """Accepted and ignored (PEP 249)."""

    def setoutputsize(self, size: Any, column: Any = None) -> None:
        """Accepted and ignored (PEP 249)."""

    def close(self) -> None:
        """Close the cursor."""
        self.closed = True

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while (row := self.fetchone()) is not None:
            yield row

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Connection:
    """A PEP 249 connection: one analyst's Session on one data source."""

    Warning = errors.Warning
    Error = errors.Error
    InterfaceError = errors.InterfaceError
    DatabaseError = errors.DatabaseError
    DataError = errors.DataError
    OperationalError = errors.OperationalError
    IntegrityError = errors.IntegrityError
    InternalError = errors.InternalError
    ProgrammingError = errors.ProgrammingError
    NotSupportedError = errors.NotSupportedError

    def __init__(self, session: Session) -> None:
        self.session = session
        self.closed = False

    def _check(self) -> None:
        if self.closed:
            raise InterfaceError("the connection is closed")

    def cursor(self) -> Cursor:
        """A new cursor."""
        self._check()
        return Cursor(self)

    def execute(self, operation: str, parameters: Sequence[object] | None = None) -> Cursor:
        """Shortcut: a new cursor, executed."""
        return self.cursor().execute(operation, parameters)

    def commit(self) -> None:
        """No-op: dpsql never writes data (the ledger commits each charge itself)."""
        self._check()

    def rollback(self) -> None:
        """Not supported: a charge is never refunded."""
        self._check()
        raise NotSupportedError("rollback is not supported: privacy charges are final", code="DP301")

    @property
    def budget(self) -> tuple[float, float]:
        """(epsilon_remaining, delta_remaining)."""
        self._check()
        remaining = self.session.remaining
        return float(remaining.epsilon), float(remaining.delta)

    @property
    def queries_left(self) -> int | None:
        """How many more queries like the last one charged on this connection fit the remaining
        budget under the policy's accountant; None before the first charge."""
        self._check()
        return self.session.queries_left

    def ledger(self) -> list[LedgerEntry]:
        """This analyst's ledger entries, oldest first."""
        self._check()
        return self.session.ledger_entries()

    def close(self) -> None:
        """Close the session (idempotent)."""
        if not self.closed:
            self.closed = True
            self.session.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(*args: Any, **kwargs: Any) -> Connection:
    """Open a dpsql connection: `connect(database=None, policy=None, analyst=None, ledger=None,
    tables=None, random_seed=None, engine="duckdb", spark=None, master=None, remote=None,
    progress=None, prepare=True, shared=None, ci_columns=None, round=None)`, the fields of
    `dpsql.session.SessionOptions` in their order.

    With neither database, policy nor tables: the bundled demo. `random_seed` makes the noise
    reproducible: for tests and marked experiments only. `engine="spark"` runs the plans on
    Apache Spark: pass your SparkSession (`spark=`), or let dpsql start one (`master="local[2]"`
    or `"spark://host:7077"`; Spark Connect: `remote="sc://host"`). `tables` may then hold
    Spark DataFrames as well as pandas ones. `prepare=True` starts building the bounded relations
    of the policy's sources in the background at connect (the first query waits only for the rest).
    `shared`: a DuckDB database from `dpsql.session.open_shared(policy)` for several connections
    of one process (what `dpsql serve` does): each private table is bounded once for all of them.
    `ledger` is where the budget is charged: a SQLite file path, a `postgresql://` URL (one
    budget shared by several processes and hosts; needs the `postgres` extra), ":memory:" (a
    throwaway budget), or None: the policy's `[budget] ledger` if it fixes one (a different
    `ledger` is then refused), the demo's ledger in the user cache directory for the demo, else
    a fresh in-memory budget for this connection. `ci_columns=True` adds `<col>_ci95` (the 95%
    half-width), `<col>_ci_low` and `<col>_ci_high` (its ends, clipped to the possible range)
    after each noisy column of every answer (`SET dpsql.ci_columns` changes it;
    None: the policy's `[server] ci_columns`). `round=True` rounds fetched values to their
    interval's precision (`SET dpsql.round`; None: exact in fetched rows, rounded where shown).
    A repeated statement within the policy's `[budget] replay_seconds` gets the answer released
    before, free (docs/privacy-model.md, "Replayed answers").
    """
    return Connection(SessionOptions(*args, **kwargs).open())

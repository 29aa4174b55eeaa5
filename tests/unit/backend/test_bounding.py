"""The bounded relation: light persons pass through untouched, heavy persons are cut by the keyed
hash, and the result is the same multiset of rows as ranking every person (the form the privacy
argument was written for)."""

from __future__ import annotations

from fractions import Fraction

import duckdb
import pytest
from sqlglot import exp

from dpsql.backend.sql.bounding import bounding_steps
from dpsql.backend.sql.engine_dialects import render
from dpsql.backend.sql.plan_sql import ROW_RANK, bounded_select, fixed_point_name, fixed_point_units, rank_by_hash, seed_placeholder
from dpsql.catalog.loader import policy_from_dict

POLICY = policy_from_dict({
    "budget": {"epsilon": 1, "delta": 1e-6, "default_query_epsilon": 0.1, "default_query_delta": 0},
    "tables": {"t": {"privacy_unit": "pid", "max_rows": 3, "columns": {
        "pid": {"type": "int"}, "x": {"type": "float", "lower": 0, "upper": 10}, "s": {"type": "text"}}}},
})
TABLE = POLICY.table("t")


def everybody_ranked() -> exp.Select:
    """The previous form: every person through the keyed-hash window."""
    unit = exp.column("pid", quoted=True)
    names = list(TABLE.columns)
    rank = rank_by_hash([unit.copy()], [(exp.column(c.name, quoted=True), c.type) for c in TABLE.columns.values()],
                        seed_placeholder())
    ranked = (exp.select(*[exp.column(n, quoted=True) for n in names], exp.alias_(rank, ROW_RANK)).from_("src")
              .where(exp.Not(this=exp.Is(this=unit.copy(), expression=exp.Null()))))
    return (exp.select(*[exp.column(n, quoted=True) for n in names]).from_(ranked.subquery("r"))
            .where(exp.LTE(this=exp.column(ROW_RANK), expression=exp.Literal.number(TABLE.max_rows))))


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    # persons 0..999 with 1..7 rows each (duplicates included), and rows without a person
    connection.execute("""CREATE TABLE src AS
        SELECT p AS pid, (p * 13 + k) % 11 * 0.5 AS x, 's' || ((p + k) % 4) AS s
        FROM range(1000) a(p), range(7) b(k) WHERE k <= p % 7
        UNION ALL SELECT p, 1.0, 'dup' FROM range(0, 1000, 17) a(p), range(5)
        UNION ALL SELECT NULL, 2.0, 'none' FROM range(20)""")
    return connection


def rows(con: duckdb.DuckDBPyConnection, select: exp.Expr, seed: int) -> list[tuple]:
    return sorted(con.execute(render(select, "duckdb"), {"seed": seed}).fetchall(), key=repr)


def policy_columns(select: exp.Expr) -> exp.Select:
    """The bounded relation without its prepared fixed-point columns (checked apart below)."""
    return exp.select(*[exp.column(n, quoted=True) for n in TABLE.columns]).from_(select.subquery("b"))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_rows_as_ranking_everybody(con: duckdb.DuckDBPyConnection, seed: int) -> None:
    new, old = rows(con, policy_columns(bounded_select(TABLE, "src")), seed), rows(con, everybody_ranked(), seed)
    assert new == old
    per_person: dict[int, int] = {}
    for pid, *_ in new:
        per_person[pid] = per_person.get(pid, 0) + 1
    assert None not in per_person and max(per_person.values()) == TABLE.max_rows
    assert len(per_person) == 1000  # every person keeps at least one row


def test_negative_control_another_seed_changes_the_heavy_rows(con: duckdb.DuckDBPyConnection) -> None:
    # The comparison above can see a difference: heavy persons' rows depend on the seed.
    assert rows(con, bounded_select(TABLE, "src"), 1) != rows(con, bounded_select(TABLE, "src"), 2)


def test_prepared_fixed_point_column() -> None:
    # x (float, bounds [0, 10]) is carried as round(clamp(x) / grid) on the planner's grid, NULL
    # for NULL, NaN and +-inf: what SUM(x) and AVG(x) then read instead of recomputing it per query.
    grid, lower, upper = fixed_point_units(TABLE.columns["x"])
    assert (grid, lower, upper) == (Fraction(1, 2**27), 0, 10 * 2**27)  # about 2^30 steps up to the bound
    connection = duckdb.connect()
    connection.execute("""CREATE TABLE src AS SELECT row_number() OVER () AS pid, x::DOUBLE AS x, 's' AS s
        FROM (VALUES (-3.0), (0.0), (2.5), (1e-9), (1e-7), (10.0), (11.5), (NULL), ('nan'), ('inf'), ('-inf')) v(x)""")
    got = {r[0]: r[1] for r in connection.execute(render(exp.select(
        "x", exp.column(fixed_point_name(TABLE.columns["x"]), quoted=True)).from_(bounded_select(TABLE, "src").subquery("b")),
        "duckdb"), {"seed": 1}).fetchall() if r[0] is not None and r[0] == r[0] and abs(r[0]) != float("inf")}
    assert got == {-3.0: 0, 0.0: 0, 2.5: 5 * 2**26, 1e-9: 0, 1e-7: 13, 10.0: 10 * 2**27, 11.5: 10 * 2**27}
    nulls = connection.execute(render(exp.select(exp.func("count", exp.Star())).from_(bounded_select(TABLE, "src").subquery("b")).where(
        exp.column(fixed_point_name(TABLE.columns["x"]), quoted=True).is_(exp.null())), "duckdb"), {"seed": 1}).fetchone()
    assert nulls == (4,)  # NULL, NaN, +inf, -inf


# --- the plan of backend/sql/bounding.py ----------------------------------------------------------

def built(con: duckdb.DuckDBPyConnection, seed: int, name: str) -> list[tuple]:
    """Run bounding_steps as Engine.ensure_bounded does; the bounded relation's rows, sorted."""
    for step in bounding_steps(TABLE, "src", name, f"{name}_heavy"):
        params = {"seed": seed} if step.seeded else {}
        assert step.table is not None, "every step creates a table: nothing is deleted or inserted afterwards"
        con.execute(render(exp.Create(this=exp.to_identifier(step.table, quoted=True), kind="TABLE", replace=True,
                                      expression=step.sql, properties=exp.Properties(expressions=[exp.TemporaryProperty()])),
                           "duckdb"), params)
    return sorted(con.execute(f'SELECT * FROM "{name}"').fetchall(), key=repr)


def stored_rows(con: duckdb.DuckDBPyConnection, name: str) -> tuple[int, int]:
    """(rows a scan returns, rows DuckDB stores): they differ when deleted rows left markers."""
    stored = con.execute("SELECT estimated_size FROM duckdb_tables() WHERE table_name = ?", [name]).fetchone()
    assert stored is not None
    return con.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0], stored[0]


@pytest.mark.parametrize("seed", [1, 2])
def test_the_plan_keeps_the_ranked_rows_and_writes_them_once(con: duckdb.DuckDBPyConnection, seed: int) -> None:
    # The same multiset of rows (with the fixed-point columns) as the single bounded_select, for
    # each seed, in a table that holds exactly its rows: no deletion markers for scans to skip.
    rows_built = built(con, seed, "b_plan")
    assert rows_built == rows(con, bounded_select(TABLE, "src"), seed)
    assert len(rows_built) == len(rows(con, everybody_ranked(), seed))
    kept, stored = stored_rows(con, "b_plan")
    assert kept == stored == len(rows_built)


def test_negative_control_deleted_rows_are_seen(con: duckdb.DuckDBPyConnection) -> None:
    # The storage check above can fail: the same relation built the earlier way (a copy of every
    # row, the heavy persons' rows deleted and their ranked rows inserted back) stores more rows
    # than it returns.
    built(con, 1, "b_marked")
    con.execute('CREATE OR REPLACE TEMPORARY TABLE "b_marked_rows" AS SELECT * FROM "b_marked" WHERE "pid" IN (SELECT "pid" FROM "b_marked_heavy")')
    con.execute('DELETE FROM "b_marked" WHERE "pid" IN (SELECT "pid" FROM "b_marked_heavy")')
    con.execute('INSERT INTO "b_marked" SELECT * FROM "b_marked_rows"')
    kept, stored = stored_rows(con, "b_marked")
    assert kept == len(built(con, 1, "b_plan")) and stored > kept


def test_an_interrupted_build_is_rebuilt_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    # The engine registers the relation only after the last step, and its tables are CREATE OR
    # REPLACE: a failure in the last step (an interrupt, a timeout) leaves nothing a query reads,
    # and the next query rebuilds the same rows.
    import pandas

    from dpsql.backend.engines.duckdb_engine import DuckDBEngine
    from dpsql.backend.engines.engine import BackendFailure, bounded_name
    from dpsql.errors import EngineError

    frame = pandas.DataFrame({"pid": [1, 1, 1, 1, 1, 2, 3, 3], "x": [0.5, 1, 2, 3, 4, 5, 6, 7], "s": list("abcdefgh")})
    engine = DuckDBEngine(POLICY, None, {"t": frame})
    backend = engine.backend
    original = backend.materialize
    failed = []

    def failing(name: str, *args: object, **kwargs: object) -> object:
        if name == bounded_name(TABLE) and not failed:
            failed.append(name)
            raise BackendFailure("interrupted")
        return original(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(backend, "materialize", failing)
    with pytest.raises(EngineError):
        engine.ensure_bounded(TABLE, 7)
    assert failed and not engine.has_relation(bounded_name(TABLE))
    name = engine.ensure_bounded(TABLE, 7)
    kept = backend.connection.execute(f'SELECT pid, COUNT(*) FROM "{name}" GROUP BY pid ORDER BY pid').fetchall()
    assert kept == [(1, 3), (2, 1), (3, 2)]
    assert stored_rows(backend.connection, name) == (6, 6)  # the engine's relation: written once
    engine.close()


def full_tie_break_ranked(drop: str | None = None) -> exp.Select:
    """Heavy persons ranked with the tie-break over every column, the person included (the form
    before the partition column was left out), or without column `drop` (a negative control)."""
    from dpsql.backend.sql.engine_dialects import KeyedHash, hash_input
    from dpsql.backend.sql.plan_sql import ordered

    unit = exp.column("pid", quoted=True)
    values = [(exp.column(c.name, quoted=True), c.type) for c in TABLE.columns.values()]
    digest = KeyedHash(this=seed_placeholder(), expressions=[hash_input(v.copy(), t) for v, t in values])
    order = [ordered(digest), *[ordered(v.copy()) for v, _ in values if v.name != drop]]
    rank = exp.Window(this=exp.RowNumber(), partition_by=[unit.copy()], order=exp.Order(expressions=order))
    return exp.select(*[exp.column(n, quoted=True) for n in TABLE.columns], exp.alias_(rank, ROW_RANK)).from_("ties")


@pytest.fixture(scope="module")
def ties() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    # Floats enter the hash as floor(x * 1024): 0.1 and 0.1001 hash alike, so persons with both
    # (and the same s) tie on the hash and only the tie-break orders them.
    connection.execute("""CREATE TABLE ties AS
        SELECT p AS pid, CASE WHEN k % 2 = 0 THEN 0.1 ELSE 0.1001 END + (k // 4) AS x, 's' || (k % 3 = 0)::INT AS s
        FROM range(300) a(p), range(6) b(k)""")
    return connection


@pytest.mark.parametrize("seed", [1, 2])
def test_leaving_the_partition_column_out_of_the_tie_break_changes_no_rank(ties: duckdb.DuckDBPyConnection, seed: int) -> None:
    unit = exp.column("pid", quoted=True)
    rank = rank_by_hash([unit.copy()], [(exp.column(c.name, quoted=True), c.type) for c in TABLE.columns.values()], seed_placeholder())
    assert '"pid" ASC' not in render(rank, "duckdb").split("MD5")[-1]  # the person is no sort key
    new = exp.select(*[exp.column(n, quoted=True) for n in TABLE.columns], exp.alias_(rank, ROW_RANK)).from_("ties")
    assert rows(ties, new, seed) == rows(ties, full_tie_break_ranked(), seed)


def test_negative_control_the_tie_break_decides_on_this_data(ties: duckdb.DuckDBPyConnection) -> None:
    # The comparison above can see a difference: without x in the tie-break, tied rows rank otherwise.
    assert any(rows(ties, full_tie_break_ranked(drop="x"), seed) != rows(ties, full_tie_break_ranked(), seed) for seed in (1, 2))

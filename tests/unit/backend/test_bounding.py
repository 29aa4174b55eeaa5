"""The bounded relation: light persons pass through untouched, heavy persons are cut by the keyed
hash, and the result is the same multiset of rows as ranking every person (the form the privacy
argument was written for)."""

from __future__ import annotations

import duckdb
import pytest
from sqlglot import exp

from dpsql.backend.dialects import render
from dpsql.backend.sqlgen import ROW_RANK, bounded_select, rank_by_hash, seed_placeholder
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


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_rows_as_ranking_everybody(con: duckdb.DuckDBPyConnection, seed: int) -> None:
    new, old = rows(con, bounded_select(TABLE, "src"), seed), rows(con, everybody_ranked(), seed)
    assert new == old
    per_person: dict[int, int] = {}
    for pid, *_ in new:
        per_person[pid] = per_person.get(pid, 0) + 1
    assert None not in per_person and max(per_person.values()) == TABLE.max_rows
    assert len(per_person) == 1000  # every person keeps at least one row


def test_negative_control_another_seed_changes_the_heavy_rows(con: duckdb.DuckDBPyConnection) -> None:
    # The comparison above can see a difference: heavy persons' rows depend on the seed.
    assert rows(con, bounded_select(TABLE, "src"), 1) != rows(con, bounded_select(TABLE, "src"), 2)

"""asyncpg against `dpsql serve`: $1 parameters (typed from the policy), binary results, errors."""

from __future__ import annotations

import asyncio

import pytest

from tests.integration.server.conftest import PASSWORDS, PgServer

asyncpg = pytest.importorskip("asyncpg", reason="asyncpg is not installed (pip install -e '.[test]')")


async def _session(server: PgServer) -> list[object]:
    con = await asyncpg.connect(host=server.host, port=server.port, user="alice", password=PASSWORDS["alice"],
                                database="anydb", ssl=False)  # fmt: skip
    try:
        grouped = await con.fetch("SELECT dept, COUNT(*) AS n FROM people WHERE age > $1 AND dept <> $2 GROUP BY dept", 40, "hr")
        statement = await con.prepare("SELECT COUNT(*) AS n, AVG(income) AS m FROM people WHERE income < $1")
        one = await statement.fetchrow(100000.5)
        try:
            await con.fetch("SELECT income FROM people")
        except asyncpg.PostgresError as err:
            error = (err.sqlstate, str(err))
        return [grouped, [a.name for a in statement.get_attributes()], one, error]
    finally:
        await con.close()


def test_parameters_prepared_statements_and_errors(pg_server: PgServer) -> None:
    grouped, names, one, error = asyncio.run(_session(pg_server))
    assert len(grouped) == 12 and {"dept", "n"} == set(grouped[0].keys())  # a public domain releases every key
    assert all(isinstance(r["n"], int) for r in grouped)
    assert names == ["n", "m"]
    assert isinstance(one["n"], int) and isinstance(one["m"], float)
    assert error[0] == "0A000" and error[1].startswith("DP105:")

"""BI tools' join shapes through `dpsql serve` with psycopg 3: a private table joined with a
public lookup table (Metabase's LEFT JOIN with a quoted alias, Tableau's INNER JOIN with the
ON condition in parentheses and SUM(1)), a public IN-subquery, and two private tables joined on
the privacy unit with a server-side parameter. Each answer is charged once; refusals cost nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest

from dpsql.backend.auxiliary.files import write_parquet
from dpsql.demo.people import DEPTS
from dpsql.server.scram import make_verifier
from dpsql.server.transport import ServerConfig, ServerThread
from tests.conftest import make_policy_text
from tests.integration.server.conftest import PASSWORDS, PgServer

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")

TABLES = """
[tables.visits]
privacy_unit = "person_id"
max_rows = 2
source = "visits.parquet"
[tables.visits.columns]
person_id = { type = "int" }
site = { type = "text", values = ["north", "south"] }

[tables.depts]
public = true
source = "depts.csv"
[tables.depts.columns]
name = { type = "text" }
floor = { type = "int" }
"""
FLOORS = 4


@pytest.fixture(scope="module")
def join_server(tmp_path_factory: pytest.TempPathFactory, people_frame: pd.DataFrame) -> Iterator[PgServer]:
    directory = tmp_path_factory.mktemp("pgwire-joins")
    write_parquet(people_frame, directory / "people.parquet")
    ids = people_frame["person_id"].drop_duplicates()
    visits = pd.DataFrame({"person_id": ids, "site": ["north" if i % 3 else "south" for i in ids]})
    write_parquet(visits, directory / "visits.parquet")
    pd.DataFrame({"name": list(DEPTS), "floor": [i % FLOORS + 1 for i in range(len(DEPTS))]}).to_csv(directory / "depts.csv", index=False)
    analyst = f'[analysts.alice]\npassword = "{make_verifier(PASSWORDS["alice"])}"\n'
    policy = directory / "policy.toml"
    policy.write_text(make_policy_text(epsilon=50, source="people.parquet", extra=TABLES + analyst), encoding="utf-8")
    config = ServerConfig(policy=policy, port=0, ledger=directory / "ledger.sqlite")
    with ServerThread(config) as server:
        yield PgServer("127.0.0.1", server.port, config.ledger_path, policy, directory)


@pytest.mark.parametrize("sql", [
    # Metabase: the base table schema-qualified, the joined table under a quoted alias, LEFT JOIN
    'SELECT "Depts"."floor" AS "Depts__floor", COUNT(*) AS "count" FROM "public"."people" LEFT JOIN "public"."depts" "Depts" '
    'ON "public"."people"."dept" = "Depts"."name" WHERE "public"."people"."age" > %s GROUP BY "Depts"."floor" ORDER BY "Depts"."floor" ASC',
    # Tableau: INNER JOIN with the condition in parentheses, SUM(1), GROUP BY a position
    'SELECT "depts"."floor" AS "floor", SUM(1) AS "cnt" FROM "public"."people" "people" INNER JOIN "public"."depts" "depts" '
    'ON ("people"."dept" = "depts"."name") WHERE "people"."age" > %s GROUP BY 1',
    # a public IN-subquery, and a public group key
    "SELECT d.floor, COUNT(*) AS n FROM people p JOIN depts d ON p.dept = d.name "
    "WHERE p.age > %s AND p.dept IN (SELECT name FROM depts WHERE floor <= 4) GROUP BY d.floor",
])
def test_public_join_shapes_release_every_public_key(join_server: PgServer, sql: str) -> None:
    before = join_server.spent("alice")
    with psycopg.connect(join_server.dsn()) as con:
        rows = con.execute(sql, [30]).fetchall()
    assert sorted(r[0] for r in rows) == list(range(1, FLOORS + 1))  # every floor, from the public rows
    assert all(isinstance(n, int) for _, n in rows)
    assert join_server.spent("alice").epsilon > before.epsilon


def test_private_join_on_the_unit_with_a_parameter(join_server: PgServer) -> None:
    sql = ("SELECT v.site, COUNT(*) AS n, AVG(p.age) AS mean_age FROM people p JOIN visits v ON p.person_id = v.person_id "
           "WHERE p.age > %s GROUP BY v.site ORDER BY v.site")
    with psycopg.connect(join_server.dsn()) as con:
        cur = con.execute(sql, [30])
        rows = cur.fetchall()
        assert [d.name for d in cur.description] == ["site", "n", "mean_age"]
    assert [r[0] for r in rows] == ["north", "south"]
    assert all(isinstance(n, int) and isinstance(m, float) for _, n, m in rows)


def test_refused_join_costs_nothing_and_keeps_its_code(join_server: PgServer) -> None:
    before = join_server.spent("alice")
    with psycopg.connect(join_server.dsn()) as con, pytest.raises(psycopg.Error) as info:
        con.execute("SELECT COUNT(*) FROM people p JOIN visits v ON p.dept = v.site")
    assert "DP136" in str(info.value)
    assert join_server.spent("alice") == before

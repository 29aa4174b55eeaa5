"""psycopg 3 against `dpsql serve`: server-side parameters, prepared statements, SQLSTATEs,
authentication, per-analyst budgets, and Describe charging nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from dpsql.server.transport import ServerConfig, ServerThread
from tests.integration.server import rawclient
from tests.integration.server.conftest import PASSWORDS, QUERY, PgServer

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")


def test_grouped_count_with_server_side_parameters(pg_server: PgServer) -> None:
    with psycopg.connect(pg_server.dsn()) as con:
        cur = con.execute("SELECT dept, COUNT(*) AS n FROM people WHERE age > %s GROUP BY dept", [40])
        rows = cur.fetchall()
        assert [d.name for d in cur.description] == ["dept", "n"]
        assert cur.description[1].type_code == 20  # int8
        assert len(rows) == 12 and all(isinstance(n, int) for _, n in rows)


@pytest.mark.parametrize("sql", [
    # Metabase: a source subquery, every name quoted and qualified
    'SELECT "source"."dept" AS "dept", COUNT(*) AS "count" FROM (SELECT "public"."people"."dept" AS "dept", '
    '"public"."people"."age" AS "age" FROM "public"."people") AS "source" WHERE "source"."age" > %s '
    'GROUP BY "source"."dept" ORDER BY "source"."dept" ASC',
    # Superset: a virtual dataset; Tableau: SUM(1) over the schema-qualified table
    "SELECT dept AS dept, COUNT(*) AS count FROM (SELECT * FROM people WHERE age > %s) AS virtual_table GROUP BY dept "
    "ORDER BY count DESC LIMIT 10000",
    'SELECT "people"."dept" AS "dept", SUM(1) AS "cnt" FROM "public"."people" "people" WHERE "people"."age" > %s '
    'GROUP BY 1',
])
def test_bi_tool_shapes_are_answered(pg_server: PgServer, sql: str) -> None:
    with psycopg.connect(pg_server.dsn()) as con:
        rows = con.execute(sql, [40]).fetchall()
        assert len(rows) == 12 and all(isinstance(n, int) for _, n in rows)


def test_prepared_statement_is_reused(pg_server: PgServer) -> None:
    sql = "SELECT COUNT(*) AS n, AVG(income) AS mean FROM people WHERE dept = %s"
    with psycopg.connect(pg_server.dsn(), prepare_threshold=0) as con:
        for _ in range(3):
            n, mean = con.execute(sql, ["sales"], prepare=True).fetchone()
            assert isinstance(n, int) and isinstance(mean, float)
        assert con.execute("SELECT name FROM pg_prepared_statements").fetchall() == []  # emulated, empty


def test_refusal_has_sqlstate_0A000_code_and_position(pg_server: PgServer) -> None:
    with psycopg.connect(pg_server.dsn(), autocommit=True) as con:
        with pytest.raises(psycopg.errors.FeatureNotSupported) as info:
            con.execute("SELECT income FROM people")
        diag = info.value.diag
        assert diag.sqlstate == "0A000"
        assert diag.message_primary.startswith("DP105:")
        assert diag.statement_position == "8"
        assert diag.message_hint


def test_wrong_password_and_unknown_user_are_refused_alike(pg_server: PgServer) -> None:
    with pytest.raises(psycopg.OperationalError, match='password authentication failed for user "alice"'):
        psycopg.connect(pg_server.dsn(password="not-it"))
    with pytest.raises(psycopg.OperationalError, match='password authentication failed for user "mallory"'):
        psycopg.connect(pg_server.dsn(password="x").replace("user=alice", "user=mallory"))
    # libpq does not expose a login error's SQLSTATE: read it from the raw ErrorResponse.
    for user, password in (("alice", "not-it"), ("mallory", "x")):
        with pytest.raises(rawclient.LoginRefused) as refused:
            rawclient.RawClient(pg_server.host, pg_server.port, user, password)
        assert refused.value.fields["C"] == "28P01" and refused.value.fields["S"] == "FATAL"


def test_missing_user_is_refused_with_28000(pg_server: PgServer) -> None:
    with pytest.raises(rawclient.LoginRefused) as refused:
        rawclient.RawClient(pg_server.host, pg_server.port, None, "x")
    assert refused.value.fields["C"] == "28000"


def test_one_analyst_cannot_spend_another_budget(pg_server: PgServer) -> None:
    alice_before = pg_server.spent("alice")
    carol_before = pg_server.spent("carol")
    with psycopg.connect(pg_server.dsn("carol"), autocommit=True) as con:
        spent = 0
        with pytest.raises(psycopg.errors.lookup("53400")) as info:
            for _ in range(10):
                con.execute(QUERY).fetchall()
                spent += 1
        assert info.value.diag.message_primary.startswith("DP200:")
        assert spent == 2  # 0.25 epsilon at 0.1 a query, minus what earlier tests spent (none)
    with psycopg.connect(pg_server.dsn("alice"), autocommit=True) as con:
        assert len(con.execute(QUERY).fetchall()) == 12  # alice's budget is untouched by carol's
    assert pg_server.spent("carol").epsilon - carol_before.epsilon == pytest.approx(0.2)
    assert pg_server.spent("alice").epsilon - alice_before.epsilon == pytest.approx(0.1)


def test_describe_never_charges(pg_server: PgServer) -> None:
    client = rawclient.RawClient(pg_server.host, pg_server.port, "bob", PASSWORDS["bob"])
    try:
        before = pg_server.spent("bob")
        sql = "SELECT dept, COUNT(*) AS n, AVG(income) AS m FROM people WHERE age > $1 GROUP BY dept"
        replies = client.exchange(rawclient.parse("s1", sql) + rawclient.describe("S", "s1") + rawclient.SYNC)
        kinds = [k for k, _ in replies]
        assert kinds == [b"1", b"t", b"T", b"Z"]  # ParseComplete, ParameterDescription, RowDescription
        assert replies[1][1] == b"\x00\x01\x00\x00\x00\x14"  # one parameter, int8 (age is an int column)
        assert b"dept\0" in replies[2][1] and b"n\0" in replies[2][1]
        replies = client.exchange(rawclient.bind("p1", "s1", ["40"]) + rawclient.describe("P", "p1") + rawclient.SYNC)
        assert [k for k, _ in replies] == [b"2", b"T", b"Z"]
        assert pg_server.spent("bob") == before  # Parse/Bind/Describe/Sync ran nothing
        replies = client.exchange(rawclient.bind("p2", "s1", ["40"]) + rawclient.execute("p2") + rawclient.SYNC)
        assert [k for k, _ in replies][-2:] == [b"C", b"Z"]
        assert pg_server.spent("bob").epsilon - before.epsilon == pytest.approx(0.1)  # Execute charges once
    finally:
        client.close()


def test_catalog_probes_charge_nothing(pg_server: PgServer) -> None:
    before = pg_server.spent("alice")
    with psycopg.connect(pg_server.dsn(), autocommit=True) as con:
        assert con.execute("SELECT version()").fetchone()[0].startswith("PostgreSQL 15")
        assert con.execute("SELECT current_schema(), current_database(), current_user").fetchone() == ("public", "anydb", "alice")
        assert con.execute("SHOW server_version").fetchone() == ("15.0",)
        con.execute("SET application_name = 'probe'")
        assert con.execute("SHOW application_name").fetchone() == ("probe",)
        tables = con.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'").fetchall()
        assert tables == [("people",)]
        for statement in ("BEGIN", "SAVEPOINT a", "RELEASE SAVEPOINT a", "COMMIT", "ROLLBACK"):
            con.execute(statement)
    assert pg_server.spent("alice") == before


def test_transactions_are_no_ops_with_postgres_status(pg_server: PgServer) -> None:
    with psycopg.connect(pg_server.dsn()) as con:  # not autocommit: psycopg sends BEGIN first
        con.execute(QUERY).fetchall()
        assert con.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            con.execute("SELECT income FROM people")
        assert con.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        con.rollback()
        assert con.execute("SELECT 1").fetchone() == (1,)


def test_set_dpsql_epsilon_and_random_seed_refused(pg_server: PgServer) -> None:
    with psycopg.connect(pg_server.dsn("bob"), autocommit=True) as con:
        before = pg_server.spent("bob")
        con.execute("SET dpsql.epsilon = 0.05")
        con.execute("SELECT COUNT(*) FROM people").fetchall()
        assert pg_server.spent("bob").epsilon - before.epsilon == pytest.approx(0.05)
        with pytest.raises(psycopg.errors.FeatureNotSupported) as info:
            con.execute("SET random_seed = 42")
        assert "DP401" in str(info.value)
    with pytest.raises(psycopg.OperationalError, match="refuses random_seed"):
        psycopg.connect(pg_server.dsn() + " options='-c random_seed=1'")


def test_tls(pg_server: PgServer, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "1", "-subj", "/CN=127.0.0.1"], capture_output=True, check=False,
    )  # fmt: skip
    if made.returncode != 0:
        pytest.skip("openssl cannot make a test certificate here")
    config = ServerConfig(policy=pg_server.policy, port=0, ledger=pg_server.ledger, tls_cert=cert, tls_key=key)
    with ServerThread(config) as server:
        dsn = f"host=127.0.0.1 port={server.port} user=alice password={PASSWORDS['alice']} dbname=x"
        with psycopg.connect(dsn + " sslmode=require") as con:
            assert con.pgconn.ssl_in_use
            assert len(con.execute(QUERY).fetchall()) == 12
    # Without --tls-cert the server answers SSLRequest with 'N': sslmode=require fails, prefer falls back.
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(f"host=127.0.0.1 port={pg_server.port} user=alice password={PASSWORDS['alice']} sslmode=require")
    with psycopg.connect(f"host=127.0.0.1 port={pg_server.port} user=alice password={PASSWORDS['alice']} sslmode=prefer") as con:
        assert not con.pgconn.ssl_in_use


def test_connections_share_one_bounded_relation(pg_server: PgServer) -> None:
    # The server bounds each private table once for every connection (from startup, in the
    # background), so a BI tool's pool of connections neither repeats the pass nor holds copies:
    # a fresh connection's EXPLAIN says the relation is shared (not whether it exists yet: that
    # would show what other connections ran, tests/security/test_server_isolation.py).
    with psycopg.connect(pg_server.dsn()) as first:
        first.execute(QUERY).fetchall()
    with psycopg.connect(pg_server.dsn("bob")) as second:
        lines = [str(r[0]) for r in second.execute("EXPLAIN " + QUERY).fetchall()]
        assert any("shared by every connection of this process" in line for line in lines), lines
        assert len(second.execute(QUERY).fetchall()) == 12

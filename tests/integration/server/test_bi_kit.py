"""What BI tools send, through a real `dpsql serve`, asserting what the user sees: Superset's
virtual-dataset column probe answered with columns and no rows (a notice, no charge) and its
Samples query refused in plain words; views of the policy listed as tables; ISO dates in column
descriptions (SQLAlchemy's PostgreSQL dialect over psycopg2, psql `\\d+`, JDBC remarks); JDBC
getSchemas and setDate/setTimestamp with offsets; psql `\\dt+`; DBeaver's connect probes; and
SQL Lab's Stop, which cancels the analyst's own statement and never another analyst's.

The server here has its own policy: the people table with a date and a bool column and a view.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import Ledger
from dpsql.backend.auxiliary.files import write_parquet
from dpsql.server.scram import make_verifier
from dpsql.server.transport import ServerConfig, ServerThread
from tests.conftest import make_policy_text
from tests.integration.server.conftest import executable

psycopg2 = pytest.importorskip("psycopg2", reason="psycopg2 is not installed (pip install -e '.[test]')")

PASSWORDS = {"ana": "ana-pw", "ben": "ben-pw"}
JAR = next((p for p in (Path("/usr/share/java/postgresql.jar"), Path("/usr/share/java/postgresql-jdbc4.jar")) if p.exists()), None)
JAVAC, JAVA, PSQL = shutil.which("javac"), shutil.which("java"), executable("psql")
VIEW = "SELECT person_id, age, income, dept, age // 10 * 10 AS decade, hired FROM people WHERE age >= 30"
COLUMNS = """hired  = { type = "date", lower = 2020-01-01, upper = 2024-12-31 }
active = { type = "bool" }
"""
NOTICE = "not an empty table"
SAMPLES = "row-level samples are not available under differential privacy"


class Bi:
    """The running server and its ledger."""

    def __init__(self, port: int, ledger: Path) -> None:
        self.port, self.ledger = port, ledger

    @contextmanager
    def connect(self, user: str = "ana") -> Iterator[psycopg2.extensions.connection]:
        """An autocommit connection, closed on exit (psycopg2's own `with` would open a transaction)."""
        con = self.open(user)
        try:
            yield con
        finally:
            con.close()

    def open(self, user: str = "ana") -> psycopg2.extensions.connection:
        con = psycopg2.connect(host="127.0.0.1", port=self.port, user=user, password=PASSWORDS[user], dbname="warehouse",
                               sslmode="disable")
        con.autocommit = True
        return con

    def spent(self, user: str = "ana") -> PrivacyCost:
        with Ledger(self.ledger) as ledger:
            return ledger.spent(user)

    def charges(self, user: str = "ana") -> int:
        with Ledger(self.ledger) as ledger:
            return len(ledger.entries(user))


@pytest.fixture(scope="module")
def bi(tmp_path_factory: pytest.TempPathFactory, people_frame: pd.DataFrame) -> Iterator[Bi]:
    directory = tmp_path_factory.mktemp("bi")
    frame = people_frame.copy()
    days = np.random.default_rng(0).integers(0, 1800, len(frame))
    frame["hired"] = [dt.date(2020, 1, 1) + dt.timedelta(days=int(d)) for d in days]
    frame["active"] = days % 2 == 0
    write_parquet(frame, directory / "people.parquet")
    analysts = "".join(f'[analysts.{name}]\npassword = "{make_verifier(pw)}"\n' for name, pw in PASSWORDS.items())
    text = make_policy_text(source="people.parquet", extra=analysts + f'\n[views.seniors]\nsql = "{VIEW}"\n'
                            'description = "people aged 30 or more"\n')  # fmt: skip
    text = text.replace('region    = { type = "text" }', 'region    = { type = "text" }\n' + COLUMNS)
    (directory / "policy.toml").write_text(text, encoding="utf-8")
    config = ServerConfig(policy=directory / "policy.toml", port=0, ledger=directory / "ledger.sqlite")
    with ServerThread(config) as server:
        yield Bi(server.port, directory / "ledger.sqlite")


# --- Superset: virtual datasets, Samples ------------------------------------------------------------
@pytest.mark.parametrize("sql", [
    "SELECT * FROM people WHERE age >= 18 LIMIT 1",  # Superset's probe of a virtual dataset's columns
    "SELECT * FROM (SELECT age, dept, hired FROM people WHERE age >= 18) AS inner_qry LIMIT 1",
    "WITH q AS (SELECT age, dept, hired FROM people) SELECT * FROM q LIMIT 0",
])
def test_column_probe_answers_columns_without_rows_uncharged(bi: Bi, sql: str) -> None:
    before = bi.charges()
    with bi.connect() as con:
        cur = con.cursor()
        cur.execute(sql)
        names = [d.name for d in cur.description]
        types = {d.name: d.type_code for d in cur.description}
        assert cur.fetchall() == []
        assert any(NOTICE in n for n in con.notices)  # never looks like an empty table
    assert {"age", "dept", "hired"} <= set(names)
    assert types["age"] == 20 and types["dept"] == 25 and types["hired"] == 1082  # int8, text, date
    assert bi.charges() == before  # never charged


def test_samples_and_drill_to_detail_are_refused_in_plain_words_uncharged(bi: Bi) -> None:
    before = bi.charges()
    with bi.connect() as con:
        cur = con.cursor()
        for sql in ("SELECT person_id AS person_id, age AS age, income AS income, dept AS dept FROM public.people "
                    "ORDER BY person_id ASC LIMIT 100",  # the Samples pane and drill to detail
                    "SELECT * FROM (SELECT * FROM people WHERE age >= 18) AS virtual_table LIMIT 100"):
            with pytest.raises(psycopg2.Error) as info:
                cur.execute(sql)
            assert SAMPLES in info.value.pgerror and info.value.pgcode == "0A000"
        # Negative control: the same columns aggregated are answered (and charged).
        cur.execute("SELECT dept AS dept, COUNT(*) AS count FROM public.people GROUP BY dept LIMIT 100")
        assert len(cur.fetchall()) == 12
    assert bi.charges() == before + 1


def test_views_are_listed_as_tables_and_answer_chart_queries(bi: Bi) -> None:
    sa = pytest.importorskip("sqlalchemy")
    engine = sa.create_engine(f"postgresql+psycopg2://ana:{PASSWORDS['ana']}@127.0.0.1:{bi.port}/warehouse")
    try:
        inspector = sa.inspect(engine)
        assert inspector.get_table_names() == ["people", "seniors"]
        columns = {c["name"]: c for c in inspector.get_columns("seniors")}
        assert list(columns) == ["person_id", "age", "income", "dept", "decade", "hired"]
        assert str(columns["decade"]["type"]) == "BIGINT" and str(columns["hired"]["type"]) == "DATE"
        assert columns["hired"]["comment"] == "date; bounds [2020-01-01, 2024-12-31]"  # ISO dates, not day numbers
        assert "people aged 30 or more" in (inspector.get_table_comment("seniors")["text"] or "")
        people = {c["name"]: c["comment"] for c in inspector.get_columns("people")}
        assert people["hired"] == "date; bounds [2020-01-01, 2024-12-31]"
        before = bi.charges()
        frame = pd.read_sql("SELECT decade AS decade, COUNT(*) AS count FROM public.seniors GROUP BY decade", engine)
        assert 30 in set(frame["decade"]) and bi.charges() == before + 1
    finally:
        engine.dispose()


def test_interval_functions_as_metrics_charged_once(bi: Bi) -> None:
    """Superset metrics `CI95(COUNT(*))`, `CI_LOW(...)`, `CI_HIGH(...)` beside the aggregate: one
    charge (the same as the aggregate alone), the half-width of the cell's own release, the ends
    around the released value; control: a CI95 of an expression is refused before the charge."""
    with bi.connect() as con:
        cur = con.cursor()
        before = bi.charges()
        cur.execute("SELECT dept AS dept, COUNT(*) AS n, CI95(COUNT(*)) AS ci, CI_LOW(COUNT(*)) AS lo, "
                    "CI_HIGH(COUNT(*)) AS hi FROM people GROUP BY dept ORDER BY n DESC")
        rows = cur.fetchall()
        assert bi.charges() == before + 1
        assert [d[0] for d in cur.description] == ["dept", "n", "ci", "lo", "hi"]
        # The ends around the value, the low one clipped at 0 (a count is never negative).
        assert rows and all(ci > 0 and lo == pytest.approx(max(n - ci, 0)) and hi == pytest.approx(n + ci) for _, n, ci, lo, hi in rows)
        assert len({ci for _, _, ci, _, _ in rows}) == 1  # one release scale: the same half-width in every group
        with pytest.raises(psycopg2.Error) as caught:
            cur.execute("SELECT CI95(COUNT(*) * 2) FROM people")
        assert "DP146" in str(caught.value) and bi.charges() == before + 1
        con.rollback()


# --- psql ---------------------------------------------------------------------------------------------
def _psql(bi: Bi, *args: str) -> subprocess.CompletedProcess[str]:
    assert PSQL is not None
    env = {**os.environ, "PGPASSWORD": PASSWORDS["ana"], "PGCONNECT_TIMEOUT": "10"}
    return subprocess.run([PSQL, "-h", "127.0.0.1", "-p", str(bi.port), "-U", "ana", "-d", "warehouse", "-X", *args],
                          capture_output=True, text=True, env=env, timeout=60, check=False)  # fmt: skip


@pytest.mark.skipif(PSQL is None, reason="psql is not installed (apt-get install postgresql-client)")
def test_psql_dt_plus_d_plus_show_and_probe(bi: Bi) -> None:
    listing = _psql(bi, "-c", r"\dt+")
    assert listing.returncode == 0, listing.stderr
    assert "people  | table | dpsql" in listing.stdout and "seniors | table | dpsql" in listing.stdout
    assert "0 bytes" in listing.stdout
    described = _psql(bi, "-c", r"\d+ people")
    assert described.returncode == 0, described.stderr
    assert "date; bounds [2020-01-01, 2024-12-31]" in described.stdout and "737425" not in described.stdout
    shown = _psql(bi, "-A", "-t", "-c", "SHOW dpsql.epsilon")
    assert shown.stdout.strip() == "0.1"
    probe = _psql(bi, "-c", "SELECT * FROM seniors LIMIT 1")
    assert probe.returncode == 0 and "(0 rows)" in probe.stdout and NOTICE in probe.stderr


# --- JDBC ---------------------------------------------------------------------------------------------
JDBC_PROGRAM = r"""
import java.sql.*;

public class BiKit {
    public static void main(String[] args) throws Exception {
        try (Connection con = DriverManager.getConnection(args[0], args[1], args[2])) {
            DatabaseMetaData md = con.getMetaData();
            try (ResultSet rs = md.getSchemas()) { while (rs.next()) System.out.println("SCHEMA " + rs.getString("TABLE_SCHEM")); }
            try (ResultSet rs = md.getColumns(null, "public", "people", "hired")) {
                while (rs.next()) System.out.println("REMARKS " + rs.getString("REMARKS"));
            }
            try (PreparedStatement st = con.prepareStatement("SELECT COUNT(*) AS n FROM people WHERE hired >= ?")) {
                st.setDate(1, java.sql.Date.valueOf("2024-01-01"));
                try (ResultSet rs = st.executeQuery()) { while (rs.next()) System.out.println("SETDATE " + (rs.getObject(1) != null)); }
                st.setTimestamp(1, java.sql.Timestamp.valueOf("2023-06-30 12:30:00"));
                try (ResultSet rs = st.executeQuery()) { while (rs.next()) System.out.println("SETTIMESTAMP " + (rs.getObject(1) != null)); }
            }
            try (Statement st = con.createStatement(); ResultSet rs = st.executeQuery("SELECT * FROM people LIMIT 1")) {
                ResultSetMetaData meta = rs.getMetaData();
                System.out.println("PROBE columns=" + meta.getColumnCount() + " rows=" + (rs.next() ? 1 : 0)
                    + " warning=" + (st.getWarnings() != null && st.getWarnings().getMessage().contains("not an empty table")));
            }
        }
    }
}
"""


@pytest.mark.skipif(JAR is None or JAVAC is None or JAVA is None, reason="needs javac and the PostgreSQL JDBC driver")
def test_jdbc_get_schemas_set_date_iso_remarks_and_probe(bi: Bi, tmp_path: Path) -> None:
    assert JAR is not None and JAVAC is not None and JAVA is not None
    (tmp_path / "BiKit.java").write_text(JDBC_PROGRAM, encoding="utf-8")
    subprocess.run([JAVAC, "BiKit.java"], cwd=tmp_path, check=True, capture_output=True, timeout=300)
    url = f"jdbc:postgresql://127.0.0.1:{bi.port}/warehouse?sslmode=disable"
    result = subprocess.run([JAVA, "-cp", f".:{JAR}", "BiKit", url, "ana", PASSWORDS["ana"]], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert {"SCHEMA public", "SCHEMA pg_catalog", "SCHEMA information_schema"} <= set(lines)
    assert "REMARKS date; bounds [2020-01-01, 2024-12-31]" in lines
    assert "SETDATE true" in lines and "SETTIMESTAMP true" in lines
    assert "PROBE columns=7 rows=0 warning=true" in lines


# --- DBeaver ------------------------------------------------------------------------------------------
DBEAVER_PROBES = [
    "SET extra_float_digits = 3",
    "SET application_name = 'DBeaver 25.1.5 - Main <warehouse>'",
    "SELECT current_schema(),session_user",
    "SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n LEFT OUTER JOIN pg_catalog.pg_description d ON "
    "d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass ORDER BY nspname",
    "SHOW search_path",
    "SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datname='warehouse'",
    "SELECT * FROM pg_catalog.pg_settings where name='standard_conforming_strings'",
    "SELECT string_agg(word, ',' ) from pg_catalog.pg_get_keywords() where word <> ALL ('{a,abs,absolute,action}'::text[])",
    "SELECT version()",
    "SELECT * FROM pg_catalog.pg_enum WHERE 1<>1 LIMIT 1",
    "SELECT reltype FROM pg_catalog.pg_class WHERE 1<>1 LIMIT 1",
    "SELECT t.oid,t.*,c.relkind,format_type(nullif(t.typbasetype, 0), t.typtypmod) as base_type_name, d.description "
    "FROM pg_catalog.pg_type t LEFT OUTER JOIN pg_catalog.pg_type et ON et.oid=t.typelem LEFT OUTER JOIN pg_catalog.pg_class c "
    "ON c.oid=t.typrelid LEFT OUTER JOIN pg_catalog.pg_description d ON t.oid=d.objoid WHERE t.typname IS NOT NULL AND "
    "(c.relkind IS NULL OR c.relkind = 'c') AND (et.typcategory IS NULL OR et.typcategory <> 'C')",
    "select c.oid,pg_catalog.pg_total_relation_size(c.oid) as total_rel_size,pg_catalog.pg_relation_size(c.oid) as rel_size "
    "FROM pg_class c WHERE c.relnamespace=2200",
    "SELECT i.*,i.indkey as keys,c.relname,tc.relname as tabrelname,dsc.description,pg_catalog.pg_get_expr(i.indpred, i.indrelid) "
    "as pred_expr,pg_catalog.pg_relation_size(i.indexrelid) as index_rel_size,pg_catalog.pg_stat_get_numscans(i.indexrelid) as "
    "index_num_scans FROM pg_catalog.pg_index i INNER JOIN pg_catalog.pg_class c ON c.oid=i.indexrelid INNER JOIN "
    "pg_catalog.pg_class tc ON tc.oid=i.indrelid LEFT OUTER JOIN pg_catalog.pg_description dsc ON i.indexrelid=dsc.objoid "
    "WHERE i.indrelid=16384 ORDER BY tabrelname, c.relname",
    "SELECT c.oid,c.*,t.relname as tabrelname,rt.relnamespace as refnamespace,d.description, case when c.contype='c' then "
    "\"substring\"(pg_get_constraintdef(c.oid), 7) else null end consrc_copy FROM pg_catalog.pg_constraint c INNER JOIN "
    "pg_catalog.pg_class t ON t.oid=c.conrelid LEFT OUTER JOIN pg_catalog.pg_class rt ON rt.oid=c.confrelid LEFT OUTER JOIN "
    "pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 AND d.classoid='pg_constraint'::regclass WHERE "
    "c.conrelid=16384 ORDER BY c.oid",
]


def test_dbeaver_connect_probes_are_answered_uncharged(bi: Bi) -> None:
    before = bi.charges()
    with bi.connect() as con:
        cur = con.cursor()
        for sql in DBEAVER_PROBES:
            cur.execute(sql)
            if cur.description:
                cur.fetchall()
        cur.execute("SELECT db.datname FROM pg_catalog.pg_database db WHERE datname='warehouse'")
        assert cur.fetchall() == [("warehouse",)]  # the database under the name the client connected with
    assert bi.charges() == before


# --- SQL Lab's Stop -------------------------------------------------------------------------------
# Post-processing over released rows that runs for minutes (a cross product of 12 released rows,
# 12^8 combinations): a statement long enough to be stopped, whatever the data.
SLOW = ("WITH t AS (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) SELECT SUM(a.n * b.n + c.n * d.n - e.n * f.n "
        "+ g.n * h.n) AS s FROM t a, t b, t c, t d, t e, t f, t g, t h")


def _run_in_background(bi: Bi, user: str) -> tuple[int, dict[str, object], threading.Thread]:
    con = bi.open(user)
    cur = con.cursor()
    cur.execute("SELECT pg_backend_pid()")
    (pid,) = cur.fetchone()
    outcome: dict[str, object] = {}

    def run() -> None:
        started = time.monotonic()
        try:
            cur.execute(SLOW)
            outcome["answer"] = cur.fetchall()
        except psycopg2.Error as error:
            outcome["error"] = error
        outcome["seconds"] = time.monotonic() - started
        con.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return pid, outcome, thread


@pytest.mark.slow
def test_sql_lab_stop_cancels_the_analysts_own_statement_only(bi: Bi) -> None:
    pid, outcome, thread = _run_in_background(bi, "ana")
    time.sleep(1.5)  # the statement is running (charged, then the outer query over the released rows)
    with bi.connect("ben") as other:  # Negative control: another analyst cannot stop it, nor tell that it runs
        cur = other.cursor()
        cur.execute(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid='{pid}'")
        assert cur.fetchall() == []
        cur.execute(f"SELECT pg_cancel_backend({pid})")
        assert cur.fetchall() == [(False,)]
    time.sleep(1.0)
    assert thread.is_alive() and not outcome
    with bi.connect("ana") as own:  # Superset's PostgresEngineSpec.cancel_query, on a new connection
        cur = own.cursor()
        cur.execute(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid='{pid}'")
        assert cur.fetchall() == [(True,)]
    thread.join(timeout=60)
    assert not thread.is_alive()
    error = outcome.get("error")
    assert isinstance(error, psycopg2.Error) and error.pgcode == "57014", outcome
    assert "canceling statement due to user request" in (error.pgerror or "")


CANCEL_CLIENT = """
import sys, threading, time
import psycopg
con = psycopg.connect(sys.argv[1], autocommit=True)
threading.Timer(1.5, con.cancel).start()  # libpq's CancelRequest with BackendKeyData's secret key
started = time.monotonic()
try:
    con.execute(sys.argv[2]).fetchall()
    print("ANSWERED")
except psycopg.errors.QueryCanceled as error:
    print("CANCELED", error.diag.sqlstate, error.diag.message_primary)
print("SECONDS", round(time.monotonic() - started))
print("NEXT", con.execute("SELECT 1").fetchone())
"""


@pytest.mark.slow
def test_cancel_request_from_the_driver_stops_the_statement(bi: Bi) -> None:
    # libpq's PQcancel holds the GIL while it waits for the server's answer: the client runs in a
    # process of its own (the server is a thread of this one).
    pytest.importorskip("psycopg")
    dsn = f"host=127.0.0.1 port={bi.port} user=ana password={PASSWORDS['ana']} dbname=w sslmode=disable"
    result = subprocess.run([sys.executable, "-c", CANCEL_CLIENT, dsn, SLOW], capture_output=True, text=True, timeout=120,
                            check=False)  # fmt: skip
    lines = result.stdout.splitlines()
    assert "CANCELED 57014 canceling statement due to user request" in lines, result.stdout + result.stderr
    assert int(next(line for line in lines if line.startswith("SECONDS")).split()[1]) < 60
    assert "NEXT (1,)" in lines  # the connection goes on

"""A sweep of a few hundred unusual catalog and session statements through psycopg: whatever each
answers or refuses, no reply (error, hint, detail, notice, column name) carries the engine's own
text (DuckDB's error classes, its internal schemas, the emulation's macros) or an internal error."""

from __future__ import annotations

import re

import pytest

from dpsql.server import pg_catalog as pgc
from tests.integration.server.conftest import PgServer

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")

# Text that only the engine or the emulation's internals would write.
ENGINE_TEXT = re.compile(
    r"(Binder|Catalog|Parser|Conversion|Invalid Input|Out of Range|Not implemented|Constraint|Dependency|Permission|"
    r"Serialization|Transaction|Internal|Interrupt|Sequence|Syntax|Type Mismatch|Invalid Configuration|Mismatch Type)"
    r" Error|duckdb|DuckDB|Candidate (bindings|functions)|Did you mean|\bpgc\.|\bpgi\.|__reg|get_current_timestamp|"
    r"list_contains|Traceback|internal error",
)

SESSION_FUNCTIONS = [
    "now()", "current_date", "current_time", "current_timestamp", "localtime", "localtimestamp", "version()",
    "current_schema()", "current_schema", "current_schemas(true)", "current_schemas(false)", "current_user", "session_user",
    "user", "current_role", "current_database()", "current_catalog", "pg_backend_pid()", "inet_server_addr()",
    "inet_client_port()", "txid_current()", "pg_postmaster_start_time()", "timeofday()", "statement_timestamp()",
    "transaction_timestamp()", "clock_timestamp()", "pg_is_in_recovery()", "current_setting('search_path')",
    "current_setting('no_such_setting')", "current_setting('server_version_num')::int",
    "set_config('search_path', 'public', false)", "pg_encoding_to_char(6)", "pg_my_temp_schema()",
    "to_regclass('people')", "to_regclass('nothing')", "to_regtype('int4')", "'people'::regclass", "'nothing'::regclass",
    "'int4'::regtype", "'pg_catalog'::regnamespace", "1259::regclass", "format_type(23, NULL)", "format_type(999999, -1)",
    "obj_description(1, 'pg_class')", "col_description(1, 1)", "quote_ident('A b')", "has_table_privilege('people', 'SELECT')",
    "pg_get_userbyid(10)", "pg_table_is_visible(1)", "array_upper(ARRAY[1, 2], 1)", "pg_get_expr(NULL, 0)",
    "pg_sleep(1)", "pg_read_file('/etc/passwd')", "lo_import('/etc/passwd')", "pg_ls_dir('.')", "repeat('x', 10)",
    "gen_random_uuid()", "random()", "nextval('s')", "pg_terminate_backend(1)", "pg_cancel_backend(1)",
    "current_setting('search_path', true)", "format('%s', 1)", "format('%I', NULL)", "format('%1$s', 1)",
    "parse_ident('a.b')", "'{a,b}'::text[]", "'{1,2'::int[]", "'abc'::int", "1/0", "ARRAY[1, 2][5]", "(1, 2)",
    "'2024-13-45'::date", "NULL::unknown_type", "'x'::regrole", "now() + interval '1 day'", "extract(year FROM now())",
    "date_trunc('day', now())", "to_char(now(), 'YYYY')", "age(now())", "pg_typeof(1)", "length('abc')",
]  # fmt: skip

CATALOG_SHAPES = [
    "SELECT * FROM {} LIMIT 1",
    "SELECT count(*) FROM {}",
    "SELECT no_such_column FROM {}",
]

OTHER = [
    "SELECT * FROM pg_catalog.pg_no_such_table", "SELECT * FROM information_schema.no_such_view",
    "SELECT * FROM no_such_table", "SELECT * FROM public.no_such_table", "SELECT * FROM other.people",
    "SELECT relname::int FROM pg_class", "SELECT 1 FROM pg_class WHERE relname = 1", "SELECT oid + 'x' FROM pg_class",
    "SELECT * FROM pg_class c JOIN pg_namespace n ON c.relnamespace = n.oid WHERE n.nspname ~ '('",
    "SELECT * FROM pg_class WHERE relname ~ '[[:alpha:'", "SELECT * FROM pg_class ORDER BY 99",
    "SELECT * FROM pg_class GROUP BY 1", "SELECT relname FROM pg_class UNION SELECT 1",
    "SELECT * FROM read_csv('/etc/passwd')", "SELECT * FROM read_parquet('people.parquet')",
    "SELECT * FROM 'people.parquet'", "SELECT * FROM duckdb_tables()", "SELECT * FROM duckdb_settings()",
    "SELECT * FROM pragma_version()", "PRAGMA version", "ATTACH 'x.db'", "INSTALL httpfs", "LOAD httpfs",
    "COPY people TO STDOUT", "CREATE TABLE t (x int)", "DROP TABLE people", "INSERT INTO people VALUES (1)",
    "UPDATE people SET age = 1", "DELETE FROM people", "VACUUM", "ANALYZE", "CALL f()", "DO $$ BEGIN END $$",
    "EXPLAIN SELECT 1", "EXPLAIN ANALYZE SELECT COUNT(*) FROM people", "SELECT", "SELECT FROM", ";;", "(",
    "SELECT 'unterminated", 'SELECT "unterminated', "SELECT $1", "SELECT 1; SELECT 2", "WITH RECURSIVE t AS (SELECT 1) SELECT * FROM t",
    "SHOW nonsense", "SHOW dpsql.nonsense", "SET dpsql.epsilon = 'abc'", "SET dpsql.epsilon = -1", "SET dpsql.delta = 2",
    "SET dpsql.ci_columns = maybe", "SET search_path TO", "RESET nonsense", "DISCARD ALL", "LISTEN x", "NOTIFY x",
    "FETCH ALL FROM nothing", "CLOSE nothing", "MOVE BACKWARD 1 FROM nothing", "DECLARE c CURSOR FOR SELECT * FROM pg_no_such",
    "PREPARE p AS SELECT 1", "EXECUTE p", "DEALLOCATE nothing", "BEGIN; SELECT 1/0; COMMIT",
    "SELECT * FROM dpsql.last_query WHERE no_such = 1", "SELECT * FROM dpsql.no_such_view", "SELECT * FROM dpsql.ledger, pg_class",
    "SELECT income FROM people", "SELECT * FROM people", "SELECT COUNT(*) FROM people WHERE name = 1",
    "SELECT COUNT(*) FROM people WHERE age = 'abc'", "SELECT SUM(dept) FROM people", "SELECT AVG(income) FROM people GROUP BY 99",
    "SELECT COUNT(*) FROM people p JOIN people q ON p.age = q.age", "SELECT now() FROM people",
    "SELECT COUNT(*) FROM people WHERE age > now()", "SELECT COUNT(*) FROM people WHERE dept ~ '('",
]  # fmt: skip


def _statements() -> list[str]:
    statements = [f"SELECT {f}" for f in SESSION_FUNCTIONS] + [f"SELECT {f} AS x FROM pg_class LIMIT 1" for f in SESSION_FUNCTIONS]
    tables = [f"pg_catalog.{t}" for t in sorted(pgc.PG_TABLES)] + [f"information_schema.{t}" for t in sorted(pgc.INFORMATION_SCHEMA)]
    statements += [shape.format(t) for t in tables for shape in CATALOG_SHAPES]
    return statements + OTHER


def test_no_engine_text_reaches_a_client(pg_server: PgServer) -> None:
    statements = _statements()
    assert len(statements) >= 300
    leaks: list[str] = []
    with psycopg.connect(pg_server.dsn("alice"), autocommit=True) as con:
        notices: list[str] = []
        con.add_notice_handler(lambda diag: notices.append(" ".join(filter(None, (diag.message_primary, diag.message_hint)))))
        for sql in statements:
            try:
                cur = con.execute(sql)
                text = " ".join(d.name for d in cur.description or ())
                if cur.description:
                    cur.fetchall()
            except psycopg.Error as err:
                diag = err.diag
                text = " ".join(filter(None, (diag.message_primary, diag.message_detail, diag.message_hint, diag.sqlstate)))
                if diag.sqlstate == "XX000":
                    leaks.append(f"{sql!r}: internal error {text}")
            text += " ".join(notices)
            notices.clear()
            for word in re.findall(r"\w+", sql):  # the statement's own names echoed back (duckdb_tables()) are not leaks
                if ENGINE_TEXT.search(word):
                    text = text.replace(word, "")
            if ENGINE_TEXT.search(text):
                leaks.append(f"{sql!r}: {text}")
            if con.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                con.execute("ROLLBACK")
    assert not leaks, "\n".join(leaks)

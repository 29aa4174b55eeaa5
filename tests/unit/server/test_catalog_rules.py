"""The catalog route's static bounds (catalog_rules.check_probe) and its routing of statements that
read no catalog table (CatalogEmulation.route), on parsed SQL only."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator

import pytest
import sqlglot

from dpsql.catalog.loader import policy_from_dict
from dpsql.demo.people import policy_text
from dpsql.errors import NotSupportedError
from dpsql.server.catalog_emulation import CatalogEmulation
from dpsql.server.catalog_rules import check_probe


@pytest.fixture(scope="module")
def emulation() -> Iterator[CatalogEmulation]:
    emulated = CatalogEmulation(policy_from_dict(tomllib.loads(policy_text("people.parquet"))))
    yield emulated
    emulated.close()


def _check(sql: str) -> None:
    check_probe(sqlglot.parse_one(sql, read="postgres"))


@pytest.mark.parametrize(
    "sql",
    [
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t, pg_class",
        "SELECT repeat(relname, 1000) FROM pg_class",
        "SELECT lpad(relname, 1000) FROM pg_class",
        "SELECT rpad(relname, 1000, 'x') FROM pg_class",
        "SELECT replace(relname, 'a', relname) FROM pg_class",  # a replacement read from the data can square a text
        "SELECT replace(relname, 'a', 'xxx') FROM pg_class",  # more than twice as long as what it replaces
        "SELECT replace(relname, '', 'x') FROM pg_class",
        "SELECT regexp_replace(relname, 'a', 'bb', 'g') FROM pg_class",
        "SELECT translate(relname, 'a', 'b') FROM pg_class",
        "SELECT overlay(relname placing 'x' from 1) FROM pg_class",
        "SELECT array_fill(1, ARRAY[1000000])",
        "SELECT count(*) FROM pg_class, generate_series(1, 1000000)",
        "SELECT count(*) FROM pg_class, generate_series(1, oid)",
        "SELECT count(*) FROM pg_class, generate_series(1, 10, 0)",
        "SELECT read_csv('/etc/passwd')",
        "SELECT some_new_function(relname) FROM pg_class",
        "SELECT format(relname, relname) FROM pg_class",  # a format that is not a constant
        "SELECT format('%1$s%1$s%1$s', relname) FROM pg_class",  # positions repeat an argument
        "SELECT format('%10s', relname) FROM pg_class",  # widths pad
        "SELECT count(*) FROM pg_class, generate_series(array_lower(ARRAY[1], 1), oid)",
    ],
)
def test_unbounded_constructs_are_refused_with_dp402(sql: str) -> None:
    with pytest.raises(NotSupportedError) as info:
        _check(sql)
    assert info.value.code == "DP402"


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "SELECT version()",
        "SELECT current_schema(), current_database(), current_user",
        "SELECT count(*) FROM pg_class, generate_series(1, 100) g",
        "SELECT string_agg(attname, ', ') FROM pg_catalog.generate_series(0, pg_catalog.array_upper(pr.prattrs::pg_catalog.int2[], 1)) s",
        "SELECT n.nspname, c.relname, pg_catalog.pg_get_userbyid(c.relowner) FROM pg_catalog.pg_class c "
        "LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relname OPERATOR(pg_catalog.~) '^(people)$' "
        "AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 1, 2",
        "SELECT row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum), nullif(a.attidentity, '') FROM pg_attribute a",
        # JDBC's getSchemas
        "SELECT nspname AS TABLE_SCHEM, NULL AS TABLE_CATALOG FROM pg_catalog.pg_namespace WHERE nspname <> 'pg_toast' AND "
        "(nspname !~ '^pg_temp_' OR nspname = (pg_catalog.current_schemas(true))[1]) AND (nspname !~ '^pg_toast_temp_' OR "
        "nspname = replace((pg_catalog.current_schemas(true))[1], 'pg_temp_', 'pg_toast_temp_')) ORDER BY TABLE_SCHEM",
        "SELECT pg_catalog.pg_size_pretty(pg_catalog.pg_table_size(c.oid)) FROM pg_catalog.pg_class c",  # psql's \dt+
        "SELECT string_agg(word, ',') FROM pg_catalog.pg_get_keywords() WHERE word <> ALL ('{a,abs}'::text[])",  # DBeaver
    ],
)
def test_client_probes_pass(sql: str) -> None:
    _check(sql)


@pytest.mark.parametrize(
    "sql, route",
    [
        ("SELECT 1", "catalog"),
        ("SELECT repeat('x', 5)", "catalog"),  # then refused by check_probe, never sent to the Session
        ("SELECT * FROM unnest(current_schemas(true))", "catalog"),
        ("SELECT relname FROM pg_catalog.pg_class", "catalog"),
        ("WITH t AS (SELECT 1 AS n) SELECT n FROM t", "session"),
        ("WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t", "session"),
        ("SELECT count(*) FROM generate_series(1, 1000000000)", "session"),
        ("SELECT COUNT(*) FROM people", "session"),
        ("SELECT * FROM dpsql.last_query", "views"),
        ("WITH l AS (SELECT * FROM dpsql.ledger) SELECT count(*) FROM l", "views"),
        ("SELECT * FROM dpsql.ledger, people", "session"),  # a private table: the Session refuses the mix
        ("SELECT * FROM dpsql.ledger, pg_class", "session"),
        ("SELECT * FROM dpsql.nonsense", "session"),
    ],
)
def test_only_catalog_reads_take_the_catalog_route(emulation: CatalogEmulation, sql: str, route: str) -> None:
    assert emulation.route(sql)[0] == route


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("""SELECT '{r,p,""}'::varchar[] AS a""", [(["r", "p", ""],)]),
        ("""SELECT relname FROM pg_class WHERE relkind = ANY('{r,"p"}') AND relname = 'people'""", [("people",)]),
        ("SELECT format('%I.%I', 'public', 'people') AS f, format('%s %% %L', NULL, 'it''s') AS g", [("public.people", " % 'it''s'")]),
        ("SELECT CAST(CAST(format('%I.%I', 'public', 'people') AS regclass) AS oid) = 'people'::regclass AS same", [(True,)]),
        ("SELECT parse_ident('public.people') AS p", [(["public", "people"],)]),
        ("SELECT trim(s[2]) AS second FROM string_to_array(current_setting('search_path'), ',') s", [("public",)]),
        ("SELECT count(*) AS n FROM generate_series(array_lower(string_to_array(current_setting('search_path'), ','), 1), "
         "array_upper(string_to_array(current_setting('search_path'), ','), 1)) i", [(2,)]),
        ("SELECT now() IS NOT NULL AS a, current_date IS NOT NULL AS b, localtimestamp IS NOT NULL AS c", [(True, True, True)]),
        ("SELECT replace('pg_temp_3', 'pg_temp_', 'pg_toast_temp_') AS r", [("pg_toast_temp_3",)]),
        ("SELECT pg_size_pretty(0) AS a, pg_size_pretty(10239) AS b, pg_size_pretty(10240) AS c, pg_size_pretty(10485760) AS d, "
         "pg_size_pretty(-20480) AS e", [("0 bytes", "10239 bytes", "10 kB", "10 MB", "-20 kB")]),
        ("SELECT datname FROM pg_catalog.pg_database WHERE datname = 'db'", [("db",)]),  # the name the client connected to
        ("SELECT count(*) AS n FROM pg_get_keywords() WHERE word <> ALL ('{analyze,limit}'::text[]) AND word = 'limit'", [(0,)]),
    ],
)
def test_probe_rewrites_answer_as_postgresql_would(emulation: CatalogEmulation, sql: str, expected: list[tuple[object, ...]]) -> None:
    from dpsql.server.catalog_emulation import ClientState

    route, tree = emulation.route(sql)
    assert route == "catalog" and tree is not None
    assert emulation.query(tree, ClientState(user="alice", database="db")).rows == expected

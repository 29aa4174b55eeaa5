"""The table- and column-listing queries Metabase and Grafana send, answered from the policy through
psycopg: never sent down the analyst path (no DP110, no budget spent)."""

from __future__ import annotations

import pytest

from tests.integration.server.conftest import PgServer

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")

# The schema constraint Grafana's query editor builds from search_path.
_GRAFANA_SEARCH_PATH = """quote_ident(table_schema) IN (
          SELECT CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )"""

GRAFANA = {
    "version": ("SELECT current_setting('server_version_num')::int/100 as version", None),
    "timescale": ("SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'", []),
    "schemas": ("""SELECT schema_name AS "name" FROM information_schema.schemata
                   WHERE schema_name NOT IN ('information_schema', 'pg_catalog', 'pg_toast', '_timescaledb_cache')
                   ORDER BY schema_name""", [("public",)]),
    "tables_in_schema": ("""SELECT quote_ident(table_name) AS "table" FROM information_schema.tables
                            WHERE quote_ident(table_schema) = 'public' ORDER BY 1""", [("people",)]),
    "tables": (f"""SELECT CASE WHEN {_GRAFANA_SEARCH_PATH} THEN quote_ident(table_name)
                     ELSE quote_ident(table_schema) || '.' || quote_ident(table_name) END AS "table"
                   FROM information_schema.tables
                   WHERE quote_ident(table_schema) NOT IN ('information_schema', 'pg_catalog', '_timescaledb_cache')
                   ORDER BY CASE WHEN {_GRAFANA_SEARCH_PATH} THEN 0 ELSE 1 END, 1""", [("people",)]),
    "columns": (f"""SELECT quote_ident(column_name) AS "column", data_type AS "type" FROM information_schema.columns
                    WHERE CASE WHEN array_length(parse_ident('people'),1) = 2
                      THEN quote_ident(table_schema) = (parse_ident('people'))[1] AND quote_ident(table_name) = (parse_ident('people'))[2]
                      ELSE quote_ident(table_name) = 'people' AND {_GRAFANA_SEARCH_PATH} END""", None),
}  # fmt: skip

METABASE = {
    "tables": ("""SELECT n.nspname AS schema, c.relname AS name,
                    CASE c.relkind WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'PARTITIONED TABLE' WHEN 'v' THEN 'VIEW'
                      WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE NULL END AS type,
                    d.description AS description, stat.n_live_tup AS estimated_row_count
                  FROM pg_catalog.pg_class AS c
                  INNER JOIN pg_catalog.pg_namespace AS n ON c.relnamespace = n.oid
                  LEFT JOIN pg_catalog.pg_description AS d ON (c.oid = d.objoid) AND (d.objsubid = 0) AND (d.classoid = 'pg_class'::regclass)
                  LEFT JOIN pg_stat_user_tables AS stat ON (n.nspname = stat.schemaname) AND (c.relname = stat.relname)
                  WHERE (c.relnamespace = n.oid) AND (n.nspname !~ '^pg_') AND (n.nspname <> 'information_schema')
                    AND c.relkind in ('r', 'p', 'v', 'f', 'm') AND (n.nspname IN ('public'))
                  ORDER BY type ASC, schema ASC, name ASC""", None),
    "fields": ("""SELECT c.column_name AS name,
                    CASE WHEN c.udt_schema IN ('public', 'pg_catalog') THEN FORMAT('%s', c.udt_name)
                      ELSE FORMAT('"%s"."%s"', c.udt_schema, c.udt_name) END AS "database-type",
                    c.ordinal_position - 1 AS "database-position", c.table_schema AS "table-schema",
                    c.table_name AS "table-name", pk.column_name IS NOT NULL AS "pk?",
                    COL_DESCRIPTION(CAST(CAST(FORMAT('%I.%I', CAST(c.table_schema AS TEXT), CAST(c.table_name AS TEXT)) AS REGCLASS) AS OID), c.ordinal_position) AS "field-comment"
                  FROM information_schema.columns AS c
                  LEFT JOIN (SELECT tc.table_schema, tc.table_name, kc.column_name FROM information_schema.table_constraints AS tc
                             INNER JOIN information_schema.key_column_usage AS kc ON (tc.constraint_name = kc.constraint_name)
                               AND (tc.table_schema = kc.table_schema) AND (tc.table_name = kc.table_name)
                             WHERE tc.constraint_type = 'PRIMARY KEY') AS pk
                    ON (c.table_schema = pk.table_schema) AND (c.table_name = pk.table_name) AND (c.column_name = pk.column_name)
                  WHERE c.table_schema !~ '^information_schema|catalog_history|pg_' AND (c.table_schema IN ('public'))
                  ORDER BY "table-schema" ASC, "table-name" ASC, "database-position" ASC""", None),
    "fks": ("""SELECT fk_ns.nspname AS "fk-table-schema", fk_table.relname AS "fk-table-name", fk_column.attname AS "fk-column-name"
               FROM pg_constraint AS c
               INNER JOIN pg_class AS fk_table ON c.conrelid = fk_table.oid
               INNER JOIN pg_namespace AS fk_ns ON c.connamespace = fk_ns.oid
               INNER JOIN pg_attribute AS fk_column ON c.conrelid = fk_column.attrelid
               WHERE fk_ns.nspname !~ '^information_schema|catalog_history|pg_' AND (c.contype = 'f'::char)
                 AND (fk_column.attnum = ANY(c.conkey))""", []),
    "indexes": ("""SELECT tmp."table-schema", tmp."table-name", TRIM(BOTH '"' FROM pg_catalog.pg_get_indexdef(tmp.ci_oid, tmp.pos, false)) AS "field-name"
                   FROM (SELECT n.nspname AS "table-schema", ct.relname AS "table-name", ci.oid AS ci_oid,
                           (information_schema._pg_expandarray(i.indkey)).n AS pos
                         FROM pg_catalog.pg_class AS ct INNER JOIN pg_catalog.pg_namespace AS n ON ct.relnamespace = n.oid
                         INNER JOIN pg_catalog.pg_index AS i ON ct.oid = i.indrelid
                         INNER JOIN pg_catalog.pg_class AS ci ON ci.oid = i.indexrelid
                         WHERE (pg_catalog.pg_get_expr(i.indpred, i.indrelid) IS NULL)
                           AND n.nspname !~ '^information_schema|catalog_history|pg_') AS tmp
                   WHERE tmp.pos = 1""", []),
    "enums": ("SELECT nspname, typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace "
              "WHERE t.oid IN (SELECT DISTINCT enumtypid FROM pg_enum e)", []),
    "privileges": ("""SELECT DISTINCT table_schema, table_name, privilege_type FROM information_schema.role_table_grants
                      WHERE table_schema = 'public'""", None),
}  # fmt: skip


@pytest.mark.parametrize("tool, name", [("grafana", n) for n in GRAFANA] + [("metabase", n) for n in METABASE])
def test_bi_introspection_is_answered_from_the_policy(pg_server: PgServer, tool: str, name: str) -> None:
    sql, expected = (GRAFANA if tool == "grafana" else METABASE)[name]
    spent = pg_server.spent("alice")
    with psycopg.connect(pg_server.dsn(), autocommit=True) as con:
        rows = con.execute(sql).fetchall()
    if expected is not None:
        assert rows == expected
    assert pg_server.spent("alice") == spent


def test_listings_name_the_policy_table_and_columns(pg_server: PgServer) -> None:
    with psycopg.connect(pg_server.dsn(), autocommit=True) as con:
        tables = con.execute(METABASE["tables"][0]).fetchall()
        assert [(r[0], r[1], r[2]) for r in tables] == [("public", "people", "TABLE")]
        fields = con.execute(METABASE["fields"][0]).fetchall()
        assert [(f[0], f[1], f[2], f[4]) for f in fields][:3] == [
            ("person_id", "int8", 0, "people"), ("age", "int8", 1, "people"), ("income", "float8", 2, "people")]
        columns = con.execute(GRAFANA["columns"][0]).fetchall()
        assert ("income", "double precision") in columns and len(columns) == 5
        assert con.execute(GRAFANA["version"][0]).fetchone()[0] >= 90

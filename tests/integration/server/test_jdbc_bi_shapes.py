"""The query shapes BI tools send (Superset, Metabase, Tableau, grouped bands, ROLLUP, UNION ALL,
STDDEV, approximate MIN/MAX), through the PostgreSQL JDBC driver against `dpsql serve`.

Each query is answered with the number of rows its SQL implies (public keys released in full,
grouping sets, UNION branches); a still-refused shape comes back as an error with SQLSTATE and a
dpsql code, never as engine text.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.integration.server.conftest import PASSWORDS, PgServer
from tests.integration.server.test_jdbc import JAR, JAVA, JAVAC, pytestmark  # noqa: F401  (skip without Java)

PROGRAM = r"""
import java.sql.*;
import java.nio.file.*;
import java.util.*;

public class DpsqlJdbcShapes {
    public static void main(String[] args) throws Exception {
        List<String> queries = Files.readAllLines(Paths.get(args[3]));
        try (Connection con = DriverManager.getConnection(args[0], args[1], args[2])) {
            for (String sql : queries) {
                try (Statement st = con.createStatement(); ResultSet rs = st.executeQuery(sql)) {
                    int rows = 0;
                    int columns = rs.getMetaData().getColumnCount();
                    while (rs.next()) { rows++; for (int c = 1; c <= columns; c++) { rs.getObject(c); } }
                    System.out.println("ROWS " + rows + " COLUMNS " + columns);
                } catch (SQLException e) {
                    System.out.println("ERROR " + e.getSQLState() + " " + e.getMessage().split("\n")[0]);
                }
            }
        }
    }
}
"""

# (query, expected line): the demo policy's dept declares 12 values.
SHAPES = [
    # Superset: a virtual dataset wrapped around the table
    ("SELECT dept AS dept, COUNT(*) AS count FROM (SELECT * FROM people) AS virtual_table GROUP BY dept "
     "ORDER BY count DESC LIMIT 10000", "ROWS 12 COLUMNS 2"),
    # Metabase: an aggregated question used as a source, then sorted and limited
    ('SELECT "source"."dept" AS "dept", "source"."count" AS "count" FROM (SELECT "people"."dept" AS "dept", '
     'COUNT(*) AS "count" FROM "public"."people" GROUP BY "people"."dept") AS "source" ORDER BY "source"."count" DESC LIMIT 2',
     "ROWS 2 COLUMNS 2"),
    # Tableau: SUM(1) over a schema-qualified, aliased table, GROUP BY position
    ('SELECT "people"."dept" AS "dept", SUM(1) AS "cnt:people" FROM "public"."people" "people" GROUP BY 1', "ROWS 12 COLUMNS 2"),
    # a derived band in GROUP BY: its keys come from the policy
    ("SELECT CASE WHEN age < 40 THEN 'young' ELSE 'old' END AS band, COUNT(*) FROM people GROUP BY 1", "ROWS 2 COLUMNS 2"),
    # grouping sets: 12 departments and the total
    ("SELECT dept, COUNT(*) FROM people GROUP BY ROLLUP(dept)", "ROWS 13 COLUMNS 2"),
    # two aggregate queries in one statement
    ("SELECT 'all' AS k, COUNT(*) AS n FROM people UNION ALL SELECT 'old', COUNT(*) FROM people WHERE age > 60",
     "ROWS 2 COLUMNS 2"),
    ("SELECT STDDEV(income), VARIANCE(age) FROM people", "ROWS 1 COLUMNS 2"),
    ("SELECT MIN(age), MAX(income) FROM people", "ROWS 1 COLUMNS 2"),
    # still refused: an outer query that reads private rows next to a release
    ("SELECT * FROM (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) t JOIN people p ON p.dept = t.dept",
     "ERROR 0A000 ERROR: DP126:"),
]


def test_bi_shapes_through_jdbc(pg_server: PgServer, tmp_path: Path) -> None:
    assert JAR is not None and JAVAC is not None and JAVA is not None
    (tmp_path / "DpsqlJdbcShapes.java").write_text(PROGRAM, encoding="utf-8")
    assert not any("\n" in sql for sql, _ in SHAPES)  # the program reads one query per line
    (tmp_path / "queries.sql").write_text("\n".join(sql for sql, _ in SHAPES) + "\n", encoding="utf-8")
    subprocess.run([JAVAC, "DpsqlJdbcShapes.java"], cwd=tmp_path, check=True, capture_output=True, timeout=300)
    url = f"jdbc:postgresql://{pg_server.host}:{pg_server.port}/anydb?sslmode=disable"
    result = subprocess.run([JAVA, "-cp", f".:{JAR}", "DpsqlJdbcShapes", url, "alice", PASSWORDS["alice"], "queries.sql"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(SHAPES), result.stdout
    for (sql, expected), line in zip(SHAPES, lines):
        assert line.startswith(expected), f"{sql}\n  got: {line}"


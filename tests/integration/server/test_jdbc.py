"""The PostgreSQL JDBC driver (Debian's libpostgresql-jdbc-java) against `dpsql serve`: a query
with a parameter, DatabaseMetaData.getTables/getColumns, and a refusal's SQLSTATE."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.server.conftest import PASSWORDS, PgServer

JAR = next((p for p in (Path("/usr/share/java/postgresql.jar"), Path("/usr/share/java/postgresql-jdbc4.jar")) if p.exists()), None)
JAVAC, JAVA = shutil.which("javac"), shutil.which("java")
pytestmark = pytest.mark.skipif(
    JAR is None or JAVAC is None or JAVA is None,
    reason="JDBC test needs javac and the PostgreSQL JDBC driver (apt-get install default-jdk-headless libpostgresql-jdbc-java; .ci/run does)",
)

PROGRAM = r"""
import java.sql.*;

public class DpsqlJdbc {
    public static void main(String[] args) throws Exception {
        try (Connection con = DriverManager.getConnection(args[0], args[1], args[2])) {
            try (PreparedStatement st = con.prepareStatement("SELECT dept, COUNT(*) AS n FROM people WHERE age > ? GROUP BY dept")) {
                st.setInt(1, 40);
                try (ResultSet rs = st.executeQuery()) {
                    int rows = 0;
                    while (rs.next()) { rows++; rs.getString(1); rs.getLong(2); }
                    System.out.println("QUERY rows=" + rows + " type=" + rs.getMetaData().getColumnTypeName(2));
                }
            }
            DatabaseMetaData md = con.getMetaData();
            System.out.println("PRODUCT " + md.getDatabaseProductName() + " " + md.getDatabaseMajorVersion());
            try (ResultSet rs = md.getTables(null, "public", "%", new String[] {"TABLE"})) {
                while (rs.next()) { System.out.println("TABLE " + rs.getString("TABLE_SCHEM") + "." + rs.getString("TABLE_NAME") + " " + rs.getString("TABLE_TYPE")); }
            }
            try (ResultSet rs = md.getColumns(null, "public", "people", "%")) {
                while (rs.next()) { System.out.println("COLUMN " + rs.getString("COLUMN_NAME") + " " + rs.getString("TYPE_NAME") + " " + rs.getInt("DATA_TYPE")); }
            }
            try (Statement st = con.createStatement()) {
                st.executeQuery("SELECT income FROM people");
            } catch (SQLException e) {
                System.out.println("ERROR " + e.getSQLState() + " " + e.getMessage().split("\n")[0]);
            }
        }
    }
}
"""


def test_jdbc_query_and_metadata(pg_server: PgServer, tmp_path: Path) -> None:
    assert JAR is not None and JAVAC is not None and JAVA is not None
    (tmp_path / "DpsqlJdbc.java").write_text(PROGRAM, encoding="utf-8")
    subprocess.run([JAVAC, "DpsqlJdbc.java"], cwd=tmp_path, check=True, capture_output=True, timeout=300)
    url = f"jdbc:postgresql://{pg_server.host}:{pg_server.port}/anydb?sslmode=disable"
    result = subprocess.run([JAVA, "-cp", f".:{JAR}", "DpsqlJdbc", url, "alice", PASSWORDS["alice"]], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert "QUERY rows=12 type=int8" in lines
    assert "PRODUCT PostgreSQL 15" in lines
    assert "TABLE public.people TABLE" in lines
    assert [line for line in lines if line.startswith("COLUMN")] == [
        "COLUMN person_id int8 -5", "COLUMN age int8 -5", "COLUMN income float8 8", "COLUMN dept text 12", "COLUMN region text 12",
    ]  # fmt: skip
    assert any(line.startswith("ERROR 0A000 ERROR: DP105:") for line in lines)


KEYS_PROGRAM = r"""
import java.sql.*;

public class DpsqlJdbcKeys {
    public static void main(String[] args) throws Exception {
        try (Connection con = DriverManager.getConnection(args[0], args[1], args[2])) {
            DatabaseMetaData md = con.getMetaData();
            try (ResultSet rs = md.getPrimaryKeys(null, "public", "people")) {
                int rows = 0;
                while (rs.next()) { rows++; }
                System.out.println("PRIMARY_KEYS " + rows);
            }
            try (ResultSet rs = md.getIndexInfo(null, "public", "people", false, true)) {
                int rows = 0;
                while (rs.next()) { rows++; }
                System.out.println("INDEX_INFO " + rows);
            }
            try (ResultSet rs = md.getTypeInfo()) {
                int rows = 0;
                while (rs.next()) { rows++; }
                System.out.println("TYPE_INFO " + (rows > 0));
            }
            try (Statement st = con.createStatement()) {
                try (ResultSet rs = st.executeQuery("SELECT dept, COUNT(*) AS n FROM people GROUP BY dept")) {
                    while (rs.next()) { rs.getLong(2); }
                }
                SQLWarning warning = st.getWarnings();
                System.out.println("WARNING " + (warning == null ? "none" : warning.getMessage().split("\n")[0]));
            }
        }
    }
}
"""


def test_jdbc_keys_index_info_and_the_notice(pg_server: PgServer, tmp_path: Path) -> None:
    """DBeaver and Tableau ask for primary keys and indexes (none: the policy declares none) and
    read notices as SQLWarnings."""
    assert JAR is not None and JAVAC is not None and JAVA is not None
    (tmp_path / "DpsqlJdbcKeys.java").write_text(KEYS_PROGRAM, encoding="utf-8")
    subprocess.run([JAVAC, "DpsqlJdbcKeys.java"], cwd=tmp_path, check=True, capture_output=True, timeout=300)
    url = f"jdbc:postgresql://{pg_server.host}:{pg_server.port}/anydb?sslmode=disable"
    result = subprocess.run([JAVA, "-cp", f".:{JAR}", "DpsqlJdbcKeys", url, "alice", PASSWORDS["alice"]], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[:3] == ["PRIMARY_KEYS 0", "INDEX_INFO 0", "TYPE_INFO true"]
    assert lines[3].startswith("WARNING dpsql: 95% intervals: n ± "), lines[3]

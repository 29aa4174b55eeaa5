"""pgcli -c against `dpsql serve`."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.integration.server.conftest import PASSWORDS, PgServer, executable

PGCLI = executable("pgcli")


@pytest.fixture(scope="module", autouse=True)
def _pgcli_with_command_option() -> None:
    # Asked when the tests run, not at import: collecting the suite starts no process.
    if PGCLI is None or "--command" not in subprocess.run([PGCLI, "--help"], capture_output=True, text=True, timeout=60,
                                                         check=False).stdout:
        pytest.skip("pgcli >= 4.1 (with -c) is not installed (pip install -e '.[test]')")


def test_pgcli_runs_a_query(pg_server: PgServer, tmp_path: os.PathLike[str]) -> None:
    assert PGCLI is not None
    env = {**os.environ, "PGPASSWORD": PASSWORDS["alice"], "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    command = [PGCLI, "-h", pg_server.host, "-p", str(pg_server.port), "-U", "alice", "-d", "anydb",
               "-c", "SELECT dept, COUNT(*) AS n FROM people GROUP BY dept"]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "engineering" in result.stdout and "SELECT 12" in result.stdout


def test_pgcli_completion_probes(pg_server: PgServer) -> None:
    """The catalog queries interactive pgcli sends to build its completions."""
    pgexecute = pytest.importorskip("pgcli.pgexecute", reason="pgcli is not installed (pip install -e '.[test]')")
    executor = pgexecute.PGExecute(database="anydb", user="alice", password=PASSWORDS["alice"], host=pg_server.host,
                                   port=pg_server.port, dsn=None)  # fmt: skip
    try:
        assert "public" in executor.schemata()
        assert ("public", "people") in list(executor.tables())
        columns = [c[:4] for c in executor.table_columns() if c[1] == "people"]
        assert columns[0] == ("public", "people", "person_id", "bigint") and len(columns) == 5
        for probe in (executor.views, executor.view_columns, executor.functions, executor.datatypes, executor.casing,
                      executor.foreignkeys, executor.search_path, executor.databases):  # fmt: skip
            list(probe())
    finally:
        executor.conn.close()


@pytest.mark.parametrize("command, expected", [(r"\dt", "people"), (r"\d people", "income"), (r"\dn", "public"), (r"\df", "SELECT 0")])
def test_pgcli_backslash_commands(pg_server: PgServer, tmp_path: os.PathLike[str], command: str, expected: str) -> None:
    """pgcli's \\dt casts '{r,p,""}' to varchar[] (a PostgreSQL array literal): answered from the policy."""
    assert PGCLI is not None
    env = {**os.environ, "PGPASSWORD": PASSWORDS["alice"], "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    result = subprocess.run([PGCLI, "-h", pg_server.host, "-p", str(pg_server.port), "-U", "alice", "-d", "anydb", "-c", command],
                            capture_output=True, text=True, env=env, timeout=120, check=False, stdin=subprocess.DEVNULL)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert expected in result.stdout, result.stdout + result.stderr
    assert "error" not in (result.stdout + result.stderr).lower()

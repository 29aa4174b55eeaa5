"""psql (Debian's postgresql-client) against `dpsql serve`: \\dt, \\d people, a grouped COUNT, errors."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.integration.server.conftest import PASSWORDS, PgServer, executable

PSQL = executable("psql")
pytestmark = pytest.mark.skipif(PSQL is None, reason="psql is not installed (apt-get install postgresql-client; .ci/run does)")


def psql(server: PgServer, *args: str, user: str = "alice") -> subprocess.CompletedProcess[str]:
    assert PSQL is not None
    env = {**os.environ, "PGPASSWORD": PASSWORDS[user], "PGSSLMODE": "prefer", "PGCONNECT_TIMEOUT": "10"}
    command = [PSQL, "-h", server.host, "-p", str(server.port), "-U", user, "-d", "anydb", "-X", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, check=False)


def test_dt_lists_the_policy_tables(pg_server: PgServer) -> None:
    result = psql(pg_server, "-c", r"\dt")
    assert result.returncode == 0, result.stderr
    assert "public | people | table | dpsql" in result.stdout


def test_d_people_describes_the_columns(pg_server: PgServer) -> None:
    result = psql(pg_server, "-c", r"\d people")
    assert result.returncode == 0, result.stderr
    assert 'Table "public.people"' in result.stdout
    for line in ("person_id | bigint", "income    | double precision", "dept      | text"):
        assert line in result.stdout


def test_grouped_count(pg_server: PgServer) -> None:
    result = psql(pg_server, "-A", "-t", "-F", ",", "-c", "SELECT dept, COUNT(*) FROM people GROUP BY dept")
    assert result.returncode == 0, result.stderr
    rows = [line.split(",") for line in result.stdout.strip().splitlines()]
    assert len(rows) == 12 and all(n.lstrip("-").isdigit() for _, n in rows)


def test_refusal_shows_sqlstate_code_and_caret(pg_server: PgServer) -> None:
    result = psql(pg_server, "-v", "VERBOSITY=verbose", "-c", "SELECT income FROM people")
    assert result.returncode != 0
    assert "ERROR:  0A000: DP105:" in result.stderr
    assert "LINE 1: SELECT income FROM people" in result.stderr and "^" in result.stderr

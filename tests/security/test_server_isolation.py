"""Isolation between analysts through `dpsql serve` (issue 25: "EXPLAIN shows one analyst what
others ran").

The server keeps one DuckDB for all connections. Nothing bob can read for free may depend on
what alice ran: bob's EXPLAIN (free) of a join whose IN-subquery has a literal, and of a private
GROUP BY that needs a keyed relation, is byte-identical before and after alice ran both; naming
the relations alice's queries created (the join's bounded relation, whose name hashes the
literal; the keyed relation), the released tables or the released rows' frames gets bob the same
refusal as a name that never existed.

Negative control: a server started with the old EXPLAIN wording and every relation in the shared
schema: bob's EXPLAIN changes after alice's queries ("prepared" instead of "built by the first").
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from dpsql.demo.people import DEPTS
from tests.security.server_harness import ServerProcess, start_server

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")

pytestmark = pytest.mark.slow

JOIN = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) COUNT(*) FROM people p JOIN depts d ON p.dept = d.name "
        "WHERE p.dept IN (SELECT name FROM depts WHERE floor = 3)")
KEYED = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1, delta = 1e-6) region, COUNT(*) FROM people GROUP BY region"
DEPTS_TABLE = """
[tables.depts]
public = true
source = "depts.parquet"
[tables.depts.columns]
name = { type = "text" }
floor = { type = "int" }
"""
OLD_WORDING = """
import dpsql.backend.engines.shared_duckdb as shared_duckdb
import dpsql.execution.engine_calls as engine_calls
from dpsql.backend.engines.engine import bounded_name, keyed_name
def _old(self, table, keys=None):
    name = keyed_name(table, keys) if keys is not None else bounded_name(table)
    if self.engine.has_relation(name):
        return "prepared once for every connection of this process (shared)"
    return "built once for every connection of this process, by the first query that reads it (shared)"
engine_calls.EngineCalls.preparation_state = lambda self, table: _old(self, table)
engine_calls.EngineCalls.keyed_state = _old
shared_duckdb.SharedScope._place = lambda self, name: shared_duckdb.SHARED_SCHEMA
"""


def _server(tmp_path: Path, people: pd.DataFrame, prelude: str = "") -> ServerProcess:
    depts = pd.DataFrame({"name": list(DEPTS), "floor": [i % 5 for i in range(len(DEPTS))]})
    return start_server(tmp_path, people, prelude=prelude, tables={"depts": depts}, extra_policy=DEPTS_TABLE)


def _explain(con: object, sql: str) -> str:
    return "\n".join(row[0] for row in con.execute("EXPLAIN " + sql).fetchall())  # type: ignore[attr-defined]


def _refusal(con: object, sql: str, name: str) -> tuple[str | None, ...]:
    """SQLSTATE, message, hint and caret position of a refused query, the relation's name blanked
    (the echo of bob's own SQL under the message is left out: it is his text)."""
    try:
        con.execute(sql).fetchall()  # type: ignore[attr-defined]
    except psycopg.Error as err:
        diag = err.diag
        return (err.sqlstate, (diag.message_primary or "").replace(name, "<name>"), diag.message_hint,
                diag.statement_position)
    raise AssertionError(f"answered: {sql}")


def _never(name: str) -> str:
    """A name of the same length that no relation ever had."""
    return name[:-4] + "zqzq"


def _scenario(tmp_path: Path, people: pd.DataFrame, prelude: str = "") -> tuple[list[str], list[str], object]:
    server = _server(tmp_path, people, prelude)
    try:
        with psycopg.connect(server.dsn("bob"), autocommit=True) as bob:
            bob.execute("SELECT COUNT(*) FROM people").fetchall()
            before = [_explain(bob, JOIN), _explain(bob, KEYED)]
            with psycopg.connect(server.dsn("alice"), autocommit=True) as alice:
                alice.execute(JOIN).fetchall()
                alice.execute(KEYED).fetchall()
            after = [_explain(bob, JOIN), _explain(bob, KEYED)]
            joined = next(line.split()[3].rstrip(":") for line in before[0].splitlines()
                          if line.startswith("Bounded relation of people_join_"))
            names = [f"__dpsql_bounded_{joined}", "__dpsql_keyed_people", "__dpsql_released_0", "__dpsql_frame_0"]
            refusals = [(_refusal(bob, f'SELECT COUNT(*) FROM "{n}"', n), _refusal(bob, f'SELECT COUNT(*) FROM "{_never(n)}"', _never(n)))
                        for n in names]
            outer = ("SELECT n FROM (SELECT COUNT(*) AS n FROM people) t, __dpsql_released_0 r", "__dpsql_released_0")
            unused = "__dpsql_released_9"  # a reserved name no statement of this test released
            refusals.append((_refusal(bob, *outer), _refusal(bob, outer[0].replace(outer[1], unused), unused)))
    finally:
        stderr = server.stop()
    assert "Traceback" not in stderr, stderr
    return before, after, refusals


def test_bob_reads_nothing_of_what_alice_ran(tmp_path: Path, people_frame: pd.DataFrame) -> None:
    before, after, refusals = _scenario(tmp_path, people_frame)
    assert before == after  # byte-identical
    for mine, never in refusals:  # type: ignore[attr-defined]
        assert mine == never


def test_negative_control_the_old_wording_shows_alice_activity(tmp_path: Path, people_frame: pd.DataFrame) -> None:
    before, after, _ = _scenario(tmp_path, people_frame, prelude=OLD_WORDING)
    assert before != after  # the check above would fail on this build
    joins = [next(line for line in text.splitlines() if line.startswith("Bounded relation of people_join_"))
             for text in (before[0], after[0])]
    assert "by the first query" in joins[0] and "prepared once" in joins[1]

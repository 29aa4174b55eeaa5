"""Isolation between analysts in the process's shared DuckDB (issue 25: "EXPLAIN shows one
analyst what others ran").

Through sessions of two analysts on one SharedDuckDB (what `dpsql serve` does):
- bob's EXPLAIN of a join with an IN-subquery literal and of a keyed private GROUP BY is
  byte-identical before and after alice ran them;
- the relations alice's queries created (the join's rows, whose name hashes the IN literal, and
  the keyed relation) are not built for bob, who cannot even name them from his connection; a
  second session of alice's finds them built (sharing within one analyst still works);
- another analyst's connection cannot read alice's temporary views and tables, nor name the
  relations her queries created.

Negative controls: with the old EXPLAIN wording, bob's EXPLAIN changes after alice's queries;
with every relation in the shared schema, bob finds alice's join relation built.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas
import pytest

import dpsql.backend.engines.shared_duckdb as shared_duckdb
import dpsql.execution.engine_calls as engine_calls
from dpsql.backend.auxiliary.files import write_parquet
from dpsql.backend.engines.engine import bounded_name, keyed_name
from dpsql.catalog.loader import load_policy
from dpsql.demo.people import DEPTS, PARQUET_NAME, POLICY_NAME, generate_people, policy_text
from dpsql.session import Session, SessionOptions, open_shared

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


@pytest.fixture(scope="module")
def policy_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("isolation")
    write_parquet(generate_people(2_000, seed=9), directory / PARQUET_NAME)
    write_parquet(pandas.DataFrame({"name": list(DEPTS), "floor": [i % 5 for i in range(len(DEPTS))]}), directory / "depts.parquet")
    (directory / POLICY_NAME).write_text(policy_text(source=PARQUET_NAME) + DEPTS_TABLE, encoding="utf-8")
    return directory / POLICY_NAME


def session(policy: Path, shared: object, analyst: str) -> Session:
    return SessionOptions(policy=load_policy(policy), ledger=":memory:", prepare=False, shared=shared, analyst=analyst).open()


def explain(s: Session, sql: str) -> str:
    return "\n".join(str(row[0]) for row in s.execute("EXPLAIN " + sql).rows)


def join_relation(text: str) -> str:
    """The bounded relation of the join named in an EXPLAIN text."""
    table = next(line.split()[1] for line in text.splitlines() if line.strip().startswith("Scan people_join_"))
    return f"__dpsql_bounded_{table}"


def engine_of(s: Session):  # noqa: ANN201 - the session's Engine
    return s._executor.calls.engine


def _run_scenario(policy_path: Path) -> dict[str, object]:
    shared = open_shared(load_policy(policy_path), prepare=False)
    alice, bob = session(policy_path, shared, "alice"), session(policy_path, shared, "bob")
    alice_again = session(policy_path, shared, "alice")
    try:
        bob.execute("SELECT COUNT(*) FROM people")  # the shared relation of the policy's table exists for everyone
        before = [explain(bob, sql) for sql in (JOIN, KEYED)]
        alice.execute(JOIN)
        alice.execute(KEYED)
        after = [explain(bob, sql) for sql in (JOIN, KEYED)]
        joined = join_relation(before[0])
        people = load_policy(policy_path).table("people")
        keyed = keyed_name(people, ("region",))
        temporary = [v for (v,) in engine_of(alice).backend.connection.execute(
            "SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal UNION ALL "
            "SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()]
        readable = []
        carol = session(policy_path, shared, "carol")  # a connection of another analyst, with nothing of its own yet
        for name in [*temporary, joined, keyed]:
            try:
                engine_of(carol).backend.connection.execute(f'SELECT 1 FROM "{name}" LIMIT 0')
                readable.append(name)
            except duckdb.Error:
                pass
        carol.close()
        return {"before": before, "after": after, "temporary": temporary, "readable": readable,
                "bob_has": [engine_of(bob).has_relation(n) for n in (joined, keyed)],
                "alice_has": [engine_of(alice_again).has_relation(n) for n in (joined, keyed)],
                "base": engine_of(bob).has_relation(bounded_name(people))}
    finally:
        for s in (alice, bob, alice_again):
            s.close()
        shared.close()


def test_bob_sees_nothing_of_what_alice_ran(policy_path: Path) -> None:
    seen = _run_scenario(policy_path)
    assert seen["before"] == seen["after"]  # byte-identical EXPLAIN
    assert seen["bob_has"] == [False, False]  # alice's join and keyed relations are not bob's
    assert seen["alice_has"] == [True, True]  # another session of alice's reads them
    assert seen["base"] is True  # the policy's table is bounded once for everyone
    assert seen["temporary"], "alice's session has temporary views (the check below must have something to read)"
    assert seen["readable"] == []  # carol's connection cannot name any of alice's relations


def test_negative_control_old_explain_wording_shows_alice_activity(policy_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def old(self, table, keys=None):  # noqa: ANN001, ANN202 - the wording before issue 25
        name = keyed_name(table, keys) if keys is not None else bounded_name(table)
        return "built by an earlier query (shared)" if self.engine.has_relation(name) else "built by the first query (shared)"

    monkeypatch.setattr(engine_calls.EngineCalls, "preparation_state", lambda self, table: old(self, table))
    monkeypatch.setattr(engine_calls.EngineCalls, "keyed_state", old)
    monkeypatch.setattr(shared_duckdb.SharedScope, "_place", lambda self, name: shared_duckdb.SHARED_SCHEMA)
    seen = _run_scenario(policy_path)
    assert seen["before"] != seen["after"]  # the EXPLAIN check above would fail on this build
    assert seen["bob_has"] == [True, True]  # and so would the relation check

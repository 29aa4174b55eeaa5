"""One DuckDB database for many sessions (the server): each private table is bounded once for all
of them, concurrent first queries build it once, a failed build is rebuilt by the next query, and
the shared relation holds exactly the rows a session's own build keeps with the same seed."""

from __future__ import annotations

import threading
from pathlib import Path

import pandas
import pytest

from dpsql.backend.auxiliary.files import write_parquet
from dpsql.backend.engines.duckdb_engine import DuckDBEngine
from dpsql.backend.engines.engine import bounded_name
from dpsql.backend.engines.shared_duckdb import SharedDuckDB
from dpsql.catalog.loader import load_policy
from dpsql.demo.people import PARQUET_NAME, POLICY_NAME, generate_people, policy_text
from dpsql.errors import EngineError, InterfaceError
from dpsql.session import Session, SessionOptions, open_shared

QUERY = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) region, COUNT(*) FROM people GROUP BY region"


@pytest.fixture(scope="module")
def policy_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("shared")
    people = generate_people(5_000, seed=4)
    # a few heavy persons (more than max_rows = 3 rows), so the heavy branch of bounding runs
    heavy = people.head(40).copy()
    heavy["person_id"] = heavy.index % 5
    write_parquet(pandas.concat([people, heavy], ignore_index=True), directory / PARQUET_NAME)
    (directory / POLICY_NAME).write_text(policy_text(source=PARQUET_NAME), encoding="utf-8")
    return directory / POLICY_NAME


def session(policy: Path, shared: SharedDuckDB) -> Session:
    return SessionOptions(policy=load_policy(policy), ledger=":memory:", prepare=False, shared=shared).open()


def counting_builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the relations SharedDuckDB actually builds."""
    built: list[str] = []
    once = SharedDuckDB.once

    def counted(self: SharedDuckDB, name: str, build):  # noqa: ANN001, ANN202
        def wrapped() -> None:
            built.append(name.rsplit(".", 1)[-1])  # an analyst's relation is keyed "<its schema>.<name>"
            build()
        return once(self, name, wrapped)

    monkeypatch.setattr(SharedDuckDB, "once", counted)
    return built


def test_second_session_reads_the_first_ones_relations(policy_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = counting_builds(monkeypatch)
    shared = open_shared(load_policy(policy_path), prepare=False)
    first, second = session(policy_path, shared), session(policy_path, shared)
    try:
        first.execute(QUERY)
        assert sorted(built) == sorted([bounded_name(load_policy(policy_path).table("people")),
                                        next(n for n in built if n.startswith("__dpsql_keyed_people_"))])
        explain = "\n".join(str(r[0]) for r in second.execute("EXPLAIN " + QUERY).rows)
        assert "shared by every connection of this process" in explain
        second.execute(QUERY)
        assert len(built) == 2  # the second session built nothing
        # one copy of each relation in the shared database (the ranked rows' table was dropped)
        tables = [t for (t,) in shared.root.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall()]
        keyed = next(n for n in built if n.startswith("__dpsql_keyed_people_"))
        assert sorted(tables) == sorted(["__dpsql_bounded_people", "__dpsql_bounded_people_heavy", keyed, f"{keyed}_heavy"])
    finally:
        first.close()
        second.close()
        shared.close()


def test_negative_control_sessions_of_their_own_each_build(policy_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The count above can see a second build: sessions without the shared database each bound the table.
    from dpsql.backend.engines import engine as engine_module

    builds: list[str] = []
    original = engine_module.Engine._build

    def counted(self, name, steps, seed):  # noqa: ANN001, ANN202
        builds.append(name)
        return original(self, name, steps, seed)

    monkeypatch.setattr(engine_module.Engine, "_build", counted)
    for _ in range(2):
        own = SessionOptions(policy=load_policy(policy_path), ledger=":memory:", prepare=False).open()
        own.execute(QUERY)
        own.close()
    assert builds.count(bounded_name(load_policy(policy_path).table("people"))) == 2


def test_concurrent_first_queries_build_once(policy_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = counting_builds(monkeypatch)
    shared = open_shared(load_policy(policy_path), prepare=False)
    sessions = [session(policy_path, shared) for _ in range(4)]
    errors: list[BaseException] = []

    def ask(s: Session) -> None:
        try:
            s.execute(QUERY)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=ask, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors
        assert len(built) == 2  # the bounded relation and the keyed one, once each
    finally:
        for s in sessions:
            s.close()
        shared.close()


def test_shared_relation_keeps_the_rows_of_an_own_build_with_its_seed(policy_path: Path) -> None:
    policy = load_policy(policy_path)
    table = policy.table("people")
    shared = SharedDuckDB(policy)
    engine = DuckDBEngine(policy, shared=shared)
    own = DuckDBEngine(policy)
    try:
        name = engine.ensure_bounded(table, 0)  # the seed argument is ignored: the shared one is used
        own.ensure_bounded(table, shared.seed(name))
        read = f'SELECT * FROM "{name}" ORDER BY ALL'
        rows = shared.root.execute(read).fetchall()
        assert rows == own.backend.connection.execute(read).fetchall()
        assert max(n for (n,) in shared.root.execute(f'SELECT COUNT(*) FROM "{name}" GROUP BY person_id').fetchall()) == 3
    finally:
        engine.close()
        own.close()
        shared.close()


def test_a_failed_shared_build_is_built_again_by_the_next_query(policy_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    policy = load_policy(policy_path)
    table = policy.table("people")
    shared = SharedDuckDB(policy)
    failing, later = DuckDBEngine(policy, shared=shared), DuckDBEngine(policy, shared=shared)
    original = failing.backend.materialize

    def interrupted(name: str, *args: object, **kwargs: object) -> object:
        if name == bounded_name(table):  # the last step: the heavy persons' table is already built
            from dpsql.backend.engines.engine import BackendFailure
            raise BackendFailure("interrupted")
        return original(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(failing.backend, "materialize", interrupted)
    try:
        with pytest.raises(EngineError):
            failing.ensure_bounded(table, 0)
        assert not shared.has(bounded_name(table))
        name = later.ensure_bounded(table, 0)
        assert shared.has(name)
        assert max(n for (n,) in shared.root.execute(f'SELECT COUNT(*) FROM "{name}" GROUP BY person_id').fetchall()) == 3
    finally:
        failing.close()
        later.close()
        shared.close()


def test_startup_preparation_builds_the_policy_sources(policy_path: Path) -> None:
    policy = load_policy(policy_path)
    shared = open_shared(policy)
    try:
        assert shared._preparing is not None
        shared._preparing.join()
        assert shared.has(bounded_name(policy.table("people")))
    finally:
        shared.close()


def test_frames_and_other_databases_are_refused(policy_path: Path) -> None:
    policy = load_policy(policy_path)
    shared = SharedDuckDB(policy)
    try:
        with pytest.raises(InterfaceError):
            DuckDBEngine(policy, frames={"people": generate_people(10, seed=1)}, shared=shared)
        with pytest.raises(InterfaceError):
            DuckDBEngine(policy, database=policy_path, shared=shared)
    finally:
        shared.close()

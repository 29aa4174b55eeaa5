"""Cold start: the bounded relation is built in the background from connect on; the first query
waits for the rest, gets the same relation, and a background error surfaces sanitized at that
query (charged once, as if the query had built the relation itself)."""

from pathlib import Path

import pytest

import dpsql
from dpsql.backend.auxiliary.files import write_parquet
from dpsql.backend.engines.engine import ENGINE_FAILED
from dpsql.demo.people import PARQUET_NAME, POLICY_NAME, generate_people, policy_text
from dpsql.errors import EngineError

QUERIES = (
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) region, COUNT(*), SUM(income) FROM people WHERE age > 40 GROUP BY region",
    "SELECT dept, COUNT(*) FROM people GROUP BY dept",
)


def write_data(directory: Path, corrupt: bool = False) -> Path:
    write_parquet(generate_people(20_000, seed=3), directory / PARQUET_NAME)
    if corrupt:
        # Keep the footer (the schema check at LIMIT 0 passes), garble the data pages: reading
        # the rows fails inside the engine, with a message that must never reach the analyst.
        raw = bytearray((directory / PARQUET_NAME).read_bytes())
        for i in range(len(raw) // 10, len(raw) // 2):
            raw[i] = (raw[i] * 7 + 13) % 256
        (directory / PARQUET_NAME).write_bytes(bytes(raw))
    (directory / POLICY_NAME).write_text(policy_text(source=PARQUET_NAME), encoding="utf-8")
    return directory / POLICY_NAME


def wait_for_preparation(con) -> None:  # noqa: ANN001
    for job in list(con.session._executor.calls._preparing.values()):
        job.thread.join()


def explain_line(con, sql: str, prefix: str = "Bounded relation of ") -> str:  # noqa: ANN001
    """EXPLAIN's line about a session relation (the bounded one by default)."""
    cur = con.cursor()
    cur.execute("EXPLAIN " + sql)
    return next(str(row[0]) for row in cur.fetchall() if str(row[0]).startswith(prefix))


def answers(policy: Path, prepare: bool) -> list[list[tuple]]:
    with dpsql.connect(policy=str(policy), random_seed=99, prepare=prepare) as con:
        out = []
        for sql in QUERIES:
            cur = con.cursor()
            cur.execute(sql)
            out.append(cur.fetchall())
        return out


def test_connect_prepares_and_explain_says_so(tmp_path: Path) -> None:
    policy = write_data(tmp_path)
    with dpsql.connect(policy=str(policy)) as con:
        wait_for_preparation(con)
        assert explain_line(con, QUERIES[0]) == "Bounded relation of people: prepared at connect"
    # Negative control: without preparation EXPLAIN tells the first query builds it.
    with dpsql.connect(policy=str(policy), prepare=False) as con:
        assert explain_line(con, QUERIES[0]) == "Bounded relation of people: built by the first query that reads it"
        con.cursor().execute(QUERIES[1])
        assert explain_line(con, QUERIES[0]) == "Bounded relation of people: prepared by an earlier query"


def test_prepared_relation_gives_the_answers_of_building_it_at_the_first_query(tmp_path: Path) -> None:
    policy = write_data(tmp_path)
    prepared, built = answers(policy, True), answers(policy, False)
    assert prepared == built and len(prepared[0]) >= 3
    # Negative control: another seed gives other answers (so equality is not vacuous).
    with dpsql.connect(policy=str(policy), random_seed=100) as con:
        cur = con.cursor()
        cur.execute(QUERIES[0])
        assert cur.fetchall() != prepared[0]


def test_background_error_surfaces_sanitized_at_the_first_query_charged_once(tmp_path: Path) -> None:
    policy = write_data(tmp_path, corrupt=True)
    with dpsql.connect(policy=str(policy), prepare=True) as con:
        wait_for_preparation(con)
        calls = con.session._executor.calls
        assert calls._preparing["people"].error is not None  # kept, not lost
        with pytest.raises(EngineError) as caught:
            con.cursor().execute(QUERIES[1])
        assert str(caught.value) == f"DP300: {ENGINE_FAILED}" and caught.value.__cause__ is None and caught.value.__context__ is None
        assert "TProtocol" not in str(caught.value) and "Invalid" not in str(caught.value)
        assert len(con.session.ledger_entries()) == 1  # this query's own charge, once; none for the background work
        assert "people" not in calls._preparing  # raised once; a later query builds the relation again
        with pytest.raises(EngineError):
            con.cursor().execute(QUERIES[1])
        assert len(con.session.ledger_entries()) == 2


def test_explain_says_whether_the_keyed_relation_of_a_grouping_exists(tmp_path: Path) -> None:
    # Partition selection with key bounding (max_groups < max_rows) also reads the keyed relation
    # of its grouping columns, built by the first such query: EXPLAIN says so, then that it exists.
    policy = write_data(tmp_path)
    with dpsql.connect(policy=str(policy)) as con:
        keyed = "Keyed relation of people (region): "
        assert explain_line(con, QUERIES[0], keyed) == keyed + (
            "built by the first query that groups by these columns, after the bounded relation (once per session)")
        con.cursor().execute(QUERIES[0])
        assert explain_line(con, QUERIES[0], keyed) == keyed + "built by an earlier query"
        cur = con.cursor()
        cur.execute("EXPLAIN " + QUERIES[1])  # public keys: no keyed relation, no line
        assert not any(str(row[0]).startswith("Keyed relation") for row in cur.fetchall())

"""The policy's `[server] ci_columns` and `round` defaults, through `dpsql serve` with psycopg (what
a BI tool gets without sending SET) and in-process.

Rounding is checked on one answer seen twice: the second run is a replay (the same stored values),
once with `SET dpsql.round = off` (exact) and once with the default (rounded to two significant
digits of each cell's half-width). The control: the exact AVG values differ from the rounded ones
(a server that did not round would fail the inequality; one that rounded elsewhere, the equality).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.backend.auxiliary.files import write_parquet
from dpsql.render import precision, round_to
from dpsql.server.scram import make_verifier
from dpsql.server.transport import ServerConfig, ServerThread
from tests.conftest import make_policy_text

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")

QUERY = "SELECT dept, COUNT(*) AS n, AVG(income) AS avg_income FROM people GROUP BY dept"
EXTRA = f'[analysts.alice]\npassword = "{make_verifier("alice-pw")}"\n\n[server]\nci_columns = true\n'


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, people_frame: pd.DataFrame) -> Iterator[tuple[int, Path]]:
    directory = tmp_path_factory.mktemp("defaults")
    write_parquet(people_frame, directory / "people.parquet")
    policy = directory / "policy.toml"
    policy.write_text(make_policy_text(source="people.parquet", extra=EXTRA), encoding="utf-8")
    config = ServerConfig(policy=policy, port=0, ledger=directory / "ledger.sqlite")
    with ServerThread(config) as server:
        yield server.port, policy


def _dsn(port: int) -> str:
    return f"host=127.0.0.1 port={port} user=alice password=alice-pw dbname=db sslmode=disable"


def test_ci_columns_default_from_the_policy(served: tuple[int, Path]) -> None:
    with psycopg.connect(_dsn(served[0]), autocommit=True) as con:
        cur = con.execute(QUERY)
        assert [c.name for c in cur.description] == ["dept", "n", "n_ci95", "n_ci_low", "n_ci_high",
                                                     "avg_income", "avg_income_ci95", "avg_income_ci_low", "avg_income_ci_high"]
        assert con.execute("SHOW dpsql.ci_columns").fetchone() == ("on",)
        con.execute("SET dpsql.ci_columns = off")
        assert [c.name for c in con.execute(QUERY).description] == ["dept", "n", "avg_income"]
        con.execute("SET dpsql.ci_columns = DEFAULT")
        assert con.execute("SHOW dpsql.ci_columns").fetchone() == ("on",)


def test_values_are_rounded_to_their_interval_unless_round_is_off(served: tuple[int, Path]) -> None:
    with psycopg.connect(_dsn(served[0]), autocommit=True) as con:
        assert con.execute("SHOW dpsql.round").fetchone() == ("on",)
        con.execute("SET dpsql.round = off")
        exact = con.execute(QUERY).fetchall()
    with psycopg.connect(_dsn(served[0]), autocommit=True) as con:  # the same answer, replayed, rounded by default
        shown = con.execute(QUERY).fetchall()
    assert [r[0] for r in shown] == [r[0] for r in exact]
    for (_, n, n_ci, n_lo, n_hi, avg, avg_ci, avg_lo, avg_hi), (_, n_e, n_ci_e, n_lo_e, n_hi_e, avg_e, avg_ci_e, avg_lo_e, avg_hi_e) \
            in zip(shown, exact):
        assert avg == pytest.approx(round_to(avg_e, precision(avg_ci_e)), rel=1e-12, abs=1e-9)
        assert avg_ci >= avg_ci_e and n_ci >= n_ci_e  # the interval shown holds the computed one
        assert n_lo <= n_lo_e and n_hi >= n_hi_e and avg_lo <= avg_lo_e and avg_hi >= avg_hi_e  # its ends too
        assert abs(n - n_e) <= n_ci - n_ci_e + 1e-9
    assert any(avg != avg_e for (_, _, _, _, _, avg, *_), (_, _, _, _, _, avg_e, *_) in zip(shown, exact))


def test_in_process_connect_takes_the_policy_default(served: tuple[int, Path], people_frame: pd.DataFrame) -> None:
    with dpsql.connect(policy=served[1], tables={"people": people_frame}, random_seed=1) as con:
        assert [d[0] for d in con.execute(QUERY).description][:3] == ["dept", "n", "n_ci95"]
    with dpsql.connect(policy=served[1], tables={"people": people_frame}, random_seed=1, ci_columns=False) as con:
        assert [d[0] for d in con.execute(QUERY).description] == ["dept", "n", "avg_income"]

"""A16: one exact bit per query through the statement timeout, from the CPU time of one row
(issue 25). Through a real `dpsql serve` with `[server] statement_timeout = 2`:

    SELECT ... COUNT(*) FROM people WHERE CASE WHEN person_id = T AND age > 40
        THEN (regexp_matches(lpad(region || '1', 65536, '<2,048 random a/b>'), '[ab]*a[ab]{999}c') OR ...)
        ELSE false END

Each call costs RE2 0.3-3 s on this machine (its DFA gives up on that pattern over that input),
on the target's row only, and only when the secret (age > 40) holds: without a bound on a row's
work, the query answers when the secret is false and ends in 57014 (after the charge) when it
is true. DP125's work bound (dpsql/analysis/row_cost.py) refuses it before the charge, the same
way on both datasets.

Negative control: a server whose work caps are set to infinity (a prelude in the server process;
the rest is the real server) shows the bit: 57014 on D, an answer on D'. The control needs the
secret's row to take far longer than 2 s (12 calls: 3.4 s or more here) and the query without
it far less (about 0.3 s once its patterns are compiled: the first run of the statement spends
about a second compiling twelve 3,000-instruction patterns in the dry runs, the same on every
dataset, so the attacker sends the statement twice and reads the second outcome). A cancelled
statement stops at the end of the call running at the deadline (DuckDB checks for the interrupt
between vectors), so D takes at most a few seconds.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pandas as pd
import pytest

from dpsql.accounting.ledger import Ledger
from tests.security.attack_support import SECRET_ID, with_secret_person
from tests.security.server_harness import start_server

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")

TIMEOUT = 2
CALLS = 12
WARM_UP = "SELECT COUNT(*) FROM people"  # the engine is warm (the bounded relation built) before the attack
_RNG = random.Random(25)  # a public input for the attack, not privacy noise
_FILL = "".join(_RNG.choice("ab") for _ in range(2048))
ATTACK = (
    f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01) COUNT(*) FROM people WHERE CASE WHEN person_id = {SECRET_ID} "
    "AND age > 40 THEN (" + " OR ".join(
        f"regexp_matches(lpad(region || '1', 65536, '{_FILL}'), '[ab]*a[ab]{{{999 - i}}}c')" for i in range(CALLS)
    ) + ") ELSE false END"
)
NO_CAPS = "import dpsql.analysis.row_cost as row_cost\nrow_cost.MAX_ROW_WORK = row_cost.MAX_ROW_GROWTH = 1 << 62"


def _warm_up(con: psycopg.Connection) -> None:
    """The server's first private query builds the bounded relation: on a loaded machine that can
    take longer than the timeout itself, so it is asked until it answers."""
    for _ in range(5):
        try:
            con.execute(WARM_UP).fetchall()
            return
        except psycopg.errors.QueryCanceled:
            continue
    raise AssertionError("the warm-up query never finished within the statement timeout")


def attack_outcome(directory: Path, people: pd.DataFrame, prelude: str = "") -> tuple[str, int, float]:
    """(what the analyst sees: an answer or the SQLSTATE and code, the attack's charges, seconds)."""
    directory.mkdir()
    server = start_server(directory, people, f"statement_timeout = {TIMEOUT}\n", prelude=prelude)
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as con:
            _warm_up(con)
            for _ in range(2):  # the second run is the one read: its patterns are compiled
                started = time.monotonic()
                try:
                    con.execute(ATTACK).fetchall()
                    seen = "answered"
                except psycopg.Error as error:
                    seen = f"{error.diag.sqlstate} {(error.diag.message_primary or '')[:5]}"
                elapsed = time.monotonic() - started
            assert con.execute("SELECT 1").fetchone() == (1,)  # the connection goes on
    finally:
        stderr = server.stop()
    assert "Traceback" not in stderr, stderr
    with Ledger(directory / "ledger.sqlite") as ledger:
        charges = sum("regexp_matches" in entry.query for entry in ledger.entries("alice"))
    return seen, charges, elapsed


@pytest.fixture
def neighbours(people_frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    d = with_secret_person(people_frame, rows=1, age=60)  # the secret holds: age > 40
    return {"D": d, "D2": with_secret_person(people_frame, rows=1, age=30)}


@pytest.mark.slow
def test_a16_the_slow_row_is_refused_before_the_charge_on_both_datasets(tmp_path: Path, neighbours) -> None:
    on_d = attack_outcome(tmp_path / "D", neighbours["D"])
    on_d2 = attack_outcome(tmp_path / "D2", neighbours["D2"])
    assert on_d[:2] == on_d2[:2] == ("0A000 DP125", 0), (on_d, on_d2)


@pytest.mark.slow
def test_a16_negative_control_without_the_work_caps_the_timeout_shows_the_bit(tmp_path: Path, neighbours) -> None:
    on_d = attack_outcome(tmp_path / "D", neighbours["D"], prelude=NO_CAPS)
    on_d2 = attack_outcome(tmp_path / "D2", neighbours["D2"], prelude=NO_CAPS)
    assert on_d[:2] == ("57014 cance", 2), on_d  # charged, then cancelled: the secret holds
    assert on_d2[:2] == ("answered", 2), on_d2  # the same charges, answered: it does not
